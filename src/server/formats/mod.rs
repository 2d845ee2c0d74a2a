//! The wire formats the mock speaks, one module each: OpenAI chat
//! (`chat`), OpenAI text completions (`completions`), SGLang's native
//! `/generate` (`sglang`) and Anthropic messages (`anthropic`), with what
//! the OpenAI two share in `openai`. Each turns a request body into the
//! same few facts (`Request`) and renders every response byte from the same
//! few facts (`Reply`), so the connection's pacing and fault logic is
//! written once and never branches on the format; this module is the one
//! `match` between the two.
//!
//! Parsing borrows from the request buffer and reduces prompts to counts
//! inside serde visitors (`json`), so a request allocates nothing unless its
//! model name holds JSON escapes. Rendering appends fixed byte strings,
//! decimal numbers and the fixed vocabulary (`text`) to buffers the
//! connection reuses, never going through `fmt`.

pub(crate) mod anthropic;
pub(crate) mod chat;
pub(crate) mod completions;
pub(crate) mod json;
pub(crate) mod openai;
pub mod prompt;
pub mod reply_text;
pub(crate) mod sglang;
pub mod text;

use std::borrow::Cow;

use crate::ascii::push_hex;
use crate::http::chunked::write_chunk;
pub use reply_text::{Output, ReplyText};

/// The model named in `/v1/models` and in responses to requests that name
/// none, unless `--served-model` says otherwise.
pub const MODEL: &str = "llmload-mock";

/// Output tokens when neither the server nor the request sets a number.
pub const DEFAULT_OUTPUT_TOKENS: u32 = 128;

/// Most output tokens one response may ask for.
pub const MAX_OUTPUT_TOKENS: u32 = 1 << 20;

/// Most output tokens of a response that is not streamed: such a body is
/// built whole in memory (about 5 bytes a token, so at most about 700 KB),
/// while a stream is produced as the client reads it.
pub const MAX_BODY_TOKENS: u32 = 1 << 17;

/// What every server-sent event's data line starts with.
const DATA: &[u8] = b"data: ";

/// A generation endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `POST /v1/chat/completions`
    Chat,
    /// `POST /v1/completions`
    Completions,
    /// `POST /generate` (SGLang)
    Generate,
    /// `POST /v1/messages` (Anthropic)
    Messages,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Chat,
        Format::Completions,
        Format::Generate,
        Format::Messages,
    ];

    pub fn path(self) -> &'static str {
        match self {
            Format::Chat => "/v1/chat/completions",
            Format::Completions => "/v1/completions",
            Format::Generate => "/generate",
            Format::Messages => "/v1/messages",
        }
    }

    /// Parses a request body, or returns the message for a 400.
    pub fn parse(self, body: &[u8]) -> Result<Request<'_>, String> {
        match self {
            Format::Chat => chat::parse(body),
            Format::Completions => completions::parse(body),
            Format::Generate => sglang::parse(body),
            Format::Messages => anthropic::parse(body),
        }
    }

    /// The request field that sets the output length, for error messages.
    pub fn max_tokens_field(self) -> &'static str {
        match self {
            Format::Chat => "max_completion_tokens / max_tokens",
            Format::Completions | Format::Messages => "max_tokens",
            Format::Generate => "sampling_params.max_new_tokens",
        }
    }

    /// Whether the format can tell reasoning tokens from text.
    fn has_reasoning(self) -> bool {
        matches!(self, Format::Chat | Format::Messages)
    }
}

/// The facts the server needs from a generation request, in any format.
#[derive(Debug)]
pub struct Request<'a> {
    /// The model as sent (JSON escapes already resolved), if any.
    pub model: Option<Cow<'a, str>>,
    /// Messages in the conversation (1 for the single-prompt formats).
    pub messages: u32,
    /// Prompt words, or token ids when the prompt was sent as ids.
    pub prompt_tokens: u64,
    pub stream: bool,
    /// `stream_options.include_usage` (OpenAI formats only).
    pub include_usage: bool,
    /// The format's output-length field, if set.
    pub max_tokens: Option<u64>,
}

/// Per-response identity: unique within the server (worker index and the
/// worker's response count), the creation time, and the model to echo.
pub struct Identity<'a> {
    pub worker: u32,
    pub seq: u64,
    /// Unix seconds.
    pub created: u64,
    pub model: &'a str,
}

/// Why a response ended, as its finish reason says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// At the output length asked for (`length`; Anthropic's `max_tokens`).
    Length,
    /// The reply was said in full (`stop`; Anthropic's `end_turn`).
    Stop,
}

/// The facts every byte of one response is rendered from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub format: Format,
    /// Output tokens in total.
    pub n: u32,
    pub finish: Finish,
    /// How many of the first output tokens are reasoning: at most `n`, and 0
    /// for formats without reasoning.
    pub reasoning: u32,
    pub prompt: u64,
    pub include_usage: bool,
    /// Non-streamed OpenAI bodies carry `usage` (real servers always do).
    pub body_usage: bool,
}

impl Reply {
    /// `reasoning` is the server's setting, capped here to what the
    /// response can hold.
    pub fn new(format: Format, n: u32, reasoning: u32, prompt: u64, include_usage: bool) -> Self {
        Reply {
            format,
            n,
            finish: Finish::Length,
            reasoning: if format.has_reasoning() {
                reasoning.min(n)
            } else {
                0
            },
            prompt,
            include_usage,
            body_usage: true,
        }
    }
}

/// Where stream events go: each one its own HTTP chunk when `chunked`, so a
/// client sees every event the moment it is due; appended bare otherwise.
pub struct Events<'a> {
    out: &'a mut Vec<u8>,
    scratch: &'a mut Vec<u8>,
    chunked: bool,
}

impl<'a> Events<'a> {
    pub fn new(out: &'a mut Vec<u8>, scratch: &'a mut Vec<u8>, chunked: bool) -> Self {
        Events {
            out,
            scratch,
            chunked,
        }
    }

    /// Appends one whole event, as `f` writes it. Chunked, the event is
    /// staged in `scratch` to learn its size; per-token events use
    /// `push_sized` instead, which skips that copy.
    #[inline]
    pub fn push(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        if self.chunked {
            self.scratch.clear();
            f(self.scratch);
            write_chunk(self.out, self.scratch);
        } else {
            f(self.out);
        }
    }

    /// Appends one event that `f` writes in exactly `len` bytes, straight
    /// into the output. `f` has a single call site so that it inlines.
    #[inline]
    pub fn push_sized(&mut self, len: usize, f: impl FnOnce(&mut Vec<u8>)) {
        if self.chunked {
            self.out.reserve(len + 12);
            push_hex(self.out, len);
            self.out.extend_from_slice(b"\r\n");
        }
        let start = self.out.len();
        f(self.out);
        debug_assert_eq!(self.out.len() - start, len, "declared event size");
        if self.chunked {
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// Appends `data: <payload>\n\n`.
    pub fn data(&mut self, payload: &[u8]) {
        self.push(|b| {
            b.extend_from_slice(b"data: ");
            b.extend_from_slice(payload);
            b.extend_from_slice(b"\n\n");
        });
    }
}

/// Builds the per-response `prefix` a format reuses for its events, and
/// sends the events due on arrival (if the format has any).
pub fn start(r: &Reply, id: &Identity<'_>, prefix: &mut Vec<u8>, ev: &mut Events<'_>) {
    match r.format {
        Format::Chat => chat::start(id, prefix, ev),
        Format::Completions => completions::start(id, prefix),
        Format::Generate => sglang::start(r, id, prefix),
        Format::Messages => anthropic::start(r, id, ev),
    }
}

/// The event(s) for output token `k`, due at arrival + ttft + k·tpot.
#[inline]
pub fn token(r: &Reply, prefix: &[u8], k: u32, ev: &mut Events<'_>) {
    match r.format {
        Format::Chat => chat::token_event(r, prefix, k, ev),
        Format::Completions => completions::token_event(prefix, k, ev),
        Format::Generate => sglang::token_event(r, prefix, k, ev),
        Format::Messages => anthropic::token_events(r, k, ev),
    }
}

/// An output event carrying `text` (JSON-safe, such as whole vocabulary
/// cycles) in place of token `k`'s word, for streams that test how much
/// text a client keeps. SGLang's events repeat the whole text so far, so
/// there it stays token `k`'s event.
pub fn text_event(r: &Reply, prefix: &[u8], k: u32, text: &[u8], ev: &mut Events<'_>) {
    match r.format {
        Format::Chat => chat::text_event(prefix, text, ev),
        Format::Completions => completions::text_event(prefix, text, ev),
        Format::Generate => sglang::token_event(r, prefix, k, ev),
        Format::Messages => anthropic::text_event(r, text, ev),
    }
}

/// The event(s) for chunk `k` of a text reply, due when token `k` is.
pub fn chunk_event(r: &Reply, prefix: &[u8], k: u32, text: &ReplyText, ev: &mut Events<'_>) {
    match r.format {
        Format::Chat => chat::text_event(prefix, text.chunk(k), ev),
        Format::Completions => completions::text_event(prefix, text.chunk(k), ev),
        Format::Generate => sglang::output_event(r, prefix, k, Output::Text(text), ev),
        Format::Messages => anthropic::text_event(r, text.chunk(k), ev),
    }
}

/// The events that end a stream, due with its last token.
pub fn finish(r: &Reply, prefix: &[u8], ev: &mut Events<'_>) {
    match r.format {
        Format::Chat => chat::finish(r, prefix, ev),
        Format::Completions => completions::finish(r, prefix, ev),
        Format::Generate => sglang::finish(r, prefix, ev),
        Format::Messages => anthropic::finish(r, ev),
    }
}

/// The in-band error event(s) and whatever properly ends the stream after
/// them.
pub fn inband(format: Format, ev: &mut Events<'_>) {
    match format {
        Format::Chat => chat::inband(ev),
        Format::Completions => completions::inband(ev),
        Format::Generate => sglang::inband(ev),
        Format::Messages => anthropic::inband(ev),
    }
}

/// The whole non-streamed body of vocabulary tokens; `prefix` is scratch
/// space.
pub fn body(r: &Reply, id: &Identity<'_>, prefix: &mut Vec<u8>, out: &mut Vec<u8>) {
    output_body(r, id, Output::Vocab, prefix, out);
}

/// The whole non-streamed body, its tokens said by `text`; `prefix` is
/// scratch space.
pub fn output_body(
    r: &Reply,
    id: &Identity<'_>,
    text: Output<'_>,
    prefix: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    match r.format {
        Format::Chat => chat::body(r, id, text, out),
        Format::Completions => completions::body(r, id, text, out),
        Format::Generate => sglang::body(r, id, text, prefix, out),
        Format::Messages => anthropic::body(r, id, text, out),
    }
}

/// The body of a 200 response that carries an in-band error instead.
pub fn inband_body(format: Format) -> &'static [u8] {
    match format {
        Format::Chat | Format::Completions => openai::INBAND_ERROR,
        Format::Generate => sglang::INBAND_ERROR,
        Format::Messages => anthropic::INBAND_ERROR,
    }
}

/// What went wrong, as far as an error body's type field distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A request this server cannot answer as sent (400, 405, 411, 413, 431).
    Invalid,
    /// No valid API key (401).
    Unauthorized,
    /// A model this server does not serve (404).
    UnknownModel,
    /// No such path (404).
    NotFound,
    /// An injected error status (5xx).
    Unavailable,
    /// An injected 429.
    RateLimited,
}

/// Appends the error body of `format` (OpenAI's when `None`: no format
/// known, such as an unknown path).
pub fn error_body(
    format: Option<Format>,
    out: &mut Vec<u8>,
    problem: Problem,
    status: u16,
    message: &str,
) {
    match format {
        None | Some(Format::Chat | Format::Completions) => {
            let kind = match problem {
                Problem::Invalid => "invalid_request_error",
                Problem::Unauthorized => "authentication_error",
                // vLLM's spelling, which OpenAI clients are used to.
                Problem::UnknownModel => "NotFoundError",
                Problem::NotFound => "not_found_error",
                Problem::Unavailable => "server_error",
                Problem::RateLimited => "rate_limit_exceeded",
            };
            openai::error_body(out, message, kind, status);
        }
        Some(Format::Generate) => sglang::error_body(out, message),
        Some(Format::Messages) => {
            let kind = match problem {
                Problem::Invalid => "invalid_request_error",
                Problem::Unauthorized => "authentication_error",
                Problem::UnknownModel | Problem::NotFound => "not_found_error",
                Problem::Unavailable => "api_error",
                Problem::RateLimited => "rate_limit_error",
            };
            anthropic::error_body(out, kind, message);
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::Value;

    pub(crate) fn ident(model: &str) -> Identity<'_> {
        Identity {
            worker: 1,
            seq: 42,
            created: 1_700_000_000,
            model,
        }
    }

    pub(crate) fn reply(format: Format, n: u32, prompt: u64) -> Reply {
        Reply::new(format, n, 0, prompt, false)
    }

    /// Every event of a whole stream, each from its own chunk.
    pub(crate) fn stream_events(r: &Reply, id: &Identity<'_>) -> Vec<Vec<u8>> {
        unchunk(&stream_bytes(r, id, true))
    }

    /// A whole stream as sent, chunked or not.
    fn stream_bytes(r: &Reply, id: &Identity<'_>, chunked: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        let mut prefix = Vec::new();
        let mut ev = Events::new(&mut out, &mut scratch, chunked);
        start(r, id, &mut prefix, &mut ev);
        for k in 0..r.n {
            token(r, &prefix, k, &mut ev);
        }
        finish(r, &prefix, &mut ev);
        out
    }

    #[test]
    fn sized_events_match_their_declared_length() {
        // `unchunk` checks the CRLF after every declared size, so an event
        // sized wrong fails here even in a release build.
        for format in Format::ALL {
            for n in [0, 1, 2, 15, 16, 17, 40, 100] {
                for reasoning in [0, 3] {
                    for usage in [false, true] {
                        let r = Reply::new(format, n, reasoning, 12_345, usage);
                        let id = ident("model/with \"quotes\"");
                        let chunked = stream_events(&r, &id).concat();
                        assert_eq!(chunked, stream_bytes(&r, &id, false), "{r:?}");
                    }
                }
            }
        }
    }

    /// A whole stream whose tokens are the chunks of `text`.
    fn text_stream_bytes(r: &Reply, id: &Identity<'_>, text: &ReplyText, chunked: bool) -> Vec<u8> {
        let (mut out, mut scratch, mut prefix) = (Vec::new(), Vec::new(), Vec::new());
        let mut ev = Events::new(&mut out, &mut scratch, chunked);
        start(r, id, &mut prefix, &mut ev);
        for k in 0..r.n {
            chunk_event(r, &prefix, k, text, &mut ev);
        }
        finish(r, &prefix, &mut ev);
        out
    }

    /// The text an event adds, in any format (SGLang's is the whole text so
    /// far), and the finish reason it carries, if any.
    fn event_text(format: Format, event: &[u8]) -> (Option<String>, Option<Value>) {
        let text = std::str::from_utf8(event).unwrap();
        let data = text.split_once("data: ").unwrap().1.trim_end();
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return (None, None);
        };
        let (said, finish) = match format {
            Format::Chat => (
                &v["choices"][0]["delta"]["content"],
                &v["choices"][0]["finish_reason"],
            ),
            Format::Completions => (&v["choices"][0]["text"], &v["choices"][0]["finish_reason"]),
            Format::Generate => (&v["text"], &v["meta_info"]["finish_reason"]),
            Format::Messages => (&v["delta"]["text"], &v["delta"]["stop_reason"]),
        };
        (
            said.as_str().map(str::to_owned),
            Some(finish.clone()).filter(|f| !f.is_null()),
        )
    }

    #[test]
    fn text_replies_stream_and_body_every_byte() {
        let said = "  quote\" \\ back\n\tnew \u{1} ctl 日本 🦀\u{a0}end ";
        let mut text = ReplyText::default();
        text.set(said);
        let all = text.chunks();
        assert_eq!(all, 9);
        for format in Format::ALL {
            for n in [all, 3, 0] {
                let mut r = reply(format, n, 5);
                if n == all {
                    r.finish = Finish::Stop;
                }
                let id = ident("m");
                let events = unchunk(&text_stream_bytes(&r, &id, &text, true));
                assert_eq!(
                    events.concat(),
                    text_stream_bytes(&r, &id, &text, false),
                    "{format:?} {n}: declared sizes"
                );
                let mut streamed = String::new();
                let mut finishes = Vec::new();
                for e in &events {
                    let (t, f) = event_text(format, e);
                    if let Some(t) = t {
                        if format == Format::Generate {
                            streamed = t;
                        } else {
                            streamed.push_str(&t);
                        }
                    }
                    finishes.extend(f);
                }
                let want: String = {
                    let cut = text.range(0, n);
                    let quoted = [b"\"", cut, b"\""].concat();
                    serde_json::from_slice(&quoted).unwrap()
                };
                assert_eq!(streamed, want, "{format:?} {n}");
                assert_eq!(finishes.len(), 1, "{format:?} {n}: {finishes:?}");
                let stopped = match format {
                    Format::Messages => json_str("end_turn"),
                    Format::Generate => serde_json::json!({"type": "stop", "matched": null}),
                    _ => json_str("stop"),
                };
                assert_eq!(finishes[0] == stopped, n == all, "{format:?} {n}");

                let mut body = Vec::new();
                output_body(&r, &id, Output::Text(&text), &mut Vec::new(), &mut body);
                let v: Value = serde_json::from_slice(&body).unwrap();
                let got = match format {
                    Format::Chat => &v["choices"][0]["message"]["content"],
                    Format::Completions => &v["choices"][0]["text"],
                    Format::Generate => &v["text"],
                    Format::Messages => &v["content"][0]["text"],
                };
                assert_eq!(got, want.as_str(), "{format:?} {n}");
            }
        }
        assert_eq!(text.range(0, all), {
            let mut whole = Vec::new();
            text::push_json_str(&mut whole, said);
            whole[1..whole.len() - 1].to_vec()
        });
    }

    fn json_str(s: &str) -> Value {
        Value::String(s.to_string())
    }

    /// The payloads of a chunked body (no last chunk expected).
    pub(crate) fn unchunk(mut body: &[u8]) -> Vec<Vec<u8>> {
        let mut chunks = Vec::new();
        while !body.is_empty() {
            let eol = body.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&body[..eol]).unwrap(), 16).unwrap();
            chunks.push(body[eol + 2..eol + 2 + size].to_vec());
            assert_eq!(&body[eol + 2 + size..eol + 4 + size], b"\r\n");
            body = &body[eol + 4 + size..];
        }
        chunks
    }

    /// The payload of a `data:` event, checking its framing.
    pub(crate) fn sse_data(event: &[u8]) -> &str {
        let text = std::str::from_utf8(event).unwrap();
        text.strip_prefix("data: ")
            .and_then(|t| t.strip_suffix("\n\n"))
            .unwrap_or_else(|| panic!("not one data event: {text:?}"))
    }

    #[test]
    fn text_events_are_valid_and_carry_the_text() {
        for format in [Format::Chat, Format::Completions, Format::Messages] {
            let r = reply(format, 10, 1);
            let (mut out, mut scratch, mut prefix) = (Vec::new(), Vec::new(), Vec::new());
            start(
                &r,
                &ident("m"),
                &mut prefix,
                &mut Events::new(&mut out, &mut scratch, true),
            );
            out.clear();
            text_event(
                &r,
                &prefix,
                3,
                b" many words at once",
                &mut Events::new(&mut out, &mut scratch, true),
            );
            let events = unchunk(&out);
            assert_eq!(events.len(), 1, "{format:?}");
            let text = std::str::from_utf8(&events[0]).unwrap();
            let data = text.split_once("data: ").unwrap().1.trim_end();
            let v: Value = serde_json::from_str(data).unwrap();
            let got = match format {
                Format::Chat => &v["choices"][0]["delta"]["content"],
                Format::Completions => &v["choices"][0]["text"],
                _ => &v["delta"]["text"],
            };
            assert_eq!(got, " many words at once", "{format:?}");
        }
    }

    #[test]
    fn reasoning_is_capped_and_dropped_where_unsupported() {
        assert_eq!(Reply::new(Format::Chat, 3, 5, 0, false).reasoning, 3);
        assert_eq!(Reply::new(Format::Messages, 9, 5, 0, false).reasoning, 5);
        assert_eq!(Reply::new(Format::Completions, 9, 5, 0, false).reasoning, 0);
        assert_eq!(Reply::new(Format::Generate, 9, 5, 0, false).reasoning, 0);
    }

    #[test]
    fn inband_events_parse_and_end_the_stream() {
        for f in Format::ALL {
            let mut out = Vec::new();
            let mut scratch = Vec::new();
            inband(f, &mut Events::new(&mut out, &mut scratch, true));
            let events = unchunk(&out);
            let last = std::str::from_utf8(events.last().unwrap()).unwrap();
            let json = std::str::from_utf8(&events[0]).unwrap();
            let json = json.split_once("data: ").unwrap().1.trim_end();
            let v: Value = serde_json::from_str(json).unwrap();
            assert_eq!(v["error"]["message"], "injected in-band error", "{f:?}");
            assert_eq!(
                serde_json::from_slice::<Value>(inband_body(f)).unwrap(),
                v,
                "{f:?}"
            );
            if f == Format::Messages {
                assert!(last.starts_with("event: error\n"), "{last:?}");
            } else {
                assert_eq!(last, "data: [DONE]\n\n");
            }
        }
    }

    #[test]
    fn error_bodies_are_valid_json_in_every_format() {
        for f in [None].into_iter().chain(Format::ALL.map(Some)) {
            for p in [
                Problem::Invalid,
                Problem::Unauthorized,
                Problem::UnknownModel,
                Problem::NotFound,
                Problem::Unavailable,
                Problem::RateLimited,
            ] {
                let mut out = Vec::new();
                error_body(f, &mut out, p, 418, "a \"quoted\" message");
                let v: Value = serde_json::from_slice(&out).unwrap();
                assert_eq!(v["error"]["message"], "a \"quoted\" message", "{f:?} {p:?}");
            }
        }
    }
}
