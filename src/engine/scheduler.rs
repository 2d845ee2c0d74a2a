//! The parent's loop: release requests at their due times, push them to the
//! least-loaded worker's issue ring, and fold completion records into
//! per-stage blocks. It busy-waits only in the last `SPIN_NS` before an
//! arrival and sleeps on its doorbell otherwise (a completion or a signal
//! wakes it), so on a small machine it leaves the cores to its workers. It
//! never blocks on a worker: a full ring is counted, not waited out silently.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::arrival::Arrivals;
use super::record::Completion;
use super::requests::{InputSource, RequestSet};
use super::shared::{IssueSlot, Shared, phase};
use super::tokenize::{Pending, TokenLane};
use super::{GeneratorStats, Load, Plan, RunResult, StageResult};
use crate::clock::now_ns;
use crate::dataset::Picker;
use crate::metrics::block::{Block, InputCount, RequestSample};
use crate::metrics::errors::ErrorClass;
use crate::shm::ring::{ByteConsumer, SlotProducer};

/// Busy-wait this close to an arrival; sleep through longer gaps.
const SPIN_NS: u64 = 100_000;
/// Longest sleep, so signals and dead workers are noticed promptly.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// After `ABORT`, how long workers get to report what they failed.
const ABORT_GRACE_NS: u64 = 5_000_000_000;

/// The parent's ends of one worker.
pub struct WorkerEnd {
    pub pid: i32,
    pub issue: SlotProducer<IssueSlot>,
    pub done: ByteConsumer,
    pub inflight: u64,
    pub alive: bool,
    /// Pushed since the worker's doorbell was last rung.
    dirty: bool,
}

impl WorkerEnd {
    pub fn new(pid: i32, issue: SlotProducer<IssueSlot>, done: ByteConsumer) -> WorkerEnd {
        WorkerEnd {
            pid,
            issue,
            done,
            inflight: 0,
            alive: true,
            dirty: false,
        }
    }
}

/// Block index of warmup requests.
const WARMUP: usize = usize::MAX;

/// The scheduler and collector.
pub struct Parent<'a, 's> {
    plan: &'a Plan<'a>,
    /// Counts output tokens of responses without usage, off this loop.
    lane: Option<TokenLane<'s>>,
    /// Which sample the next request sends.
    picker: Picker,
    shared: &'a Shared,
    workers: Vec<WorkerEnd>,
    stages: Vec<Block>,
    stage_starts: Vec<u64>,
    warmup: Block,
    measure_start: u64,
    seq: u64,
    inflight: u64,
    ring_full: u64,
    first_send: u64,
    /// The stage being issued (the last one while draining).
    current_stage: usize,
    interrupted: bool,
    incomplete: Vec<String>,
    next_liveness: u64,
}

impl<'a, 's> Parent<'a, 's> {
    pub fn new(
        plan: &'a Plan<'a>,
        shared: &'a Shared,
        workers: Vec<WorkerEnd>,
        lane: Option<TokenLane<'s>>,
    ) -> Parent<'a, 's> {
        Parent {
            lane,
            picker: Picker::new(plan.order, plan.requests.len(), plan.seed),
            stages: plan.stages.iter().map(|_| Block::default()).collect(),
            stage_starts: vec![0; plan.stages.len()],
            warmup: Block::default(),
            measure_start: 0,
            seq: 0,
            inflight: 0,
            ring_full: 0,
            first_send: 0,
            current_stage: 0,
            interrupted: false,
            incomplete: Vec::new(),
            next_liveness: 0,
            plan,
            shared,
            workers,
        }
    }

    /// Runs every stage, drains, and tells workers to exit. `signals` counts
    /// SIGINT/SIGTERM deliveries.
    pub fn run(mut self, signals: &AtomicU32, started_ns: u64) -> RunResult {
        let t0 = now_ns();
        self.measure_start = t0 + self.plan.warmup_ns;
        'stages: for si in 0..self.plan.stages.len() {
            let stage = &self.plan.stages[si];
            self.current_stage = si;
            let stage_start = if si == 0 { t0 } else { now_ns() };
            let measured_from = if si == 0 {
                self.measure_start
            } else {
                stage_start
            };
            self.stage_starts[si] = measured_from;
            let end = stage
                .duration_ns
                .map_or(u64::MAX, |d| measured_from.saturating_add(d));
            let limit = stage.requests.unwrap_or(u64::MAX);
            let mut issued = 0u64;
            let mut arrivals = match stage.load {
                Load::Open {
                    kind,
                    rate_from,
                    rate_to,
                } => Some(if rate_from == rate_to || end == u64::MAX {
                    Arrivals::constant(kind, rate_from, self.plan.seed.wrapping_add(si as u64))
                } else {
                    Arrivals::ramp(
                        kind,
                        rate_from,
                        rate_to,
                        Duration::from_nanos(end - stage_start),
                        self.plan.seed.wrapping_add(si as u64),
                    )
                }),
                _ => None,
            };
            let mut next_arrival: Option<u64> = None;
            let mut counted_full = false;
            loop {
                self.collect();
                self.check_workers();
                if signals.load(Ordering::Relaxed) > 0 {
                    self.interrupted = true;
                    break 'stages;
                }
                if !self.workers.iter().any(|w| w.alive) {
                    break 'stages;
                }
                let now = now_ns();
                if now >= end || issued >= limit {
                    break;
                }
                match stage.load {
                    Load::Closed { .. } | Load::Offline => {
                        let window = match stage.load {
                            Load::Closed { concurrency } => concurrency as u64,
                            _ => self.plan.connections as u64,
                        };
                        while self.inflight < window && issued < limit {
                            // Offline requests are all due when measurement
                            // starts; during warmup they are due when released.
                            let now = now_ns();
                            let t = if stage.load == Load::Offline && now >= measured_from {
                                measured_from
                            } else {
                                now
                            };
                            if !self.issue(t, si) {
                                self.ring_full += 1;
                                break;
                            }
                            if t >= self.measure_start {
                                issued += 1;
                            }
                        }
                        self.ring_dirty();
                        self.sleep_until(end.min(now_ns() + MAX_SLEEP_NS));
                    }
                    Load::Open { .. } => {
                        let next = match next_arrival {
                            Some(t) => t,
                            None => match arrivals.as_mut().and_then(|a| a.next_offset_ns()) {
                                Some(off) => {
                                    let t = stage_start.saturating_add(off);
                                    next_arrival = Some(t);
                                    t
                                }
                                None => {
                                    // A finished ramp: the stage ends at its end.
                                    self.sleep_until(end.min(now + MAX_SLEEP_NS));
                                    if end == u64::MAX {
                                        break;
                                    }
                                    continue;
                                }
                            },
                        };
                        if next >= end {
                            self.sleep_until(end.min(now + MAX_SLEEP_NS));
                            continue;
                        }
                        if now >= next {
                            if self.issue(next, si) {
                                self.ring_dirty();
                                next_arrival = None;
                                counted_full = false;
                                if next >= self.measure_start {
                                    issued += 1;
                                }
                            } else {
                                if !counted_full {
                                    self.ring_full += 1;
                                    counted_full = true;
                                }
                                self.sleep_until(now + 20_000);
                            }
                            continue;
                        }
                        if next - now > SPIN_NS {
                            self.sleep_until(next - SPIN_NS);
                        } else {
                            while now_ns() < next {
                                std::hint::spin_loop();
                            }
                        }
                    }
                }
            }
        }
        self.drain(signals);
        self.finish(started_ns)
    }

    /// Pushes one request due at `t_sched` to the least-loaded live worker
    /// with room; false when every ring is full.
    fn issue(&mut self, t_sched: u64, stage: usize) -> bool {
        let slot = IssueSlot {
            seq: self.seq,
            t_sched,
            sample: self.picker.next_index(),
            stage: stage as u16,
            flags: 0,
        };
        let Some(best) = (0..self.workers.len())
            .filter(|&i| self.workers[i].alive)
            .min_by_key(|&i| self.workers[i].inflight)
        else {
            return false;
        };
        // The least-loaded worker first; the others only if its ring is full.
        let Some(k) = std::iter::once(best)
            .chain((0..self.workers.len()).filter(|&i| i != best))
            .find(|&i| self.workers[i].alive && self.workers[i].issue.push(slot).is_ok())
        else {
            return false;
        };
        let w = &mut self.workers[k];
        w.inflight += 1;
        w.dirty = true;
        self.inflight += 1;
        self.seq += 1;
        if t_sched < self.measure_start {
            self.warmup.record_issued();
        } else {
            self.stages[stage].record_issued();
        }
        true
    }

    fn ring_dirty(&mut self) {
        for (k, w) in self.workers.iter_mut().enumerate() {
            if w.dirty {
                w.dirty = false;
                self.shared.worker_bells[k].ring();
            }
        }
    }

    /// Folds every waiting completion record into its block; responses that
    /// need their output counted go to the tokenizer lane first.
    fn collect(&mut self) -> usize {
        let mut n = 0;
        let Parent {
            plan,
            lane,
            workers,
            stages,
            warmup,
            measure_start,
            inflight,
            first_send,
            ..
        } = self;
        for w in workers.iter_mut() {
            while w
                .done
                .pop_with(|bytes| {
                    let Some(d) = Completion::decode(bytes) else {
                        return;
                    };
                    let mut s = d.c.sample();
                    resolve_input(&mut s, plan.requests, d.c.sample);

                    if s.t_send != 0 && (*first_send == 0 || s.t_send < *first_send) {
                        *first_send = s.t_send;
                    }
                    let block = if d.c.t_sched < *measure_start {
                        WARMUP
                    } else {
                        (d.c.stage as usize).min(stages.len() - 1)
                    };
                    if let (Some(class), false) = (s.error, d.msg.is_empty()) {
                        block_of(stages, warmup, block)
                            .record_message(&class.key(s.status), &readable_message(d.msg));
                    }
                    match lane {
                        Some(lane)
                            if s.error.is_none()
                                && s.completion_tokens.is_none()
                                && !d.text.is_empty() =>
                        {
                            lane.submit(Pending {
                                sample: s,
                                block,
                                gaps: d.gaps.iter().collect(),
                                text: d.text.to_vec(),
                            });
                        }
                        _ => block_of(stages, warmup, block).record(&s, d.gaps.iter()),
                    }
                })
                .is_some()
            {
                w.inflight = w.inflight.saturating_sub(1);
                *inflight = inflight.saturating_sub(1);
                n += 1;
            }
        }
        if let Some(lane) = lane {
            while let Some(p) = lane.try_take() {
                block_of(stages, warmup, p.block).record(&p.sample, p.gaps.iter().copied());
            }
        }
        n
    }

    /// Sleeps on the doorbell until `deadline`, a completion, or a signal.
    fn sleep_until(&mut self, deadline: u64) {
        let now = now_ns();
        if deadline <= now {
            return;
        }
        let bell = &self.shared.parent_bell;
        bell.prepare_sleep();
        if self.workers.iter_mut().any(|w| !w.done.is_empty()) {
            bell.cancel_sleep();
            return;
        }
        bell.wait(Some(Duration::from_nanos(deadline - now)));
    }

    /// Notices workers that died; their unreported requests are lost.
    fn check_workers(&mut self) {
        let now = now_ns();
        if now < self.next_liveness {
            return;
        }
        self.next_liveness = now + 20_000_000;
        for k in 0..self.workers.len() {
            if !self.workers[k].alive {
                continue;
            }
            let mut status = 0;
            // SAFETY: waitpid on our own child with WNOHANG only reads its state.
            let r = unsafe { libc::waitpid(self.workers[k].pid, &mut status, libc::WNOHANG) };
            if r == self.workers[k].pid {
                self.worker_died(k, describe_exit(status));
            }
        }
    }

    fn worker_died(&mut self, k: usize, how: String) {
        self.collect();
        let w = &mut self.workers[k];
        w.alive = false;
        let lost = w.inflight;
        w.inflight = 0;
        self.inflight -= lost;
        self.incomplete.push(format!(
            "worker {k} (pid {}) {how}; {lost} request(s) in flight on it were lost",
            w.pid
        ));
        self.record_lost(lost);
    }

    /// Counts `n` requests no worker will report as `worker_lost` failures of
    /// the current stage (which requests they were died with the worker).
    fn record_lost(&mut self, n: u64) {
        let now = now_ns();
        let lost = RequestSample {
            t_sched: now,
            t_end: now,
            error: Some(ErrorClass::WorkerLost),
            ..Default::default()
        };
        let block = &mut self.stages[self.current_stage];
        for _ in 0..n {
            block.record(&lost, []);
        }
    }

    /// Stops issuing and waits for in-flight requests: until they finish on a
    /// normal end (each bounded by its own timeout), or for `drain_timeout`
    /// after an interrupt (a second signal cuts it short), then fails the rest.
    fn drain(&mut self, signals: &AtomicU32) {
        self.shared.set_phase(phase::DRAIN);
        let start = now_ns();
        let mut deadline = if self.interrupted {
            start + self.plan.drain_timeout_ns
        } else {
            start + self.plan.timeout_ns + self.plan.connect_timeout_ns + 1_000_000_000
        };
        let mut seen = signals.load(Ordering::Relaxed);
        let mut abort_at: Option<u64> = None;
        loop {
            self.collect();
            self.check_workers();
            if self.inflight == 0 {
                break;
            }
            let now = now_ns();
            let sig = signals.load(Ordering::Relaxed);
            if sig > seen {
                if self.interrupted {
                    deadline = now;
                } else {
                    self.interrupted = true;
                    deadline = deadline.min(now + self.plan.drain_timeout_ns);
                }
                seen = sig;
            }
            match abort_at {
                None if now >= deadline => {
                    self.shared.set_phase(phase::ABORT);
                    abort_at = Some(now + ABORT_GRACE_NS);
                }
                Some(t) if now >= t => {
                    let lost = self.inflight;
                    self.incomplete.push(format!(
                        "{lost} request(s) were never reported by a worker after the abort"
                    ));
                    for w in &mut self.workers {
                        w.inflight = 0;
                    }
                    self.inflight = 0;
                    self.record_lost(lost);
                    break;
                }
                _ => {}
            }
            self.sleep_until(now + 10_000_000);
        }
        self.shared.set_phase(phase::EXIT);
        if let Some(lane) = &mut self.lane {
            lane.close();
            while let Some(p) = lane.take() {
                block_of(&mut self.stages, &mut self.warmup, p.block)
                    .record(&p.sample, p.gaps.iter().copied());
            }
        }
    }

    fn finish(mut self, started_ns: u64) -> RunResult {
        let mut generator = GeneratorStats {
            workers: self.workers.len(),
            ring_full: self.ring_full,
            ..Default::default()
        };
        let wall = now_ns()
            .saturating_sub(self.stage_starts.first().copied().unwrap_or(0))
            .max(1);
        for k in 0..self.workers.len() {
            let c = self.shared.counters(k);
            generator.waited_for_connection += c.waited_for_connection.load(Ordering::Relaxed);
            generator.completion_ring_full += c.completion_ring_full.load(Ordering::Relaxed);
            generator.itl_truncated += c.itl_truncated.load(Ordering::Relaxed);
            generator.connections_opened += c.connections_opened.load(Ordering::Relaxed);
            generator.stale_retries += c.stale_retries.load(Ordering::Relaxed);
            let busy = c.busy_ns.load(Ordering::Relaxed) as f64 / wall as f64;
            generator.worker_busy_max = generator.worker_busy_max.max(busy.min(1.0));
        }
        let mut total = Block::default();
        let mut stages = Vec::with_capacity(self.stages.len());
        for (i, block) in std::mem::take(&mut self.stages).into_iter().enumerate() {
            total.merge(&block);
            let from = self.stage_starts[i];
            let window_ns = block.last_end.saturating_sub(from);
            stages.push(StageResult {
                name: self.plan.stages[i].name.clone(),
                load: self.plan.stages[i].load,
                block,
                window_ns,
            });
        }
        let total_window_ns = total.last_end.saturating_sub(self.measure_start);
        generator.limits = limits(&generator, &total);
        let mut incomplete = std::mem::take(&mut self.incomplete);
        if self.interrupted {
            incomplete.insert(0, "interrupted by a signal".to_string());
        }
        RunResult {
            started_wall_ns: 0,
            stages,
            total,
            total_window_ns,
            warmup: std::mem::take(&mut self.warmup),
            generator,
            interrupted: self.interrupted,
            complete: incomplete.is_empty(),
            incomplete_reasons: incomplete,
            startup_ns: self.first_send.saturating_sub(started_ns),
        }
    }
}

/// An error message as a person should read it: the `message` of a JSON
/// error object when there is one, else the text, one line, escapes resolved.
fn readable_message(raw: &[u8]) -> String {
    let inner = crate::protocol::openai_chat::error_message(raw).unwrap_or(raw);
    let text = super::tokenize::unescape(inner);
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    line.trim().chars().take(200).collect()
}

fn block_of<'b>(stages: &'b mut [Block], warmup: &'b mut Block, i: usize) -> &'b mut Block {
    if i == WARMUP { warmup } else { &mut stages[i] }
}

/// Input tokens: known before sending (ids, tokenizer), else the usage.
fn resolve_input(s: &mut RequestSample, requests: &RequestSet, sample: u32) {
    match requests.input_tokens(sample) {
        Some((n, source)) => {
            s.input_tokens = Some(n);
            s.input_source = match source {
                InputSource::Ids => InputCount::Ids,
                _ => InputCount::Tokenizer,
            };
        }
        None => {
            s.input_tokens = s.prompt_tokens;
            s.input_source = if s.prompt_tokens.is_some() {
                InputCount::Usage
            } else {
                InputCount::Unknown
            };
        }
    }
}

/// Send lateness p99 above this means the generator did not send on time.
const LATE_P99_NS: u64 = 1_000_000;

/// Why the generator, rather than the endpoint, may have set the pace.
fn limits(g: &GeneratorStats, total: &Block) -> Vec<String> {
    let mut out = Vec::new();
    if g.ring_full > 0 {
        out.push(format!(
            "{} request(s) found their worker's issue ring full (workers could not keep up)",
            g.ring_full
        ));
    }
    if g.waited_for_connection > 0 {
        out.push(format!(
            "{} request(s) waited for a free connection (raise --connections)",
            g.waited_for_connection
        ));
    }
    if g.completion_ring_full > 0 {
        out.push(format!(
            "completion records waited {} time(s) for the parent to read them",
            g.completion_ring_full
        ));
    }
    if g.worker_busy_max > 0.9 {
        out.push(format!(
            "a worker was busy {:.0}% of the time (add --workers or cores)",
            g.worker_busy_max * 100.0
        ));
    }
    if let Some(p99) = total.send_lateness.quantile_ns(0.99)
        && p99 > LATE_P99_NS
    {
        out.push(format!(
            "send lateness p99 was {:.2} ms (requests left later than scheduled)",
            p99 as f64 / 1e6
        ));
    }
    let fds = total.errors.get(ErrorClass::FdExhausted);
    let ports = total.errors.get(ErrorClass::PortsExhausted);
    if fds + ports > 0 {
        out.push(format!(
            "{fds} connect(s) failed for lack of file descriptors and {ports} for lack of local ports"
        ));
    }
    out
}

fn describe_exit(status: i32) -> String {
    if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    }
}
