//! OpenAI chat completions (`/v1/chat/completions`), as vLLM, SGLang,
//! TensorRT-LLM and most gateways serve it. Streaming asks for
//! `stream_options.include_usage` so token counts come from the server.
//! Output is `delta.content`, plus `delta.reasoning_content` /
//! `delta.reasoning` (reasoning models) and tool-call deltas, all of which
//! count as output tokens and can be the first token.

use serde_json::{Value, json};

use super::errors::error_message;
use super::scan::{self, Value as V};
use super::{BodyInfo, BodySpec, EventInfo, Finish, Protocol, StreamState, merge_extra};
use crate::http::sse::SseEvent;
use crate::json_key;

json_key!(CONTENT = "content");

json_key!(REASONING_CONTENT = "reasoning_content");
json_key!(REASONING = "reasoning");

json_key!(TOOL_CALLS = "tool_calls");
json_key!(FINISH_REASON = "finish_reason");
json_key!(USAGE = "usage");
json_key!(PROMPT_TOKENS = "prompt_tokens");
json_key!(COMPLETION_TOKENS = "completion_tokens");

/// What the tail of a text chunk is read for, in the order `parse_event`
/// numbers them.
static TAIL_KEYS: [&[u8]; 4] = [
    b"reasoning_content",
    b"reasoning",
    b"finish_reason",
    b"usage",
];

/// How a plain text chunk ends after its text's closing quote, as vLLM
/// and the built-in server write it: nothing `TAIL_KEYS` asks for can be in
/// these bytes (a test runs the walk over them), so the walk is skipped.
static PLAIN_TAILS: [&[u8]; 2] = [
    br#"},"logprobs":null,"finish_reason":null}]}"#,
    br#"},"finish_reason":null}]}"#,
];

/// The `openai-chat` wire format.
pub(crate) struct OpenAiChat;

impl Protocol for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai-chat"
    }

    fn default_path(&self) -> &'static str {
        "/v1/chat/completions"
    }

    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>) {
        let mut messages = Vec::with_capacity(spec.messages.len() + 1);
        if let Some(system) = spec.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for m in spec.messages {
            messages.push(json!({"role": m.role, "content": m.content}));
        }
        let mut body = json!({
            "model": spec.model,
            "messages": messages,
            "stream": spec.stream,
        });
        if let Some(n) = spec.max_tokens {
            // Newer servers read max_completion_tokens, older ones max_tokens.
            body["max_tokens"] = n.into();
            body["max_completion_tokens"] = n.into();
        }
        if spec.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        sampling(&mut body, spec);
        merge_extra(&mut body, spec.extra_body);
        serde_json::to_writer(out, &body).expect("writing JSON to a Vec cannot fail");
    }

    fn parse_event<'a>(&self, event: &SseEvent<'a>, _state: &mut StreamState) -> EventInfo<'a> {
        let data = event.data;
        let mut info = EventInfo::default();
        if data == b"[DONE]" {
            return info;
        }
        // Nearly every event is a text chunk: after its `content`, only the
        // short tail is walked for what can share a chunk with text (vLLM
        // puts the last token and the finish reason together; a reasoning
        // parser can split one delta into reasoning and content; usage may
        // follow). One pass, reading each key's first value only.
        if let Some(V::Str(text)) = scan::find(data, &CONTENT)
            && !text.is_empty()
        {
            info.text = text;
            let tail = scan::after(data, text).get(1..).unwrap_or_default();
            if PLAIN_TAILS.contains(&tail) {
                return info;
            }
            let mut reasoning_content = false;
            scan::find_each(tail, &TAIL_KEYS, |k, v| match (k, v) {
                (0, Some(V::Str(r))) => {
                    info.reasoning = r;
                    reasoning_content = true;
                }
                (1, Some(V::Str(r))) if !reasoning_content => info.reasoning = r,
                (2, Some(V::Str(r))) => info.finish = Some(Finish::from_reason(r)),
                (3, Some(V::Object(u))) => {
                    info.prompt_tokens = scan::find_u32(u, &PROMPT_TOKENS);
                    info.completion_tokens = scan::find_u32(u, &COMPLETION_TOKENS);
                }
                _ => {}
            });
            return info;
        }
        // Chunks without text (role, reasoning, tool calls, finish, usage,
        // errors) are few: full searches.
        if let Some(V::Str(r)) =
            scan::find(data, &REASONING_CONTENT).or_else(|| scan::find(data, &REASONING))
        {
            info.reasoning = r;
        }
        if let Some(V::Array(calls)) = scan::find(data, &TOOL_CALLS) {
            info.other_output = calls.len() > 2;
        }
        if let Some(V::Str(reason)) = scan::find(data, &FINISH_REASON) {
            info.finish = Some(Finish::from_reason(reason));
        }
        if let Some(V::Object(usage)) = scan::find(data, &USAGE) {
            info.prompt_tokens = scan::find_u32(usage, &PROMPT_TOKENS);
            info.completion_tokens = scan::find_u32(usage, &COMPLETION_TOKENS);
        }
        info.error = error_message(data);
        info
    }

    fn parse_body<'a>(&self, body: &'a [u8]) -> BodyInfo<'a> {
        let mut info = BodyInfo::default();
        if let Some(V::Str(text)) = scan::find(body, &CONTENT) {
            info.text = text;
        }
        if let Some(V::Str(r)) =
            scan::find(body, &REASONING_CONTENT).or_else(|| scan::find(body, &REASONING))
        {
            info.reasoning = r;
        }
        if let Some(V::Str(reason)) = scan::find(body, &FINISH_REASON) {
            info.finish = Some(Finish::from_reason(reason));
        }
        if let Some(V::Object(usage)) = scan::find(body, &USAGE) {
            info.prompt_tokens = scan::find_u32(usage, &PROMPT_TOKENS);
            info.completion_tokens = scan::find_u32(usage, &COMPLETION_TOKENS);
        }
        info.error = error_message(body);
        info
    }
}

/// Adds the sampling settings the OpenAI APIs (and vLLM's extensions) take.
pub(crate) fn sampling(body: &mut Value, spec: &BodySpec<'_>) {
    let s = spec.sampling;
    if let Some(t) = s.temperature {
        body["temperature"] = t.into();
    }
    if let Some(p) = s.top_p {
        body["top_p"] = p.into();
    }
    if let Some(seed) = s.seed {
        body["seed"] = seed.into();
    }
    if !s.stop.is_empty() {
        body["stop"] = s.stop.clone().into();
    }
    if s.ignore_eos {
        body["ignore_eos"] = true.into();
    }
    if let Some(n) = s.min_tokens {
        body["min_tokens"] = n.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Message, Sampling};

    fn event(data: &[u8]) -> EventInfo<'_> {
        OpenAiChat.parse_event(&SseEvent { event: b"", data }, &mut StreamState::default())
    }

    #[test]
    fn body_has_model_messages_sampling_and_usage_request() {
        let mut out = Vec::new();
        let extra: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"top_k": 5, "stream": true}"#).unwrap();
        OpenAiChat.build_body(
            &BodySpec {
                model: "m",
                system: Some("be brief"),
                messages: &[Message::user("hi \"there\"")],
                input_tokens: None,
                max_tokens: Some(7),
                stream: true,
                sampling: &Sampling {
                    temperature: Some(0.5),
                    stop: vec!["\n\n".into()],
                    ignore_eos: true,
                    ..Sampling::default()
                },
                extra_body: Some(&extra),
            },
            &mut out,
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["model"], "m");
        assert_eq!(v["messages"][0]["role"], "system");
        assert_eq!(v["messages"][1]["content"], "hi \"there\"");
        assert_eq!(v["max_tokens"], 7);
        assert_eq!(v["max_completion_tokens"], 7);
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["temperature"], 0.5);
        assert_eq!(v["stop"][0], "\n\n");
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["top_k"], 5);
    }

    #[test]
    fn vllm_stream_events() {
        let role = br#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(event(role), EventInfo::default());
        let tok = br#"{"id":"c","choices":[{"index":0,"delta":{"content":" hello"},"finish_reason":null}]}"#;
        assert_eq!(event(tok).text, b" hello");
        let fin = br#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        let f = event(fin);
        assert_eq!(f.finish, Some(Finish::Length));
        assert!(!f.has_output());
        let usage = br#"{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}"#;
        let u = event(usage);
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(34)));
        assert_eq!(event(b"[DONE]"), EventInfo::default());
        let null_usage = br#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#;
        assert_eq!(event(null_usage).completion_tokens, None);
        let continuous = br#"{"choices":[{"delta":{"content":"ab"}}],"usage":{"prompt_tokens":3,"completion_tokens":9}}"#;
        let c = event(continuous);
        assert_eq!((c.text, c.completion_tokens), (&b"ab"[..], Some(9)));
    }

    #[test]
    fn plain_tails_hold_nothing_the_walk_reads() {
        for tail in PLAIN_TAILS {
            scan::find_each(tail, &TAIL_KEYS, |k, v| panic!("{k}: {v:?}"));
            // The text ends in an escaped quote and an escaped backslash.
            let mut data = br#"{"choices":[{"index":0,"delta":{"content":"a\"b\\"#.to_vec();
            data.push(b'"');
            data.extend_from_slice(tail);
            let e = event(&data);
            assert_eq!(e.text, br#"a\"b\\"#);
            assert_eq!((e.finish, e.completion_tokens), (None, None));
        }
        // A tail that differs by a byte is walked as before.
        let fin = br#"{"choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":"stop"}]}"#;
        assert_eq!(event(fin).finish, Some(Finish::Stop));
    }

    #[test]
    fn last_text_chunk_carries_the_finish_reason() {
        // vLLM's final chunk: the last token's text with the finish reason.
        let last = br#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" end"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}"#;
        let l = event(last);
        assert_eq!((l.text, l.finish), (&b" end"[..], Some(Finish::Length)));
        let tools =
            br#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"tool_calls"}]}"#;
        assert_eq!(event(tools).finish, Some(Finish::ToolCalls));
        let filtered = br#"{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#;
        assert_eq!(event(filtered).finish, Some(Finish::ContentFilter));
    }

    #[test]
    fn reasoning_and_content_in_one_chunk() {
        let both = br#"{"choices":[{"index":0,"delta":{"content":"Answer","reasoning_content":" done."},"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":1}}}"#;
        let b = event(both);
        assert_eq!((b.text, b.reasoning), (&b"Answer"[..], &b" done."[..]));
        assert_eq!(b.completion_tokens, Some(2));
    }

    #[test]
    fn reasoning_and_tool_calls_count_as_output() {
        let r = event(br#"{"choices":[{"delta":{"content":null,"reasoning_content":"hmm"}}]}"#);
        assert_eq!(r.reasoning, b"hmm");
        assert!(r.has_output());
        let r = event(br#"{"choices":[{"delta":{"reasoning":"so"}}]}"#);
        assert_eq!(r.reasoning, b"so");
        let t = event(
            br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a"}}]}}]}"#,
        );
        assert!(t.other_output && t.has_output());
        let empty = event(br#"{"choices":[{"delta":{"content":null,"tool_calls":[]}}]}"#);
        assert!(!empty.has_output());
    }

    #[test]
    fn in_band_errors() {
        let e = event(br#"{"error":{"message":"overloaded","type":"server_error"}}"#);
        assert_eq!(e.error, Some(&b"overloaded"[..]));
        let b = OpenAiChat.parse_body(br#"{"error":"bad model"}"#);
        assert_eq!(b.error, Some(&b"bad model"[..]));
        // vLLM's streamed error wraps its flat error object.
        let v = event(
            br#"{"error":{"object":"error","message":"Request exceeds max length","type":"BadRequestError","param":null,"code":400}}"#,
        );
        assert_eq!(v.error, Some(&b"Request exceeds max length"[..]));
        let flat = OpenAiChat.parse_body(
            br#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#,
        );
        assert_eq!(flat.error, Some(&b"The model `x` does not exist."[..]));
        let untold = OpenAiChat.parse_body(br#"{"object":"error","code":500}"#);
        assert_eq!(untold.error, Some(&b"error"[..]));
        let not_error = OpenAiChat.parse_body(
            br#"{"object":"chat.completion","error":null,"choices":[{"message":{"content":"ok"}}]}"#,
        );
        assert_eq!((not_error.error, not_error.text), (None, &b"ok"[..]));
    }

    #[test]
    fn whole_body() {
        let body = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a b c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}"#;
        let b = OpenAiChat.parse_body(body);
        assert_eq!(b.text, b"a b c");
        assert_eq!(b.finish, Some(Finish::Stop));
        assert_eq!((b.prompt_tokens, b.completion_tokens), (Some(3), Some(5)));
        assert_eq!(b.error, None);
    }
}
