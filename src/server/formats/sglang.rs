//! SGLang's native `POST /generate`: the request facts and every response
//! byte. Unlike the OpenAI formats, each stream event carries the whole text
//! so far, not a delta, so event `k` resends tokens `0..=k` and a stream of
//! `n` tokens costs O(n²) bytes, as the real server's does. There is no role
//! event: the first event carries the first token, the last one also carries
//! the finish reason (`{"type": "length", "length": n}`), then `[DONE]`.
//! Reasoning tokens do not exist in this format.
//!
//! Prompt tokens are the words of `text`, or the length of `input_ids`.
//! Batched requests (arrays of prompts) are refused.

use serde::Deserialize;

use super::json::{Model, Text, TokenIds};
use super::{DATA, Events, Finish, Identity, Output, Reply, Request};
use crate::ascii::{len_u64, push_u64};

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow, default)]
    model: Option<Model<'a>>,
    #[serde(default)]
    text: Option<Text>,
    #[serde(default)]
    input_ids: Option<TokenIds>,
    #[serde(default)]
    sampling_params: Option<SamplingParams>,
    #[serde(default)]
    stream: Option<bool>,
}

#[derive(Deserialize)]
struct SamplingParams {
    #[serde(default)]
    max_new_tokens: Option<u64>,
}

/// Parses a request body, or returns the message for a 400.
pub(crate) fn parse(body: &[u8]) -> Result<Request<'_>, String> {
    let raw: Raw<'_> =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let prompt_tokens = match (raw.text, raw.input_ids) {
        (Some(t), None) => t.0,
        (None, Some(ids)) => ids.0,
        (None, None) => return Err("'text' or 'input_ids' is required".to_string()),
        (Some(_), Some(_)) => {
            return Err("give either 'text' or 'input_ids', not both".to_string());
        }
    };
    Ok(Request {
        model: raw.model.map(|m| m.0),
        messages: 1,
        prompt_tokens,
        stream: raw.stream.unwrap_or(false),
        include_usage: false,
        max_tokens: raw.sampling_params.and_then(|p| p.max_new_tokens),
    })
}

/// What the in-band error fault sends, in a stream or as a body.
pub(crate) const INBAND_ERROR: &[u8] = br#"{"error":{"message":"injected in-band error"}}"#;

/// Builds what follows the text in every event, up to and including
/// `"completion_tokens":`; nothing is sent before the first token.
pub(crate) fn start(r: &Reply, id: &Identity<'_>, prefix: &mut Vec<u8>) {
    prefix.clear();
    prefix.extend_from_slice(b"\",\"meta_info\":{\"id\":\"llmload-");
    push_u64(prefix, u64::from(id.worker));
    prefix.push(b'-');
    push_u64(prefix, id.seq);
    prefix.extend_from_slice(b"\",\"prompt_tokens\":");
    push_u64(prefix, r.prompt);
    prefix.extend_from_slice(b",\"completion_tokens\":");
}

const TEXT: &[u8] = b"{\"text\":\"";
const UNFINISHED: &[u8] = b",\"finish_reason\":null";
const FINISHED: &[u8] = b",\"finish_reason\":{\"type\":\"length\",\"length\":";
/// A reply said in full ends as at an end-of-sequence token; the mock has
/// no token ids, so it names none.
const STOPPED: &[u8] = b",\"finish_reason\":{\"type\":\"stop\",\"matched\":null}";
const END: &[u8] = b",\"cached_tokens\":0},\"index\":0}";

/// The object for the first `done` tokens, `finished` when it is the last.
fn object(
    out: &mut Vec<u8>,
    r: &Reply,
    prefix: &[u8],
    text: Output<'_>,
    done: u32,
    finished: bool,
) {
    out.extend_from_slice(TEXT);
    text.push(out, 0, done);
    out.extend_from_slice(prefix);
    push_u64(out, u64::from(done));
    match (finished, r.finish) {
        (false, _) => out.extend_from_slice(UNFINISHED),
        (true, Finish::Length) => {
            out.extend_from_slice(FINISHED);
            push_u64(out, u64::from(r.n));
            out.push(b'}');
        }
        (true, Finish::Stop) => out.extend_from_slice(STOPPED),
    }
    out.extend_from_slice(END);
}

/// How many bytes `object` appends: the events grow with every token, so
/// they are sized up front and written once rather than staged and copied.
fn object_len(r: &Reply, prefix: &[u8], text: Output<'_>, done: u32, finished: bool) -> usize {
    let finish = match (finished, r.finish) {
        (false, _) => UNFINISHED.len(),
        (true, Finish::Length) => FINISHED.len() + len_u64(u64::from(r.n)) + 1,
        (true, Finish::Stop) => STOPPED.len(),
    };
    TEXT.len() + text.len(0, done) + prefix.len() + len_u64(u64::from(done)) + finish + END.len()
}

/// One `data:` event holding the object for the first `done` tokens.
fn event(
    ev: &mut Events<'_>,
    r: &Reply,
    prefix: &[u8],
    text: Output<'_>,
    done: u32,
    finished: bool,
) {
    let len = DATA.len() + object_len(r, prefix, text, done, finished) + 2;
    ev.push_sized(len, |b| {
        b.extend_from_slice(DATA);
        object(b, r, prefix, text, done, finished);
        b.extend_from_slice(b"\n\n");
    });
}

#[inline]
pub(crate) fn token_event(r: &Reply, prefix: &[u8], k: u32, ev: &mut Events<'_>) {
    output_event(r, prefix, k, Output::Vocab, ev);
}

/// The event for output token `k`, the text so far said by `text`.
#[inline]
pub(crate) fn output_event(
    r: &Reply,
    prefix: &[u8],
    k: u32,
    text: Output<'_>,
    ev: &mut Events<'_>,
) {
    event(ev, r, prefix, text, k + 1, k + 1 == r.n);
}

/// The last token's event already said why it finished; a response without
/// tokens still needs one event to say so.
pub(crate) fn finish(r: &Reply, prefix: &[u8], ev: &mut Events<'_>) {
    if r.n == 0 {
        event(ev, r, prefix, Output::Vocab, 0, true);
    }
    ev.data(b"[DONE]");
}

pub(crate) fn inband(ev: &mut Events<'_>) {
    ev.data(INBAND_ERROR);
    ev.data(b"[DONE]");
}

/// The non-streamed body: the final event's object, once. `prefix` is
/// scratch space, reused from response to response.
pub(crate) fn body(
    r: &Reply,
    id: &Identity<'_>,
    text: Output<'_>,
    prefix: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    start(r, id, prefix);
    object(out, r, prefix, text, r.n, true);
}

/// An error body as the real server writes it: a message and nothing else.
pub(crate) fn error_body(out: &mut Vec<u8>, message: &str) {
    out.extend_from_slice(b"{\"error\":{\"message\":");
    super::text::push_json_str(out, message);
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::super::tests::{ident, reply, sse_data, stream_events};
    use super::super::text::token;
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn parses_text_or_ids() {
        let r = parse(br#"{"text":"a b c","sampling_params":{"max_new_tokens":9,"temperature":0},"stream":true}"#)
            .unwrap();
        assert_eq!((r.messages, r.prompt_tokens, r.max_tokens), (1, 3, Some(9)));
        assert!(r.stream && r.model.is_none());
        let r = parse(br#"{"input_ids":[1,2,3,4],"sampling_params":{}}"#).unwrap();
        assert_eq!((r.prompt_tokens, r.max_tokens), (4, None));
        assert!(!r.stream);
        assert_eq!(
            parse(br#"{"sampling_params":{}}"#).unwrap_err(),
            "'text' or 'input_ids' is required"
        );
        assert!(parse(br#"{"text":"a","input_ids":[1]}"#).is_err());
        assert!(
            parse(br#"{"text":["a","b"]}"#)
                .unwrap_err()
                .contains("batched")
        );
        assert!(parse(br#"{"input_ids":[[1],[2]]}"#).is_err());
    }

    #[test]
    fn stream_text_is_cumulative() {
        let events = stream_events(&reply(Format::Generate, 20, 5), &ident("m"));
        let data: Vec<&str> = events.iter().map(|e| sse_data(e)).collect();
        assert_eq!(data.len(), 21);
        assert_eq!(data[20], "[DONE]");
        for k in 0..20u32 {
            let v: Value = serde_json::from_str(data[k as usize]).unwrap();
            let text: String = (0..=k).map(token).collect();
            assert_eq!(v["text"], text.as_str());
            assert_eq!(v["index"], 0);
            let meta = &v["meta_info"];
            assert_eq!(meta["id"], "llmload-1-42");
            assert_eq!(meta["prompt_tokens"], 5);
            assert_eq!(meta["completion_tokens"], k + 1);
            assert_eq!(meta["cached_tokens"], 0);
            if k < 19 {
                assert_eq!(meta["finish_reason"], Value::Null);
            } else {
                assert_eq!(
                    meta["finish_reason"],
                    json!({"type": "length", "length": 20})
                );
            }
        }
    }

    #[test]
    fn empty_stream_still_finishes() {
        let events = stream_events(&reply(Format::Generate, 0, 5), &ident("m"));
        let data: Vec<&str> = events.iter().map(|e| sse_data(e)).collect();
        assert_eq!(data.len(), 2);
        let v: Value = serde_json::from_str(data[0]).unwrap();
        assert_eq!(v["text"], "");
        assert_eq!(v["meta_info"]["finish_reason"]["length"], 0);
    }

    #[test]
    fn body_and_errors_are_valid_json() {
        let mut out = Vec::new();
        body(
            &reply(Format::Generate, 17, 2),
            &ident("m"),
            Output::Vocab,
            &mut Vec::new(),
            &mut out,
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        let text: String = (0..17).map(token).collect();
        assert_eq!(v["text"], text.as_str());
        assert_eq!(v["meta_info"]["completion_tokens"], 17);
        assert_eq!(v["meta_info"]["finish_reason"]["type"], "length");
        out.clear();
        error_body(&mut out, "no \"such\" thing");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, json!({"error": {"message": "no \"such\" thing"}}));
        let v: Value = serde_json::from_slice(INBAND_ERROR).unwrap();
        assert_eq!(v["error"]["message"], "injected in-band error");
    }
}
