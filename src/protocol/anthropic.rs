//! Anthropic Messages (`/v1/messages`), as Anthropic and the gateways and
//! servers that imitate it serve it. Streams are typed: the SSE `event` name
//! (or, without one, the JSON `"type"`) picks what to read, so a text delta
//! costs one search for its `delta` object and none for usage or errors.
//! Usage arrives in two halves: input tokens in `message_start`, output
//! tokens (cumulative) in `message_delta`. The input count is kept in the
//! stream state and reported again with `message_delta`, so the last usage
//! an event reports is complete. Input tokens are `input_tokens` plus the
//! cache-creation and cache-read counts, the whole prompt as the other
//! formats count it. Text deltas are output, thinking deltas are reasoning,
//! and a tool-use block's start and its non-empty JSON deltas are other
//! output. The request carries no seed, `ignore_eos` or minimum length: the
//! API has none (extra_body can add what a compatible server accepts).

use serde_json::{Value, json};

use super::errors::error_message;
use super::scan::{self, Value as V};
use super::{BodyInfo, BodySpec, EventInfo, Finish, Protocol, StreamState, merge_extra};
use crate::http::sse::SseEvent;
use crate::json_key;

/// `max_tokens` when the run sets none: the API requires one.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 1024;

json_key!(TYPE = "type");
json_key!(DELTA = "delta");
json_key!(TEXT = "text");
json_key!(THINKING = "thinking");
json_key!(PARTIAL_JSON = "partial_json");
json_key!(CONTENT_BLOCK = "content_block");
json_key!(CONTENT = "content");
json_key!(USAGE = "usage");
json_key!(INPUT_TOKENS = "input_tokens");
json_key!(CACHE_CREATION_INPUT_TOKENS = "cache_creation_input_tokens");
json_key!(CACHE_READ_INPUT_TOKENS = "cache_read_input_tokens");
json_key!(OUTPUT_TOKENS = "output_tokens");
json_key!(STOP_REASON = "stop_reason");

/// The `anthropic` wire format.
pub(crate) struct Anthropic;

impl Protocol for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn default_path(&self) -> &'static str {
        "/v1/messages"
    }

    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", "2023-06-01")]
    }

    fn auth_headers(&self, api_key: &str) -> Vec<(String, String)> {
        vec![("x-api-key".to_string(), api_key.to_string())]
    }

    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>) {
        let messages: Vec<Value> = spec
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({
            "model": spec.model,
            "max_tokens": spec.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
            "stream": spec.stream,
        });
        if let Some(system) = spec.system {
            body["system"] = system.into();
        }
        let s = spec.sampling;
        if let Some(t) = s.temperature {
            body["temperature"] = t.into();
        }
        if let Some(p) = s.top_p {
            body["top_p"] = p.into();
        }
        if !s.stop.is_empty() {
            body["stop_sequences"] = s.stop.clone().into();
        }
        merge_extra(&mut body, spec.extra_body);
        serde_json::to_writer(out, &body).expect("writing JSON to a Vec cannot fail");
    }

    fn parse_event<'a>(&self, event: &SseEvent<'a>, state: &mut StreamState) -> EventInfo<'a> {
        let data = event.data;
        let mut info = EventInfo::default();
        let kind = if event.event.is_empty() {
            match scan::find(data, &TYPE) {
                Some(V::Str(t)) => t,
                _ => b"",
            }
        } else {
            event.event
        };
        match kind {
            b"content_block_delta" => read_delta(data, &mut info),
            b"ping" | b"content_block_stop" | b"message_stop" => {}
            b"message_start" => {
                // Its `output_tokens` is a placeholder before any output;
                // `message_delta` gives the real count.
                if let Some(n) = usage_of(data).and_then(input_tokens) {
                    state.prompt_tokens = Some(n);
                }
                info.prompt_tokens = state.prompt_tokens;
            }
            b"message_delta" => {
                if let Some(V::Str(reason)) = scan::find(data, &STOP_REASON) {
                    info.finish = Some(Finish::from_reason(reason));
                }
                if let Some(usage) = usage_of(data) {
                    info.completion_tokens = scan::find_u32(usage, &OUTPUT_TOKENS);
                    // Newer servers repeat the (cumulative) input count here.
                    if let Some(n) = input_tokens(usage) {
                        state.prompt_tokens = Some(n);
                    }
                }
                info.prompt_tokens = state.prompt_tokens;
            }
            b"content_block_start" => read_block_start(data, &mut info),
            // An error event is an error even when its body is not the
            // documented object: the raw data stands for the message then.
            b"error" => info.error = Some(error_message(data).unwrap_or(data)),
            // Without an event name the first `"type"` may be a nested one
            // (a proxy that reorders keys): a delta's type still says what
            // it is.
            b"text_delta" | b"thinking_delta" | b"input_json_delta" => {
                read_delta(data, &mut info);
            }
            // Unknown or missing types: a gateway's `{"error": ...}`.
            _ => info.error = error_message(data),
        }
        info
    }

    fn parse_body<'a>(&self, body: &'a [u8]) -> BodyInfo<'a> {
        let mut info = BodyInfo::default();
        // A message's tool-use `input` is free-form JSON that may hold an
        // `"error"` key, so only a body that is not a message is searched.
        match scan::find(body, &TYPE) {
            Some(V::Str(b"message")) => {}
            Some(V::Str(t)) if t == b"error" => info.error = Some(error_message(body).unwrap_or(t)),
            _ => info.error = error_message(body),
        }
        let mut rest = body;
        if let Some(V::Array(content)) = scan::find(body, &CONTENT) {
            // The first text block only: text after a tool call or between
            // citations is not in `text`, though usage still counts it.
            if let Some(V::Str(t)) = scan::find(content, &TEXT) {
                info.text = t;
            }
            if let Some(V::Str(r)) = scan::find(content, &THINKING) {
                info.reasoning = r;
            }
            rest = scan::after(body, content);
        }
        // Stop reason and usage follow the content; reading them from the
        // tail keeps a tool input's keys from being taken for them.
        let tail_first = |key| scan::find(rest, key).or_else(|| scan::find(body, key));
        if let Some(V::Str(reason)) = tail_first(&STOP_REASON) {
            info.finish = Some(Finish::from_reason(reason));
        }
        if let Some(V::Object(usage)) = tail_first(&USAGE) {
            info.prompt_tokens = input_tokens(usage);
            info.completion_tokens = scan::find_u32(usage, &OUTPUT_TOKENS);
        }
        info
    }
}

/// A `content_block_delta`: text, thinking, or a tool's input JSON.
/// `signature_delta` and `citations_delta` are not output.
fn read_delta<'a>(data: &'a [u8], info: &mut EventInfo<'a>) {
    let Some(V::Object(delta)) = scan::find(data, &DELTA) else {
        return;
    };
    match scan::find(delta, &TYPE) {
        Some(V::Str(b"text_delta")) => {
            if let Some(V::Str(t)) = scan::find(delta, &TEXT) {
                info.text = t;
            }
        }
        Some(V::Str(b"thinking_delta")) => {
            if let Some(V::Str(t)) = scan::find(delta, &THINKING) {
                info.reasoning = t;
            }
        }
        Some(V::Str(b"input_json_delta")) => {
            // The first input delta of a tool call is empty.
            info.other_output =
                matches!(scan::find(delta, &PARTIAL_JSON), Some(V::Str(j)) if !j.is_empty());
        }
        _ => {}
    }
}

/// A `content_block_start`. A text or thinking block normally starts empty;
/// a tool-use block's start carries the tool's name, which the model
/// generated, so it is output, as the first tool-call chunk is in chat.
fn read_block_start<'a>(data: &'a [u8], info: &mut EventInfo<'a>) {
    let Some(V::Object(block)) = scan::find(data, &CONTENT_BLOCK) else {
        return;
    };
    match scan::find(block, &TYPE) {
        Some(V::Str(b"text")) => {
            if let Some(V::Str(t)) = scan::find(block, &TEXT) {
                info.text = t;
            }
        }
        Some(V::Str(b"thinking")) => {
            if let Some(V::Str(t)) = scan::find(block, &THINKING) {
                info.reasoning = t;
            }
        }
        Some(V::Str(b"tool_use" | b"server_tool_use" | b"redacted_thinking")) => {
            info.other_output = true;
        }
        _ => {}
    }
}

/// The first `usage` object of an event.
fn usage_of(data: &[u8]) -> Option<&[u8]> {
    match scan::find(data, &USAGE)? {
        V::Object(u) => Some(u),
        _ => None,
    }
}

/// The whole prompt's tokens: uncached input plus cache writes and reads
/// (absent or `null` cache counts are zero).
fn input_tokens(usage: &[u8]) -> Option<u32> {
    let uncached = scan::find_u32(usage, &INPUT_TOKENS)?;
    let created = scan::find_u32(usage, &CACHE_CREATION_INPUT_TOKENS).unwrap_or(0);
    let read = scan::find_u32(usage, &CACHE_READ_INPUT_TOKENS).unwrap_or(0);
    Some(uncached.saturating_add(created).saturating_add(read))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Message, Sampling};

    /// Feeds `(event name, data)` pairs through one stream state.
    fn stream<'a>(events: &[(&'a [u8], &'a [u8])]) -> Vec<EventInfo<'a>> {
        let mut state = StreamState::default();
        events
            .iter()
            .map(|&(event, data)| Anthropic.parse_event(&SseEvent { event, data }, &mut state))
            .collect()
    }

    fn body(spec: &BodySpec<'_>) -> Value {
        let mut out = Vec::new();
        Anthropic.build_body(spec, &mut out);
        serde_json::from_slice(&out).unwrap()
    }

    const MESSAGE_START: &[u8] = br#"{"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#;

    #[test]
    fn body_has_required_fields_and_settings() {
        let sampling = Sampling {
            temperature: Some(0.3),
            top_p: Some(0.8),
            seed: Some(1),
            stop: vec!["\n\nHuman:".into()],
            ignore_eos: true,
            min_tokens: Some(4),
        };
        let messages = [
            Message::user("hi"),
            Message {
                role: "assistant".into(),
                content: "hello".into(),
            },
            Message::user("and \"now\"?"),
        ];
        let extra: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"thinking": {"type": "enabled", "budget_tokens": 2048}}"#)
                .unwrap();
        let v = body(&BodySpec {
            model: "claude-sonnet-4-5",
            system: Some("be brief"),
            messages: &messages,
            input_tokens: Some(&[1, 2, 3]),
            max_tokens: Some(256),
            stream: true,
            sampling: &sampling,
            extra_body: Some(&extra),
        });
        assert_eq!(v["model"], "claude-sonnet-4-5");
        assert_eq!(v["max_tokens"], 256);
        assert_eq!(v["system"], "be brief");
        assert_eq!(v["messages"].as_array().unwrap().len(), 3);
        assert_eq!(
            v["messages"][1],
            json!({"role": "assistant", "content": "hello"})
        );
        assert_eq!(v["messages"][2]["content"], "and \"now\"?");
        assert_eq!(v["stream"], true);
        assert_eq!(v["temperature"], 0.3);
        assert_eq!(v["top_p"], 0.8);
        assert_eq!(v["stop_sequences"], json!(["\n\nHuman:"]));
        assert_eq!(v["thinking"]["budget_tokens"], 2048);
        for absent in [
            "seed",
            "ignore_eos",
            "min_tokens",
            "stop",
            "stream_options",
            "prompt",
        ] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn body_defaults_max_tokens_and_omits_system() {
        let sampling = Sampling::default();
        let v = body(&BodySpec {
            model: "m",
            system: None,
            messages: &[Message::user("x")],
            input_tokens: None,
            max_tokens: None,
            stream: false,
            sampling: &sampling,
            extra_body: None,
        });
        assert_eq!(v["max_tokens"], DEFAULT_MAX_TOKENS);
        assert!(v.get("system").is_none());
        assert!(v.get("temperature").is_none());
        assert_eq!(v["stream"], false);
    }

    #[test]
    fn headers() {
        assert_eq!(
            Anthropic.fixed_headers(),
            &[("anthropic-version", "2023-06-01")]
        );
        assert_eq!(
            Anthropic.auth_headers("sk-ant-1"),
            vec![("x-api-key".to_string(), "sk-ant-1".to_string())]
        );
    }

    #[test]
    fn text_stream_with_usage_in_two_halves() {
        let infos = stream(&[
            (b"message_start", MESSAGE_START),
            (
                b"content_block_start",
                br#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            (b"ping", br#"{"type": "ping"}"#),
            (
                b"content_block_delta",
                br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            ),
            (
                b"content_block_delta",
                br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"! \"usage\": {}"}}"#,
            ),
            (b"content_block_stop", br#"{"type":"content_block_stop","index":0}"#),
            (
                b"message_delta",
                br#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            ),
            (b"message_stop", br#"{"type":"message_stop"}"#),
        ]);
        let start = infos[0];
        assert_eq!(
            (start.prompt_tokens, start.completion_tokens),
            (Some(25), None)
        );
        assert!(!start.has_output());
        assert!(!infos[1].has_output());
        assert_eq!(infos[2], EventInfo::default());
        assert_eq!(infos[3].text, b"Hello");
        assert_eq!(infos[3].prompt_tokens, None);
        assert_eq!(infos[4].text, br#"! \"usage\": {}"#);
        assert_eq!(infos[5], EventInfo::default());
        let end = infos[6];
        assert_eq!(end.finish, Some(Finish::Stop));
        assert_eq!(
            (end.prompt_tokens, end.completion_tokens),
            (Some(25), Some(15))
        );
        assert!(!end.has_output());
        assert_eq!(infos[7], EventInfo::default());
        assert!(infos.iter().all(|i| i.error.is_none()));
    }

    #[test]
    fn without_event_names_the_json_type_decides() {
        let infos = stream(&[
            (b"", MESSAGE_START),
            (b"", br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#),
            (b"", br#"{"index":0,"delta":{"type":"text_delta","text":"there"},"type":"content_block_delta"}"#),
            (b"", br#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":2}}"#),
        ]);
        assert_eq!(infos[0].prompt_tokens, Some(25));
        assert_eq!(infos[1].text, b"Hi");
        assert_eq!(infos[2].text, b"there");
        assert_eq!(infos[3].finish, Some(Finish::Length));
        assert_eq!(
            (infos[3].prompt_tokens, infos[3].completion_tokens),
            (Some(25), Some(2))
        );
    }

    #[test]
    fn cached_prompt_tokens_count_as_input() {
        let start = br#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"c","usage":{"input_tokens":3,"cache_creation_input_tokens":null,"cache_read_input_tokens":2048,"cache_creation":{"ephemeral_5m_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}"#;
        let delta = br#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":3,"cache_creation_input_tokens":10,"cache_read_input_tokens":2048,"output_tokens":40}}"#;
        let infos = stream(&[(b"message_start", start), (b"message_delta", delta)]);
        assert_eq!(infos[0].prompt_tokens, Some(2051));
        assert_eq!(
            (infos[1].prompt_tokens, infos[1].completion_tokens),
            (Some(2061), Some(40))
        );
    }

    #[test]
    fn thinking_and_tool_use_are_output() {
        let infos = stream(&[
            (
                b"content_block_start",
                br#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
            (
                b"content_block_delta",
                br#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I need to find the GCD of 1071 and 462.\n\n1071 = 2 \u00d7 462 + 147"}}"#,
            ),
            (
                b"content_block_delta",
                br#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}"#,
            ),
            (
                b"content_block_start",
                br#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
            ),
            (
                b"content_block_delta",
                br#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                b"content_block_delta",
                br#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}"#,
            ),
            (
                b"message_delta",
                br#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
            ),
        ]);
        assert!(!infos[0].has_output());
        assert!(infos[1].reasoning.starts_with(b"I need to find"));
        assert!(infos[1].text.is_empty() && infos[1].has_output());
        assert!(!infos[2].has_output());
        assert!(infos[3].other_output);
        assert!(!infos[4].has_output());
        assert!(infos[5].other_output);
        assert_eq!(infos[6].finish, Some(Finish::ToolCalls));
        assert_eq!(infos[6].completion_tokens, Some(89));
        // No message_start in this stream: no input count to repeat.
        assert_eq!(infos[6].prompt_tokens, None);
    }

    #[test]
    fn error_events() {
        let infos = stream(&[
            (b"message_start", MESSAGE_START),
            (
                b"error",
                br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            ),
            (b"", br#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#),
            (b"error", b"upstream timed out"),
            (b"", br#"{"error":{"message":"rate limited","code":429}}"#),
        ]);
        assert_eq!(infos[1].error, Some(&b"Overloaded"[..]));
        assert!(!infos[1].has_output());
        assert_eq!(infos[2].error, Some(&b"Internal server error"[..]));
        assert_eq!(infos[3].error, Some(&b"upstream timed out"[..]));
        assert_eq!(infos[4].error, Some(&b"rate limited"[..]));
    }

    #[test]
    fn whole_body() {
        let b = Anthropic.parse_body(
            br#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"Let me think.","signature":"abc"},{"type":"text","text":"The answer is 21."},{"type":"tool_use","id":"t","name":"f","input":{"error":"x","usage":{"input_tokens":1}}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":30}}"#,
        );
        assert_eq!(b.text, b"The answer is 21.");
        assert_eq!(b.reasoning, b"Let me think.");
        assert_eq!(b.finish, Some(Finish::Stop));
        assert_eq!((b.prompt_tokens, b.completion_tokens), (Some(12), Some(30)));
        assert_eq!(b.error, None);
    }

    #[test]
    fn error_bodies() {
        let b = Anthropic.parse_body(
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"},"request_id":"req_011"}"#,
        );
        assert_eq!(b.error, Some(&b"max_tokens: Field required"[..]));
        assert_eq!(b.text, b"");
        let bare = Anthropic.parse_body(br#"{"type":"error"}"#);
        assert_eq!(bare.error, Some(&b"error"[..]));
        let gateway = Anthropic.parse_body(br#"{"error":{"message":"no route"}}"#);
        assert_eq!(gateway.error, Some(&b"no route"[..]));
    }
}
