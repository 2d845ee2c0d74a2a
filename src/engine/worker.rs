//! A worker process: one mio event loop that takes requests from its issue
//! ring, writes their prebuilt bytes on keep-alive connections, timestamps
//! and parses the responses, and pushes one completion record per request to
//! its completion ring. It never allocates per request (connection buffers
//! are allocated on a connection's first use and reused), never formats, and
//! makes no syscall beyond the socket I/O, `epoll_wait`, and a doorbell
//! write when the parent sleeps.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::conn::{Rx, Step};
use super::record::{self, Completion};
use super::requests::RequestSet;
use super::shared::{IssueSlot, Shared, WorkerCounters, phase};
use crate::clock::now_ns;
use crate::http::response::{MAX_HEAD_LEN, parse_head};
use crate::metrics::errors::ErrorClass;
use crate::protocol::Protocol;
use crate::shm::ring::{ByteProducer, PushError, SlotConsumer};

/// What a worker needs; inherited through `fork()`.
pub struct WorkerSetup<'a> {
    pub index: usize,
    pub shared: &'a Shared,
    pub requests: &'a RequestSet,
    pub protocol: &'a dyn Protocol,
    pub addr: SocketAddr,
    /// Connections this worker may open.
    pub max_conns: usize,
    pub timeout_ns: u64,
    pub connect_timeout_ns: u64,
    /// Inter-token gaps kept per request.
    pub max_gaps: usize,
    /// Connections to open before reporting ready, so a closed loop's first
    /// requests do not queue behind a burst of TCP handshakes.
    pub warm_conns: usize,
    /// Keep each response's output text and send it with the record (for
    /// counting tokens in the parent, or recording outputs).
    pub keep_text: bool,
}

const BELL: Token = Token(usize::MAX);
/// Per-connection receive buffer; a response head must fit in it.
const READ_BUF: usize = 16 * 1024;
/// How often timeouts are checked.
const SWEEP_NS: u64 = 5_000_000;
/// Output text a record carries at most (a quarter of the completion ring
/// minus room for the gaps).
const MAX_TEXT: usize = 512 * 1024;
/// Requests waiting in the worker for a connection, at most.
const PENDING_CAP: usize = 16384;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Empty,
    Connecting,
    Idle,
    Sending,
    Receiving,
}

#[derive(Clone, Copy, Debug, Default)]
struct Job {
    slot: IssueSlot,
    t_dispatch: u64,
    retried: bool,
}

struct Conn {
    phase: Phase,
    /// Connecting ahead of any request (warm-up); no job is attached.
    warm: bool,
    stream: Option<TcpStream>,
    /// Responses this connection has completed; > 0 means it was reused.
    served: u32,
    job: Job,
    written: usize,
    t_connect: u64,
    buf: Vec<u8>,
    filled: usize,
    rx: Rx,
}

/// Runs worker `setup.index` until the parent says exit; returns the exit code.
pub fn run(setup: WorkerSetup<'_>) -> i32 {
    match Worker::new(setup) {
        Ok(mut w) => {
            w.run();
            0
        }
        Err(_) => 3,
    }
}

struct Worker<'a> {
    s: WorkerSetup<'a>,
    counters: &'a WorkerCounters,
    poll: Poll,
    conns: Vec<Conn>,
    free: Vec<usize>,
    idle: Vec<usize>,
    pending: VecDeque<Job>,
    issue: SlotConsumer<IssueSlot>,
    out: ByteProducer,
    /// Encoded records the completion ring had no room for, in order.
    backlog: Vec<u8>,
    /// Connections carrying a request (Connecting, Sending, Receiving).
    busy: usize,
    published: bool,
}

impl<'a> Worker<'a> {
    fn new(s: WorkerSetup<'a>) -> io::Result<Worker<'a>> {
        let poll = Poll::new()?;
        let bell = &s.shared.worker_bells[s.index];
        poll.registry()
            .register(&mut SourceFd(&bell.fd()), BELL, Interest::READABLE)?;
        let (issue, out) = s.shared.worker_ends(s.index);
        let conns = (0..s.max_conns)
            .map(|_| Conn {
                phase: Phase::Empty,
                warm: false,
                stream: None,
                served: 0,
                job: Job::default(),
                written: 0,
                t_connect: 0,
                buf: Vec::new(),
                filled: 0,
                rx: Rx::new(0, false),
            })
            .collect();
        Ok(Worker {
            counters: s.shared.counters(s.index),
            free: (0..s.max_conns).rev().collect(),
            idle: Vec::with_capacity(s.max_conns),
            pending: VecDeque::with_capacity(PENDING_CAP),
            backlog: Vec::new(),
            busy: 0,
            published: false,
            poll,
            conns,
            issue,
            out,
            s,
        })
    }

    fn run(&mut self) {
        let mut events = Events::with_capacity(1024);
        let bell = &self.s.shared.worker_bells[self.s.index];
        let mut aborted = false;
        let mut next_sweep = 0;
        self.warm_up(&mut events);
        self.counters.ready.store(1, Ordering::Release);
        let mut busy_from = now_ns();
        loop {
            let ph = self.s.shared.phase();
            if ph == phase::EXIT {
                break;
            }
            let now = now_ns();
            if ph == phase::ABORT && !aborted {
                aborted = true;
                self.abort_all(now);
            }
            if !aborted {
                self.take_issues(now);
            }
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + SWEEP_NS;
            }
            self.flush_backlog();
            if self.published {
                self.published = false;
                self.s.shared.parent_bell.ring();
            }
            if aborted && self.busy == 0 && self.pending.is_empty() && self.backlog.is_empty() {
                self.counters.finished.store(1, Ordering::Release);
            }

            let mut timeout = if self.busy > 0 || !self.backlog.is_empty() {
                Duration::from_nanos(next_sweep.saturating_sub(now_ns()))
            } else {
                Duration::from_secs(1)
            };
            let t = now_ns();
            self.counters
                .busy_ns
                .fetch_add(t - busy_from, Ordering::Relaxed);
            bell.prepare_sleep();
            if !self.issue.is_empty() || self.s.shared.phase() != ph {
                timeout = Duration::ZERO;
            }
            let polled = self.poll.poll(&mut events, Some(timeout));
            bell.cancel_sleep();
            busy_from = now_ns();
            if let Err(e) = polled {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
                continue;
            }
            for ev in events.iter() {
                let tok = ev.token();
                if tok == BELL {
                    continue;
                }
                self.on_event(
                    tok.0,
                    ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                    ev.is_writable() || ev.is_error(),
                );
            }
            self.drain_pending();
        }
        for c in &mut self.conns {
            c.stream = None;
        }
    }

    /// Opens `warm_conns` connections and waits (bounded) until each is
    /// connected or has failed; failures are not errors, since no request
    /// was riding on them, and the slot connects again on demand.
    fn warm_up(&mut self, events: &mut Events) {
        let n = self.s.warm_conns.min(self.conns.len());
        if n == 0 {
            return;
        }
        for _ in 0..n {
            let Some(i) = self.free.pop() else { break };
            self.conns[i].warm = true;
            self.connect(i, Job::default());
        }
        let deadline = now_ns() + self.s.connect_timeout_ns.min(2_000_000_000);
        while self.conns.iter().any(|c| c.warm) && now_ns() < deadline {
            if self
                .poll
                .poll(events, Some(Duration::from_millis(10)))
                .is_err()
            {
                break;
            }
            for ev in events.iter() {
                if ev.token() != BELL {
                    self.on_event(
                        ev.token().0,
                        ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                        ev.is_writable() || ev.is_error(),
                    );
                }
            }
        }
        for i in 0..self.conns.len() {
            if self.conns[i].warm {
                self.fail(i, ErrorClass::ConnectTimeout, now_ns());
            }
        }
    }

    /// Moves requests from the issue ring to connections or the pending queue.
    fn take_issues(&mut self, now: u64) {
        while self.pending.len() < PENDING_CAP {
            let Some(slot) = self.issue.pop() else { break };
            let job = Job {
                slot,
                t_dispatch: now,
                retried: false,
            };
            if self.pending.is_empty() && self.dispatch(job) {
                continue;
            }
            self.counters
                .waited_for_connection
                .fetch_add(1, Ordering::Relaxed);
            self.pending.push_back(job);
        }
        self.drain_pending();
    }

    fn drain_pending(&mut self) {
        while let Some(&job) = self.pending.front() {
            if !self.dispatch(job) {
                break;
            }
            self.pending.pop_front();
        }
    }

    /// Starts `job` on an idle or new connection; false when none is free.
    fn dispatch(&mut self, job: Job) -> bool {
        if let Some(i) = self.idle.pop() {
            self.start(i, job);
            true
        } else if let Some(i) = self.free.pop() {
            self.connect(i, job);
            true
        } else {
            false
        }
    }

    fn connect(&mut self, i: usize, job: Job) {
        if !self.conns[i].warm {
            self.busy += 1;
        }
        let now = now_ns();
        let c = &mut self.conns[i];
        c.job = job;
        c.served = 0;
        c.t_connect = now;
        c.rx.reset(0);
        match TcpStream::connect(self.s.addr) {
            Ok(mut stream) => {
                let _ = stream.set_nodelay(true);
                if let Err(e) = self.poll.registry().register(
                    &mut stream,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    c.stream = Some(stream);
                    self.fail(i, connect_error(&e), now);
                    return;
                }
                c.stream = Some(stream);
                c.phase = Phase::Connecting;
            }
            Err(e) => {
                c.phase = Phase::Connecting;
                self.fail(i, connect_error(&e), now);
            }
        }
    }

    /// Sends `job` on connected, idle connection `i`.
    fn start(&mut self, i: usize, job: Job) {
        self.busy += 1;
        let c = &mut self.conns[i];
        c.job = job;
        self.begin_send(i);
    }

    fn begin_send(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.phase = Phase::Sending;
        c.written = 0;
        c.filled = 0;
        c.rx.reset(now_ns());
        self.write_more(i);
    }

    fn on_event(&mut self, i: usize, readable: bool, writable: bool) {
        match self.conns[i].phase {
            Phase::Empty => {}
            Phase::Connecting => {
                if !(readable || writable) {
                    return;
                }
                let c = &mut self.conns[i];
                let stream = c.stream.as_ref().expect("connecting has a stream");
                match stream.take_error() {
                    Ok(Some(e)) | Err(e) => {
                        let class = connect_error(&e);
                        self.fail(i, class, now_ns());
                        return;
                    }
                    Ok(None) => {}
                }
                match stream.peer_addr() {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                    Err(e) => {
                        let class = connect_error(&e);
                        self.fail(i, class, now_ns());
                        return;
                    }
                }
                if c.buf.is_empty() {
                    c.buf.resize(READ_BUF, 0);
                    c.rx = Rx::new(self.s.max_gaps, self.s.keep_text);
                }
                self.counters
                    .connections_opened
                    .fetch_add(1, Ordering::Relaxed);
                if c.warm {
                    c.warm = false;
                    c.phase = Phase::Idle;
                    self.idle.push(i);
                    return;
                }
                self.begin_send(i);
                if readable && self.conns[i].phase == Phase::Receiving {
                    self.read_more(i);
                }
            }
            Phase::Sending => {
                if writable {
                    self.write_more(i);
                }
                if readable && matches!(self.conns[i].phase, Phase::Sending | Phase::Receiving) {
                    self.read_more(i);
                }
            }
            Phase::Receiving => {
                if readable {
                    self.read_more(i);
                }
            }
            Phase::Idle => {
                if readable {
                    self.check_idle(i);
                }
            }
        }
    }

    fn write_more(&mut self, i: usize) {
        let bytes = self.s.requests.get(self.conns[i].job.slot.sample);
        loop {
            let c = &mut self.conns[i];
            let stream = c.stream.as_mut().expect("sending has a stream");
            match stream.write(&bytes[c.written..]) {
                Ok(n) => {
                    c.written += n;
                    if c.written == bytes.len() {
                        c.phase = Phase::Receiving;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lost(i, io_error(&e));
                    return;
                }
            }
        }
    }

    fn read_more(&mut self, i: usize) {
        let proto = self.s.protocol;
        loop {
            let c = &mut self.conns[i];
            if c.filled == c.buf.len() {
                // Only a head can fill the buffer: bodies are consumed whole.
                self.fail(i, ErrorClass::MalformedResponse, now_ns());
                return;
            }
            let space = c.buf.len() - c.filled;
            let stream = c.stream.as_mut().expect("receiving has a stream");
            let n = match stream.read(&mut c.buf[c.filled..]) {
                Ok(0) => {
                    self.on_eof(i);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.lost(i, io_error(&e));
                    return;
                }
            };
            let t = now_ns();
            c.filled += n;
            if c.rx.t_first_byte == 0 {
                c.rx.t_first_byte = t;
            }
            let mut start = 0;
            if c.rx.head.is_none() {
                loop {
                    match parse_head(&c.buf[..c.filled]) {
                        Ok(None) if c.filled < MAX_HEAD_LEN.min(c.buf.len()) => break,
                        Ok(None) | Err(_) => {
                            self.fail(i, ErrorClass::MalformedResponse, t);
                            return;
                        }
                        Ok(Some(h)) if (100..200).contains(&h.status) && h.status != 101 => {
                            c.buf.copy_within(h.len..c.filled, 0);
                            c.filled -= h.len;
                        }
                        Ok(Some(h)) => {
                            start = h.len;
                            if let Step::Done { keep_alive } = c.rx.begin(h) {
                                let extra = c.filled > start;
                                self.complete(i, keep_alive && !extra, t);
                                return;
                            }
                            break;
                        }
                    }
                }
                if c.rx.head.is_none() {
                    if n < space {
                        return;
                    }
                    continue;
                }
            }
            let step = c.rx.feed(&c.buf[start..c.filled], t, proto);
            c.filled = 0;
            match step {
                Ok(Step::More) => {}
                Ok(Step::Done { keep_alive }) => {
                    self.complete(i, keep_alive, t);
                    return;
                }
                Err(class) => {
                    self.fail(i, class, t);
                    return;
                }
            }
            if n < space {
                // A short read drained the socket; the next edge brings more.
                return;
            }
        }
    }

    fn on_eof(&mut self, i: usize) {
        let t = now_ns();
        let c = &mut self.conns[i];
        match c.phase {
            Phase::Idle => self.close_idle(i),
            _ if c.rx.eof_completes() => self.complete(i, false, t),
            _ => self.lost(i, ErrorClass::Reset),
        }
    }

    /// The connection broke mid-request. A reused keep-alive connection that
    /// broke before any response byte was most likely closed by the server
    /// while idle; the request is re-sent once on a new connection instead of
    /// being charged to the endpoint.
    fn lost(&mut self, i: usize, class: ErrorClass) {
        let c = &mut self.conns[i];
        if c.served > 0 && c.rx.t_first_byte == 0 && !c.job.retried {
            let mut job = c.job;
            job.retried = true;
            self.counters.stale_retries.fetch_add(1, Ordering::Relaxed);
            self.close(i);
            self.free.push(i);
            self.busy -= 1;
            self.pending.push_front(job);
            return;
        }
        self.fail(i, class, now_ns());
    }

    fn check_idle(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let stream = c.stream.as_mut().expect("idle has a stream");
        let mut probe = [0u8; 1];
        match stream.read(&mut probe) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // EOF, stray bytes or an error: the connection is unusable.
            _ => self.close_idle(i),
        }
    }

    fn close_idle(&mut self, i: usize) {
        if let Some(pos) = self.idle.iter().position(|&x| x == i) {
            self.idle.swap_remove(pos);
        }
        self.close(i);
        self.free.push(i);
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.phase = Phase::Empty;
        c.filled = 0;
    }

    /// A complete response on connection `i`.
    fn complete(&mut self, i: usize, keep_alive: bool, t_end: u64) {
        let proto = self.s.protocol;
        let c = &mut self.conns[i];
        let status = c.rx.head.map_or(0, |h| h.status);
        let error = if (200..300).contains(&status) {
            c.rx.finish_body(proto);
            if c.rx.tally.error.is_some() {
                ErrorClass::InBandError
            } else {
                ErrorClass::None
            }
        } else {
            ErrorClass::HttpStatus
        };
        self.emit(i, error, status, t_end);
        let c = &mut self.conns[i];
        c.served += 1;
        self.busy -= 1;
        if keep_alive && c.phase == Phase::Receiving {
            c.phase = Phase::Idle;
            self.idle.push(i);
        } else {
            self.close(i);
            self.free.push(i);
        }
    }

    /// Request on connection `i` failed: record it and drop the connection.
    fn fail(&mut self, i: usize, class: ErrorClass, t_end: u64) {
        if self.conns[i].warm {
            self.conns[i].warm = false;
            self.close(i);
            self.free.push(i);
            return;
        }
        let status = self.conns[i].rx.head.map_or(0, |h| h.status);
        self.emit(i, class, status, t_end);
        self.busy -= 1;
        self.close(i);
        self.free.push(i);
    }

    fn emit(&mut self, i: usize, error: ErrorClass, status: u16, t_end: u64) {
        let c = &self.conns[i];
        let rx = &c.rx;
        let tally = &rx.tally;
        let mut flags = 0;
        if rx.sse_mode {
            flags |= record::STREAMED;
        }
        if tally.gaps_truncated {
            flags |= record::GAPS_TRUNCATED;
            self.counters.itl_truncated.fetch_add(1, Ordering::Relaxed);
        }
        let rec = Completion {
            seq: c.job.slot.seq,
            t_sched: c.job.slot.t_sched,
            t_send: rx.t_send,
            t_first_byte: rx.t_first_byte,
            t_first_token: tally.t_first_token,
            t_last_token: tally.t_last_token,
            t_end,
            sample: c.job.slot.sample,
            stage: c.job.slot.stage,
            status,
            error: error as u8,
            flags,
            prompt_tokens: Completion::code(tally.prompt_tokens),
            completion_tokens: Completion::code(tally.completion_tokens),
            text_events: tally.text_events,
            text_bytes: tally.text_bytes,
            n_gaps: tally.gaps.len() as u32,
            finish: tally.finish as u8,
            text_len: tally.text.len().min(MAX_TEXT) as u32,
            msg_len: tally.error_message().len() as u32,
        };
        push_record(
            &mut self.out,
            &mut self.backlog,
            self.counters,
            &rec,
            &tally.gaps,
            &tally.text,
            tally.error_message(),
        );
        self.published = true;
    }

    /// Records a request that never reached a connection.
    fn emit_unsent(&mut self, job: Job, error: ErrorClass, t_end: u64) {
        let rec = Completion {
            seq: job.slot.seq,
            t_sched: job.slot.t_sched,
            t_end,
            sample: job.slot.sample,
            stage: job.slot.stage,
            error: error as u8,
            prompt_tokens: Completion::code(None),
            completion_tokens: Completion::code(None),
            ..Completion::default()
        };
        push_record(
            &mut self.out,
            &mut self.backlog,
            self.counters,
            &rec,
            &[],
            &[],
            &[],
        );
        self.published = true;
    }

    fn sweep(&mut self, now: u64) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.phase {
                Phase::Connecting
                    if now.saturating_sub(c.t_connect) > self.s.connect_timeout_ns =>
                {
                    self.fail(i, ErrorClass::ConnectTimeout, now);
                }
                Phase::Connecting | Phase::Sending | Phase::Receiving
                    if now.saturating_sub(c.job.t_dispatch) > self.s.timeout_ns =>
                {
                    self.fail(i, ErrorClass::RequestTimeout, now);
                }
                _ => {}
            }
        }
    }

    fn abort_all(&mut self, now: u64) {
        for i in 0..self.conns.len() {
            if matches!(
                self.conns[i].phase,
                Phase::Connecting | Phase::Sending | Phase::Receiving
            ) {
                self.fail(i, ErrorClass::Aborted, now);
            }
        }
        while let Some(job) = self.pending.pop_front() {
            self.emit_unsent(job, ErrorClass::Aborted, now);
        }
        while let Some(slot) = self.issue.pop() {
            let job = Job {
                slot,
                t_dispatch: now,
                retried: false,
            };
            self.emit_unsent(job, ErrorClass::Aborted, now);
        }
    }

    fn flush_backlog(&mut self) {
        let mut at = 0;
        while at < self.backlog.len() {
            let len =
                u32::from_ne_bytes(self.backlog[at..at + 4].try_into().expect("4 bytes")) as usize;
            let rec = &self.backlog[at + 4..at + 4 + len];
            match self.out.push_with(len, |buf| buf.copy_from_slice(rec)) {
                Ok(()) => {
                    at += 4 + len;
                    self.published = true;
                }
                Err(_) => break,
            }
        }
        self.backlog.drain(..at);
    }
}

/// Pushes one record, or queues it behind earlier ones when the ring is full
/// (order among records does not matter to the parent, but the backlog must
/// drain before new records so none waits forever).
fn push_record(
    out: &mut ByteProducer,
    backlog: &mut Vec<u8>,
    counters: &WorkerCounters,
    rec: &Completion,
    gaps: &[u64],
    text: &[u8],
    msg: &[u8],
) {
    let len = rec.encoded_len();
    if backlog.is_empty() {
        match out.push_with(len, |buf| rec.encode(gaps, text, msg, buf)) {
            Ok(()) => return,
            Err(PushError::TooLarge) => {
                // What one record cannot carry is dropped, flagged: the gaps
                // beyond the limit and the text.
                let mut r = *rec;
                r.n_gaps = 0;
                r.text_len = 0;
                r.flags |= record::GAPS_TRUNCATED;
                push_record(out, backlog, counters, &r, &[], &[], msg);
                return;
            }
            Err(PushError::Full) => {}
        }
    }
    counters
        .completion_ring_full
        .fetch_add(1, Ordering::Relaxed);
    backlog.extend_from_slice(&(len as u32).to_ne_bytes());
    let at = backlog.len();
    backlog.resize(at + len, 0);
    rec.encode(gaps, text, msg, &mut backlog[at..]);
}

fn connect_error(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ErrorClass::ConnectRefused,
        Some(libc::ETIMEDOUT) => ErrorClass::ConnectTimeout,
        Some(libc::EMFILE | libc::ENFILE) => ErrorClass::FdExhausted,
        Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => ErrorClass::PortsExhausted,
        Some(libc::ECONNRESET) => ErrorClass::Reset,
        _ => ErrorClass::ConnectError,
    }
}

fn io_error(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => ErrorClass::Reset,
        Some(libc::ETIMEDOUT) => ErrorClass::RequestTimeout,
        _ => ErrorClass::Io,
    }
}
