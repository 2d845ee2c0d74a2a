//! MLPerf's `FunctionCallExtractor`: a reply's function calls as the JSON
//! text `[{"name": …, "arguments": {…}}, …]` that BFCL scoring compares —
//! from serialized OpenAI `tool_calls`, a JSON array of calls, or, last,
//! calls written as text (`get_weather(city='London')`), whose arguments
//! Python reads with `ast.literal_eval`.

use std::sync::LazyLock;

use regex::Regex;

use super::json::{JsonError, loads};
use super::literal::{EvalError, literal_eval, unparse};
use super::pyexpr::{Expr, parse};
use super::value::{TypeError, Value, dict_set, dumps, str_value};
use super::{PY_W_CLASS, not_before, py_pattern, py_strip};

/// Words that look like calls in prose or code but are not tool calls.
const SKIP_NAMES: [&str; 35] = [
    "print",
    "return",
    "if",
    "for",
    "while",
    "def",
    "class",
    "import",
    "from",
    "with",
    "assert",
    "raise",
    "try",
    "except",
    "len",
    "str",
    "int",
    "float",
    "list",
    "dict",
    "set",
    "tuple",
    "type",
    "isinstance",
    "range",
    "enumerate",
    "zip",
    "map",
    "filter",
    "Note",
    "Example",
    "Here",
    "This",
    "The",
    "For",
];

/// `\b([A-Za-z_]\w*)\s*\(`: a match starts one character before the name.
static CALL_START: LazyLock<Regex> = LazyLock::new(|| {
    let before = not_before(PY_W_CLASS);
    py_pattern(&format!(r"{before}([A-Za-z_]\w*)\s*\("))
});
static SIGNATURE_PART: LazyLock<Regex> =
    LazyLock::new(|| py_pattern(r"\A(?:[A-Za-z_]\w*(?:\s*:\s*\w+)?)\z"));

/// Where MLPerf's Python raises instead of answering (nesting past its
/// recursion limit, a value `json.dumps` refuses, an unhashable key).
struct Raised;

impl From<TypeError> for Raised {
    fn from(_: TypeError) -> Raised {
        Raised
    }
}

pub(super) fn extract(text: &str) -> Option<String> {
    let text = py_strip(text);
    if text.is_empty() {
        return None;
    }
    let units: Vec<u32> = text.chars().map(u32::from).collect();
    match loads(&units) {
        Ok(data) => {
            if let Some(calls) = tool_calls(&data).or_else(|| call_array(&data)) {
                return calls.ok();
            }
        }
        Err(JsonError::TooDeep) => return None,
        Err(JsonError::Invalid) => {}
    }
    text_calls(text).ok().flatten()
}

fn call(name: Value, arguments: Value) -> Value {
    Value::Dict(vec![
        (str_value("name"), name),
        (str_value("arguments"), arguments),
    ])
}

/// `[{"id": …, "type": "function", "function": {"name": …, "arguments": "…"}}]`,
/// with `arguments` read as JSON when it is JSON.
fn tool_calls(data: &Value) -> Option<Result<String, Raised>> {
    let Value::List(items) = data else {
        return None;
    };
    let mut calls = Vec::new();
    for item in items {
        if !matches!(item, Value::Dict(_)) {
            return None;
        }
        let func = item.get("function")?;
        if !matches!(func, Value::Dict(_)) {
            return None;
        }
        let name = func.get("name").cloned().unwrap_or_else(|| str_value(""));
        let mut arguments = func
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| str_value("{}"));
        if let Value::Str(s) = &arguments {
            match loads(s) {
                Ok(parsed) => arguments = parsed,
                Err(JsonError::TooDeep) => return Some(Err(Raised)),
                Err(JsonError::Invalid) => {}
            }
        }
        calls.push(call(name, arguments));
    }
    if calls.is_empty() {
        return None;
    }
    dumps(&Value::List(calls)).ok().map(Ok)
}

/// `[{"name": …, "arguments": {…}}]`.
fn call_array(data: &Value) -> Option<Result<String, Raised>> {
    let Value::List(items) = data else {
        return None;
    };
    let mut calls = Vec::new();
    for item in items {
        let name = item.get("name")?;
        let arguments = item
            .get("arguments")
            .cloned()
            .unwrap_or(Value::Dict(Vec::new()));
        calls.push(call(name.clone(), arguments));
    }
    if calls.is_empty() {
        return None;
    }
    dumps(&Value::List(calls)).ok().map(Ok)
}

/// Where MLPerf's paren scan stands between two bytes: outside quotes,
/// inside single or double quotes, or just after a backslash inside them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None = 0,
    Single = 1,
    Double = 2,
    SingleEscape = 3,
    DoubleEscape = 4,
}

const QUOTES: [Quote; 5] = [
    Quote::None,
    Quote::Single,
    Quote::Double,
    Quote::SingleEscape,
    Quote::DoubleEscape,
];

/// One step of MLPerf's scan: the state after byte `b`, and how `b` moves
/// the paren depth. Bytes stand for characters: every byte the scan reacts
/// to is ASCII, and a backslash skips one character, whose continuation
/// bytes then change nothing inside quotes.
fn step(q: Quote, b: u8) -> (Quote, i8) {
    match (q, b) {
        (Quote::None, b'\'') => (Quote::Single, 0),
        (Quote::None, b'"') => (Quote::Double, 0),
        (Quote::None, b'(') => (Quote::None, 1),
        (Quote::None, b')') => (Quote::None, -1),
        (Quote::Single, b'\\') => (Quote::SingleEscape, 0),
        (Quote::Single, b'\'') => (Quote::None, 0),
        (Quote::Double, b'\\') => (Quote::DoubleEscape, 0),
        (Quote::Double, b'"') => (Quote::None, 0),
        (Quote::SingleEscape, _) => (Quote::Single, 0),
        (Quote::DoubleEscape, _) => (Quote::Double, 0),
        (q, _) => (q, 0),
    }
}

/// The byte offset of the `)` closing the `(` at `open`, skipping quoted
/// text the way MLPerf does (a backslash inside quotes skips one
/// character), by scanning: linear in what it reads.
fn scan_closing_paren(text: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut q = Quote::None;
    for (i, &b) in text.iter().enumerate().skip(open) {
        let (next, d) = step(q, b);
        q = next;
        if d > 0 {
            depth += 1;
        } else if d < 0 {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// Every `(`'s closing `)` at once, for texts where scanning from each
/// `(` would be quadratic (unclosed `f(` repeated). MLPerf's scan from a
/// `(` is a walk through (byte, quote state) nodes: each node has one
/// successor, and a scan that meets the walk of another in the same state
/// follows it from there. With `h` the depth still to come from a node to
/// the end, the `)` closing the `(` at `v` ends just before the first node
/// after `v` whose `h` is back at `h(v)`; `up[node]`, the first node after
/// it with a greater `h`, is filled from the end in one pass because
/// depth moves by at most one per byte.
struct ParenTable {
    /// Node `pos * 5 + state` → the first later node with greater `h`.
    up: Vec<u32>,
}

const NO_NODE: u32 = u32::MAX;

impl ParenTable {
    /// `None` for texts too long to index with `u32` nodes.
    fn new(text: &[u8]) -> Option<ParenTable> {
        let nodes = (text.len() + 1).checked_mul(QUOTES.len())?;
        if nodes >= NO_NODE as usize {
            return None;
        }
        let mut up = vec![NO_NODE; nodes];
        for pos in (0..text.len()).rev() {
            for q in QUOTES {
                let (next, d) = step(q, text[pos]);
                let succ = (pos + 1) * QUOTES.len() + next as usize;
                up[pos * QUOTES.len() + q as usize] = match d {
                    -1 => succ as u32,
                    0 => up[succ],
                    _ => match up[succ] {
                        NO_NODE => NO_NODE,
                        above => up[above as usize],
                    },
                };
            }
        }
        Some(ParenTable { up })
    }

    fn closing_paren(&self, open: usize) -> Option<usize> {
        let after = (open + 1) * QUOTES.len() + Quote::None as usize;
        match self.up[after] {
            NO_NODE => None,
            node => Some(node as usize / QUOTES.len() - 1),
        }
    }
}

/// MLPerf's closing-paren search from every call start, in time linear in
/// the text: scans while they find their `)` (each reads its own call,
/// and later starts lie after it), the table from the first that does not.
struct ClosingParens<'t> {
    text: &'t [u8],
    table: Option<Option<ParenTable>>,
}

impl ClosingParens<'_> {
    fn find(&mut self, open: usize) -> Option<usize> {
        match &self.table {
            Some(Some(table)) => table.closing_paren(open),
            Some(None) => scan_closing_paren(self.text, open),
            None => {
                let found = scan_closing_paren(self.text, open);
                if found.is_none() {
                    self.table = Some(ParenTable::new(self.text));
                }
                found
            }
        }
    }
}

/// Bare names (`city`, `x: int`): a signature or a mention, not a call.
fn looks_like_signature(args: &str) -> bool {
    args.split(',')
        .map(py_strip)
        .filter(|p| !p.is_empty())
        .all(|p| SIGNATURE_PART.is_match(p))
}

/// The keyword arguments, each its literal value or else its source text
/// as Python prints it back; `{"_raw": args}` when they do not parse.
fn arguments(args: &str) -> Result<Value, Raised> {
    let mut pairs = Vec::new();
    if args.is_empty() {
        return Ok(Value::Dict(pairs));
    }
    match parse(&format!("dict({args})")) {
        Err(_) => Ok(Value::Dict(vec![(str_value("_raw"), str_value(args))])),
        Ok(Expr::Call(_, _, keywords)) => {
            for (name, value) in &keywords {
                let Some(name) = name else { continue };
                let v = match literal_eval(value) {
                    Ok(v) => v,
                    Err(EvalError::Value) => str_value(&unparse(value)),
                    Err(EvalError::Type) => return Err(Raised),
                };
                dict_set(&mut pairs, str_value(name), v);
            }
            Ok(Value::Dict(pairs))
        }
        Ok(_) => Ok(Value::Dict(pairs)),
    }
}

fn text_calls(text: &str) -> Result<Option<String>, Raised> {
    let mut calls = Vec::new();
    let mut parens = ClosingParens {
        text: text.as_bytes(),
        table: None,
    };
    // Consumed spans never overlap and come in order, so a start is inside
    // one exactly when it is before the end of the last.
    let mut consumed_end = 0;
    let mut from = 0;
    while let Some(caps) = CALL_START.captures_at(text, from) {
        let (Some(whole), Some(name)) = (caps.get(0), caps.get(1)) else {
            break;
        };
        // The next match may consume this one's `(` as the character
        // before its name.
        from = whole.end() - 1;
        let start = name.start();
        if start < consumed_end {
            continue;
        }
        if SKIP_NAMES.contains(&name.as_str()) {
            continue;
        }
        let open = whole.end() - 1;
        let Some(close) = parens.find(open) else {
            continue;
        };
        consumed_end = close + 1;
        let args = py_strip(&text[open + 1..close]);
        if !args.is_empty() && looks_like_signature(args) {
            continue;
        }
        calls.push(call(str_value(name.as_str()), arguments(args)?));
    }
    if calls.is_empty() {
        return Ok(None);
    }
    Ok(Some(dumps(&Value::List(calls))?))
}

#[cfg(test)]
mod tests {
    use super::{ParenTable, scan_closing_paren, text_calls};

    /// The table answers what a scan from each `(` answers, on texts made
    /// of the bytes the scan reacts to (and a two-byte character).
    #[test]
    fn paren_table_matches_the_scan() {
        let alphabet = ["(", ")", "'", "\"", "\\", "x", "é"];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            let mut text = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 40) as usize;
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push_str(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            let bytes = text.as_bytes();
            let table = ParenTable::new(bytes).expect("short text");
            for (open, _) in text.match_indices('(') {
                assert_eq!(
                    table.closing_paren(open),
                    scan_closing_paren(bytes, open),
                    "{text:?} at {open}"
                );
            }
        }
    }

    /// A call after an unclosed one is still found (the table takes over
    /// after the first `(` without its `)`).
    #[test]
    fn calls_after_an_unclosed_one() {
        let calls = |t: &str| text_calls(t).ok().flatten();
        assert_eq!(
            calls("f( g(a=1) h(' k(b=2)").as_deref(),
            Some(r#"[{"name": "g", "arguments": {"a": 1}}, {"name": "k", "arguments": {"b": 2}}]"#)
        );
    }
}
