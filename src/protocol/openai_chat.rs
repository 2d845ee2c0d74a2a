//! OpenAI chat completions (`/v1/chat/completions`), as vLLM, SGLang,
//! TensorRT-LLM and most gateways serve it. Streaming asks for
//! `stream_options.include_usage` so token counts come from the server.

use super::scan::{self, Value};
use super::{BodyInfo, BodySpec, EventInfo, Protocol};
use crate::http::sse::SseEvent;
use crate::json_key;

json_key!(CONTENT = "content");
json_key!(FINISH_REASON = "finish_reason");
json_key!(USAGE = "usage");
json_key!(PROMPT_TOKENS = "prompt_tokens");
json_key!(COMPLETION_TOKENS = "completion_tokens");

/// The `openai-chat` wire format.
pub struct OpenAiChat;

impl Protocol for OpenAiChat {
    fn name(&self) -> &'static str {
        "openai-chat"
    }

    fn default_path(&self) -> &'static str {
        "/v1/chat/completions"
    }

    fn auth_headers(&self, api_key: &str) -> Vec<(String, String)> {
        vec![("Authorization".to_string(), format!("Bearer {api_key}"))]
    }

    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>) {
        let mut messages = Vec::with_capacity(2);
        if let Some(system) = spec.prompt.system {
            messages.push(serde_json::json!({"role": "system", "content": system}));
        }
        messages.push(serde_json::json!({"role": "user", "content": spec.prompt.user}));
        let mut body = serde_json::json!({
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
            body["stream_options"] = serde_json::json!({"include_usage": true});
        }
        serde_json::to_writer(out, &body).expect("writing JSON to a Vec cannot fail");
    }

    fn parse_event(&self, event: &SseEvent<'_>) -> EventInfo {
        let data = event.data;
        let mut info = EventInfo::default();
        if data == b"[DONE]" {
            return info;
        }
        // Where the usage search starts: OpenAI-style chunks put `usage` after
        // `choices`, so on a text chunk only the tail after the text is read.
        let mut rest = data;
        if let Some(Value::Str(text)) = scan::find(data, &CONTENT) {
            info.text_bytes = text.len() as u32;
            let end = text.as_ptr() as usize - data.as_ptr() as usize + text.len();
            rest = &data[end..];
        }
        // Servers end with a text-free chunk carrying the finish reason, so
        // the search is skipped on the many text chunks.
        if info.text_bytes == 0
            && let Some(Value::Str(_)) = scan::find(data, &FINISH_REASON)
        {
            info.finish = true;
        }
        if let Some(Value::Object(usage)) = scan::find(rest, &USAGE) {
            info.prompt_tokens = scan::find_u32(usage, &PROMPT_TOKENS);
            info.completion_tokens = scan::find_u32(usage, &COMPLETION_TOKENS);
        }
        info
    }

    fn parse_body(&self, body: &[u8]) -> BodyInfo {
        let mut info = BodyInfo::default();
        if let Some(Value::Str(text)) = scan::find(body, &CONTENT) {
            info.text_bytes = text.len() as u32;
        }
        if let Some(Value::Object(usage)) = scan::find(body, &USAGE) {
            info.prompt_tokens = scan::find_u32(usage, &PROMPT_TOKENS);
            info.completion_tokens = scan::find_u32(usage, &COMPLETION_TOKENS);
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Prompt;

    fn event(data: &[u8]) -> EventInfo {
        OpenAiChat.parse_event(&SseEvent { event: b"", data })
    }

    #[test]
    fn body_has_model_messages_and_usage_request() {
        let mut out = Vec::new();
        OpenAiChat.build_body(
            &BodySpec {
                model: "m",
                prompt: Prompt {
                    system: Some("be brief"),
                    user: "hi \"there\"",
                },
                max_tokens: Some(7),
                stream: true,
            },
            &mut out,
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["model"], "m");
        assert_eq!(v["messages"][0]["role"], "system");
        assert_eq!(v["messages"][1]["content"], "hi \"there\"");
        assert_eq!(v["max_tokens"], 7);
        assert_eq!(v["max_completion_tokens"], 7);
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
    }

    #[test]
    fn vllm_stream_events() {
        let role = br#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(event(role), EventInfo::default());
        let tok = br#"{"id":"c","choices":[{"index":0,"delta":{"content":" hello"},"finish_reason":null}]}"#;
        assert_eq!(event(tok).text_bytes, 6);
        let fin = br#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        let f = event(fin);
        assert!(f.finish);
        assert_eq!(f.text_bytes, 0);
        let usage = br#"{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}"#;
        let u = event(usage);
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(34)));
        assert_eq!(event(b"[DONE]"), EventInfo::default());
        let null_usage = br#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#;
        assert_eq!(event(null_usage).completion_tokens, None);
        let continuous = br#"{"choices":[{"delta":{"content":"ab"}}],"usage":{"prompt_tokens":3,"completion_tokens":9}}"#;
        let c = event(continuous);
        assert_eq!((c.text_bytes, c.completion_tokens), (2, Some(9)));
        let null_content = br#"{"choices":[{"delta":{"content":null,"tool_calls":[]}}]}"#;
        assert_eq!(event(null_content).text_bytes, 0);
    }

    #[test]
    fn whole_body() {
        let body = br#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a b c"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}"#;
        let b = OpenAiChat.parse_body(body);
        assert_eq!(b.text_bytes, 5);
        assert_eq!((b.prompt_tokens, b.completion_tokens), (Some(3), Some(5)));
    }
}
