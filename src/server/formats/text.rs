//! The text a response is made of and the counting a request is judged by:
//! the mock's fixed vocabulary, appended in bulk, and whitespace word counts
//! standing in for a tokenizer. Output token `k` of every response is the
//! same word, so a client can predict every byte it will receive; a run of
//! tokens is copied a whole vocabulary cycle at a time instead of word by
//! word, which matters for SGLang streams that resend the whole text in
//! every event.

/// The output tokens, each a short word with a leading space that needs no
/// JSON escaping. Token `k` of every response is `VOCAB[k % VOCAB.len()]`.
pub const VOCAB: [&str; 16] = [
    " the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", " while",
    " tokens", " stream", " at", " steady", " pace", " now",
];

/// `VOCAB` joined: one whole cycle of output text.
pub(crate) const CYCLE: &str =
    " the quick brown fox jumps over a lazy dog while tokens stream at steady pace now";

/// Output token `k` of any response.
#[inline]
pub fn token(k: u32) -> &'static str {
    VOCAB[k as usize % VOCAB.len()]
}

/// `CUMULATIVE[i]`: bytes of the first `i` words of a cycle.
const CUMULATIVE: [usize; VOCAB.len() + 1] = {
    let mut table = [0; VOCAB.len() + 1];
    let mut i = 0;
    while i < VOCAB.len() {
        table[i + 1] = table[i] + VOCAB[i].len();
        i += 1;
    }
    table
};

/// Bytes of output tokens `0..end`.
#[inline]
fn len_to(end: u32) -> usize {
    let cycle = VOCAB.len() as u32;
    (end / cycle) as usize * CYCLE.len() + CUMULATIVE[(end % cycle) as usize]
}

/// How many bytes `push_tokens(start, end)` appends.
#[inline]
pub fn tokens_len(start: u32, end: u32) -> usize {
    len_to(end) - len_to(start)
}

/// Appends output tokens `start..end`.
pub fn push_tokens(out: &mut Vec<u8>, start: u32, end: u32) {
    let cycle = VOCAB.len() as u32;
    let mut k = start;
    while k < end && !k.is_multiple_of(cycle) {
        out.extend_from_slice(token(k).as_bytes());
        k += 1;
    }
    while end - k >= cycle {
        out.extend_from_slice(CYCLE.as_bytes());
        k += cycle;
    }
    while k < end {
        out.extend_from_slice(token(k).as_bytes());
        k += 1;
    }
}

/// Whitespace-separated words in `s` (Unicode whitespace, as
/// `str::split_whitespace`).
pub fn count_words(s: &str) -> u64 {
    if s.is_ascii() {
        // The common case, without Unicode decoding.
        let mut n = 0;
        let mut in_word = false;
        for &b in s.as_bytes() {
            let space = b.is_ascii_whitespace() || b == 0x0b;
            n += u64::from(!space && !in_word);
            in_word = !space;
        }
        n
    } else {
        s.split_whitespace().count() as u64
    }
}

/// Appends `s` as a JSON string literal, quotes included.
pub fn push_json_str(out: &mut Vec<u8>, s: &str) {
    let plain = s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
    if plain {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_needs_no_escaping_and_cycle_matches() {
        for w in VOCAB {
            assert!(w.starts_with(' ') && w.len() > 1);
            assert!(w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' '));
        }
        assert_eq!(CYCLE, VOCAB.concat());
    }

    #[test]
    fn bulk_tokens_match_word_by_word() {
        for (start, end) in [
            (0, 0),
            (0, 1),
            (0, 16),
            (0, 17),
            (3, 40),
            (15, 16),
            (16, 80),
            (7, 7),
        ] {
            let mut out = Vec::new();
            push_tokens(&mut out, start, end);
            let expected: String = (start..end).map(token).collect();
            assert_eq!(out, expected.as_bytes(), "{start}..{end}");
            assert_eq!(tokens_len(start, end), out.len(), "{start}..{end}");
        }
    }

    #[test]
    fn word_counts_match_split_whitespace() {
        for s in [
            "",
            " ",
            "a",
            " a ",
            "a  b\tc\nd\re\x0bf\x0cg",
            "ünï cödé  x",
            "\u{2003}a\u{2003}",
        ] {
            assert_eq!(count_words(s), s.split_whitespace().count() as u64, "{s:?}");
        }
    }

    #[test]
    fn json_strings_escape_only_when_needed() {
        let mut out = Vec::new();
        push_json_str(&mut out, "plain/model-1");
        push_json_str(&mut out, "we\"ird\\\n");
        assert_eq!(out, br#""plain/model-1""we\"ird\\\n""#);
    }
}
