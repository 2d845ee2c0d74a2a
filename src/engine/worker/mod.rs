//! A worker process: one event loop that takes requests from its issue
//! ring, writes their prebuilt bytes on keep-alive connections (one pool per
//! endpoint), timestamps and parses the responses, and pushes one completion
//! record per request to its completion ring. A single-turn request never
//! allocates (connection buffers are allocated on a connection's first use
//! and reused; a conversation id is written over a placeholder in a copy),
//! never formats, and makes no syscall beyond the I/O itself (`backend`:
//! one `io_uring_enter` a turn, or epoll's reads, writes and `epoll_wait`)
//! and a doorbell write when the parent sleeps. Multi-turn conversations are
//! the exception DESIGN.md names: the worker owns them and builds each turn
//! from the history (see `conversation`).
//!
//! This file is the loop and what it decides: taking issues, matching jobs to
//! connections, timeouts and abort. `backend` is how bytes move (io_uring or
//! epoll), `pool` holds the connections, `exchange` one request's bytes on
//! one of them, `convs` the conversations, `emit` the records, `fold` the
//! inter-token gaps kept here rather than shipped. Each is an
//! `impl Worker` block over the worker's own fields (the conversations and
//! the outbox are fields of their own types), so the split adds no
//! indirection, dispatch or copy to a request.

mod backend;
mod convs;
mod emit;
mod exchange;
mod fold;
mod pool;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{EndpointPlan, ScenarioPlan};
use crate::clock::now_ns;
use crate::engine::conn::Budget;
use crate::metrics::errors::ErrorClass;
use crate::plan::Limits;
use crate::rng::Rng;
use crate::shm::ring::SlotConsumer;
use crate::shm::run::{ConnStats, IssueSlot, RunPhase, Shared, WorkerCounters};
use convs::Convs;
use emit::{Outbox, Outcome};
use fold::Folded;
use pool::{Conn, ConnState};

/// What a worker needs; inherited through `fork()`.
pub(crate) struct WorkerSetup<'a> {
    pub index: usize,
    pub shared: &'a Shared,
    pub scenarios: &'a [ScenarioPlan<'a>],
    /// Every endpoint: its address, TLS client and connection reuse.
    pub endpoints: &'a [EndpointPlan],
    /// Connections this worker may open (to all endpoints together).
    pub max_conns: usize,
    /// The most it may grow to when other workers are lost and the parent
    /// raises each survivor's share (`Shared::conn_share`): the run's
    /// connections, within the worker's descriptor budget.
    pub most_conns: usize,
    pub limits: Limits,
    /// Connections to open before reporting ready, so a closed loop's first
    /// requests do not queue behind a burst of TCP (and TLS) handshakes.
    pub warm_conns: usize,
    /// Endpoints the warm connections are spread over (the first
    /// scenario's).
    pub warm_endpoints: Vec<usize>,
    /// Send each response's output text with its record (for counting tokens
    /// in the parent, or recording outputs); scenarios may ask for it too.
    pub keep_text: bool,
    /// Seeds conversation ids and turn draws.
    pub seed: u64,
    /// The backend, and the local addresses connections come from.
    pub io: &'a crate::engine::io::IoPlan,
    /// The local ports this worker binds its connections to, when it picks
    /// them itself (`engine::ports`).
    pub ports: crate::engine::ports::LocalPorts,
}

/// How often timeouts are checked.
const SWEEP_NS: u64 = 5_000_000;
/// Longest poll with nothing in flight: the doorbell wakes the worker for
/// new work, so this only bounds how stale a phase change can be seen.
const IDLE_POLL_NS: u64 = 1_000_000_000;
/// Requests waiting in the worker for a connection, at most.
const PENDING_CAP: usize = 16384;
/// How long a worker opens no new connection to an endpoint whose last
/// connect failed, while another endpoint of the scenario is not in that
/// state (see `open_target`).
const DOWN_NS: u64 = 1_000_000_000;

/// What an event says about a socket.
#[derive(Clone, Copy, Debug)]
struct Ready {
    readable: bool,
    writable: bool,
    /// The peer closed or reset: no further edge will come.
    closed: bool,
}

/// Whether a scenario's requests ask for a streamed response (the only kind
/// `ttft_timeout` applies to).
fn streamed(sc: &ScenarioPlan<'_>) -> bool {
    sc.conversation
        .as_ref()
        .map_or_else(|| sc.requests.streamed(), |t| t.streamed())
}

/// `Job::conv` of a request that is not part of a multi-turn conversation.
const NO_CONV: u32 = u32::MAX;

/// One request: what the parent issued, and where it is in its conversation.
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

/// Runs worker `setup.index` until the parent says exit; returns the exit code.
pub(crate) fn run(setup: WorkerSetup<'_>) -> i32 {
    match Worker::new(setup) {
        Ok(mut w) => {
            w.run();
            0
        }
        Err(_) => 3,
    }
}

/// Test-only, undocumented: `LLMLOAD_TEST_WORKER_PANIC=<worker>:<issues>`
/// makes worker `<worker>` panic when it takes an issue after `<issues>`,
/// and `LLMLOAD_TEST_CORRUPT_RECORD=<worker>:<issues>` makes it write a
/// record header the parent cannot read into its completion ring then, so
/// tests can show what a worker bug does to a run. Read once, at start.
fn test_switch(var: &str, worker: usize) -> Option<u64> {
    let v = std::env::var(var).ok()?;
    let (k, n) = v.split_once(':')?;
    (k.parse::<usize>().ok()? == worker).then(|| n.parse().ok())?
}

struct Worker<'a> {
    s: WorkerSetup<'a>,
    counters: &'a WorkerCounters,
    conn_stats: &'a ConnStats,
    io: backend::Io,
    conns: Vec<Conn>,
    /// Connections with no socket.
    free: Vec<usize>,
    /// Idle keep-alive connections, per endpoint.
    idle: Vec<Vec<usize>>,
    /// Per endpoint: until when its last connect failure keeps new
    /// connections away from it (0: it is up).
    down_until: Vec<u64>,
    /// Where the next look for an idle connection, and the next new
    /// connection, of a scenario with several endpoints starts (a position
    /// in its list, modulo its length): each turns round-robin.
    next_idle: usize,
    next_open: usize,
    /// The next `--source-addrs` entry a new connection binds to.
    next_source: usize,
    pending: VecDeque<Job>,
    convs: Convs,
    rng: Rng,
    body_scratch: Vec<u8>,
    /// No new turns start (the run is draining).
    draining: bool,
    issue: SlotConsumer<IssueSlot>,
    out: Outbox,
    /// Inter-token gaps of successes the parent needs not see, by block.
    folded: Folded,
    /// Connections carrying a request (Connecting, Handshaking, Sending,
    /// Receiving).
    busy: usize,
    /// The parent's connection share last looked at (`more_slots`).
    share_seen: u64,
    /// Test-only: issues to take before panicking (`test_switch`).
    panic_after: Option<u64>,
    /// Test-only: issues to take before corrupting the ring (`test_switch`).
    corrupt_after: Option<u64>,
}

impl<'a> Worker<'a> {
    fn new(s: WorkerSetup<'a>) -> io::Result<Worker<'a>> {
        let io = backend::Io::new(
            s.io,
            s.max_conns,
            s.most_conns,
            &s.shared.worker_bells[s.index],
        )?;
        Worker::with_io(s, io)
    }

    /// A worker on backend `io`.
    fn with_io(s: WorkerSetup<'a>, io: backend::Io) -> io::Result<Worker<'a>> {
        let (issue, out) = s
            .shared
            .take_worker_ends(s.index)
            .ok_or_else(|| io::Error::other("ring ends already taken"))?;
        // Kept text and bodies of all connections grow within one budget.
        let budget = Budget::for_worker(s.limits.max_output_text);
        Ok(Worker {
            counters: s.shared.counters(s.index),
            conn_stats: s.shared.conn_stats(s.index),
            conns: (0..s.max_conns).map(|_| Conn::new(&budget)).collect(),
            free: (0..s.max_conns).rev().collect(),
            idle: vec![Vec::new(); s.endpoints.len()],
            down_until: vec![0; s.endpoints.len()],
            // Worker k starts at endpoint k, so one connection per worker
            // still reaches every endpoint.
            next_idle: s.index,
            next_open: s.index,
            // Workers start at different addresses, so a few connections
            // per worker still use them all.
            next_source: s.index,
            pending: VecDeque::with_capacity(PENDING_CAP),
            convs: Convs::default(),
            rng: Rng::seeded(s.seed ^ (s.index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            body_scratch: Vec::new(),
            draining: false,
            out: Outbox::new(out),
            folded: Folded::new(s.shared.stages(), s.scenarios.len()),
            busy: 0,
            share_seen: 0,
            panic_after: test_switch("LLMLOAD_TEST_WORKER_PANIC", s.index),
            corrupt_after: test_switch("LLMLOAD_TEST_CORRUPT_RECORD", s.index),
            io,
            issue,
            s,
        })
    }

    fn run(&mut self) {
        let bell = &self.s.shared.worker_bells[self.s.index];
        let mut aborted = false;
        let mut next_sweep = 0;
        self.warm_up();
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
            self.out.flush();
            if self.out.take_published() {
                self.s.shared.parent_bell.ring();
            }
            if aborted && self.busy == 0 && self.pending.is_empty() && self.out.is_empty() {
                self.counters.finished.store(1, Ordering::Release);
            }

            let mut until = if self.busy > 0 || !self.out.is_empty() {
                next_sweep
            } else {
                now_ns() + IDLE_POLL_NS
            };
            if let Some(due) = self.convs.next_due() {
                until = until.min(due);
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
            let polled = self.io_wait(timeout);
            bell.cancel_sleep();
            busy_from = now_ns();
            if let Err(e) = polled {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
                continue;
            }
            self.io_dispatch();
            self.drain_pending();
        }
        self.send_folded();
        for c in &mut self.conns {
            c.stream = None;
        }
    }

    /// Moves requests from the issue ring to connections or the pending queue.
    fn take_issues(&mut self, now: u64) {
        while self.pending.len() < PENDING_CAP {
            let Some(slot) = self.issue.pop() else { break };
            // Test-only switches (see `test_switch`).
            match self.corrupt_after {
                Some(0) => {
                    self.corrupt_after = None;
                    self.out.push_corrupt();
                }
                Some(n) => self.corrupt_after = Some(n - 1),
                None => {}
            }
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
        let endpoints = &self.s.scenarios[job.slot.scenario as usize].endpoints;
        if endpoints.len() > 1 {
            return self.dispatch_spread(job);
        }
        let ep = endpoints[0];
        if let Some(i) = self.idle[ep].pop() {
            self.conns[i].target = 0;
            self.start(i, job);
            true
        } else if let Some(i) = self.free_slot() {
            self.conns[i].target = 0;
            self.connect(i, ep, job);
            true
        } else {
            false
        }
    }

    /// A slot with no socket: from the free list, or a new one when the
    /// parent has raised this worker's share (`more_slots`).
    fn free_slot(&mut self) -> Option<usize> {
        match self.free.pop() {
            Some(i) => Some(i),
            None => self.more_slots(),
        }
    }

    /// After a worker is lost the parent shares the run's connections among
    /// the survivors again (`Shared::conn_share`): this one adds the slots
    /// its new share allows (up to `most_conns`, its descriptor budget) so
    /// the conversations it took over do not queue behind its own. Looked
    /// at only when no slot is free, so a worker with a free slot pays
    /// nothing; slots are made here, once per loss, never per request.
    /// Returns a free slot if it made any.
    #[cold]
    fn more_slots(&mut self) -> Option<usize> {
        let share = self.s.shared.conn_share();
        if share == self.share_seen {
            return None;
        }
        self.share_seen = share;
        let want = usize::try_from(share)
            .unwrap_or(usize::MAX)
            .min(self.s.most_conns);
        let have = self.conns.len();
        if want <= have {
            return None;
        }
        let budget = self.conns[0].rx.budget().clone();
        self.conns.extend((have..want).map(|_| Conn::new(&budget)));
        self.io.grow(want);
        self.free.extend((have..want).rev());
        self.free.pop()
    }

    /// `dispatch` for a scenario spread over several endpoints: the request
    /// goes to the endpoint of the connection it gets. An idle connection
    /// of any of them is taken first, looking at each endpoint in turn;
    /// else a new connection opens to the next endpoint in turn
    /// (`open_target`). So connections spread evenly over the endpoints,
    /// and requests follow whichever connections come free.
    fn dispatch_spread(&mut self, job: Job) -> bool {
        let scenarios = self.s.scenarios;
        let endpoints = &scenarios[job.slot.scenario as usize].endpoints;
        let n = endpoints.len();
        for j in 0..n {
            let k = (self.next_idle + j) % n;
            if let Some(i) = self.idle[endpoints[k]].pop() {
                self.next_idle = k + 1;
                self.conns[i].target = k;
                self.start(i, job);
                return true;
            }
        }
        let Some(i) = self.free_slot() else {
            return false;
        };
        let k = self.open_target(endpoints);
        self.conns[i].target = k;
        self.connect(i, endpoints[k], job);
        true
    }

    /// The position in `endpoints` a new connection goes to: the next in
    /// turn, passing over endpoints whose last connect failed less than
    /// `DOWN_NS` ago; when all have, the next in turn anyway (its request
    /// fails and is charged to it; nothing waits or spins).
    fn open_target(&mut self, endpoints: &[usize]) -> usize {
        let n = endpoints.len();
        let from = self.next_open % n;
        let mut k = from;
        if endpoints.iter().any(|&ep| self.down_until[ep] != 0) {
            let now = now_ns();
            if let Some(up) = (0..n)
                .map(|j| (from + j) % n)
                .find(|&k| self.down_until[endpoints[k]] <= now)
            {
                k = up;
            }
        }
        self.next_open = k + 1;
        k
    }

    fn on_event(&mut self, i: usize, ready: Ready) {
        let Ready {
            readable,
            writable,
            closed,
        } = ready;
        match self.conns[i].state {
            ConnState::Empty => {}
            ConnState::Connecting => {
                if readable || writable {
                    self.on_connecting(i, readable, closed);
                }
            }
            ConnState::Handshaking => {
                if readable || writable {
                    self.handshake_more(i);
                }
            }
            ConnState::Sending => {
                if writable {
                    self.write_more(i);
                }
                if readable
                    && matches!(
                        self.conns[i].state,
                        ConnState::Sending | ConnState::Receiving
                    )
                {
                    self.read_more(i, closed);
                }
            }
            ConnState::Receiving => {
                if readable {
                    self.read_more(i, closed);
                }
                // Ciphertext a post-handshake message left behind.
                if writable && self.conns[i].tls.is_some() {
                    self.flush_tls(i);
                }
            }
            ConnState::Idle => {
                if readable {
                    self.check_idle(i);
                } else if writable && self.conns[i].tls.is_some() {
                    self.flush_tls(i);
                }
            }
        }
    }

    fn sweep(&mut self, now: u64) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                // The connect timeout covers the TLS handshake too.
                ConnState::Connecting | ConnState::Handshaking
                    if now.saturating_sub(c.t_connect) > self.s.limits.connect_ns =>
                {
                    if c.state == ConnState::Handshaking {
                        self.conns[i].rx.set_message(
                            b"the TLS handshake did not finish within the connect timeout",
                        );
                    }
                    self.fail(i, ErrorClass::ConnectTimeout, now);
                }
                // A warm connection carries no request yet.
                ConnState::Connecting
                | ConnState::Handshaking
                | ConnState::Sending
                | ConnState::Receiving
                    if !c.warm
                        && now.saturating_sub(c.job.t_dispatch) > self.s.limits.timeout_ns =>
                {
                    self.fail(i, ErrorClass::RequestTimeout, now);
                }
                ConnState::Sending | ConnState::Receiving
                    if now.saturating_sub(c.rx.t_send)
                        > self.s.limits.ttft_ns.unwrap_or(u64::MAX)
                        && c.rx.awaits_first_token(streamed(
                            &self.s.scenarios[c.job.slot.scenario as usize],
                        )) =>
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
                self.conns[i].state,
                ConnState::Connecting
                    | ConnState::Handshaking
                    | ConnState::Sending
                    | ConnState::Receiving
            ) {
                self.fail(i, ErrorClass::Aborted, now);
            }
        }
        while let Some(job) = self.pending.pop_front() {
            self.unsent(job, ErrorClass::Aborted, now);
        }
        while let Some(slot) = self.issue.pop() {
            let job = self.first_job(slot, now);
            self.unsent(job, ErrorClass::Aborted, now);
        }
    }

    /// Records a request that never reached a connection; it ends its
    /// conversation.
    fn unsent(&mut self, job: Job, error: ErrorClass, t_end: u64) {
        if job.conv != NO_CONV {
            self.convs.release(job.conv);
        }
        self.record(job, t_end, Outcome::Unsent(error));
    }
}
