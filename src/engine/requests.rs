//! Every request's bytes, serialized once before the run into one arena.
//! Workers inherit the arena through `fork()` and write slices of it straight
//! to sockets, so the hot path never builds or copies a request.

use crate::config::endpoint::Endpoint;
use crate::dataset::Sample;
use crate::http::request::write_request;
use crate::protocol::{BodySpec, Prompt, Protocol};

/// Prebuilt HTTP requests, indexed by sample number.
#[derive(Debug, Default)]
pub struct RequestSet {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

/// What every request of a run shares.
pub struct RequestTemplate<'a> {
    pub protocol: &'a dyn Protocol,
    pub endpoint: &'a Endpoint,
    pub model: &'a str,
    pub system: Option<&'a str>,
    pub max_tokens: Option<u32>,
    pub stream: bool,
    /// Extra headers, API key headers included.
    pub headers: &'a [(String, String)],
}

impl RequestSet {
    /// Serializes one request per sample.
    pub fn build(samples: &[Sample], t: &RequestTemplate<'_>) -> RequestSet {
        let mut set = RequestSet::default();
        let mut body = Vec::new();
        let mut headers: Vec<(&str, &str)> = vec![("User-Agent", "llmload/0.1")];
        if t.stream {
            headers.push(("Accept", "text/event-stream"));
        }
        headers.extend(t.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        for s in samples {
            body.clear();
            t.protocol.build_body(
                &BodySpec {
                    model: t.model,
                    prompt: Prompt {
                        system: t.system,
                        user: &s.prompt,
                    },
                    max_tokens: t.max_tokens,
                    stream: t.stream,
                },
                &mut body,
            );
            let start = set.bytes.len();
            write_request(
                &mut set.bytes,
                "POST",
                &t.endpoint.host,
                &t.endpoint.path,
                &headers,
                &body,
            );
            set.spans.push((start, set.bytes.len() - start));
        }
        set
    }

    /// The bytes of request `i`.
    #[inline]
    pub fn get(&self, i: u32) -> &[u8] {
        let (start, len) = self.spans[i as usize];
        &self.bytes[start..start + len]
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Total bytes of all requests.
    pub fn total_bytes(&self) -> usize {
        self.bytes.len()
    }
}
