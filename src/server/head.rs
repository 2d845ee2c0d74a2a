//! HTTP/1.1 framing on the server side: a request head parsed with httparse
//! into the few owned facts the connection needs (route, keep-alive, body
//! length, whether it carries the API key), and response heads written as
//! fixed byte strings. The parsed head is kept while its body arrives, so a
//! large body is not re-parsed on every read, and no header value outlives
//! the parse.

use super::access::{self, ApiKey};
use super::formats::Format;
use crate::ascii::push_u64;

/// Most bytes a request head may take.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// Most headers a request may carry.
const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// One of the generation endpoints.
    Generate(Format),
    Models,
    /// `GET /metrics`: the server's own counters, Prometheus text.
    Metrics,
    Unknown,
}

/// How the request's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    /// No `Content-Length` and no `Transfer-Encoding`: no body.
    None,
    Length(u64),
    /// `Transfer-Encoding` present: a framing this server does not decode.
    Encoded,
}

/// What the server keeps of a parsed request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// Bytes of the head, blank line included.
    pub len: usize,
    pub method: Method,
    pub route: Route,
    /// HTTP/1.0: no chunked responses, close unless asked to keep alive.
    pub http10: bool,
    pub keep_alive: bool,
    pub body: Body,
    pub expect_continue: bool,
    /// Carries the configured API key, or none is configured.
    pub authorized: bool,
}

/// Why a request head was rejected, each answered with its own status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// Not HTTP/1.x syntax (400).
    Syntax,
    /// More than `MAX_HEADERS` headers (431).
    TooManyHeaders,
    /// Conflicting or unparsable `Content-Length` (400).
    BadContentLength,
}

impl HeadError {
    pub(crate) fn status(self) -> Status {
        match self {
            HeadError::TooManyHeaders => Status::HeadersTooLarge,
            _ => Status::BadRequest,
        }
    }

    pub(crate) fn message(self) -> &'static str {
        match self {
            HeadError::Syntax => "malformed HTTP request",
            HeadError::TooManyHeaders => "too many request headers",
            HeadError::BadContentLength => "invalid Content-Length",
        }
    }
}

/// Parses a request head from the start of `buf`: `Ok(None)` when more bytes
/// are needed. `key` is the API key requests must carry, if any.
pub(crate) fn parse(buf: &[u8], key: Option<&ApiKey>) -> Result<Option<Head>, HeadError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HeadError::TooManyHeaders),
        Err(_) => return Err(HeadError::Syntax),
    };
    let method = match req.method {
        Some("GET") => Method::Get,
        Some("POST") => Method::Post,
        _ => Method::Other,
    };
    let path = req.path.unwrap_or("");
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let route = match path {
        "/v1/chat/completions" => Route::Generate(Format::Chat),
        "/v1/completions" => Route::Generate(Format::Completions),
        "/generate" => Route::Generate(Format::Generate),
        "/v1/messages" => Route::Generate(Format::Messages),
        "/v1/models" => Route::Models,
        "/metrics" => Route::Metrics,
        _ => Route::Unknown,
    };
    let http10 = req.version == Some(0);
    let mut keep_alive = !http10;
    let mut length: Option<u64> = None;
    let mut encoded = false;
    let mut expect_continue = false;
    let mut authorized = key.is_none();
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = parse_length(h.value).ok_or(HeadError::BadContentLength)?;
            if length.is_some_and(|prev| prev != n) {
                return Err(HeadError::BadContentLength);
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            encoded = true;
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            expect_continue = h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        } else if let Some(key) = key {
            authorized |= access::header_carries(key, h.name, h.value);
        }
    }
    let body = if encoded {
        Body::Encoded
    } else {
        length.map_or(Body::None, Body::Length)
    };
    Ok(Some(Head {
        len,
        method,
        route,
        http10,
        keep_alive,
        body,
        expect_continue,
        authorized,
    }))
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

/// Response statuses this server sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Ok,
    BadRequest,
    Unauthorized,
    NotFound,
    MethodNotAllowed,
    LengthRequired,
    PayloadTooLarge,
    HeadersTooLarge,
    TooManyRequests,
    InternalError,
    BadGateway,
    Unavailable,
    GatewayTimeout,
}

impl Status {
    pub(crate) fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::Unauthorized => 401,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::LengthRequired => 411,
            Status::PayloadTooLarge => 413,
            Status::HeadersTooLarge => 431,
            Status::TooManyRequests => 429,
            Status::InternalError => 500,
            Status::BadGateway => 502,
            Status::Unavailable => 503,
            Status::GatewayTimeout => 504,
        }
    }

    fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"HTTP/1.1 200 OK\r\n",
            Status::BadRequest => b"HTTP/1.1 400 Bad Request\r\n",
            Status::Unauthorized => b"HTTP/1.1 401 Unauthorized\r\n",
            Status::NotFound => b"HTTP/1.1 404 Not Found\r\n",
            Status::MethodNotAllowed => b"HTTP/1.1 405 Method Not Allowed\r\n",
            Status::LengthRequired => b"HTTP/1.1 411 Length Required\r\n",
            Status::PayloadTooLarge => b"HTTP/1.1 413 Payload Too Large\r\n",
            Status::HeadersTooLarge => b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
            Status::TooManyRequests => b"HTTP/1.1 429 Too Many Requests\r\n",
            Status::InternalError => b"HTTP/1.1 500 Internal Server Error\r\n",
            Status::BadGateway => b"HTTP/1.1 502 Bad Gateway\r\n",
            Status::Unavailable => b"HTTP/1.1 503 Service Unavailable\r\n",
            Status::GatewayTimeout => b"HTTP/1.1 504 Gateway Timeout\r\n",
        }
    }
}

/// How the response body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    Length(usize),
    Chunked,
    /// The body runs until the server closes (streams to HTTP/1.0 clients).
    UntilClose,
}

/// Everything a response head says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResponseHead<'a> {
    pub status: Status,
    pub content_type: &'a [u8],
    pub framing: Framing,
    /// `x-llmload-messages`: messages in the request (0 when unknown).
    pub messages: u32,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// The request was HTTP/1.0, whose default is to close.
    pub http10: bool,
    /// Extra header lines, each ending in CRLF.
    pub extra: &'a [u8],
}

pub(crate) const JSON: &[u8] = b"application/json";
pub(crate) const EVENT_STREAM: &[u8] = b"text/event-stream";

impl ResponseHead<'_> {
    /// The head of an event stream: chunked, or delimited by the close for
    /// an HTTP/1.0 client, which cannot read chunks.
    pub(crate) fn stream(messages: u32, keep_alive: bool, http10: bool) -> Self {
        ResponseHead {
            status: Status::Ok,
            content_type: EVENT_STREAM,
            framing: if http10 {
                Framing::UntilClose
            } else {
                Framing::Chunked
            },
            messages,
            keep_alive,
            http10,
            extra: b"",
        }
    }
}

/// Appends the head, blank line included.
pub(crate) fn write(out: &mut Vec<u8>, h: &ResponseHead<'_>) {
    out.extend_from_slice(h.status.line());
    out.extend_from_slice(b"content-type: ");
    out.extend_from_slice(h.content_type);
    match h.framing {
        Framing::Length(n) => {
            out.extend_from_slice(b"\r\ncontent-length: ");
            push_u64(out, n as u64);
        }
        Framing::Chunked => {
            out.extend_from_slice(b"\r\ncache-control: no-cache\r\ntransfer-encoding: chunked")
        }
        Framing::UntilClose => out.extend_from_slice(b"\r\ncache-control: no-cache"),
    }
    out.extend_from_slice(b"\r\nx-llmload-messages: ");
    push_u64(out, u64::from(h.messages));
    out.extend_from_slice(b"\r\n");
    if !h.keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    } else if h.http10 {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    out.extend_from_slice(h.extra);
    out.extend_from_slice(b"\r\n");
}

/// The interim response a client sending `Expect: 100-continue` waits for.
pub(crate) const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Option<Head>, HeadError> {
        parse(text.as_bytes(), None)
    }

    #[test]
    fn routes_and_bodies() {
        let h =
            head("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{")
                .unwrap()
                .unwrap();
        assert_eq!(h.method, Method::Post);
        assert_eq!(h.route, Route::Generate(Format::Chat));
        assert!(h.authorized);
        assert_eq!(h.body, Body::Length(12));
        assert!(h.keep_alive && !h.http10 && !h.expect_continue);
        assert_eq!(
            h.len,
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n".len()
        );

        let h = head("GET /v1/models?x=1 HTTP/1.1\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.method, h.route, h.body),
            (Method::Get, Route::Models, Body::None)
        );

        let h = head("PUT /nope HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.method, h.route, h.body),
            (Method::Other, Route::Unknown, Body::Encoded)
        );
    }

    #[test]
    fn every_generation_route() {
        for f in Format::ALL {
            let h = head(&format!("POST {}?x HTTP/1.1\r\n\r\n", f.path()))
                .unwrap()
                .unwrap();
            assert_eq!(h.route, Route::Generate(f));
        }
        let h = head("POST /v1/generate HTTP/1.1\r\n\r\n").unwrap().unwrap();
        assert_eq!(h.route, Route::Unknown);
    }

    #[test]
    fn api_key_in_either_header() {
        let key = ApiKey::new("sekret".to_string()).unwrap();
        let auth = |t: &str| parse(t.as_bytes(), Some(&key)).unwrap().unwrap().authorized;
        assert!(!auth("GET /v1/models HTTP/1.1\r\n\r\n"));
        assert!(auth(
            "GET /v1/models HTTP/1.1\r\nAuthorization: Bearer sekret\r\n\r\n"
        ));
        assert!(auth("GET /v1/models HTTP/1.1\r\nx-api-key: sekret\r\n\r\n"));
        assert!(auth(
            "GET /v1/models HTTP/1.1\r\nAuthorization: Bearer nope\r\nX-API-Key: sekret\r\n\r\n"
        ));
        assert!(!auth(
            "GET /v1/models HTTP/1.1\r\nAuthorization: Bearer sekret2\r\n\r\n"
        ));
    }

    #[test]
    fn keep_alive_rules() {
        let ka = |t: &str| head(t).unwrap().unwrap().keep_alive;
        assert!(ka("GET / HTTP/1.1\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n"));
        assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
        assert!(ka("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    }

    #[test]
    fn partial_and_errors() {
        assert_eq!(
            head("POST /v1/chat/completions HTTP/1.1\r\nContent-Le"),
            Ok(None)
        );
        assert_eq!(head(""), Ok(None));
        assert_eq!(head("HELLO\r\n\r\n"), Err(HeadError::Syntax));
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: x1\r\n\r\n"),
            Err(HeadError::BadContentLength)
        );
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(HeadError::BadContentLength)
        );
        let many: String = (0..70).map(|i| format!("h{i}: v\r\n")).collect();
        assert_eq!(
            head(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
            Err(HeadError::TooManyHeaders)
        );
    }

    #[test]
    fn writes_heads() {
        let mut out = Vec::new();
        write(
            &mut out,
            &ResponseHead {
                status: Status::Ok,
                content_type: JSON,
                framing: Framing::Length(17),
                messages: 3,
                keep_alive: true,
                http10: true,
                extra: b"",
            },
        );
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 17\r\nx-llmload-messages: 3\r\nconnection: keep-alive\r\n\r\n"
        );
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut resp = httparse::Response::new(&mut headers);
        assert!(resp.parse(&out).unwrap().is_complete());
    }
}
