//! The OpenAI chat-completions wire format as this mock speaks it: parsing a
//! request body into the few facts the server needs, and rendering the
//! response bodies and stream events byte for byte. Parsing borrows from the
//! request buffer and counts prompt words inside serde visitors, so a request
//! allocates nothing unless its model name holds JSON escapes; rendering
//! appends fixed byte strings and decimal numbers to reused buffers, never
//! going through `fmt`.
//!
//! Prompt tokens are the number of whitespace-separated words (Unicode
//! whitespace, as `str::split_whitespace`) across all message contents: a
//! string content counts whole, an array content counts the `text` field of
//! each part, `null` counts zero. No tokenizer is involved, so a client can
//! predict the number exactly.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::decimal::push_u64;

/// The model named in `/v1/models` and used when a request names none.
pub const MODEL: &str = "llmload-mock";

/// Output tokens when neither the server nor the request sets a number.
pub const DEFAULT_OUTPUT_TOKENS: u32 = 128;

/// Most output tokens one response may ask for: a non-streamed body is built
/// whole in memory, so the limit keeps one request from exhausting it.
pub const MAX_OUTPUT_TOKENS: u32 = 1 << 20;

/// The content tokens, each a short word with a leading space that needs no
/// JSON escaping. Token `k` of every response is `VOCAB[k % VOCAB.len()]`.
pub const VOCAB: [&str; 16] = [
    " the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", " while",
    " tokens", " stream", " at", " steady", " pace", " now",
];

/// Content token `k` of any response.
#[inline]
pub fn token(k: u32) -> &'static str {
    VOCAB[k as usize % VOCAB.len()]
}

/// The facts the server needs from a chat completion request.
#[derive(Debug)]
pub struct ChatRequest<'a> {
    /// The model as sent (JSON escapes already resolved), if any.
    pub model: Option<Cow<'a, str>>,
    /// Number of entries in `messages`.
    pub messages: u32,
    /// Whitespace-separated words across all message contents.
    pub prompt_tokens: u64,
    pub stream: bool,
    pub include_usage: bool,
    /// `max_completion_tokens`, else `max_tokens`, if either is set.
    pub max_tokens: Option<u64>,
}

/// Parses a request body, or returns the message for a 400.
pub fn parse_chat(body: &[u8]) -> Result<ChatRequest<'_>, String> {
    let raw: RawRequest<'_> =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let messages = raw
        .messages
        .ok_or_else(|| "'messages' is required".to_string())?;
    Ok(ChatRequest {
        model: raw.model.map(|m| m.0),
        messages: messages.count,
        prompt_tokens: messages.words,
        stream: raw.stream.unwrap_or(false),
        include_usage: raw
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        max_tokens: raw.max_completion_tokens.or(raw.max_tokens),
    })
}

#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow, default)]
    model: Option<Model<'a>>,
    #[serde(default)]
    messages: Option<Messages>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

/// A model name borrowed from the body when it has no escapes (serde's
/// derived `Cow` support inside `Option` would always copy).
struct Model<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Model<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a str>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Model<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model name string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Model(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Model(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// `messages`, reduced while parsing to a count and a word total.
#[derive(Default)]
struct Messages {
    count: u32,
    words: u64,
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Messages;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Messages, A::Error> {
                let mut m = Messages::default();
                while let Some(msg) = seq.next_element::<Message>()? {
                    m.count = m.count.saturating_add(1);
                    m.words += msg.content.0;
                }
                Ok(m)
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Words,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Words,
}

/// Word count of a content value: a string, `null`, or an array of parts.
#[derive(Default)]
struct Words(u64);

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Words;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, null, or an array of content parts")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Words, E> {
                Ok(Words(count_words(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Words, E> {
                Ok(Words(0))
            }
            fn visit_none<E: de::Error>(self) -> Result<Words, E> {
                Ok(Words(0))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Words, A::Error> {
                let mut n = 0;
                while let Some(p) = seq.next_element::<Part>()? {
                    n += p.text.0;
                }
                Ok(Words(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Words, A::Error> {
                // A single part object where an array was expected: accepted
                // leniently, counting nothing, rather than failing the request.
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Words(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whitespace-separated words in `s`.
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

/// Per-response identity shared by every event of a stream.
pub struct Identity<'a> {
    /// Unique within the server: worker index and the worker's response count.
    pub worker: u32,
    pub seq: u64,
    /// Unix seconds.
    pub created: u64,
    /// The model to echo.
    pub model: &'a str,
}

fn push_id_model(out: &mut Vec<u8>, id: &Identity<'_>, object: &[u8]) {
    out.extend_from_slice(b"{\"id\":\"chatcmpl-llmload-");
    push_u64(out, u64::from(id.worker));
    out.push(b'-');
    push_u64(out, id.seq);
    out.extend_from_slice(b"\",\"object\":\"");
    out.extend_from_slice(object);
    out.extend_from_slice(b"\",\"created\":");
    push_u64(out, id.created);
    out.extend_from_slice(b",\"model\":");
    push_json_str(out, id.model);
}

/// The part every stream event starts with, up to and including `"choices":`;
/// built once per response and reused for each event.
pub fn stream_prefix(out: &mut Vec<u8>, id: &Identity<'_>) {
    out.clear();
    push_id_model(out, id, b"chat.completion.chunk");
    out.extend_from_slice(b",\"choices\":");
}

/// Usage numbers of one response.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
}

fn push_usage(out: &mut Vec<u8>, u: Usage) {
    out.extend_from_slice(b"\"usage\":{\"prompt_tokens\":");
    push_u64(out, u.prompt);
    out.extend_from_slice(b",\"completion_tokens\":");
    push_u64(out, u.completion);
    out.extend_from_slice(b",\"total_tokens\":");
    push_u64(out, u.prompt + u.completion);
    out.push(b'}');
}

/// The stream events, each `data: …\n\n`, appended to `out`.
pub mod event {
    use super::*;

    pub fn role(out: &mut Vec<u8>, prefix: &[u8]) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(prefix);
        out.extend_from_slice(
            b"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
        );
    }

    pub fn content(out: &mut Vec<u8>, prefix: &[u8], k: u32) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(prefix);
        out.extend_from_slice(b"[{\"index\":0,\"delta\":{\"content\":\"");
        out.extend_from_slice(token(k).as_bytes());
        out.extend_from_slice(b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    }

    pub fn finish(out: &mut Vec<u8>, prefix: &[u8]) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(prefix);
        out.extend_from_slice(
            b"[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"length\"}]}\n\n",
        );
    }

    pub fn usage(out: &mut Vec<u8>, prefix: &[u8], u: Usage) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(prefix);
        out.extend_from_slice(b"[],");
        push_usage(out, u);
        out.extend_from_slice(b"}\n\n");
    }

    pub fn done(out: &mut Vec<u8>) {
        out.extend_from_slice(b"data: [DONE]\n\n");
    }
}

/// A non-streamed `chat.completion` body with all `usage.completion` tokens.
pub fn completion_body(out: &mut Vec<u8>, id: &Identity<'_>, u: Usage) {
    push_id_model(out, id, b"chat.completion");
    out.extend_from_slice(
        b",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"",
    );
    for k in 0..u.completion as u32 {
        out.extend_from_slice(token(k).as_bytes());
    }
    out.extend_from_slice(b"\"},\"logprobs\":null,\"finish_reason\":\"length\"}],");
    push_usage(out, u);
    out.push(b'}');
}

/// The `/v1/models` body.
pub fn models_body(out: &mut Vec<u8>, created: u64) {
    out.extend_from_slice(b"{\"object\":\"list\",\"data\":[{\"id\":\"");
    out.extend_from_slice(MODEL.as_bytes());
    out.extend_from_slice(b"\",\"object\":\"model\",\"created\":");
    push_u64(out, created);
    out.extend_from_slice(b",\"owned_by\":\"llmload\"}]}");
}

/// An OpenAI-style error body.
pub fn error_body(out: &mut Vec<u8>, message: &str, kind: &str, code: u16) {
    out.extend_from_slice(b"{\"error\":{\"message\":");
    push_json_str(out, message);
    out.extend_from_slice(b",\"type\":");
    push_json_str(out, kind);
    out.extend_from_slice(b",\"code\":");
    push_u64(out, u64::from(code));
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn vocab_needs_no_escaping() {
        for w in VOCAB {
            assert!(w.starts_with(' ') && w.len() > 1);
            assert!(w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' '));
        }
    }

    #[test]
    fn parses_fields_and_counts_words() {
        let body = br#"{"model":"m1","stream":true,"max_tokens":7,
            "stream_options":{"include_usage":true},
            "messages":[{"role":"system","content":"you are  terse"},
                        {"role":"user","content":[{"type":"text","text":"one two\nthree"},
                                                  {"type":"image_url","image_url":{"url":"x"}}]},
                        {"role":"assistant","content":null,"tool_calls":[]},
                        {"role":"user","content":"caf\u00e9 \t au\u00a0lait"}],
            "temperature":0.5,"extra":{"nested":[1,2,{"a":null}]}}"#;
        let r = parse_chat(body).unwrap();
        assert_eq!(r.model.as_deref(), Some("m1"));
        assert!(matches!(r.model, Some(Cow::Borrowed(_))));
        assert_eq!(r.messages, 4);
        // 3 + 3 + 0 + 3: U+00A0 is Unicode whitespace.
        assert_eq!(r.prompt_tokens, 3 + 3 + 3);
        assert!(r.stream && r.include_usage);
        assert_eq!(r.max_tokens, Some(7));
    }

    #[test]
    fn max_completion_tokens_wins() {
        let r = parse_chat(br#"{"messages":[],"max_tokens":5,"max_completion_tokens":9}"#).unwrap();
        assert_eq!(r.max_tokens, Some(9));
        assert!(r.model.is_none() && !r.stream && !r.include_usage);
        let r = parse_chat(br#"{"messages":[],"max_tokens":null,"stream":null}"#).unwrap();
        assert_eq!(r.max_tokens, None);
    }

    #[test]
    fn rejects_bad_bodies() {
        assert!(
            parse_chat(b"{")
                .unwrap_err()
                .starts_with("invalid JSON body")
        );
        assert!(parse_chat(b"[]").is_err());
        assert!(parse_chat(br#"{"messages":"hi"}"#).is_err());
        assert!(parse_chat(br#"{"messages":[],"max_tokens":-1}"#).is_err());
        assert!(parse_chat(br#"{"messages":[]} x"#).is_err());
        assert_eq!(
            parse_chat(br#"{"model":"m"}"#).unwrap_err(),
            "'messages' is required"
        );
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

    fn ident(model: &str) -> Identity<'_> {
        Identity {
            worker: 1,
            seq: 42,
            created: 1_700_000_000,
            model,
        }
    }

    #[test]
    fn events_are_valid_json() {
        let mut prefix = Vec::new();
        stream_prefix(&mut prefix, &ident("we\"ird\\model\n"));
        let mut out = Vec::new();
        event::role(&mut out, &prefix);
        event::content(&mut out, &prefix, 3);
        event::finish(&mut out, &prefix);
        event::usage(
            &mut out,
            &prefix,
            Usage {
                prompt: 4,
                completion: 1,
            },
        );
        let text = String::from_utf8(out).unwrap();
        let events: Vec<Value> = text
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        assert_eq!(events.len(), 4);
        for e in &events {
            assert_eq!(e["id"], "chatcmpl-llmload-1-42");
            assert_eq!(e["model"], "we\"ird\\model\n");
            assert_eq!(e["object"], "chat.completion.chunk");
        }
        assert_eq!(events[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(events[1]["choices"][0]["delta"]["content"], " fox");
        assert_eq!(events[2]["choices"][0]["finish_reason"], "length");
        assert_eq!(events[3]["usage"]["total_tokens"], 5);
        assert_eq!(events[3]["choices"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn completion_body_is_valid_json() {
        let mut out = Vec::new();
        completion_body(
            &mut out,
            &ident("m"),
            Usage {
                prompt: 2,
                completion: 18,
            },
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        let expected: String = (0..18).map(token).collect();
        assert_eq!(v["choices"][0]["message"]["content"], expected.as_str());
        assert_eq!(v["usage"]["completion_tokens"], 18);
        assert_eq!(v["usage"]["total_tokens"], 20);

        out.clear();
        error_body(&mut out, "bad \"thing\"", "invalid_request_error", 400);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["error"]["message"], "bad \"thing\"");

        out.clear();
        models_body(&mut out, 7);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["data"][0]["id"], MODEL);
    }
}
