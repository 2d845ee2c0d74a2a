//! Python's `json.loads` with its defaults: `NaN`, `Infinity` and
//! `-Infinity` accepted, control characters refused inside strings, exact
//! ints (up to Python's 4300-digit cap), a repeated key keeping its first
//! place and its last value, lone surrogate escapes kept.

use super::value::{INT_MAX_STR_DIGITS, Int, Value, dict_set};

/// Why the text is not JSON to Python: a `ValueError` (caught by MLPerf), or
/// nesting deep enough that Python raises `RecursionError` (not caught).
#[derive(Debug, PartialEq)]
pub(super) enum JsonError {
    Invalid,
    TooDeep,
}

/// Python's default recursion limit leaves about this many nested arrays
/// or objects to the C scanner before `RecursionError`.
const MAX_DEPTH: usize = 990;

pub(super) fn loads(text: &[u32]) -> Result<Value, JsonError> {
    let mut p = Parser { s: text, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.i != text.len() {
        return Err(JsonError::Invalid);
    }
    Ok(v)
}

/// Reads code points, as Python reads a str: a lone surrogate is one more
/// character (kept inside a string, refused outside).
struct Parser<'a> {
    s: &'a [u32],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s
            .get(self.i)
            .map(|&c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn at(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).and_then(|&c| char::from_u32(c))
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.i += 1;
        }
    }

    fn eat_word(&mut self, word: &str) -> bool {
        let n = word.chars().count();
        if self.s.len() >= self.i + n
            && self.s[self.i..self.i + n]
                .iter()
                .copied()
                .eq(word.chars().map(u32::from))
        {
            self.i += n;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.peek() {
            Some('"') => {
                self.i += 1;
                self.string().map(Value::Str)
            }
            Some('{') => self.object(depth + 1),
            Some('[') => self.array(depth + 1),
            Some('n') if self.eat_word("null") => Ok(Value::None),
            Some('t') if self.eat_word("true") => Ok(Value::Bool(true)),
            Some('f') if self.eat_word("false") => Ok(Value::Bool(false)),
            Some('N') if self.eat_word("NaN") => Ok(Value::Float(f64::NAN)),
            Some('I') if self.eat_word("Infinity") => Ok(Value::Float(f64::INFINITY)),
            Some('-') if self.eat_word("-Infinity") => Ok(Value::Float(f64::NEG_INFINITY)),
            Some('-' | '0'..='9') => self.number(),
            _ => Err(JsonError::Invalid),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(JsonError::TooDeep);
        }
        self.i += 1;
        let mut pairs = Vec::new();
        self.ws();
        if self.peek() == Some('}') {
            self.i += 1;
            return Ok(Value::Dict(pairs));
        }
        loop {
            if self.peek() != Some('"') {
                return Err(JsonError::Invalid);
            }
            self.i += 1;
            let key = self.string()?;
            self.ws();
            if self.peek() != Some(':') {
                return Err(JsonError::Invalid);
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth)?;
            dict_set(&mut pairs, Value::Str(key), v);
            self.ws();
            match self.peek() {
                Some(',') => {
                    self.i += 1;
                    self.ws();
                }
                Some('}') => {
                    self.i += 1;
                    return Ok(Value::Dict(pairs));
                }
                _ => return Err(JsonError::Invalid),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth > MAX_DEPTH {
            return Err(JsonError::TooDeep);
        }
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(']') {
            self.i += 1;
            return Ok(Value::List(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.ws();
            match self.peek() {
                Some(',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(']') => {
                    self.i += 1;
                    return Ok(Value::List(items));
                }
                _ => return Err(JsonError::Invalid),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some('0'..='9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.i;
        let negative = self.peek() == Some('-');
        if negative {
            self.i += 1;
        }
        match self.peek() {
            Some('0') => self.i += 1,
            Some('1'..='9') => {
                self.digits();
            }
            _ => return Err(JsonError::Invalid),
        }
        let int_end = self.i;
        let mut is_float = false;
        if self.peek() == Some('.') && matches!(self.at(1), Some('0'..='9')) {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let save = self.i;
            self.i += 1;
            if matches!(self.peek(), Some('+' | '-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                self.i = save;
            } else {
                is_float = true;
            }
        }
        let text: String = self.s[start..self.i]
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        if is_float {
            return text
                .parse()
                .map(Value::Float)
                .map_err(|_| JsonError::Invalid);
        }
        let digits: String = self.s[start + usize::from(negative)..int_end]
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        if digits.len() > INT_MAX_STR_DIGITS {
            return Err(JsonError::Invalid);
        }
        Ok(Value::Int(Int::from_decimal(negative, &digits)))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let hex: String = self
            .s
            .get(self.i..self.i + 4)
            .ok_or(JsonError::Invalid)?
            .iter()
            .filter_map(|&c| char::from_u32(c))
            .collect();
        if hex.len() != 4 {
            return Err(JsonError::Invalid);
        }
        if !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(JsonError::Invalid);
        }
        self.i += 4;
        u32::from_str_radix(&hex, 16).map_err(|_| JsonError::Invalid)
    }

    /// The rest of a string after its opening quote.
    fn string(&mut self) -> Result<Vec<u32>, JsonError> {
        let mut out = Vec::new();
        loop {
            let c = self.peek().ok_or(JsonError::Invalid)?;
            self.i += 1;
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let e = self.peek().ok_or(JsonError::Invalid)?;
                    self.i += 1;
                    let unit = match e {
                        '"' => 0x22,
                        '\\' => 0x5c,
                        '/' => 0x2f,
                        'b' => 0x08,
                        'f' => 0x0c,
                        'n' => 0x0a,
                        'r' => 0x0d,
                        't' => 0x09,
                        'u' => {
                            let hi = self.hex4()?;
                            if (0xd800..0xdc00).contains(&hi)
                                && self.peek() == Some('\\')
                                && self.at(1) == Some('u')
                            {
                                let save = self.i;
                                self.i += 2;
                                match self.hex4() {
                                    Ok(lo) if (0xdc00..0xe000).contains(&lo) => {
                                        0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00)
                                    }
                                    _ => {
                                        self.i = save;
                                        hi
                                    }
                                }
                            } else {
                                hi
                            }
                        }
                        _ => return Err(JsonError::Invalid),
                    };
                    out.push(unit);
                }
                c if (c as u32) < 0x20 => return Err(JsonError::Invalid),
                _ => out.push(self.s[self.i - 1]),
            }
        }
    }
}
