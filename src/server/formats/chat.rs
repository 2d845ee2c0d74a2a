//! OpenAI chat completions (`POST /v1/chat/completions`): the request facts
//! and every response byte. A stream is a role chunk on arrival, one chunk
//! per output token (`delta.reasoning_content` for the reasoning tokens,
//! `delta.content` for the rest), a finish chunk, an optional usage chunk and
//! `[DONE]`; the chunk head (id, object, created, model) is rendered once per
//! response and reused for every chunk.
//!
//! Prompt tokens are the words across all message contents: a string content
//! counts whole, an array content counts the `text` field of each part,
//! `null` counts zero.

use serde::Deserialize;

use super::json::{Messages, Model};
use super::openai::{self, push_id_model, push_usage};
use super::text::token;
use super::{DATA, Events, Finish, Identity, Output, Reply, Request};

#[derive(Deserialize)]
struct Raw<'a> {
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
pub(super) struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// Parses a request body, or returns the message for a 400.
pub(crate) fn parse(body: &[u8]) -> Result<Request<'_>, String> {
    let raw: Raw<'_> =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let messages = raw
        .messages
        .ok_or_else(|| "'messages' is required".to_string())?;
    Ok(Request {
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

const ID: &[u8] = b"chatcmpl-llmload-";

/// Builds the chunk head, up to and including `"choices":`, and sends the
/// role chunk.
pub(crate) fn start(id: &Identity<'_>, prefix: &mut Vec<u8>, ev: &mut Events<'_>) {
    prefix.clear();
    push_id_model(prefix, id, ID, b"chat.completion.chunk");
    prefix.extend_from_slice(b",\"choices\":");
    let prefix = &prefix[..];
    ev.push(|b| {
        b.extend_from_slice(b"data: ");
        b.extend_from_slice(prefix);
        b.extend_from_slice(
            b"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
        );
    });
}

const REASONING_DELTA: &[u8] = b"[{\"index\":0,\"delta\":{\"reasoning_content\":\"";
const CONTENT_DELTA: &[u8] = b"[{\"index\":0,\"delta\":{\"content\":\"";
const DELTA_END: &[u8] = b"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";

/// The chunk for output token `k`: the hot path of every stream, so its
/// size is summed from its parts and it is written once.
#[inline]
pub(crate) fn token_event(r: &Reply, prefix: &[u8], k: u32, ev: &mut Events<'_>) {
    let field = if k < r.reasoning {
        REASONING_DELTA
    } else {
        CONTENT_DELTA
    };
    let word = token(k).as_bytes();
    let len = DATA.len() + prefix.len() + field.len() + word.len() + DELTA_END.len();
    ev.push_sized(len, |b| {
        b.extend_from_slice(DATA);
        b.extend_from_slice(prefix);
        b.extend_from_slice(field);
        b.extend_from_slice(word);
        b.extend_from_slice(DELTA_END);
    });
}

/// An output event carrying `text` (JSON-safe) as content.
pub(crate) fn text_event(prefix: &[u8], text: &[u8], ev: &mut Events<'_>) {
    let len = DATA.len() + prefix.len() + CONTENT_DELTA.len() + text.len() + DELTA_END.len();
    ev.push_sized(len, |b| {
        b.extend_from_slice(DATA);
        b.extend_from_slice(prefix);
        b.extend_from_slice(CONTENT_DELTA);
        b.extend_from_slice(text);
        b.extend_from_slice(DELTA_END);
    });
}

/// The `finish_reason` value, quoted.
pub(super) fn finish_reason(r: &Reply) -> &'static [u8] {
    match r.finish {
        Finish::Length => b"\"length\"",
        Finish::Stop => b"\"stop\"",
    }
}

pub(crate) fn finish(r: &Reply, prefix: &[u8], ev: &mut Events<'_>) {
    ev.push(|b| {
        b.extend_from_slice(b"data: ");
        b.extend_from_slice(prefix);
        b.extend_from_slice(b"[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":");
        b.extend_from_slice(finish_reason(r));
        b.extend_from_slice(b"}]}\n\n");
    });
    if r.include_usage {
        ev.push(|b| {
            b.extend_from_slice(b"data: ");
            b.extend_from_slice(prefix);
            b.extend_from_slice(b"[],");
            push_usage(b, r.prompt, u64::from(r.n), r.reasoning);
            b.extend_from_slice(b"}\n\n");
        });
    }
    ev.data(b"[DONE]");
}

pub(crate) fn inband(ev: &mut Events<'_>) {
    ev.data(openai::INBAND_ERROR);
    ev.data(b"[DONE]");
}

/// A non-streamed `chat.completion` body with all `r.n` tokens.
pub(crate) fn body(r: &Reply, id: &Identity<'_>, text: Output<'_>, out: &mut Vec<u8>) {
    push_id_model(out, id, ID, b"chat.completion");
    out.extend_from_slice(
        b",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"",
    );
    text.push(out, r.reasoning, r.n);
    out.push(b'"');
    if r.reasoning > 0 {
        out.extend_from_slice(b",\"reasoning_content\":\"");
        text.push(out, 0, r.reasoning);
        out.push(b'"');
    }
    out.extend_from_slice(b"},\"logprobs\":null,\"finish_reason\":");
    out.extend_from_slice(finish_reason(r));
    out.extend_from_slice(b"}]");
    if r.body_usage {
        out.push(b',');
        push_usage(out, r.prompt, u64::from(r.n), r.reasoning);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::super::tests::{ident, reply, sse_data, stream_events};
    use super::*;
    use serde_json::{Value, json};
    use std::borrow::Cow;

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
        let r = parse(body).unwrap();
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
        let r = parse(br#"{"messages":[],"max_tokens":5,"max_completion_tokens":9}"#).unwrap();
        assert_eq!(r.max_tokens, Some(9));
        assert!(r.model.is_none() && !r.stream && !r.include_usage);
        let r = parse(br#"{"messages":[],"max_tokens":null,"stream":null}"#).unwrap();
        assert_eq!(r.max_tokens, None);
    }

    #[test]
    fn rejects_bad_bodies() {
        assert!(parse(b"{").unwrap_err().starts_with("invalid JSON body"));
        assert!(parse(b"[]").is_err());
        assert!(parse(br#"{"messages":"hi"}"#).is_err());
        assert!(parse(br#"{"messages":[],"max_tokens":-1}"#).is_err());
        assert!(parse(br#"{"messages":[]} x"#).is_err());
        assert_eq!(
            parse(br#"{"model":"m"}"#).unwrap_err(),
            "'messages' is required"
        );
    }

    #[test]
    fn stream_events_are_valid_json() {
        let r = Reply {
            include_usage: true,
            reasoning: 1,
            ..reply(Format::Chat, 3, 4)
        };
        let events = stream_events(&r, &ident("we\"ird\\model\n"));
        let data: Vec<&str> = events.iter().map(|e| sse_data(e)).collect();
        assert_eq!(data.len(), 1 + 3 + 1 + 1 + 1, "{data:?}");
        assert_eq!(*data.last().unwrap(), "[DONE]");
        let json: Vec<Value> = data[..data.len() - 1]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        for e in &json {
            assert_eq!(e["id"], "chatcmpl-llmload-1-42");
            assert_eq!(e["model"], "we\"ird\\model\n");
            assert_eq!(e["object"], "chat.completion.chunk");
        }
        assert_eq!(json[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(
            json[1]["choices"][0]["delta"],
            json!({"reasoning_content": token(0)})
        );
        assert_eq!(json[2]["choices"][0]["delta"], json!({"content": token(1)}));
        assert_eq!(json[4]["choices"][0]["finish_reason"], "length");
        assert_eq!(json[5]["usage"]["total_tokens"], 7);
        assert_eq!(json[5]["choices"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn body_is_valid_json() {
        let mut out = Vec::new();
        body(
            &reply(Format::Chat, 18, 2),
            &ident("m"),
            Output::Vocab,
            &mut out,
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        let expected: String = (0..18).map(token).collect();
        assert_eq!(v["choices"][0]["message"]["content"], expected.as_str());
        assert!(
            v["choices"][0]["message"]
                .get("reasoning_content")
                .is_none()
        );
        assert_eq!(v["usage"]["completion_tokens"], 18);
        assert_eq!(v["usage"]["total_tokens"], 20);

        out.clear();
        let r = Reply {
            reasoning: 5,
            ..reply(Format::Chat, 18, 2)
        };
        body(&r, &ident("m"), Output::Vocab, &mut out);
        let v: Value = serde_json::from_slice(&out).unwrap();
        let thought: String = (0..5).map(token).collect();
        let said: String = (5..18).map(token).collect();
        assert_eq!(
            v["choices"][0]["message"]["reasoning_content"],
            thought.as_str()
        );
        assert_eq!(v["choices"][0]["message"]["content"], said.as_str());
        assert_eq!(v["usage"]["completion_tokens"], 18);
    }
}
