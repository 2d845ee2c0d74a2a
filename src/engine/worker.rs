//! A worker process: one mio event loop that takes requests from its issue
//! ring, writes their prebuilt bytes on keep-alive connections (one pool per
//! endpoint), timestamps and parses the responses, and pushes one completion
//! record per request to its completion ring. A single-turn request never
//! allocates (connection buffers are allocated on a connection's first use
//! and reused; a conversation id is written over a placeholder in a copy),
//! never formats, and makes no syscall beyond the socket I/O, `epoll_wait`,
//! and a doorbell write when the parent sleeps. Multi-turn conversations are
//! the exception DESIGN.md names: the worker owns them and builds each turn
//! from the history (see `conversation`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::ScenarioPlan;
use super::conn::{Rx, Step};
use super::conversation::Conv;
use super::record::{self, Completion};
use super::shared::{IssueSlot, RunPhase, Shared, WorkerCounters};
use crate::clock::now_ns;
use crate::http::response::{MAX_HEAD_LEN, parse_head};
use crate::metrics::errors::ErrorClass;
use crate::plan::Limits;
use crate::protocol::Message;
use crate::protocol::json::unescape;
use crate::rng::Rng;
use crate::shm::ring::{ByteProducer, PushError, SlotConsumer};
use crate::uuid::{new_uuid, write_uuid};

/// What a worker needs; inherited through `fork()`.
pub struct WorkerSetup<'a> {
    pub index: usize,
    pub shared: &'a Shared,
    pub scenarios: &'a [ScenarioPlan<'a>],
    /// Resolved endpoints; `None` when the name did not resolve.
    pub endpoints: &'a [Option<SocketAddr>],
    /// Connections this worker may open (to all endpoints together).
    pub max_conns: usize,
    pub limits: Limits,
    /// Connections to open before reporting ready, so a closed loop's first
    /// requests do not queue behind a burst of TCP handshakes.
    pub warm_conns: usize,
    /// Endpoint the warm connections go to.
    pub warm_endpoint: usize,
    /// Send each response's output text with its record (for counting tokens
    /// in the parent, or recording outputs); scenarios may ask for it too.
    pub keep_text: bool,
    /// Seeds conversation ids and turn draws.
    pub seed: u64,
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

/// What an event says about a socket.
#[derive(Clone, Copy, Debug)]
struct Ready {
    readable: bool,
    writable: bool,
    /// The peer closed or reset: no further edge will come.
    closed: bool,
}

impl Ready {
    fn of(ev: &mio::event::Event) -> Ready {
        Ready {
            readable: ev.is_readable() || ev.is_read_closed() || ev.is_error(),
            writable: ev.is_writable() || ev.is_error(),
            closed: ev.is_read_closed() || ev.is_error(),
        }
    }
}

/// `Job::conv` of a request that is not part of a multi-turn conversation.
const NO_CONV: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Job {
    /// For turns after the first, `t_sched` is when the turn was due.
    slot: IssueSlot,
    t_dispatch: u64,
    retried: bool,
    /// Conversation slot, or `NO_CONV`.
    conv: u32,
    /// Turn number, from 1.
    turn: u16,
    /// The conversation id (a single request's own id).
    id: [u8; 16],
}

impl Default for Job {
    fn default() -> Job {
        Job {
            slot: IssueSlot::default(),
            t_dispatch: 0,
            retried: false,
            conv: NO_CONV,
            turn: 1,
            id: [0; 16],
        }
    }
}

struct Conn {
    phase: Phase,
    /// Connecting ahead of any request (warm-up); no job is attached.
    warm: bool,
    /// Endpoint index this connection goes to.
    endpoint: usize,
    /// Request bytes when they are not sent straight from the prebuilt
    /// arena: a copy carrying a fresh conversation id, or a built turn.
    wbuf: Vec<u8>,
    from_wbuf: bool,
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

/// Test-only, undocumented: `LLMLOAD_TEST_WORKER_PANIC=<worker>:<issues>`
/// makes worker `<worker>` panic when it takes an issue after `<issues>`, so
/// tests can show what a worker bug does to a run. Read once, at start.
fn test_panic_after(worker: usize) -> Option<u64> {
    let v = std::env::var("LLMLOAD_TEST_WORKER_PANIC").ok()?;
    let (k, n) = v.split_once(':')?;
    (k.parse::<usize>().ok()? == worker).then(|| n.parse().ok())?
}

struct Worker<'a> {
    s: WorkerSetup<'a>,
    counters: &'a WorkerCounters,
    poll: Poll,
    conns: Vec<Conn>,
    free: Vec<usize>,
    /// Idle keep-alive connections, per endpoint.
    idle: Vec<Vec<usize>>,
    pending: VecDeque<Job>,
    convs: Vec<Conv>,
    free_convs: Vec<u32>,
    /// Conversations waiting out their think time: (due, slot).
    thinking: BinaryHeap<Reverse<(u64, u32)>>,
    rng: Rng,
    body_scratch: Vec<u8>,
    /// No new turns start (the run is draining).
    draining: bool,
    issue: SlotConsumer<IssueSlot>,
    out: ByteProducer,
    /// Encoded records the completion ring had no room for, in order.
    backlog: Vec<u8>,
    /// Connections carrying a request (Connecting, Sending, Receiving).
    busy: usize,
    published: bool,
    /// Test-only: issues to take before panicking (`test_panic_after`).
    panic_after: Option<u64>,
}

impl<'a> Worker<'a> {
    fn new(s: WorkerSetup<'a>) -> io::Result<Worker<'a>> {
        let poll = Poll::new()?;
        let bell = &s.shared.worker_bells[s.index];
        poll.registry()
            .register(&mut SourceFd(&bell.fd()), BELL, Interest::READABLE)?;
        let (issue, out) = s
            .shared
            .take_worker_ends(s.index)
            .ok_or_else(|| io::Error::other("ring ends already taken"))?;
        let conns = (0..s.max_conns)
            .map(|_| Conn {
                phase: Phase::Empty,
                warm: false,
                endpoint: 0,
                wbuf: Vec::new(),
                from_wbuf: false,
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
            idle: vec![Vec::new(); s.endpoints.len()],
            pending: VecDeque::with_capacity(PENDING_CAP),
            convs: Vec::new(),
            free_convs: Vec::new(),
            thinking: BinaryHeap::new(),
            rng: Rng::seeded(s.seed ^ (s.index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            body_scratch: Vec::new(),
            draining: false,
            backlog: Vec::new(),
            busy: 0,
            published: false,
            panic_after: test_panic_after(s.index),
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
            if ph == RunPhase::Exit {
                break;
            }
            let now = now_ns();
            if ph >= RunPhase::WindDown && !self.draining {
                self.draining = true;
                self.end_thinking(now);
            }
            if ph == RunPhase::Abort && !aborted {
                aborted = true;
                self.abort_all(now);
            }
            if !aborted {
                self.take_issues(now);
                self.wake_thinkers(now);
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

            let mut until = if self.busy > 0 || !self.backlog.is_empty() {
                next_sweep
            } else {
                now_ns() + 1_000_000_000
            };
            if let Some(Reverse((due, _))) = self.thinking.peek() {
                until = until.min(*due);
            }
            let mut timeout = Duration::from_nanos(until.saturating_sub(now_ns()));
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
                self.on_event(tok.0, Ready::of(ev));
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
        let ep = self.s.warm_endpoint;
        for _ in 0..n {
            let Some(i) = self.free.pop() else { break };
            self.conns[i].warm = true;
            self.connect(i, ep, Job::default());
        }
        let deadline = now_ns() + self.s.limits.connect_ns.min(2_000_000_000);
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
                    self.on_event(ev.token().0, Ready::of(ev));
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
            // Test-only panic switch (see `test_panic_after`).
            if let Some(n) = &mut self.panic_after {
                if *n == 0 {
                    panic!(
                        "worker {} panics on purpose (LLMLOAD_TEST_WORKER_PANIC)",
                        self.s.index
                    );
                }
                *n -= 1;
            }
            let job = self.first_job(slot, now);
            self.enqueue(job);
        }
        self.drain_pending();
    }

    /// Sends `job` now if a connection is free, else queues it.
    fn enqueue(&mut self, job: Job) {
        if self.pending.is_empty() && self.dispatch(job) {
            return;
        }
        self.counters
            .waited_for_connection
            .fetch_add(1, Ordering::Relaxed);
        self.pending.push_back(job);
    }

    /// The first request of what the parent issued: a single request, or
    /// the first turn of a new conversation.
    fn first_job(&mut self, slot: IssueSlot, now: u64) -> Job {
        let id = new_uuid(&mut self.rng);
        let sc = &self.s.scenarios[slot.scenario as usize];
        let mut job = Job {
            slot,
            t_dispatch: now,
            id,
            ..Job::default()
        };
        if let Some(t) = &sc.conversation {
            let (lo, hi) = sc.turns;
            let mut turns = lo + self.rng.below((hi - lo) as u64 + 1) as u16;
            if let Some(max) = t.turns.max_turns(slot.sample) {
                turns = turns.min(max).max(1);
            }
            let conv = Conv {
                scenario: slot.scenario,
                stage: slot.stage,
                sample: slot.sample,
                seq: slot.seq,
                id,
                turn: 0,
                turns,
                history: Vec::new(),
            };
            job.conv = match self.free_convs.pop() {
                Some(k) => {
                    let mut old = std::mem::replace(&mut self.convs[k as usize], conv);
                    // Keep the history's allocation for the next conversation.
                    old.history.clear();
                    self.convs[k as usize].history = old.history;
                    k
                }
                None => {
                    self.convs.push(conv);
                    (self.convs.len() - 1) as u32
                }
            };
        }
        job
    }

    /// Starts the turns whose think time has passed.
    fn wake_thinkers(&mut self, now: u64) {
        while let Some(&Reverse((due, k))) = self.thinking.peek() {
            if due > now {
                break;
            }
            self.thinking.pop();
            let c = &self.convs[k as usize];
            let job = Job {
                slot: IssueSlot {
                    seq: c.seq,
                    t_sched: due,
                    sample: c.sample,
                    stage: c.stage,
                    scenario: c.scenario,
                },
                t_dispatch: now,
                retried: false,
                conv: k,
                turn: c.turn + 1,
                id: c.id,
            };
            self.enqueue(job);
        }
    }

    /// Draining: conversations waiting to think start no further turns. The
    /// parent still hears that each has ended (a record with no request).
    fn end_thinking(&mut self, now: u64) {
        while let Some(Reverse((_, k))) = self.thinking.pop() {
            let c = &self.convs[k as usize];
            let slot = IssueSlot {
                seq: c.seq,
                t_sched: now,
                sample: c.sample,
                stage: c.stage,
                scenario: c.scenario,
            };
            let (turn, id) = (c.turn, c.id);
            self.emit_conv_end(slot, turn, id, now);
            self.free_convs.push(k);
        }
    }

    /// Tells the parent a conversation ended without sending a request.
    fn emit_conv_end(&mut self, slot: IssueSlot, turn: u16, id: [u8; 16], now: u64) {
        let rec = Completion {
            seq: slot.seq,
            t_sched: slot.t_sched,
            t_end: now,
            sample: slot.sample,
            stage: slot.stage,
            scenario: slot.scenario,
            turn,
            conv_id: id,
            flags: record::CONV_END | record::NO_REQUEST,
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

    fn drain_pending(&mut self) {
        // Popped before dispatching: a dispatch can fail at once and queue a
        // retry at the front, which must not be mistaken for this job.
        while let Some(job) = self.pending.pop_front() {
            if !self.dispatch(job) {
                self.pending.push_front(job);
                break;
            }
        }
    }

    /// Starts `job` on an idle or new connection; false when none is free.
    fn dispatch(&mut self, job: Job) -> bool {
        let ep = self.s.scenarios[job.slot.scenario as usize].endpoint;
        if let Some(i) = self.idle[ep].pop() {
            self.start(i, job);
            true
        } else if let Some(i) = self.free.pop() {
            self.connect(i, ep, job);
            true
        } else {
            false
        }
    }

    fn connect(&mut self, i: usize, ep: usize, job: Job) {
        if !self.conns[i].warm {
            self.busy += 1;
        }
        let now = now_ns();
        let c = &mut self.conns[i];
        c.job = job;
        c.endpoint = ep;
        c.served = 0;
        c.t_connect = now;
        c.rx.reset(0);
        let Some(addr) = self.s.endpoints[ep] else {
            c.phase = Phase::Connecting;
            self.fail(i, ErrorClass::Dns, now);
            return;
        };
        match TcpStream::connect(addr) {
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
        if !self.prepare(i) {
            return;
        }
        let keep_text = self.s.keep_text
            || self.s.scenarios[self.conns[i].job.slot.scenario as usize].keep_text
            || self.conns[i].job.conv != NO_CONV;
        let c = &mut self.conns[i];
        c.phase = Phase::Sending;
        c.written = 0;
        c.filled = 0;
        c.rx.reset(now_ns());
        c.rx.tally.keep_text = keep_text;
        self.write_more(i);
    }

    /// Puts the request's bytes where `write_more` takes them: straight from
    /// the prebuilt arena, a copy with this request's id written in, or a
    /// conversation turn built from its history. False when a conversation
    /// has no further turn to send (it is ended and the connection freed).
    fn prepare(&mut self, i: usize) -> bool {
        let job = self.conns[i].job;
        let sc = &self.s.scenarios[job.slot.scenario as usize];
        let c = &mut self.conns[i];
        if job.conv != NO_CONV {
            let t = sc
                .conversation
                .as_ref()
                .expect("conversation jobs have a template");
            let conv = &mut self.convs[job.conv as usize];
            conv.turn = job.turn - 1;
            if t.next_request(
                sc.protocol,
                conv,
                &mut self.rng,
                &mut self.body_scratch,
                &mut c.wbuf,
            ) {
                c.from_wbuf = true;
                return true;
            }
            // The source ran out of turns: the connection goes back to the
            // pool and the parent hears that the conversation ended.
            c.phase = Phase::Idle;
            let ep = c.endpoint;
            self.idle[ep].push(i);
            self.busy -= 1;
            self.emit_conv_end(job.slot, job.turn, job.id, now_ns());
            self.free_convs.push(job.conv);
            return false;
        }
        if sc.requests.has_id_slots() {
            let bytes = sc.requests.get(job.slot.sample);
            c.wbuf.clear();
            c.wbuf.extend_from_slice(bytes);
            let mut id = [0u8; 36];
            write_uuid(&job.id, &mut id);
            for at in sc.requests.id_slots(job.slot.sample) {
                c.wbuf[at..at + 36].copy_from_slice(&id);
            }
            c.from_wbuf = true;
        } else {
            c.from_wbuf = false;
        }
        true
    }

    fn on_event(&mut self, i: usize, ready: Ready) {
        let Ready {
            readable,
            writable,
            closed,
        } = ready;
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
                    c.rx = Rx::new(self.s.limits.max_gaps, self.s.keep_text);
                }
                self.counters
                    .connections_opened
                    .fetch_add(1, Ordering::Relaxed);
                if c.warm {
                    c.warm = false;
                    c.phase = Phase::Idle;
                    self.idle[c.endpoint].push(i);
                    return;
                }
                self.begin_send(i);
                if readable && self.conns[i].phase == Phase::Receiving {
                    self.read_more(i, closed);
                }
            }
            Phase::Sending => {
                if writable {
                    self.write_more(i);
                }
                if readable && matches!(self.conns[i].phase, Phase::Sending | Phase::Receiving) {
                    self.read_more(i, closed);
                }
            }
            Phase::Receiving => {
                if readable {
                    self.read_more(i, closed);
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
        let sc = &self.s.scenarios[self.conns[i].job.slot.scenario as usize];
        loop {
            let c = &mut self.conns[i];
            let bytes = if c.from_wbuf {
                &c.wbuf[..]
            } else {
                sc.requests.get(c.job.slot.sample)
            };
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

    /// Reads until the socket is drained. A short read means drained, so
    /// the next bytes bring a new edge — unless the peer has closed or reset
    /// (`closed`): no edge follows that, so then reading goes on until the
    /// end or the error is seen.
    fn read_more(&mut self, i: usize, closed: bool) {
        let proto = self.s.scenarios[self.conns[i].job.slot.scenario as usize].protocol;
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
                    if n < space && !closed {
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
            if n < space && !closed {
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
        let idle = &mut self.idle[self.conns[i].endpoint];
        if let Some(pos) = idle.iter().position(|&x| x == i) {
            idle.swap_remove(pos);
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
        let proto = self.s.scenarios[self.conns[i].job.slot.scenario as usize].protocol;
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
            self.idle[c.endpoint].push(i);
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
        let conv_end = self.continue_conversation(i, error, t_end);
        let c = &self.conns[i];
        let sc = &self.s.scenarios[c.job.slot.scenario as usize];
        let ship_text = self.s.keep_text || sc.keep_text;
        let rx = &c.rx;
        let tally = &rx.tally;
        let mut flags = 0;
        if conv_end {
            flags |= record::CONV_END;
        }
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
            scenario: c.job.slot.scenario,
            turn: c.job.turn,
            conv_id: c.job.id,
            status,
            error: error as u8,
            flags,
            prompt_tokens: Completion::code(tally.prompt_tokens),
            completion_tokens: Completion::code(tally.completion_tokens),
            text_events: tally.text_events,
            text_bytes: tally.text_bytes,
            n_gaps: tally.gaps.len() as u32,
            finish: tally.finish as u8,
            text_len: if ship_text {
                tally.text.len().min(MAX_TEXT) as u32
            } else {
                0
            },
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

    /// After turn `c.job.turn` of a conversation ended: feeds the reply back
    /// and schedules the next turn after the think time, or ends the
    /// conversation. Returns whether it (or the single request) has ended.
    fn continue_conversation(&mut self, i: usize, error: ErrorClass, t_end: u64) -> bool {
        let job = self.conns[i].job;
        if job.conv == NO_CONV {
            return true;
        }
        let conv = &mut self.convs[job.conv as usize];
        if error != ErrorClass::None || job.turn >= conv.turns || self.draining {
            self.free_convs.push(job.conv);
            return true;
        }
        let reply = unescape(&self.conns[i].rx.tally.text);
        conv.history.push(Message {
            role: "assistant".to_string(),
            content: reply,
        });
        conv.turn = job.turn;
        let think = self.s.scenarios[job.slot.scenario as usize].think_time_ns;
        self.thinking.push(Reverse((t_end + think, job.conv)));
        false
    }

    /// Records a request that never reached a connection.
    fn emit_unsent(&mut self, job: Job, error: ErrorClass, t_end: u64) {
        if job.conv != NO_CONV {
            self.free_convs.push(job.conv);
        }
        let rec = Completion {
            seq: job.slot.seq,
            t_sched: job.slot.t_sched,
            t_end,
            sample: job.slot.sample,
            stage: job.slot.stage,
            scenario: job.slot.scenario,
            turn: job.turn,
            conv_id: job.id,
            flags: record::CONV_END,
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
                Phase::Connecting if now.saturating_sub(c.t_connect) > self.s.limits.connect_ns => {
                    self.fail(i, ErrorClass::ConnectTimeout, now);
                }
                Phase::Connecting | Phase::Sending | Phase::Receiving
                    if now.saturating_sub(c.job.t_dispatch) > self.s.limits.timeout_ns =>
                {
                    self.fail(i, ErrorClass::RequestTimeout, now);
                }
                Phase::Sending | Phase::Receiving
                    if c.rx.tally.t_first_token == 0
                        && now.saturating_sub(c.rx.t_send)
                            > self.s.limits.ttft_ns.unwrap_or(u64::MAX) =>
                {
                    self.fail(i, ErrorClass::TtftTimeout, now);
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
            let job = self.first_job(slot, now);
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
