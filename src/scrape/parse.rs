//! The Prometheus text exposition format (0.0.4), read strictly: a line is
//! a comment (`# HELP name text`, `# TYPE name kind`, or any other `#`
//! text), blank, or a sample `name[{label="value",…}] value [timestamp]`.
//! Values are Go floats (`NaN`, `+Inf`, `-Inf`, exponents); label values
//! take the escapes `\\`, `\"` and `\n`. Anything else is an error that
//! names the line, so a `/metrics` that is not Prometheus text (an HTML
//! page, JSON) is told apart from one that merely lacks our names.
//!
//! Hand-written rather than taken from a crate: the one on crates.io pulls
//! in chrono, itertools and regex, wants owned lines, and does not say
//! where its input was wrong. A scrape is parsed once per interval in the
//! parent's scraper thread, never on the hot path; samples are handed to a
//! callback as borrowed slices, so parsing allocates nothing.

use std::fmt;

/// One sample line: the metric's name, its label set as written (between
/// the braces, checked), and its value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sample<'a> {
    pub name: &'a str,
    pub labels: &'a str,
    pub value: f64,
}

/// What was wrong, and on which line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub line: usize,
    pub problem: Problem,
    /// The line's first characters, control characters replaced.
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A sample line that does not start with a metric name.
    BadName,
    /// `# TYPE` or `# HELP` without a valid metric name.
    BadCommentName,
    /// `# TYPE` with a kind other than counter, gauge, histogram, summary
    /// or untyped.
    BadType,
    BadLabelName,
    /// A label name not followed by `=`.
    NoEquals,
    /// A label value not in double quotes.
    NoQuote,
    /// A backslash before anything but `\`, `"` or `n`.
    BadEscape,
    /// The line ends inside the label set.
    Unterminated,
    /// Labels not separated by a comma.
    NoComma,
    /// No value after the name and labels.
    NoValue,
    BadValue,
    BadTimestamp,
    /// More after the timestamp.
    Trailing,
}

impl Problem {
    fn says(self) -> &'static str {
        match self {
            Problem::BadName => "expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)",
            Problem::BadCommentName => "expected a metric name after # HELP or # TYPE",
            Problem::BadType => {
                "expected a type of counter, gauge, histogram, summary or untyped after # TYPE name"
            }
            Problem::BadLabelName => "expected a label name ([a-zA-Z_][a-zA-Z0-9_]*)",
            Problem::NoEquals => "expected = after the label name",
            Problem::NoQuote => "expected a label value in double quotes",
            Problem::BadEscape => "bad escape in a label value (only \\\\, \\\" and \\n)",
            Problem::Unterminated => "the label set is not closed by }",
            Problem::NoComma => "expected , or } after a label",
            Problem::NoValue => "no value after the metric name",
            Problem::BadValue => "the value is not a number (nor NaN, +Inf, -Inf)",
            Problem::BadTimestamp => "the timestamp is not an integer of milliseconds",
            Problem::Trailing => "unexpected text after the timestamp",
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {} in '{}'",
            self.line,
            self.problem.says(),
            self.text
        )
    }
}

/// Characters of the offending line an error quotes.
const QUOTED: usize = 60;

/// Parses `text`, handing each sample to `each`; returns how many there
/// were, or the first error.
pub(crate) fn parse<'a>(
    text: &'a str,
    mut each: impl FnMut(Sample<'a>),
) -> Result<usize, ParseError> {
    let mut n = 0;
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let fail = |problem| ParseError {
            line: i + 1,
            problem,
            text: line
                .chars()
                .take(QUOTED)
                .map(|c| if c.is_control() { '?' } else { c })
                .collect(),
        };
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.trim_end_matches([' ', '\t']).is_empty() {
            continue;
        }
        if let Some(comment) = trimmed.strip_prefix('#') {
            comment_line(comment).map_err(fail)?;
            continue;
        }
        each(sample_line(trimmed).map_err(fail)?);
        n += 1;
    }
    Ok(n)
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The length of the metric name (or, `label`, label name) at the start
/// of `s`.
fn name_len(s: &str, label: bool) -> usize {
    let b = s.as_bytes();
    let first = |c: u8| c.is_ascii_alphabetic() || c == b'_' || (!label && c == b':');
    if b.first().is_none_or(|&c| !first(c)) {
        return 0;
    }
    1 + b[1..]
        .iter()
        .take_while(|&&c| first(c) || c.is_ascii_digit())
        .count()
}

/// `# HELP name …` and `# TYPE name kind` are checked; other comments are
/// free text.
fn comment_line(c: &str) -> Result<(), Problem> {
    let c = c.trim_start_matches([' ', '\t']);
    let (word, rest) = c.split_once([' ', '\t']).unwrap_or((c, ""));
    if word != "HELP" && word != "TYPE" {
        return Ok(());
    }
    let rest = rest.trim_start_matches([' ', '\t']);
    let len = name_len(rest, false);
    let after = &rest[len..];
    if len == 0 || after.bytes().next().is_some_and(|b| !is_blank(b)) {
        return Err(Problem::BadCommentName);
    }
    if word == "TYPE" {
        match after.trim_matches([' ', '\t']) {
            "counter" | "gauge" | "histogram" | "summary" | "untyped" => {}
            _ => return Err(Problem::BadType),
        }
    }
    Ok(())
}

fn sample_line(line: &str) -> Result<Sample<'_>, Problem> {
    let len = name_len(line, false);
    if len == 0 {
        return Err(Problem::BadName);
    }
    let name = &line[..len];
    let after = &line[len..];
    if after
        .bytes()
        .next()
        .is_some_and(|b| b != b'{' && !is_blank(b))
    {
        // The name ran into a character no name has.
        return Err(Problem::BadName);
    }
    let mut rest = after.trim_start_matches([' ', '\t']);
    let mut labels = "";
    if let Some(inner) = rest.strip_prefix('{') {
        let close = label_set(inner)?;
        labels = &inner[..close];
        rest = &inner[close + 1..];
        if rest.bytes().next().is_some_and(|b| !is_blank(b)) {
            return Err(Problem::NoValue);
        }
    }
    let mut fields = rest.split([' ', '\t']).filter(|f| !f.is_empty());
    let value = fields.next().ok_or(Problem::NoValue)?;
    let value = go_float(value).ok_or(Problem::BadValue)?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().map_err(|_| Problem::BadTimestamp)?;
    }
    if fields.next().is_some() {
        return Err(Problem::Trailing);
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Checks the label set that starts `s` (after its `{`); returns the
/// index of its closing `}`.
fn label_set(s: &str) -> Result<usize, Problem> {
    let b = s.as_bytes();
    let skip = |mut i: usize| {
        while i < b.len() && is_blank(b[i]) {
            i += 1;
        }
        i
    };
    let mut i = skip(0);
    loop {
        match b.get(i) {
            None => return Err(Problem::Unterminated),
            Some(b'}') => return Ok(i),
            Some(_) => {}
        }
        let len = name_len(&s[i..], true);
        if len == 0 {
            return Err(Problem::BadLabelName);
        }
        i = skip(i + len);
        match b.get(i) {
            Some(b'=') => {}
            None => return Err(Problem::Unterminated),
            Some(_) => return Err(Problem::NoEquals),
        }
        i = skip(i + 1);
        match b.get(i) {
            Some(b'"') => {}
            None => return Err(Problem::Unterminated),
            Some(_) => return Err(Problem::NoQuote),
        }
        i += 1;
        loop {
            match b.get(i) {
                None => return Err(Problem::Unterminated),
                Some(b'"') => break,
                Some(b'\\') => match b.get(i + 1) {
                    Some(b'\\' | b'"' | b'n') => i += 2,
                    None => return Err(Problem::Unterminated),
                    Some(_) => return Err(Problem::BadEscape),
                },
                Some(_) => i += 1,
            }
        }
        i = skip(i + 1);
        match b.get(i) {
            Some(b',') => i = skip(i + 1),
            Some(b'}') => return Ok(i),
            None => return Err(Problem::Unterminated),
            Some(_) => return Err(Problem::NoComma),
        }
    }
}

/// A value as Go's `strconv.ParseFloat` reads it for Prometheus: decimal
/// and exponent forms, `NaN`, `Inf` or `Infinity` with an optional sign
/// (any case); hexadecimal floats are refused.
fn go_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let word = ["inf", "infinity", "nan"]
        .iter()
        .any(|w| body.eq_ignore_ascii_case(w));
    let numeric = body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
    if body.is_empty() || !(word || numeric) {
        return None;
    }
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Result<Vec<(String, String, f64)>, ParseError> {
        let mut out = Vec::new();
        parse(text, |s| {
            out.push((s.name.to_string(), s.labels.to_string(), s.value))
        })?;
        Ok(out)
    }

    #[test]
    fn reads_samples_labels_and_comments() {
        let text = "# HELP vllm:num_requests_running Number of requests.\n\
                    # TYPE vllm:num_requests_running gauge\n\
                    vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3.0\n\
                    \n\
                    # a free comment { not parsed\n\
                    plain 1e3 1700000000000\n\
                    spaced { a = \"x\" , b=\"y\", } -2\r\n\
                    escaped{path=\"C:\\\\x\\\"q\\\"\\n\"} +Inf\n\
                    tgi_request_generated_tokens_bucket{le=\"+Inf\"} 7\n\
                    nan_value NaN\n\
                    empty_set{} 0\n";
        let got = all(text).unwrap();
        assert_eq!(got.len(), 7);
        assert_eq!(
            got[0],
            (
                "vllm:num_requests_running".into(),
                "model_name=\"m\",engine=\"0\"".into(),
                3.0
            )
        );
        assert_eq!(got[1].2, 1000.0);
        assert_eq!(got[2].0, "spaced");
        assert_eq!(got[2].2, -2.0);
        assert_eq!(got[3].2, f64::INFINITY);
        assert_eq!(got[4].2, 7.0);
        assert!(got[5].2.is_nan());
        assert_eq!((got[6].0.as_str(), got[6].2), ("empty_set", 0.0));
    }

    #[test]
    fn malformed_lines_are_named() {
        let cases: &[(&str, usize, Problem)] = &[
            ("<!DOCTYPE html>", 1, Problem::BadName),
            ("{\"data\": []}", 1, Problem::BadName),
            ("ok 1\n9lives 1", 2, Problem::BadName),
            ("a-b 1", 1, Problem::BadName),
            ("a", 1, Problem::NoValue),
            ("a{x=\"1\"}", 1, Problem::NoValue),
            ("a one", 1, Problem::BadValue),
            ("a 0x10", 1, Problem::BadValue),
            ("a 1..2", 1, Problem::BadValue),
            ("a{x=\"1\"}2", 1, Problem::NoValue),
            ("a 1 soon", 1, Problem::BadTimestamp),
            ("a 1 2 3", 1, Problem::Trailing),
            ("a{x=\"1\"", 1, Problem::Unterminated),
            ("a{x=\"1} 2", 1, Problem::Unterminated),
            ("a{x} 1", 1, Problem::NoEquals),
            ("a{x=1} 1", 1, Problem::NoQuote),
            ("a{x=\"\\t\"} 1", 1, Problem::BadEscape),
            ("a{x=\"1\" y=\"2\"} 1", 1, Problem::NoComma),
            ("a{9=\"1\"} 1", 1, Problem::BadLabelName),
            ("a{x:y=\"1\"} 1", 1, Problem::NoEquals),
            ("# TYPE a meter", 1, Problem::BadType),
            ("# TYPE a", 1, Problem::BadType),
            ("# HELP 1a text", 1, Problem::BadCommentName),
        ];
        for &(text, line, problem) in cases {
            let e = all(text).expect_err(text);
            assert_eq!((e.line, e.problem), (line, problem), "{text}");
            let shown = e.to_string();
            assert!(shown.starts_with(&format!("line {line}: ")), "{shown}");
        }
    }

    #[test]
    fn errors_quote_a_short_clean_line() {
        let long = format!("bad\u{1b}[31m{} x", "y".repeat(200));
        let e = all(&long).unwrap_err();
        assert_eq!(e.text.chars().count(), QUOTED);
        assert!(!e.text.contains('\u{1b}'));
    }

    #[test]
    fn empty_text_has_no_samples() {
        assert_eq!(parse("", |_| {}), Ok(0));
        assert_eq!(parse("# only comments\n\n", |_| {}), Ok(0));
    }
}
