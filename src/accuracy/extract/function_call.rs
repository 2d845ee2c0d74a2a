//! MLPerf's `FunctionCallExtractor`: a reply's function calls as the JSON
//! text `[{"name": …, "arguments": {…}}, …]` that BFCL scoring compares —
//! from serialized OpenAI `tool_calls`, a JSON array of calls, or, last,
//! calls written as text (`get_weather(city='London')`), whose arguments
//! Python reads with `ast.literal_eval`.

use std::sync::LazyLock;

use fancy_regex::Regex;

use super::json::{JsonError, loads};
use super::literal::{EvalError, literal_eval, unparse};
use super::pyexpr::{Expr, parse};
use super::value::{TypeError, Value, dict_set, dumps, str_value};
use super::{py_pattern, py_strip};

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

static CALL_START: LazyLock<Regex> = LazyLock::new(|| py_pattern(r"\b([A-Za-z_]\w*)\s*\("));
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

/// The byte offset of the `)` closing the `(` at `open`, skipping quoted
/// text the way MLPerf does (a backslash inside quotes skips one character).
fn closing_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let (mut single, mut double) = (false, false);
    let mut chars = text[open..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if single || double => {
                chars.next();
            }
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ if single || double => {}
            '(' => depth += 1,
            ')' => {
                depth = depth.wrapping_sub(1);
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Bare names (`city`, `x: int`): a signature or a mention, not a call.
fn looks_like_signature(args: &str) -> bool {
    args.split(',')
        .map(py_strip)
        .filter(|p| !p.is_empty())
        .all(|p| SIGNATURE_PART.is_match(p).unwrap_or(false))
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
    let mut consumed: Vec<(usize, usize)> = Vec::new();
    for caps in CALL_START.captures_iter(text).map_while(Result::ok) {
        let (Some(whole), Some(name)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        let start = whole.start();
        if consumed.iter().any(|&(s, e)| s <= start && start < e) {
            continue;
        }
        if SKIP_NAMES.contains(&name.as_str()) {
            continue;
        }
        let open = whole.end() - 1;
        let Some(close) = closing_paren(text, open) else {
            continue;
        };
        consumed.push((open, close + 1));
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
