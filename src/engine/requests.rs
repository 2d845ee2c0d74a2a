//! Every request's bytes, serialized once before the run into one arena.
//! Workers inherit the arena through `fork()` and write slices of it straight
//! to sockets, so the hot path never builds or copies a request. Beside the
//! bytes, each sample's input length when it is known before sending (token
//! ids given, or counted with a tokenizer).

use serde_json::{Map, Value};

use crate::dataset::Sample;
use crate::http::endpoint::Endpoint;
use crate::http::request::write_request;
use crate::protocol::{BodySpec, Protocol, Sampling};
use crate::tokens::Tokenizer;
use crate::uuid::UUID_PLACEHOLDER;

/// Where a request's input token count comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum InputSource {
    /// The dataset gave token ids.
    Ids,
    /// Counted with `--tokenizer` before the run, as plain text.
    Tokenizer,
    /// Counted with `--tokenizer` before the run, through the model's chat
    /// template (a message prompt).
    ChatTemplate,
    /// Not known before sending: the response's usage will tell.
    #[default]
    Usage,
}

/// Prebuilt HTTP requests, indexed by sample number.
#[derive(Debug, Default)]
pub(crate) struct RequestSet {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
    /// Offsets, within each request, of the conversation-id placeholders in
    /// the correlation header and in the first user message (`u32::MAX`
    /// when absent); the worker writes a fresh id over them per request.
    id_slots: Vec<[u32; 2]>,
    /// Input tokens per sample when known before sending, and from where.
    isl: Vec<(u32, InputSource)>,
    /// The requests ask for a streamed response.
    streamed: bool,
    /// Message prompts the chat template failed on (counted as plain text
    /// instead), and the first failure.
    chat_failures: u64,
    first_chat_failure: Option<String>,
}

/// Whether a body built with `stream` and `extra_body` asks for a stream:
/// an extra `"stream"` overrides the run's setting, as it does in the body.
/// A `null` reads as the servers' default (no stream); any other value that
/// is not a boolean counts as asking, since a server may read it so.
pub(crate) fn asks_stream(stream: bool, extra_body: Option<&Map<String, Value>>) -> bool {
    match extra_body.and_then(|e| e.get("stream")) {
        None => stream,
        Some(Value::Bool(b)) => *b,
        Some(Value::Null) => false,
        Some(_) => true,
    }
}

/// What every request of a run shares.
pub(crate) struct RequestTemplate<'a> {
    pub protocol: &'a dyn Protocol,
    pub endpoint: &'a Endpoint,
    pub model: &'a str,
    /// Used when a sample has no system prompt of its own.
    pub system: Option<&'a str>,
    /// Used when a sample does not say.
    pub max_tokens: Option<u32>,
    pub stream: bool,
    /// Extra headers, API key headers included.
    pub headers: &'a [(String, String)],
    pub sampling: &'a Sampling,
    pub extra_body: Option<&'a Map<String, Value>>,
    /// Header that carries each request's conversation id.
    pub correlation_header: Option<&'a str>,
    /// Put the conversation id in front of the first user message, so no
    /// two requests share a cacheable prefix.
    pub bust: bool,
    /// Count a plain prompt's input alone, without the system prompt, as
    /// MLPerf does (it counts the `prompt` field only).
    pub prompt_only_isl: bool,
}

impl RequestSet {
    /// Serializes the request for `s`; `scratch` is a reusable body buffer.
    pub(crate) fn push(
        &mut self,
        s: &Sample,
        t: &RequestTemplate<'_>,
        tokenizer: Option<&Tokenizer>,
        scratch: &mut Vec<u8>,
    ) {
        scratch.clear();
        let system = s.system.as_deref().or(t.system);
        let busted;
        let messages = if t.bust && !s.messages.is_empty() {
            let mut m = s.messages.clone();
            if let Some(first) = m.iter_mut().find(|m| m.role == "user") {
                first.content = format!("{UUID_PLACEHOLDER} {}", first.content);
            }
            busted = m;
            &busted[..]
        } else {
            &s.messages[..]
        };
        t.protocol.build_body(
            &BodySpec {
                model: t.model,
                system,
                messages,
                input_tokens: s.input_tokens.as_deref(),
                max_tokens: s.max_tokens.or(t.max_tokens),
                stream: t.stream,
                sampling: t.sampling,
                extra_body: t.extra_body,
            },
            scratch,
        );
        let mut headers: Vec<(&str, &str)> = vec![("User-Agent", "llmload/0.1")];
        if t.stream {
            headers.push(("Accept", "text/event-stream"));
        }
        headers.extend(t.protocol.fixed_headers().iter().copied());
        headers.extend(t.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let Some(h) = t.correlation_header {
            headers.push((h, UUID_PLACEHOLDER));
        }
        let start = self.bytes.len();
        write_request(
            &mut self.bytes,
            "POST",
            &t.endpoint.host,
            &t.endpoint.path,
            &headers,
            scratch,
        );
        let req = &self.bytes[start..];
        let finder = memchr::memmem::Finder::new(UUID_PLACEHOLDER);
        let mut slots = [u32::MAX; 2];
        let mut from = 0;
        for (slot, wanted) in slots
            .iter_mut()
            .zip([t.correlation_header.is_some(), t.bust])
        {
            if !wanted {
                continue;
            }
            if let Some(at) = finder.find(&req[from..]) {
                *slot = (from + at) as u32;
                from += at + UUID_PLACEHOLDER.len();
            }
        }
        self.id_slots.push(slots);
        self.spans.push((start, self.bytes.len() - start));
        let (isl, source) = match (&s.input_tokens, tokenizer) {
            (Some(ids), _) => (ids.len() as u32, InputSource::Ids),
            (None, Some(tok)) => self.count_input(tok, s, system, t.prompt_only_isl),
            (None, None) => (0, InputSource::Usage),
        };
        self.isl.push((isl, source));
        self.streamed = asks_stream(t.stream, t.extra_body);
    }

    /// MLPerf's input length: a message list through the model's chat
    /// template with the generation prompt, when the model has one; a plain
    /// prompt as text, without any template. What is counted is what the
    /// dataset gave, before a cache-busting id is put in front of it.
    fn count_input(
        &mut self,
        tok: &Tokenizer,
        s: &Sample,
        system: Option<&str>,
        prompt_only: bool,
    ) -> (u32, InputSource) {
        if s.from_messages {
            let chat: Vec<(&str, &str)> = system
                .map(|sys| ("system", sys))
                .into_iter()
                .chain(
                    s.messages
                        .iter()
                        .map(|m| (m.role.as_str(), m.content.as_str())),
                )
                .collect();
            match tok.count_chat(&chat) {
                Some(Ok(n)) => return (n as u32, InputSource::ChatTemplate),
                Some(Err(e)) => {
                    self.chat_failures += 1;
                    self.first_chat_failure.get_or_insert(e);
                }
                None => {}
            }
        }
        let system = if prompt_only && !s.from_messages {
            0
        } else {
            system.map_or(0, |sys| tok.count(sys))
        };
        let n = system
            + s.messages
                .iter()
                .map(|m| tok.count(&m.content))
                .sum::<usize>();
        (n as u32, InputSource::Tokenizer)
    }

    /// Message prompts the chat template failed on, and the first failure.
    pub(crate) fn chat_failures(&self) -> Option<(u64, &str)> {
        let first = self.first_chat_failure.as_deref()?;
        Some((self.chat_failures, first))
    }

    /// Whether the requests ask for a streamed response.
    #[inline]
    pub(crate) fn streamed(&self) -> bool {
        self.streamed
    }

    /// The bytes of request `i`.
    #[inline]
    pub(crate) fn get(&self, i: u32) -> &[u8] {
        let (start, len) = self.spans[i as usize];
        &self.bytes[start..start + len]
    }

    /// Where request `i` carries its conversation id, if anywhere.
    #[inline]
    pub(crate) fn id_slots(&self, i: u32) -> impl Iterator<Item = usize> + '_ {
        self.id_slots[i as usize]
            .iter()
            .filter(|&&o| o != u32::MAX)
            .map(|&o| o as usize)
    }

    /// Whether any request carries an id to fill in.
    pub(crate) fn has_id_slots(&self) -> bool {
        self.id_slots
            .iter()
            .any(|s| s.iter().any(|&o| o != u32::MAX))
    }

    /// Input tokens of sample `i` and where the count came from, when known
    /// before sending.
    #[inline]
    pub(crate) fn input_tokens(&self, i: u32) -> Option<(u32, InputSource)> {
        let (n, source) = *self.isl.get(i as usize)?;
        (source != InputSource::Usage).then_some((n, source))
    }

    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "tokenizer")]
    #[test]
    fn message_prompts_count_through_the_chat_template_and_plain_prompts_as_text() {
        use crate::protocol::Message;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-chat");
        let tok = Tokenizer::load(&dir).unwrap();
        let endpoint = Endpoint::parse("http://127.0.0.1:1/v1", "/v1/chat/completions").unwrap();
        let sampling = Sampling::default();
        let mut t = RequestTemplate {
            protocol: crate::protocol::find("openai-chat").unwrap(),
            endpoint: &endpoint,
            model: "m",
            system: None,
            max_tokens: Some(8),
            stream: true,
            headers: &[],
            sampling: &sampling,
            extra_body: None,
            correlation_header: None,
            bust: true,
            prompt_only_isl: false,
        };
        let plain = Sample {
            system: Some("Be brief.".into()),
            ..Sample::prompt("hello world")
        };
        let chat = Sample {
            from_messages: true,
            ..plain.clone()
        };
        let bad = Sample {
            messages: vec![
                Message::user("a"),
                Message {
                    role: "system".into(),
                    content: "b".into(),
                },
            ],
            system: None,
            from_messages: true,
            ..Sample::default()
        };
        let mut set = RequestSet::default();
        let mut scratch = Vec::new();
        for s in [&plain, &chat, &bad] {
            set.push(s, &t, Some(&tok), &mut scratch);
        }
        t.prompt_only_isl = true;
        set.push(&plain, &t, Some(&tok), &mut scratch);
        set.push(&chat, &t, Some(&tok), &mut scratch);
        // Plain: "Be brief." (3) + "hello world" (2), no template and no
        // cache-busting id. Messages: the rendered template (14 tokens, see
        // tokens::tests). A template that raises: the contents, as text.
        assert_eq!(set.input_tokens(0), Some((5, InputSource::Tokenizer)));
        assert_eq!(set.input_tokens(1), Some((14, InputSource::ChatTemplate)));
        assert_eq!(set.input_tokens(2), Some((2, InputSource::Tokenizer)));
        let (n, first) = set.chat_failures().unwrap();
        assert_eq!(n, 1);
        assert!(first.contains("system message must come first"), "{first}");
        // MLPerf counts a plain prompt alone; a message list still has its
        // system message.
        assert_eq!(set.input_tokens(3), Some((2, InputSource::Tokenizer)));
        assert_eq!(set.input_tokens(4), Some((14, InputSource::ChatTemplate)));
    }

    #[test]
    fn an_extra_stream_key_decides_whether_a_stream_is_asked_for() {
        let extra = |json: &str| serde_json::from_str::<Map<String, Value>>(json).unwrap();
        assert!(asks_stream(true, None));
        assert!(!asks_stream(false, None));
        assert!(asks_stream(true, Some(&extra(r#"{"top_k": 5}"#))));
        assert!(!asks_stream(true, Some(&extra(r#"{"stream": false}"#))));
        assert!(asks_stream(false, Some(&extra(r#"{"stream": true}"#))));
        assert!(!asks_stream(true, Some(&extra(r#"{"stream": null}"#))));
        assert!(asks_stream(false, Some(&extra(r#"{"stream": "yes"}"#))));
    }
}
