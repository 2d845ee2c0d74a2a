//! Anthropic messages (`POST /v1/messages`): the request facts and every
//! response byte. A stream is typed events (`event: NAME` then `data: JSON`):
//! `message_start`, `content_block_start` and `ping` on arrival, one
//! `content_block_delta` per output token, then `content_block_stop`,
//! `message_delta` (stop reason and output tokens) and `message_stop`.
//! Reasoning tokens form a `thinking` block at index 0 ahead of the text
//! block, which then has index 1; the switch between the blocks is sent at
//! the first text token's time.
//!
//! Prompt tokens are the words of `system` and of every message content
//! (a string or an array of blocks, counting each block's `text`).

use serde::Deserialize;

use super::json::{Messages, Model, Words};
use super::text::{push_json_str, token};
use super::{Events, Finish, Identity, Output, Reply, Request};
use crate::ascii::push_u64;

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow, default)]
    model: Option<Model<'a>>,
    #[serde(default)]
    messages: Option<Messages>,
    #[serde(default)]
    system: Option<Words>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    stream: Option<bool>,
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
        prompt_tokens: messages.words + raw.system.map_or(0, |s| s.0),
        stream: raw.stream.unwrap_or(false),
        include_usage: false,
        max_tokens: raw.max_tokens,
    })
}

/// What the in-band error fault sends, as an `error` event or as a body.
pub(crate) const INBAND_ERROR: &[u8] =
    br#"{"type":"error","error":{"type":"overloaded_error","message":"injected in-band error"}}"#;

fn push_id(out: &mut Vec<u8>, id: &Identity<'_>) {
    out.extend_from_slice(b"\"id\":\"msg_llmload_");
    push_u64(out, u64::from(id.worker));
    out.push(b'_');
    push_u64(out, id.seq);
    out.push(b'"');
}

/// Appends one typed event.
fn event(ev: &mut Events<'_>, name: &[u8], json: impl FnOnce(&mut Vec<u8>)) {
    ev.push(|b| {
        b.extend_from_slice(b"event: ");
        b.extend_from_slice(name);
        b.extend_from_slice(b"\ndata: ");
        json(b);
        b.extend_from_slice(b"\n\n");
    });
}

fn block_start(ev: &mut Events<'_>, index: u8, thinking: bool) {
    event(ev, b"content_block_start", |b| {
        b.extend_from_slice(b"{\"type\":\"content_block_start\",\"index\":");
        push_u64(b, u64::from(index));
        b.extend_from_slice(if thinking {
            b",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}"
        } else {
            b",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}"
        });
    });
}

fn block_stop(ev: &mut Events<'_>, index: u8) {
    event(ev, b"content_block_stop", |b| {
        b.extend_from_slice(b"{\"type\":\"content_block_stop\",\"index\":");
        push_u64(b, u64::from(index));
        b.push(b'}');
    });
}

/// The index of the text block: 1 behind a thinking block, else 0.
fn text_index(r: &Reply) -> u8 {
    u8::from(r.reasoning > 0)
}

/// The events sent on arrival.
pub(crate) fn start(r: &Reply, id: &Identity<'_>, ev: &mut Events<'_>) {
    event(ev, b"message_start", |b| {
        b.extend_from_slice(b"{\"type\":\"message_start\",\"message\":{");
        push_id(b, id);
        b.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
        push_json_str(b, id.model);
        b.extend_from_slice(
            b",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":",
        );
        push_u64(b, r.prompt);
        b.extend_from_slice(b",\"output_tokens\":1}}}");
    });
    block_start(ev, 0, r.reasoning > 0);
    event(ev, b"ping", |b| b.extend_from_slice(b"{\"type\":\"ping\"}"));
}

const DELTA_EVENT: &[u8] =
    b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":";
const THINKING_DELTA: &[u8] = b",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"";
const TEXT_DELTA: &[u8] = b",\"delta\":{\"type\":\"text_delta\",\"text\":\"";
const DELTA_END: &[u8] = b"\"}}\n\n";

/// The event(s) for output token `k`: a thinking or text delta, preceded by
/// the switch from the thinking block to the text block at the first text
/// token. The deltas are the hot path, so each is sized from its parts and
/// written once.
#[inline]
pub(crate) fn token_events(r: &Reply, k: u32, ev: &mut Events<'_>) {
    let (index, delta): (&[u8], &[u8]) = if k < r.reasoning {
        (b"0", THINKING_DELTA)
    } else {
        if k == r.reasoning && r.reasoning > 0 {
            block_stop(ev, 0);
            block_start(ev, 1, false);
        }
        (if text_index(r) == 1 { b"1" } else { b"0" }, TEXT_DELTA)
    };
    let word = token(k).as_bytes();
    let len = DELTA_EVENT.len() + index.len() + delta.len() + word.len() + DELTA_END.len();
    ev.push_sized(len, |b| {
        b.extend_from_slice(DELTA_EVENT);
        b.extend_from_slice(index);
        b.extend_from_slice(delta);
        b.extend_from_slice(word);
        b.extend_from_slice(DELTA_END);
    });
}

/// A text delta event carrying `text` (JSON-safe), in the text block.
pub(crate) fn text_event(r: &Reply, text: &[u8], ev: &mut Events<'_>) {
    let index: &[u8] = if text_index(r) == 1 { b"1" } else { b"0" };
    let len = DELTA_EVENT.len() + index.len() + TEXT_DELTA.len() + text.len() + DELTA_END.len();
    ev.push_sized(len, |b| {
        b.extend_from_slice(DELTA_EVENT);
        b.extend_from_slice(index);
        b.extend_from_slice(TEXT_DELTA);
        b.extend_from_slice(text);
        b.extend_from_slice(DELTA_END);
    });
}

/// The `stop_reason` value, quoted.
fn stop_reason(r: &Reply) -> &'static [u8] {
    match r.finish {
        Finish::Length => b"\"max_tokens\"",
        Finish::Stop => b"\"end_turn\"",
    }
}

/// Closes the open block (the thinking block when every token was
/// reasoning) and the message.
pub(crate) fn finish(r: &Reply, ev: &mut Events<'_>) {
    let open = if r.reasoning > 0 && r.n > r.reasoning {
        1
    } else {
        0
    };
    block_stop(ev, open);
    event(ev, b"message_delta", |b| {
        b.extend_from_slice(b"{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":");
        b.extend_from_slice(stop_reason(r));
        b.extend_from_slice(b",\"stop_sequence\":null},\"usage\":{\"output_tokens\":");
        push_u64(b, u64::from(r.n));
        b.extend_from_slice(b"}}");
    });
    event(ev, b"message_stop", |b| {
        b.extend_from_slice(b"{\"type\":\"message_stop\"}")
    });
}

pub(crate) fn inband(ev: &mut Events<'_>) {
    event(ev, b"error", |b| b.extend_from_slice(INBAND_ERROR));
}

/// A non-streamed `message` body with all `r.n` tokens.
pub(crate) fn body(r: &Reply, id: &Identity<'_>, text: Output<'_>, out: &mut Vec<u8>) {
    out.push(b'{');
    push_id(out, id);
    out.extend_from_slice(b",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    push_json_str(out, id.model);
    out.extend_from_slice(b",\"content\":[");
    if r.reasoning > 0 {
        out.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":\"");
        text.push(out, 0, r.reasoning);
        out.extend_from_slice(b"\",\"signature\":\"\"}");
    }
    if r.reasoning == 0 || r.n > r.reasoning {
        if r.reasoning > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
        text.push(out, r.reasoning, r.n);
        out.extend_from_slice(b"\"}");
    }
    out.extend_from_slice(b"],\"stop_reason\":");
    out.extend_from_slice(stop_reason(r));
    out.extend_from_slice(b",\"stop_sequence\":null,\"usage\":{\"input_tokens\":");
    push_u64(out, r.prompt);
    out.extend_from_slice(b",\"output_tokens\":");
    push_u64(out, u64::from(r.n));
    out.extend_from_slice(b"}}");
}

/// An Anthropic error body; `kind` is its `error.type`.
pub(crate) fn error_body(out: &mut Vec<u8>, kind: &str, message: &str) {
    out.extend_from_slice(b"{\"type\":\"error\",\"error\":{\"type\":");
    push_json_str(out, kind);
    out.extend_from_slice(b",\"message\":");
    push_json_str(out, message);
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::super::tests::{ident, reply, stream_events};
    use super::*;
    use serde_json::{Value, json};

    /// (event name, JSON) of every event, checking the framing.
    fn typed(events: &[Vec<u8>]) -> Vec<(String, Value)> {
        events
            .iter()
            .map(|e| {
                let text = std::str::from_utf8(e).unwrap();
                let rest = text.strip_prefix("event: ").expect("event line");
                let (name, rest) = rest.split_once('\n').unwrap();
                let data = rest
                    .strip_prefix("data: ")
                    .and_then(|d| d.strip_suffix("\n\n"))
                    .expect("data line");
                let v: Value = serde_json::from_str(data).unwrap();
                assert_eq!(v["type"], name, "{text}");
                (name.to_string(), v)
            })
            .collect()
    }

    #[test]
    fn parses_messages_and_system() {
        let r = parse(
            br#"{"model":"claude-x","max_tokens":6,"stream":true,
            "system":[{"type":"text","text":"be brief"}],
            "messages":[{"role":"user","content":"one two"},
                        {"role":"assistant","content":[{"type":"text","text":"three"}]},
                        {"role":"user","content":"four"}]}"#,
        )
        .unwrap();
        assert_eq!(r.model.as_deref(), Some("claude-x"));
        assert_eq!((r.messages, r.prompt_tokens, r.max_tokens), (3, 6, Some(6)));
        assert!(r.stream);
        let r = parse(br#"{"system":"a b c","messages":[]}"#).unwrap();
        assert_eq!((r.messages, r.prompt_tokens), (0, 3));
        assert_eq!(
            parse(br#"{"max_tokens":1}"#).unwrap_err(),
            "'messages' is required"
        );
    }

    #[test]
    fn stream_event_sequence() {
        let ev = typed(&stream_events(&reply(Format::Messages, 3, 7), &ident("c")));
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let start = &ev[0].1["message"];
        assert_eq!(start["id"], "msg_llmload_1_42");
        assert_eq!(start["model"], "c");
        assert_eq!(
            start["usage"],
            json!({"input_tokens": 7, "output_tokens": 1})
        );
        assert_eq!(
            ev[1].1["content_block"],
            json!({"type": "text", "text": ""})
        );
        for k in 0..3 {
            assert_eq!(
                ev[3 + k].1,
                json!({"type": "content_block_delta", "index": 0,
                       "delta": {"type": "text_delta", "text": token(k as u32)}})
            );
        }
        assert_eq!(ev[6].1["index"], 0);
        assert_eq!(
            ev[7].1,
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                   "usage": {"output_tokens": 3}})
        );
    }

    #[test]
    fn thinking_block_comes_first() {
        let r = Reply {
            reasoning: 2,
            ..reply(Format::Messages, 4, 1)
        };
        let ev = typed(&stream_events(&r, &ident("c")));
        let shape: Vec<(String, Value, Value)> = ev
            .iter()
            .map(|(n, v)| (n.clone(), v["index"].clone(), v["delta"]["type"].clone()))
            .collect();
        let s = |n: &str, i: Option<u8>, d: Option<&str>| {
            (
                n.to_string(),
                i.map_or(Value::Null, |i| json!(i)),
                d.map_or(Value::Null, |d| json!(d)),
            )
        };
        assert_eq!(
            shape,
            [
                s("message_start", None, None),
                s("content_block_start", Some(0), None),
                s("ping", None, None),
                s("content_block_delta", Some(0), Some("thinking_delta")),
                s("content_block_delta", Some(0), Some("thinking_delta")),
                s("content_block_stop", Some(0), None),
                s("content_block_start", Some(1), None),
                s("content_block_delta", Some(1), Some("text_delta")),
                s("content_block_delta", Some(1), Some("text_delta")),
                s("content_block_stop", Some(1), None),
                s("message_delta", None, None),
                s("message_stop", None, None),
            ]
        );
        assert_eq!(ev[1].1["content_block"]["type"], "thinking");
        assert_eq!(ev[3].1["delta"]["thinking"], token(0));
        assert_eq!(ev[6].1["content_block"]["type"], "text");
        assert_eq!(ev[7].1["delta"]["text"], token(2));
        assert_eq!(ev[10].1["usage"]["output_tokens"], 4);

        // Every token reasoning: the thinking block is the only one.
        let r = Reply {
            reasoning: 2,
            ..reply(Format::Messages, 2, 1)
        };
        let ev = typed(&stream_events(&r, &ident("c")));
        let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names
                .iter()
                .filter(|n| **n == "content_block_start")
                .count(),
            1
        );
        assert_eq!(ev[5].1, json!({"type": "content_block_stop", "index": 0}));
    }

    #[test]
    fn bodies_are_valid_json() {
        let mut out = Vec::new();
        body(
            &reply(Format::Messages, 5, 3),
            &ident("c"),
            Output::Vocab,
            &mut out,
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        let text: String = (0..5).map(token).collect();
        assert_eq!(v["type"], "message");
        assert_eq!(v["role"], "assistant");
        assert_eq!(v["content"], json!([{"type": "text", "text": text}]));
        assert_eq!(v["stop_reason"], "max_tokens");
        assert_eq!(v["usage"], json!({"input_tokens": 3, "output_tokens": 5}));

        out.clear();
        let r = Reply {
            reasoning: 2,
            ..reply(Format::Messages, 5, 3)
        };
        body(&r, &ident("c"), Output::Vocab, &mut out);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["content"][0]["type"], "thinking");
        assert_eq!(
            v["content"][0]["thinking"],
            format!("{}{}", token(0), token(1))
        );
        assert_eq!(
            v["content"][1]["text"],
            format!("{}{}{}", token(2), token(3), token(4))
        );

        out.clear();
        error_body(&mut out, "authentication_error", "bad key");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            v,
            json!({"type": "error", "error": {"type": "authentication_error", "message": "bad key"}})
        );
        let v: Value = serde_json::from_slice(INBAND_ERROR).unwrap();
        assert_eq!(v["error"]["type"], "overloaded_error");
    }
}
