//! A small blocking HTTP/1.1 client for setup work off the hot path: the
//! one-off `GET /v1/models` before a run and `llmload probe`'s handful of
//! requests. One std `TcpStream` per request (with TLS over it for https)
//! and one deadline over the connect, the handshake and the whole exchange,
//! kept with socket timeouts; the head and the framing are read by the
//! parsers the workers use (`http::response`, `http::chunked`), and TLS goes
//! through the helpers the workers use (`tls::io`), so a response this
//! client accepts is one a benchmark can read too.
//!
//! Each response says how its connection was made: the TCP connect and the
//! TLS handshake timed apart, and what TLS negotiated (version, cipher
//! suite, ALPN, resumption, the server's certificate), which probe reports.
//!
//! The trade-off is simplicity over streaming: the body is collected whole
//! (bounded by `MAX_BODY`) together with the time each piece arrived, and a
//! caller that wants SSE events splits them afterwards, replaying those
//! arrival times. Failures are a small enum named for what went wrong, so a
//! caller can tell a refused connection from a timeout from a failed
//! handshake from bytes that are not HTTP and explain each in its own words.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustls::{ClientConnection, HandshakeKind, ProtocolVersion};

use crate::http::chunked::ChunkedDecoder;
use crate::http::endpoint::Endpoint;
use crate::http::request::write_request;
use crate::http::response::{BodyKind, HeadError, MAX_HEADERS, parse_head};
use crate::tls::io::{FirstBytes, Handshake};
use crate::tls::{self, TlsClient, reason};

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
    /// The TLS handshake failed: why, as `tls::reason` words it (unknown
    /// issuer, name mismatch, expired, protocol version, an alert, a
    /// plain-HTTP answer).
    Handshake(String),
    /// The TLS handshake did not finish before the deadline.
    HandshakeTimeout,
    /// TLS failed after the response had started (a bad record, an alert).
    Tls(String),
    /// A plain-HTTP request was answered in TLS: the URL wants `https://`.
    TlsOnHttp,
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
            FetchError::Handshake(why) => write!(f, "TLS handshake failed: {why}"),
            FetchError::HandshakeTimeout => f.write_str("no TLS handshake in time"),
            FetchError::Tls(why) => write!(f, "TLS failed: {why}"),
            FetchError::TlsOnHttp => f.write_str(reason::TLS_ON_HTTP),
        }
    }
}

/// How a connection was made: the TCP connect and the TLS handshake timed
/// apart, and what TLS negotiated.
#[derive(Clone, Debug, Default)]
pub(crate) struct Setup {
    pub tcp_connect: Duration,
    /// `None` without TLS.
    pub tls_handshake: Option<Duration>,
    pub tls: Option<TlsInfo>,
}

/// What a TLS handshake negotiated, and the certificate the server sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsInfo {
    /// `TLSv1.3` or `TLSv1.2`.
    pub version: String,
    /// The IANA name, e.g. `TLS_AES_256_GCM_SHA384`.
    pub cipher_suite: String,
    /// The application protocol the server chose; `None` when it chose none.
    pub alpn: Option<String>,
    /// The session was resumed (no certificate exchange).
    pub resumed: bool,
    /// Verification was off (`--insecure`).
    pub insecure: bool,
    /// The leaf certificate, when the server sent one that parses.
    pub cert: Option<CertInfo>,
}

/// The server's leaf certificate, as a person checks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CertInfo {
    /// Distinguished names as `CN=…, O=…`.
    pub subject: String,
    pub issuer: String,
    /// notAfter as `YYYY-MM-DDTHH:MM:SSZ`.
    pub not_after: String,
    /// Whole days from now to notAfter; negative once it has passed.
    pub days_left: i64,
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
    /// How the response's connection was made.
    pub setup: Setup,
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

/// Sends the complete request `request` on a new connection to `addr` (over
/// TLS when `tls` is given) and reads one response; `timeout` bounds the
/// connect, the handshake and the exchange together.
pub(crate) fn fetch(
    addr: SocketAddr,
    request: &[u8],
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<Response, FetchError> {
    let deadline = Instant::now() + timeout;
    let (mut s, setup) = open_stream(addr, deadline, tls)?;
    let t_send = Instant::now();
    s.write_all(request, deadline)?;

    let mut resp = Response {
        setup,
        ..Response::default()
    };
    let mut head_buf: Vec<u8> = Vec::new();
    let mut body: Option<BodyReader> = None;
    let mut got_any = false;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let has_head = body.is_some();
        s.set_timeouts(left(deadline).ok_or(FetchError::Timeout { head: has_head })?)?;
        let n = match s.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e, has_head, got_any)),
        };
        let t = t_send.elapsed();
        if n > 0 && !got_any {
            resp.first_byte = t;
            got_any = true;
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
                None if s.is_plain() && reason::looks_like_tls(&head_buf) => {
                    Err(FetchError::TlsOnHttp)
                }
                None => Err(malformed("not an HTTP response", &head_buf)),
            };
        }
        let done = match &mut body {
            Some(b) => b.feed(&chunk[..n], t, &mut resp)?,
            None => {
                head_buf.extend_from_slice(&chunk[..n]);
                // A TLS server answers a plain request with an alert record.
                if s.is_plain() && reason::looks_like_tls(&head_buf) {
                    return Err(FetchError::TlsOnHttp);
                }
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

/// Opens a connection to `addr` as [`fetch`] does (TCP, then the TLS
/// handshake when `tls` is given), within `timeout`, and closes it: how it
/// was made, or why it could not be.
pub(crate) fn open(
    addr: SocketAddr,
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<Setup, FetchError> {
    let (_stream, setup) = open_stream(addr, Instant::now() + timeout, tls)?;
    Ok(setup)
}

/// The time left before `deadline`; `None` once it has passed.
fn left(deadline: Instant) -> Option<Duration> {
    Some(deadline.saturating_duration_since(Instant::now())).filter(|d| !d.is_zero())
}

/// A connection's byte stream: the socket, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<ClientConnection>, TcpStream),
}

impl Stream {
    fn is_plain(&self) -> bool {
        matches!(self, Stream::Plain(_))
    }

    fn sock(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) | Stream::Tls(_, s) => s,
        }
    }

    fn set_timeouts(&self, d: Duration) -> Result<(), FetchError> {
        set_timeouts(self.sock(), d)
    }

    /// Sends all of `bytes` (and, with TLS, all the ciphertext) by `deadline`.
    fn write_all(&mut self, bytes: &[u8], deadline: Instant) -> Result<(), FetchError> {
        let timeout = FetchError::Timeout { head: false };
        self.set_timeouts(left(deadline).ok_or(timeout)?)?;
        match self {
            Stream::Plain(s) => s.write_all(bytes).map_err(|e| io_error(e, false)),
            Stream::Tls(tls, s) => {
                let mut sent = 0;
                while sent < bytes.len() || tls::io::pending(tls) {
                    match tls::io::write(tls, s, &bytes[sent..]) {
                        Ok(n) => sent += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            // A server that refused the handshake after the
                            // client's side was done may have closed already;
                            // its alert, read before the reset, says why.
                            let mut rest = [0u8; 512];
                            if let Err(r) = tls::io::read(tls, s, &mut rest)
                                && let Some(err) = tls::io::tls_error(&r)
                            {
                                let why = reason::describe(err).into_owned();
                                return Err(FetchError::Handshake(why));
                            }
                            return Err(io_error(e, false));
                        }
                    }
                    let d = left(deadline).ok_or(FetchError::Timeout { head: false })?;
                    set_timeouts(s, d)?;
                }
                Ok(())
            }
        }
    }

    /// Reads what arrived: `Ok(0)` at the server's end (with TLS, with or
    /// without close_notify: the HTTP framing judges a cut response).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(tls, s) => tls::io::read(tls, s, buf),
        }
    }
}

/// Bounds the next reads and writes on `s` by `d`: a blocking call that
/// waits longer fails with `WouldBlock`.
fn set_timeouts(s: &TcpStream, d: Duration) -> Result<(), FetchError> {
    s.set_read_timeout(Some(d))
        .and_then(|()| s.set_write_timeout(Some(d)))
        .map_err(FetchError::Io)
}

impl Drop for Stream {
    /// Says goodbye with close_notify, if the socket takes it at once.
    fn drop(&mut self) {
        if let Stream::Tls(tls, s) = self {
            tls.send_close_notify();
            if s.set_nonblocking(true).is_ok() {
                let _ = tls::io::flush(tls, s);
            }
        }
    }
}

/// Connects to `addr` and, with `tls`, runs the handshake, all by `deadline`.
fn open_stream(
    addr: SocketAddr,
    deadline: Instant,
    tls: Option<&TlsClient>,
) -> Result<(Stream, Setup), FetchError> {
    let timeout = left(deadline).unwrap_or_default();
    let (s, tcp_connect) = connect(addr, timeout).map_err(FetchError::Connect)?;
    let _ = s.set_nodelay(true);
    let mut setup = Setup {
        tcp_connect,
        ..Setup::default()
    };
    let Some(client) = tls else {
        return Ok((Stream::Plain(s), setup));
    };
    let start = Instant::now();
    let conn = client
        .connect()
        .map_err(|e| FetchError::Handshake(reason::describe(&e).into_owned()))?;
    let mut stream = Stream::Tls(Box::new(conn), s);
    let Stream::Tls(conn, s) = &mut stream else {
        unreachable!()
    };
    let mut first = FirstBytes::default();
    loop {
        set_timeouts(s, left(deadline).ok_or(FetchError::HandshakeTimeout)?)?;
        // On a blocking socket, `Blocked` means a socket timeout: the
        // deadline above decides whether to go on.
        match tls::io::handshake(conn, s, &mut first) {
            Ok(Handshake::Done) => break,
            Ok(Handshake::Blocked) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(FetchError::Handshake(
                    reason::handshake(&e, &first).into_owned(),
                ));
            }
        }
    }
    setup.tls_handshake = Some(start.elapsed());
    setup.tls = Some(tls_info(conn, client.insecure, SystemTime::now()));
    Ok((stream, setup))
}

/// What `conn`'s handshake negotiated; `now` dates the certificate's expiry.
fn tls_info(conn: &ClientConnection, insecure: bool, now: SystemTime) -> TlsInfo {
    let version = match conn.protocol_version() {
        Some(ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
        Some(ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
        Some(v) => format!("{v:?}"),
        None => String::new(),
    };
    let cipher_suite = conn
        .negotiated_cipher_suite()
        .map(|s| {
            let name = s.suite();
            match name.as_str() {
                // rustls marks the TLS 1.3 suites TLS13_; IANA names them TLS_.
                Some(n) => n.replacen("TLS13_", "TLS_", 1),
                None => format!("{name:?}"),
            }
        })
        .unwrap_or_default();
    TlsInfo {
        version,
        cipher_suite,
        alpn: conn
            .alpn_protocol()
            .map(|p| String::from_utf8_lossy(p).into_owned()),
        resumed: conn.handshake_kind() == Some(HandshakeKind::Resumed),
        insecure,
        cert: conn
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|leaf| cert_info(leaf, now)),
    }
}

/// Subject, issuer and expiry of a DER certificate; `None` if it does not
/// parse (the handshake accepted it, so only `--insecure` lets one through).
fn cert_info(der: &[u8], now: SystemTime) -> Option<CertInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let not_after = cert.validity().not_after;
    let now = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(_) => 0,
    };
    // UTC, as certificates keep it; years run to 9999.
    let t = not_after.to_datetime();
    Some(CertInfo {
        subject: cert.subject().to_string(),
        issuer: cert.issuer().to_string(),
        not_after: format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        days_left: (not_after.timestamp() - now).div_euclid(86_400),
    })
}

/// A failed read as a `FetchError`. A TLS error before any response byte
/// is the server refusing the handshake: in TLS 1.3 it judges the client's
/// certificate only after the client's side is done, so that verdict (an
/// alert) arrives with the first read.
fn read_error(e: io::Error, head: bool, got_any: bool) -> FetchError {
    match tls::io::tls_error(&e) {
        Some(err) if !got_any => FetchError::Handshake(reason::describe(err).into_owned()),
        Some(_) => FetchError::Tls(reason::after_handshake(&e).into_owned()),
        None => io_error(e, head),
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
pub(crate) mod tests;
