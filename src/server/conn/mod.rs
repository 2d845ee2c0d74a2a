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
//! pipelined requests, or the current request's own size); a request larger
//! than `IN_SOFT` must first reserve its size from the worker's input budget
//! (`InputBudget`), so many large bodies at once are refused with a 503
//! instead of exhausting memory.
//!
//! Time is bounded too: a connection that waits on its client — for a whole
//! request, or for it to read what was sent — records since when
//! (`waiting_since`), and the worker closes it once that is older than the
//! idle timeout. A connection that closes after its response first shuts
//! down its sending side and reads on to the client's end (a lingering
//! close, bounded by `LINGER_NS`): closing with unread input would send a
//! reset that can destroy the response before the client reads it.
//!
//! With TLS, a rustls session sits between the socket and these buffers
//! (`tls`): the handshake comes first, bounded by the idle timeout like any
//! wait on the client; then every read and write goes through the session
//! and nothing above them knows. Reads go on until the socket itself is
//! drained, ciphertext rustls holds counts as unsent output (its buffer is
//! capped, so the high-water bound still holds), a close says close_notify
//! before the lingering close, and a client that does not speak TLS gets
//! rustls's alert. The price is rustls's own copy into its record buffers.
//!
//! The wire format of a request (chat, text completions, SGLang, Anthropic)
//! decides only the bytes, through `formats`; the pacing, the fault
//! schedule and the access checks here are one code path for all of them.

mod refusal;
mod respond;
mod route;
mod tls;
mod wire;

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::{HandshakeKind, ServerConnection};

use super::access::Access;
use super::answers::Replies;
use super::cache::RepeatCache;
use super::faults::{Fault, FaultPlan, MalformedKind};
use super::formats::text::CYCLE;
use super::formats::{
    self, Events, Format, Identity, Output, Problem, Reply, ReplyText, Request, openai,
};
use super::head::{self, Body, Framing, Head, Method, ResponseHead, Route, Status};
use super::metrics::{self, MetricsNames};
use super::stats::{CounterBlock, WorkerCounters};
use super::timer::TimerQueue;
use crate::http::chunked::{write_chunk, write_last_chunk};
use crate::sys::socket;
use crate::tls::io::{self as tls_io, FirstBytes, Handshake};
use refusal::{Failure, NO_KEY, Rejection, output_tokens};

/// Initial read buffer per connection.
const IN_MIN: usize = 8 * 1024;
/// Buffered input beyond which reading pauses, unless the request being
/// read is larger (then its own size is the limit).
const IN_SOFT: usize = 64 * 1024;
/// A read buffer grown past this is given back once it is empty.
const IN_KEEP: usize = 256 * 1024;
/// Largest request body accepted (a smaller input budget lowers it).
pub(crate) const MAX_BODY: u64 = 64 * 1024 * 1024;
/// How long a closing connection waits for its client's end.
pub(crate) const LINGER_NS: u64 = 2_000_000_000;
/// Unsent output at which a stream pauses and request parsing stops.
const HIGH_WATER: usize = 256 * 1024;
/// Events one stream may emit in one go before yielding to the others.
const BATCH: u32 = 256;

/// What a fault of kind malformed sends: an HTTP-looking line that is not.
pub const MALFORMED: &[u8] = b"HTXP/1.1 200 OK\r\n\r\ngarbage";

/// The text of each event of an endless stream: whole vocabulary cycles,
/// about 4 KiB, so a client that keeps text is fed it quickly.
static FAT_TEXT: [u8; 51 * CYCLE.len()] = {
    let cycle = CYCLE.as_bytes();
    let mut b = [0u8; 51 * CYCLE.len()];
    let mut i = 0;
    while i < b.len() {
        b[i] = cycle[i % cycle.len()];
        i += 1;
    }
    b
};

/// Bytes an endless body is made of, a block at a time.
static FILL: [u8; 16 * 1024] = [b'x'; 16 * 1024];

/// `--malformed-kind garbage`: binary bytes, none of them a line of HTTP.
static GARBAGE: [u8; 4096] = {
    let mut b = [0u8; 4096];
    let mut i = 0;
    while i < b.len() {
        b[i] = (i.wrapping_mul(167).wrapping_add(13) % 256) as u8 | 0x80;
        i += 1;
    }
    b
};

/// `--malformed-kind html`: what a proxy or captive portal says instead.
const HTML_PAGE: &[u8] = b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head>\n\
<body><h1>It works!</h1><p>This page is served instead of the API.</p></body></html>\n";

/// A head's lines before the endless body of `--malformed-kind huge-length`.
const HUGE_LENGTH_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
content-length: 10737418240\r\nconnection: close\r\n\r\n\
{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"";

/// The start of the event whose line never ends (`endless-line`).
const ENDLESS_LINE: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";

/// Size of the head `--malformed-kind huge-head` sends.
pub const HUGE_HEAD: usize = 70 * 1024;

/// Server-wide settings a connection reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// Close a connection waiting on its client this long (0: never).
    pub idle_timeout_ns: u64,
    /// Largest request body (413 above).
    pub body_cap: u64,
    /// Send every response one byte per this interval (0: at once).
    pub drip_ns: u64,
    /// Tokens before a mid-stream fault (reset, stall, in-band error);
    /// `None`: half the response.
    pub fault_after: Option<u32>,
    pub malformed: MalformedKind,
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
    /// Answer a body seen before at once (`Ctx::cache`).
    pub cache_repeats: bool,
    /// This worker's index, part of every response id.
    pub worker: u32,
    /// Unix seconds when the worker started (the model's `created`).
    pub started_unix: u64,
    /// Whose names `GET /metrics` uses.
    pub metrics_names: MetricsNames,
    /// Responses the whole server holds at once (`/metrics`' stand-in for
    /// a KV cache's size).
    pub capacity: u64,
}

/// Worker-wide state every connection shares.
pub(crate) struct Ctx<'a> {
    pub settings: Settings,
    pub counters: &'a WorkerCounters,
    /// Every worker's counters, read (never written) for `/metrics`.
    pub all: &'a CounterBlock,
    pub faults: FaultPlan,
    pub access: Access,
    pub timers: TimerQueue,
    pub budget: InputBudget,
    /// Responses started by this worker, for unique ids.
    pub seq: u64,
    /// The TLS configuration every connection is served with, if any.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The bodies this worker has seen, with `--cache-repeats`.
    pub cache: Option<RepeatCache>,
    /// Replies taken from prompts (`--echo`, `--answers`), shared by every
    /// worker.
    pub replies: Option<Arc<Replies>>,
}

/// The worker's input budget: bytes of request input its connections may
/// hold beyond `IN_SOFT` each, together. A connection reserves the size of
/// a large request before buffering it and gives the reservation back when
/// its buffer shrinks, so the sum of all input buffers stays below
/// `connections × IN_SOFT + limit`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InputBudget {
    pub limit: u64,
    pub used: u64,
}

impl InputBudget {
    fn reserve(&mut self, n: u64) -> bool {
        if self.used.saturating_add(n) > self.limit {
            return false;
        }
        self.used += n;
        true
    }

    pub(crate) fn release(&mut self, n: u64) {
        self.used = self.used.saturating_sub(n);
    }
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
    /// A body of `FILL` that never ends, chunked or not (malformed kinds
    /// endless-line and huge-length).
    Filler { chunked: bool },
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
    /// Send nothing more from token `next == stall_at` on (streams), or
    /// instead of the body (`Some(0)`, non-streamed).
    stall_at: Option<u32>,
    /// A stream that never ends, each event carrying `FAT_TEXT`.
    endless: bool,
    /// A repeat answered from the cache: every token is due at arrival.
    cached: bool,
    /// The tokens are the chunks of the connection's `text`, not the
    /// vocabulary.
    text: bool,
}

impl Response {
    /// Whether the response has stopped for good (an injected stall).
    fn stalled(&self) -> bool {
        self.stall_at == Some(self.next)
    }

    /// When the next action is due.
    fn due(&self, s: &Settings) -> u64 {
        let n = self.reply.n;
        let k = match self.kind {
            Kind::Stream { .. } if self.next < n => self.next,
            // A body, like a stream's finish events, comes with the last
            // token (with no tokens, at the first-token time).
            Kind::Stream { .. } => n.saturating_sub(1),
            Kind::Full => self.inband_at.unwrap_or(n.saturating_sub(1)),
            Kind::Filler { .. } => 0,
        };
        if self.cached {
            return self.arrival;
        }
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
    /// The TLS session, when the server speaks TLS: every byte to and from
    /// `sock` goes through it, and nothing else knows. Boxed, so a plain
    /// connection carries one null pointer.
    tls: Option<Box<ServerConnection>>,
    /// close_notify (or a fatal alert) is queued: nothing more is said.
    tls_done: bool,
    /// The sending side is shut down (lingering, once TLS's last records
    /// are out).
    shut: bool,
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
    /// The reply of `resp` when it is a text (`--echo`, `--answers`); made
    /// at the connection's first such reply and reused after.
    text: Option<Box<ReplyText>>,
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
    /// Since when the connection has waited on its client (for a whole
    /// request, for it to read, or for its end while lingering); 0 while it
    /// does not.
    waiting_since: u64,
    /// The sending side is shut down; input is read and dropped until the
    /// client's end.
    lingering: bool,
    /// Answered 503 at accept for the worker's connection cap.
    pub refused: bool,
    /// Bytes of the worker's input budget this connection holds.
    pub reserved: u64,
    /// Send one byte per this interval (0: as fast as the socket takes).
    drip_ns: u64,
    /// When the next dripped byte may leave.
    drip_next: u64,
}

impl Conn {
    /// A new TLS session for an accepted connection (`None` if rustls
    /// refuses the configuration, which it accepted when it was built).
    pub(crate) fn tls_session(config: &Arc<rustls::ServerConfig>) -> Option<Box<ServerConnection>> {
        tls::session(config)
    }

    /// A connection accepted at `now`, through `tls` if the server speaks
    /// TLS.
    pub(crate) fn new(
        sock: TcpStream,
        tls: Option<Box<ServerConnection>>,
        slot: u32,
        generation: u32,
        now: u64,
        drip_ns: u64,
    ) -> Self {
        Conn {
            sock,
            tls,
            tls_done: false,
            shut: false,
            slot,
            generation,
            inb: Vec::new(),
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
            text: None,
            close_after: false,
            peer_eof: false,
            hup_seen: false,
            read_paused: false,
            write_wait: false,
            timer_at: 0,
            waiting_since: now,
            lingering: false,
            refused: false,
            reserved: 0,
            drip_ns,
            drip_next: 0,
        }
    }

    /// A connection over the worker's cap: `busy` (a whole 503 response)
    /// goes out as soon as the socket is writable, then the connection
    /// closes. Nothing it sends is parsed.
    pub(crate) fn refuse(
        sock: TcpStream,
        tls: Option<Box<ServerConnection>>,
        slot: u32,
        generation: u32,
        now: u64,
        busy: &[u8],
    ) -> Self {
        let mut c = Conn::new(sock, tls, slot, generation, now, 0);
        c.out.extend_from_slice(busy);
        c.close_after = true;
        c.refused = true;
        c
    }

    /// Whether the connection has waited on its client for longer than it
    /// may at `now`: `idle_ns` (0: for ever), or `LINGER_NS` when closing.
    pub(crate) fn expired(&self, now: u64, idle_ns: u64) -> bool {
        let limit = if self.lingering { LINGER_NS } else { idle_ns };
        self.waiting_since != 0 && limit != 0 && now.saturating_sub(self.waiting_since) >= limit
    }

    /// Whether the connection is closing (its response sent, its client's
    /// end awaited), rather than idle.
    pub(crate) fn lingering(&self) -> bool {
        self.lingering
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
        if !self.tls_done && self.tls.as_ref().is_some_and(|t| t.is_handshaking()) {
            return self.handshake(ctx, readable);
        }
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
        if self.lingering {
            if !self.shut {
                return self.shut_down();
            }
            return if readable && self.discard() {
                Outcome::Close
            } else {
                Outcome::Open
            };
        }
        if readable && self.read_some().is_err() {
            return Outcome::Close;
        }
        // Arrival is when the request is in memory, so the clock is read
        // after the read, not when the event was dequeued.
        let now = crate::clock::now_ns();
        self.settle(ctx, now)
    }

    /// Moves the TLS handshake on. Once it is done, reads at once: the
    /// request may have come with the client's last flight, and rustls may
    /// already hold it, so no edge would announce it. A failed handshake
    /// leaves rustls's alert for the client (a plain-HTTP client then sees
    /// a TLS record, not silence) and closes lingering, so unread input
    /// cannot turn the close into a reset that destroys the alert.
    fn handshake(&mut self, ctx: &mut Ctx<'_>, readable: bool) -> Outcome {
        let Some(tls) = self.tls.as_deref_mut() else {
            return Outcome::Open;
        };
        if !readable && !tls_io::pending(tls) {
            // The first writable edge: nothing to send, nothing arrived.
            return Outcome::Open;
        }
        let c = ctx.counters;
        match tls_io::handshake(tls, &mut self.sock, &mut FirstBytes::default()) {
            Ok(Handshake::Blocked) => Outcome::Open,
            Ok(Handshake::Done) => {
                WorkerCounters::bump(&c.tls_handshakes, 1);
                if tls.handshake_kind() == Some(HandshakeKind::Resumed) {
                    WorkerCounters::bump(&c.tls_resumed, 1);
                }
                if self.read_some().is_err() {
                    return Outcome::Close;
                }
                let now = crate::clock::now_ns();
                self.settle(ctx, now)
            }
            Err(_) => {
                WorkerCounters::bump(&c.tls_handshake_failures, 1);
                // The alert is the last word: no close_notify after it.
                self.tls_done = true;
                self.close_after = true;
                self.linger(crate::clock::now_ns())
            }
        }
    }

    /// Reads and drops input while lingering; true once the client's end
    /// (or an error) is seen.
    fn discard(&mut self) -> bool {
        if self.inb.len() < IN_MIN {
            self.inb.resize(IN_MIN, 0);
        }
        loop {
            match self.sock.read(&mut self.inb) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return true,
            }
        }
    }

    /// This connection's timer expired at or before `now`.
    pub(crate) fn on_timer(&mut self, ctx: &mut Ctx<'_>, now: u64) -> Outcome {
        self.timer_at = 0;
        if self.lingering {
            return Outcome::Open;
        }
        if self.write_wait && self.pending_out() == 0 {
            // Drained by dripping, with no writable edge to say so.
            self.write_wait = false;
        }
        if self.resp.is_some() && !self.write_wait {
            match self.step(ctx, now) {
                Step::End(o) => return o,
                Step::Waiting | Step::Finished => {}
            }
        }
        self.settle(ctx, now)
    }

    /// Output not yet in the socket: bytes in `out`, plus one for any
    /// ciphertext rustls holds (at most `tls::OUT_LIMIT`), so "nothing
    /// pending" means nothing at all.
    fn pending_out(&self) -> usize {
        let sealed = self.tls.as_deref().is_some_and(|t| tls_io::pending(t));
        self.out.len() - self.out_pos + usize::from(sealed)
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
                        WorkerCounters::bump(&ctx.counters.too_large, 1);
                        let msg = "request head over this server's limit of 64 KiB";
                        self.reject_stream(Status::HeadersTooLarge, msg);
                        return Next::Handled;
                    }
                    Err(e) => {
                        if e.status() == Status::HeadersTooLarge {
                            WorkerCounters::bump(&ctx.counters.too_large, 1);
                        }
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
            Body::Length(n) if n > ctx.settings.body_cap => {
                WorkerCounters::bump(&ctx.counters.too_large, 1);
                let msg = format!(
                    "request body of {n} bytes is over this server's limit of {} bytes",
                    ctx.settings.body_cap
                );
                self.reject_stream(Status::PayloadTooLarge, &msg);
                return Next::Handled;
            }
            Body::Length(n) => n as usize,
            Body::None => 0,
        };
        let total = head.len + body_len;
        // Buffering a request past `IN_SOFT` takes from the worker's budget
        // first; without room, the request is refused, not queued, so no
        // connection waits on another's.
        let need = (total as u64).saturating_sub(IN_SOFT as u64);
        if need > self.reserved {
            if !ctx.budget.reserve(need - self.reserved) {
                WorkerCounters::bump(&ctx.counters.over_budget, 1);
                let msg = format!(
                    "this worker's input budget of {} bytes is taken by other requests; \
                     retry later",
                    ctx.budget.limit
                );
                self.reject_stream(Status::Unavailable, &msg);
                return Next::Handled;
            }
            self.reserved = need;
        }
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
        // A whole request is in: the client owes nothing until the answer.
        self.waiting_since = 0;
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
            ctx.budget.release(self.reserved);
            self.reserved = 0;
        }
        next
    }

    /// Makes `r` the response under way, counted in the `running` gauge
    /// until `end_response` or `abandon`.
    fn start_response(&mut self, c: &WorkerCounters, r: Response) {
        if self.resp.replace(r).is_none() {
            WorkerCounters::bump(&c.running, 1);
        }
    }

    fn end_response(&mut self, c: &WorkerCounters) {
        if self.resp.take().is_some() {
            WorkerCounters::drop_one(&c.running);
        }
    }

    /// The connection is being dropped: a response still under way no
    /// longer runs.
    pub(crate) fn abandon(&mut self, c: &WorkerCounters) {
        self.end_response(c);
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
                self.end_response(ctx.counters);
                return Step::End(Outcome::Reset);
            }
            if r.stalled() {
                // Nothing is armed: only the client's end wakes it again.
                return Step::Waiting;
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
                        self.end_response(c);
                        return Step::Finished;
                    }
                }
                Kind::Filler { chunked } => {
                    if chunked {
                        write_chunk(&mut self.out, &FILL);
                    } else {
                        self.out.extend_from_slice(&FILL);
                    }
                    // The loop flushes at `HIGH_WATER` and yields after a
                    // batch: the body goes on as fast as the client reads.
                    continue;
                }
                Kind::Stream { chunked } => {
                    let mut ev = Events::new(&mut self.out, &mut self.scratch, chunked);
                    if r.inband_at == Some(r.next) {
                        formats::inband(r.reply.format, &mut ev);
                        if chunked {
                            write_last_chunk(&mut self.out);
                        }
                        WorkerCounters::bump(&c.inband_errors_injected, 1);
                        self.end_response(c);
                        return Step::Finished;
                    }
                    if r.next < r.reply.n {
                        let said = self.text.as_deref().filter(|_| r.text);
                        if r.endless && r.next > r.reply.reasoning {
                            let (reply, k) = (&r.reply, r.next);
                            formats::text_event(reply, &self.prefix, k, &FAT_TEXT, &mut ev);
                        } else if let Some(t) = said {
                            formats::chunk_event(&r.reply, &self.prefix, r.next, t, &mut ev);
                        } else {
                            formats::token(&r.reply, &self.prefix, r.next, &mut ev);
                        }
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
            self.end_response(c);
            return Step::Finished;
        }
    }
}
