//! One client connection: its buffers, the request being read, and the
//! response being paced out. Requests are handled strictly in order: the
//! next pipelined request is parsed only once the current response has been
//! produced in full, so responses can never interleave. Buffers belong to the
//! connection and keep their capacity from request to request, so a
//! keep-alive connection in steady state allocates nothing; a response that
//! is due at once goes out with the same `write` as any response before it
//! in the same turn.
//!
//! Output is bounded: a stream stops producing events while more than
//! `HIGH_WATER` bytes wait for the socket, and resumes on the writable edge,
//! so a slow or stalled reader costs memory in proportion to the socket, not
//! to the response. Input is bounded the same way (`IN_SOFT` bytes of
//! pipelined requests, or the current request's own size).
//!
//! The wire format of a request (chat, text completions, SGLang, Anthropic)
//! decides only the bytes, through `formats`; the pacing, the fault
//! schedule and the access checks here are one code path for all of them.

mod refusal;

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;

use mio::net::TcpStream;

use super::access::Access;
use super::faults::{Fault, FaultPlan};
use super::formats::{self, Events, Format, Identity, Problem, Reply, openai};
use super::head::{self, Body, Framing, Head, Method, ResponseHead, Route, Status};
use super::stats::WorkerCounters;
use super::timer::TimerQueue;
use crate::http::chunked::write_last_chunk;
use crate::sys::socket;
use refusal::{Failure, NO_KEY, Rejection, output_tokens};

/// Initial read buffer per connection.
const IN_MIN: usize = 8 * 1024;
/// Buffered input beyond which reading pauses, unless the request being
/// read is larger (then its own size is the limit).
const IN_SOFT: usize = 64 * 1024;
/// A read buffer grown past this is given back once it is empty.
const IN_KEEP: usize = 256 * 1024;
/// Largest request body accepted.
pub(crate) const MAX_BODY: u64 = 64 * 1024 * 1024;
/// Unsent output at which a stream pauses and request parsing stops.
const HIGH_WATER: usize = 256 * 1024;
/// Events one stream may emit in one go before yielding to the others.
const BATCH: u32 = 256;

/// What a fault of kind malformed sends: an HTTP-looking line that is not.
pub const MALFORMED: &[u8] = b"HTXP/1.1 200 OK\r\n\r\ngarbage";

/// Server-wide settings a connection reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub ttft_ns: u64,
    pub tpot_ns: u64,
    /// Fixed output length, overriding the request's.
    pub output_tokens: Option<u32>,
    /// The first this many output tokens are reasoning (where the format
    /// has reasoning).
    pub reasoning: u32,
    /// Answer `"stream": true` requests with one JSON body anyway.
    pub ignore_stream: bool,
    pub no_usage: bool,
    /// This worker's index, part of every response id.
    pub worker: u32,
    /// Unix seconds when the worker started (the model's `created`).
    pub started_unix: u64,
}

/// Worker-wide state every connection shares.
pub(crate) struct Ctx<'a> {
    pub settings: Settings,
    pub counters: &'a WorkerCounters,
    pub faults: FaultPlan,
    pub access: Access,
    pub timers: TimerQueue,
    /// Responses started by this worker, for unique ids.
    pub seq: u64,
}

/// What the worker should do with the connection after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Open,
    /// Close normally (FIN).
    Close,
    /// Close with RST (an injected reset).
    Reset,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Server-sent events; `chunked` is false only for HTTP/1.0 clients,
    /// whose stream ends when the connection closes.
    Stream { chunked: bool },
    /// One JSON body, prebuilt in `deferred`.
    Full,
}

/// A response under way.
#[derive(Clone, Copy, Debug)]
struct Response {
    kind: Kind,
    reply: Reply,
    arrival: u64,
    /// Next output token to send (streams).
    next: u32,
    /// Reset the connection instead of sending token `next == reset_at`
    /// (streams), or instead of the body (`Some(0)`, non-streamed).
    reset_at: Option<u32>,
    /// Send the in-band error instead of token `next == inband_at` and end
    /// the stream (streams); the body is the error and comes at that token's
    /// time (non-streamed).
    inband_at: Option<u32>,
}

impl Response {
    /// When the next action is due.
    fn due(&self, s: &Settings) -> u64 {
        let n = self.reply.n;
        let k = match self.kind {
            Kind::Stream { .. } if self.next < n => self.next,
            // A body, like a stream's finish events, comes with the last
            // token (with no tokens, at the first-token time).
            Kind::Stream { .. } => n.saturating_sub(1),
            Kind::Full => self.inband_at.unwrap_or(n.saturating_sub(1)),
        };
        self.arrival
            .saturating_add(s.ttft_ns)
            .saturating_add(u64::from(k).saturating_mul(s.tpot_ns))
    }
}

enum Next {
    /// No complete request is buffered.
    NeedMore,
    /// A request was answered (or its response started).
    Handled,
    End(Outcome),
}

enum Step {
    Waiting,
    Finished,
    End(Outcome),
}

pub(crate) struct Conn {
    sock: TcpStream,
    slot: u32,
    generation: u32,
    inb: Vec<u8>,
    in_start: usize,
    in_end: usize,
    out: Vec<u8>,
    out_pos: usize,
    /// The head of the request whose body is still arriving.
    head: Option<Head>,
    continue_sent: bool,
    resp: Option<Response>,
    /// Stream event prefix (id, object, created, model) of `resp`.
    prefix: Vec<u8>,
    /// Where an event or body is built before it is framed.
    scratch: Vec<u8>,
    /// A non-streamed response, head and body, waiting for its time.
    deferred: Vec<u8>,
    /// Close once the current response is out; parse nothing more.
    close_after: bool,
    peer_eof: bool,
    /// The poll reported the peer's end closed; EOF is yet to be read.
    hup_seen: bool,
    /// Reading stopped at the input limit; more may wait in the socket.
    read_paused: bool,
    /// A stream paused at `HIGH_WATER`; the writable edge resumes it.
    write_wait: bool,
    /// The deadline of this connection's live timer entry, 0 for none.
    pub timer_at: u64,
}

impl Conn {
    pub(crate) fn new(sock: TcpStream, slot: u32, generation: u32) -> Self {
        Conn {
            sock,
            slot,
            generation,
            inb: vec![0; IN_MIN],
            in_start: 0,
            in_end: 0,
            out: Vec::new(),
            out_pos: 0,
            head: None,
            continue_sent: false,
            resp: None,
            prefix: Vec::new(),
            scratch: Vec::new(),
            deferred: Vec::new(),
            close_after: false,
            peer_eof: false,
            hup_seen: false,
            read_paused: false,
            write_wait: false,
            timer_at: 0,
        }
    }

    /// Ends the connection with RST when it is dropped.
    pub(crate) fn set_reset(&self) {
        let _ = socket::set_linger_zero(self.sock.as_raw_fd());
    }

    /// A readiness event from the poll; `hup` when it reported the peer's
    /// end closed (or an error).
    pub(crate) fn on_io(
        &mut self,
        ctx: &mut Ctx<'_>,
        readable: bool,
        writable: bool,
        hup: bool,
    ) -> Outcome {
        self.hup_seen |= hup;
        if writable {
            if self.flush().is_err() {
                return Outcome::Close;
            }
            if self.write_wait && self.pending_out() == 0 {
                self.write_wait = false;
                let now = crate::clock::now_ns();
                match self.step(ctx, now) {
                    Step::End(o) => return o,
                    Step::Waiting | Step::Finished => {}
                }
            }
        }
        if readable && self.read_some().is_err() {
            return Outcome::Close;
        }
        // Arrival is when the request is in memory, so the clock is read
        // after the read, not when the event was dequeued.
        let now = crate::clock::now_ns();
        self.settle(ctx, now)
    }

    /// This connection's timer expired at or before `now`.
    pub(crate) fn on_timer(&mut self, ctx: &mut Ctx<'_>, now: u64) -> Outcome {
        self.timer_at = 0;
        if self.resp.is_some() && !self.write_wait {
            match self.step(ctx, now) {
                Step::End(o) => return o,
                Step::Waiting | Step::Finished => {}
            }
        }
        self.settle(ctx, now)
    }

    fn pending_out(&self) -> usize {
        self.out.len() - self.out_pos
    }

    /// Asks for `on_timer` at `t`. One live entry per connection: an entry
    /// already due earlier will call back in time to re-decide.
    fn arm(&mut self, ctx: &mut Ctx<'_>, t: u64) {
        if self.timer_at != 0 && self.timer_at <= t {
            return;
        }
        ctx.timers.schedule(t, self.slot, self.generation);
        self.timer_at = t;
    }

    /// Writes buffered output until done or the socket is full.
    fn flush(&mut self) -> io::Result<()> {
        while self.out_pos < self.out.len() {
            match self.sock.write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.out_pos > HIGH_WATER {
                        self.out.drain(..self.out_pos);
                        self.out_pos = 0;
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.out_pos = 0;
        if self.out.capacity() > 4 * HIGH_WATER {
            self.out.shrink_to(HIGH_WATER);
        }
        Ok(())
    }

    /// Bytes the request being read needs buffered, once its head is known.
    fn request_len(&self) -> usize {
        match self.head {
            Some(Head {
                len,
                body: Body::Length(n),
                ..
            }) if n <= MAX_BODY => len + n as usize,
            _ => 0,
        }
    }

    /// Reads until the socket is drained, the peer has finished sending, or
    /// the input limit is reached.
    fn read_some(&mut self) -> io::Result<()> {
        loop {
            if self.peer_eof {
                return Ok(());
            }
            let buffered = self.in_end - self.in_start;
            let budget = IN_SOFT.max(self.request_len());
            if buffered >= budget {
                self.read_paused = true;
                return Ok(());
            }
            if self.in_start == self.in_end {
                self.in_start = 0;
                self.in_end = 0;
            }
            if self.inb.len() - self.in_end < 2048 {
                if self.in_start > 0 {
                    self.inb.copy_within(self.in_start..self.in_end, 0);
                    self.in_end -= self.in_start;
                    self.in_start = 0;
                }
                if self.inb.len() - self.in_end < 2048 {
                    let target = (self.inb.len() * 2)
                        .max(self.request_len())
                        .min(budget)
                        .max(self.in_end + 1);
                    self.inb.resize(target, 0);
                }
            }
            let room = self.inb.len() - self.in_end;
            match self.sock.read(&mut self.inb[self.in_end..]) {
                Ok(0) => {
                    self.peer_eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.in_end += n;
                    // A short read means the socket is empty now, and new
                    // data raises a fresh edge, so the EAGAIN read is saved.
                    // Not after a hang-up: its edge has been spent, so only
                    // reading on to EOF observes it.
                    if n < room && !self.hup_seen {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Answers buffered requests while no response is under way, flushes,
    /// and decides whether the connection lives on.
    fn settle(&mut self, ctx: &mut Ctx<'_>, now: u64) -> Outcome {
        let mut refills = 0;
        loop {
            while self.resp.is_none() && !self.close_after {
                if self.pending_out() >= HIGH_WATER {
                    if self.flush().is_err() {
                        return Outcome::Close;
                    }
                    if self.pending_out() > 0 {
                        // The writable edge brings us back.
                        break;
                    }
                }
                match self.next_request(ctx, now) {
                    Next::NeedMore => break,
                    Next::Handled => {}
                    Next::End(o) => return o,
                }
            }
            if self.flush().is_err() {
                return Outcome::Close;
            }
            let idle = self.resp.is_none() && !self.close_after;
            if self.read_paused && idle && self.pending_out() < HIGH_WATER {
                refills += 1;
                if refills > 8 {
                    // A client pipelining without pause: let the other
                    // connections run and come back on the next turn.
                    self.arm(ctx, now);
                    break;
                }
                self.read_paused = false;
                if self.read_some().is_err() {
                    return Outcome::Close;
                }
                continue;
            }
            break;
        }
        let quiet = self.pending_out() == 0 && self.resp.is_none();
        if quiet && (self.close_after || self.peer_eof) {
            Outcome::Close
        } else {
            Outcome::Open
        }
    }

    /// Parses the next buffered request and answers it or starts its
    /// response.
    fn next_request(&mut self, ctx: &mut Ctx<'_>, now: u64) -> Next {
        let buffered = &self.inb[self.in_start..self.in_end];
        let head = match self.head {
            Some(h) => h,
            None => {
                if buffered.is_empty() {
                    return Next::NeedMore;
                }
                match head::parse(buffered, ctx.access.key.as_ref()) {
                    Ok(Some(h)) => {
                        self.head = Some(h);
                        self.continue_sent = false;
                        h
                    }
                    Ok(None) if buffered.len() < head::MAX_HEAD => return Next::NeedMore,
                    Ok(None) => {
                        self.reject_stream(Status::HeadersTooLarge, "request head too large");
                        return Next::Handled;
                    }
                    Err(e) => {
                        self.reject_stream(e.status(), e.message());
                        return Next::Handled;
                    }
                }
            }
        };
        let body_len = match head.body {
            Body::Encoded => {
                // The body's end cannot be found without decoding it, so the
                // connection cannot continue.
                self.reject_stream(
                    Status::LengthRequired,
                    "chunked request bodies are not supported; send Content-Length",
                );
                return Next::Handled;
            }
            Body::Length(n) if n > MAX_BODY => {
                self.reject_stream(Status::PayloadTooLarge, "request body over 64 MiB");
                return Next::Handled;
            }
            Body::Length(n) => n as usize,
            Body::None => 0,
        };
        let total = head.len + body_len;
        if buffered.len() < total {
            if head.expect_continue && !self.continue_sent {
                self.out.extend_from_slice(head::CONTINUE);
                self.continue_sent = true;
            }
            return Next::NeedMore;
        }
        let body_start = self.in_start + head.len;
        self.in_start += total;
        self.head = None;
        // The body is read from the input buffer while the response is built
        // in the others; taking the buffer out for the call keeps the borrows
        // apart without copying.
        let inb = std::mem::take(&mut self.inb);
        let next = self.dispatch(ctx, now, &head, &inb[body_start..body_start + body_len]);
        self.inb = inb;
        if self.in_start == self.in_end && self.inb.len() > IN_KEEP {
            self.inb = vec![0; IN_MIN];
            self.in_start = 0;
            self.in_end = 0;
        }
        next
    }

    fn dispatch(&mut self, ctx: &mut Ctx<'_>, now: u64, head: &Head, body: &[u8]) -> Next {
        match (head.route, head.method) {
            (Route::Generate(format), Method::Post) => self.generate(ctx, now, head, body, format),
            (Route::Models, Method::Get) => {
                if !head.authorized {
                    WorkerCounters::bump(&ctx.counters.unauthorized, 1);
                    self.error(
                        head,
                        None,
                        Failure::of(Status::Unauthorized, NO_KEY),
                        0,
                        b"",
                    );
                    return Next::Handled;
                }
                self.scratch.clear();
                openai::models_body(
                    &mut self.scratch,
                    &ctx.access.listed(),
                    ctx.settings.started_unix,
                );
                self.simple(head, Status::Ok, 0, b"");
                Next::Handled
            }
            (Route::Generate(format), _) => {
                let fail = Failure::of(Status::MethodNotAllowed, "method not allowed; use POST");
                self.error(head, Some(format), fail, 0, b"allow: POST\r\n");
                Next::Handled
            }
            (Route::Models, _) => {
                let fail = Failure::of(Status::MethodNotAllowed, "method not allowed; use GET");
                self.error(head, None, fail, 0, b"allow: GET\r\n");
                Next::Handled
            }
            (Route::Unknown, _) => {
                let msg = "unknown path; this server has POST /v1/chat/completions, \
                           POST /v1/completions, POST /generate, POST /v1/messages \
                           and GET /v1/models";
                self.error(head, None, Failure::of(Status::NotFound, msg), 0, b"");
                Next::Handled
            }
        }
    }

    /// A JSON response whose body is in `scratch`.
    fn simple(&mut self, head: &Head, status: Status, messages: u32, extra: &[u8]) {
        head::write(
            &mut self.out,
            &ResponseHead {
                status,
                content_type: head::JSON,
                framing: Framing::Length(self.scratch.len()),
                messages,
                keep_alive: head.keep_alive,
                http10: head.http10,
                extra,
            },
        );
        self.out.extend_from_slice(&self.scratch);
        if !head.keep_alive {
            self.close_after = true;
        }
    }

    /// An error response in `format`'s error shape (OpenAI's when `None`).
    fn error(
        &mut self,
        head: &Head,
        format: Option<Format>,
        fail: Failure<'_>,
        messages: u32,
        extra: &[u8],
    ) {
        self.scratch.clear();
        formats::error_body(
            format,
            &mut self.scratch,
            fail.problem,
            fail.status.code(),
            fail.message,
        );
        self.simple(head, fail.status, messages, extra);
    }

    /// An error after which the input cannot be trusted to be in step with
    /// request boundaries: answer, discard what is buffered, close.
    fn reject_stream(&mut self, status: Status, message: &str) {
        let head = Head {
            len: 0,
            method: Method::Other,
            route: Route::Unknown,
            http10: false,
            keep_alive: false,
            body: Body::None,
            expect_continue: false,
            authorized: true,
        };
        self.error(&head, None, Failure::of(status, message), 0, b"");
        self.head = None;
        self.in_start = self.in_end;
        self.close_after = true;
    }

    /// A generation request in any format: decides its fault, then answers
    /// at once (errors) or starts a paced response.
    fn generate(
        &mut self,
        ctx: &mut Ctx<'_>,
        now: u64,
        head: &Head,
        body: &[u8],
        format: Format,
    ) -> Next {
        let c = ctx.counters;
        WorkerCounters::bump(&c.requests, 1);
        WorkerCounters::bump(c.format_requests(format), 1);
        // A missing key is refused before anything else, and outside the
        // fault schedule: the request never reaches the "model".
        if !head.authorized {
            WorkerCounters::bump(&c.unauthorized, 1);
            let fail = Failure::of(Status::Unauthorized, NO_KEY);
            self.error(head, Some(format), fail, 0, b"");
            return Next::Handled;
        }
        if head.body == Body::None {
            let fail = Failure::of(Status::LengthRequired, "Content-Length required");
            self.error(head, Some(format), fail, 0, b"");
            return Next::Handled;
        }
        let parsed = format
            .parse(body)
            .map_err(|m| Rejection::new(Status::BadRequest, Problem::Invalid, m))
            .and_then(|req| {
                if let Some(m) = req.model.as_deref() {
                    if !ctx.access.serves(m) {
                        return Err(Rejection::new(
                            Status::NotFound,
                            Problem::UnknownModel,
                            format!("The model `{m}` does not exist."),
                        ));
                    }
                }
                let n = output_tokens(&ctx.settings, format, req.max_tokens)?;
                Ok((req, n))
            });
        if parsed.as_ref().is_ok_and(|(req, _)| req.stream) {
            WorkerCounters::bump(&c.streams, 1);
        }
        // Every generation request with a body takes its turn in the fault
        // schedule, valid or not, so the counts stay exact; a fault replaces
        // whatever the answer would have been.
        let fault = ctx.faults.next();
        let messages = parsed.as_ref().map_or(0, |(req, _)| req.messages);
        match fault {
            Fault::Error => {
                WorkerCounters::bump(&c.errors_injected, 1);
                let fail = Failure::of(Status::Unavailable, "injected error");
                self.error(head, Some(format), fail, messages, b"");
                return Next::Handled;
            }
            Fault::Malformed => {
                WorkerCounters::bump(&c.malformed_injected, 1);
                self.out.extend_from_slice(MALFORMED);
                self.close_after = true;
                return Next::Handled;
            }
            Fault::Reset | Fault::Inband | Fault::None => {}
        }
        let (req, n) = match parsed {
            Ok(p) => p,
            Err(_) if fault == Fault::Reset => {
                WorkerCounters::bump(&c.resets_injected, 1);
                return Next::End(Outcome::Reset);
            }
            Err(_) if fault == Fault::Inband => {
                // Whether it wanted a stream is unknown: the error comes as
                // the body.
                WorkerCounters::bump(&c.inband_errors_injected, 1);
                self.scratch.clear();
                self.scratch.extend_from_slice(formats::inband_body(format));
                self.simple(head, Status::Ok, 0, b"");
                return Next::Handled;
            }
            Err(r) => {
                if r.problem == Problem::UnknownModel {
                    WorkerCounters::bump(&c.unknown_model, 1);
                }
                let fail = Failure {
                    status: r.status,
                    problem: r.problem,
                    message: &r.message,
                };
                self.error(head, Some(format), fail, 0, b"");
                return Next::Handled;
            }
        };
        let settings = ctx.settings;
        ctx.seq += 1;
        let id = Identity {
            worker: settings.worker,
            seq: ctx.seq,
            created: crate::clock::wall_ns() / 1_000_000_000,
            model: req
                .model
                .as_deref()
                .unwrap_or_else(|| ctx.access.default_model()),
        };
        let mut reply = Reply::new(
            format,
            n,
            settings.reasoning,
            req.prompt_tokens,
            req.include_usage && !settings.no_usage,
        );
        reply.body_usage = !settings.no_usage;
        let stream = req.stream && !settings.ignore_stream;
        // Chunked framing does not exist in HTTP/1.0: a stream to such a
        // client ends by closing the connection.
        let keep_alive = head.keep_alive && !(stream && head.http10);
        if !keep_alive {
            self.close_after = true;
        }
        let kind = if stream {
            let chunked = !head.http10;
            head::write(
                &mut self.out,
                &ResponseHead::stream(req.messages, keep_alive, head.http10),
            );
            let mut ev = Events::new(&mut self.out, &mut self.scratch, chunked);
            formats::start(&reply, &id, &mut self.prefix, &mut ev);
            Kind::Stream { chunked }
        } else {
            self.scratch.clear();
            if fault == Fault::Inband {
                self.scratch.extend_from_slice(formats::inband_body(format));
            } else {
                formats::body(&reply, &id, &mut self.prefix, &mut self.scratch);
            }
            self.deferred.clear();
            head::write(
                &mut self.deferred,
                &ResponseHead {
                    status: Status::Ok,
                    content_type: head::JSON,
                    framing: Framing::Length(self.scratch.len()),
                    messages: req.messages,
                    keep_alive,
                    http10: head.http10,
                    extra: b"",
                },
            );
            self.deferred.extend_from_slice(&self.scratch);
            Kind::Full
        };
        // Both faults strike about halfway through the tokens; a reset
        // replaces a whole body, while an in-band error body simply comes
        // when the stream's error event would have.
        let reset_at = match (fault, kind) {
            (Fault::Reset, Kind::Stream { .. }) => Some(n / 2),
            (Fault::Reset, Kind::Full) => Some(0),
            _ => None,
        };
        let inband_at = (fault == Fault::Inband).then_some(n / 2);
        self.resp = Some(Response {
            kind,
            reply,
            arrival: now,
            next: 0,
            reset_at,
            inband_at,
        });
        match self.step(ctx, now) {
            Step::End(o) => Next::End(o),
            Step::Waiting | Step::Finished => Next::Handled,
        }
    }

    /// Produces every part of the current response that is due at `now`,
    /// then arranges to be called again for the rest.
    fn step(&mut self, ctx: &mut Ctx<'_>, now: u64) -> Step {
        let mut budget = BATCH;
        loop {
            let Some(mut r) = self.resp else {
                return Step::Finished;
            };
            let due = r.due(&ctx.settings);
            if due > now {
                self.arm(ctx, due);
                return Step::Waiting;
            }
            if r.reset_at == Some(r.next) {
                WorkerCounters::bump(&ctx.counters.resets_injected, 1);
                // What was produced before the reset should reach the client.
                let _ = self.flush();
                self.resp = None;
                return Step::End(Outcome::Reset);
            }
            if self.pending_out() >= HIGH_WATER {
                if self.flush().is_err() {
                    return Step::End(Outcome::Close);
                }
                if self.pending_out() > 0 {
                    self.write_wait = true;
                    return Step::Waiting;
                }
            }
            if budget == 0 {
                self.arm(ctx, now);
                return Step::Waiting;
            }
            budget -= 1;
            let c = ctx.counters;
            match r.kind {
                Kind::Full => {
                    self.out.extend_from_slice(&self.deferred);
                    if r.inband_at.is_some() {
                        WorkerCounters::bump(&c.inband_errors_injected, 1);
                        self.resp = None;
                        return Step::Finished;
                    }
                }
                Kind::Stream { chunked } => {
                    let mut ev = Events::new(&mut self.out, &mut self.scratch, chunked);
                    if r.inband_at == Some(r.next) {
                        formats::inband(r.reply.format, &mut ev);
                        if chunked {
                            write_last_chunk(&mut self.out);
                        }
                        WorkerCounters::bump(&c.inband_errors_injected, 1);
                        self.resp = None;
                        return Step::Finished;
                    }
                    if r.next < r.reply.n {
                        formats::token(&r.reply, &self.prefix, r.next, &mut ev);
                        r.next += 1;
                        if r.next < r.reply.n {
                            self.resp = Some(r);
                            continue;
                        }
                    }
                    formats::finish(&r.reply, &self.prefix, &mut ev);
                    if chunked {
                        write_last_chunk(&mut self.out);
                    }
                }
            }
            WorkerCounters::bump(&c.completed, 1);
            WorkerCounters::bump(&c.output_tokens, u64::from(r.reply.n));
            WorkerCounters::bump(&c.prompt_tokens, r.reply.prompt);
            self.resp = None;
            return Step::Finished;
        }
    }
}
