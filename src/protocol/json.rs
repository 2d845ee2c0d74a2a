//! JSON string bytes as the scanner hands them over (raw, still escaped)
//! turned into text for people and tokenizers. Off the hot path: only the
//! parent, the tokenizer lane and reports call it.

/// The text of raw JSON string bytes (escapes resolved); invalid escapes are
/// kept as they are rather than dropping the text.
pub(crate) fn unescape(raw: &[u8]) -> String {
    if !raw.contains(&b'\\') {
        return String::from_utf8_lossy(raw).into_owned();
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted)
        .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescapes_json_strings() {
        assert_eq!(unescape(b"plain"), "plain");
        assert_eq!(unescape(br#"a\"b\nc\u00e9"#), "a\"b\nc\u{e9}");
        assert_eq!(unescape(br#"bad\q"#), r"bad\q");
    }
}
