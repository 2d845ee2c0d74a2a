//! Per-second buckets of the run, kept by the parent as records arrive: a
//! finished request counts in the interval its `t_end` falls in (from the
//! run's start, warm-up included), under the stage it was measured in, for
//! the whole run and for its scenario.
//!
//! Records do not arrive in `t_end` order (each worker's ring is drained in
//! turn, the tokenizer lane holds some back), so the last few intervals
//! stay open in a small ring, each with a set of small latency histograms
//! per slice and stage that saw a request; an interval closes `GRACE_NS`
//! after it ends, once a second, into plain counts. A record for an
//! interval already closed still counts exactly in it; only its latency is
//! lost (counted as a straggler). The trade-off: per request a few
//! additions and two or three histogram records, no allocation (histograms
//! come from a pool); per second one bucket per slice pushed to a `Vec`,
//! its histograms handed to the encoder thread (`encoder`), which reads
//! their percentiles and encodes them as text for summary.json's state off
//! the loop.
//!
//! The open cells are also the live view's only tally: what measured
//! requests ended since the last live interval is the difference of the
//! running totals (`measured`), and its latency percentiles come from the
//! cells of the seconds it overlaps (`live_latency`).

mod encoder;

use hdrhistogram::Histogram;

use super::Parent;
use crate::clock::now_ns;
use crate::metrics::block::RequestSample;
use crate::metrics::errors::ErrorClass;
use crate::metrics::timeline::{
    Bucket, INTERVAL_NS, MAX_SCENARIO_SERIES, RunTimeline, TimelineSlice,
};
use encoder::{Cell as Closed, Encoder, Hists};

/// Intervals open at once: the one under way, the one just ended, one in
/// its grace period, and one for a tick that came late.
const OPEN: u64 = 4;
/// How long after its end an interval still takes late records with
/// their latencies.
const GRACE_NS: u64 = 2 * INTERVAL_NS;

/// `Cell::hist` of a cell without histograms.
const NO_HIST: u32 = u32::MAX;

/// One slice × stage of an open interval.
#[derive(Default)]
struct Cell {
    counts: Bucket,
    /// Index of its histograms in the pool, or `NO_HIST`.
    hist: u32,
}

/// Histogram sets handed to cells and taken back when they close.
#[derive(Default)]
struct Pool {
    hists: Vec<Hists>,
    free: Vec<u32>,
}

impl Pool {
    fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.hists.push(Hists::new());
            (self.hists.len() - 1) as u32
        })
    }
}

/// The parent's per-second buckets.
pub(super) struct TimelineBuckets {
    run_start: u64,
    /// `None` without `--slo`.
    judging: bool,
    /// Warm-up (0) and each stage (`1 + k`).
    slots: usize,
    /// The whole run (0) and each scenario with a series (`1 + s`).
    slices: usize,
    /// Interval `k` in `first_open..first_open + OPEN` is `open[k % OPEN]`,
    /// its cells indexed `slice * slots + slot`.
    open: Vec<Vec<Cell>>,
    first_open: u64,
    /// The latest interval anything was recorded in.
    latest: u64,
    /// Closed buckets per slice, ordered by interval, then stage.
    closed: Vec<Vec<Bucket>>,
    pool: Pool,
    /// The slot running at each interval's start and the conversations in
    /// flight at each interval's end, as the ticks saw them.
    running: Vec<u16>,
    in_flight: Vec<u64>,
    last_running: u16,
    last_in_flight: u64,
    stragglers: u64,
    /// When `tick` next has something to do (the next interval boundary).
    pub(super) next_tick: u64,
    /// Reads and encodes closed cells' histograms.
    encoder: Encoder,
    /// What measured requests ended in the intervals closed so far (the
    /// whole run's slice), stragglers included: with the open cells, the
    /// run's totals so far.
    measured: Bucket,
    /// With a live view: latency of the measured requests of the cells
    /// closed since the live interval under way began, and the first
    /// interval it overlaps.
    live: Option<(Hists, u64)>,
}

/// Percentiles of the latencies the live view shows, ns (`None`: none
/// recorded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct LiveLatency {
    pub e2e: (Option<u64>, Option<u64>),
    pub ttft: (Option<u64>, Option<u64>),
    pub late_p99: Option<u64>,
}

/// The slot of a request measured in `stage` (`None`: warm-up).
fn slot_of(stage: Option<u16>) -> usize {
    stage.map_or(0, |k| k as usize + 1)
}

fn stage_of(slot: usize) -> Option<u16> {
    slot.checked_sub(1).map(|k| k as u16)
}

/// Counts `s` in `b` (no latency).
fn count(b: &mut Bucket, s: &RequestSample, good: bool) {
    if let Some(class) = s.error {
        b.add_error(class, s.status, 1);
        return;
    }
    b.completed += 1;
    b.output_tokens += s.output_tokens().0;
    b.input_tokens += s.input_tokens.map_or(0, u64::from);
    b.good += u64::from(good);
}

/// Adds `from`'s counts (not its latencies) into `into`.
fn add_counts(into: &mut Bucket, from: &Bucket) {
    into.completed += from.completed;
    into.output_tokens += from.output_tokens;
    into.input_tokens += from.input_tokens;
    into.good += from.good;
    for &(class, status, n) in &from.errors {
        into.add_error(class, status, n);
    }
}

/// The p50 and p99 of `h`, `None` when empty.
fn p50_p99(h: &Histogram<u32>) -> (Option<u64>, Option<u64>) {
    let q = |q| (!h.is_empty()).then(|| h.value_at_quantile(q));
    (q(0.5), q(0.99))
}

impl TimelineBuckets {
    pub(super) fn new(stages: usize, scenarios: usize, judging: bool) -> TimelineBuckets {
        let slots = stages + 1;
        let series = if scenarios > 1 {
            scenarios.min(MAX_SCENARIO_SERIES)
        } else {
            0
        };
        let slices = 1 + series;
        let cells = || {
            (0..slices * slots)
                .map(|_| Cell {
                    hist: NO_HIST,
                    ..Cell::default()
                })
                .collect()
        };
        TimelineBuckets {
            run_start: 0,
            judging,
            slots,
            slices,
            open: (0..OPEN).map(|_| cells()).collect(),
            first_open: 0,
            latest: 0,
            closed: vec![Vec::new(); slices],
            pool: Pool::default(),
            running: Vec::new(),
            in_flight: Vec::new(),
            last_running: 0,
            last_in_flight: 0,
            stragglers: 0,
            next_tick: u64::MAX,
            encoder: Encoder::inline(),
            measured: Bucket::default(),
            live: None,
        }
    }

    /// Time zero of the timeline; starts the encoder thread.
    pub(super) fn start(&mut self, run_start: u64) {
        self.run_start = run_start;
        self.next_tick = run_start;
        self.encoder.start();
    }

    /// Keeps what the live view reads, from `now` on.
    pub(super) fn watch_live(&mut self, now: u64) {
        self.live = Some((Hists::new(), self.interval(now)));
    }

    /// The interval `t` falls in.
    fn interval(&self, t: u64) -> u64 {
        t.saturating_sub(self.run_start) / INTERVAL_NS
    }

    /// The slices a request of `scenario` counts in.
    fn slices_of(&self, scenario: usize) -> impl Iterator<Item = usize> + use<> {
        let own = (self.slices > 1 && scenario < MAX_SCENARIO_SERIES).then_some(1 + scenario);
        std::iter::once(0).chain(own)
    }

    /// Counts a finished request of `scenario`, measured in `stage`
    /// (`None`: warm-up).
    /// `good`: the collector's goodput verdict (false without `--slo`).
    pub(super) fn record(
        &mut self,
        s: &RequestSample,
        stage: Option<u16>,
        scenario: usize,
        good: bool,
    ) {
        let slot = slot_of(stage).min(self.slots - 1);
        let mut k = self.interval(s.t_end);
        if k < self.first_open {
            self.straggle(k, slot, scenario, s, good);
            return;
        }
        if k >= self.first_open + OPEN {
            // The ticks fell behind (a long final drain of the tokenizer
            // lane); a time past now is a worker's error, not a reason to
            // close intervals that have not happened.
            k = k.min(self.interval(now_ns())).max(self.first_open);
            self.close_before((k + 1).saturating_sub(OPEN));
        }
        self.latest = self.latest.max(k);
        let slots = self.slots;
        // Send lateness goes in the whole run's slice, for the live view.
        let lateness = self.live.is_some() && s.t_send != 0 && s.t_send >= s.t_sched;
        for slice in self.slices_of(scenario) {
            let cell = &mut self.open[(k % OPEN) as usize][slice * slots + slot];
            count(&mut cell.counts, s, good);
            let late = lateness && slice == 0;
            if s.error.is_some() && !late {
                continue;
            }
            if cell.hist == NO_HIST {
                cell.hist = self.pool.take();
            }
            let h = &mut self.pool.hists[cell.hist as usize];
            if late {
                h.late.saturating_record(s.t_send - s.t_sched);
            }
            if s.error.is_some() {
                continue;
            }
            h.e2e
                .saturating_record(s.t_end.saturating_sub(s.t_sched).max(1));
            if s.t_first_token != 0 {
                h.ttft
                    .saturating_record(s.t_first_token.saturating_sub(s.t_send).max(1));
            }
        }
    }

    /// Counts `n` requests of `scenario` in `stage` lost with their worker,
    /// noticed at `now`.
    pub(super) fn record_lost(&mut self, now: u64, stage: Option<u16>, scenario: usize, n: u64) {
        let lost = RequestSample {
            t_sched: now,
            t_end: now,
            error: Some(ErrorClass::WorkerLost),
            ..RequestSample::default()
        };
        for _ in 0..n {
            self.record(&lost, stage, scenario, false);
        }
    }

    /// Counts a request whose interval `k` has closed: into that interval's
    /// bucket of its stage, made if the interval had none (an idle
    /// interval's zero bucket takes the stage instead).
    fn straggle(&mut self, k: u64, slot: usize, scenario: usize, s: &RequestSample, good: bool) {
        self.stragglers += 1;
        if slot > 0 {
            count(&mut self.measured, s, good);
        }
        let (interval, stage) = (k as u32, stage_of(slot));
        for slice in self.slices_of(scenario) {
            let v = &mut self.closed[slice];
            let from = v.partition_point(|b| b.interval < interval);
            let to = v.partition_point(|b| b.interval <= interval);
            let at = match v[from..to].iter().position(|b| b.stage == stage) {
                Some(i) => from + i,
                None if to - from == 1 && v[from].is_empty() => {
                    v[from].stage = stage;
                    from
                }
                None => {
                    let i = from + v[from..to].partition_point(|b| b.stage < stage);
                    v.insert(
                        i,
                        Bucket {
                            interval,
                            stage,
                            ..Bucket::default()
                        },
                    );
                    i
                }
            };
            count(&mut v[at], s, good);
        }
    }

    /// Once per interval boundary: notes the slot running and the
    /// conversations in flight, and closes the intervals whose grace has
    /// passed. `running` is the slot under way at `now`.
    pub(super) fn tick(&mut self, now: u64, running: u16, in_flight: u64) {
        let k = self.interval(now);
        self.note(k, running, in_flight);
        let ended = now.saturating_sub(self.run_start).saturating_sub(GRACE_NS) / INTERVAL_NS;
        self.close_before(ended);
        self.next_tick = self
            .run_start
            .saturating_add((k + 1).saturating_mul(INTERVAL_NS));
    }

    /// Interval `k` is under way with `running`, and every interval before
    /// it has ended with `in_flight` conversations out.
    fn note(&mut self, k: u64, running: u16, in_flight: u64) {
        while (self.in_flight.len() as u64) < k {
            self.in_flight.push(in_flight);
        }
        while (self.running.len() as u64) <= k {
            self.running.push(running);
        }
        self.last_running = running;
        self.last_in_flight = in_flight;
    }

    fn close_before(&mut self, end: u64) {
        while self.first_open < end {
            self.close(self.first_open);
        }
    }

    /// Closes interval `k` (`first_open`) into a bucket per slice and stage
    /// that saw a request, or one zero bucket under the stage running at
    /// its start. The cells' histograms go to the encoder.
    fn close(&mut self, k: u64) {
        let idle = self
            .running
            .get(k as usize)
            .copied()
            .unwrap_or(self.last_running);
        if self.in_flight.len() as u64 <= k {
            self.in_flight.push(self.last_in_flight);
        }
        let interval = k as u32;
        let cells = &mut self.open[(k % OPEN) as usize];
        for (slice, closed) in self.closed.iter_mut().enumerate() {
            let before = closed.len();
            for slot in 0..self.slots {
                let cell = &mut cells[slice * self.slots + slot];
                if cell.counts.is_empty() {
                    continue;
                }
                let mut b = std::mem::take(&mut cell.counts);
                b.interval = interval;
                b.stage = stage_of(slot);
                if slice == 0 && slot > 0 {
                    add_counts(&mut self.measured, &b);
                }
                if cell.hist != NO_HIST {
                    let i = cell.hist as usize;
                    cell.hist = NO_HIST;
                    self.pool.free.push(i as u32);
                    let h = &mut self.pool.hists[i];
                    if let Some((live, from)) = &mut self.live
                        && slice == 0
                        && slot > 0
                        && k >= *from
                    {
                        add_latency(live, h);
                    }
                    if h.no_latency() {
                        h.reset();
                    } else {
                        let cell = Closed {
                            slice,
                            interval,
                            stage: b.stage,
                        };
                        self.encoder.take(cell, h);
                    }
                }
                closed.push(b);
            }
            if closed.len() == before {
                closed.push(Bucket {
                    interval,
                    stage: stage_of(idle as usize),
                    ..Bucket::default()
                });
            }
        }
        self.first_open = k + 1;
    }

    /// Closes every interval up to the one `now` falls in (`running` and
    /// `in_flight` as at `now`) and hands the result over.
    pub(super) fn finish(
        &mut self,
        now: u64,
        running: u16,
        in_flight: u64,
        stage_names: Vec<String>,
        scenario_names: &[String],
    ) -> RunTimeline {
        let k = self.interval(now).max(self.latest);
        self.note(k + 1, running, in_flight);
        self.close_before(k + 1);
        self.in_flight.truncate(self.first_open as usize);
        for e in self.encoder.finish() {
            let v = &mut self.closed[e.cell.slice];
            let key = (e.cell.interval, e.cell.stage);
            if let Ok(at) = v.binary_search_by(|b| (b.interval, b.stage).cmp(&key)) {
                e.fill(&mut v[at]);
            }
        }
        let slices = std::mem::take(&mut self.closed)
            .into_iter()
            .enumerate()
            .map(|(i, buckets)| TimelineSlice {
                scenario: i.checked_sub(1).map(|s| scenario_names[s].clone()),
                buckets,
            })
            .collect();
        RunTimeline {
            interval_ns: INTERVAL_NS,
            stage_names,
            slices,
            in_flight: std::mem::take(&mut self.in_flight),
            slo: self.judging,
            stragglers: self.stragglers,
            scenarios_left_out: scenario_names.len().saturating_sub(MAX_SCENARIO_SERIES),
        }
    }

    /// The measured requests that ended so far (the whole run's counts).
    pub(super) fn measured(&self) -> Bucket {
        let mut total = self.measured.clone();
        for cells in &self.open {
            for cell in &cells[1..self.slots] {
                add_counts(&mut total, &cell.counts);
            }
        }
        total
    }

    /// The latency percentiles of the measured requests that ended in the
    /// seconds since the last call (or `watch_live`), up to `now`: those
    /// closed meanwhile and those still open. The next call's seconds
    /// begin with the one `now` falls in.
    pub(super) fn live_latency(&mut self, now: u64) -> LiveLatency {
        let next = self.interval(now);
        let Some((live, from)) = &mut self.live else {
            return LiveLatency::default();
        };
        for k in (*from).max(self.first_open)..self.first_open + OPEN {
            let cells = &self.open[(k % OPEN) as usize];
            for cell in cells[1..self.slots].iter().filter(|c| c.hist != NO_HIST) {
                add_latency(live, &self.pool.hists[cell.hist as usize]);
            }
        }
        let got = LiveLatency {
            e2e: p50_p99(&live.e2e),
            ttft: p50_p99(&live.ttft),
            late_p99: p50_p99(&live.late).1,
        };
        live.reset();
        *from = next;
        got
    }
}

/// Adds `h`'s latencies into `into`.
fn add_latency(into: &mut Hists, h: &Hists) {
    for (a, b) in [
        (&mut into.e2e, &h.e2e),
        (&mut into.ttft, &h.ttft),
        (&mut into.late, &h.late),
    ] {
        if !b.is_empty() {
            // Same bounds, values within them: adding cannot fail.
            let _ = a.add(b);
        }
    }
}

impl Parent<'_, '_, '_> {
    /// Lets the timeline close what is due; cheap when nothing is.
    #[inline]
    pub(super) fn tick_timeline(&mut self, now: u64) {
        if now >= self.timeline.next_tick {
            let running = self.running_slot(now);
            self.timeline.tick(now, running, self.inflight);
        }
    }

    /// The timeline's slot under way at `now`: warm-up (0) or `1 + stage`.
    fn running_slot(&self, now: u64) -> u16 {
        if now < self.measure_start {
            0
        } else {
            self.current_stage as u16 + 1
        }
    }

    /// The run's timeline, every interval closed.
    pub(super) fn timeline_result(&mut self) -> RunTimeline {
        let now = now_ns();
        let running = self.running_slot(now);
        let stages = self.plan.stages.iter().map(|s| s.name.clone()).collect();
        let scenarios: Vec<String> = self.plan.scenarios.iter().map(|s| s.name.clone()).collect();
        self.timeline
            .finish(now, running, self.inflight, stages, &scenarios)
    }
}

#[cfg(test)]
mod tests;
