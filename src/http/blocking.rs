//! A small blocking HTTP/1.1 client for setup work off the hot path: the
//! one-off `GET /v1/models` before a run and `llmload probe`'s handful of
//! requests. One std `TcpStream` per request and one deadline over the
//! connect and the whole exchange; the head and the framing are read by the
//! parsers the workers use (`http::response`, `http::chunked`), so a
//! response this client accepts is one a benchmark can read too.
//!
//! The trade-off is simplicity over streaming: the body is collected whole
//! (bounded by `MAX_BODY`) together with the time each piece arrived, and a
//! caller that wants SSE events splits them afterwards, replaying those
//! arrival times. Failures are a small enum named for what went wrong, so a
//! caller can tell a refused connection from a timeout from bytes that are
//! not HTTP and explain each in its own words.

use crate::tls::TlsClient;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::http::chunked::ChunkedDecoder;
use crate::http::endpoint::Endpoint;
use crate::http::request::write_request;
use crate::http::response::{BodyKind, HeadError, MAX_HEADERS, parse_head};

/// Body bytes kept per response; a larger body is cut here and marked
/// `truncated` rather than read without end.
pub(crate) const MAX_BODY: usize = 1 << 20;

/// Why a TCP connection could not be made.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// RST to our SYN: nothing listens on that port.
    Refused,
    /// No answer to the SYN before the deadline.
    TimedOut,
    /// No route to the host or its network.
    Unreachable(io::Error),
    Other(io::Error),
}

impl ConnectError {
    fn from_io(e: io::Error) -> ConnectError {
        match e.kind() {
            io::ErrorKind::ConnectionRefused => ConnectError::Refused,
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => ConnectError::TimedOut,
            io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
                ConnectError::Unreachable(e)
            }
            _ => ConnectError::Other(e),
        }
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Refused => f.write_str("connection refused"),
            ConnectError::TimedOut => f.write_str("connect timed out"),
            ConnectError::Unreachable(e) | ConnectError::Other(e) => write!(f, "{e}"),
        }
    }
}

/// Why a request got no complete response.
#[derive(Debug)]
pub(crate) enum FetchError {
    Connect(ConnectError),
    /// The deadline passed; `head` says whether a response head had arrived.
    Timeout {
        head: bool,
    },
    /// The server closed the connection before the response ended.
    Closed {
        head: bool,
    },
    /// The connection was reset before the response ended.
    Reset {
        head: bool,
    },
    Io(io::Error),
    /// The bytes received are not an HTTP/1.x response: what was wrong, and
    /// the first bytes as received.
    Malformed {
        what: String,
        start: Vec<u8>,
    },
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = |head: bool| if head { "response body" } else { "response" };
        match self {
            FetchError::Connect(e) => write!(f, "{e}"),
            FetchError::Timeout { head } => write!(f, "no complete {} in time", part(*head)),
            FetchError::Closed { head: false } => {
                f.write_str("the server closed the connection without answering")
            }
            FetchError::Closed { head: true } => {
                f.write_str("the server closed the connection before the response ended")
            }
            FetchError::Reset { head } => {
                write!(f, "connection reset before the {} ended", part(*head))
            }
            FetchError::Io(e) => write!(f, "{e}"),
            FetchError::Malformed { what, .. } => write!(f, "malformed HTTP response: {what}"),
        }
    }
}

/// A complete response.
#[derive(Debug, Default)]
pub(crate) struct Response {
    pub status: u16,
    /// The `Content-Type` value as sent.
    pub content_type: Option<String>,
    /// `Content-Type: text/event-stream`.
    pub event_stream: bool,
    /// The `Location` value of a redirect.
    pub location: Option<String>,
    /// The body, de-chunked; at most `MAX_BODY` bytes.
    pub body: Vec<u8>,
    /// For each read that added body bytes: the body length after it and
    /// when it arrived, from the send.
    pub pieces: Vec<(usize, Duration)>,
    /// The body was longer than `MAX_BODY` and was cut there.
    pub truncated: bool,
    /// From the send to the first response byte.
    pub first_byte: Duration,
    /// From the send to the end of the response.
    pub latency: Duration,
}

/// Connects to `addr` within `timeout`; returns the stream and how long the
/// connect took.
pub(crate) fn connect(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(TcpStream, Duration), ConnectError> {
    let start = Instant::now();
    // connect_timeout rejects a zero duration; the caller's deadline is
    // already gone then.
    let timeout = timeout.max(Duration::from_millis(1));
    let s = TcpStream::connect_timeout(&addr, timeout).map_err(ConnectError::from_io)?;
    Ok((s, start.elapsed()))
}

/// `GET path` on `endpoint` with `headers`, within `timeout`.
pub(crate) fn get(
    endpoint: &Endpoint,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<Response, FetchError> {
    let mut req = Vec::new();
    write_request(&mut req, "GET", &endpoint.host, path, headers, b"");
    fetch(endpoint.addr, &req, timeout, tls)
}

/// Sends the complete request `request` on a new connection to `addr` and
/// reads one response; `timeout` bounds the connect and the exchange
/// together.
pub(crate) fn fetch(
    addr: SocketAddr,
    request: &[u8],
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<Response, FetchError> {
    // TODO(tls-client): the blocking client over TLS.
    let _ = tls;
    let deadline = Instant::now() + timeout;
    let (mut s, _) = connect(addr, timeout).map_err(FetchError::Connect)?;
    let _ = s.set_nodelay(true);
    let left = |head: bool| {
        let d = deadline.saturating_duration_since(Instant::now());
        if d.is_zero() {
            Err(FetchError::Timeout { head })
        } else {
            Ok(d)
        }
    };
    s.set_write_timeout(Some(left(false)?))
        .map_err(FetchError::Io)?;
    let t_send = Instant::now();
    s.write_all(request).map_err(|e| io_error(e, false))?;

    let mut resp = Response::default();
    let mut head_buf: Vec<u8> = Vec::new();
    let mut body: Option<BodyReader> = None;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let has_head = body.is_some();
        s.set_read_timeout(Some(left(has_head)?))
            .map_err(FetchError::Io)?;
        let n = match s.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error(e, has_head)),
        };
        let t = t_send.elapsed();
        if n > 0 && head_buf.is_empty() && !has_head {
            resp.first_byte = t;
        }
        if n == 0 {
            return match &body {
                Some(b) if b.kind == BodyKind::UntilClose => {
                    resp.latency = t;
                    Ok(resp)
                }
                Some(_) => Err(FetchError::Closed { head: true }),
                None if head_buf.is_empty() || head_buf.starts_with(b"HTTP/") => {
                    Err(FetchError::Closed { head: false })
                }
                None => Err(malformed("not an HTTP response", &head_buf)),
            };
        }
        let done = match &mut body {
            Some(b) => b.feed(&chunk[..n], t, &mut resp)?,
            None => {
                head_buf.extend_from_slice(&chunk[..n]);
                match read_head(&mut head_buf, &mut resp)? {
                    None => false,
                    Some(kind) => {
                        let mut b = BodyReader::new(kind);
                        let rest = std::mem::take(&mut head_buf);
                        let done = b.feed(&rest, t, &mut resp)?;
                        body = Some(b);
                        done
                    }
                }
            }
        };
        if done {
            resp.latency = t;
            return Ok(resp);
        }
    }
}

/// Parses the head at the start of `buf`, skipping interim 1xx heads; on a
/// final head, fills `resp`, leaves only the body bytes in `buf` and returns
/// the framing.
fn read_head(buf: &mut Vec<u8>, resp: &mut Response) -> Result<Option<BodyKind>, FetchError> {
    loop {
        let head = match parse_head(buf) {
            Ok(Some(h)) => h,
            Ok(None) => return Ok(None),
            Err(e) => return Err(malformed(head_error(e), buf)),
        };
        if (100..200).contains(&head.status) && head.status != 101 {
            buf.drain(..head.len);
            continue;
        }
        resp.status = head.status;
        resp.event_stream = head.event_stream;
        resp.content_type = header(&buf[..head.len], "content-type");
        resp.location = header(&buf[..head.len], "location");
        buf.drain(..head.len);
        return Ok(Some(head.body));
    }
}

/// The value of header `name` in a complete, already validated head.
fn header(head: &[u8], name: &str) -> Option<String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut r = httparse::Response::new(&mut headers);
    r.parse(head).ok()?;
    r.headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
}

fn head_error(e: HeadError) -> &'static str {
    match e {
        HeadError::Syntax => "not an HTTP/1.x status line and headers",
        HeadError::TooManyHeaders => "too many headers",
        HeadError::BadContentLength => "a bad or conflicting Content-Length",
        HeadError::BadTransferEncoding => "a Transfer-Encoding other than chunked",
        HeadError::TooLarge => "a response head over 64 KiB",
    }
}

fn malformed(what: &str, bytes: &[u8]) -> FetchError {
    FetchError::Malformed {
        what: what.to_string(),
        start: bytes[..bytes.len().min(32)].to_vec(),
    }
}

fn io_error(e: io::Error, head: bool) -> FetchError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => FetchError::Timeout { head },
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => FetchError::Reset { head },
        _ => FetchError::Io(e),
    }
}

/// The body after the head, framed as the head said.
struct BodyReader {
    kind: BodyKind,
    /// Bytes still due for a `Length` body.
    remaining: u64,
    chunked: ChunkedDecoder,
}

impl BodyReader {
    fn new(kind: BodyKind) -> BodyReader {
        let remaining = match kind {
            BodyKind::Length(n) => n,
            _ => 0,
        };
        BodyReader {
            kind,
            remaining,
            chunked: ChunkedDecoder::default(),
        }
    }

    /// Takes bytes read at `t`; `true` once the body is complete (or cut at
    /// `MAX_BODY`).
    fn feed(&mut self, data: &[u8], t: Duration, resp: &mut Response) -> Result<bool, FetchError> {
        let before = resp.body.len();
        let done = match self.kind {
            BodyKind::Empty => true,
            BodyKind::Length(_) => {
                let take = (self.remaining as usize).min(data.len());
                keep(resp, &data[..take]);
                self.remaining -= take as u64;
                self.remaining == 0
            }
            BodyKind::UntilClose => {
                keep(resp, data);
                false
            }
            BodyKind::Chunked => {
                let mut rest = data;
                let mut done = false;
                while !rest.is_empty() && !done {
                    let d = self
                        .chunked
                        .decode(rest)
                        .map_err(|e| malformed(&format!("bad chunked framing ({e:?})"), rest))?;
                    keep(resp, d.data);
                    rest = &rest[d.consumed..];
                    done = d.done;
                    if d.consumed == 0 && !done {
                        return Err(malformed("chunked framing made no progress", rest));
                    }
                }
                done
            }
        };
        if resp.body.len() > before {
            resp.pieces.push((resp.body.len(), t));
        }
        Ok(done || resp.truncated)
    }
}

/// Appends body bytes up to `MAX_BODY`.
fn keep(resp: &mut Response, data: &[u8]) {
    let room = MAX_BODY - resp.body.len();
    if data.len() > room {
        resp.truncated = true;
    }
    resp.body.extend_from_slice(&data[..data.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves `parts` to one connection after reading the request head,
    /// pausing 30 ms between parts.
    fn serve_parts(parts: Vec<&'static [u8]>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    return;
                }
                got.extend_from_slice(&buf[..n]);
            }
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(30));
                }
                let _ = s.write_all(part);
            }
        });
        addr
    }

    fn serve_once(answer: &'static [u8]) -> SocketAddr {
        serve_parts(vec![answer])
    }

    fn get_from(addr: SocketAddr) -> Result<Response, FetchError> {
        let e = Endpoint::local(addr, "/");
        get(&e, "/x", &[], Duration::from_secs(5), None)
    }

    #[test]
    fn chunked_body_is_decoded_with_arrival_times() {
        let addr = serve_parts(vec![
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
              6\r\ndata: \r\n",
            b"5\r\nhello\r\n2\r\n\n\n\r\n0\r\n\r\n",
        ]);
        let r = get_from(addr).unwrap();
        assert_eq!(r.status, 200);
        assert!(r.event_stream);
        assert_eq!(r.content_type.as_deref(), Some("text/event-stream"));
        assert_eq!(r.body, b"data: hello\n\n");
        assert_eq!(r.pieces.len(), 2, "{:?}", r.pieces);
        assert!(r.pieces[1].1 >= r.pieces[0].1 + Duration::from_millis(20));
        assert!(r.latency >= r.first_byte);
    }

    #[test]
    fn interim_heads_are_skipped_and_close_ends_a_body() {
        let addr = serve_once(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved\r\nLocation: https://x/\r\n\r\nbye",
        );
        let r = get_from(addr).unwrap();
        assert_eq!(r.status, 301);
        assert_eq!(r.location.as_deref(), Some("https://x/"));
        assert_eq!(r.body, b"bye");
    }

    #[test]
    fn failures_are_named() {
        let addr = serve_once(b"\x15\x03\x01\x00\x02\x02\x46");
        match get_from(addr) {
            Err(FetchError::Malformed { start, .. }) => assert_eq!(start[0], 0x15),
            other => panic!("{other:?}"),
        }
        let addr = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        assert!(matches!(
            get_from(addr),
            Err(FetchError::Closed { head: true })
        ));
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let closed = SocketAddr::from(([127, 0, 0, 1], port));
        assert!(matches!(
            get_from(closed),
            Err(FetchError::Connect(ConnectError::Refused))
        ));
    }

    #[test]
    fn a_silent_server_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = Endpoint::local(l.local_addr().unwrap(), "/");
        let start = Instant::now();
        let r = get(&e, "/x", &[], Duration::from_millis(200), None);
        assert!(
            matches!(r, Err(FetchError::Timeout { head: false })),
            "{r:?}"
        );
        assert!(start.elapsed() < Duration::from_secs(2));
        drop(l);
    }
}
