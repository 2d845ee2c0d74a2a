//! A reader of Python expressions, enough of Python 3.11's grammar to tell
//! what `ast.parse(f"dict({args})", mode="eval")` makes of a model's call
//! arguments: the tree, or a `SyntaxError` (which MLPerf turns into
//! `{"_raw": args}`).
//!
//! Literals, names, attributes, calls, subscripts and slices, every
//! operator, conditional and walrus expressions, comprehensions, lambdas,
//! `await` and `yield` are read, and f-strings without replacement fields.
//! F-strings with fields and `\N{…}` escapes are not: they read as a
//! syntax error, where Python would print them back with `ast.unparse` —
//! rare in a function call's arguments.

mod lex;

use super::value::Int;
use lex::{KEYWORDS, NumTok, Tok, tokenize};

#[derive(Debug, PartialEq)]
pub(super) struct SyntaxError;

type Result<T> = std::result::Result<T, SyntaxError>;

#[derive(Clone, Debug)]
pub(super) enum Const {
    None,
    True,
    False,
    Ellipsis,
    Int(Int),
    Float(f64),
    Imag(f64),
    /// The text, and whether the first piece had a `u` prefix.
    Str(Vec<u32>, bool),
    Bytes(Vec<u8>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum BinOp {
    Add,
    Sub,
    Mul,
    MatMul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    LShift,
    RShift,
    BitOr,
    BitXor,
    BitAnd,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum UnOp {
    Not,
    Invert,
    Plus,
    Minus,
}

#[derive(Clone, Debug)]
pub(super) struct Comprehension {
    pub(super) is_async: bool,
    pub(super) target: Expr,
    pub(super) iter: Expr,
    pub(super) ifs: Vec<Expr>,
}

#[derive(Clone, Debug)]
pub(super) enum Expr {
    Name(String),
    Const(Const),
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    Set(Vec<Expr>),
    /// `None` keys are `**mapping` items.
    Dict(Vec<(Option<Expr>, Expr)>),
    BinOp(Box<Expr>, BinOp, Box<Expr>),
    UnaryOp(UnOp, Box<Expr>),
    /// `and` when true, else `or`.
    BoolOp(bool, Vec<Expr>),
    Compare(Box<Expr>, Vec<(&'static str, Expr)>),
    /// Function, positional arguments, keywords (`None` for `**kwargs`).
    Call(Box<Expr>, Vec<Expr>, Vec<(Option<String>, Expr)>),
    Attribute(Box<Expr>, String),
    Subscript(Box<Expr>, Box<Expr>),
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    Starred(Box<Expr>),
    IfExp(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `name := value` (Python's NamedExpr).
    Walrus(String, Box<Expr>),
    Await(Box<Expr>),
    ListComp(Box<Expr>, Vec<Comprehension>),
    SetComp(Box<Expr>, Vec<Comprehension>),
    DictComp(Box<Expr>, Box<Expr>, Vec<Comprehension>),
    GeneratorExp(Box<Expr>, Vec<Comprehension>),
    Lambda(Vec<Param>, Box<Expr>),
    /// An f-string without replacement fields: its text.
    FString(Vec<u32>),
    /// `yield` (with `from` when true) and its value.
    Yield(bool, Option<Box<Expr>>),
}

/// A lambda's parameters, in source order.
#[derive(Clone, Debug)]
pub(super) enum Param {
    /// Positional or keyword-only, with its default.
    Named(String, Option<Expr>),
    /// `/`
    Slash,
    /// `*` or `*args`
    Star(Option<String>),
    /// `**kwargs`
    DoubleStar(String),
}

/// Reads `src` as Python's `ast.parse(src, mode="eval")` does.
pub(super) fn parse(src: &str) -> Result<Expr> {
    let toks = tokenize(src)?;
    let mut p = Parser { toks, i: 0 };
    let e = p.expressions()?;
    while p.peek() == &Tok::Newline {
        p.i += 1;
    }
    if p.peek() != &Tok::End {
        return Err(SyntaxError);
    }
    Ok(e)
}

struct Parser {
    toks: Vec<Tok>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.i).unwrap_or(&Tok::End)
    }

    fn peek_at(&self, k: usize) -> &Tok {
        self.toks.get(self.i + k).unwrap_or(&Tok::End)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        let yes = self.is_op(op);
        if yes {
            self.i += 1;
        }
        yes
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.i += 1;
        }
        yes
    }

    fn expect_op(&mut self, op: &str) -> Result<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(SyntaxError)
        }
    }

    fn expressions(&mut self) -> Result<Expr> {
        let first = self.expression()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.at_expression_end() {
                break;
            }
            items.push(self.expression()?);
        }
        Ok(Expr::Tuple(items))
    }

    fn at_expression_end(&self) -> bool {
        matches!(self.peek(), Tok::End | Tok::Newline)
            || matches!(self.peek(), Tok::Op(o) if [")", "]", "}", ":", "="].contains(o))
    }

    fn expression(&mut self) -> Result<Expr> {
        if self.eat_kw("lambda") {
            return self.lambda();
        }
        let body = self.disjunction()?;
        if !self.eat_kw("if") {
            return Ok(body);
        }
        let test = self.disjunction()?;
        if !self.eat_kw("else") {
            return Err(SyntaxError);
        }
        let orelse = self.expression()?;
        Ok(Expr::IfExp(
            Box::new(test),
            Box::new(body),
            Box::new(orelse),
        ))
    }

    fn name_token(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                self.i += 1;
                Ok(n)
            }
            _ => Err(SyntaxError),
        }
    }

    /// A lambda after its keyword, with Python's rules on parameter order.
    fn lambda(&mut self) -> Result<Expr> {
        let mut params = Vec::new();
        let (mut star, mut bare_star, mut defaulted) = (false, false, false);
        let mut kwonly = 0;
        while !self.is_op(":") {
            if self.eat_op("/") {
                let positional = params.iter().any(|p| matches!(p, Param::Named(..)));
                if !positional || star || params.iter().any(|p| matches!(p, Param::Slash)) {
                    return Err(SyntaxError);
                }
                params.push(Param::Slash);
            } else if self.eat_op("**") {
                params.push(Param::DoubleStar(self.name_token()?));
                self.eat_op(",");
                break;
            } else if self.eat_op("*") {
                if star {
                    return Err(SyntaxError);
                }
                star = true;
                let name = if self.is_op(",") || self.is_op(":") {
                    bare_star = true;
                    None
                } else {
                    Some(self.name_token()?)
                };
                params.push(Param::Star(name));
            } else {
                let name = self.name_token()?;
                let default = if self.eat_op("=") {
                    Some(self.expression()?)
                } else {
                    None
                };
                if star {
                    kwonly += 1;
                } else if default.is_some() {
                    defaulted = true;
                } else if defaulted {
                    return Err(SyntaxError);
                }
                params.push(Param::Named(name, default));
            }
            if !self.eat_op(",") {
                break;
            }
        }
        if bare_star && kwonly == 0 {
            return Err(SyntaxError);
        }
        self.expect_op(":")?;
        let body = self.expression()?;
        Ok(Expr::Lambda(params, Box::new(body)))
    }

    /// `yield`, `yield x, y` or `yield from x`, after `yield`.
    fn yield_expr(&mut self) -> Result<Expr> {
        if self.eat_kw("from") {
            return Ok(Expr::Yield(true, Some(Box::new(self.expression()?))));
        }
        if self.is_op(")") {
            return Ok(Expr::Yield(false, None));
        }
        let one = |p: &mut Parser| -> Result<Expr> {
            if p.eat_op("*") {
                Ok(Expr::Starred(Box::new(p.bitwise_or()?)))
            } else {
                p.expression()
            }
        };
        let first = one(self)?;
        if !self.is_op(",") {
            return Ok(Expr::Yield(false, Some(Box::new(first))));
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op(")") {
                break;
            }
            items.push(one(self)?);
        }
        Ok(Expr::Yield(false, Some(Box::new(Expr::Tuple(items)))))
    }

    fn named_expression(&mut self) -> Result<Expr> {
        if let (Tok::Name(n), Tok::Op(":=")) = (self.peek(), self.peek_at(1)) {
            if KEYWORDS.contains(&n.as_str()) {
                return Err(SyntaxError);
            }
            let name = n.clone();
            self.i += 2;
            let value = self.expression()?;
            return Ok(Expr::Walrus(name, Box::new(value)));
        }
        let e = self.expression()?;
        if self.is_op(":=") {
            return Err(SyntaxError);
        }
        Ok(e)
    }

    fn star_named_expression(&mut self) -> Result<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitwise_or()?)));
        }
        self.named_expression()
    }

    fn disjunction(&mut self) -> Result<Expr> {
        self.bool_chain("or", Parser::conjunction, false)
    }

    fn conjunction(&mut self) -> Result<Expr> {
        self.bool_chain("and", Parser::inversion, true)
    }

    fn bool_chain(
        &mut self,
        kw: &str,
        next: fn(&mut Parser) -> Result<Expr>,
        and: bool,
    ) -> Result<Expr> {
        let first = next(self)?;
        if !self.is_kw(kw) {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_kw(kw) {
            values.push(next(self)?);
        }
        Ok(Expr::BoolOp(and, values))
    }

    fn inversion(&mut self) -> Result<Expr> {
        if self.eat_kw("not") {
            return Ok(Expr::UnaryOp(UnOp::Not, Box::new(self.inversion()?)));
        }
        self.comparison()
    }

    fn compare_op(&mut self) -> Option<&'static str> {
        let op = match self.peek() {
            Tok::Op(o) if ["==", "!=", "<", "<=", ">", ">="].contains(o) => *o,
            Tok::Name(n) if n == "in" => "in",
            Tok::Name(n) if n == "not" && matches!(self.peek_at(1), Tok::Name(m) if m == "in") => {
                self.i += 1;
                "not in"
            }
            Tok::Name(n) if n == "is" => {
                if matches!(self.peek_at(1), Tok::Name(m) if m == "not") {
                    self.i += 1;
                    "is not"
                } else {
                    "is"
                }
            }
            _ => return None,
        };
        self.i += 1;
        Some(op)
    }

    fn comparison(&mut self) -> Result<Expr> {
        let left = self.bitwise_or()?;
        let mut rest = Vec::new();
        while let Some(op) = self.compare_op() {
            rest.push((op, self.bitwise_or()?));
        }
        if rest.is_empty() {
            Ok(left)
        } else {
            Ok(Expr::Compare(Box::new(left), rest))
        }
    }

    fn binary(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Parser) -> Result<Expr>,
    ) -> Result<Expr> {
        let mut left = next(self)?;
        'outer: loop {
            for (tok, op) in ops {
                if self.eat_op(tok) {
                    let right = next(self)?;
                    left = Expr::BinOp(Box::new(left), *op, Box::new(right));
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }

    fn bitwise_or(&mut self) -> Result<Expr> {
        self.binary(&[("|", BinOp::BitOr)], Parser::bitwise_xor)
    }

    fn bitwise_xor(&mut self) -> Result<Expr> {
        self.binary(&[("^", BinOp::BitXor)], Parser::bitwise_and)
    }

    fn bitwise_and(&mut self) -> Result<Expr> {
        self.binary(&[("&", BinOp::BitAnd)], Parser::shift)
    }

    fn shift(&mut self) -> Result<Expr> {
        self.binary(&[("<<", BinOp::LShift), (">>", BinOp::RShift)], Parser::sum)
    }

    fn sum(&mut self) -> Result<Expr> {
        self.binary(&[("+", BinOp::Add), ("-", BinOp::Sub)], Parser::term)
    }

    fn term(&mut self) -> Result<Expr> {
        self.binary(
            &[
                ("*", BinOp::Mul),
                ("/", BinOp::Div),
                ("//", BinOp::FloorDiv),
                ("%", BinOp::Mod),
                ("@", BinOp::MatMul),
            ],
            Parser::factor,
        )
    }

    fn factor(&mut self) -> Result<Expr> {
        for (tok, op) in [("+", UnOp::Plus), ("-", UnOp::Minus), ("~", UnOp::Invert)] {
            if self.eat_op(tok) {
                return Ok(Expr::UnaryOp(op, Box::new(self.factor()?)));
            }
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr> {
        let base = if self.eat_kw("await") {
            Expr::Await(Box::new(self.primary()?))
        } else {
            self.primary()?
        };
        if self.eat_op("**") {
            let exp = self.factor()?;
            return Ok(Expr::BinOp(Box::new(base), BinOp::Pow, Box::new(exp)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Expr> {
        let mut e = self.atom()?;
        loop {
            if self.eat_op(".") {
                match self.peek().clone() {
                    Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                        self.i += 1;
                        e = Expr::Attribute(Box::new(e), n);
                    }
                    _ => return Err(SyntaxError),
                }
            } else if self.eat_op("(") {
                let (args, keywords) = self.arguments()?;
                e = Expr::Call(Box::new(e), args, keywords);
            } else if self.eat_op("[") {
                let slice = self.slices()?;
                self.expect_op("]")?;
                e = Expr::Subscript(Box::new(e), Box::new(slice));
            } else {
                return Ok(e);
            }
        }
    }

    fn slices(&mut self) -> Result<Expr> {
        let first = self.slice()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            items.push(self.slice()?);
        }
        Ok(Expr::Tuple(items))
    }

    fn slice(&mut self) -> Result<Expr> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitwise_or()?)));
        }
        let part = |p: &mut Parser| -> Result<Option<Box<Expr>>> {
            if p.is_op(":") || p.is_op("]") || p.is_op(",") {
                Ok(None)
            } else {
                Ok(Some(Box::new(p.expression()?)))
            }
        };
        if !self.is_op(":") {
            let e = self.named_expression()?;
            if !self.is_op(":") {
                return Ok(e);
            }
            self.i += 1;
            let upper = part(self)?;
            let step = if self.eat_op(":") { part(self)? } else { None };
            return Ok(Expr::Slice(Some(Box::new(e)), upper, step));
        }
        self.i += 1;
        let upper = part(self)?;
        let step = if self.eat_op(":") { part(self)? } else { None };
        Ok(Expr::Slice(None, upper, step))
    }

    /// A call's arguments after `(`, through `)`.
    #[allow(clippy::type_complexity)]
    fn arguments(&mut self) -> Result<(Vec<Expr>, Vec<(Option<String>, Expr)>)> {
        let mut args = Vec::new();
        let mut keywords: Vec<(Option<String>, Expr)> = Vec::new();
        let mut seen_double_star = false;
        let mut seen_keyword = false;
        loop {
            if self.eat_op(")") {
                return Ok((args, keywords));
            }
            if self.eat_op("**") {
                keywords.push((None, self.expression()?));
                seen_double_star = true;
            } else if self.eat_op("*") {
                if seen_double_star {
                    return Err(SyntaxError);
                }
                args.push(Expr::Starred(Box::new(self.expression()?)));
            } else if let (Tok::Name(n), Tok::Op("=")) = (self.peek(), self.peek_at(1)) {
                if KEYWORDS.contains(&n.as_str()) {
                    return Err(SyntaxError);
                }
                let name = n.clone();
                self.i += 2;
                keywords.push((Some(name), self.expression()?));
                seen_keyword = true;
            } else {
                let e = self.named_expression()?;
                if self.is_kw("for") || self.is_kw("async") {
                    let gens = self.comprehensions()?;
                    let genexp = Expr::GeneratorExp(Box::new(e), gens);
                    if !args.is_empty() || !keywords.is_empty() || !self.is_op(")") {
                        return Err(SyntaxError);
                    }
                    args.push(genexp);
                    continue;
                }
                if seen_keyword || seen_double_star || self.is_op("=") {
                    return Err(SyntaxError);
                }
                args.push(e);
            }
            if !self.eat_op(",") && !self.is_op(")") {
                return Err(SyntaxError);
            }
        }
    }

    fn comprehensions(&mut self) -> Result<Vec<Comprehension>> {
        let mut gens = Vec::new();
        loop {
            let is_async = self.eat_kw("async");
            if !self.eat_kw("for") {
                if is_async {
                    return Err(SyntaxError);
                }
                return Ok(gens);
            }
            let target = self.targets()?;
            if !self.eat_kw("in") {
                return Err(SyntaxError);
            }
            let iter = self.disjunction()?;
            let mut ifs = Vec::new();
            while self.eat_kw("if") {
                ifs.push(self.disjunction()?);
            }
            gens.push(Comprehension {
                is_async,
                target,
                iter,
                ifs,
            });
        }
    }

    /// A comprehension's `for` targets.
    fn targets(&mut self) -> Result<Expr> {
        let one = |p: &mut Parser| -> Result<Expr> {
            if p.eat_op("*") {
                return Ok(Expr::Starred(Box::new(p.bitwise_or()?)));
            }
            let t = p.bitwise_or()?;
            match t {
                Expr::Name(_)
                | Expr::Attribute(..)
                | Expr::Subscript(..)
                | Expr::Tuple(_)
                | Expr::List(_) => Ok(t),
                _ => Err(SyntaxError),
            }
        };
        let first = one(self)?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_kw("in") {
                break;
            }
            items.push(one(self)?);
        }
        Ok(Expr::Tuple(items))
    }

    fn atom(&mut self) -> Result<Expr> {
        let tok = self.peek().clone();
        self.i += 1;
        match tok {
            Tok::Name(n) => match n.as_str() {
                "None" => Ok(Expr::Const(Const::None)),
                "True" => Ok(Expr::Const(Const::True)),
                "False" => Ok(Expr::Const(Const::False)),
                _ if KEYWORDS.contains(&n.as_str()) => Err(SyntaxError),
                _ => Ok(Expr::Name(n)),
            },
            Tok::Num(NumTok::Int(i)) => Ok(Expr::Const(Const::Int(i))),
            Tok::Num(NumTok::Float(f)) => Ok(Expr::Const(Const::Float(f))),
            Tok::Num(NumTok::Imag(f)) => Ok(Expr::Const(Const::Imag(f))),
            Tok::Str(first) => {
                let mut text = first.text;
                let mut fstring = first.fstring;
                while let Tok::Str(more) = self.peek() {
                    if more.bytes != first.bytes {
                        return Err(SyntaxError);
                    }
                    fstring |= more.fstring;
                    text.extend_from_slice(&more.text);
                    self.i += 1;
                }
                if fstring {
                    Ok(Expr::FString(text))
                } else if first.bytes {
                    Ok(Expr::Const(Const::Bytes(
                        text.iter().map(|&c| c as u8).collect(),
                    )))
                } else {
                    Ok(Expr::Const(Const::Str(text, first.u_prefix)))
                }
            }
            Tok::Op("...") => Ok(Expr::Const(Const::Ellipsis)),
            Tok::Op("(") => self.paren(),
            Tok::Op("[") => self.list(),
            Tok::Op("{") => self.brace(),
            _ => Err(SyntaxError),
        }
    }

    /// Comma-separated items after the first, through the closing bracket.
    fn rest_of_items(&mut self, mut items: Vec<Expr>, close: &str) -> Result<Vec<Expr>> {
        loop {
            if self.eat_op(close) {
                return Ok(items);
            }
            self.expect_op(",")?;
            if self.eat_op(close) {
                return Ok(items);
            }
            items.push(self.star_named_expression()?);
        }
    }

    fn paren(&mut self) -> Result<Expr> {
        if self.eat_op(")") {
            return Ok(Expr::Tuple(Vec::new()));
        }
        if self.eat_kw("yield") {
            let e = self.yield_expr()?;
            self.expect_op(")")?;
            return Ok(e);
        }
        let first = self.star_named_expression()?;
        if self.is_kw("for") || self.is_kw("async") {
            let gens = self.comprehensions()?;
            self.expect_op(")")?;
            return Ok(Expr::GeneratorExp(Box::new(first), gens));
        }
        if self.eat_op(")") {
            if matches!(first, Expr::Starred(_)) {
                return Err(SyntaxError);
            }
            return Ok(first);
        }
        Ok(Expr::Tuple(self.rest_of_items(vec![first], ")")?))
    }

    fn list(&mut self) -> Result<Expr> {
        if self.eat_op("]") {
            return Ok(Expr::List(Vec::new()));
        }
        let first = self.star_named_expression()?;
        if self.is_kw("for") || self.is_kw("async") {
            let gens = self.comprehensions()?;
            self.expect_op("]")?;
            return Ok(Expr::ListComp(Box::new(first), gens));
        }
        Ok(Expr::List(self.rest_of_items(vec![first], "]")?))
    }

    fn brace(&mut self) -> Result<Expr> {
        if self.eat_op("}") {
            return Ok(Expr::Dict(Vec::new()));
        }
        if self.is_op("**") {
            return self.dict_items(Vec::new());
        }
        let first = self.star_named_expression()?;
        if self.eat_op(":") {
            if matches!(first, Expr::Starred(_) | Expr::Walrus(..)) {
                return Err(SyntaxError);
            }
            let value = self.expression()?;
            if self.is_kw("for") || self.is_kw("async") {
                let gens = self.comprehensions()?;
                self.expect_op("}")?;
                return Ok(Expr::DictComp(Box::new(first), Box::new(value), gens));
            }
            if self.eat_op("}") {
                return Ok(Expr::Dict(vec![(Some(first), value)]));
            }
            self.expect_op(",")?;
            return self.dict_items(vec![(Some(first), value)]);
        }
        if self.is_kw("for") || self.is_kw("async") {
            let gens = self.comprehensions()?;
            self.expect_op("}")?;
            return Ok(Expr::SetComp(Box::new(first), gens));
        }
        Ok(Expr::Set(self.rest_of_items(vec![first], "}")?))
    }

    /// Dict items after a comma (or the opening brace), through `}`.
    fn dict_items(&mut self, mut items: Vec<(Option<Expr>, Expr)>) -> Result<Expr> {
        loop {
            if self.eat_op("}") {
                return Ok(Expr::Dict(items));
            }
            if self.eat_op("**") {
                items.push((None, self.bitwise_or()?));
            } else {
                let key = self.expression()?;
                self.expect_op(":")?;
                items.push((Some(key), self.expression()?));
            }
            if !self.eat_op(",") && !self.is_op("}") {
                return Err(SyntaxError);
            }
        }
    }
}
