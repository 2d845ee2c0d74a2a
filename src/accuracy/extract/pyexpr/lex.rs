//! Python's tokenizer, as much as `pyexpr` reads: names, numbers, string
//! and bytes literals (prefixes, escapes, implicit concatenation is the
//! parser's), operators and line joins.

use super::{Result, SyntaxError};
use crate::accuracy::extract::value::{INT_MAX_STR_DIGITS, Int};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Name(String),
    Num(NumTok),
    Str(StrTok),
    Op(&'static str),
    Newline,
    End,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum NumTok {
    Int(Int),
    Float(f64),
    Imag(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct StrTok {
    pub(super) bytes: bool,
    pub(super) fstring: bool,
    pub(super) u_prefix: bool,
    pub(super) text: Vec<u32>,
}

pub(super) const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

const OPERATORS: [&str; 47] = [
    "**=", "//=", ">>=", "<<=", "...", "!=", "%=", "&=", "**", "*=", "+=", "-=", "->", "//", "/=",
    ":=", "<<", "<=", "==", ">=", ">>", "@=", "^=", "|=", "%", "&", "(", ")", "*", "+", ",", "-",
    ".", "/", ":", ";", "<", "=", ">", "@", "[", "]", "^", "{", "|", "}", "~",
];

/// Python's tokenizer refuses deeper bracket nesting.
const MAX_NESTING: usize = 200;

pub(super) fn is_id_start(c: char) -> bool {
    c == '_' || c.is_ascii_alphabetic() || (!c.is_ascii() && c.is_alphabetic())
}

pub(super) fn is_id_continue(c: char) -> bool {
    is_id_start(c) || c.is_ascii_digit() || (!c.is_ascii() && c.is_alphanumeric())
}

struct Lexer<'a> {
    s: &'a [char],
    i: usize,
    depth: usize,
    toks: Vec<Tok>,
}

pub(super) fn tokenize(src: &str) -> Result<Vec<Tok>> {
    let chars: Vec<char> = src.chars().collect();
    let mut lx = Lexer {
        s: &chars,
        i: 0,
        depth: 0,
        toks: Vec::new(),
    };
    lx.run()?;
    Ok(lx.toks)
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    fn run(&mut self) -> Result<()> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\x0c' => self.i += 1,
                '\n' | '\r' => {
                    self.i += 1;
                    if self.depth == 0 && !matches!(self.toks.last(), None | Some(Tok::Newline)) {
                        self.toks.push(Tok::Newline);
                    }
                }
                '#' => {
                    while !matches!(self.peek(0), None | Some('\n' | '\r')) {
                        self.i += 1;
                    }
                }
                '\\' => match (self.peek(1), self.peek(2)) {
                    (Some('\n'), _) => self.i += 2,
                    (Some('\r'), Some('\n')) => self.i += 3,
                    (Some('\r'), _) => self.i += 2,
                    _ => return Err(SyntaxError),
                },
                '0'..='9' => self.number()?,
                '.' if matches!(self.peek(1), Some('0'..='9')) => self.number()?,
                '"' | '\'' => self.string("")?,
                c if is_id_start(c) => self.name()?,
                _ => self.operator()?,
            }
        }
        self.toks.push(Tok::End);
        Ok(())
    }

    fn operator(&mut self) -> Result<()> {
        let op = OPERATORS
            .iter()
            .find(|op| op.chars().enumerate().all(|(k, c)| self.peek(k) == Some(c)))
            .ok_or(SyntaxError)?;
        self.i += op.len();
        match *op {
            "(" | "[" | "{" => {
                self.depth += 1;
                if self.depth > MAX_NESTING {
                    return Err(SyntaxError);
                }
            }
            ")" | "]" | "}" => self.depth = self.depth.checked_sub(1).ok_or(SyntaxError)?,
            _ => {}
        }
        self.toks.push(Tok::Op(op));
        Ok(())
    }

    fn name(&mut self) -> Result<()> {
        let start = self.i;
        while self.peek(0).is_some_and(is_id_continue) {
            self.i += 1;
        }
        let word: String = self.s[start..self.i].iter().collect();
        if matches!(self.peek(0), Some('"' | '\'')) {
            let prefix = word.to_ascii_lowercase();
            if ["r", "u", "b", "br", "rb", "f", "fr", "rf"].contains(&prefix.as_str()) {
                return self.string(&prefix);
            }
        }
        self.toks.push(Tok::Name(word));
        Ok(())
    }

    fn digits(&mut self, radix: u32) -> Result<String> {
        let mut out = String::new();
        loop {
            match self.peek(0) {
                Some(c) if c.is_digit(radix) => {
                    out.push(c);
                    self.i += 1;
                }
                Some('_') if !out.is_empty() && self.peek(1).is_some_and(|c| c.is_digit(radix)) => {
                    self.i += 1;
                }
                Some('_') => return Err(SyntaxError),
                _ => return Ok(out),
            }
        }
    }

    /// What may follow a number: not a letter or digit, except the start
    /// of the keywords Python 3.11 still accepts there (`1if x else 2`).
    fn end_of_number(&self) -> Result<()> {
        match self.peek(0) {
            Some(c) if is_id_continue(c) => {
                let rest: String = self.s[self.i..].iter().take(4).collect();
                let allowed = ["and", "else", "for", "if", "in", "is", "not", "or"];
                if allowed.iter().any(|k| rest.starts_with(k)) {
                    Ok(())
                } else {
                    Err(SyntaxError)
                }
            }
            _ => Ok(()),
        }
    }

    fn number(&mut self) -> Result<()> {
        if self.peek(0) == Some('0') {
            let radix = match self.peek(1) {
                Some('x' | 'X') => Some(16),
                Some('o' | 'O') => Some(8),
                Some('b' | 'B') => Some(2),
                _ => None,
            };
            if let Some(radix) = radix {
                self.i += 2;
                if self.peek(0) == Some('_') {
                    self.i += 1;
                }
                let digits = self.digits(radix)?;
                if digits.is_empty() {
                    return Err(SyntaxError);
                }
                self.end_of_number()?;
                self.toks
                    .push(Tok::Num(NumTok::Int(Int::from_radix(&digits, radix))));
                return Ok(());
            }
        }
        let int_part = self.digits(10)?;
        let mut text = int_part.clone();
        let mut is_float = false;
        if self.peek(0) == Some('.') {
            self.i += 1;
            is_float = true;
            text.push('.');
            text.push_str(&self.digits(10)?);
        }
        if matches!(self.peek(0), Some('e' | 'E')) {
            let sign = matches!(self.peek(1), Some('+' | '-'));
            let digit_at = if sign { 2 } else { 1 };
            if self.peek(digit_at).is_some_and(|c| c.is_ascii_digit()) {
                text.push('e');
                if sign {
                    text.extend(self.peek(1));
                }
                self.i += digit_at;
                text.push_str(&self.digits(10)?);
                is_float = true;
            } else if sign {
                return Err(SyntaxError);
            }
        }
        if matches!(self.peek(0), Some('j' | 'J')) {
            self.i += 1;
            self.end_of_number()?;
            let v = parse_float(&text)?;
            self.toks.push(Tok::Num(NumTok::Imag(v)));
            return Ok(());
        }
        self.end_of_number()?;
        if is_float {
            let v = parse_float(&text)?;
            self.toks.push(Tok::Num(NumTok::Float(v)));
        } else {
            if int_part.len() > 1 && int_part.starts_with('0') && int_part.chars().any(|c| c != '0')
            {
                return Err(SyntaxError);
            }
            if int_part.trim_start_matches('0').len() > INT_MAX_STR_DIGITS {
                return Err(SyntaxError);
            }
            self.toks
                .push(Tok::Num(NumTok::Int(Int::from_decimal(false, &int_part))));
        }
        Ok(())
    }

    fn string(&mut self, prefix: &str) -> Result<()> {
        let fstring = prefix.contains('f');
        let raw = prefix.contains('r');
        let bytes = prefix.contains('b');
        let quote = self.peek(0).ok_or(SyntaxError)?;
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.i += if triple { 3 } else { 1 };
        let mut body = Vec::new();
        loop {
            let c = self.peek(0).ok_or(SyntaxError)?;
            if c == quote
                && (!triple || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote)))
            {
                self.i += if triple { 3 } else { 1 };
                break;
            }
            if (c == '\n' || c == '\r') && !triple {
                return Err(SyntaxError);
            }
            if c == '\\' {
                let next = self.peek(1).ok_or(SyntaxError)?;
                body.push(c);
                body.push(next);
                self.i += 2;
                continue;
            }
            body.push(c);
            self.i += 1;
        }
        if bytes && body.iter().any(|c| !c.is_ascii()) {
            return Err(SyntaxError);
        }
        if fstring {
            body = fstring_literal(&body)?;
        }
        let text = if raw {
            body.iter().map(|&c| u32::from(c)).collect()
        } else {
            unescape(&body, bytes)?
        };
        self.toks.push(Tok::Str(StrTok {
            bytes,
            fstring,
            u_prefix: prefix == "u",
            text,
        }));
        Ok(())
    }
}

/// The text of an f-string without replacement fields (`{{`/`}}` are
/// braces); a field is beyond this reader, a lone `}` is Python's error.
pub(super) fn fstring_literal(body: &[char]) -> Result<Vec<char>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        if c == '{' || c == '}' {
            if body.get(i + 1) != Some(&c) {
                return Err(SyntaxError);
            }
            i += 1;
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

pub(super) fn parse_float(text: &str) -> Result<f64> {
    let t = if text.starts_with('.') {
        format!("0{text}")
    } else {
        text.to_string()
    };
    let t = t.replace(".e", ".0e");
    let t = if t.ends_with('.') { format!("{t}0") } else { t };
    t.parse().map_err(|_| SyntaxError)
}

/// Python's backslash escapes of a non-raw literal.
pub(super) fn unescape(body: &[char], bytes: bool) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    let mut i = 0;
    let hex = |from: usize, n: usize| -> Result<u32> {
        let digits: String = body
            .get(from..from + n)
            .ok_or(SyntaxError)?
            .iter()
            .collect();
        if digits.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(&digits, 16).map_err(|_| SyntaxError)
        } else {
            Err(SyntaxError)
        }
    };
    while i < body.len() {
        let c = body[i];
        if c != '\\' {
            out.push(u32::from(c));
            i += 1;
            continue;
        }
        let e = body[i + 1];
        i += 2;
        match e {
            '\n' => {}
            '\r' => {
                if body.get(i) == Some(&'\n') {
                    i += 1;
                }
            }
            '\\' | '\'' | '"' => out.push(u32::from(e)),
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(0x0c),
            'n' => out.push(0x0a),
            'r' => out.push(0x0d),
            't' => out.push(9),
            'v' => out.push(0x0b),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match body.get(i).and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(if bytes { v & 0xff } else { v });
            }
            'x' => {
                out.push(hex(i, 2)?);
                i += 2;
            }
            'u' if !bytes => {
                out.push(hex(i, 4)?);
                i += 4;
            }
            'U' if !bytes => {
                let v = hex(i, 8)?;
                if v > 0x10ffff {
                    return Err(SyntaxError);
                }
                out.push(v);
                i += 8;
            }
            'N' if !bytes => return Err(SyntaxError),
            other => {
                out.push(u32::from('\\'));
                out.push(u32::from(other));
            }
        }
    }
    Ok(out)
}
