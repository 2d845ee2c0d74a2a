//! Python's `ast.literal_eval` and `ast.unparse` (3.11) over the trees
//! `pyexpr` reads: a call argument is kept as its value when it is a
//! literal, else as the source text Python prints back for it.

use super::pyexpr::{BinOp, Comprehension, Const, Expr, Param, UnOp};
use super::pyrepr::{bytes_repr, complex_repr, float_repr, is_printable, str_repr};
use super::value::{Value, dict_set};

/// How `literal_eval` fails: `ValueError` (MLPerf then keeps the unparsed
/// text) or `TypeError` from an unhashable set member or dict key (MLPerf
/// lets it escape).
#[derive(Debug, PartialEq)]
pub(super) enum EvalError {
    Value,
    Type,
}

pub(super) fn literal_eval(e: &Expr) -> Result<Value, EvalError> {
    match e {
        Expr::Const(c) => Ok(const_value(c)),
        Expr::Tuple(items) => Ok(Value::Tuple(
            items.iter().map(literal_eval).collect::<Result<_, _>>()?,
        )),
        Expr::List(items) => Ok(Value::List(
            items.iter().map(literal_eval).collect::<Result<_, _>>()?,
        )),
        Expr::Set(items) => {
            for item in items {
                if !literal_eval(item)?.is_hashable() {
                    return Err(EvalError::Type);
                }
            }
            Ok(Value::Set)
        }
        Expr::Call(func, args, keywords)
            if matches!(&**func, Expr::Name(n) if n == "set")
                && args.is_empty()
                && keywords.is_empty() =>
        {
            Ok(Value::Set)
        }
        Expr::Dict(items) => {
            let mut pairs = Vec::new();
            for (k, v) in items {
                let key = match k {
                    Some(k) => literal_eval(k)?,
                    None => return Err(EvalError::Value),
                };
                let value = literal_eval(v)?;
                if !key.is_hashable() {
                    return Err(EvalError::Type);
                }
                dict_set(&mut pairs, key, value);
            }
            Ok(Value::Dict(pairs))
        }
        Expr::BinOp(left, op @ (BinOp::Add | BinOp::Sub), right) => {
            let l = signed_num(left)?;
            let r = num(right)?;
            let l = match l {
                Value::Int(i) => Some(i.to_f64()),
                Value::Float(f) => Some(f),
                _ => None,
            };
            match (l, r) {
                (Some(l), Value::Complex(re, im)) => Ok(if *op == BinOp::Add {
                    Value::Complex(l + re, 0.0 + im)
                } else {
                    Value::Complex(l - re, 0.0 - im)
                }),
                _ => Err(EvalError::Value),
            }
        }
        _ => signed_num(e),
    }
}

fn const_value(c: &Const) -> Value {
    match c {
        Const::None => Value::None,
        Const::True => Value::Bool(true),
        Const::False => Value::Bool(false),
        Const::Ellipsis => Value::Ellipsis,
        Const::Int(i) => Value::Int(i.clone()),
        Const::Float(f) => Value::Float(*f),
        Const::Imag(f) => Value::Complex(0.0, *f),
        Const::Str(s, _) => Value::Str(s.clone()),
        Const::Bytes(b) => Value::Bytes(b.clone()),
    }
}

fn num(e: &Expr) -> Result<Value, EvalError> {
    match e {
        Expr::Const(c @ (Const::Int(_) | Const::Float(_) | Const::Imag(_))) => Ok(const_value(c)),
        _ => Err(EvalError::Value),
    }
}

fn signed_num(e: &Expr) -> Result<Value, EvalError> {
    match e {
        Expr::UnaryOp(UnOp::Plus, operand) => num(operand),
        Expr::UnaryOp(UnOp::Minus, operand) => Ok(match num(operand)? {
            Value::Int(i) => Value::Int(i.negated()),
            Value::Float(f) => Value::Float(-f),
            Value::Complex(re, im) => Value::Complex(-re, -im),
            other => other,
        }),
        _ => num(e),
    }
}

/// `ast.unparse`'s precedence levels (`_Precedence`); `|` shares `EXPR`.
mod prec {
    pub(super) const NAMED_EXPR: u8 = 0;
    pub(super) const TUPLE: u8 = 1;
    pub(super) const YIELD: u8 = 2;
    pub(super) const TEST: u8 = 3;
    pub(super) const OR: u8 = 4;
    pub(super) const AND: u8 = 5;
    pub(super) const NOT: u8 = 6;
    pub(super) const CMP: u8 = 7;
    pub(super) const EXPR: u8 = 8;
    pub(super) const BXOR: u8 = 9;
    pub(super) const BAND: u8 = 10;
    pub(super) const SHIFT: u8 = 11;
    pub(super) const ARITH: u8 = 12;
    pub(super) const TERM: u8 = 13;
    pub(super) const FACTOR: u8 = 14;
    pub(super) const POWER: u8 = 15;
    pub(super) const AWAIT: u8 = 16;
    pub(super) const ATOM: u8 = 17;

    pub(super) fn next(p: u8) -> u8 {
        (p + 1).min(ATOM)
    }
}

/// `ast.unparse(node)`.
pub(super) fn unparse(e: &Expr) -> String {
    let mut out = String::new();
    write(e, prec::TEST, &mut out);
    out
}

fn parens_if(cond: bool, out: &mut String, body: impl FnOnce(&mut String)) {
    if cond {
        out.push('(');
    }
    body(out);
    if cond {
        out.push(')');
    }
}

fn write_all(items: &[Expr], out: &mut String) {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write(item, prec::TEST, out);
    }
}

fn binop_info(op: BinOp) -> (&'static str, u8) {
    match op {
        BinOp::Add => ("+", prec::ARITH),
        BinOp::Sub => ("-", prec::ARITH),
        BinOp::Mul => ("*", prec::TERM),
        BinOp::MatMul => ("@", prec::TERM),
        BinOp::Div => ("/", prec::TERM),
        BinOp::FloorDiv => ("//", prec::TERM),
        BinOp::Mod => ("%", prec::TERM),
        BinOp::Pow => ("**", prec::POWER),
        BinOp::LShift => ("<<", prec::SHIFT),
        BinOp::RShift => (">>", prec::SHIFT),
        BinOp::BitOr => ("|", prec::EXPR),
        BinOp::BitXor => ("^", prec::BXOR),
        BinOp::BitAnd => ("&", prec::BAND),
    }
}

/// Python prints an infinite float constant as an overflowing literal.
const INF_TEXT: &str = "1e309";

fn write_const(c: &Const, out: &mut String) {
    match c {
        Const::None => out.push_str("None"),
        Const::True => out.push_str("True"),
        Const::False => out.push_str("False"),
        Const::Ellipsis => out.push_str("..."),
        Const::Int(i) => out.push_str(&i.to_text()),
        Const::Float(f) => out.push_str(&float_repr(*f).replace("inf", INF_TEXT)),
        Const::Imag(f) => out.push_str(&complex_repr(0.0, *f).replace("inf", INF_TEXT)),
        Const::Str(s, u_prefix) => {
            if *u_prefix {
                out.push('u');
            }
            out.push_str(&str_repr(s));
        }
        Const::Bytes(b) => out.push_str(&bytes_repr(b)),
    }
}

fn write_comprehensions(gens: &[Comprehension], out: &mut String) {
    for g in gens {
        out.push_str(if g.is_async { " async for " } else { " for " });
        write(&g.target, prec::TUPLE, out);
        out.push_str(" in ");
        write(&g.iter, prec::next(prec::TEST), out);
        for cond in &g.ifs {
            out.push_str(" if ");
            write(cond, prec::next(prec::TEST), out);
        }
    }
}

/// Writes `e` where its parent asked for precedence `p` (`TEST` unless the
/// parent said otherwise), parenthesized when `p` binds tighter than `e`.
fn write(e: &Expr, p: u8, out: &mut String) {
    match e {
        Expr::Name(n) => out.push_str(n),
        Expr::Const(c) => write_const(c, out),
        Expr::List(items) => {
            out.push('[');
            write_all(items, out);
            out.push(']');
        }
        Expr::Tuple(items) => parens_if(items.is_empty() || p > prec::TUPLE, out, |out| {
            write_items_view(items, out);
        }),
        Expr::Set(items) => {
            if items.is_empty() {
                out.push_str("{*()}");
            } else {
                out.push('{');
                write_all(items, out);
                out.push('}');
            }
        }
        Expr::Dict(items) => {
            out.push('{');
            for (i, (k, v)) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                match k {
                    None => {
                        out.push_str("**");
                        write(v, prec::EXPR, out);
                    }
                    Some(k) => {
                        write(k, prec::TEST, out);
                        out.push_str(": ");
                        write(v, prec::TEST, out);
                    }
                }
            }
            out.push('}');
        }
        Expr::BinOp(left, op, right) => {
            let (text, op_prec) = binop_info(*op);
            let (lp, rp) = if *op == BinOp::Pow {
                (prec::next(op_prec), op_prec)
            } else {
                (op_prec, prec::next(op_prec))
            };
            parens_if(p > op_prec, out, |out| {
                write(left, lp, out);
                out.push(' ');
                out.push_str(text);
                out.push(' ');
                write(right, rp, out);
            });
        }
        Expr::UnaryOp(op, operand) => {
            let (text, op_prec) = match op {
                UnOp::Not => ("not", prec::NOT),
                UnOp::Invert => ("~", prec::FACTOR),
                UnOp::Plus => ("+", prec::FACTOR),
                UnOp::Minus => ("-", prec::FACTOR),
            };
            parens_if(p > op_prec, out, |out| {
                out.push_str(text);
                if op_prec != prec::FACTOR {
                    out.push(' ');
                }
                write(operand, op_prec, out);
            });
        }
        Expr::BoolOp(and, values) => {
            let (text, mut level) = if *and {
                (" and ", prec::AND)
            } else {
                (" or ", prec::OR)
            };
            parens_if(p > level, out, |out| {
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        out.push_str(text);
                    }
                    level = prec::next(level);
                    write(v, level, out);
                }
            });
        }
        Expr::Compare(left, rest) => parens_if(p > prec::CMP, out, |out| {
            write(left, prec::next(prec::CMP), out);
            for (op, e) in rest {
                out.push(' ');
                out.push_str(op);
                out.push(' ');
                write(e, prec::next(prec::CMP), out);
            }
        }),
        Expr::Call(func, args, keywords) => {
            write(func, prec::ATOM, out);
            out.push('(');
            let mut first = true;
            for a in args {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                write(a, prec::TEST, out);
            }
            for (name, v) in keywords {
                if !first {
                    out.push_str(", ");
                }
                first = false;
                match name {
                    Some(n) => {
                        out.push_str(n);
                        out.push('=');
                    }
                    None => out.push_str("**"),
                }
                write(v, prec::TEST, out);
            }
            out.push(')');
        }
        Expr::Attribute(value, attr) => {
            write(value, prec::ATOM, out);
            if matches!(&**value, Expr::Const(Const::Int(_))) {
                out.push(' ');
            }
            out.push('.');
            out.push_str(attr);
        }
        Expr::Subscript(value, slice) => {
            write(value, prec::ATOM, out);
            out.push('[');
            match &**slice {
                Expr::Tuple(items) if !items.is_empty() => write_items_view(items, out),
                other => write(other, prec::TEST, out),
            }
            out.push(']');
        }
        Expr::Slice(lower, upper, step) => {
            if let Some(l) = lower {
                write(l, prec::TEST, out);
            }
            out.push(':');
            if let Some(u) = upper {
                write(u, prec::TEST, out);
            }
            if let Some(s) = step {
                out.push(':');
                write(s, prec::TEST, out);
            }
        }
        Expr::Starred(value) => {
            out.push('*');
            write(value, prec::EXPR, out);
        }
        Expr::IfExp(test, body, orelse) => parens_if(p > prec::TEST, out, |out| {
            write(body, prec::next(prec::TEST), out);
            out.push_str(" if ");
            write(test, prec::next(prec::TEST), out);
            out.push_str(" else ");
            write(orelse, prec::TEST, out);
        }),
        Expr::Walrus(target, value) => parens_if(p > prec::NAMED_EXPR, out, |out| {
            out.push_str(target);
            out.push_str(" := ");
            write(value, prec::ATOM, out);
        }),
        Expr::Await(value) => parens_if(p > prec::AWAIT, out, |out| {
            out.push_str("await ");
            write(value, prec::ATOM, out);
        }),
        Expr::ListComp(elt, gens) => {
            out.push('[');
            write(elt, prec::TEST, out);
            write_comprehensions(gens, out);
            out.push(']');
        }
        Expr::SetComp(elt, gens) => {
            out.push('{');
            write(elt, prec::TEST, out);
            write_comprehensions(gens, out);
            out.push('}');
        }
        Expr::DictComp(key, value, gens) => {
            out.push('{');
            write(key, prec::TEST, out);
            out.push_str(": ");
            write(value, prec::TEST, out);
            write_comprehensions(gens, out);
            out.push('}');
        }
        Expr::FString(text) => out.push_str(&fstring_repr(text)),
        Expr::Lambda(params, body) => parens_if(p > prec::TEST, out, |out| {
            out.push_str("lambda");
            if !params.is_empty() {
                out.push(' ');
                write_params(params, out);
            }
            out.push_str(": ");
            write(body, prec::TEST, out);
        }),
        Expr::Yield(from, value) => parens_if(p > prec::YIELD, out, |out| {
            out.push_str(if *from { "yield from" } else { "yield" });
            if let Some(v) = value {
                out.push(' ');
                write(v, prec::ATOM, out);
            }
        }),
        Expr::GeneratorExp(elt, gens) => {
            out.push('(');
            write(elt, prec::TEST, out);
            write_comprehensions(gens, out);
            out.push(')');
        }
    }
}

/// How `ast.unparse` prints an f-string of plain text: braces doubled,
/// whitespace and unprintables escaped, the first quote (of `'`, `"`, `"""`,
/// `'''`) the text lacks, preferring one that differs from its last
/// character.
fn fstring_repr(text: &[u32]) -> String {
    const QUOTES: [&str; 4] = ["'", "\"", "\"\"\"", "'''"];
    if text.is_empty() {
        return "f''".to_string();
    }
    let mut escaped = String::new();
    for &c in text {
        match c {
            0x7b => escaped.push_str("{{"),
            0x7d => escaped.push_str("}}"),
            0x5c => escaped.push_str("\\\\"),
            0x09 => escaped.push_str("\\t"),
            0x0a => escaped.push_str("\\n"),
            0x0d => escaped.push_str("\\r"),
            c if c < 0x20 || (0x7f..0x100).contains(&c) && !is_printable(c) => {
                escaped.push_str(&format!("\\x{c:02x}"))
            }
            c if is_printable(c) => escaped.extend(char::from_u32(c)),
            c if c < 0x10000 => escaped.push_str(&format!("\\u{c:04x}")),
            c => escaped.push_str(&format!("\\U{c:08x}")),
        }
    }
    let mut quotes: Vec<&str> = QUOTES
        .into_iter()
        .filter(|q| !escaped.contains(q))
        .collect();
    if quotes.is_empty() {
        let doubled: Vec<u32> = text
            .iter()
            .flat_map(|&c| {
                if c == 0x7b || c == 0x7d {
                    vec![c, c]
                } else {
                    vec![c]
                }
            })
            .collect();
        return format!("f{}", str_repr(&doubled));
    }
    let last = escaped.chars().last();
    quotes.sort_by_key(|q| q.chars().next() == last);
    let quote = quotes[0];
    if quote.chars().next() == last {
        let l = escaped.pop().unwrap_or('\'');
        escaped.push('\\');
        escaped.push(l);
    }
    format!("f{quote}{escaped}{quote}")
}

/// A lambda's parameters as `visit_arguments` prints them.
fn write_params(params: &[Param], out: &mut String) {
    for (i, param) in params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match param {
            Param::Named(name, default) => {
                out.push_str(name);
                if let Some(d) = default {
                    out.push('=');
                    write(d, prec::TEST, out);
                }
            }
            Param::Slash => out.push('/'),
            Param::Star(name) => {
                out.push('*');
                out.push_str(name.as_deref().unwrap_or(""));
            }
            Param::DoubleStar(name) => {
                out.push_str("**");
                out.push_str(name);
            }
        }
    }
}

/// `items_view`: one item keeps its trailing comma.
fn write_items_view(items: &[Expr], out: &mut String) {
    if items.len() == 1 {
        write(&items[0], prec::TEST, out);
        out.push(',');
    } else {
        write_all(items, out);
    }
}
