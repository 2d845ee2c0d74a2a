//! Answer extractors (MLPerf's `evaluation/extractor.py`): each pulls the
//! answer out of a reply exactly as MLPerf's Python does on the same text.
//!
//! Exactness is the point, so the patterns are Python `re` patterns
//! re-spelled with Python's own character classes written out (`\w`, `\s`
//! and case-insensitive letters differ at the edges of Unicode between the
//! two engines), and the function-call extractor carries small readers of
//! Python's JSON and Python literals.
//!
//! Replies come from the endpoint under test, so every extractor runs in
//! time linear in the reply: the patterns run on the `regex` crate's
//! automata, which have no look-around, and Python's `\b` and MLPerf's
//! `(?<!…)`/`(?!…)` are spelled as one consumed character (or the end of
//! the text) on the side that needs it — the same first match and groups,
//! since only the first match or non-overlapping groups are read. On a
//! backtracking engine the same patterns took seconds to minutes on a
//! reply that degenerates into whitespace after "Answer".

mod function_call;
mod json;
mod literal;
mod pyexpr;
mod pyrepr;
#[cfg(test)]
mod tests;
mod value;

use std::sync::LazyLock;

use regex::Regex;

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

/// Python's `\b` before a word character, or MLPerf's `(?<![A-Za-z0-9])`
/// with `class` = `A-Za-z0-9`: the start of the text or one character
/// outside `class`, consumed. A match found with it starts one character
/// early, so a search for the next one starts one character before the end
/// of the last (`text_calls`).
fn not_before(class: &str) -> String {
    format!(r"(?:\A|[^{class}])")
}

/// Python's `\b` after a word character, or `(?![A-Za-z0-9])`: one
/// character outside `class`, consumed, or the end of the text.
fn not_after(class: &str) -> String {
    format!(r"(?:[^{class}]|\z)")
}

/// The characters of Python's `\w`, for `not_before`/`not_after`.
const PY_W_CLASS: &str = r"\p{L}\p{N}_";

/// Turns a pattern written with Python's class names into one the `regex`
/// crate reads the same way: `\s` and `\w` become Python's classes. The
/// patterns here use these escapes only outside character classes, and
/// spell word boundaries with `not_before`/`not_after`.
fn py_pattern(p: &str) -> Regex {
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
            Some('b') => panic!("spell \\b with not_before/not_after: {p}"),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    Regex::new(&out).expect("extractor patterns are valid")
}

/// The first capture group of the first match (Python's `search`), or
/// `None`.
fn first_group<'t>(re: &Regex, text: &'t str) -> Option<&'t str> {
    re.captures(text)?.get(1).map(|m| m.as_str())
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
    // `[Ssſ]?\b\s*[:\-–]?\s*X` with X a letter: the boundary asks for a
    // gap that is not empty. Before `\(` it is implied.
    const GAP: &str = r"(?:\s+[:\-–]?\s*|[:\-–]\s*)";
    let word_before = not_before(PY_W_CLASS);
    let word_after = not_after(PY_W_CLASS);
    let alnum_before = not_before("A-Za-z0-9");
    let alnum_after = not_after("A-Za-z0-9");
    [
        format!(r"{WRAP}{ANSWER}[Ssſ]?\s*[:\-–]?{WRAP}\s*([ABCDabcd]){word_after}"),
        format!(r"(?m)^\s*{WRAP}?{ANSWER}:?{WRAP}?\s*:?\s*{WRAP}?([ABCDabcd]){WRAP}?\s*"),
        format!(r"{word_before}{ANSWER}[Ssſ]?\s*[:\-–]?\s*\(\s*([ABCDabcd])\s*\)"),
        format!(r"{word_before}{ANSWER}[Ssſ]?{GAP}([ABCDabcd]){word_after}"),
        format!(r"{word_before}(?:{OPTION}|{CHOICE}){GAP}([ABCDabcd]){word_after}"),
        r"\\boxed\{[^}]*?([ABCD])[^}]*\}".to_string(),
        r"\\boxed\{[^}]*?\\textbf\{[^}]*?([ABCD])[^}]*\}[^}]*\}".to_string(),
        r"\\boxed\{[^}]*?\\text\{[^}]*?([ABCD])[^}]*\}[^}]*\}".to_string(),
        format!(r"{alnum_before}[\(\[]\s*([ABCD])\s*[\)\]]{alnum_after}"),
        format!(r"{alnum_before}{WRAP}([ABCD]){WRAP}{alnum_after}"),
        r"\\textbf\{[^}]*?([ABCD])[^}]*\}".to_string(),
        format!(r"{alnum_before}{WRAP}\s*([ABCD])\)[^*_\n]+?{WRAP}{alnum_after}"),
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
    let boxes: Vec<_> = BOXED.captures_iter(text).collect();
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
            .last()
            .and_then(|c| c.get(1).map(|m| m.as_str()))
    };
    if let Some(code) = last_group(&PYTHON_BLOCK) {
        return Some(py_strip(code).to_string());
    }
    let code = py_strip(last_group(&ANY_BLOCK)?);
    let tag_end = LANGUAGE_TAG.find(code).map_or(0, |m| m.end());
    Some(code[tag_end..].to_string())
}
