//! The live window: what ended since the last live interval (counts, output
//! tokens, failures by class, e2e, TTFT and send-lateness histograms), handed
//! to the observer every live interval with the run's progress through its
//! plan and the generator's counters since the last one, then cleared. Only
//! measured requests count; warmup is labelled as such. Recording is a few
//! additions and histogram increments; everything else is read once per
//! interval from what the parent keeps anyway.

use std::sync::atomic::Ordering;

use super::Parent;
use crate::clock::now_ns;
use crate::metrics::block::RequestSample;
use crate::metrics::errors::ErrorCounts;
use crate::metrics::observe::{GeneratorDelta, Interval, Progress};
use crate::metrics::series::Series;
use crate::plan::StagePlan;

/// Requests that ended in the current live interval.
pub(super) struct LiveWindow {
    pub(super) next_at: u64,
    every: u64,
    from: u64,
    completed: u64,
    failed: u64,
    output_tokens: u64,
    failures: ErrorCounts,
    total_completed: u64,
    total_failed: u64,
    e2e: Series,
    ttft: Series,
    lateness: Series,
    /// Generator counters at the start of the interval: ring full, held
    /// back, waited for a connection.
    seen: [u64; 3],
}

impl LiveWindow {
    pub(super) fn new(now: u64, every: u64) -> LiveWindow {
        LiveWindow {
            next_at: now.saturating_add(every),
            every,
            from: now,
            completed: 0,
            failed: 0,
            output_tokens: 0,
            failures: ErrorCounts::default(),
            total_completed: 0,
            total_failed: 0,
            e2e: Series::new(),
            ttft: Series::new(),
            lateness: Series::new(),
            seen: [0; 3],
        }
    }

    pub(super) fn record(&mut self, s: &RequestSample) {
        if s.t_send >= s.t_sched && s.t_send != 0 {
            self.lateness.record(s.t_send - s.t_sched);
        }
        if let Some(class) = s.error {
            self.failed += 1;
            self.total_failed += 1;
            self.failures.record(class, s.status);
        } else {
            self.completed += 1;
            self.total_completed += 1;
            self.output_tokens += s.output_tokens().0;
            self.e2e.record(s.t_end.saturating_sub(s.t_sched));
            if s.t_first_token != 0 {
                self.ttft.record(s.t_first_token.saturating_sub(s.t_send));
            }
        }
    }

    fn clear(&mut self, now: u64) {
        self.from = now;
        self.next_at = now.saturating_add(self.every);
        self.completed = 0;
        self.failed = 0;
        self.output_tokens = 0;
        self.failures.clear();
        self.e2e.clear();
        self.ttft.clear();
        self.lateness.clear();
    }
}

impl Parent<'_, '_, '_> {
    /// Hands the observer the last live interval when it is due.
    pub(super) fn tick_live(&mut self) {
        let Some(next_at) = self.live.as_ref().map(|l| l.next_at) else {
            return;
        };
        let now = now_ns();
        if now < next_at {
            return;
        }
        let progress = self.progress(now);
        let waited: u64 = (0..self.workers.len())
            .map(|k| {
                self.shared
                    .counters(k)
                    .waited_for_connection
                    .load(Ordering::Relaxed)
            })
            .sum();
        let counters = [self.counts.ring_full, self.counts.held_back, waited];
        let warming = now < self.measure_start;
        let (stage, stage_index) = if warming {
            ("warmup", None)
        } else {
            let k = self.current_stage;
            (self.plan.stages[k].name.as_str(), Some(k))
        };
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let delta = |i: usize| counters[i].saturating_sub(live.seen[i]);
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.interval(&Interval {
                elapsed_ns: now - self.run_start,
                interval_ns: now - live.from,
                stage,
                stage_index,
                stages: self.plan.stages.len(),
                completed: live.completed,
                failed: live.failed,
                output_tokens: live.output_tokens,
                failures: &live.failures,
                total_completed: live.total_completed,
                total_failed: live.total_failed,
                inflight: self.inflight,
                e2e: &live.e2e,
                ttft: &live.ttft,
                progress,
                generator: GeneratorDelta {
                    ring_full: delta(0),
                    held_back: delta(1),
                    waited_for_connection: delta(2),
                    lateness: &live.lateness,
                },
            });
        }
        live.seen = counters;
        live.clear(now);
    }

    /// How far through the plan the run is at `now`.
    fn progress(&self, now: u64) -> Progress {
        let cur = self.current_stage;
        progress(&At {
            stages: &self.plan.stages,
            warmup_ns: self.plan.warmup_ns,
            warmup_requests: self.plan.warmup_requests,
            elapsed_ns: now.saturating_sub(self.run_start),
            warming: now < self.measure_start,
            current: cur,
            stage_elapsed_ns: match self.stage_starts[cur] {
                0 => None,
                t => Some(now.saturating_sub(t)),
            },
            stage_issued: self.stage_issued,
        })
    }
}

/// Where a run stands in its plan.
struct At<'a> {
    stages: &'a [StagePlan],
    warmup_ns: u64,
    warmup_requests: u64,
    elapsed_ns: u64,
    warming: bool,
    current: usize,
    /// Since the current stage's measurement began (`None`: not yet).
    stage_elapsed_ns: Option<u64>,
    /// Measured conversations issued in the current stage.
    stage_issued: u64,
}

/// The share of the plan done: by time when every stage is timed, by
/// requests when every stage is counted, else stage by stage.
fn progress(at: &At<'_>) -> Progress {
    let stages = at.stages;
    let cur = at.current;
    // A stage's share done: by its clock, its count, or the further of the
    // two when it has both (a count with a time cap).
    let fraction = |i: usize| -> f64 {
        if at.warming || i > cur {
            return 0.0;
        }
        if i < cur {
            return 1.0;
        }
        let s = &stages[i];
        let by_time = s
            .duration_ns
            .zip(at.stage_elapsed_ns)
            .map(|(d, t)| t as f64 / d.max(1) as f64);
        let by_count = s.requests.map(|n| at.stage_issued as f64 / n.max(1) as f64);
        by_time.into_iter().chain(by_count).fold(0.0, f64::max)
    };
    let timed = stages
        .iter()
        .all(|s| s.duration_ns.is_some() && s.requests.is_none());
    let counted = stages.iter().all(|s| s.requests.is_some());
    let mut p = Progress::default();
    if timed && at.warmup_requests == 0 {
        let planned = stages
            .iter()
            .filter_map(|s| s.duration_ns)
            .fold(at.warmup_ns, u64::saturating_add);
        p.planned_ns = Some(planned);
        p.done = at.elapsed_ns as f64 / planned.max(1) as f64;
    } else if counted {
        let planned: u64 = stages.iter().filter_map(|s| s.requests).sum();
        let issued: u64 = if at.warming {
            0
        } else {
            stages[..cur].iter().filter_map(|s| s.requests).sum::<u64>() + at.stage_issued
        };
        p.requests = Some((issued, planned));
        p.done = issued as f64 / planned.max(1) as f64;
    } else {
        let weight = |s: &StagePlan| match (timed, s.duration_ns) {
            (true, Some(d)) => d as f64,
            _ => 1.0,
        };
        let total: f64 = stages.iter().map(weight).sum();
        let done: f64 = (0..stages.len())
            .map(|i| weight(&stages[i]) * fraction(i).min(1.0))
            .sum();
        p.done = done / total.max(f64::MIN_POSITIVE);
    }
    p.done = p.done.clamp(0.0, 1.0);
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Load;

    const S: u64 = 1_000_000_000;

    fn stage(duration_s: Option<u64>, requests: Option<u64>) -> StagePlan {
        StagePlan {
            name: "s".into(),
            load: Load::Offline,
            duration_ns: duration_s.map(|d| d * S),
            requests,
            min_ns: None,
        }
    }

    fn at(stages: &[StagePlan], elapsed_s: u64, current: usize) -> At<'_> {
        At {
            stages,
            warmup_ns: 2 * S,
            warmup_requests: 0,
            elapsed_ns: elapsed_s * S,
            warming: false,
            current,
            stage_elapsed_ns: Some(S),
            stage_issued: 5,
        }
    }

    #[test]
    fn a_timed_plan_is_elapsed_over_warmup_and_durations() {
        let stages = [stage(Some(4), None), stage(Some(4), None)];
        let p = progress(&at(&stages, 5, 1));
        assert_eq!(p.planned_ns, Some(10 * S));
        assert_eq!((p.done, p.requests), (0.5, None));
        // Past the plan (the drain): full, not more.
        assert_eq!(progress(&at(&stages, 30, 1)).done, 1.0);
    }

    #[test]
    fn a_counted_plan_is_requests_issued_over_requests_planned() {
        let stages = [stage(None, Some(10)), stage(None, Some(30))];
        let p = progress(&at(&stages, 5, 1));
        assert_eq!(p.requests, Some((15, 40)));
        assert_eq!((p.done, p.planned_ns), (0.375, None));
        let warming = At {
            warming: true,
            current: 0,
            ..at(&stages, 1, 0)
        };
        assert_eq!(progress(&warming).requests, Some((0, 40)));
    }

    #[test]
    fn a_mixed_plan_counts_each_stage_as_an_equal_share() {
        // Stage 2 of 2: the first done, the second a quarter by its clock
        // (1 s of 4) and half by its count (5 of 10): the further.
        let stages = [stage(Some(4), None), stage(Some(4), Some(10))];
        let p = progress(&at(&stages, 5, 1));
        assert_eq!((p.done, p.planned_ns, p.requests), (0.75, None, None));
    }
}
