//! OpenAI text completions (`POST /v1/completions`), as vLLM and SGLang
//! serve them: the request facts and every response byte. A stream has no
//! role chunk: one `text_completion` chunk per output token, a chunk with
//! empty text and the finish reason, an optional usage chunk, `[DONE]`.
//! Reasoning tokens do not exist in this format; every output token is text.
//!
//! Prompt tokens are the words of `prompt` when it is text, or its length
//! when it is an array of token ids; of a batch only the first prompt counts.

use serde::Deserialize;

use super::chat::StreamOptions;
use super::chat::finish_reason;
use super::json::{Model, Prompt};
use super::openai::{self, push_id_model, push_usage};
use super::text::token;
use super::{DATA, Events, Identity, Output, Reply, Request};

#[derive(Deserialize)]
struct Raw<'a> {
    #[serde(borrow, default)]
    model: Option<Model<'a>>,
    #[serde(default)]
    prompt: Option<Prompt>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
}

/// Parses a request body, or returns the message for a 400.
pub(crate) fn parse(body: &[u8]) -> Result<Request<'_>, String> {
    let raw: Raw<'_> =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let prompt = raw
        .prompt
        .ok_or_else(|| "'prompt' is required".to_string())?;
    Ok(Request {
        model: raw.model.map(|m| m.0),
        messages: 1,
        prompt_tokens: prompt.0,
        stream: raw.stream.unwrap_or(false),
        include_usage: raw
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        max_tokens: raw.max_tokens,
    })
}

const ID: &[u8] = b"cmpl-llmload-";

/// Builds the chunk head, up to and including `"choices":`; nothing is sent
/// before the first token.
pub(crate) fn start(id: &Identity<'_>, prefix: &mut Vec<u8>) {
    prefix.clear();
    push_id_model(prefix, id, ID, b"text_completion");
    prefix.extend_from_slice(b",\"choices\":");
}

const TEXT: &[u8] = b"[{\"index\":0,\"text\":\"";
const TEXT_END: &[u8] = b"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n";

/// The chunk for output token `k`, written once at a size summed from its
/// parts.
#[inline]
pub(crate) fn token_event(prefix: &[u8], k: u32, ev: &mut Events<'_>) {
    let word = token(k).as_bytes();
    let len = DATA.len() + prefix.len() + TEXT.len() + word.len() + TEXT_END.len();
    ev.push_sized(len, |b| {
        b.extend_from_slice(DATA);
        b.extend_from_slice(prefix);
        b.extend_from_slice(TEXT);
        b.extend_from_slice(word);
        b.extend_from_slice(TEXT_END);
    });
}

/// An output event carrying `text` (JSON-safe).
pub(crate) fn text_event(prefix: &[u8], text: &[u8], ev: &mut Events<'_>) {
    let len = DATA.len() + prefix.len() + TEXT.len() + text.len() + TEXT_END.len();
    ev.push_sized(len, |b| {
        b.extend_from_slice(DATA);
        b.extend_from_slice(prefix);
        b.extend_from_slice(TEXT);
        b.extend_from_slice(text);
        b.extend_from_slice(TEXT_END);
    });
}

pub(crate) fn finish(r: &Reply, prefix: &[u8], ev: &mut Events<'_>) {
    ev.push(|b| {
        b.extend_from_slice(b"data: ");
        b.extend_from_slice(prefix);
        b.extend_from_slice(b"[{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":");
        b.extend_from_slice(finish_reason(r));
        b.extend_from_slice(b"}]}\n\n");
    });
    if r.include_usage {
        ev.push(|b| {
            b.extend_from_slice(b"data: ");
            b.extend_from_slice(prefix);
            b.extend_from_slice(b"[],");
            push_usage(b, r.prompt, u64::from(r.n), 0);
            b.extend_from_slice(b"}\n\n");
        });
    }
    ev.data(b"[DONE]");
}

pub(crate) fn inband(ev: &mut Events<'_>) {
    ev.data(openai::INBAND_ERROR);
    ev.data(b"[DONE]");
}

/// A non-streamed `text_completion` body with all `r.n` tokens.
pub(crate) fn body(r: &Reply, id: &Identity<'_>, text: Output<'_>, out: &mut Vec<u8>) {
    push_id_model(out, id, ID, b"text_completion");
    out.extend_from_slice(b",\"choices\":[{\"index\":0,\"text\":\"");
    text.push(out, 0, r.n);
    out.extend_from_slice(b"\",\"logprobs\":null,\"finish_reason\":");
    out.extend_from_slice(finish_reason(r));
    out.extend_from_slice(b"}]");
    if r.body_usage {
        out.push(b',');
        push_usage(out, r.prompt, u64::from(r.n), 0);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::super::Format;
    use super::super::tests::{ident, reply, sse_data, stream_events};
    use super::*;
    use serde_json::Value;

    #[test]
    fn parses_every_prompt_shape() {
        let r = parse(
            br#"{"model":"m","prompt":"a b c","max_tokens":4,"stream":true,
            "stream_options":{"include_usage":true},"temperature":0}"#,
        )
        .unwrap();
        assert_eq!(r.model.as_deref(), Some("m"));
        assert_eq!((r.messages, r.prompt_tokens, r.max_tokens), (1, 3, Some(4)));
        assert!(r.stream && r.include_usage);
        assert_eq!(
            parse(br#"{"prompt":["x y","z"]}"#).unwrap().prompt_tokens,
            2
        );
        assert_eq!(
            parse(br#"{"prompt":[9,8,7,6,5]}"#).unwrap().prompt_tokens,
            5
        );
        assert_eq!(parse(br#"{"prompt":""}"#).unwrap().prompt_tokens, 0);
        assert_eq!(
            parse(br#"{"model":"m"}"#).unwrap_err(),
            "'prompt' is required"
        );
        assert!(parse(br#"{"prompt":{"text":"x"}}"#).is_err());
        assert!(parse(br#"{"prompt":"x","max_tokens":-3}"#).is_err());
    }

    #[test]
    fn stream_events_are_valid_json() {
        let r = Reply {
            include_usage: true,
            reasoning: 2,
            ..reply(Format::Completions, 3, 4)
        };
        let events = stream_events(&r, &ident("m"));
        let data: Vec<&str> = events.iter().map(|e| sse_data(e)).collect();
        assert_eq!(data.len(), 3 + 1 + 1 + 1, "{data:?}");
        let json: Vec<Value> = data[..5]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        for (k, e) in json[..3].iter().enumerate() {
            assert_eq!(e["object"], "text_completion");
            assert_eq!(e["id"], "cmpl-llmload-1-42");
            assert_eq!(e["choices"][0]["text"], token(k as u32));
            assert_eq!(e["choices"][0]["finish_reason"], Value::Null);
        }
        assert_eq!(json[3]["choices"][0]["text"], "");
        assert_eq!(json[3]["choices"][0]["finish_reason"], "length");
        assert_eq!(json[4]["usage"]["completion_tokens"], 3);
        assert!(json[4]["usage"].get("completion_tokens_details").is_none());
        assert_eq!(data[5], "[DONE]");
    }

    #[test]
    fn body_is_valid_json() {
        let mut out = Vec::new();
        body(
            &reply(Format::Completions, 20, 3),
            &ident("m"),
            Output::Vocab,
            &mut out,
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        let expected: String = (0..20).map(token).collect();
        assert_eq!(v["object"], "text_completion");
        assert_eq!(v["choices"][0]["text"], expected.as_str());
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(v["usage"]["total_tokens"], 23);
    }
}
