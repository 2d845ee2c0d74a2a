//! The parent's loop: ask the stage's arrival source what is due, push it to
//! the least-loaded worker's issue ring, and fold completion records into
//! per-stage, per-scenario blocks. One loop (`pump`) serves every load shape
//! and the drain at the end; only the source differs. It busy-waits only in
//! the last `SPIN_NS` before an arrival and sleeps on its doorbell otherwise
//! (a completion or a signal wakes it), so on a small machine it leaves the
//! cores to its workers. It never blocks on a worker: a full ring or a
//! held-back arrival is counted once per conversation, not waited out
//! silently.

mod collect;
mod drain;
pub(crate) mod fail_fast;
mod live;
mod outcome;
mod source;
mod start;
#[cfg(test)]
mod tests;
mod timeline;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::Plan;
use super::stages::WARMUP;
use super::token_lane::TokenLane;
use crate::clock::now_ns;
use crate::dataset::Picker;
use crate::metrics::block::Block;
use crate::metrics::endpoints::EndpointStats;
use crate::metrics::observe::Observer;
use crate::metrics::run::{Incomplete, RunResult, ThresholdAbort};
use crate::rng::Rng;
use crate::shm::ring::{ByteConsumer, SlotProducer};
use crate::shm::run::{IssueSlot, Shared};
use crate::sys::process::Child;
use fail_fast::FailFast;
use live::LiveClock;
use source::{Due, Inflight, Source};
use timeline::TimelineBuckets;

/// Busy-wait this close to an arrival; sleep through longer gaps.
const SPIN_NS: u64 = 100_000;
/// Longest sleep, so signals and dead workers are noticed promptly.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// A conversation that found every issue ring full is offered again this
/// soon (sooner if a completion frees room and rings the parent's bell).
const RING_FULL_RETRY_NS: u64 = 20_000;

/// The parent's ends of one worker.
pub(crate) struct WorkerEnd<'a> {
    /// The worker process, owned by the supervisor, which reaps it after.
    pub child: &'a mut Child,
    pub issue: SlotProducer<IssueSlot>,
    pub done: ByteConsumer,
    /// Conversations handed to the worker and not yet ended.
    pub inflight: u64,
    /// The same, by the block each is measured in: index
    /// `slot * scenarios + scenario`, slot 0 warmup and `1 + k` stage `k`.
    /// A worker that dies takes exactly these with it, each charged to its
    /// own scenario and stage.
    open: Vec<u64>,
    pub alive: bool,
    /// Pushed since the worker's doorbell was last rung.
    dirty: bool,
    /// Requests recorded whose gaps the worker folded (record::FOLDED) and
    /// whose series has not come yet, by block (indexed as `open`): what
    /// ITL lacks if the worker never sends it (it died).
    unfolded: Vec<u64>,
    /// The worker's last record (after its folded series) has come.
    series_done: bool,
}

impl<'a> WorkerEnd<'a> {
    pub(crate) fn new(
        child: &'a mut Child,
        issue: SlotProducer<IssueSlot>,
        done: ByteConsumer,
    ) -> WorkerEnd<'a> {
        WorkerEnd {
            child,
            issue,
            done,
            inflight: 0,
            open: Vec::new(),
            alive: true,
            dirty: false,
            unfolded: Vec::new(),
            series_done: false,
        }
    }

    /// A folded series for `block` covering `covered` requests came, or
    /// (`None`) the worker's last record. A series may cover more than
    /// were recorded: records that came after their conversation was
    /// written off are passed over.
    fn series_in(&mut self, block: usize, covered: Option<u64>) {
        match covered {
            Some(n) => self.unfolded[block] = self.unfolded[block].saturating_sub(n),
            None => self.series_done = true,
        }
    }
}

/// Why `pump` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// The deadline or the request cap was reached.
    Reached,
    /// The source will never have anything more to issue.
    Exhausted,
    /// A SIGINT, SIGTERM or SIGHUP arrived (one more than the count given).
    Signal,
    /// Every worker is gone.
    NoWorkers,
    /// The first requests all failed alike (`fail_fast`).
    FailedFast,
}

/// Mixed into the dataloader seed for the order of a warm-up by count.
const WARMUP_ORDER: u64 = 0x7761_726d_7570_5f6f;

/// Each scenario's picker: for the measured requests, or for a warm-up by
/// count (`warmup`), which draws its own order. MLPerf's warm-up phase draws
/// its order from `warmup_random_seed + 1`.
fn pickers(plan: &Plan<'_>, warmup: bool) -> Vec<Picker> {
    let seed = match (&plan.python_draws, warmup) {
        (_, false) => plan.dataloader_seed,
        (None, true) => plan.dataloader_seed ^ WARMUP_ORDER,
        (Some(p), true) => p.warmup_seed.wrapping_add(1),
    };
    plan.scenarios
        .iter()
        .enumerate()
        .map(|(i, sc)| {
            let seed = seed.wrapping_add(i as u64);
            let part = match plan.partition {
                // A scenario with fewer samples than shards (a pool of a
                // few prompts) is shared whole; bench refuses that for
                // dataset rows.
                Some((index, count)) if sc.samples() >= count as usize => (index, count),
                _ => (0, 1),
            };
            Picker::part(
                sc.order,
                sc.samples(),
                seed,
                part,
                plan.python_draws.is_some(),
            )
        })
        .collect()
}

/// What a stage's pump issues until: the clock `end`, or `limit` measured
/// conversations once the clock has passed `min_end` too.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    end: u64,
    limit: u64,
    min_end: u64,
}

impl Bounds {
    /// The time past which nothing more is issued, given `issued` so far.
    fn stop_at(&self, issued: u64) -> u64 {
        if issued >= self.limit {
            self.end.min(self.min_end)
        } else {
            self.end
        }
    }
}

/// What `issue` did with a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Issued {
    /// Every issue ring was full.
    Full,
    Warmup,
    /// The last warm-up request by count: measuring begins after it.
    LastWarmup,
    Measured,
}

/// Run-wide generator-side counts the loop keeps.
#[derive(Default)]
struct Counts {
    /// Conversations that found every issue ring full when due (each once).
    ring_full: u64,
    /// Open-loop arrivals held back by the in-flight bound (each once).
    held_back: u64,
    /// Completion records that could not be read (each stopped its worker).
    corrupt_records: u64,
    /// Most conversations in flight at once.
    max_inflight: u64,
}

/// The scheduler and collector.
pub(crate) struct Parent<'a, 's, 'o> {
    plan: &'a Plan<'a>,
    shared: &'a Shared,
    workers: Vec<WorkerEnd<'a>>,
    /// Counts output tokens of responses without usage, off this loop.
    lane: Option<TokenLane<'s>>,
    observer: Option<&'o mut dyn Observer>,
    /// Which sample each scenario's next conversation starts from.
    pickers: Vec<Picker>,
    weights: Vec<f64>,
    /// Blocks by stage, then scenario.
    blocks: Vec<Vec<Block>>,
    warmup: Block,
    /// Measured requests by the endpoint they went to.
    by_endpoint: Vec<EndpointStats>,
    /// When each stage's measurement began (0 for stages not reached).
    stage_starts: Vec<u64>,
    /// Where measuring begins: conversations due before it are warm-up.
    /// `u64::MAX` while warm-up requests by count are still to be issued.
    measure_start: u64,
    /// The end of the warm-up by time.
    warm_until: u64,
    /// Warm-up requests by count still to issue.
    warmup_left: u64,
    run_start: u64,
    /// The wall clock at `run_start`.
    run_start_wall: u64,
    /// How long the run waited for `--start-at` (not part of its startup).
    waited: u64,
    seq: u64,
    inflight: u64,
    inflight_by_scenario: Vec<u64>,
    counts: Counts,
    first_send: u64,
    current_stage: usize,
    /// Measured conversations issued in the current stage (the live view's
    /// progress through a stage counted in requests).
    stage_issued: u64,
    rng: Rng,
    interrupted: bool,
    /// The interrupt came while waiting for `--start-at`: nothing ran.
    before_start: bool,
    /// Judges the first completions; stops a run that cannot work.
    fail_fast: FailFast,
    /// Why later stages were skipped (`abort_on_fail`).
    threshold_abort: Option<ThresholdAbort>,
    /// Why the run is incomplete, in the order it happened.
    incomplete: Vec<Incomplete>,
    next_liveness: u64,
    live: Option<LiveClock>,
    /// What ended in each second of the run.
    timeline: TimelineBuckets,
    /// Connections opened when the measured window began (for connects/s).
    opened_at_measure: Option<u64>,
}

impl<'a, 's, 'o> Parent<'a, 's, 'o> {
    pub(crate) fn new(
        plan: &'a Plan<'a>,
        shared: &'a Shared,
        mut workers: Vec<WorkerEnd<'a>>,
        lane: Option<TokenLane<'s>>,
        observer: Option<&'o mut dyn Observer>,
    ) -> Parent<'a, 's, 'o> {
        let n = plan.scenarios.len();
        for w in &mut workers {
            w.open = vec![0; (plan.stages.len() + 1) * n];
            w.unfolded = vec![0; (plan.stages.len() + 1) * n];
        }
        Parent {
            // A warm-up by count draws its own order, so the measured
            // requests start a fresh pass in the dataloader seed's order.
            pickers: pickers(plan, plan.warmup_requests > 0),
            weights: plan.scenarios.iter().map(|s| s.weight).collect(),
            blocks: plan
                .stages
                .iter()
                .map(|_| (0..n).map(|_| Block::default()).collect())
                .collect(),
            warmup: Block::default(),
            by_endpoint: plan
                .endpoints
                .iter()
                .map(|e| EndpointStats::new(&e.url))
                .collect(),
            stage_starts: vec![0; plan.stages.len()],
            measure_start: 0,
            warm_until: 0,
            warmup_left: plan.warmup_requests,
            run_start: 0,
            run_start_wall: 0,
            waited: 0,
            seq: 0,
            inflight: 0,
            inflight_by_scenario: vec![0; n],
            counts: Counts::default(),
            first_send: 0,
            current_stage: 0,
            stage_issued: 0,
            rng: Rng::seeded(plan.scheduler_seed ^ 0x7363_656e_6172_696f),
            interrupted: false,
            before_start: false,
            fail_fast: FailFast::new(plan.fail_fast, plan.endpoints.len()),
            threshold_abort: None,
            incomplete: Vec::new(),
            next_liveness: 0,
            live: None,
            timeline: TimelineBuckets::new(plan.stages.len(), n, !plan.slo.is_empty()),
            opened_at_measure: None,
            lane,
            observer,
            plan,
            shared,
            workers,
        }
    }

    /// Runs every stage, drains, and tells workers to exit. `signals` counts
    /// SIGINT, SIGTERM and SIGHUP deliveries.
    pub(crate) fn run(mut self, signals: &AtomicU32, started_ns: u64) -> RunResult {
        // A signal during the wait for `--start-at` ends the run before its
        // time zero: nothing is issued, and the run says it never started.
        let mut started = true;
        if let Some(at) = self.plan.start_at_unix_ns {
            let before = now_ns();
            started = start::wait_until(at, signals);
            self.waited = now_ns() - before;
        }
        // Taken as a pair: a merge turns this run's monotonic times into
        // wall-clock ones through them.
        let (t0, wall0) = (now_ns(), crate::clock::wall_ns());
        self.run_start = t0;
        self.run_start_wall = wall0;
        self.timeline.start(t0);
        // Durations are user input up to u64::MAX/2 ns: every deadline made
        // from one saturates rather than wrapping into the past.
        self.warm_until = t0.saturating_add(self.plan.warmup_ns);
        // With a warm-up by count, measuring begins when its last request
        // is issued (`issue`), not at a time known now.
        self.set_measure_start(if self.warmup_left > 0 {
            u64::MAX
        } else {
            self.warm_until
        });
        if self.plan.live_interval_ns > 0 && self.observer.is_some() {
            self.live = Some(LiveClock::new(t0, self.plan.live_interval_ns));
            self.timeline.watch_live(t0);
        }
        if !started {
            self.interrupted = true;
            self.before_start = true;
        }
        let stages = if started { self.plan.stages.len() } else { 0 };
        for si in 0..stages {
            match self.run_stage(si, t0, signals) {
                Stop::Reached | Stop::Exhausted => {}
                Stop::Signal => {
                    self.interrupted = true;
                    break;
                }
                Stop::NoWorkers | Stop::FailedFast => break,
            }
            if si + 1 < self.plan.stages.len() {
                self.threshold_abort = self.broken_thresholds(si);
                if self.threshold_abort.is_some() {
                    break;
                }
            }
        }
        self.drain(signals);
        self.finish(started_ns)
    }

    /// Issues stage `si` until its duration or request cap.
    fn run_stage(&mut self, si: usize, t0: u64, signals: &AtomicU32) -> Stop {
        let stage = &self.plan.stages[si];
        self.current_stage = si;
        self.stage_issued = 0;
        let start = if si == 0 { t0 } else { now_ns() };
        let measured_from = if si == 0 { self.measure_start } else { start };
        if measured_from != u64::MAX {
            self.set_stage_start(si, measured_from);
        }
        let bounds = self.bounds(si);
        // MLPerf's warm-up phase draws its arrivals from its own seed.
        let seed = match self.plan.python_draws {
            Some(p) if si == 0 && self.warmup_left > 0 => p.warmup_seed,
            _ => self.stage_seed(si),
        };
        let mut source = Source::for_stage(
            stage.load,
            &self.weights,
            self.plan.connections as u64,
            self.plan.openloop_max_inflight,
            (start, measured_from, bounds.end),
            (
                seed,
                self.plan.uniform_phase,
                self.plan.python_draws.is_some(),
            ),
        );
        self.pump(&mut source, si, bounds, signals, 0)
    }

    /// The seed of stage `si`'s arrival schedule.
    fn stage_seed(&self, si: usize) -> u64 {
        self.plan.scheduler_seed.wrapping_add(si as u64)
    }

    /// Stage `si`'s bounds from when its measurement began; while a
    /// warm-up by count is under way that is not known, and neither its
    /// clock nor its minimum runs.
    fn bounds(&self, si: usize) -> Bounds {
        let stage = &self.plan.stages[si];
        let from = match self.stage_starts[si] {
            0 => u64::MAX,
            t => t,
        };
        Bounds {
            end: stage
                .duration_ns
                .map_or(u64::MAX, |d| from.saturating_add(d)),
            limit: stage.requests.unwrap_or(u64::MAX),
            min_end: stage.min_ns.map_or(0, |d| from.saturating_add(d)),
        }
    }

    /// The loop: collects completions, watches workers and signals, and
    /// issues what `source` says is due, until `bounds` say so (a clock
    /// time, or a count of measured conversations with its minimum time),
    /// the source is exhausted, a signal beyond the `signals_seen` already
    /// handled arrives, or no worker is left.
    fn pump(
        &mut self,
        source: &mut Source,
        stage: usize,
        mut bounds: Bounds,
        signals: &AtomicU32,
        signals_seen: u32,
    ) -> Stop {
        let mut issued = 0u64;
        // The conversation on offer has been counted as ring-full / held.
        let (mut counted_full, mut counted_held) = (false, false);
        loop {
            self.collect();
            self.check_workers();
            self.tick_live();
            if signals.load(Ordering::Relaxed) > signals_seen {
                return Stop::Signal;
            }
            if self.fail_fast.take_trip() {
                return Stop::FailedFast;
            }
            if !self.workers.iter().any(|w| w.alive) {
                return Stop::NoWorkers;
            }
            let now = now_ns();
            self.tick_timeline(now);
            if self.opened_at_measure.is_none() && now >= self.measure_start {
                self.opened_at_measure = Some(self.connections_opened());
            }
            let end = bounds.stop_at(issued);
            if now >= end {
                return Stop::Reached;
            }
            let inflight = Inflight {
                total: self.inflight,
                by_scenario: &self.inflight_by_scenario,
            };
            match source.next_due(now, &inflight, &mut self.rng, &self.weights) {
                Due::Now { t_sched, scenario } => {
                    let issued_as = self.issue(t_sched, stage, scenario);
                    if issued_as != Issued::Full {
                        source.taken();
                        (counted_full, counted_held) = (false, false);
                        match issued_as {
                            Issued::Measured => {
                                issued += 1;
                                self.stage_issued = issued;
                            }
                            Issued::LastWarmup => {
                                // Once per run: the measured order from its start.
                                self.pickers = pickers(self.plan, false);
                                self.set_stage_start(stage, self.measure_start);
                                source.measure_from(self.measure_start);
                                if self.plan.python_draws.is_some() {
                                    // MLPerf's performance phase starts a
                                    // schedule of its own when it begins.
                                    source.restart_schedule(
                                        self.measure_start,
                                        self.stage_seed(stage),
                                    );
                                }
                                bounds = self.bounds(stage);
                            }
                            Issued::Warmup | Issued::Full => {}
                        }
                        continue;
                    }
                    if !counted_full {
                        self.counts.ring_full += 1;
                        counted_full = true;
                    }
                    self.ring_dirty();
                    self.sleep_until(now.saturating_add(RING_FULL_RETRY_NS));
                }
                Due::Held => {
                    if !counted_held {
                        self.counts.held_back += 1;
                        counted_held = true;
                    }
                    self.ring_dirty();
                    self.sleep_until(end.min(now.saturating_add(MAX_SLEEP_NS)));
                }
                Due::At(t) => {
                    self.ring_dirty();
                    if t - now > SPIN_NS {
                        self.sleep_until(end.min(t - SPIN_NS));
                    } else {
                        while now_ns() < t {
                            std::hint::spin_loop();
                        }
                    }
                }
                Due::Wait => {
                    self.ring_dirty();
                    self.sleep_until(end);
                }
                Due::Done => {
                    self.ring_dirty();
                    return Stop::Exhausted;
                }
            }
        }
    }

    /// Pushes one conversation of scenario `s` due at `t_sched` to the
    /// least-loaded live worker with room, and says what it was.
    fn issue(&mut self, t_sched: u64, stage: usize, s: usize) -> Issued {
        let warm = t_sched < self.measure_start;
        let stage = if warm { WARMUP } else { stage as u16 };
        let slot = IssueSlot {
            seq: self.seq,
            t_sched,
            sample: self.pickers[s].next_index(),
            stage,
            scenario: s as u16,
        };
        let Some(best) = (0..self.workers.len())
            .filter(|&i| self.workers[i].alive)
            .min_by_key(|&i| self.workers[i].inflight)
        else {
            return Issued::Full;
        };
        // The least-loaded worker first; the others only if its ring is full.
        let Some(k) = std::iter::once(best)
            .chain((0..self.workers.len()).filter(|&i| i != best))
            .find(|&i| self.workers[i].alive && self.workers[i].issue.push(slot).is_ok())
        else {
            return Issued::Full;
        };
        let open = self
            .open_index(stage, s as u16)
            .expect("a stage and scenario of the plan");
        let w = &mut self.workers[k];
        w.inflight += 1;
        w.open[open] += 1;
        w.dirty = true;
        self.inflight += 1;
        self.counts.max_inflight = self.counts.max_inflight.max(self.inflight);
        self.inflight_by_scenario[s] += 1;
        self.seq += 1;
        if !warm {
            return Issued::Measured;
        }
        if self.warmup_left == 0 {
            return Issued::Warmup;
        }
        self.warmup_left -= 1;
        if self.warmup_left > 0 {
            return Issued::Warmup;
        }
        // Every conversation issued so far was due at or before this one,
        // so all of them stay warm-up, and the time warm-up still counts.
        self.set_measure_start(self.warm_until.max(t_sched.saturating_add(1)));
        Issued::LastWarmup
    }

    /// Measuring begins at `t` (`u64::MAX`: not known yet). Published
    /// before any request due at or after `t` is issued, so a worker
    /// tells each request's stage as `collect` does (`stages::stage_of`).
    fn set_measure_start(&mut self, t: u64) {
        self.measure_start = t;
        self.shared.publish_measure_start(t);
    }

    /// Stage `k`'s measurement begins at `t`, published as
    /// `set_measure_start`.
    fn set_stage_start(&mut self, k: usize, t: u64) {
        self.stage_starts[k] = t;
        self.shared.publish_stage_start(k, t);
    }

    /// Where `WorkerEnd::open` keeps a conversation with this `stage` field
    /// and scenario; `None` for values no conversation of this run has.
    fn open_index(&self, stage: u16, scenario: u16) -> Option<usize> {
        let slot = match stage {
            WARMUP => 0,
            k if (k as usize) < self.plan.stages.len() => k as usize + 1,
            _ => return None,
        };
        let n = self.plan.scenarios.len();
        ((scenario as usize) < n).then(|| slot * n + scenario as usize)
    }

    /// Rings the doorbell of every worker that was handed work since.
    fn ring_dirty(&mut self) {
        for (k, w) in self.workers.iter_mut().enumerate() {
            if w.dirty {
                w.dirty = false;
                self.shared.worker_bells[k].ring();
            }
        }
    }

    /// Sleeps on the doorbell until `deadline` (at most `MAX_SLEEP_NS`, and
    /// not past the next live interval), a completion, or a signal.
    fn sleep_until(&mut self, deadline: u64) {
        let now = now_ns();
        if deadline <= now {
            return;
        }
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.idle(now);
        }
        let bell = &self.shared.parent_bell;
        bell.prepare_sleep();
        if self.workers.iter_mut().any(|w| !w.done.is_empty()) {
            bell.cancel_sleep();
            return;
        }
        let mut until = deadline.min(now.saturating_add(MAX_SLEEP_NS));
        if let Some(l) = &self.live {
            until = until.min(l.next_at.max(now + 1));
        }
        until = until.min(self.timeline.next_tick.max(now + 1));
        bell.wait(Some(Duration::from_nanos(until - now)));
    }

    /// Whether stage `si` broke a threshold that stops the run
    /// (`abort_on_fail`), and which.
    fn broken_thresholds(&self, si: usize) -> Option<ThresholdAbort> {
        if !self.plan.thresholds.abort_on_fail {
            return None;
        }
        let mut b = Block::default();
        for sb in &self.blocks[si] {
            b.merge(sb);
        }
        let window = now_ns().saturating_sub(self.stage_starts[si]);
        let broken: Vec<_> = self
            .plan
            .thresholds
            .evaluate(&b, window)
            .into_iter()
            .filter(|v| !v.pass)
            .map(|v| v.name)
            .collect();
        (!broken.is_empty()).then(|| ThresholdAbort {
            stage: self.plan.stages[si].name.clone(),
            broken,
        })
    }
}
