//! OpenAI text completions (`/v1/completions`), as vLLM, SGLang and
//! TensorRT-LLM serve it: no chat template, so the prompt reaches the model as
//! given — the system prompt and the conversation joined by blank lines, or
//! the dataset's token ids verbatim, which is what makes input lengths exact.
//! Output is `choices[0].text`; usage, finish reasons and in-band errors read
//! as in chat. The parser takes the first `"text"` key of an event, so with
//! `n > 1` only the first choice in each chunk is counted.

use serde_json::{Value, json};

use super::errors::error_message;
use super::openai_chat::sampling;
use super::scan::{self, Value as V};
use super::{BodyInfo, BodySpec, EventInfo, Finish, Protocol, StreamState, merge_extra};
use crate::http::sse::SseEvent;
use crate::json_key;

json_key!(TEXT = "text");
json_key!(FINISH_REASON = "finish_reason");
json_key!(USAGE = "usage");
json_key!(PROMPT_TOKENS = "prompt_tokens");
json_key!(COMPLETION_TOKENS = "completion_tokens");

/// The `openai-completions` wire format.
pub(crate) struct OpenAiCompletions;

impl Protocol for OpenAiCompletions {
    fn name(&self) -> &'static str {
        "openai-completions"
    }

    fn default_path(&self) -> &'static str {
        "/v1/completions"
    }

    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>) {
        let prompt = match spec.input_tokens {
            Some(ids) => Value::from(ids),
            None => prompt_text(spec).into(),
        };
        let mut body = json!({
            "model": spec.model,
            "prompt": prompt,
            "stream": spec.stream,
        });
        if let Some(n) = spec.max_tokens {
            body["max_tokens"] = n.into();
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
        // The choice's finish reason and the usage both follow its text, so a
        // text chunk (vLLM puts the last text and the finish reason in one)
        // only reads the tail after the text.
        let mut rest = data;
        if let Some(V::Str(text)) = scan::find(data, &TEXT) {
            info.text = text;
            rest = scan::after(data, text);
        }
        if let Some(V::Str(reason)) = scan::find(rest, &FINISH_REASON) {
            info.finish = Some(Finish::from_reason(reason));
        }
        if info.text.is_empty() {
            info.error = error_message(data);
        }
        if let Some(V::Object(usage)) = scan::find(rest, &USAGE) {
            info.prompt_tokens = scan::find_u32(usage, &PROMPT_TOKENS);
            info.completion_tokens = scan::find_u32(usage, &COMPLETION_TOKENS);
        }
        info
    }

    fn parse_body<'a>(&self, body: &'a [u8]) -> BodyInfo<'a> {
        let mut info = BodyInfo::default();
        if let Some(V::Str(text)) = scan::find(body, &TEXT) {
            info.text = text;
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

/// The text prompt of a format without roles: the system prompt and every
/// message's content, joined by blank lines.
pub(crate) fn prompt_text(spec: &BodySpec<'_>) -> String {
    let parts = spec
        .system
        .into_iter()
        .chain(spec.messages.iter().map(|m| m.content.as_str()));
    let mut text = String::new();
    for (i, part) in parts.enumerate() {
        if i > 0 {
            text.push_str("\n\n");
        }
        text.push_str(part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Message, Sampling};

    fn event(data: &[u8]) -> EventInfo<'_> {
        OpenAiCompletions.parse_event(&SseEvent { event: b"", data }, &mut StreamState::default())
    }

    fn body(spec: &BodySpec<'_>) -> Value {
        let mut out = Vec::new();
        OpenAiCompletions.build_body(spec, &mut out);
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

    #[test]
    fn text_prompt_joins_system_and_messages() {
        let sampling = Sampling {
            temperature: Some(0.0),
            top_p: Some(0.9),
            seed: Some(7),
            stop: vec!["###".into()],
            ignore_eos: true,
            min_tokens: Some(16),
        };
        let messages = [
            Message::user("first"),
            Message {
                role: "assistant".into(),
                content: "reply".into(),
            },
            Message::user("second \"quoted\""),
        ];
        let extra: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"top_k": 5, "max_tokens": 9}"#).unwrap();
        let v = body(&BodySpec {
            system: Some("sys"),
            max_tokens: Some(64),
            stream: true,
            extra_body: Some(&extra),
            ..spec(&messages, &sampling)
        });
        assert_eq!(v["model"], "m");
        assert_eq!(v["prompt"], "sys\n\nfirst\n\nreply\n\nsecond \"quoted\"");
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["temperature"], 0.0);
        assert_eq!(v["top_p"], 0.9);
        assert_eq!(v["seed"], 7);
        assert_eq!(v["stop"], json!(["###"]));
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["min_tokens"], 16);
        assert_eq!(v["top_k"], 5);
        // extra_body wins over what the run set.
        assert_eq!(v["max_tokens"], 9);
        assert!(v.get("max_completion_tokens").is_none());
        assert!(v.get("messages").is_none());
    }

    #[test]
    fn token_ids_replace_the_text_prompt() {
        let sampling = Sampling::default();
        let messages = [Message::user("ignored")];
        let v = body(&BodySpec {
            input_tokens: Some(&[1, 15043, 3186]),
            max_tokens: Some(3),
            ..spec(&messages, &sampling)
        });
        assert_eq!(v["prompt"], json!([1, 15043, 3186]));
        assert_eq!(v["max_tokens"], 3);
        assert_eq!(v["stream"], false);
        for absent in [
            "stream_options",
            "temperature",
            "seed",
            "stop",
            "ignore_eos",
            "min_tokens",
        ] {
            assert!(v.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn single_message_prompt_has_no_separator() {
        let sampling = Sampling::default();
        let messages = [Message::user("only")];
        assert_eq!(body(&spec(&messages, &sampling))["prompt"], "only");
    }

    #[test]
    fn vllm_stream_events() {
        let tok = br#"{"id":"cmpl-8a4b","object":"text_completion","created":1718000000,"model":"meta-llama/Llama-3.1-8B","choices":[{"index":0,"text":" Paris","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#;
        let t = event(tok);
        assert_eq!(t.text, b" Paris");
        assert_eq!((t.finish, t.completion_tokens, t.error), (None, None, None));
        // The last token and the finish reason arrive together.
        let last = br#"{"id":"cmpl-8a4b","object":"text_completion","created":1718000000,"model":"m","choices":[{"index":0,"text":".","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":null}"#;
        let l = event(last);
        assert_eq!((l.text, l.finish), (&b"."[..], Some(Finish::Length)));
        let eos = br#"{"choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"stop","stop_reason":128009}]}"#;
        let e = event(eos);
        assert!(!e.has_output());
        assert_eq!(e.finish, Some(Finish::Stop));
        let usage = br#"{"id":"cmpl-8a4b","object":"text_completion","created":1718000000,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":21,"completion_tokens":16}}"#;
        let u = event(usage);
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(5), Some(16)));
        assert_eq!(event(b"[DONE]"), EventInfo::default());
    }

    #[test]
    fn continuous_usage_and_logprobs_do_not_confuse_the_text() {
        let chunk = br#"{"choices":[{"index":0,"text":" say \"text\": no","logprobs":{"text_offset":[0],"token_logprobs":[-0.1],"tokens":[" say"],"top_logprobs":null},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#;
        let c = event(chunk);
        assert_eq!(c.text, br#" say \"text\": no"#);
        assert_eq!((c.prompt_tokens, c.completion_tokens), (Some(3), Some(2)));
    }

    #[test]
    fn in_band_errors() {
        let e = event(
            br#"{"error":{"object":"error","message":"maximum context length exceeded","type":"BadRequestError","param":null,"code":400}}"#,
        );
        assert_eq!(e.error, Some(&b"maximum context length exceeded"[..]));
        assert!(!e.has_output());
        let flat = OpenAiCompletions.parse_body(
            br#"{"object":"error","message":"model not found","type":"NotFoundError","param":null,"code":404}"#,
        );
        assert_eq!(flat.error, Some(&b"model not found"[..]));
    }

    #[test]
    fn whole_body() {
        let b = OpenAiCompletions.parse_body(
            br#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a b c","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_logprobs":null}],"usage":{"prompt_tokens":4,"total_tokens":7,"completion_tokens":3}}"#,
        );
        assert_eq!(b.text, b" a b c");
        assert_eq!(b.finish, Some(Finish::Length));
        assert_eq!((b.prompt_tokens, b.completion_tokens), (Some(4), Some(3)));
        assert_eq!(b.error, None);
    }
}
