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
        let stages = &self.plan.stages;
        let warming = now < self.measure_start;
        let cur = self.current_stage;
        // The current stage's share done: by its clock, its count, or the
        // further of the two when it has both (a count with a time cap).
        let fraction = |i: usize| -> f64 {
            if warming || i > cur {
                return 0.0;
            }
            if i < cur {
                return 1.0;
            }
            let s = &stages[i];
            let start = self.stage_starts[i];
            let by_time = s
                .duration_ns
                .filter(|_| start != 0)
                .map(|d| now.saturating_sub(start) as f64 / d.max(1) as f64);
            let by_count = s
                .requests
                .map(|n| self.stage_issued as f64 / n.max(1) as f64);
            by_time.into_iter().chain(by_count).fold(0.0, f64::max)
        };
        let timed = stages
            .iter()
            .all(|s| s.duration_ns.is_some() && s.requests.is_none());
        let counted = stages.iter().all(|s| s.requests.is_some());
        let mut p = Progress::default();
        if timed && self.plan.warmup_requests == 0 {
            let planned = stages
                .iter()
                .filter_map(|s| s.duration_ns)
                .fold(self.plan.warmup_ns, u64::saturating_add);
            p.planned_ns = Some(planned);
            p.done = now.saturating_sub(self.run_start) as f64 / planned.max(1) as f64;
        } else if counted {
            let planned: u64 = stages.iter().filter_map(|s| s.requests).sum();
            let issued: u64 = if warming {
                0
            } else {
                stages[..cur].iter().filter_map(|s| s.requests).sum::<u64>() + self.stage_issued
            };
            p.requests = Some((issued, planned));
            p.done = issued as f64 / planned.max(1) as f64;
        } else {
            let weights: Vec<f64> = stages
                .iter()
                .map(|s| match (timed, s.duration_ns) {
                    (true, Some(d)) => d as f64,
                    _ => 1.0,
                })
                .collect();
            let total: f64 = weights.iter().sum();
            let done: f64 = (0..stages.len())
                .map(|i| weights[i] * fraction(i).min(1.0))
                .sum();
            p.done = done / total.max(f64::MIN_POSITIVE);
        }
        p.done = p.done.clamp(0.0, 1.0);
        p
    }
}
