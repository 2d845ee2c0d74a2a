//! One client connection's response in progress: head, body framing, SSE
//! events and the per-request tally (timestamps, token counts, gaps). Pure
//! state driven by bytes and timestamps, no I/O, so the worker loop stays a
//! thin layer of syscalls around it and the tests can feed it any response
//! cut at any byte.

use crate::http::chunked::ChunkedDecoder;
use crate::http::response::{BodyKind, Head, MAX_HEAD_LEN, parse_head};
use crate::http::sse::{MAX_EVENT, SseSplitter};
use crate::metrics::errors::ErrorClass;
use crate::protocol::{EventInfo, Finish, Protocol, StreamState};

/// Per-connection receive buffer `Rx::receive` reads from; a response head
/// must fit in it.
pub(crate) const READ_BUF: usize = 16 * 1024;

/// Largest non-streamed body kept for parsing.
pub(crate) const MAX_BODY: usize = 64 << 20;

/// Longest in-band error message kept per request.
pub(crate) const MAX_MESSAGE: usize = 256;

/// What one response has carried so far.
#[derive(Debug)]
pub(crate) struct Tally {
    pub t_first_token: u64,
    pub t_last_token: u64,
    pub prompt_tokens: Option<u32>,
    pub completion_tokens: Option<u32>,
    /// Output-bearing events (text, reasoning or other output).
    pub text_events: u32,
    pub text_bytes: u32,
    pub finish: Finish,
    /// Gaps between output-bearing events; capacity fixed at first use.
    pub gaps: Vec<u64>,
    pub gaps_truncated: bool,
    /// Output text as received (raw JSON-escaped), when the run needs it.
    pub text: Vec<u8>,
    pub keep_text: bool,
    /// In-band error message (first `MAX_MESSAGE` bytes), if one arrived.
    pub error: Option<([u8; MAX_MESSAGE], usize)>,
    /// The stream's `[DONE]` marker arrived.
    pub done: bool,
    pub state: StreamState,
}

impl Tally {
    fn new(max_gaps: usize, keep_text: bool) -> Tally {
        Tally {
            t_first_token: 0,
            t_last_token: 0,
            prompt_tokens: None,
            completion_tokens: None,
            text_events: 0,
            text_bytes: 0,
            finish: Finish::None,
            gaps: Vec::with_capacity(max_gaps),
            gaps_truncated: false,
            text: Vec::new(),
            keep_text,
            error: None,
            done: false,
            state: StreamState::default(),
        }
    }

    fn reset(&mut self) {
        self.t_first_token = 0;
        self.t_last_token = 0;
        self.prompt_tokens = None;
        self.completion_tokens = None;
        self.text_events = 0;
        self.text_bytes = 0;
        self.finish = Finish::None;
        self.gaps.clear();
        self.gaps_truncated = false;
        self.text.clear();
        self.error = None;
        self.done = false;
        self.state = StreamState::default();
    }

    /// Something of the API's response shape arrived: output, a finish
    /// reason or a usage count. A response with none of them (an HTML page,
    /// an empty body, JSON without the API's fields) measured nothing, even
    /// with a success status; one with zero output tokens still has a finish
    /// reason or usage.
    fn recognized(&self) -> bool {
        self.text_events > 0
            || self.text_bytes > 0
            || self.finish != Finish::None
            || self.prompt_tokens.is_some()
            || self.completion_tokens.is_some()
    }

    fn on_event(&mut self, info: EventInfo<'_>, t: u64) {
        if info.has_output() {
            if self.text_events == 0 {
                self.t_first_token = t;
            } else if self.gaps.len() < self.gaps.capacity() {
                self.gaps.push(t - self.t_last_token);
            } else {
                self.gaps_truncated = true;
            }
            self.t_last_token = t;
            self.text_events += 1;
            self.add_text(info.reasoning, info.text);
        }
        if info.prompt_tokens.is_some() {
            self.prompt_tokens = info.prompt_tokens;
        }
        if info.completion_tokens.is_some() {
            self.completion_tokens = info.completion_tokens;
        }
        if let Some(f) = info.finish {
            self.finish = f;
        }
        if let Some(m) = info.error {
            self.set_error(m);
        }
    }

    fn add_text(&mut self, reasoning: &[u8], text: &[u8]) {
        let n = reasoning.len() + text.len();
        self.text_bytes = self.text_bytes.saturating_add(n as u32);
        if self.keep_text {
            self.text.extend_from_slice(reasoning);
            self.text.extend_from_slice(text);
        }
    }

    fn append_error(&mut self, bytes: &[u8]) {
        let (buf, n) = self.error.get_or_insert(([0u8; MAX_MESSAGE], 0));
        let take = bytes.len().min(MAX_MESSAGE - *n);
        buf[*n..*n + take].copy_from_slice(&bytes[..take]);
        *n += take;
    }

    fn set_error(&mut self, msg: &[u8]) {
        if self.error.is_none() {
            let mut buf = [0u8; MAX_MESSAGE];
            let n = msg.len().min(MAX_MESSAGE);
            buf[..n].copy_from_slice(&msg[..n]);
            self.error = Some((buf, n));
        }
    }

    /// The kept in-band error message.
    pub(crate) fn error_message(&self) -> &[u8] {
        self.error.as_ref().map_or(&[], |(b, n)| &b[..*n])
    }
}

/// A response being received.
#[derive(Debug)]
pub(crate) struct Rx {
    pub head: Option<Head>,
    remaining: u64,
    chunked: ChunkedDecoder,
    sse: Option<SseSplitter>,
    /// The body is an SSE stream of a successful response.
    pub sse_mode: bool,
    /// The body is a successful non-streamed response, kept for parsing.
    keep_body: bool,
    /// The kept body; for an event stream, its first piece (at most
    /// `MAX_MESSAGE` bytes of its first read or chunk), the message when
    /// nothing in the stream is recognized (a proxy's page sent as one).
    pub body: Vec<u8>,
    pub t_send: u64,
    pub t_first_byte: u64,
    pub tally: Tally,
}

/// The outcome of feeding bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The response needs more bytes.
    More,
    /// The response is complete; `keep_alive` says whether the connection can
    /// carry another.
    Done { keep_alive: bool },
}

impl Rx {
    pub(crate) fn new(max_gaps: usize, keep_text: bool) -> Rx {
        Rx {
            head: None,
            remaining: 0,
            chunked: ChunkedDecoder::default(),
            sse: None,
            sse_mode: false,
            keep_body: false,
            body: Vec::new(),
            t_send: 0,
            t_first_byte: 0,
            tally: Tally::new(max_gaps, keep_text),
        }
    }

    /// Ready for a new request sent at `t_send`.
    pub(crate) fn reset(&mut self, t_send: u64) {
        self.head = None;
        self.remaining = 0;
        self.chunked.reset();
        if let Some(sse) = &mut self.sse {
            sse.reset();
        }
        self.sse_mode = false;
        self.keep_body = false;
        self.body.clear();
        self.t_send = t_send;
        self.t_first_byte = 0;
        self.tally.reset();
    }

    /// Takes what a receive buffer holds, `buf[..*filled]`, read at `t`.
    /// Until the head is complete the bytes stay in `buf` (interim 1xx heads
    /// are dropped from its front) and the answer is `More`; after it, every
    /// buffered byte is consumed and `*filled` drops to 0. A head that does
    /// not fit `buf` is malformed.
    pub(crate) fn receive(
        &mut self,
        buf: &mut [u8],
        filled: &mut usize,
        t: u64,
        proto: &dyn Protocol,
    ) -> Result<Step, ErrorClass> {
        if self.t_first_byte == 0 {
            self.t_first_byte = t;
        }
        let mut start = 0;
        if self.head.is_none() {
            loop {
                match parse_head(&buf[..*filled]) {
                    Ok(None) if *filled < MAX_HEAD_LEN.min(buf.len()) => return Ok(Step::More),
                    Ok(None) | Err(_) => return Err(ErrorClass::MalformedResponse),
                    Ok(Some(h)) if (100..200).contains(&h.status) && h.status != 101 => {
                        buf.copy_within(h.len..*filled, 0);
                        *filled -= h.len;
                    }
                    Ok(Some(h)) => {
                        start = h.len;
                        if let Step::Done { keep_alive } = self.begin(h) {
                            // Bytes after a complete bodiless response are
                            // not ours to read: the connection cannot go on.
                            let extra = *filled > start;
                            return Ok(Step::Done {
                                keep_alive: keep_alive && !extra,
                            });
                        }
                        break;
                    }
                }
            }
        }
        let step = self.feed(&buf[start..*filled], t, proto);
        *filled = 0;
        step
    }

    /// Takes a parsed head. Returns the first step for an empty body.
    fn begin(&mut self, mut head: Head) -> Step {
        // After 101 Switching Protocols the connection no longer speaks
        // HTTP/1.1: it is never reused.
        if head.status == 101 {
            head.keep_alive = false;
        }
        let ok = (200..300).contains(&head.status);
        self.sse_mode = ok && head.event_stream;
        self.keep_body = ok && !head.event_stream;
        if self.sse_mode && self.sse.is_none() {
            self.sse = Some(SseSplitter::with_capacity(MAX_EVENT));
        }
        self.head = Some(head);
        match head.body {
            BodyKind::Empty | BodyKind::Length(0) => Step::Done {
                keep_alive: head.keep_alive,
            },
            BodyKind::Length(n) => {
                self.remaining = n;
                Step::More
            }
            BodyKind::Chunked | BodyKind::UntilClose => Step::More,
        }
    }

    /// Feeds body bytes received at `t`; every byte is consumed.
    fn feed(&mut self, data: &[u8], t: u64, proto: &dyn Protocol) -> Result<Step, ErrorClass> {
        let Some(head) = self.head else {
            return Err(ErrorClass::MalformedResponse);
        };
        match head.body {
            BodyKind::Empty => Ok(Step::Done {
                keep_alive: head.keep_alive && data.is_empty(),
            }),
            BodyKind::Length(_) => {
                let take = (self.remaining as usize).min(data.len());
                self.body_data(&data[..take], t, proto)?;
                self.remaining -= take as u64;
                if self.remaining == 0 {
                    Ok(Step::Done {
                        keep_alive: head.keep_alive && take == data.len(),
                    })
                } else {
                    Ok(Step::More)
                }
            }
            BodyKind::Chunked => {
                let mut rest = data;
                while !rest.is_empty() {
                    let d = self
                        .chunked
                        .decode(rest)
                        .map_err(|_| ErrorClass::MalformedResponse)?;
                    self.body_data(d.data, t, proto)?;
                    rest = &rest[d.consumed..];
                    if d.done {
                        return Ok(Step::Done {
                            keep_alive: head.keep_alive && rest.is_empty(),
                        });
                    }
                    if d.consumed == 0 {
                        return Err(ErrorClass::MalformedResponse);
                    }
                }
                Ok(Step::More)
            }
            BodyKind::UntilClose => {
                self.body_data(data, t, proto)?;
                Ok(Step::More)
            }
        }
    }

    /// The peer closed the connection: a close-delimited body ends here.
    pub(crate) fn eof_completes(&self) -> bool {
        matches!(
            self.head,
            Some(Head {
                body: BodyKind::UntilClose,
                ..
            })
        )
    }

    fn body_data(&mut self, data: &[u8], t: u64, proto: &dyn Protocol) -> Result<(), ErrorClass> {
        if data.is_empty() {
            return Ok(());
        }
        if self.sse_mode {
            if self.body.is_empty() {
                self.sniff(data);
            }
            let tally = &mut self.tally;
            let sse = self.sse.as_mut().expect("created in begin");
            sse.feed(data, |ev| {
                if ev.data == b"[DONE]" {
                    tally.done = true;
                }
                let info = proto.parse_event(&ev, &mut tally.state);
                tally.on_event(info, t)
            })
            .map_err(|_| ErrorClass::MalformedResponse)
        } else if self.keep_body {
            if self.body.len() + data.len() > MAX_BODY {
                return Err(ErrorClass::MalformedResponse);
            }
            self.body.extend_from_slice(data);
            Ok(())
        } else {
            // An error response: its first bytes say why.
            self.tally.append_error(data);
            Ok(())
        }
    }

    /// Keeps the first piece of an event stream's body (out of line: once
    /// per response, and it would crowd the per-piece path).
    #[cold]
    #[inline(never)]
    fn sniff(&mut self, data: &[u8]) {
        self.body
            .extend_from_slice(&data[..data.len().min(MAX_MESSAGE)]);
    }

    /// The response's status; 0 before its head.
    #[inline]
    pub(crate) fn status(&self) -> u16 {
        self.head.map_or(0, |h| h.status)
    }

    /// The response is complete: reads a kept body into the tally and says
    /// how the request went: an error status, an in-band error, a success
    /// status with nothing of the API's shape in it (`NoOutput`, its first
    /// bytes kept as the message), a close-delimited stream the server ended
    /// before `[DONE]` or a finish reason (`Truncated`: with no framing, the
    /// close is all there is to tell a finished stream from a crashed
    /// server), or well. A framed stream that ends without either is
    /// complete: its server said where it ends.
    #[inline]
    pub(crate) fn conclude(&mut self, proto: &dyn Protocol) -> ErrorClass {
        if !(200..300).contains(&self.status()) {
            return ErrorClass::HttpStatus;
        }
        self.finish_body(proto);
        let t = &self.tally;
        if t.error.is_some() {
            ErrorClass::InBandError
        } else if !t.recognized() {
            self.keep_unrecognized();
            ErrorClass::NoOutput
        } else if self.sse_mode
            && !t.done
            && t.finish == Finish::None
            && self.head.is_some_and(|h| h.body == BodyKind::UntilClose)
        {
            ErrorClass::Truncated
        } else {
            ErrorClass::None
        }
    }

    /// Whether a first token is still awaited in the `ttft_timeout` sense:
    /// only a stream has one. Before the head that is whether the request
    /// asked for a stream (`streamed`); after it, whether a success status
    /// opened an event stream: a non-streamed body, or an error status, has
    /// no first token to wait for, only the request timeout.
    #[inline]
    pub(crate) fn awaits_first_token(&self, streamed: bool) -> bool {
        self.tally.t_first_token == 0
            && match self.head {
                None => streamed,
                Some(_) => self.sse_mode,
            }
    }

    /// Keeps the first bytes of a success body that was not recognized as
    /// the request's message, so the report shows what came instead.
    #[cold]
    fn keep_unrecognized(&mut self) {
        let first = &self.body[..self.body.len().min(MAX_MESSAGE)];
        if first.is_empty() {
            self.tally.set_error(b"empty body");
        } else {
            self.tally.set_error(first);
        }
    }

    /// Reads the kept non-streamed body into the tally.
    fn finish_body(&mut self, proto: &dyn Protocol) {
        if self.keep_body {
            let info = proto.parse_body(&self.body);
            let t = &mut self.tally;
            t.add_text(info.reasoning, info.text);
            t.prompt_tokens = info.prompt_tokens;
            t.completion_tokens = info.completion_tokens;
            t.finish = info.finish.unwrap_or(Finish::None);
            if let Some(m) = info.error {
                t.set_error(m);
            }
        }
    }
}

#[cfg(test)]
mod tests;
