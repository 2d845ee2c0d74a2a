//! Python's `repr` of floats, complex numbers, str and bytes — what
//! `json.dumps` and `ast.unparse` print.

use std::sync::LazyLock;

use regex::Regex;

/// `repr(float)`: the shortest text that reads back to the same float,
/// positional from 1e-4 up to 1e16 and scientific (`1e-05`, `1e+16`)
/// outside.
pub(super) fn float_repr(f: f64) -> String {
    repr_with(f, true)
}

/// `repr` of a float; `dot_zero` adds the `.0` of an integral positional
/// float (complex parts go without it).
fn repr_with(f: f64, dot_zero: bool) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0{}", if dot_zero { ".0" } else { "" });
    }
    // `{:e}` gives the shortest round-trip digits: "1.2345e-5".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let body = if (-4..16).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                let zeros = "0".repeat(int_len - digits.len());
                if dot_zero {
                    format!("{digits}{zeros}.0")
                } else {
                    format!("{digits}{zeros}")
                }
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        }
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{exp_sign}{:02}", exp.abs())
    };
    format!("{sign}{body}")
}

/// `repr(complex)`: `2j`, `(1+2j)`, `(-0-1j)`.
pub(super) fn complex_repr(re: f64, im: f64) -> String {
    let imag = repr_with(im, false);
    if re == 0.0 && re.is_sign_positive() {
        return format!("{imag}j");
    }
    let real = repr_with(re, false);
    let imag = if imag.starts_with('-') || im.is_nan() {
        imag
    } else {
        format!("+{imag}")
    };
    format!("({real}{imag}j)")
}

/// Characters `str.isprintable` refuses besides controls: format,
/// surrogate, private-use, unassigned and separators other than space.
static UNPRINTABLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]").expect("valid class")
});

pub(super) fn is_printable(c: u32) -> bool {
    if c == 0x20 {
        return true;
    }
    match char::from_u32(c) {
        None => false,
        Some(ch) => {
            let mut buf = [0u8; 4];
            !UNPRINTABLE.is_match(ch.encode_utf8(&mut buf))
        }
    }
}

/// `repr(str)`: single quotes unless the text has one and no double quote.
pub(super) fn str_repr(s: &[u32]) -> String {
    let quote = if s.contains(&0x27) && !s.contains(&0x22) {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for &c in s {
        match c {
            0x5c => out.push_str("\\\\"),
            0x09 => out.push_str("\\t"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            c if c == u32::from(quote) => {
                out.push('\\');
                out.push(quote);
            }
            c if c < 0x20 || c == 0x7f => out.push_str(&format!("\\x{c:02x}")),
            c if c < 0x7f => out.push(char::from(c as u8)),
            c if is_printable(c) => out.extend(char::from_u32(c)),
            c if c <= 0xff => out.push_str(&format!("\\x{c:02x}")),
            c if c <= 0xffff => out.push_str(&format!("\\u{c:04x}")),
            c => out.push_str(&format!("\\U{c:08x}")),
        }
    }
    out.push(quote);
    out
}

/// `repr(bytes)`.
pub(super) fn bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from("b");
    out.push(quote);
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            c if char::from(c) == quote => {
                out.push('\\');
                out.push(quote);
            }
            0x20..=0x7e => out.push(char::from(c)),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push(quote);
    out
}
