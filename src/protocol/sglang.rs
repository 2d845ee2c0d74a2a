//! SGLang's native `/generate`: the prompt as text or token ids, sampling
//! settings under `sampling_params`, and counts in every response's
//! `meta_info`. A streamed event resends the whole text generated so far, so
//! the new output is the part past what the stream has already shown
//! (`StreamState::text_seen`, compared in raw escaped bytes, which grow in
//! step with the text). The trade-off: the server's incremental mode
//! (`--incremental-streaming-output`), where each event carries only its own
//! text, reads as a stream that stops growing; cumulative is the default.
//! Reading a cumulative event costs time in the length of the whole text, as
//! it does for the server that writes it. A finish reason of type `abort`
//! (SGLang's in-band rejection) is an error, with its message kept.

use serde_json::{Map, Value, json};

use super::errors::error_message;
use super::openai_completions::prompt_text;
use super::scan::{self, Value as V};
use super::{BodyInfo, BodySpec, EventInfo, Finish, Protocol, StreamState};
use crate::http::sse::SseEvent;
use crate::json_key;

json_key!(TEXT = "text");
json_key!(META_INFO = "meta_info");
json_key!(PROMPT_TOKENS = "prompt_tokens");
json_key!(COMPLETION_TOKENS = "completion_tokens");
json_key!(FINISH_REASON = "finish_reason");
json_key!(TYPE = "type");
json_key!(MESSAGE = "message");

/// The `sglang` wire format.
pub(crate) struct Sglang;

impl Protocol for Sglang {
    fn name(&self) -> &'static str {
        "sglang"
    }

    fn default_path(&self) -> &'static str {
        "/generate"
    }

    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>) {
        // `/generate` takes no model name: a single-model server needs none,
        // and a router that wants one gets it through extra_body.
        let mut body = match spec.input_tokens {
            Some(ids) => json!({"input_ids": ids}),
            None => json!({"text": prompt_text(spec)}),
        };
        body["sampling_params"] = sampling_params(spec).into();
        body["stream"] = spec.stream.into();
        // An extra `sampling_params` object adds to ours key by key instead
        // of replacing it, so `{"sampling_params": {"top_k": 20}}` keeps the
        // run's max_new_tokens; every other extra key overrides the top level.
        for (k, v) in spec.extra_body.into_iter().flatten() {
            let ours = match k.as_str() {
                "sampling_params" => body.get_mut(k.as_str()).and_then(Value::as_object_mut),
                _ => None,
            };
            match (ours, v) {
                (Some(ours), Value::Object(more)) => {
                    for (pk, pv) in more {
                        ours.insert(pk.clone(), pv.clone());
                    }
                }
                _ => body[k.as_str()] = v.clone(),
            }
        }
        serde_json::to_writer(out, &body).expect("writing JSON to a Vec cannot fail");
    }

    fn parse_event<'a>(&self, event: &SseEvent<'a>, state: &mut StreamState) -> EventInfo<'a> {
        let data = event.data;
        let mut info = EventInfo::default();
        if data == b"[DONE]" {
            return info;
        }
        let mut rest = data;
        match scan::find(data, &TEXT) {
            Some(V::Str(text)) => {
                // A resent text that is not longer (a retransmitted or
                // trimmed event) carries nothing new; `text_seen` stays the
                // high-water mark so output is never counted twice.
                if text.len() > state.text_seen {
                    info.text = &text[state.text_seen..];
                    state.text_seen = text.len();
                }
                rest = scan::after(data, text);
            }
            // Error events have no text: only they pay for the search.
            _ => info.error = error_message(data),
        }
        let meta = meta_info(data, rest);
        read_meta(
            meta,
            &mut info.prompt_tokens,
            &mut info.completion_tokens,
            &mut info.finish,
        );
        if let Some(m) = abort_message(meta) {
            info.error = Some(m);
        }
        info
    }

    fn parse_body<'a>(&self, body: &'a [u8]) -> BodyInfo<'a> {
        let mut info = BodyInfo::default();
        let mut rest = body;
        match scan::find(body, &TEXT) {
            Some(V::Str(text)) => {
                info.text = text;
                rest = scan::after(body, text);
            }
            _ => info.error = error_message(body),
        }
        let meta = meta_info(body, rest);
        read_meta(
            meta,
            &mut info.prompt_tokens,
            &mut info.completion_tokens,
            &mut info.finish,
        );
        if let Some(m) = abort_message(meta) {
            info.error = Some(m);
        }
        info
    }
}

/// SGLang's `sampling_params` for the run's settings; `None` is not sent, so
/// the server's own defaults (and older servers' narrower parameter sets)
/// apply.
fn sampling_params(spec: &BodySpec<'_>) -> Map<String, Value> {
    let s = spec.sampling;
    let mut p = Map::new();
    if let Some(n) = spec.max_tokens {
        p.insert("max_new_tokens".into(), n.into());
    }
    if let Some(n) = s.min_tokens {
        p.insert("min_new_tokens".into(), n.into());
    }
    if let Some(t) = s.temperature {
        p.insert("temperature".into(), t.into());
    }
    if let Some(t) = s.top_p {
        p.insert("top_p".into(), t.into());
    }
    if !s.stop.is_empty() {
        p.insert("stop".into(), s.stop.clone().into());
    }
    if s.ignore_eos {
        p.insert("ignore_eos".into(), true.into());
    }
    if let Some(seed) = s.seed {
        p.insert("sampling_seed".into(), seed.into());
    }
    p
}

/// The `meta_info` object. SGLang writes it after the text, so only the tail
/// after the text is searched first; the whole event is the fallback for
/// a proxy that reorders keys.
fn meta_info<'a>(json: &'a [u8], after_text: &'a [u8]) -> Option<&'a [u8]> {
    let found = scan::find(after_text, &META_INFO).or_else(|| {
        if after_text.len() < json.len() {
            scan::find(json, &META_INFO)
        } else {
            None
        }
    });
    match found {
        Some(V::Object(meta)) => Some(meta),
        _ => None,
    }
}

/// Counts and finish reason from `meta_info`. The finish reason is an object
/// (`{"type": "length", "length": 128}`), or `null` while generating.
fn read_meta(
    meta: Option<&[u8]>,
    prompt: &mut Option<u32>,
    completion: &mut Option<u32>,
    finish: &mut Option<Finish>,
) {
    let Some(meta) = meta else {
        return;
    };
    *prompt = scan::find_u32(meta, &PROMPT_TOKENS);
    *completion = scan::find_u32(meta, &COMPLETION_TOKENS);
    *finish = match scan::find(meta, &FINISH_REASON) {
        Some(V::Object(reason)) => match scan::find(reason, &TYPE) {
            Some(V::Str(kind)) => Some(Finish::from_reason(kind)),
            _ => Some(Finish::Other),
        },
        Some(V::Str(reason)) => Some(Finish::from_reason(reason)),
        _ => None,
    };
}

/// The message of a `{"type": "abort", "message": ...}` finish reason (the
/// type itself when there is no message).
fn abort_message(meta: Option<&[u8]>) -> Option<&[u8]> {
    let Some(V::Object(reason)) = scan::find(meta?, &FINISH_REASON) else {
        return None;
    };
    match scan::find(reason, &TYPE) {
        Some(V::Str(kind)) if kind == b"abort" => match scan::find(reason, &MESSAGE) {
            Some(V::Str(m)) => Some(m),
            _ => Some(kind),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Message, Sampling};

    fn body(spec: &BodySpec<'_>) -> Value {
        let mut out = Vec::new();
        Sglang.build_body(spec, &mut out);
        serde_json::from_slice(&out).unwrap()
    }

    fn spec<'a>(messages: &'a [Message], sampling: &'a Sampling) -> BodySpec<'a> {
        BodySpec {
            model: "m",
            system: None,
            messages,
            input_tokens: None,
            max_tokens: None,
            stream: false,
            sampling,
            extra_body: None,
        }
    }

    /// Feeds `events` through one stream state.
    fn stream<'a>(events: &[&'a [u8]]) -> Vec<EventInfo<'a>> {
        let mut state = StreamState::default();
        events
            .iter()
            .map(|&data| Sglang.parse_event(&SseEvent { event: b"", data }, &mut state))
            .collect()
    }

    #[test]
    fn body_carries_text_and_sampling_params() {
        let sampling = Sampling {
            temperature: Some(0.7),
            top_p: Some(0.95),
            seed: Some(42),
            stop: vec!["</s>".into(), "\n\n".into()],
            ignore_eos: true,
            min_tokens: Some(8),
        };
        let messages = [Message::user("The capital of France is")];
        let extra: Map<String, Value> = serde_json::from_str(
            r#"{"sampling_params": {"top_k": 20, "temperature": 0.1}, "return_logprob": true}"#,
        )
        .unwrap();
        let v = body(&BodySpec {
            system: Some("sys"),
            max_tokens: Some(32),
            stream: true,
            extra_body: Some(&extra),
            ..spec(&messages, &sampling)
        });
        assert_eq!(v["text"], "sys\n\nThe capital of France is");
        assert!(v.get("input_ids").is_none());
        assert!(v.get("model").is_none());
        assert_eq!(v["stream"], true);
        assert_eq!(v["return_logprob"], true);
        let p = &v["sampling_params"];
        assert_eq!(p["max_new_tokens"], 32);
        assert_eq!(p["min_new_tokens"], 8);
        assert_eq!(p["top_p"], 0.95);
        assert_eq!(p["stop"], json!(["</s>", "\n\n"]));
        assert_eq!(p["ignore_eos"], true);
        assert_eq!(p["sampling_seed"], 42);
        // Merged into ours: added, and overriding the run's setting.
        assert_eq!(p["top_k"], 20);
        assert_eq!(p["temperature"], 0.1);
    }

    #[test]
    fn body_with_token_ids_and_no_settings() {
        let sampling = Sampling::default();
        let messages = [Message::user("ignored")];
        let v = body(&BodySpec {
            input_tokens: Some(&[128000, 791, 6864]),
            ..spec(&messages, &sampling)
        });
        assert_eq!(v["input_ids"], json!([128000, 791, 6864]));
        assert!(v.get("text").is_none());
        assert_eq!(v["stream"], false);
        assert_eq!(v["sampling_params"], json!({}));
    }

    #[test]
    fn cumulative_stream_yields_deltas_and_meta_info() {
        let events: [&[u8]; 5] = [
            br#"{"text":" Paris","output_ids":[12366],"meta_info":{"id":"5b1e","finish_reason":null,"prompt_tokens":6,"weight_version":"default","completion_tokens":1,"cached_tokens":0,"e2e_latency":0.031},"index":0}"#,
            br#"{"text":" Paris.","output_ids":[12366,13],"meta_info":{"id":"5b1e","finish_reason":null,"prompt_tokens":6,"weight_version":"default","completion_tokens":2,"cached_tokens":0,"e2e_latency":0.035},"index":0}"#,
            br#"{"text":" Paris. \"It\"","output_ids":[12366,13,1102],"meta_info":{"id":"5b1e","finish_reason":{"type":"length","length":3},"prompt_tokens":6,"weight_version":"default","completion_tokens":3,"cached_tokens":0,"e2e_latency":0.04},"index":0}"#,
            b"[DONE]",
            b"",
        ];
        let infos = stream(&events);
        assert_eq!(infos[0].text, b" Paris");
        assert_eq!(
            (infos[0].prompt_tokens, infos[0].completion_tokens),
            (Some(6), Some(1))
        );
        assert_eq!(infos[0].finish, None);
        assert_eq!(infos[1].text, b".");
        assert_eq!(infos[2].text, br#" \"It\""#);
        assert_eq!(infos[2].finish, Some(Finish::Length));
        assert_eq!(infos[2].completion_tokens, Some(3));
        assert_eq!(infos[2].error, None);
        assert_eq!(infos[3], EventInfo::default());
        assert_eq!(infos[4], EventInfo::default());
    }

    #[test]
    fn repeated_or_shorter_text_is_not_output() {
        let infos = stream(&[
            br#"{"text":"abc","meta_info":{"completion_tokens":1}}"#,
            br#"{"text":"abc","meta_info":{"completion_tokens":1}}"#,
            br#"{"text":"ab","meta_info":{"completion_tokens":1}}"#,
            br#"{"text":"abcd","meta_info":{"completion_tokens":2,"finish_reason":{"type":"stop","matched":128009}}}"#,
        ]);
        assert_eq!(infos[0].text, b"abc");
        assert!(!infos[1].has_output());
        assert_eq!(infos[1].completion_tokens, Some(1));
        assert!(!infos[2].has_output());
        assert_eq!(infos[3].text, b"d");
        assert_eq!(infos[3].finish, Some(Finish::Stop));
    }

    #[test]
    fn empty_first_text_is_not_a_token() {
        let infos = stream(&[
            br#"{"text":"","output_ids":[],"meta_info":{"prompt_tokens":6,"completion_tokens":0,"finish_reason":null}}"#,
            br#"{"text":"x","meta_info":{"prompt_tokens":6,"completion_tokens":1,"finish_reason":null}}"#,
        ]);
        assert!(!infos[0].has_output());
        assert_eq!(infos[0].prompt_tokens, Some(6));
        assert_eq!(infos[1].text, b"x");
    }

    #[test]
    fn meta_info_before_text_is_still_read() {
        let infos = stream(&[
            br#"{"meta_info":{"prompt_tokens":4,"completion_tokens":2,"finish_reason":{"type":"stop","matched":"\n"}},"text":"hi"}"#,
        ]);
        assert_eq!(infos[0].text, b"hi");
        assert_eq!(
            (infos[0].prompt_tokens, infos[0].completion_tokens),
            (Some(4), Some(2))
        );
        assert_eq!(infos[0].finish, Some(Finish::Stop));
    }

    #[test]
    fn in_band_errors() {
        let infos = stream(&[
            br#"{"text":"ok","meta_info":{"completion_tokens":1}}"#,
            br#"{"error":{"message":"The input (9000 tokens) is longer than the model's context length (8192 tokens)."}}"#,
            b"[DONE]",
        ]);
        assert_eq!(
            infos[1].error,
            Some(&b"The input (9000 tokens) is longer than the model's context length (8192 tokens)."[..])
        );
        assert!(!infos[1].has_output());
        let abort = stream(&[
            br#"{"text":"","meta_info":{"id":"1","finish_reason":{"type":"abort","message":"Request aborted: queue full","status_code":503,"err_type":null},"prompt_tokens":6,"completion_tokens":0}}"#,
        ]);
        assert_eq!(abort[0].error, Some(&b"Request aborted: queue full"[..]));
        assert_eq!(abort[0].finish, Some(Finish::Stop));
        let flat = Sglang.parse_body(
            br#"{"object":"error","message":"sampling_params: top_p must be in (0, 1]","type":"Bad Request","param":null,"code":400}"#,
        );
        assert_eq!(
            flat.error,
            Some(&b"sampling_params: top_p must be in (0, 1]"[..])
        );
        let nested = Sglang.parse_body(br#"{"error":{"message":"bad input_ids"}}"#);
        assert_eq!(nested.error, Some(&b"bad input_ids"[..]));
        let bare_abort =
            Sglang.parse_body(br#"{"text":"","meta_info":{"finish_reason":{"type":"abort"}}}"#);
        assert_eq!(bare_abort.error, Some(&b"abort"[..]));
    }

    #[test]
    fn whole_body() {
        let b = Sglang.parse_body(
            br#"{"text":" Paris. It is the capital","output_ids":[12366,13,1102,374,279,6864],"meta_info":{"id":"c0","finish_reason":{"type":"length","length":6},"prompt_tokens":6,"weight_version":"default","completion_tokens":6,"cached_tokens":1,"e2e_latency":0.09}}"#,
        );
        assert_eq!(b.text, b" Paris. It is the capital");
        assert_eq!(b.finish, Some(Finish::Length));
        assert_eq!((b.prompt_tokens, b.completion_tokens), (Some(6), Some(6)));
        assert_eq!(b.error, None);
    }
}
