//! The Python values the function-call extractor handles (what `json.loads`
//! and `ast.literal_eval` produce) and `json.dumps` of them with Python's
//! defaults. Strings are code points, so the lone surrogates Python strings
//! may hold survive to the output as `\udXXX`, as in Python.

use super::pyrepr::float_repr;

/// Python's cap on decimal digits of an int converted to or from text.
pub(super) const INT_MAX_STR_DIGITS: usize = 4300;

/// An arbitrary-precision int as its decimal text (no sign, no leading
/// zeros) and sign; Python keeps such ints exact through JSON.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Int {
    pub(super) negative: bool,
    pub(super) digits: String,
}

impl Int {
    pub(super) fn from_decimal(negative: bool, digits: &str) -> Int {
        let trimmed = digits.trim_start_matches('0');
        let digits = if trimmed.is_empty() { "0" } else { trimmed };
        Int {
            negative: negative && digits != "0",
            digits: digits.to_string(),
        }
    }

    /// From digits in base 2, 8 or 16.
    pub(super) fn from_radix(digits: &str, radix: u32) -> Int {
        // Little-endian limbs of 10^9.
        let mut limbs: Vec<u64> = vec![0];
        for d in digits.chars().filter_map(|c| c.to_digit(radix)) {
            let mut carry = u64::from(d);
            for limb in &mut limbs {
                let v = *limb * u64::from(radix) + carry;
                *limb = v % 1_000_000_000;
                carry = v / 1_000_000_000;
            }
            if carry > 0 {
                limbs.push(carry);
            }
        }
        let mut text = String::new();
        for (i, limb) in limbs.iter().rev().enumerate() {
            if i == 0 {
                text.push_str(&limb.to_string());
            } else {
                text.push_str(&format!("{limb:09}"));
            }
        }
        Int::from_decimal(false, &text)
    }

    pub(super) fn negated(&self) -> Int {
        Int::from_decimal(!self.negative, &self.digits)
    }

    pub(super) fn to_text(&self) -> String {
        if self.negative {
            format!("-{}", self.digits)
        } else {
            self.digits.clone()
        }
    }

    pub(super) fn to_f64(&self) -> f64 {
        self.to_text().parse().unwrap_or(f64::NAN)
    }
}

#[derive(Clone, Debug)]
pub(super) enum Value {
    None,
    Bool(bool),
    Int(Int),
    Float(f64),
    Complex(f64, f64),
    Str(Vec<u32>),
    Bytes(Vec<u8>),
    Ellipsis,
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Insertion-ordered, keys unique by Python equality.
    Dict(Vec<(Value, Value)>),
    Set,
}

pub(super) fn str_value(s: &str) -> Value {
    Value::Str(s.chars().map(u32::from).collect())
}

/// Python's `TypeError`: a value `json.dumps` refuses, or an unhashable key.
#[derive(Debug, PartialEq)]
pub(super) struct TypeError;

impl Value {
    /// The number a bool, int, float or complex equals, as Python compares
    /// them across types (`True == 1 == 1.0 == 1+0j`).
    fn number(&self) -> Option<(f64, f64, Option<Int>)> {
        match self {
            Value::Bool(b) => Some((f64::from(u8::from(*b)), 0.0, Some(int_of_bool(*b)))),
            Value::Int(i) => Some((i.to_f64(), 0.0, Some(i.clone()))),
            Value::Float(f) => Some((*f, 0.0, float_as_int(*f))),
            Value::Complex(re, im) => {
                Some((*re, *im, if *im == 0.0 { float_as_int(*re) } else { None }))
            }
            _ => None,
        }
    }

    /// Python `==` for the hashable values that can be dict keys.
    pub(super) fn py_eq(&self, other: &Value) -> bool {
        if let (Some(a), Some(b)) = (self.number(), other.number()) {
            return match (&a.2, &b.2) {
                (Some(x), Some(y)) => x == y && a.1 == b.1,
                _ => a.0 == b.0 && a.1 == b.1,
            };
        }
        match (self, other) {
            (Value::None, Value::None) | (Value::Ellipsis, Value::Ellipsis) => true,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Tuple(a), Value::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            _ => false,
        }
    }

    pub(super) fn is_hashable(&self) -> bool {
        match self {
            Value::List(_) | Value::Dict(_) | Value::Set => false,
            Value::Tuple(items) => items.iter().all(Value::is_hashable),
            _ => true,
        }
    }

    /// `dict.get(key)` for a str key.
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        let Value::Dict(pairs) = self else {
            return None;
        };
        pairs
            .iter()
            .find(|(k, _)| matches!(k, Value::Str(s) if s.iter().copied().eq(key.chars().map(u32::from))))
            .map(|(_, v)| v)
    }
}

fn int_of_bool(b: bool) -> Int {
    Int::from_decimal(false, if b { "1" } else { "0" })
}

/// The int an integral float equals, exactly.
fn float_as_int(f: f64) -> Option<Int> {
    if f.is_finite() && f.fract() == 0.0 {
        Some(Int::from_decimal(f < 0.0, &format!("{:.0}", f.abs())))
    } else {
        None
    }
}

/// `d[key] = value`: a new key goes last; an existing key keeps its place
/// (and its original spelling, `True` staying `True` over a later `1`).
pub(super) fn dict_set(pairs: &mut Vec<(Value, Value)>, key: Value, value: Value) {
    match pairs.iter_mut().find(|(k, _)| k.py_eq(&key)) {
        Some(slot) => slot.1 = value,
        None => pairs.push((key, value)),
    }
}

/// `json.dumps(value)` with Python's defaults: `", "` and `": "`
/// separators, ASCII output, `NaN`/`Infinity` allowed.
pub(super) fn dumps(value: &Value) -> Result<String, TypeError> {
    let mut out = String::new();
    write_json(value, &mut out)?;
    Ok(out)
}

fn write_json(value: &Value, out: &mut String) -> Result<(), TypeError> {
    match value {
        Value::None => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(i) => out.push_str(&int_text(i)?),
        Value::Float(f) => out.push_str(&json_float(*f)),
        Value::Str(s) => write_json_str(s, out),
        Value::List(items) | Value::Tuple(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_json(item, out)?;
            }
            out.push(']');
        }
        Value::Dict(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let key: Vec<u32> = match k {
                    Value::Str(s) => s.clone(),
                    Value::Float(f) => json_float(*f).chars().map(u32::from).collect(),
                    Value::Bool(b) => (if *b { "true" } else { "false" })
                        .chars()
                        .map(u32::from)
                        .collect(),
                    Value::None => "null".chars().map(u32::from).collect(),
                    Value::Int(i) => int_text(i)?.chars().map(u32::from).collect(),
                    _ => return Err(TypeError),
                };
                write_json_str(&key, out);
                out.push_str(": ");
                write_json(v, out)?;
            }
            out.push('}');
        }
        Value::Complex(..) | Value::Bytes(_) | Value::Ellipsis | Value::Set => {
            return Err(TypeError);
        }
    }
    Ok(())
}

/// An int as text; past Python's digit cap `json.dumps` raises (a
/// ValueError there, an exception all the same).
fn int_text(i: &Int) -> Result<String, TypeError> {
    if i.digits.len() > INT_MAX_STR_DIGITS {
        return Err(TypeError);
    }
    Ok(i.to_text())
}

fn json_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else {
        float_repr(f)
    }
}

fn write_json_str(s: &[u32], out: &mut String) {
    out.push('"');
    for &c in s {
        match c {
            0x22 => out.push_str("\\\""),
            0x5c => out.push_str("\\\\"),
            0x0a => out.push_str("\\n"),
            0x0d => out.push_str("\\r"),
            0x09 => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            0x20..=0x7e => out.push(char::from(c as u8)),
            0x10000.. => {
                let v = c - 0x10000;
                out.push_str(&format!(
                    "\\u{:04x}\\u{:04x}",
                    0xd800 + (v >> 10),
                    0xdc00 + (v & 0x3ff)
                ));
            }
            _ => out.push_str(&format!("\\u{c:04x}")),
        }
    }
    out.push('"');
}
