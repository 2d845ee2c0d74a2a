//! Every request's bytes, serialized once before the run into one arena.
//! Workers inherit the arena through `fork()` and write slices of it straight
//! to sockets, so the hot path never builds or copies a request. Beside the
//! bytes, each sample's input length when it is known before sending (token
//! ids given, or counted with a tokenizer).
//!
//! A scenario spread over several endpoints (`--endpoints`) keeps one copy
//! of each request, addressed to its first endpoint. The request line and
//! `Host` header — all that differs between endpoints — come first in every
//! request, so each further endpoint has one prebuilt head of its own that
//! replaces them: the worker writes that head and the rest of the shared
//! bytes in one vectored write, with nothing built per request.

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

/// Where one endpoint is addressed in a request: the request target (path
/// and query) and the `Host` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub host: String,
    pub path: String,
}

impl Target {
    pub(crate) fn of(e: &Endpoint) -> Target {
        Target {
            host: e.host.clone(),
            path: e.path.clone(),
        }
    }

    /// `POST path HTTP/1.1\r\nHost: host\r\n`: what `write_request` puts
    /// first, and all of a request that depends on the endpoint.
    fn head(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in [
            "POST ",
            &self.path,
            " HTTP/1.1\r\nHost: ",
            &self.host,
            "\r\n",
        ] {
            out.extend_from_slice(part.as_bytes());
        }
        out
    }
}

/// Prebuilt HTTP requests, indexed by sample number.
#[derive(Debug, Default)]
pub(crate) struct RequestSet {
    bytes: Vec<u8>,
    /// The head every request in `bytes` starts with (its first target's),
    /// then one per further target, which replaces it.
    heads: Vec<Vec<u8>>,
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
        if self.heads.is_empty() {
            self.heads.push(Target::of(t.endpoint).head());
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
        debug_assert!(req.starts_with(&self.heads[0]));
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

    /// Addresses the requests to further endpoints: `more[k - 1]` is target
    /// `k` (target 0 is the endpoint they were built for). Call after the
    /// last `push`.
    pub(crate) fn add_targets(&mut self, more: &[Target]) {
        if self.heads.is_empty() {
            return;
        }
        self.heads.truncate(1);
        self.heads.extend(more.iter().map(Target::head));
    }

    /// Request `i` addressed to target `target`, as two pieces to write in
    /// order: a head of its own (empty for target 0) and the shared bytes.
    #[inline]
    pub(crate) fn pieces(&self, i: u32, target: usize) -> (&[u8], &[u8]) {
        let whole = self.get(i);
        if target == 0 {
            return (&[], whole);
        }
        (&self.heads[target], &whole[self.heads[0].len()..])
    }

    /// How much longer target `target`'s head is than the first (negative:
    /// shorter): the shift of every offset in a request addressed to it.
    #[inline]
    pub(crate) fn head_shift(&self, target: usize) -> isize {
        if target == 0 {
            return 0;
        }
        self.heads[target].len() as isize - self.heads[0].len() as isize
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
    fn a_further_target_changes_only_the_request_line_and_host() {
        let proto = crate::protocol::find("openai-chat").unwrap();
        let a = Endpoint::parse("http://127.0.0.1:9/v1/chat/completions", "/d").unwrap();
        let b = Endpoint::parse("http://localhost:10/other?key=Q", "/d").unwrap();
        let headers = vec![("X-Test".to_string(), "1".to_string())];
        let template = RequestTemplate {
            protocol: proto,
            endpoint: &a,
            model: "m",
            system: None,
            max_tokens: Some(4),
            stream: true,
            headers: &headers,
            sampling: &Sampling::default(),
            extra_body: None,
            correlation_header: None,
            bust: false,
            prompt_only_isl: false,
        };
        let mut set = RequestSet::default();
        let mut scratch = Vec::new();
        set.push(&Sample::prompt("hi"), &template, None, &mut scratch);
        set.add_targets(&[Target::of(&b)]);
        let (head, rest) = set.pieces(0, 0);
        assert!(head.is_empty());
        assert_eq!(rest, set.get(0));
        let (head, rest) = set.pieces(0, 1);
        let whole = [head, rest].concat();
        let want = String::from_utf8(set.get(0).to_vec())
            .unwrap()
            .replace("POST /v1/chat/completions", "POST /other?key=Q")
            .replace("Host: 127.0.0.1:9\r\n", "Host: localhost:10\r\n");
        assert_eq!(String::from_utf8(whole).unwrap(), want);
        assert_eq!(
            set.head_shift(1),
            want.len() as isize - set.get(0).len() as isize
        );
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
