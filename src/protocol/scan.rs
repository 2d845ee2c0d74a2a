//! In-place JSON field lookup for response parsing on the hot path. It finds
//! `"key":` by substring search and reads the value after it, without
//! validating the document: fast and allocation-free, at the price of
//! trusting that a key spelled with quotes is a key. Escaped quotes inside
//! string values are skipped correctly, so text that mentions a key name
//! cannot be mistaken for it. Keys are `Key` statics whose substring
//! searchers are built once, not per event.
//!
//! Every function here costs time linear in its input, whatever the bytes:
//! a value is read only for the first occurrence of a key, never once per
//! occurrence, because a server can nest a key inside itself
//! (`"usage":{"usage":{…`) and reading each would scan the rest of the
//! event again for every one.

use std::sync::LazyLock;

use memchr::memmem::Finder;

/// A JSON key, quotes included, with its searcher built on first use.
pub(crate) type Key = LazyLock<Finder<'static>>;

/// Declares a `Key` static: `key!(CONTENT = "content");`.
#[macro_export]
macro_rules! json_key {
    ($name:ident = $key:literal) => {
        static $name: $crate::protocol::scan::Key = $crate::protocol::scan::Key::new(|| {
            memchr::memmem::Finder::new(concat!("\"", $key, "\"").as_bytes())
        });
    };
}

/// A JSON value as far as the scanner reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// The raw bytes between the quotes (escapes left as they are).
    Str(&'a [u8]),
    /// The raw bytes of a number.
    Num(&'a [u8]),
    /// The bytes from `{` to its matching `}` inclusive.
    Object(&'a [u8]),
    /// The bytes from `[` to its matching `]` inclusive.
    Array(&'a [u8]),
    Null,
    Bool(bool),
}

/// The value of the first occurrence of `key` (a `Key`, or any searcher for
/// a quoted name) in `json` that is followed by a colon, or `None`.
pub(crate) fn find<'a>(json: &'a [u8], key: &Finder<'_>) -> Option<Value<'a>> {
    let mut from = 0;
    let finder = key;
    let key_len = finder.needle().len();
    while let Some(pos) = finder.find(&json[from..]) {
        let start = from + pos;
        let after = start + key_len;
        from = after;
        // `\"key\"` is text inside a string, not a key.
        if start > 0 && json[start - 1] == b'\\' {
            continue;
        }
        let mut i = skip_ws(json, after);
        if json.get(i) != Some(&b':') {
            continue;
        }
        i = skip_ws(json, i + 1);
        return value_at(json, i);
    }
    None
}

/// Calls `f(k, value)` once for each name `names[k]` (without quotes) that
/// is a key in `json` with a value that is a string, an object or an array:
/// with the value of its first such occurrence, in document order, in one
/// pass (a name listed twice is answered at its first place only). Keys
/// holding `null`, a number or a boolean are passed over without reading
/// their names: the walk visits colons, not every byte or quote, which keeps
/// the usual tail of an event after its text (`"logprobs":null,
/// "finish_reason":null}]}`) nearly free.
///
/// A key is the quoted string just before a colon. That it is a key and not
/// text inside a string value is checked only for a name asked for, by
/// walking the strings from the start (a walk that only moves forward), so
/// each byte is looked at a bounded number of times; each name's value is
/// read at most once, so a name repeated or nested in its own value
/// (`"usage":{"usage":{…`) costs nothing more. `json` must start outside a
/// string; `N` is at most 32.
pub(crate) fn find_each<'a, const N: usize>(
    json: &'a [u8],
    names: &[&[u8]; N],
    mut f: impl FnMut(usize, Option<Value<'a>>),
) {
    const { assert!(N <= 32) };
    let mut walk = Walk {
        unread: ((1u64 << N) - 1) as u32,
        walked: 0,
    };
    for colon in memchr::memchr_iter(b':', json) {
        let v = skip_ws(json, colon + 1);
        if matches!(json.get(v), Some(b'"' | b'{' | b'['))
            && walk.key(json, colon, v, names, &mut f)
        {
            break;
        }
    }
}

/// The state of a `find_each` walk.
struct Walk {
    /// Bit `k`: `names[k]` has not been answered yet.
    unread: u32,
    /// How far the walk of strings has come (outside any string).
    walked: usize,
}

impl Walk {
    /// The key (if it is one) whose colon is at `colon` and whose value
    /// starts at `v`: answers its name if asked for and not yet answered.
    /// Returns whether every name is answered. Kept out of the loop, which
    /// nearly always skips `null` values without coming here.
    #[inline(never)]
    fn key<'a, const N: usize>(
        &mut self,
        json: &'a [u8],
        colon: usize,
        v: usize,
        names: &[&[u8]; N],
        f: &mut impl FnMut(usize, Option<Value<'a>>),
    ) -> bool {
        let Some((open, close)) = key_before(json, colon) else {
            return false;
        };
        let name = &json[open + 1..close];
        let Some(k) = names.iter().position(|&n| n == name) else {
            return false;
        };
        if self.unread & (1 << k) == 0 || !opens_string(json, &mut self.walked, open) {
            return false;
        }
        f(k, value_at(json, v));
        self.unread &= !(1 << k);
        self.unread == 0
    }
}

/// The quotes around the key whose colon is at `colon`: `"key"` right
/// before it (white space allowed). Finding the opening quote looks back
/// only to the quote before the closing one, so the colons of a walk look
/// at disjoint stretches.
fn key_before(json: &[u8], colon: usize) -> Option<(usize, usize)> {
    let mut end = colon;
    while end > 0 && matches!(json[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    let close = end.checked_sub(1).filter(|&c| json[c] == b'"')?;
    Some((memchr::memrchr(b'"', &json[..close])?, close))
}

/// Whether the quote at `open` starts a string: walks from string to string,
/// from `*walked` (outside any string) to `open`, and leaves `*walked` at the
/// first quote it has not walked past.
fn opens_string(json: &[u8], walked: &mut usize, open: usize) -> bool {
    while *walked <= open {
        let Some(quote) = memchr::memchr(b'"', &json[*walked..=open]) else {
            return false;
        };
        let quote = *walked + quote;
        if quote == open {
            *walked = open;
            return true;
        }
        *walked = match string_end(json, quote + 1) {
            Some(end) => end + 1,
            None => json.len(),
        };
    }
    false
}

/// The part of `json` after `inner`, a slice of it (a value `find` returned).
pub(crate) fn after<'a>(json: &'a [u8], inner: &[u8]) -> &'a [u8] {
    let end = inner.as_ptr() as usize - json.as_ptr() as usize + inner.len();
    &json[end.min(json.len())..]
}

/// Parses the value of `key` as an unsigned integer.
pub(crate) fn find_u32(json: &[u8], key: &Finder<'_>) -> Option<u32> {
    match find(json, key)? {
        Value::Num(n) => parse_u32(n),
        _ => None,
    }
}

fn parse_u32(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 10 {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (d - b'0') as u64;
    }
    u32::try_from(v).ok()
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = json.get(i) {
        i += 1;
    }
    i
}

fn value_at(json: &[u8], i: usize) -> Option<Value<'_>> {
    match *json.get(i)? {
        b'"' => {
            let end = string_end(json, i + 1)?;
            Some(Value::Str(&json[i + 1..end]))
        }
        b'{' | b'[' => {
            let end = container_end(json, i)?;
            let raw = &json[i..=end];
            Some(if json[i] == b'{' {
                Value::Object(raw)
            } else {
                Value::Array(raw)
            })
        }
        b'n' if json[i..].starts_with(b"null") => Some(Value::Null),
        b't' if json[i..].starts_with(b"true") => Some(Value::Bool(true)),
        b'f' if json[i..].starts_with(b"false") => Some(Value::Bool(false)),
        b'-' | b'0'..=b'9' => {
            let len = json[i..]
                .iter()
                .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                .unwrap_or(json.len() - i);
            Some(Value::Num(&json[i..i + len]))
        }
        _ => None,
    }
}

/// Index of the closing quote of a string whose contents start at `i`.
#[inline]
fn string_end(json: &[u8], mut i: usize) -> Option<usize> {
    // A token's text is a few bytes: looked at one by one before paying
    // for a vector search's set-up.
    for (k, &b) in json.get(i..)?.iter().take(SHORT_STRING).enumerate() {
        match b {
            b'"' => return Some(i + k),
            b'\\' => return string_end_long(json, i + k),
            _ => {}
        }
    }
    i = (i + SHORT_STRING).min(json.len());
    string_end_long(json, i)
}

/// Strings up to this many bytes are read without `memchr`.
const SHORT_STRING: usize = 16;

/// `string_end` from `i`, by vector search.
fn string_end_long(json: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let rel = memchr::memchr2(b'"', b'\\', &json[i..])?;
        i += rel;
        if json[i] == b'\\' {
            i += 2;
            if i > json.len() {
                return None;
            }
        } else {
            return Some(i);
        }
    }
}

/// How a whole response body stands as one JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Document {
    /// One object or array, closed, with nothing but white space after it.
    Whole,
    /// An object or array still open where the bytes end: a body cut short.
    Cut,
    /// An object or array that is not JSON: a bracket closing the other
    /// kind, a byte JSON has no use for outside strings, nesting deeper than
    /// `MAX_DEPTH`, or bytes after its end.
    Invalid,
    /// Does not start an object or array: empty, a page, a bare value.
    Other,
}

/// Deepest nesting `document` follows (one bit per level); an API's
/// response nests a handful of levels.
const MAX_DEPTH: u32 = u128::BITS;

/// How `document` reads a byte outside strings, by value.
static OUTSIDE: [u8; 256] = {
    let mut t = [BAD; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = match b as u8 {
            b' '
            | b'\t'
            | b'\n'
            | b'\r'
            | b':'
            | b','
            | b'-'
            | b'+'
            | b'.'
            | b'0'..=b'9'
            | b'E'
            | b'a'..=b'z' => TOKEN,
            b'"' => QUOTE,
            b'{' | b'[' => OPEN,
            b'}' | b']' => CLOSE,
            _ => BAD,
        };
        b += 1;
    }
    t
};
const TOKEN: u8 = 0;
const QUOTE: u8 = 1;
const OPEN: u8 = 2;
const CLOSE: u8 = 3;
const BAD: u8 = 4;

/// Reads `json` as one JSON object or array: its strings must end, its
/// brackets match and nothing but white space follow it. Outside strings
/// only the bytes of JSON's tokens are allowed, not their order (a literal's
/// spelling, a missing comma), which is as far as a body cut short or with a
/// page appended can be told from a whole one without a full parse. Linear
/// time, no allocation: strings are skipped a word or a vector at a time,
/// the bytes between them are classed by a table.
pub(crate) fn document(json: &[u8]) -> Document {
    let start = skip_ws(json, 0);
    if !matches!(json.get(start), Some(b'{' | b'[')) {
        return Document::Other;
    }
    // Bit 0 is the innermost open container: set for an object.
    let mut objects = 0u128;
    let mut depth = 0u32;
    let mut i = start;
    while i < json.len() {
        let b = json[i];
        match OUTSIDE[b as usize] {
            TOKEN => {}
            QUOTE => match string_close(json, i + 1) {
                Some(end) => i = end,
                None => return Document::Cut,
            },
            OPEN => {
                if depth == MAX_DEPTH {
                    return Document::Invalid;
                }
                objects = objects << 1 | u128::from(b == b'{');
                depth += 1;
            }
            CLOSE => {
                if (objects & 1 == 1) != (b == b'}') {
                    return Document::Invalid;
                }
                objects >>= 1;
                depth -= 1;
                if depth == 0 {
                    return if skip_ws(json, i + 1) == json.len() {
                        Document::Whole
                    } else {
                        Document::Invalid
                    };
                }
            }
            _ => return Document::Invalid,
        }
        i += 1;
    }
    Document::Cut
}

/// `string_end` for `document`: the first two words are searched 8 bytes
/// at a time, without the set-up of a vector search (most of a body's
/// strings are keys and short values), a longer string by vector search.
#[inline]
fn string_close(json: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `w` equal to `c`; bytes above the first
    // may be flagged wrongly (a borrow), never the first itself.
    let eq = |w: u64, c: u8| {
        let x = w ^ (ONES * u64::from(c));
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    for _ in 0..2 {
        let Some(word) = json.get(i..i + 8) else {
            break;
        };
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let hit = eq(w, b'"') | eq(w, b'\\');
        if hit != 0 {
            let k = i + (hit.trailing_zeros() / 8) as usize;
            return if json[k] == b'"' {
                Some(k)
            } else {
                string_end_long(json, k)
            };
        }
        i += 8;
    }
    string_end_long(json, i)
}

/// Index of the bracket closing the object or array opened at `i`.
fn container_end(json: &[u8], i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j < json.len() {
        match json[j] {
            b'"' => j = string_end(json, j + 1)?,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    json_key!(A = "a");
    json_key!(N = "n");
    json_key!(O = "o");
    json_key!(K = "k");
    json_key!(Z = "z");
    json_key!(T = "t");
    json_key!(MISSING = "missing");
    json_key!(CONTENT = "content");

    #[test]
    fn finds_values_of_each_kind() {
        let j = br#"{"a": "x\"y", "n": 42, "o": {"k": [1, "}"]}, "z": null, "t": true}"#;
        assert_eq!(find(j, &A), Some(Value::Str(br#"x\"y"#)));
        assert_eq!(find(j, &N), Some(Value::Num(b"42")));
        assert_eq!(find(j, &O), Some(Value::Object(br#"{"k": [1, "}"]}"#)));
        assert_eq!(find(j, &K), Some(Value::Array(br#"[1, "}"]"#)));
        assert_eq!(find(j, &Z), Some(Value::Null));
        assert_eq!(find(j, &T), Some(Value::Bool(true)));
        assert_eq!(find(j, &MISSING), None);
        assert_eq!(find_u32(j, &N), Some(42));
    }

    #[test]
    fn key_mentioned_inside_a_string_is_not_a_key() {
        let j = br#"{"text": "say \"content\": no", "content": "yes"}"#;
        assert_eq!(find(j, &CONTENT), Some(Value::Str(b"yes")));
        let j = br#"{"text": "\"content\" alone", "content": "yes"}"#;
        assert_eq!(find(j, &CONTENT), Some(Value::Str(b"yes")));
    }

    /// `find_each`'s answers as an array.
    fn each<'a, const N: usize>(json: &'a [u8], names: [&[u8]; N]) -> [Option<Value<'a>>; N] {
        let mut values = [None; N];
        find_each(json, &names, |k, v| values[k] = v);
        values
    }

    /// `find_each` for one name the naive way: `find`'s search, going on
    /// past keys whose value is not a string, an object or an array.
    fn first_carrying<'a>(json: &'a [u8], key: &Finder<'_>) -> Option<Value<'a>> {
        let mut from = 0;
        while let Some(pos) = key.find(&json[from..]) {
            let start = from + pos;
            from = start + key.needle().len();
            if start > 0 && json[start - 1] == b'\\' {
                continue;
            }
            let colon = skip_ws(json, from);
            if json.get(colon) != Some(&b':') {
                continue;
            }
            let v = skip_ws(json, colon + 1);
            if matches!(json.get(v), Some(b'"' | b'{' | b'[')) {
                return value_at(json, v);
            }
        }
        None
    }

    #[test]
    fn find_each_reads_the_first_carrying_value_of_each_name() {
        let j = br#"{"a": 0, "b": null, "o": {"a": "x:\"y\"", "c": [1, {"d": null}]}, "e": true, "a": 3}"#;
        let [a, b, c, d, e, o, missing] = each(j, [b"a", b"b", b"c", b"d", b"e", b"o", b"missing"]);
        // The first `a` holds a number: passed over for the string.
        assert_eq!(a, Some(Value::Str(br#"x:\"y\""#)));
        assert_eq!(c, Some(Value::Array(br#"[1, {"d": null}]"#)));
        assert_eq!((b, d, e, missing), (None, None, None, None));
        assert!(matches!(o, Some(Value::Object(o)) if o.len() == 39));
        // Text that looks like keys inside a string value is not a key.
        let [k, k2] = each(br#"{"t": "say \"k\": \"v\"", "k2": "x"}"#, [b"k", b"k2"]);
        assert_eq!((k, k2), (None, Some(Value::Str(b"x"))));
        // Nor is a string value that starts with a colon and a bracket,
        // which a walk from colon to colon could take for the value of a
        // key named by the bytes between the quotes before it.
        let [phantom, b] = each(br#"["a,", ":[1]", {"b": "x"}]"#, [b", ", b"b"]);
        assert_eq!((phantom, b), (None, Some(Value::Str(b"x"))));
        let [a, phantom] = each(br#"{"a":":{\"b\":1}"}"#, [b"a", b":"]);
        assert_eq!((a, phantom), (Some(Value::Str(br#":{\"b\":1}"#)), None));
        // A truncated value is read once, as `find` reads it.
        let [a] = each(br#"{"a": "unterminated"#, [b"a"]);
        assert_eq!(a, None);
        let [a] = each(br#"{"a": {"a": [1]}, "a": [2]"#, [b"a"]);
        assert_eq!(a, Some(Value::Object(br#"{"a": [1]}"#)));
        let [a] = each(br#"{"a": {"a": "x""#, [b"a"]);
        assert_eq!(a, None);
        // A name asked twice is answered once, at its first place.
        let [a, again] = each(br#"{"a": "1", "a": "2"}"#, [b"a", b"a"]);
        assert_eq!((a, again), (Some(Value::Str(b"1")), None));
    }

    /// A name nested in its own value, 1 MiB deep or repeated 100,000
    /// times, costs one read: with a read per occurrence it took about a
    /// minute. The bound is a sanity check far above the linear cost (a few
    /// milliseconds in release) and far below the quadratic one.
    #[test]
    fn nested_and_repeated_names_cost_linear_time() {
        let mut nested = b"{".to_vec();
        let mut repeated = b"{".to_vec();
        while nested.len() < 1 << 20 {
            nested.extend_from_slice(br#""usage":{"#);
            repeated.extend_from_slice(br#""usage":{"usage":0},"#);
        }
        let closed: Vec<u8> = [&nested[..], &vec![b'}'; nested.len() / 9 + 1][..]].concat();
        for (json, read) in [(&nested, false), (&closed, true), (&repeated, true)] {
            let fastest = (0..3)
                .map(|_| {
                    let start = std::time::Instant::now();
                    let [usage, other] = each(json, [b"usage", b"other"]);
                    assert_eq!(other, None);
                    assert_eq!(usage.is_some(), read);
                    start.elapsed()
                })
                .min()
                .unwrap();
            let bound = if cfg!(debug_assertions) { 2000 } else { 50 };
            assert!(
                fastest.as_millis() < bound,
                "{fastest:?} for {} bytes",
                json.len()
            );
        }
    }

    /// Strings shorter and longer than `SHORT_STRING`, with an escaped
    /// quote or backslash anywhere, end where they end.
    #[test]
    fn strings_around_the_short_length() {
        for n in 0..3 * SHORT_STRING {
            for at in [None, Some(0), Some(n / 2), Some(n.saturating_sub(1))] {
                for esc in [&br#"\""#[..], br"\\"] {
                    let mut text = vec![b'x'; n];
                    if let Some(at) = at.filter(|_| n > 0) {
                        text.splice(at..=at, esc.iter().copied());
                    }
                    let mut j = br#"{"a":""#.to_vec();
                    j.extend_from_slice(&text);
                    j.extend_from_slice(br#"","b":1}"#);
                    assert_eq!(find(&j, &A), Some(Value::Str(&text)), "{n} {at:?}");
                    assert_eq!(find(&j[..j.len() - 8], &A), None, "{n} {at:?} cut");
                }
            }
        }
    }

    #[test]
    fn truncated_input_gives_none() {
        assert_eq!(find(br#"{"a": "unterminated"#, &A), None);
        assert_eq!(find(br#"{"a": {"b": 1"#, &A), None);
        assert_eq!(find(br#"{"a":"#, &A), None);
        assert_eq!(find_u32(br#"{"n": 99999999999}"#, &N), None);
    }

    #[test]
    fn document_tells_whole_from_cut_and_invalid() {
        use Document::*;
        let chat = br#"{"id":"x","choices":[{"message":{"content":"hi \"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}"#;
        assert_eq!(document(chat), Whole);
        assert_eq!(document(&[b" \n", &chat[..], b"\r\n "].concat()), Whole);
        assert_eq!(document(br#"[1, true, null, -2.5e+3, "]"]"#), Whole);
        for cut in 1..chat.len() {
            assert_eq!(document(&chat[..cut]), Cut, "{cut}");
        }
        assert_eq!(
            document(&[&chat[..], b" trailing junk <html>"].concat()),
            Invalid
        );
        assert_eq!(document(&[&chat[..], b"{}"].concat()), Invalid);
        assert_eq!(document(br#"{"a":[1}"#), Invalid);
        assert_eq!(document(br#"{"a":1]"#), Invalid);
        assert_eq!(document(b"{<html>}"), Invalid);
        assert_eq!(document(&[&b"["[..]; 128].concat()), Cut);
        assert_eq!(document(&[&b"["[..]; 129].concat()), Invalid);
        // A quote or an escape at every place in and past the words read
        // before the vector search.
        for n in 0..40 {
            let x = "x".repeat(n);
            for whole in [format!(r#"{{"{x}":1}}"#), format!(r#"{{"{x}\"\\":"\\"}}"#)] {
                assert_eq!(document(whole.as_bytes()), Whole, "{whole}");
            }
            for cut in [format!(r#"{{"{x}"#), format!(r#"{{"{x}\":1}}"#)] {
                assert_eq!(document(cut.as_bytes()), Cut, "{cut}");
            }
        }
        for other in [
            &b""[..],
            b"  ",
            b"<html></html>",
            b"\"text\"",
            b"42",
            b"null",
        ] {
            assert_eq!(document(other), Other);
        }
    }

    /// `find`, `find_u32` and `for_each_key` against serde_json on random
    /// documents: serde_json parses the text, and walking its tree in
    /// document order (a key before its value, entries in the order they
    /// are written) gives what the scanner must return for the first
    /// occurrence of each key at any depth.
    mod oracle {
        use super::*;
        use crate::rng::Rng;
        use serde_json::{Map, Value as J};

        json_key!(K_A = "a");
        json_key!(K_TEXT = "text");
        json_key!(K_CONTENT = "content");
        json_key!(K_USAGE = "usage");
        json_key!(K_N = "n");
        json_key!(K_TEXT_DELTA = "text_delta");

        /// Keys are plain words, some a prefix of another (`text`,
        /// `text_delta`). The scanner matches a key as spelled: a key
        /// written with escapes (`"te\u0078t"`) is `text` to serde_json but
        /// not to the scanner; serde_json never writes such escapes and
        /// servers do not for these names, so none is generated. Keys are
        /// unique within an object by construction (a `Map`): with
        /// duplicates serde_json keeps the last, the scanner finds the
        /// first.
        static KEYS: [(&str, &Key); 6] = [
            ("a", &K_A),
            ("text", &K_TEXT),
            ("content", &K_CONTENT),
            ("usage", &K_USAGE),
            ("n", &K_N),
            ("text_delta", &K_TEXT_DELTA),
        ];

        /// Keys no caller asks for that spell one that is asked for with
        /// escapes around it: a key's escaped quote must not start or end
        /// a key the scanner looks for.
        const ODD_KEYS: [&str; 4] = ["x\"text", "text\\", "\"content\"", "us\"age\""];

        /// What string values are made of: structure characters, escapes,
        /// and whole key spellings, so values imitate keys.
        const PIECES: [&str; 20] = [
            "\"",
            "\\",
            ":",
            "{",
            "}",
            "[",
            "]",
            ",",
            " ",
            "\n",
            "\u{1}",
            "\u{e9}",
            "x",
            "text",
            "\"text\":",
            "\"content\": \"",
            "\\\"",
            "null",
            "12",
            ": [1]",
        ];

        fn string(rng: &mut Rng) -> String {
            (0..rng.below(6))
                .map(|_| PIECES[rng.below(PIECES.len() as u64) as usize])
                .collect()
        }

        fn number(rng: &mut Rng) -> J {
            match rng.below(6) {
                0 => J::from(rng.below(1000)),
                // Around the edge of `u32`.
                1 => J::from(u64::from(u32::MAX) - 1 + rng.below(3)),
                2 => J::from(rng.next_u64()),
                3 => J::from(-(rng.below(1 << 40) as i64) - 1),
                4 => J::from((rng.next_f64() - 0.5) * 1e6),
                _ => J::from(rng.below(100) as f64),
            }
        }

        fn value(rng: &mut Rng, depth: u32) -> J {
            let kinds = if depth == 0 { 5 } else { 7 };
            match rng.below(kinds) {
                0 | 1 => J::String(string(rng)),
                2 => number(rng),
                3 => J::Bool(rng.below(2) == 1),
                4 => J::Null,
                5 => object(rng, depth - 1),
                _ => J::Array((0..rng.below(4)).map(|_| value(rng, depth - 1)).collect()),
            }
        }

        fn object(rng: &mut Rng, depth: u32) -> J {
            let mut m = Map::new();
            for _ in 0..rng.below(5) {
                let key = if rng.below(4) == 0 {
                    ODD_KEYS[rng.below(ODD_KEYS.len() as u64) as usize]
                } else {
                    KEYS[rng.below(KEYS.len() as u64) as usize].0
                };
                m.insert(key.to_string(), value(rng, depth));
            }
            J::Object(m)
        }

        /// The value of the first `key` in document order.
        fn first<'v>(v: &'v J, key: &str) -> Option<&'v J> {
            match v {
                J::Object(m) => m
                    .iter()
                    .find_map(|(k, x)| if k == key { Some(x) } else { first(x, key) }),
                J::Array(a) => a.iter().find_map(|x| first(x, key)),
                _ => None,
            }
        }

        /// What the scanner's raw value means, decoded by serde_json; the
        /// kind must agree with the bytes it returned.
        fn decode(v: Option<Value<'_>>) -> Option<J> {
            let parse = |raw: &[u8]| serde_json::from_slice::<J>(raw).expect("a whole value");
            let (j, kind_ok): (J, fn(&J) -> bool) = match v? {
                Value::Str(raw) => (parse(&[b"\"", raw, b"\""].concat()), J::is_string),
                Value::Num(raw) => (parse(raw), J::is_number),
                Value::Object(raw) => (parse(raw), J::is_object),
                Value::Array(raw) => (parse(raw), J::is_array),
                Value::Null => (J::Null, J::is_null),
                Value::Bool(b) => (J::Bool(b), J::is_boolean),
            };
            assert!(kind_ok(&j), "{j}");
            Some(j)
        }

        /// A document, compact and pretty (whitespace around every token),
        /// each text checked to parse back to what was generated.
        fn document(rng: &mut Rng) -> (J, [Vec<u8>; 2]) {
            let doc = object(rng, 3);
            let texts = [
                serde_json::to_vec(&doc).unwrap(),
                serde_json::to_vec_pretty(&doc).unwrap(),
            ];
            for t in &texts {
                assert_eq!(serde_json::from_slice::<J>(t).unwrap(), doc);
            }
            (doc, texts)
        }

        #[test]
        fn find_agrees_with_serde_json() {
            let mut rng = Rng::seeded(11);
            let (mut present, mut absent) = (0, 0);
            for _ in 0..4000 {
                let (doc, texts) = document(&mut rng);
                for text in &texts {
                    let shown = String::from_utf8_lossy(text);
                    for (name, key) in &KEYS {
                        let want = first(&doc, name);
                        assert_eq!(decode(find(text, key)), want.cloned(), "{name} in {shown}");
                        let want_u32 = want.and_then(J::as_u64).and_then(|n| u32::try_from(n).ok());
                        assert_eq!(find_u32(text, key), want_u32, "{name} in {shown}");
                        if want.is_some() {
                            present += 1;
                        } else {
                            absent += 1;
                        }
                    }
                }
            }
            // The generator reaches both answers often.
            assert!(present > 5_000 && absent > 5_000, "{present} {absent}");
        }

        /// Every generated document is whole, every proper prefix of it is
        /// cut and bytes after it make it invalid, as serde_json agrees.
        #[test]
        fn document_agrees_with_serde_json() {
            let mut rng = Rng::seeded(13);
            for _ in 0..2000 {
                let (_, texts) = document(&mut rng);
                for text in &texts {
                    let shown = String::from_utf8_lossy(text);
                    assert_eq!(super::document(text), Document::Whole, "{shown}");
                    let cut = 1 + rng.below(text.len() as u64 - 1) as usize;
                    let prefix = &text[..cut];
                    assert!(serde_json::from_slice::<J>(prefix).is_err());
                    assert_eq!(super::document(prefix), Document::Cut, "{cut} of {shown}");
                    let junk = [&text[..], b" x"].concat();
                    assert_eq!(super::document(&junk), Document::Invalid, "{shown}");
                }
            }
        }

        /// The value of the first `key` in document order that is a
        /// string, an object or an array.
        fn first_carrying_in<'v>(v: &'v J, key: &str) -> Option<&'v J> {
            let carries = |x: &J| matches!(x, J::String(_) | J::Object(_) | J::Array(_));
            match v {
                J::Object(m) => m.iter().find_map(|(k, x)| {
                    if k == key && carries(x) {
                        Some(x)
                    } else {
                        first_carrying_in(x, key)
                    }
                }),
                J::Array(a) => a.iter().find_map(|x| first_carrying_in(x, key)),
                _ => None,
            }
        }

        /// `find_each` on a whole document gives what serde_json says for
        /// every name at once, and on the tail after any string value (as
        /// the chat parser walks the tail after its text) what the naive
        /// search gives for each name alone.
        #[test]
        fn find_each_agrees_with_serde_json_and_a_naive_search() {
            let names = KEYS.map(|(name, _)| name.as_bytes());
            let mut rng = Rng::seeded(12);
            let (mut present, mut tails) = (0, 0);
            for _ in 0..4000 {
                let (doc, texts) = document(&mut rng);
                for text in &texts {
                    let shown = String::from_utf8_lossy(text);
                    let got = each(text, names);
                    for ((name, key), got) in KEYS.iter().zip(got) {
                        let want = first_carrying_in(&doc, name);
                        assert_eq!(decode(got), want.cloned(), "{name} in {shown}");
                        assert_eq!(got, first_carrying(text, key), "{name} in {shown}");
                        present += usize::from(want.is_some());
                    }
                    for (_, key) in &KEYS {
                        let Some(Value::Str(s)) = find(text, key) else {
                            continue;
                        };
                        let tail = &after(text, s)[1..];
                        let got = each(tail, names);
                        for ((name, key), got) in KEYS.iter().zip(got) {
                            let shown = String::from_utf8_lossy(tail);
                            assert_eq!(got, first_carrying(tail, key), "{name} in tail {shown}");
                        }
                        tails += 1;
                    }
                }
            }
            assert!(present > 5_000 && tails > 2_000, "{present} {tails}");
        }
    }
}
