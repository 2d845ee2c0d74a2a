//! The parent's loop: release conversations (single requests, usually) at
//! their due times, push them to the least-loaded worker's issue ring, and
//! fold completion records into per-stage, per-scenario blocks. It
//! busy-waits only in the last `SPIN_NS` before an arrival and sleeps on its
//! doorbell otherwise (a completion or a signal wakes it), so on a small
//! machine it leaves the cores to its workers. It never blocks on a worker:
//! a full ring or a held-back arrival is counted, not waited out silently.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::Plan;
use super::arrival::Arrivals;
use super::record::{self, Completion};
use super::requests::{InputSource, RequestSet};
use super::shared::{IssueSlot, RunPhase, Shared};
use super::tokenize::{Pending, TokenLane};
use crate::clock::now_ns;
use crate::dataset::Picker;
use crate::metrics::block::{Block, InputCount, RequestSample};
use crate::metrics::errors::ErrorClass;
use crate::metrics::observe::{Interval, Observer, RequestEvent};
use crate::metrics::run::{GeneratorStats, RunResult, ScenarioResult, StageResult};
use crate::metrics::series::Series;
use crate::plan::Load;
use crate::protocol::errors;
use crate::protocol::json::unescape;
use crate::rng::Rng;
use crate::shm::ring::{ByteConsumer, SlotProducer};
use crate::sys::process::Child;

/// Busy-wait this close to an arrival; sleep through longer gaps.
const SPIN_NS: u64 = 100_000;
/// Longest sleep, so signals and dead workers are noticed promptly.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// After `ABORT`, how long workers get to report what they failed.
const ABORT_GRACE_NS: u64 = 5_000_000_000;
/// Characters of an error message kept for the report and events log.
const MAX_MESSAGE: usize = 200;
/// Block index of warmup requests.
const WARMUP: usize = usize::MAX;

/// The parent's ends of one worker.
pub struct WorkerEnd<'a> {
    /// The worker process, owned by the supervisor, which reaps it after.
    pub child: &'a mut Child,
    pub issue: SlotProducer<IssueSlot>,
    pub done: ByteConsumer,
    /// Conversations handed to the worker and not yet ended.
    pub inflight: u64,
    pub alive: bool,
    /// Pushed since the worker's doorbell was last rung.
    dirty: bool,
}

impl<'a> WorkerEnd<'a> {
    pub fn new(
        child: &'a mut Child,
        issue: SlotProducer<IssueSlot>,
        done: ByteConsumer,
    ) -> WorkerEnd<'a> {
        WorkerEnd {
            child,
            issue,
            done,
            inflight: 0,
            alive: true,
            dirty: false,
        }
    }
}

/// Requests that ended in the current live interval.
struct LiveWindow {
    next_at: u64,
    from: u64,
    completed: u64,
    failed: u64,
    e2e: Series,
    ttft: Series,
}

/// The scheduler and collector.
pub struct Parent<'a, 's, 'o> {
    plan: &'a Plan<'a>,
    shared: &'a Shared,
    workers: Vec<WorkerEnd<'a>>,
    /// Counts output tokens of responses without usage, off this loop.
    lane: Option<TokenLane<'s>>,
    observer: Option<&'o mut dyn Observer>,
    /// Which sample each scenario's next conversation starts from.
    pickers: Vec<Picker>,
    /// Blocks by stage, then scenario.
    blocks: Vec<Vec<Block>>,
    warmup: Block,
    /// When each stage's measurement began (0 for stages not reached).
    stage_starts: Vec<u64>,
    measure_start: u64,
    run_start: u64,
    seq: u64,
    inflight: u64,
    inflight_by_scenario: Vec<u64>,
    ring_full: u64,
    held_back: u64,
    first_send: u64,
    current_stage: usize,
    rng: Rng,
    interrupted: bool,
    threshold_abort: Option<String>,
    incomplete: Vec<String>,
    next_liveness: u64,
    live: Option<LiveWindow>,
}

impl<'a, 's, 'o> Parent<'a, 's, 'o> {
    pub fn new(
        plan: &'a Plan<'a>,
        shared: &'a Shared,
        workers: Vec<WorkerEnd<'a>>,
        lane: Option<TokenLane<'s>>,
        observer: Option<&'o mut dyn Observer>,
    ) -> Parent<'a, 's, 'o> {
        let n = plan.scenarios.len();
        Parent {
            pickers: plan
                .scenarios
                .iter()
                .enumerate()
                .map(|(i, sc)| {
                    Picker::new(sc.order, sc.samples(), plan.seed.wrapping_add(i as u64))
                })
                .collect(),
            blocks: plan
                .stages
                .iter()
                .map(|_| (0..n).map(|_| Block::default()).collect())
                .collect(),
            warmup: Block::default(),
            stage_starts: vec![0; plan.stages.len()],
            measure_start: 0,
            run_start: 0,
            seq: 0,
            inflight: 0,
            inflight_by_scenario: vec![0; n],
            ring_full: 0,
            held_back: 0,
            first_send: 0,
            current_stage: 0,
            rng: Rng::seeded(plan.seed ^ 0x7363_656e_6172_696f),
            interrupted: false,
            threshold_abort: None,
            incomplete: Vec::new(),
            next_liveness: 0,
            live: None,
            lane,
            observer,
            plan,
            shared,
            workers,
        }
    }

    /// Runs every stage, drains, and tells workers to exit. `signals` counts
    /// SIGINT/SIGTERM deliveries.
    pub fn run(mut self, signals: &AtomicU32, started_ns: u64) -> RunResult {
        let t0 = now_ns();
        self.run_start = t0;
        self.measure_start = t0 + self.plan.warmup_ns;
        if self.plan.live_interval_ns > 0 && self.observer.is_some() {
            self.live = Some(LiveWindow {
                next_at: t0 + self.plan.live_interval_ns,
                from: t0,
                completed: 0,
                failed: 0,
                e2e: Series::new(),
                ttft: Series::new(),
            });
        }
        for si in 0..self.plan.stages.len() {
            if !self.run_stage(si, t0, signals) {
                break;
            }
            if self.plan.thresholds.abort_on_fail && si + 1 < self.plan.stages.len() {
                let mut b = Block::default();
                for sb in &self.blocks[si] {
                    b.merge(sb);
                }
                let window = now_ns().saturating_sub(self.stage_starts[si]);
                let broken: Vec<String> = self
                    .plan
                    .thresholds
                    .evaluate(&b, window)
                    .into_iter()
                    .filter(|v| !v.pass)
                    .map(|v| v.name.to_string())
                    .collect();
                if !broken.is_empty() {
                    self.threshold_abort = Some(format!(
                        "stage '{}' broke {}; later stages were skipped (abort_on_fail)",
                        self.plan.stages[si].name,
                        broken.join(", ")
                    ));
                    break;
                }
            }
        }
        self.drain(signals);
        self.finish(started_ns)
    }

    /// Issues stage `si` until its duration or request cap; false when the
    /// run must stop (a signal, or no worker left).
    fn run_stage(&mut self, si: usize, t0: u64, signals: &AtomicU32) -> bool {
        let stage = self.plan.stages[si].clone();
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
        let weights: Vec<f64> = self.plan.scenarios.iter().map(|s| s.weight).collect();
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
        let windows: Vec<u64> = match stage.load {
            Load::Closed { concurrency } => split_by_weight(concurrency as u64, &weights),
            _ => vec![],
        };
        let mut next_arrival: Option<(u64, usize)> = None;
        let mut counted_full = false;
        let mut counted_held = false;
        loop {
            self.collect();
            self.check_workers();
            self.tick_live();
            if signals.load(Ordering::Relaxed) > 0 {
                self.interrupted = true;
                return false;
            }
            if !self.workers.iter().any(|w| w.alive) {
                return false;
            }
            let now = now_ns();
            if now >= end || issued >= limit {
                return true;
            }
            match stage.load {
                Load::Closed { .. } => {
                    'fill: for (s, &window) in windows.iter().enumerate() {
                        while self.inflight_by_scenario[s] < window && issued < limit {
                            let t = now_ns();
                            if !self.issue(t, si, s) {
                                self.ring_full += 1;
                                break 'fill;
                            }
                            if t >= self.measure_start {
                                issued += 1;
                            }
                        }
                    }
                    self.ring_dirty();
                    self.sleep_until(end.min(now_ns() + MAX_SLEEP_NS));
                }
                Load::Offline => {
                    while self.inflight < self.plan.connections as u64 && issued < limit {
                        // Offline requests are all due when measurement
                        // starts; during warmup they are due when released.
                        let now = now_ns();
                        let t = if now >= measured_from {
                            measured_from
                        } else {
                            now
                        };
                        let s = pick_weighted(&mut self.rng, &weights);
                        if !self.issue(t, si, s) {
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
                    let (next, s) = match next_arrival {
                        Some(a) => a,
                        None => match arrivals.as_mut().and_then(|a| a.next_offset_ns()) {
                            Some(off) => {
                                let a = (
                                    stage_start.saturating_add(off),
                                    pick_weighted(&mut self.rng, &weights),
                                );
                                next_arrival = Some(a);
                                a
                            }
                            None => {
                                // A finished ramp: the stage ends at its end.
                                if end == u64::MAX {
                                    return true;
                                }
                                self.sleep_until(end.min(now + MAX_SLEEP_NS));
                                continue;
                            }
                        },
                    };
                    if next >= end {
                        self.sleep_until(end.min(now + MAX_SLEEP_NS));
                        continue;
                    }
                    if now >= next {
                        if let Some(max) = self.plan.openloop_max_inflight
                            && self.inflight >= max
                        {
                            // Held back: it stays charged from `next`.
                            if !counted_held {
                                self.held_back += 1;
                                counted_held = true;
                            }
                            self.sleep_until(now + MAX_SLEEP_NS);
                            continue;
                        }
                        if self.issue(next, si, s) {
                            self.ring_dirty();
                            next_arrival = None;
                            counted_full = false;
                            counted_held = false;
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

    /// Pushes one conversation of scenario `s` due at `t_sched` to the
    /// least-loaded live worker with room; false when every ring is full.
    fn issue(&mut self, t_sched: u64, stage: usize, s: usize) -> bool {
        let slot = IssueSlot {
            seq: self.seq,
            t_sched,
            sample: self.pickers[s].next_index(),
            stage: stage as u16,
            scenario: s as u16,
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
        self.inflight_by_scenario[s] += 1;
        self.seq += 1;
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

    /// The block index of a request due at `t_sched`: warmup, or the stage
    /// whose measurement had begun by then.
    fn block_index(&self, t_sched: u64) -> usize {
        if t_sched < self.measure_start {
            return WARMUP;
        }
        let mut i = 0;
        for (k, &start) in self.stage_starts.iter().enumerate() {
            if start != 0 && start <= t_sched {
                i = k;
            }
        }
        i
    }

    /// Folds every waiting completion record into its block.
    fn collect(&mut self) -> usize {
        let mut n = 0;
        // The ring ends are moved out for the loop so records can be handled
        // in place (`absorb` needs the rest of `self`) before their ring
        // space is released: nothing is copied out of the ring.
        let mut workers = std::mem::take(&mut self.workers);
        for w in workers.iter_mut() {
            while let Some(ended) = w.done.pop_with(|bytes| {
                let d = Completion::decode(bytes)?;
                self.absorb(&d);
                (d.c.flags & record::CONV_END != 0).then_some(d.c.scenario as usize)
            }) {
                n += 1;
                if let Some(s) = ended {
                    w.inflight = w.inflight.saturating_sub(1);
                    self.inflight = self.inflight.saturating_sub(1);
                    if let Some(i) = self.inflight_by_scenario.get_mut(s) {
                        *i = i.saturating_sub(1);
                    }
                }
            }
        }
        self.workers = workers;
        while let Some(p) = self.lane.as_mut().and_then(|l| l.try_take()) {
            self.finalize_pending(p);
        }
        n
    }

    fn finalize_pending(&mut self, p: Pending) {
        self.finalize_with(
            p.sample,
            p.block,
            p.scenario,
            p.seq,
            p.conv_id,
            p.turn,
            GapsRef::Slice(&p.gaps),
            &p.text,
            None,
        );
    }

    /// Handles one decoded record: resolves its counts, and records it now
    /// or after the tokenizer lane has counted its output.
    fn absorb(&mut self, d: &record::Decoded<'_>) {
        if d.c.flags & record::NO_REQUEST != 0 {
            return;
        }
        let scenario = (d.c.scenario as usize).min(self.plan.scenarios.len() - 1);
        let sc = &self.plan.scenarios[scenario];
        let mut s = d.c.sample();
        resolve_input(&mut s, &sc.requests, d.c.sample, sc.conversation.is_some());
        if s.t_send != 0 && (self.first_send == 0 || s.t_send < self.first_send) {
            self.first_send = s.t_send;
        }
        let block = self.block_index(d.c.t_sched);
        let message = (!d.msg.is_empty()).then(|| errors::readable(d.msg, MAX_MESSAGE));
        if let Some(lane) = self.lane.as_mut()
            && s.error.is_none()
            && s.completion_tokens.is_none()
            && !d.text.is_empty()
        {
            lane.submit(Pending {
                sample: s,
                block,
                scenario: d.c.scenario,
                seq: d.c.seq,
                conv_id: d.c.conv_id,
                turn: d.c.turn,
                gaps: d.gaps.iter().collect(),
                text: d.text.to_vec(),
            });
            return;
        }
        let gaps: GapsRef<'_> = GapsRef::Record(d.gaps);
        self.finalize_with(
            s,
            block,
            d.c.scenario,
            d.c.seq,
            d.c.conv_id,
            d.c.turn,
            gaps,
            d.text,
            message,
        );
    }

    /// Applies the scenario's checks, then records the request in its block,
    /// the live window and the observer.
    #[allow(clippy::too_many_arguments)]
    fn finalize_with(
        &mut self,
        mut s: RequestSample,
        block: usize,
        scenario: u16,
        seq: u64,
        conv_id: [u8; 16],
        turn: u16,
        gaps: GapsRef<'_>,
        text: &[u8],
        mut message: Option<String>,
    ) {
        let si = (scenario as usize).min(self.plan.scenarios.len() - 1);
        let checks = &self.plan.scenarios[si].checks;
        if s.error.is_none() && !checks.is_empty() {
            let (out, _) = s.output_tokens();
            let body = if checks.needs_text() {
                unescape(text)
            } else {
                String::new()
            };
            if let Some(why) = checks.failure(s.status, out, &body) {
                s.error = Some(ErrorClass::CheckFailed);
                message = Some(why);
            }
        }
        let b = if block == WARMUP {
            &mut self.warmup
        } else {
            &mut self.blocks[block][si]
        };
        if let (Some(class), Some(m)) = (s.error, &message) {
            b.record_message(&class.key(s.status), m);
        }
        match gaps {
            GapsRef::Record(g) => b.record(&s, g.iter()),
            GapsRef::Slice(g) => b.record(&s, g.iter().copied()),
        }
        if block != WARMUP
            && let Some(live) = &mut self.live
        {
            if s.error.is_some() {
                live.failed += 1;
            } else {
                live.completed += 1;
                live.e2e.record(s.t_end.saturating_sub(s.t_sched));
                if s.t_first_token != 0 {
                    live.ttft.record(s.t_first_token.saturating_sub(s.t_send));
                }
            }
        }
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.request(&RequestEvent {
                sample: &s,
                seq,
                conv_id,
                scenario,
                stage: (block != WARMUP).then_some(block as u16),
                turn,
                text,
                message: message.as_deref(),
            });
        }
    }

    /// Hands the observer the last live interval when it is due.
    fn tick_live(&mut self) {
        let Some(live) = &mut self.live else { return };
        let now = now_ns();
        if now < live.next_at {
            return;
        }
        let stage = &self.plan.stages[self.current_stage].name;
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.interval(&Interval {
                elapsed_ns: now - self.run_start,
                interval_ns: now - live.from,
                stage: if now < self.measure_start {
                    "warmup"
                } else {
                    stage
                },
                completed: live.completed,
                failed: live.failed,
                inflight: self.inflight,
                e2e: &live.e2e,
                ttft: &live.ttft,
            });
        }
        live.from = now;
        live.next_at = now + self.plan.live_interval_ns;
        live.completed = 0;
        live.failed = 0;
        live.e2e.clear();
        live.ttft.clear();
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
        let until = match &self.live {
            Some(l) => deadline.min(l.next_at.max(now + 1)),
            None => deadline,
        };
        bell.wait(Some(Duration::from_nanos(until - now)));
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
            if let Ok(Some(exit)) = self.workers[k].child.try_wait() {
                self.worker_died(k, exit.to_string());
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
            "worker {k} (pid {}) {how}; {lost} conversation(s) in flight on it were lost",
            w.child.pid()
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
        let block = &mut self.blocks[self.current_stage][0];
        for _ in 0..n {
            block.record(&lost, []);
        }
        for i in &mut self.inflight_by_scenario {
            *i = 0;
        }
    }

    /// Stops issuing and waits: on a normal end until the conversations
    /// under way have run all their turns (each request bounded by its own
    /// timeout); after an interrupt only for the requests in flight, for at
    /// most `drain_timeout` (a second signal cuts it short). Then fails the rest.
    fn drain(&mut self, signals: &AtomicU32) {
        let start = now_ns();
        let mut deadline = if self.interrupted {
            self.shared.set_phase(RunPhase::WindDown);
            start + self.plan.limits.drain_ns
        } else {
            self.shared.set_phase(RunPhase::Drain);
            let turns = self
                .plan
                .scenarios
                .iter()
                .map(|s| s.turns.1 as u64)
                .max()
                .unwrap_or(1);
            let think = self
                .plan
                .scenarios
                .iter()
                .map(|s| s.think_time_ns)
                .max()
                .unwrap_or(0);
            start
                + turns * (self.plan.limits.timeout_ns + think)
                + self.plan.limits.connect_ns
                + 1_000_000_000
        };
        let mut seen = signals.load(Ordering::Relaxed);
        let mut abort_at: Option<u64> = None;
        loop {
            self.collect();
            self.check_workers();
            self.tick_live();
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
                    self.shared.set_phase(RunPhase::WindDown);
                    deadline = deadline.min(now + self.plan.limits.drain_ns);
                }
                seen = sig;
            }
            match abort_at {
                None if now >= deadline => {
                    self.shared.set_phase(RunPhase::Abort);
                    abort_at = Some(now + ABORT_GRACE_NS);
                }
                Some(t) if now >= t => {
                    let lost = self.inflight;
                    self.incomplete.push(format!(
                        "{lost} conversation(s) were never reported by a worker after the abort"
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
        self.shared.set_phase(RunPhase::Exit);
        if let Some(mut lane) = self.lane.take() {
            lane.close();
            while let Some(p) = lane.take() {
                self.finalize_pending(p);
            }
        }
    }

    fn finish(mut self, started_ns: u64) -> RunResult {
        let mut generator = GeneratorStats {
            workers: self.workers.len(),
            ring_full: self.ring_full,
            held_back: self.held_back,
            ..Default::default()
        };
        let wall = now_ns().saturating_sub(self.run_start).max(1);
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
        let names: Vec<String> = self.plan.scenarios.iter().map(|s| s.name.clone()).collect();
        let mut total = Block::default();
        let mut by_scenario: Vec<Block> = names.iter().map(|_| Block::default()).collect();
        let mut stages = Vec::with_capacity(self.blocks.len());
        let mut passed = true;
        for (i, blocks) in std::mem::take(&mut self.blocks).into_iter().enumerate() {
            if self.stage_starts[i] == 0 {
                continue;
            }
            let mut block = Block::default();
            for (s, b) in blocks.iter().enumerate() {
                block.merge(b);
                by_scenario[s].merge(b);
            }
            total.merge(&block);
            let window_ns = block.last_end.saturating_sub(self.stage_starts[i]);
            let thresholds = self.plan.thresholds.evaluate(&block, window_ns);
            passed &= thresholds.iter().all(|v| v.pass);
            stages.push(StageResult {
                name: self.plan.stages[i].name.clone(),
                load: self.plan.stages[i].load,
                scenarios: names
                    .iter()
                    .cloned()
                    .zip(blocks)
                    .map(|(name, block)| ScenarioResult { name, block })
                    .collect(),
                block,
                window_ns,
                thresholds,
            });
        }
        let total_window_ns = total.last_end.saturating_sub(self.measure_start);
        generator.limits = limits(&generator, &total);
        let mut incomplete = std::mem::take(&mut self.incomplete);
        if self.interrupted {
            incomplete.insert(0, "interrupted by a signal".to_string());
        }
        if let Some(why) = &self.threshold_abort {
            incomplete.push(why.clone());
        }
        RunResult {
            started_wall_ns: 0,
            stages,
            total,
            scenarios: names
                .into_iter()
                .zip(by_scenario)
                .map(|(name, block)| ScenarioResult { name, block })
                .collect(),
            thresholds_passed: passed,
            aborted_on_threshold: self.threshold_abort.take(),
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

/// Gaps as a record carries them, or as the tokenizer lane kept them.
enum GapsRef<'a> {
    Record(record::Gaps<'a>),
    Slice(&'a [u64]),
}

/// Splits `total` into shares proportional to `weights`, summing exactly to
/// `total` (largest remainders get the leftovers).
pub fn split_by_weight(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![total];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut out: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut left = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    // A scenario with weight gets at least one slot while another has two.
    for i in 0..out.len() {
        if out[i] == 0 && weights[i] > 0.0 {
            let (j, &most) = out
                .iter()
                .enumerate()
                .max_by_key(|(_, n)| **n)
                .expect("non-empty");
            if most > 1 {
                out[j] -= 1;
                out[i] = 1;
            }
        }
    }
    out
}

/// A scenario index drawn with probability proportional to its weight.
fn pick_weighted(rng: &mut Rng, weights: &[f64]) -> usize {
    if weights.len() <= 1 {
        return 0;
    }
    let sum: f64 = weights.iter().sum();
    let mut x = rng.next_f64() * sum;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

/// Input tokens: known before sending (ids, tokenizer), else the usage.
fn resolve_input(s: &mut RequestSample, requests: &RequestSet, sample: u32, conversation: bool) {
    let known = if conversation {
        None
    } else {
        requests.input_tokens(sample)
    };
    match known {
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
    if g.held_back > 0 {
        out.push(format!(
            "{} arrival(s) were held back by openloop_max_inflight (charged from their scheduled time)",
            g.held_back
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_split_exactly() {
        assert_eq!(
            split_by_weight(1000, &[70.0, 20.0, 10.0]),
            vec![700, 200, 100]
        );
        assert_eq!(split_by_weight(8, &[70.0, 30.0]), vec![6, 2]);
        assert_eq!(
            split_by_weight(3, &[1.0, 1.0, 1.0, 1.0])
                .iter()
                .sum::<u64>(),
            3
        );
        assert_eq!(split_by_weight(5, &[1.0]), vec![5]);
        assert_eq!(split_by_weight(4, &[98.0, 1.0, 1.0]), vec![2, 1, 1]);
        assert_eq!(split_by_weight(2, &[1.0, 1.0, 1.0]), vec![1, 1, 0]);
    }

    #[test]
    fn weighted_picks_follow_weights() {
        let mut rng = Rng::seeded(4);
        let mut counts = [0u32; 2];
        for _ in 0..10_000 {
            counts[pick_weighted(&mut rng, &[70.0, 30.0])] += 1;
        }
        assert!((6_700..7_300).contains(&counts[0]), "{counts:?}");
    }
}
