//! Prompt templates (`template=` / `DatasetSpec::with_template`): a row's
//! prompt built from its columns with Python's `str.format` syntax, as
//! MLPerf's `UserPromptFormatter` does (`format(**row)`). Only plain column
//! names are supported (`{question}`, and `{{` / `}}` for literal braces):
//! conversions (`!r`), format specs (`:>8`), attributes and indexes are
//! refused when the template is parsed, so a template either renders the
//! same text Python would or fails before any request is sent. Values are
//! rendered as Python's `str()` renders them: strings as they are,
//! integers in decimal, floats by their shortest round-trip form (`3.0`,
//! `1e-05`, `1e+16`), booleans as `True`/`False`, null as `None`; lists and
//! structs, which pandas would print as numpy arrays or dicts, render as
//! compact JSON instead.

use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// Index into `Template::names`.
    Column(usize),
}

/// A parsed template: literal text and column references.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
    names: Vec<String>,
}

impl Template {
    /// Parses `text`; the error says what is wrong and at which byte.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut pieces = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut lit = String::new();
        let mut rest = text;
        while let Some(at) = rest.find(['{', '}']) {
            lit.push_str(&rest[..at]);
            let pos = text.len() - rest.len() + at;
            let brace = &rest[at..];
            if brace.starts_with("{{") || brace.starts_with("}}") {
                lit.push_str(&brace[..1]);
                rest = &brace[2..];
                continue;
            }
            if brace.starts_with('}') {
                return Err(format!(
                    "a single '}}' at byte {pos} (write '}}}}' for a literal brace)"
                ));
            }
            let Some(end) = brace.find('}') else {
                return Err(format!(
                    "'{{' at byte {pos} is not closed (write '{{{{' for a literal brace)"
                ));
            };
            let name = &brace[1..end];
            if name.is_empty() || name.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "field {{{name}}} at byte {pos} is positional; name a column, as in {{question}}"
                ));
            }
            if name.contains(['{', '!', ':', '.', '[']) {
                return Err(format!(
                    "field {{{name}}} at byte {pos}: only plain column names are supported \
                     (no conversions, format specs, attributes or indexes)"
                ));
            }
            if !lit.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut lit)));
            }
            let i = match names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    names.push(name.to_string());
                    names.len() - 1
                }
            };
            pieces.push(Piece::Column(i));
            rest = &brace[end + 1..];
        }
        lit.push_str(rest);
        if !lit.is_empty() {
            pieces.push(Piece::Text(lit));
        }
        Ok(Template { pieces, names })
    }

    /// The columns it reads, each once, in order of first use.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The text with `values[i]` for column `names()[i]`; `Err(i)` when
    /// that column has no value.
    pub fn render(&self, values: &[Option<String>]) -> Result<String, usize> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Column(i) => {
                    out.push_str(values.get(*i).and_then(Option::as_ref).ok_or(*i)?)
                }
            }
        }
        Ok(out)
    }
}

/// `v` as Python's `str()` renders the same value (see the module doc).
pub(crate) fn python_str(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if n.is_f64() => python_float(x),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip (which Rust's
/// `{:e}` also gives), fixed-point for exponents -4..16, scientific with a
/// signed two-digit exponent otherwise.
pub(crate) fn python_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let (int, frac) = if point <= 0 {
            (
                "0".to_string(),
                format!("{}{digits}", "0".repeat((-point) as usize)),
            )
        } else if point as usize >= digits.len() {
            (
                format!("{digits}{}", "0".repeat(point as usize - digits.len())),
                String::new(),
            )
        } else {
            (
                digits[..point as usize].to_string(),
                digits[point as usize..].to_string(),
            )
        };
        let frac = if frac.is_empty() {
            "0".to_string()
        } else {
            frac
        };
        format!("{sign}{int}.{frac}")
    } else {
        let (first, more) = digits.split_at(1);
        let more = if more.is_empty() {
            String::new()
        } else {
            format!(".{more}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{more}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(t: &str, values: &[(&str, &str)]) -> Result<String, String> {
        let t = Template::parse(t)?;
        let v: Vec<Option<String>> = t
            .names()
            .iter()
            .map(|n| {
                values
                    .iter()
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.to_string())
            })
            .collect();
        t.render(&v)
            .map_err(|i| format!("missing {}", t.names()[i]))
    }

    #[test]
    fn names_braces_and_repeats() {
        assert_eq!(
            render(
                "Q: {question}\n(A) {a} {{x}} }} {{ {question}",
                &[("question", "why?"), ("a", "yes")]
            ),
            Ok("Q: why?\n(A) yes {x} } { why?".to_string())
        );
        let t = Template::parse("{b}{a}{b}").unwrap();
        assert_eq!(t.names(), ["b", "a"]);
        assert_eq!(render("plain", &[]), Ok("plain".to_string()));
        assert_eq!(render("", &[]), Ok(String::new()));
        // Python allows any name up to the closing brace.
        assert_eq!(render("{my col}", &[("my col", "v")]), Ok("v".to_string()));
        assert_eq!(render("{a}{b}", &[("a", "1")]), Err("missing b".into()));
    }

    #[test]
    fn what_python_would_refuse_or_we_do_not_support() {
        for (t, want) in [
            ("a } b", "a single '}' at byte 2"),
            ("x {q", "'{' at byte 2 is not closed"),
            ("{}", "field {} at byte 0 is positional"),
            ("{0}", "field {0} at byte 0 is positional"),
            ("{q!r}", "only plain column names"),
            ("{q:>5}", "only plain column names"),
            ("{q.x}", "only plain column names"),
            ("{q[0]}", "only plain column names"),
            ("{a{b}", "only plain column names"),
        ] {
            let e = Template::parse(t).unwrap_err();
            assert!(e.contains(want), "{t}: {e}");
        }
    }

    #[test]
    fn values_render_as_python_str() {
        // Expected strings are what CPython 3 prints for str(value).
        for (v, want) in [
            (json!("text"), "text"),
            (json!(null), "None"),
            (json!(true), "True"),
            (json!(false), "False"),
            (json!(42), "42"),
            (json!(-7), "-7"),
            (json!(18446744073709551615u64), "18446744073709551615"),
            (json!(3.0), "3.0"),
            (json!(-0.0), "-0.0"),
            (json!(0.1), "0.1"),
            (json!(2.5e-4), "0.00025"),
            (json!(1e-5), "1e-05"),
            (json!(1.5e-7), "1.5e-07"),
            (json!(1234567890123456.0), "1234567890123456.0"),
            (json!(1e16), "1e+16"),
            (json!(1.25e100), "1.25e+100"),
            (json!(123.456), "123.456"),
            (json!([1, "a"]), "[1,\"a\"]"),
        ] {
            assert_eq!(python_str(v.clone()), want, "{v}");
        }
        assert_eq!(python_float(f64::NAN), "nan");
        assert_eq!(python_float(f64::NEG_INFINITY), "-inf");
        assert_eq!(python_float(5e-324), "5e-324");
        assert_eq!(
            python_float(1.7976931348623157e308),
            "1.7976931348623157e+308"
        );
    }
}
