//! Answer extractors (MLPerf's `evaluation/extractor.py`): each pulls the
//! answer out of a reply exactly as MLPerf's Python does on the same text.
//!
//! Exactness is the point, so the patterns are Python `re` patterns
//! re-spelled for fancy-regex with Python's own character classes written
//! out (`\w`, `\s`, `\b` and case-insensitive letters differ at the edges of
//! Unicode between the two engines), and the function-call extractor carries
//! small readers of Python's JSON and Python literals. The price is that
//! every pattern runs on a backtracking engine; replies are scored one at a
//! time, so that does not matter.

mod function_call;
mod json;
mod literal;
mod pyexpr;
mod pyrepr;
#[cfg(test)]
mod tests;
mod value;

use std::sync::LazyLock;

use fancy_regex::{Regex, RegexBuilder};

/// An answer extractor, by MLPerf's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extractor {
    Identity,
    Abcd,
    BoxedMath,
    PythonCode,
    FunctionCall,
}

/// Every extractor, in the order `parse` lists them.
pub(crate) const ALL: [Extractor; 5] = [
    Extractor::Identity,
    Extractor::Abcd,
    Extractor::BoxedMath,
    Extractor::PythonCode,
    Extractor::FunctionCall,
];

impl Extractor {
    /// Accepts our short names and MLPerf's ids (`abcd` or `abcd_extractor`).
    pub(crate) fn parse(name: &str) -> Result<Extractor, String> {
        ALL.into_iter()
            .find(|e| e.name() == name || e.mlperf_id() == name)
            .ok_or_else(|| {
                let names: Vec<String> = ALL
                    .iter()
                    .map(|e| format!("{} ({})", e.name(), e.mlperf_id()))
                    .collect();
                format!(
                    "unknown extractor {name:?}: expected one of {}",
                    names.join(", ")
                )
            })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Extractor::Identity => "identity",
            Extractor::Abcd => "abcd",
            Extractor::BoxedMath => "boxed_math",
            Extractor::PythonCode => "python_code",
            Extractor::FunctionCall => "function_call",
        }
    }

    pub(crate) fn mlperf_id(self) -> &'static str {
        match self {
            Extractor::Identity => "identity_extractor",
            Extractor::Abcd => "abcd_extractor",
            Extractor::BoxedMath => "boxed_math_extractor",
            Extractor::PythonCode => "python_code_extractor",
            Extractor::FunctionCall => "function_call_extractor",
        }
    }

    /// The class name MLPerf writes into `accuracy_results.json`.
    pub(crate) fn mlperf_class(self) -> &'static str {
        match self {
            Extractor::Identity => "IdentityExtractor",
            Extractor::Abcd => "ABCDExtractor",
            Extractor::BoxedMath => "BoxedMathExtractor",
            Extractor::PythonCode => "PythonCodeExtractor",
            Extractor::FunctionCall => "FunctionCallExtractor",
        }
    }

    /// What MLPerf's `extract(text)` returns with no default: `None` where
    /// Python returns `None`. ABCD answers `""` when nothing matches, as
    /// MLPerf's does. Where MLPerf's Python would raise (a function call
    /// whose arguments are a set, bytes or complex number, which `json.dumps`
    /// refuses), this answers `None`: the reply scores as not extracted.
    pub(crate) fn extract(self, text: &str) -> Option<String> {
        match self {
            Extractor::Identity => Some(text.to_string()),
            Extractor::Abcd => Some(abcd(text)),
            Extractor::BoxedMath => boxed_math(text),
            Extractor::PythonCode => python_code(text),
            Extractor::FunctionCall => function_call::extract(text),
        }
    }
}

/// Python's `\s` for str patterns (`str.isspace`, Unicode 14).
const PY_S: &str =
    r"[\t-\r\x1c-\x20\x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]";
/// Python's `\w` for str patterns: letters, numbers, underscore.
const PY_W: &str = r"[\p{L}\p{N}_]";

fn is_py_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\x1c'..='\x20' | '\u{85}' | '\u{a0}' | '\u{1680}'
        | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

/// Python's `str.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Turns a pattern written with Python's class names into one fancy-regex
/// reads the same way: `\s` and `\w` become Python's classes and `\b` a
/// boundary between them. The patterns here use these escapes only outside
/// character classes.
fn py_pattern(p: &str) -> Regex {
    let boundary = format!("(?:(?<={PY_W})(?!{PY_W})|(?<!{PY_W})(?={PY_W}))");
    let mut out = String::new();
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('s') => out.push_str(PY_S),
            Some('w') => out.push_str(PY_W),
            Some('b') => out.push_str(&boundary),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    // Python's `re` has no backtracking budget; neither do these, so a
    // long reply never loses a match Python would find.
    RegexBuilder::new(&out)
        .backtrack_limit(usize::MAX)
        .build()
        .expect("extractor patterns are valid")
}

/// The first capture group of the first match (Python's `search`), or
/// `None`.
fn first_group<'t>(re: &Regex, text: &'t str) -> Option<&'t str> {
    let caps = re.captures(text).ok()??;
    caps.get(1).map(|m| m.as_str())
}

/// MLPerf's ABCD patterns in priority order. Python compiles them with
/// IGNORECASE where they say `(?i)`; its case-insensitive letters are
/// spelled out here (Python's `s` also matches `ſ`, its `i` also `İ` and
/// `ı`, which Unicode simple case folding does not give).
static ABCD_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    const ANSWER: &str = "[Aa][Nn][Ssſ][Ww][Ee][Rr]";
    const WRAP: &str = r"(?:\*{1,2}|_{1,2})";
    const OPTION: &str = "[Oo][Pp][Tt][IiİıI][Oo][Nn]";
    const CHOICE: &str = "[Cc][Hh][Oo][IiİıI][Cc][Ee]";
    const NOT_ALNUM_BEFORE: &str = "(?<![A-Za-z0-9])";
    const NOT_ALNUM_AFTER: &str = "(?![A-Za-z0-9])";
    [
        format!(r"{WRAP}{ANSWER}[Ssſ]?\s*[:\-–]?{WRAP}\s*([ABCDabcd])\b"),
        format!(r"(?m)^\s*{WRAP}?{ANSWER}:?{WRAP}?\s*:?\s*{WRAP}?([ABCDabcd]){WRAP}?\s*"),
        format!(r"\b{ANSWER}[Ssſ]?\b\s*[:\-–]?\s*\(\s*([ABCDabcd])\s*\)"),
        format!(r"\b{ANSWER}[Ssſ]?\b\s*[:\-–]?\s*([ABCDabcd])\b"),
        format!(r"\b(?:{OPTION}|{CHOICE})\b\s*[:\-–]?\s*([ABCDabcd])\b"),
        r"\\boxed\{[^}]*?([ABCD])[^}]*\}".to_string(),
        r"\\boxed\{[^}]*?\\textbf\{[^}]*?([ABCD])[^}]*\}[^}]*\}".to_string(),
        r"\\boxed\{[^}]*?\\text\{[^}]*?([ABCD])[^}]*\}[^}]*\}".to_string(),
        format!(r"{NOT_ALNUM_BEFORE}[\(\[]\s*([ABCD])\s*[\)\]]{NOT_ALNUM_AFTER}"),
        format!(r"{NOT_ALNUM_BEFORE}{WRAP}([ABCD]){WRAP}{NOT_ALNUM_AFTER}"),
        r"\\textbf\{[^}]*?([ABCD])[^}]*\}".to_string(),
        format!(r"{NOT_ALNUM_BEFORE}{WRAP}\s*([ABCD])\)[^*_\n]+?{WRAP}{NOT_ALNUM_AFTER}"),
        format!(r"(?m)^\s*{WRAP}?([ABCD]){WRAP}?\s*[\.\)\-–:]?\s*.*$"),
    ]
    .iter()
    .map(|p| py_pattern(p))
    .collect()
});

/// MLPerf's ABCD choice: `choice1`..`choice4`, or `""` when nothing matches.
///
/// MLPerf sorts its matches by (priority, length), but each pattern gives at
/// most one match and priorities are distinct, so the first pattern that
/// matches wins.
fn abcd(text: &str) -> String {
    let letter = ABCD_PATTERNS
        .iter()
        .find_map(|re| first_group(re, text))
        .and_then(|g| g.chars().next())
        .or_else(|| text.strip_prefix("**").unwrap_or(text).chars().next());
    match letter.map(|c| c.to_ascii_uppercase()) {
        Some(c @ 'A'..='D') => format!("choice{}", c as u8 - b'A' + 1),
        _ => String::new(),
    }
}

static BOXED: LazyLock<Regex> =
    LazyLock::new(|| py_pattern(r"(?s)boxed\{(.*?)\}|framebox\{(.*?)\}"));
static DIGITS: LazyLock<Regex> = LazyLock::new(|| py_pattern(r"\d+"));

/// The last `boxed{…}`/`framebox{…}` with content, its last comma-separated
/// piece stripped; else the last run of (Unicode) digits.
fn boxed_math(text: &str) -> Option<String> {
    let boxes: Vec<_> = BOXED.captures_iter(text).map_while(Result::ok).collect();
    for caps in boxes.iter().rev() {
        let group = [caps.get(1), caps.get(2)]
            .into_iter()
            .flatten()
            .map(|m| m.as_str())
            .find(|g| !g.is_empty());
        if let Some(g) = group {
            let last = g.rsplit(',').next().unwrap_or(g);
            return Some(py_strip(last).to_string());
        }
    }
    DIGITS
        .find_iter(text)
        .map_while(Result::ok)
        .last()
        .map(|m| m.as_str().to_string())
}

static PYTHON_BLOCK: LazyLock<Regex> = LazyLock::new(|| py_pattern(r"(?s)```python(.*?)```"));
static ANY_BLOCK: LazyLock<Regex> = LazyLock::new(|| py_pattern(r"(?s)```(.*?)```"));
static LANGUAGE_TAG: LazyLock<Regex> =
    LazyLock::new(|| py_pattern(r"^(?:[Pp][Yy][Tt][Hh][Oo][Nn]|[Pp][Yy])\s*\n"));

/// The last ```` ```python ```` block, else the last fenced block with a
/// `python`/`py` tag line removed; stripped.
fn python_code(text: &str) -> Option<String> {
    let text = py_strip(text);
    if text.is_empty() {
        return None;
    }
    let last_group = |re: &Regex| {
        re.captures_iter(text)
            .map_while(Result::ok)
            .last()
            .and_then(|c| c.get(1).map(|m| m.as_str()))
    };
    if let Some(code) = last_group(&PYTHON_BLOCK) {
        return Some(py_strip(code).to_string());
    }
    let code = py_strip(last_group(&ANY_BLOCK)?);
    let tag_end = LANGUAGE_TAG
        .find(code)
        .ok()
        .flatten()
        .map_or(0, |m| m.end());
    Some(code[tag_end..].to_string())
}
