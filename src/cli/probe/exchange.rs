//! The probe's requests and what came back: each one a blocking exchange
//! through `http::blocking` (so a response the probe accepts is one a
//! benchmark can read), recorded as a `Check` with the response read the
//! way the chosen protocol reads it in a benchmark. Each exchange is the
//! I/O call followed by a pure recording step (`*_check`), so tests can
//! record made-up responses and failures exactly as real ones are.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::{CHOSEN_TOKENS, Config, DISCOVERY_TOKENS, MODELS_PATH};
use crate::cli::models;
use crate::config::duration::format_duration;
use crate::http::blocking::{self, ConnectError, FetchError, Response, Setup};
use crate::http::endpoint::Endpoint;
use crate::http::request::write_request;
use crate::http::sse::{MAX_EVENT, SseSplitter};
use crate::protocol::errors::{error_message as error_object, one_line};
use crate::protocol::json::unescape;
use crate::protocol::{BodySpec, Finish, Message, Protocol, Sampling, StreamState};
use crate::tls::TlsClient;
use crate::tls::reason;

/// Characters a server's message may take on its one line.
const MESSAGE_CHARS: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Connect,
    Models,
    /// A path-discovery request.
    Path,
    NonStream,
    Stream,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Connect => "connect",
            Kind::Models => "models",
            Kind::Path => "path",
            Kind::NonStream => "non_stream",
            Kind::Stream => "stream",
        }
    }
}

/// Why an exchange got no answer: a short form for tables, and a sentence
/// that says what to check for the findings.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) short: String,
    pub(super) why: String,
    /// The TLS handshake failed (or did not finish).
    pub(super) handshake: bool,
    /// Every request on this endpoint would fail the same way: a failed
    /// handshake, or TLS where plain HTTP was asked.
    pub(super) every_request: bool,
}

impl Failure {
    pub(super) fn of(e: &FetchError, addr: SocketAddr, timeout: Duration) -> Failure {
        let handshake = matches!(e, FetchError::Handshake(_) | FetchError::HandshakeTimeout);
        Failure {
            short: e.to_string(),
            why: describe(e, addr, timeout),
            handshake,
            every_request: handshake || matches!(e, FetchError::TlsOnHttp),
        }
    }
}

/// One request (or the bare connect) and what came of it.
pub(super) struct Check {
    pub(super) kind: Kind,
    pub(super) method: &'static str,
    pub(super) path: String,
    pub(super) protocol: Option<&'static dyn Protocol>,
    pub(super) stream: bool,
    pub(super) max_tokens: Option<u32>,
    /// TCP connect time (connect check) or send-to-end latency.
    pub(super) latency: Option<Duration>,
    /// How the check's connection was made (TCP and TLS times, what TLS
    /// negotiated).
    pub(super) setup: Option<Setup>,
    pub(super) answer: Option<Answer>,
    pub(super) failure: Option<Failure>,
    /// Model ids, for the models check.
    pub(super) models: Option<Vec<String>>,
    /// Why the models body could not be read as a list.
    pub(super) models_error: Option<String>,
}

impl Check {
    fn new(kind: Kind, method: &'static str, path: &str) -> Check {
        Check {
            kind,
            method,
            path: path.to_string(),
            protocol: None,
            stream: false,
            max_tokens: None,
            latency: None,
            setup: None,
            answer: None,
            failure: None,
            models: None,
            models_error: None,
        }
    }

    /// `POST /path` or `POST /path (stream)`, the start of its lines.
    pub(super) fn label(&self) -> String {
        let stream = if self.stream { " (stream)" } else { "" };
        format!("{} {}{stream}", self.method, self.path)
    }
}

/// A complete response, read as the check's protocol.
#[derive(Debug, Default)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) content_type: Option<String>,
    pub(super) location: Option<String>,
    /// Body was an event stream (and was split into events).
    pub(super) sse: bool,
    pub(super) ttft: Option<Duration>,
    /// SSE events in all, and those carrying output.
    pub(super) events: u32,
    pub(super) output_events: u32,
    /// Output found: text, reasoning or other output.
    pub(super) output: bool,
    pub(super) prompt_tokens: Option<u32>,
    pub(super) completion_tokens: Option<u32>,
    pub(super) finish: Option<Finish>,
    /// An in-band error in a successful response.
    pub(super) in_band: Option<String>,
    /// The error message of an unsuccessful response.
    pub(super) message: Option<String>,
    /// The event stream could not be split.
    pub(super) stream_error: Option<String>,
    pub(super) truncated: bool,
}

impl Answer {
    /// What every check keeps of a response's head; the body is read apart.
    fn head(resp: &Response) -> Answer {
        Answer {
            status: resp.status,
            content_type: resp.content_type.clone(),
            location: resp.location.clone(),
            truncated: resp.truncated,
            ..Answer::default()
        }
    }

    pub(super) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A bare connect to the endpoint: TCP, and the TLS handshake for https.
pub(super) fn connect(cfg: &Config, endpoint: &Endpoint, tls: Option<&TlsClient>) -> Check {
    let got = blocking::open(endpoint.addr, cfg.timeout, tls);
    connect_check(got.map_err(|e| Failure::of(&e, endpoint.addr, cfg.timeout)))
}

/// The connect check: how the connection was made, or why it was not.
pub(super) fn connect_check(got: Result<Setup, Failure>) -> Check {
    let mut c = Check::new(Kind::Connect, "", "");
    match got {
        Ok(setup) => {
            c.latency = Some(setup.tcp_connect);
            c.setup = Some(setup);
        }
        Err(f) => c.failure = Some(f),
    }
    c
}

/// `GET /v1/models` with the chosen API's headers.
pub(super) fn list_models(cfg: &Config, endpoint: &Endpoint, tls: Option<&TlsClient>) -> Check {
    let p = cfg.protocol;
    let auth = auth_headers(cfg, p);
    let headers = headers(cfg, p, &auth, "application/json");
    // The URL's query goes along, as with every request: it may hold the key.
    let path = format!("{MODELS_PATH}{}", endpoint.query());
    let got = blocking::get(endpoint, &path, &headers, cfg.timeout, tls)
        .map_err(|e| Failure::of(&e, endpoint.addr, cfg.timeout));
    models_check(got, p)
}

/// The models check: the listed ids, or why there are none (an error
/// status's message read as protocol `p` would).
pub(super) fn models_check(got: Result<Response, Failure>, p: &dyn Protocol) -> Check {
    let mut c = Check::new(Kind::Models, "GET", MODELS_PATH);
    match got {
        Ok(resp) => {
            c.latency = Some(resp.latency);
            c.setup = Some(resp.setup.clone());
            let mut a = Answer::head(&resp);
            if resp.status == 200 {
                match models::model_ids(&resp.body) {
                    Ok(ids) => c.models = Some(ids),
                    Err(e) => c.models_error = Some(e),
                }
            } else {
                a.message = error_message(p, &resp.body);
            }
            c.answer = Some(a);
        }
        Err(f) => c.failure = Some(f),
    }
    c
}

fn auth_headers(cfg: &Config, p: &dyn Protocol) -> Vec<(String, String)> {
    cfg.api_key
        .as_deref()
        .map(|k| p.auth_headers(k))
        .unwrap_or_default()
}

/// The headers of a request of protocol `p`, in the order a benchmark's
/// requests carry them (`engine::requests`), with `accept` when not empty.
fn headers<'a>(
    cfg: &'a Config,
    p: &dyn Protocol,
    auth: &'a [(String, String)],
    accept: &'static str,
) -> Vec<(&'a str, &'a str)> {
    let mut h: Vec<(&str, &str)> = vec![("User-Agent", "llmload/0.1")];
    if !accept.is_empty() {
        h.push(("Accept", accept));
    }
    h.extend(p.fixed_headers().iter().copied());
    h.extend(cfg.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    h.extend(auth.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    h
}

/// One POST of protocol `p` to `path`: a discovery request (`Kind::Path`,
/// `DISCOVERY_TOKENS`) or one of the chosen API's (`CHOSEN_TOKENS`). The
/// headers are the ones a benchmark's requests carry.
#[allow(clippy::too_many_arguments)]
pub(super) fn send(
    cfg: &Config,
    endpoint: &Endpoint,
    tls: Option<&TlsClient>,
    kind: Kind,
    p: &'static dyn Protocol,
    path: &str,
    model: &str,
    stream: bool,
) -> Check {
    let mut body = Vec::new();
    p.build_body(
        &BodySpec {
            model,
            system: None,
            messages: &[Message::user(&cfg.prompt)],
            input_tokens: None,
            max_tokens: Some(max_tokens(kind)),
            stream,
            sampling: &Sampling::default(),
            extra_body: None,
        },
        &mut body,
    );
    let auth = auth_headers(cfg, p);
    let accept = if stream { "text/event-stream" } else { "" };
    let headers = headers(cfg, p, &auth, accept);
    let mut req = Vec::new();
    write_request(&mut req, "POST", &endpoint.host, path, &headers, &body);
    let got = blocking::fetch(endpoint.addr, &req, cfg.timeout, tls)
        .map_err(|e| Failure::of(&e, endpoint.addr, cfg.timeout));
    request_check(kind, p, path, stream, got)
}

fn max_tokens(kind: Kind) -> u32 {
    if kind == Kind::Path {
        DISCOVERY_TOKENS
    } else {
        CHOSEN_TOKENS
    }
}

/// A POST's check: the response read as protocol `p`, or why there is none.
pub(super) fn request_check(
    kind: Kind,
    p: &'static dyn Protocol,
    path: &str,
    stream: bool,
    got: Result<Response, Failure>,
) -> Check {
    let mut c = Check::new(kind, "POST", path);
    c.protocol = Some(p);
    c.stream = stream;
    c.max_tokens = Some(max_tokens(kind));
    match got {
        Ok(resp) => {
            c.latency = Some(resp.latency);
            c.setup = Some(resp.setup.clone());
            c.answer = Some(read_answer(&resp, p));
        }
        Err(f) => c.failure = Some(f),
    }
    c
}

/// Reads a response as protocol `p` reads it in a benchmark: an event
/// stream event by event, replaying each piece's arrival time so TTFT is
/// when the first output-bearing event was complete; a whole body at once.
pub(super) fn read_answer(resp: &Response, p: &dyn Protocol) -> Answer {
    let mut a = Answer::head(resp);
    if !a.ok() {
        a.message = error_message(p, &resp.body);
        return a;
    }
    if resp.event_stream {
        a.sse = true;
        let mut splitter = SseSplitter::with_capacity(MAX_EVENT);
        let mut state = StreamState::default();
        let mut start = 0;
        for &(end, t) in &resp.pieces {
            let fed = splitter.feed(&resp.body[start..end], |ev| {
                let info = p.parse_event(&ev, &mut state);
                a.events += 1;
                if info.has_output() {
                    a.output_events += 1;
                    a.ttft.get_or_insert(t);
                }
                if info.prompt_tokens.is_some() {
                    a.prompt_tokens = info.prompt_tokens;
                }
                if info.completion_tokens.is_some() {
                    a.completion_tokens = info.completion_tokens;
                }
                if info.finish.is_some() {
                    a.finish = info.finish;
                }
                if let (None, Some(m)) = (&a.in_band, info.error) {
                    a.in_band = Some(text(m));
                }
            });
            if let Err(e) = fed {
                a.stream_error = Some(format!("{e:?}"));
                break;
            }
            start = end;
        }
        a.output = a.output_events > 0;
    } else {
        let info = p.parse_body(&resp.body);
        // Usage alone is not output: another format's body can carry it.
        a.output = !info.text.is_empty() || !info.reasoning.is_empty();
        a.prompt_tokens = info.prompt_tokens;
        a.completion_tokens = info.completion_tokens;
        a.finish = info.finish;
        a.in_band = info.error.map(text);
    }
    a
}

/// Raw JSON string bytes (escapes in place) as one line of readable text.
fn text(raw: &[u8]) -> String {
    one_line(&unescape(raw), MESSAGE_CHARS)
}

/// The message of an error response: the message string of the error
/// objects every API sends (`protocol::errors`), then a bare `message` or
/// FastAPI's `detail`, then the protocol's own reading, then an HTML title
/// or the first line of plain text.
fn error_message(p: &dyn Protocol, body: &[u8]) -> Option<String> {
    // Without a message string, `protocol::errors` stands the error object
    // (or the `"error"` tag) in for one; a `message` or `detail` says more.
    let stand_in = |m: &[u8]| m.starts_with(b"{") || m == b"error";
    if let Some(m) = error_object(body).filter(|m| !stand_in(m)) {
        return Some(text(m));
    }
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let candidates = [&v["message"], &v["detail"], &v["detail"][0]["msg"]];
        if let Some(s) = candidates.iter().find_map(|c| c.as_str()) {
            return Some(one_line(s, MESSAGE_CHARS));
        }
    }
    if let Some(m) = p.parse_body(body).error {
        return Some(text(m));
    }
    let body = String::from_utf8_lossy(body);
    let body = body.trim();
    if body.starts_with('<') {
        let lower = body.to_ascii_lowercase();
        let start = lower.find("<title>")? + "<title>".len();
        let end = start + lower[start..].find("</title>")?;
        return Some(one_line(&body[start..end], MESSAGE_CHARS)).filter(|t| !t.is_empty());
    }
    body.lines()
        .next()
        .map(|l| one_line(l, MESSAGE_CHARS))
        .filter(|t| !t.is_empty())
}

/// A failure as a sentence that says what to check.
pub(super) fn describe(e: &FetchError, addr: SocketAddr, timeout: Duration) -> String {
    let t = format_duration(timeout);
    match e {
        FetchError::Connect(ConnectError::Refused) => crate::cli::cause::refused(addr),
        FetchError::Connect(ConnectError::TimedOut) => format!(
            "connecting to {addr} timed out after {t}: the host is down or a firewall drops the packets; check the host and port"
        ),
        FetchError::Connect(ConnectError::Unreachable(e)) => {
            crate::cli::cause::unreachable(addr, &e.to_string())
        }
        FetchError::Connect(ConnectError::Other(e)) => format!("cannot connect to {addr}: {e}"),
        FetchError::Timeout { head: false } => format!(
            "no response within {t} (--timeout): the server accepted the connection but did not answer"
        ),
        FetchError::Timeout { head: true } => {
            format!("the response started but did not finish within {t} (--timeout)")
        }
        FetchError::Closed { head: false } => "the server closed the connection without answering: does it speak HTTP/1.1 on this port?".to_string(),
        FetchError::Closed { head: true } | FetchError::Reset { .. } | FetchError::Io(_) => {
            e.to_string()
        }
        FetchError::Malformed { what, start } => {
            let hint = if start.len() >= 9 && start[..3] != *b"HTT" && start[3] == 4 {
                "; the server speaks HTTP/2 only: llmload needs HTTP/1.1"
            } else {
                ""
            };
            format!(
                "malformed HTTP response ({what}); it began b\"{}\"{hint}",
                start.escape_ascii()
            )
        }
        FetchError::Handshake(why) => crate::cli::cause::tls_handshake(addr, why),
        FetchError::HandshakeTimeout => format!(
            "the TLS handshake with {addr} did not finish within {t} (--timeout): does the server speak TLS on this port?"
        ),
        FetchError::Tls(why) => format!("TLS failed after the response started: {why}"),
        FetchError::TlsOnHttp => reason::TLS_ON_HTTP.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::probe::diagnose::{Class, classify};
    use crate::protocol::openai_chat::OpenAiChat;

    fn response(head_ct: &str, body: &[u8], pieces: &[(usize, u64)]) -> Response {
        Response {
            status: 200,
            content_type: Some(head_ct.to_string()),
            event_stream: head_ct == "text/event-stream",
            body: body.to_vec(),
            pieces: pieces
                .iter()
                .map(|&(end, t)| (end, Duration::from_millis(t)))
                .collect(),
            ..Response::default()
        }
    }

    #[test]
    fn ttft_is_the_arrival_of_the_first_output_event() {
        let role =
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        let tok = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
        let fin = b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
        let mut body = Vec::new();
        body.extend_from_slice(role);
        let a = body.len();
        // The token event is split across two reads: it counts at the second.
        body.extend_from_slice(&tok[..10]);
        let b = body.len();
        body.extend_from_slice(&tok[10..]);
        let c = body.len();
        body.extend_from_slice(fin);
        let d = body.len();
        let resp = response(
            "text/event-stream",
            &body,
            &[(a, 5), (b, 20), (c, 30), (d, 40)],
        );
        let ans = read_answer(&resp, &OpenAiChat);
        assert!(ans.sse && ans.output);
        assert_eq!(ans.ttft, Some(Duration::from_millis(30)));
        assert_eq!((ans.events, ans.output_events), (4, 1));
        assert_eq!(
            (ans.prompt_tokens, ans.completion_tokens),
            (Some(3), Some(1))
        );
        assert_eq!(ans.finish, Some(Finish::Length));
        assert_eq!(classify(&ans, "m"), Class::Works);
    }

    #[test]
    fn bodies_and_errors() {
        let ok = br#"{"choices":[{"message":{"content":"hello"},"finish_reason":"stop"}]}"#;
        let ans = read_answer(
            &response("application/json", ok, &[(ok.len(), 9)]),
            &OpenAiChat,
        );
        assert!(ans.output && !ans.sse);
        assert_eq!(ans.completion_tokens, None);
        let inband = br#"{"error":{"message":"over\nloaded"}}"#;
        let ans = read_answer(
            &response("application/json", inband, &[(inband.len(), 1)]),
            &OpenAiChat,
        );
        assert_eq!(ans.in_band.as_deref(), Some("over loaded"));
        assert_eq!(classify(&ans, "m"), Class::InBand);

        let p = &OpenAiChat;
        assert_eq!(
            error_message(p, br#"{"detail":"Not Found"}"#).as_deref(),
            Some("Not Found")
        );
        assert_eq!(
            error_message(p, b"<html><head><title>404 Not Found</title></head></html>").as_deref(),
            Some("404 Not Found")
        );
        assert_eq!(
            error_message(p, b"plain words\nmore").as_deref(),
            Some("plain words")
        );
        assert_eq!(error_message(p, b""), None);
    }

    #[test]
    fn a_message_string_beats_an_error_object_without_one() {
        let p = &OpenAiChat;
        let read = |body: &str| error_message(p, body.as_bytes());
        assert_eq!(
            read(r#"{"error":{"code":42},"message":"top level words"}"#).as_deref(),
            Some("top level words")
        );
        assert_eq!(
            read(r#"{"message":"outer","error":{"message":"inner"}}"#).as_deref(),
            Some("inner")
        );
        assert_eq!(
            read(r#"{"object":"error","detail":"why"}"#).as_deref(),
            Some("why")
        );
        assert_eq!(
            read(r#"{"error":{"code":42}}"#).as_deref(),
            Some(r#"{"code":42}"#)
        );
        assert_eq!(
            read(r#"{"object":"error","code":500}"#).as_deref(),
            Some("error")
        );
        assert_eq!(
            read(r#"{"detail":[{"loc":["body"],"msg":"field required"}]}"#).as_deref(),
            Some("field required")
        );
    }

    #[test]
    fn failures_say_what_to_check() {
        let addr = "127.0.0.1:9".parse().unwrap();
        let t = Duration::from_secs(10);
        let refused = describe(&FetchError::Connect(ConnectError::Refused), addr, t);
        assert_eq!(
            refused,
            "connection refused at 127.0.0.1:9: nothing is listening; is the server running and the port right?"
        );
        assert_eq!(
            describe(&FetchError::TlsOnHttp, addr, t),
            "the server answered in TLS, not plain HTTP: use https:// for this endpoint"
        );
        let h2 = FetchError::Malformed {
            what: "x".into(),
            start: vec![0, 0, 0x12, 4, 0, 0, 0, 0, 0],
        };
        assert!(describe(&h2, addr, t).contains("HTTP/2"));
    }
}
