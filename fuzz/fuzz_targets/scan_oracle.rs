//! The in-place JSON key scanner (`find`, `find_u32`, `find_each`) against
//! serde_json. On any bytes: no panic, every value lies within the input,
//! and the time stays linear (libFuzzer's `-timeout` with 1 MiB inputs
//! catches a quadratic walk). On valid JSON, for every name asked: `find`
//! gives the value of the first key of that name in document order, as
//! serde_json reads the document, and `find_u32` that value as a `u32`;
//! `find_each` gives the first such key whose value is a string, an object
//! or an array, and agrees with a naive search for it on the tail after any
//! string value too (where the chat parser walks).
//!
//! The first byte picks the mode: the rest of the input taken as it is (bit
//! 0 clear), or read as choices for a generator that always writes valid
//! JSON (bit 0 set), with odd key spellings, escapes, duplicate keys,
//! numbers at the edges of `u32` and free whitespace. The scanner matches a
//! key as spelled, so the oracle counts only keys written without escapes
//! (serde_json hands those over borrowed).

#![no_main]

use std::fmt;

use libfuzzer_sys::fuzz_target;
use llmload::protocol::fuzzing::{Value, after, find, find_each, find_u32};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// Names the protocol parsers look up, some a prefix of another.
const NAMES: [&str; 24] = [
    "content",
    "reasoning_content",
    "reasoning",
    "finish_reason",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "text",
    "text_delta",
    "meta_info",
    "type",
    "delta",
    "error",
    "message",
    "object",
    "input_tokens",
    "output_tokens",
    "stop_reason",
    "thinking",
    "tool_calls",
    "content_block",
    "partial_json",
    "a",
    "",
];

/// A JSON document in document order, duplicate keys kept.
#[derive(Debug, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Num(serde_json::Number),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<(Key, Node)>),
}

/// A key, and whether it was written without escapes (as the scanner
/// matches it).
#[derive(Debug, PartialEq)]
struct Key {
    text: String,
    plain: bool,
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Node, E> {
        Ok(Node::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Node, E> {
        Ok(Node::Num(n.into()))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Node, E> {
        Ok(Node::Num(n.into()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Node, E> {
        serde_json::Number::from_f64(n)
            .map(Node::Num)
            .ok_or_else(|| E::custom("not a finite number"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Node, E> {
        Ok(Node::Str(s.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(NodeSeed)? {
            items.push(item);
        }
        Ok(Node::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            entries.push((key, map.next_value_seed(NodeSeed)?));
        }
        Ok(Node::Obj(entries))
    }
}

struct NodeSeed;

impl<'de> DeserializeSeed<'de> for NodeSeed {
    type Value = Node;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(KeySeed)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    /// serde_json lends a string it did not have to unescape.
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key, E> {
        Ok(Key {
            text: s.to_string(),
            plain: true,
        })
    }
    fn visit_str<E>(self, s: &str) -> Result<Key, E> {
        Ok(Key {
            text: s.to_string(),
            plain: false,
        })
    }
}

fn parse(json: &[u8]) -> Option<Node> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let node = NodeSeed.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(node)
}

/// The value of the first plain key `name` in document order.
fn first<'n>(node: &'n Node, name: &str) -> Option<&'n Node> {
    match node {
        Node::Obj(entries) => entries.iter().find_map(|(k, v)| {
            if k.plain && k.text == name {
                Some(v)
            } else {
                first(v, name)
            }
        }),
        Node::Arr(items) => items.iter().find_map(|v| first(v, name)),
        _ => None,
    }
}

/// The value of the first plain key `name` in document order that is a
/// string, an array or an object.
fn first_carrying<'n>(node: &'n Node, name: &str) -> Option<&'n Node> {
    match node {
        Node::Obj(entries) => entries.iter().find_map(|(k, v)| {
            if k.plain && k.text == name && matches!(v, Node::Str(_) | Node::Arr(_) | Node::Obj(_))
            {
                Some(v)
            } else {
                first_carrying(v, name)
            }
        }),
        Node::Arr(items) => items.iter().find_map(|v| first_carrying(v, name)),
        _ => None,
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = json.get(i) {
        i += 1;
    }
    i
}

/// `find_each` for one name the naive way: `find`'s search for `"name"`
/// followed by a colon, going on past keys whose value does not open with a
/// quote or a bracket.
fn naive_each<'a>(json: &'a [u8], name: &[u8]) -> Option<Value<'a>> {
    let needle = [b"\"", name, b"\""].concat();
    let mut from = 0;
    while let Some(pos) = memchr::memmem::find(&json[from..], &needle) {
        let start = from + pos;
        from = start + needle.len();
        if start > 0 && json[start - 1] == b'\\' {
            continue;
        }
        let colon = skip_ws(json, from);
        if json.get(colon) != Some(&b':') {
            continue;
        }
        if matches!(json.get(skip_ws(json, colon + 1)), Some(b'"' | b'{' | b'[')) {
            return find(&json[start..], name);
        }
    }
    None
}

/// Plain key names in the document, first seen first. Names holding a
/// comma or a colon are left out: the scanner trusts that a quoted name
/// before a colon is a key, and the bytes between two strings (`", "`,
/// `":["`) read like one; no parser asks for such a name.
fn plain_keys<'n>(node: &'n Node, out: &mut Vec<&'n str>) {
    match node {
        Node::Obj(entries) => {
            for (k, v) in entries {
                let punctuated = k.text.contains([',', ':']);
                if k.plain && !punctuated && !out.contains(&k.text.as_str()) {
                    out.push(&k.text);
                }
                plain_keys(v, out);
            }
        }
        Node::Arr(items) => items.iter().for_each(|v| plain_keys(v, out)),
        _ => {}
    }
}

/// What the scanner's raw value means, read back through serde_json; its
/// kind must agree with the bytes.
fn decode(v: &Value<'_>) -> Node {
    let back = |raw: &[u8]| parse(raw).unwrap_or_else(|| panic!("not a value: {raw:?}"));
    let node = match *v {
        Value::Str(raw) => back(&[b"\"", raw, b"\""].concat()),
        Value::Num(raw) | Value::Object(raw) | Value::Array(raw) => back(raw),
        Value::Null => Node::Null,
        Value::Bool(b) => Node::Bool(b),
    };
    let kind_ok = matches!(
        (v, &node),
        (Value::Str(_), Node::Str(_))
            | (Value::Num(_), Node::Num(_))
            | (Value::Object(_), Node::Obj(_))
            | (Value::Array(_), Node::Arr(_))
            | (Value::Null, Node::Null)
            | (Value::Bool(_), Node::Bool(_))
    );
    assert!(kind_ok, "{v:?} read back as {node:?}");
    node
}

/// Whether `inner` is empty or lies within `outer`.
fn within(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr_range(), inner.as_ptr_range());
    inner.is_empty() || (o.start <= i.start && i.end <= o.end)
}

fn check_within(json: &[u8], v: &Option<Value<'_>>) {
    if let Some(Value::Str(s) | Value::Num(s) | Value::Object(s) | Value::Array(s)) = v {
        assert!(within(json, s), "value outside the input");
    }
}

/// Eight names: the first `k` of `NAMES` from `pick`, then the document's
/// own keys.
fn names<'a>(pick: u8, own: &[&'a str]) -> [&'a [u8]; 8] {
    let mut out = [&b""[..]; 8];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = match own.get(i) {
            Some(name) if i >= usize::from(pick % 4) => name.as_bytes(),
            _ => NAMES[(usize::from(pick) + i * 5) % NAMES.len()].as_bytes(),
        };
    }
    out
}

/// Expected `find_each` answer: `naive_each`'s for every name, except that
/// a name listed twice gets its value at its first place only.
fn expected_each<'a>(json: &'a [u8], names: &[&[u8]; 8]) -> [Option<Value<'a>>; 8] {
    let mut out = [None; 8];
    for (k, name) in names.iter().enumerate() {
        if !names[..k].contains(name) {
            out[k] = naive_each(json, name);
        }
    }
    out
}

/// The start of `json`, for a failure message.
fn shown(json: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&json[..json.len().min(2000)])
}

/// Runs the scanner over `json` for `names`, checks what holds for any
/// bytes, and, when serde_json reads `json` as `doc`, the oracle.
fn check(json: &[u8], names: &[&[u8]; 8], doc: Option<&Node>) {
    let each = find_each(json, *names);
    for (name, got_each) in names.iter().zip(&each) {
        let got = find(json, name);
        check_within(json, &got);
        check_within(json, got_each);
        let got_u32 = find_u32(json, name);
        let Some(doc) = doc else {
            continue;
        };
        let name_str = std::str::from_utf8(name).expect("names are text");
        let want = first(doc, name_str);
        assert_eq!(
            got.as_ref().map(decode).as_ref(),
            want,
            "find {name_str} in {}",
            shown(json)
        );
        let want_u32 = match want {
            Some(Node::Num(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        };
        assert_eq!(got_u32, want_u32, "find_u32 {name_str} in {}", shown(json));
    }
    let Some(doc) = doc else {
        return;
    };
    for (k, (name, got)) in names.iter().zip(&each).enumerate() {
        let name_str = std::str::from_utf8(name).expect("names are text");
        let want = first_carrying(doc, name_str).filter(|_| !names[..k].contains(name));
        assert_eq!(
            got.as_ref().map(decode).as_ref(),
            want,
            "find_each {name_str} in {}",
            shown(json)
        );
    }
    assert_eq!(
        each,
        expected_each(json, names),
        "find_each {names:?} in {}",
        shown(json)
    );
    // Tails after string values start outside a string, as the chat
    // parser's does.
    for name in names {
        if let Some(Value::Str(s)) = find(json, name) {
            let tail = &after(json, s)[1..];
            assert_eq!(
                find_each(tail, *names),
                expected_each(tail, names),
                "find_each {names:?} on the tail after {s:?} in {}",
                shown(json)
            );
        }
    }
}

/// Writes valid JSON from the choices in `bytes` (zeros once they run out).
struct Gen<'a> {
    bytes: &'a [u8],
    out: Vec<u8>,
}

/// Key spellings: plain names, and names written with escapes the scanner
/// must not take for the plain ones.
const ODD_KEYS: [&str; 8] = [
    r#"te\u0078t"#,
    r#"x\"text"#,
    r#"text\\"#,
    r#"\"content\""#,
    r#"us\"age\""#,
    r#"usage\n"#,
    r#"\\"#,
    r#"\"usage\":{"#,
];

/// What string values are made of: structure, escapes and key spellings.
const PIECES: [&str; 20] = [
    r#"\""#,
    r#"\\"#,
    ":",
    "{",
    "}",
    "[",
    "]",
    ",",
    " ",
    r#"\n"#,
    r#"\u0022"#,
    "é",
    "x",
    "text",
    r#"\"text\":"#,
    r#"\"content\": \""#,
    r#"\\\""#,
    "null",
    "12",
    ": [1]",
];

const NUMBERS: [&str; 14] = [
    "0",
    "7",
    "-1",
    "-0",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "1.5",
    "1e3",
    "1E-2",
    "-2.5e+10",
    "00",
    "12",
];

const SPACE: [&str; 5] = ["", " ", "\n", "\t", " \r\n "];

impl Gen<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.bytes.split_first().unwrap_or((&0, &[]));
        self.bytes = rest;
        b
    }
    fn pick<'t>(&mut self, table: &[&'t str]) -> &'t str {
        table[usize::from(self.byte()) % table.len()]
    }
    fn push(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }
    fn space(&mut self) {
        let s = self.pick(&SPACE);
        self.push(s);
    }
    fn string(&mut self) {
        self.push("\"");
        for _ in 0..self.byte() % 6 {
            let piece = self.pick(&PIECES);
            self.push(piece);
        }
        self.push("\"");
    }
    fn value(&mut self, depth: u32) {
        self.space();
        let kinds = if depth == 0 { 4 } else { 8 };
        match self.byte() % kinds {
            0 => self.string(),
            1 => {
                // "00" is not JSON: written as "0" here.
                let n = self.pick(&NUMBERS);
                self.push(if n == "00" { "0" } else { n });
            }
            2 => {
                let lit = self.pick(&["true", "false"]);
                self.push(lit);
            }
            3 => self.push("null"),
            4..=6 => {
                self.push("{");
                for i in 0..self.byte() % 5 {
                    if i > 0 {
                        self.push(",");
                    }
                    self.space();
                    let b = self.byte();
                    self.push("\"");
                    let key = if b.is_multiple_of(4) {
                        ODD_KEYS[usize::from(b / 4) % ODD_KEYS.len()]
                    } else {
                        NAMES[usize::from(b / 4) % NAMES.len()]
                    };
                    self.push(key);
                    self.push("\"");
                    self.space();
                    self.push(":");
                    self.value(depth - 1);
                }
                self.space();
                self.push("}");
            }
            _ => {
                self.push("[");
                for i in 0..self.byte() % 4 {
                    if i > 0 {
                        self.push(",");
                    }
                    self.value(depth - 1);
                }
                self.space();
                self.push("]");
            }
        }
        self.space();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    if sel & 1 == 0 {
        let doc = parse(rest);
        let mut own = Vec::new();
        if let Some(doc) = &doc {
            plain_keys(doc, &mut own);
        }
        check(rest, &names(sel >> 1, &own), doc.as_ref());
    } else {
        let mut g = Gen {
            bytes: rest,
            out: Vec::new(),
        };
        // Deep enough to nest every kind, shallow enough for serde_json's
        // recursion limit; one document after another until the input is
        // used up.
        while !g.bytes.is_empty() {
            g.out.clear();
            g.value(1 + u32::from(sel >> 1) % 12);
            let doc = parse(&g.out).unwrap_or_else(|| {
                panic!(
                    "generated invalid JSON: {}",
                    String::from_utf8_lossy(&g.out)
                )
            });
            let mut own = Vec::new();
            plain_keys(&doc, &mut own);
            check(&g.out, &names(sel >> 1, &own), Some(&doc));
        }
    }
});
