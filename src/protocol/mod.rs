//! Wire formats: the only place a request body is built or a response is
//! read. A protocol is one file here and one line in `ALL`; the engine, the
//! collector and the report never branch on which one is in use. Response
//! parsing scans JSON in place (`scan`) instead of building a tree, because
//! it runs on a worker's hot path for every SSE event.

pub(crate) mod anthropic;
pub(crate) mod errors;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod json;
pub(crate) mod openai_chat;
pub(crate) mod openai_completions;
pub(crate) mod scan;
pub(crate) mod sglang;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use crate::http::sse::SseEvent;

/// One message of a normalized conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// `user` or `assistant` (a dataset may carry others; they are passed on).
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user".to_string(),
            content: content.into(),
        }
    }
}

/// Sampling settings shared by every request of a run; `None` is not sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub seed: Option<u64>,
    pub stop: Vec<String>,
    /// Ask the server to ignore end-of-sequence (vLLM, SGLang, TensorRT-LLM),
    /// so every response has exactly the requested length.
    pub ignore_eos: bool,
    /// Lower bound on output tokens, where the format has one.
    pub min_tokens: Option<u32>,
}

/// What goes into one request body.
#[derive(Clone, Copy, Debug)]
pub struct BodySpec<'a> {
    pub model: &'a str,
    pub system: Option<&'a str>,
    /// The conversation, oldest first, without the system prompt; the last
    /// message is the user turn to answer. Text-completion formats send the
    /// contents joined by blank lines.
    pub messages: &'a [Message],
    /// A pre-tokenized prompt: formats that accept token ids send these
    /// instead of the text; the others ignore them.
    pub input_tokens: Option<&'a [u32]>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
    pub sampling: &'a Sampling,
    /// Merged into the top level of the body last, overriding what is there.
    pub extra_body: Option<&'a Map<String, Value>>,
}

/// Why generation stopped, as far as reports distinguish.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Finish {
    /// Not reported.
    #[default]
    None = 0,
    /// A natural end: `stop`, `end_turn`, `stop_sequence`, `eos`.
    Stop = 1,
    /// The token limit: `length`, `max_tokens`.
    Length = 2,
    /// `tool_calls`, `tool_use`, `function_call`.
    ToolCalls = 3,
    /// `content_filter`, `refusal`.
    ContentFilter = 4,
    /// Anything else.
    Other = 5,
}

impl Finish {
    pub const ALL: [Finish; 6] = [
        Finish::None,
        Finish::Stop,
        Finish::Length,
        Finish::ToolCalls,
        Finish::ContentFilter,
        Finish::Other,
    ];

    /// Maps a reason string as servers spell it (raw JSON string bytes).
    pub fn from_reason(reason: &[u8]) -> Finish {
        match reason {
            b"stop" | b"end_turn" | b"stop_sequence" | b"eos" | b"abort" => Finish::Stop,
            b"length" | b"max_tokens" => Finish::Length,
            b"tool_calls" | b"tool_use" | b"function_call" => Finish::ToolCalls,
            b"content_filter" | b"refusal" => Finish::ContentFilter,
            _ => Finish::Other,
        }
    }

    pub fn from_u8(b: u8) -> Finish {
        Finish::ALL
            .get(b as usize)
            .copied()
            .unwrap_or(Finish::Other)
    }

    pub fn name(self) -> &'static str {
        match self {
            Finish::None => "none",
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::ToolCalls => "tool_calls",
            Finish::ContentFilter => "content_filter",
            Finish::Other => "other",
        }
    }
}

/// Per-response state a protocol may keep between the events of one stream
/// (reset by the worker for every response). Plain data, no allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamState {
    /// Bytes of cumulative text already seen (formats that resend the whole
    /// text in every event, like SGLang's `/generate`).
    pub text_seen: usize,
    /// Input tokens reported early in the stream (Anthropic's `message_start`).
    pub prompt_tokens: Option<u32>,
}

/// What one SSE event carried, as far as measurement cares. Slices are the
/// raw bytes between JSON quotes (escapes left in place).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventInfo<'a> {
    /// New output text in this event; empty when none (a role-only chunk).
    pub text: &'a [u8],
    /// New reasoning text (`reasoning_content`, `thinking`): counts as output
    /// and can be the first token.
    pub reasoning: &'a [u8],
    /// Output that is not text, such as a tool-call delta: the event counts as
    /// a token event.
    pub other_output: bool,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    pub finish: Option<Finish>,
    /// An in-band error event: its message.
    pub error: Option<&'a [u8]>,
}

impl EventInfo<'_> {
    /// Whether the event carries output (text, reasoning or otherwise).
    pub fn has_output(&self) -> bool {
        !self.text.is_empty() || !self.reasoning.is_empty() || self.other_output
    }
}

/// What a whole (non-streamed) response body carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyInfo<'a> {
    pub text: &'a [u8],
    pub reasoning: &'a [u8],
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    pub finish: Option<Finish>,
    /// A JSON error object delivered with a success status: its message.
    pub error: Option<&'a [u8]>,
}

/// A wire format.
pub trait Protocol: Sync {
    /// The `--api` name.
    fn name(&self) -> &'static str;
    /// Path used when `--endpoint` gives none.
    fn default_path(&self) -> &'static str;
    /// Headers every request of this format carries (e.g. `anthropic-version`).
    fn fixed_headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Headers that carry an API key in this format (a Bearer token unless
    /// the format says otherwise).
    fn auth_headers(&self, api_key: &str) -> Vec<(String, String)> {
        vec![("Authorization".to_string(), format!("Bearer {api_key}"))]
    }
    /// Appends the JSON request body to `out`.
    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>);
    /// Reads one SSE event in place. Hot path: no allocation.
    fn parse_event<'a>(&self, event: &SseEvent<'a>, state: &mut StreamState) -> EventInfo<'a>;
    /// Reads a complete non-streamed body in place. Hot path: no allocation.
    fn parse_body<'a>(&self, body: &'a [u8]) -> BodyInfo<'a>;
}

/// Every wire format, by `--api` name.
pub static ALL: &[&dyn Protocol] = &[
    &openai_chat::OpenAiChat,
    &openai_completions::OpenAiCompletions,
    &sglang::Sglang,
    &anthropic::Anthropic,
];

/// The protocol called `name`, or a message listing the known ones.
pub fn find(name: &str) -> Result<&'static dyn Protocol, String> {
    ALL.iter()
        .copied()
        .find(|p| p.name() == name)
        .ok_or_else(|| format!("unknown --api '{name}'; known: {}", names().join(", ")))
}

/// The `--api` names, in registration order.
pub fn names() -> Vec<&'static str> {
    ALL.iter().map(|p| p.name()).collect()
}

/// Merges `extra` into the top level of `body` (later keys win).
pub fn merge_extra(body: &mut Value, extra: Option<&Map<String, Value>>) {
    if let (Some(obj), Some(extra)) = (body.as_object_mut(), extra) {
        for (k, v) in extra {
            obj.insert(k.clone(), v.clone());
        }
    }
}
