//! The response head: status, framing (Content-Length, chunked, or until
//! close) and whether the connection may be reused, parsed by httparse into
//! a stack array. Tri-state like httparse: `Ok(Some(head))` complete,
//! `Ok(None)` need more bytes, `Err` a named violation.

/// How the body after the head is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (wins over Content-Length, RFC 9112 §6.3).
    Chunked,
    /// Neither header: the body runs until the server closes the connection.
    UntilClose,
    /// No body by definition: 1xx, 204 and 304 responses.
    Empty,
}

/// A parsed response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Bytes of the head including the final blank line; the body starts here.
    pub len: usize,
    pub body: BodyKind,
    /// HTTP/1.1 without `Connection: close`, or HTTP/1.0 with
    /// `Connection: keep-alive`; `false` for `UntilClose` bodies.
    pub keep_alive: bool,
    /// `Content-Type: text/event-stream` (parameters ignored).
    pub event_stream: bool,
}

/// Why a head was rejected. Small and `Copy`: counted on the hot path, turned
/// into text only in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// httparse rejected the status line or a header line.
    Syntax,
    /// More headers than the fixed array holds (`MAX_HEADERS`).
    TooManyHeaders,
    /// A Content-Length that is not a decimal number, or two that differ.
    BadContentLength,
    /// A Transfer-Encoding other than `chunked` (possibly after `identity`).
    BadTransferEncoding,
    /// The head grew past `MAX_HEAD_LEN` bytes without ending.
    TooLarge,
}

/// Headers examined per response; more is `TooManyHeaders`.
pub const MAX_HEADERS: usize = 64;
/// A head longer than this is `TooLarge` rather than waiting forever.
pub const MAX_HEAD_LEN: usize = 64 * 1024;

/// Parses the response head at the start of `buf`.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, HeadError> {
    let _ = buf;
    todo!("http helper")
}
