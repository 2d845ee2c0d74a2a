//! Error text as endpoints send it: the message inside the JSON error
//! objects every API uses (found by the in-place scanner, so the workers can
//! read it without a JSON tree), and that message made fit for one line of a
//! report or log.

use super::json::unescape;
use super::scan::{self, Value as V};
use crate::json_key;

json_key!(ERROR = "error");
json_key!(MESSAGE = "message");
json_key!(OBJECT = "object");

/// The message of an error object: `{"error": {"message": "..."}}`,
/// `{"error": "..."}`, or the flat `{"object": "error", "message": "..."}`
/// that vLLM and SGLang send. Without a message string, the error value (or
/// the `"error"` tag) stands for it, so an error is never lost for want of
/// one.
pub(crate) fn error_message(json: &[u8]) -> Option<&[u8]> {
    match scan::find(json, &ERROR) {
        Some(V::Object(e)) => match scan::find(e, &MESSAGE) {
            Some(V::Str(m)) => Some(m),
            _ => Some(e),
        },
        Some(V::Str(m)) => Some(m),
        _ => match scan::find(json, &OBJECT)? {
            V::Str(tag) if tag == b"error" => match scan::find(json, &MESSAGE) {
                Some(V::Str(m)) => Some(m),
                _ => Some(tag),
            },
            _ => None,
        },
    }
}

/// Control characters and runs of white space folded to single spaces,
/// trimmed, cut to at most `max` characters (an ellipsis marks a cut).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.chars().count() > max {
        out = out.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
    }
    out
}

/// `text` fit for a terminal: every control character (C0, DEL and C1:
/// ESC, BEL, CR, backspace, CSI …) removed except line feeds and tabs, all
/// other characters kept. For whole documents built from server-supplied
/// strings (a report, probe's output); a single field takes `one_line`.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .filter(|&c| !c.is_control() || c == '\n' || c == '\t')
        .collect()
}

/// An error as a person should read it: the `message` of a JSON error
/// object when there is one, else the raw text, escapes resolved, one line.
pub(crate) fn readable(raw: &[u8], max: usize) -> String {
    one_line(&unescape(error_message(raw).unwrap_or(raw)), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_found_in_every_error_shape() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model","code":404}}"#),
            Some(&b"bad model"[..])
        );
        assert_eq!(
            error_message(br#"{"error":"overloaded"}"#),
            Some(&b"overloaded"[..])
        );
        assert_eq!(
            error_message(br#"{"object":"error","message":"too long","code":400}"#),
            Some(&b"too long"[..])
        );
        assert_eq!(error_message(br#"{"choices":[]}"#), None);
    }

    #[test]
    fn printable_drops_control_characters_only() {
        assert_eq!(
            printable("a\x1b[31mred\x1b[0m\x07\r\n\tb\u{9b}2J\u{7f} é—✓"),
            "a[31mred[0m\n\tb2J é—✓"
        );
        assert_eq!(one_line("m\x1b[31m\nx", 80), "m [31m x");
    }

    #[test]
    fn one_line_folds_and_cuts() {
        assert_eq!(one_line("  a\n\tb \r\n c  ", 80), "a b c");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(
            readable(br#"{"error":{"message":"line\nbreak"}}"#, 200),
            "line break"
        );
    }
}
