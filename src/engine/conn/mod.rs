//! One client connection's response in progress: head, body framing, SSE
//! events and the per-request tally (timestamps, token counts, gaps). Pure
//! state driven by bytes and timestamps, no I/O, so the worker loop stays a
//! thin layer of syscalls around it and the tests can feed it any response
//! cut at any byte.
//!
//! Memory is bounded per response and per worker: kept text stops at the
//! run's `max_output_text` (the response is marked truncated, or a
//! conversation's turn fails), a kept body stops at `MAX_BODY`, and both grow
//! only within the worker's [`Budget`], whose buffers go back to it after a
//! response that made them large. The price is one comparison per kept text
//! piece and per body read, and a reallocation after an unusually large
//! response.

use std::cell::Cell;
use std::rc::Rc;

use crate::http::chunked::ChunkedDecoder;
use crate::http::response::{BodyKind, Head, MAX_HEAD_LEN, parse_head};
use crate::http::sse::{MAX_EVENT, SseSplitter};
use crate::metrics::errors::ErrorClass;
use crate::protocol::scan::{self, Document};
use crate::protocol::{EventInfo, Finish, Protocol, StreamState};

/// Per-connection receive buffer `Rx::receive` reads from; a response head
/// must fit in it.
pub(crate) const READ_BUF: usize = 16 * 1024;

/// Largest non-streamed body kept for parsing: far above any real
/// completion's JSON (a 128k-token reply is a few MiB), small enough that a
/// hostile `Content-Length` costs little before it is called malformed.
pub(crate) const MAX_BODY: usize = 16 << 20;

/// Kept text and bodies a worker's connections may hold together, at least;
/// `Budget::for_worker` raises it so two responses at the text cap always fit.
pub(crate) const WORKER_BYTES: usize = 256 << 20;

/// A text or body buffer larger than this after its response is given back,
/// so a connection slot does not keep the memory of its largest response:
/// 1024 slots at this size are well inside `WORKER_BYTES`.
pub(crate) const SHRINK_ABOVE: usize = 64 << 10;

/// Longest in-band error message kept per request.
pub(crate) const MAX_MESSAGE: usize = 256;

/// The bytes of kept text and body a worker's connections hold together
/// (their buffers' capacity), against a limit. A buffer grows only through
/// [`Budget::grow`], so when the worker is at its limit a response's text
/// is cut (as at the text cap) and a body fails, instead of the worker
/// growing until the kernel kills it. Shared by every `Rx` of one worker
/// process (single-threaded, hence `Rc<Cell>`).
#[derive(Clone, Debug)]
pub(crate) struct Budget(Rc<BudgetState>);

#[derive(Debug)]
struct BudgetState {
    limit: usize,
    held: Cell<usize>,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Budget {
        Budget(Rc::new(BudgetState {
            limit,
            held: Cell::new(0),
        }))
    }

    /// A worker's budget: `WORKER_BYTES`, or room for two responses at the
    /// text cap when the cap is larger.
    pub(crate) fn for_worker(max_output_text: usize) -> Budget {
        Budget::new(WORKER_BYTES.max(max_output_text.saturating_mul(2)))
    }

    /// Bytes held now.
    pub(crate) fn held(&self) -> usize {
        self.0.held.get()
    }

    /// Makes room in `v` for `need` bytes in all (doubling, as `Vec` would,
    /// but never past `cap`, and near the limit taking what room is left);
    /// false, leaving `v` as it is, when `need` is past `cap` or the budget
    /// has no room for it. Not inlined: it runs only when a buffer must grow.
    #[inline(never)]
    fn grow(&self, v: &mut Vec<u8>, need: usize, cap: usize) -> bool {
        if need > cap {
            return false;
        }
        let old = v.capacity();
        let room = self.0.limit.saturating_sub(self.held());
        let want = old
            .saturating_mul(2)
            .clamp(need, cap)
            .min(old.saturating_add(room));
        if want < need {
            return false;
        }
        v.reserve_exact(want - v.len());
        self.0.held.set(self.held() + v.capacity() - old);
        true
    }

    /// Gives back `v`'s memory if it is over `SHRINK_ABOVE` (its contents
    /// are no longer needed).
    fn shrink(&self, v: &mut Vec<u8>) {
        if v.capacity() > SHRINK_ABOVE {
            self.release(std::mem::take(v).capacity());
        }
    }

    fn release(&self, bytes: usize) {
        self.0.held.set(self.held().saturating_sub(bytes));
    }
}

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
    /// Output text as received (raw JSON-escaped), when the run needs it;
    /// whole pieces, at most `max_text` bytes.
    pub text: Vec<u8>,
    /// Where the first output event's piece ends in `text`: MLPerf's TPOT
    /// counts the tokens after it.
    pub first_text_len: u32,
    pub keep_text: bool,
    /// Kept text stopped short: the next piece did not fit `max_text` or the
    /// worker's budget. Later pieces are counted, not kept.
    pub text_truncated: bool,
    /// Cut text fails the response as `OutputOverCap` (a conversation's
    /// reply, which the next turn's history would carry).
    pub fail_over_cap: bool,
    max_text: usize,
    budget: Budget,
    /// In-band error message (first `MAX_MESSAGE` bytes), if one arrived.
    pub error: Option<([u8; MAX_MESSAGE], usize)>,
    /// The stream's `[DONE]` marker arrived.
    pub done: bool,
    pub state: StreamState,
}

impl Tally {
    fn new(max_gaps: usize, keep_text: bool, max_text: usize, budget: Budget) -> Tally {
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
            first_text_len: 0,
            keep_text,
            text_truncated: false,
            fail_over_cap: false,
            max_text,
            budget,
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
        self.first_text_len = 0;
        self.text_truncated = false;
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

    #[inline]
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
            if self.text_events == 1 {
                self.first_text_len = self.text.len() as u32;
            }
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

    /// Counts a piece of output and keeps it when asked to: whole, or not
    /// at all once one did not fit (so the kept text is always a prefix that
    /// unescapes cleanly).
    #[inline]
    fn add_text(&mut self, reasoning: &[u8], text: &[u8]) {
        let n = reasoning.len() + text.len();
        self.text_bytes = self.text_bytes.saturating_add(n as u32);
        if self.keep_text && !self.text_truncated {
            // `grow` never takes the capacity past `max_text`, so a piece
            // that fits the capacity fits the cap.
            let need = self.text.len() + n;
            if need > self.text.capacity() && !self.budget.grow(&mut self.text, need, self.max_text)
            {
                self.text_truncated = true;
                return;
            }
            self.text.extend_from_slice(reasoning);
            self.text.extend_from_slice(text);
        }
    }

    /// The response must fail: a conversation's reply was cut.
    #[inline]
    fn over_cap(&self) -> bool {
        self.text_truncated && self.fail_over_cap
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
    /// A receiver keeping up to `max_gaps` gaps and, when `keep_text`, up to
    /// `max_text` bytes of text, its buffers growing within `budget`.
    pub(crate) fn new(max_gaps: usize, keep_text: bool, max_text: usize, budget: Budget) -> Rx {
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
            tally: Tally::new(max_gaps, keep_text, max_text, budget),
        }
    }

    /// The budget its buffers grow within.
    pub(crate) fn budget(&self) -> &Budget {
        &self.tally.budget
    }

    /// After a response has been recorded: gives back the text, body and
    /// SSE buffers an unusually large response made grow. Their contents
    /// are dropped; the next `reset` would have cleared them anyway.
    pub(crate) fn shrink(&mut self) {
        self.tally.budget.shrink(&mut self.tally.text);
        self.tally.budget.shrink(&mut self.body);
        if let Some(sse) = &mut self.sse {
            sse.shrink(SHRINK_ABOVE);
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
            .map_err(|_| ErrorClass::MalformedResponse)?;
            if tally.over_cap() {
                return Err(ErrorClass::OutputOverCap);
            }
            Ok(())
        } else if self.keep_body {
            self.keep(data)
        } else {
            // An error response: its first bytes say why.
            self.tally.append_error(data);
            Ok(())
        }
    }

    /// Appends to a kept non-streamed body. Apart from the streamed path,
    /// so that path stays small enough to be inlined whole.
    #[inline(never)]
    fn keep(&mut self, data: &[u8]) -> Result<(), ErrorClass> {
        let need = self.body.len() + data.len();
        if need > MAX_BODY {
            return Err(ErrorClass::MalformedResponse);
        }
        // A body cannot be cut and still parsed: with no room in the
        // worker's budget the response fails.
        if need > self.body.capacity() && !self.tally.budget.grow(&mut self.body, need, MAX_BODY) {
            return Err(ErrorClass::OutputOverCap);
        }
        self.body.extend_from_slice(data);
        Ok(())
    }

    /// Keeps the first piece of an event stream's body (out of line: once
    /// per response, and it would crowd the per-piece path).
    #[cold]
    #[inline(never)]
    fn sniff(&mut self, data: &[u8]) {
        self.body
            .extend_from_slice(&data[..data.len().min(MAX_MESSAGE)]);
    }

    /// Keeps `msg` as the request's error message, over any kept before:
    /// for failures the worker names itself (a TLS reason). Cold: a
    /// failure path.
    #[cold]
    pub(crate) fn set_message(&mut self, msg: &[u8]) {
        self.tally.error = None;
        self.tally.set_error(msg);
    }

    /// The response's status; 0 before its head.
    #[inline]
    pub(crate) fn status(&self) -> u16 {
        self.head.map_or(0, |h| h.status)
    }

    /// The response is complete: reads a kept body into the tally and says
    /// how the request went: an error status, a non-streamed body that is
    /// not one whole JSON document (see `body_not_whole`), an in-band error, a success
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
        if self.keep_body
            && let Some(class) = self.body_not_whole()
        {
            return class;
        }
        self.finish_body(proto);
        let t = &self.tally;
        if t.error.is_some() {
            ErrorClass::InBandError
        } else if t.over_cap() {
            ErrorClass::OutputOverCap
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

    /// A kept body that opens a JSON document without holding a whole one:
    /// cut short by the server's close (`Truncated`: with no framing, the
    /// close is all there is), cut short inside its own framing or not JSON
    /// (`MalformedResponse`). Its keys may still be found, but what they say
    /// is not the server's whole answer. A body that is no JSON document at
    /// all is left to `NoOutput`, which keeps its first bytes.
    #[inline]
    fn body_not_whole(&mut self) -> Option<ErrorClass> {
        let (class, why): (_, &[u8]) = match scan::document(&self.body) {
            Document::Whole | Document::Other => return None,
            Document::Cut if self.head.is_some_and(|h| h.body == BodyKind::UntilClose) => (
                ErrorClass::Truncated,
                b"the server closed the connection inside the body's JSON document",
            ),
            Document::Cut => (
                ErrorClass::MalformedResponse,
                b"the body ends inside its JSON document",
            ),
            Document::Invalid => (
                ErrorClass::MalformedResponse,
                b"the body is not one JSON document",
            ),
        };
        self.set_message(why);
        Some(class)
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

impl Drop for Rx {
    /// The buffers' bytes go back to the budget with them.
    fn drop(&mut self) {
        let b = &self.tally.budget;
        b.release(self.tally.text.capacity() + self.body.capacity());
    }
}

#[cfg(test)]
mod tests;
