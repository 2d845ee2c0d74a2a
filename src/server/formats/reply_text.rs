//! A reply given as text (`serve --echo`, `--answers`) instead of the fixed
//! vocabulary: the text is JSON-escaped once, into a buffer the connection
//! keeps from request to request, and cut into chunks, each one "token" of
//! the response. A chunk is a word and the whitespace after it (leading
//! whitespace joins the first word), so the chunks concatenated are the
//! text byte for byte and their number is the text's word count. The cuts
//! are offsets into the escaped text: an event or a body copies a slice of
//! it and never escapes again, however often SGLang's cumulative events
//! resend it.

use super::text::{push_tokens, tokens_len};

/// A text reply, escaped for a JSON string, and where its chunks begin.
#[derive(Debug, Default)]
pub struct ReplyText {
    json: Vec<u8>,
    /// `cuts[k]` is where chunk `k` begins in `json`; one more entry, the
    /// end, closes the last chunk. Empty for an empty text.
    cuts: Vec<u32>,
}

/// Capacity a buffer may keep after a reply that needed more (one huge echo
/// should not pin its memory to the connection for good).
const KEEP: usize = 1 << 20;

impl ReplyText {
    /// Replaces the text, reusing the buffers.
    pub fn set(&mut self, text: &str) {
        if self.json.capacity() > KEEP {
            self.json = Vec::new();
        }
        if self.cuts.capacity() > KEEP / 4 {
            self.cuts = Vec::new();
        }
        self.json.clear();
        self.cuts.clear();
        let mut seen_word = false;
        let mut after_space = false;
        for c in text.chars() {
            let space = c.is_whitespace();
            if !space && (!seen_word || after_space) {
                // A word starts: it opens a chunk, except the first word,
                // whose chunk opened with the text (and any leading space).
                if seen_word {
                    self.cuts.push(self.json.len() as u32);
                }
                seen_word = true;
            }
            if self.cuts.is_empty() {
                self.cuts.push(0);
            }
            after_space = space;
            push_escaped(&mut self.json, c);
        }
        if !self.cuts.is_empty() {
            self.cuts.push(self.json.len() as u32);
        }
    }

    /// How many chunks ("tokens") the text is.
    pub fn chunks(&self) -> u32 {
        self.cuts.len().saturating_sub(1) as u32
    }

    /// Chunks `start..end`, escaped.
    #[inline]
    pub fn range(&self, start: u32, end: u32) -> &[u8] {
        if start >= end {
            return &[];
        }
        &self.json[self.cuts[start as usize] as usize..self.cuts[end as usize] as usize]
    }

    /// Chunk `k`, escaped.
    #[inline]
    pub fn chunk(&self, k: u32) -> &[u8] {
        self.range(k, k + 1)
    }
}

/// Appends `c` as it is written inside a JSON string. Everything else than
/// the quote, the backslash and control characters goes as it is, UTF-8
/// included.
fn push_escaped(out: &mut Vec<u8>, c: char) {
    match c {
        '"' => out.extend_from_slice(b"\\\""),
        '\\' => out.extend_from_slice(b"\\\\"),
        '\n' => out.extend_from_slice(b"\\n"),
        '\r' => out.extend_from_slice(b"\\r"),
        '\t' => out.extend_from_slice(b"\\t"),
        c if (c as u32) < 0x20 => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let b = c as u8;
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        }
        c => {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
}

/// What a response's output tokens say: the fixed vocabulary (token `k` is
/// `text::token(k)`), or the chunks of a text reply.
#[derive(Clone, Copy, Debug)]
pub enum Output<'a> {
    Vocab,
    Text(&'a ReplyText),
}

impl Output<'_> {
    /// Appends output tokens `start..end`, JSON-escaped.
    #[inline]
    pub fn push(self, out: &mut Vec<u8>, start: u32, end: u32) {
        match self {
            Output::Vocab => push_tokens(out, start, end),
            Output::Text(t) => out.extend_from_slice(t.range(start, end)),
        }
    }

    /// How many bytes `push(start, end)` appends.
    #[inline]
    pub fn len(self, start: u32, end: u32) -> usize {
        match self {
            Output::Vocab => tokens_len(start, end),
            Output::Text(t) => t.range(start, end).len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks of `text`, unescaped.
    fn chunks(text: &str) -> Vec<String> {
        let mut t = ReplyText::default();
        t.set(text);
        (0..t.chunks())
            .map(|k| {
                let quoted = [b"\"", t.chunk(k), b"\""].concat();
                serde_json::from_slice::<String>(&quoted).expect("a valid JSON string")
            })
            .collect()
    }

    #[test]
    fn chunks_are_words_with_their_trailing_space() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            (" ", &[" "]),
            ("\n\n", &["\n\n"]),
            ("a", &["a"]),
            ("hello world", &["hello ", "world"]),
            ("  lead and trail  ", &["  lead ", "and ", "trail  "]),
            ("a\tb\nc\r\nd", &["a\t", "b\n", "c\r\n", "d"]),
            (
                "café\u{a0}au\u{2003}lait",
                &["café\u{a0}", "au\u{2003}", "lait"],
            ),
            ("say \"hi\" \\ now", &["say ", "\"hi\" ", "\\ ", "now"]),
            ("bell\u{7}\u{1f} x", &["bell\u{7}\u{1f} ", "x"]),
            ("日本語 テキスト 🦀", &["日本語 ", "テキスト ", "🦀"]),
        ];
        for (text, want) in cases {
            let got = chunks(text);
            assert_eq!(got, *want, "{text:?}");
            assert_eq!(got.concat(), *text, "every byte kept");
        }
    }

    #[test]
    fn chunk_count_is_the_word_count() {
        for text in ["", "one", " two words ", "ünï cödé  x\n", "a\u{2003}b"] {
            let mut t = ReplyText::default();
            t.set(text);
            assert_eq!(
                t.chunks() as usize,
                text.split_whitespace().count(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn escaping_matches_serde_json() {
        let text = "q\"b\\s/ctl\u{0}\u{8}\u{c}\u{1b}\u{7f} \u{2028}é\r\n\t";
        let mut t = ReplyText::default();
        t.set(text);
        let whole = [b"\"", t.range(0, t.chunks()), b"\""].concat();
        assert_eq!(serde_json::from_slice::<String>(&whole).unwrap(), text);
        assert_eq!(
            Output::Text(&t).len(0, t.chunks()),
            t.range(0, t.chunks()).len()
        );
    }

    #[test]
    fn buffers_are_reused_and_a_huge_one_let_go() {
        let mut t = ReplyText::default();
        t.set(&"word ".repeat(400_000));
        assert_eq!(t.chunks(), 400_000);
        t.set("small again");
        assert_eq!(t.chunks(), 2);
        assert!(t.json.capacity() <= KEEP);
        let cap = t.json.capacity();
        t.set("other words");
        assert_eq!(t.json.capacity(), cap);
        assert_eq!(t.range(1, 2), b"words");
        assert_eq!(t.range(2, 2), b"");
    }

    #[test]
    fn vocab_output_is_the_vocabulary() {
        let mut out = Vec::new();
        Output::Vocab.push(&mut out, 2, 5);
        assert_eq!(out, b" brown fox jumps");
        assert_eq!(Output::Vocab.len(2, 5), out.len());
    }
}
