//! Wire formats: the only place a request body is built or a response is
//! read. A protocol is one file here and one line in `ALL`; the engine, the
//! collector and the report never branch on which one is in use. Response
//! parsing scans JSON in place (`scan`) instead of building a tree, because
//! it runs on a worker's hot path for every SSE event.

pub mod openai_chat;
pub mod scan;

use crate::http::sse::SseEvent;

/// One prompt as the user supplied it.
#[derive(Clone, Copy, Debug)]
pub struct Prompt<'a> {
    pub system: Option<&'a str>,
    pub user: &'a str,
}

/// What goes into one request body.
#[derive(Clone, Copy, Debug)]
pub struct BodySpec<'a> {
    pub model: &'a str,
    pub prompt: Prompt<'a>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
}

/// What one SSE event carried, as far as measurement cares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventInfo {
    /// Bytes of output text (as escaped on the wire); 0 when the event carries
    /// none, e.g. a role-only first chunk.
    pub text_bytes: u32,
    /// `usage.prompt_tokens`, when the event reports usage.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`, when the event reports usage.
    pub completion_tokens: Option<u32>,
    /// A finish reason was given.
    pub finish: bool,
}

/// What a whole (non-streamed) response body carried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BodyInfo {
    pub text_bytes: u32,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
}

/// A wire format.
pub trait Protocol: Sync {
    /// The `--api` name.
    fn name(&self) -> &'static str;
    /// Path used when `--endpoint` gives none.
    fn default_path(&self) -> &'static str;
    /// Headers that carry an API key in this format.
    fn auth_headers(&self, api_key: &str) -> Vec<(String, String)>;
    /// Appends the JSON request body to `out`.
    fn build_body(&self, spec: &BodySpec<'_>, out: &mut Vec<u8>);
    /// Reads one SSE event in place. Hot path: no allocation.
    fn parse_event(&self, event: &SseEvent<'_>) -> EventInfo;
    /// Reads a complete non-streamed body in place. Hot path: no allocation.
    fn parse_body(&self, body: &[u8]) -> BodyInfo;
}

/// Every wire format, by `--api` name.
pub static ALL: &[&dyn Protocol] = &[&openai_chat::OpenAiChat];

/// The protocol called `name`, or a message listing the known ones.
pub fn find(name: &str) -> Result<&'static dyn Protocol, String> {
    ALL.iter()
        .copied()
        .find(|p| p.name() == name)
        .ok_or_else(|| {
            let known: Vec<_> = ALL.iter().map(|p| p.name()).collect();
            format!("unknown --api '{name}'; known: {}", known.join(", "))
        })
}
