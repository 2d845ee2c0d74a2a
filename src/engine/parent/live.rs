//! The live view's clock: every live interval the parent hands its observer
//! what ended since the last one, read from the timeline's cells (the one
//! per-request tally): the measured requests' counts, output tokens and
//! failures as the difference of the run's running totals, and latency and
//! send-lateness percentiles from the seconds the interval overlaps; with
//! the run's progress through its plan and the generator's counters since
//! the last one. Only measured requests count; warmup is labelled as such.
//! Nothing here is per request: it is all read once per interval.

use std::sync::atomic::Ordering;

use super::Parent;
use crate::clock::now_ns;
use crate::metrics::errors::ErrorClass;
use crate::metrics::observe::{GeneratorDelta, Interval, Latency, Progress};
use crate::metrics::timeline::Bucket;
use crate::plan::StagePlan;

/// When the next live interval is due, and what the last one saw.
pub(super) struct LiveClock {
    pub(super) next_at: u64,
    every: u64,
    from: u64,
    /// The run's measured totals at the last interval.
    totals: Bucket,
    /// Generator counters at the start of the interval: ring full, held
    /// back, waited for a connection.
    seen: [u64; 3],
}

impl LiveClock {
    pub(super) fn new(now: u64, every: u64) -> LiveClock {
        LiveClock {
            next_at: now.saturating_add(every),
            every,
            from: now,
            totals: Bucket::default(),
            seen: [0; 3],
        }
    }
}

/// The failures in `now` beyond those in `before` (each a running total),
/// named as reports name them, in taxonomy order (HTTP statuses by code).
fn failures_since(now: &Bucket, before: &Bucket) -> Vec<(String, u64)> {
    let mut new: Vec<_> = now
        .errors
        .iter()
        .filter_map(|&(class, status, n)| {
            let seen = before
                .errors
                .iter()
                .find(|e| e.0 == class && e.1 == status)
                .map_or(0, |e| e.2);
            (n > seen).then_some((class as u8, status, n - seen))
        })
        .collect();
    new.sort_unstable();
    new.into_iter()
        .map(|(class, status, n)| (ErrorClass::from_u8(class).key(status), n))
        .collect()
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
        let totals = self.timeline.measured();
        let latency = self.timeline.live_latency(now);
        let Some(live) = self.live.as_mut() else {
            return;
        };
        let delta = |i: usize| counters[i].saturating_sub(live.seen[i]);
        let since = |now: u64, before: u64| now.saturating_sub(before);
        let failures = failures_since(&totals, &live.totals);
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.interval(&Interval {
                elapsed_ns: now - self.run_start,
                interval_ns: now - live.from,
                stage,
                stage_index,
                stages: self.plan.stages.len(),
                completed: since(totals.completed, live.totals.completed),
                failed: since(totals.failed, live.totals.failed),
                output_tokens: since(totals.output_tokens, live.totals.output_tokens),
                failures: &failures,
                total_completed: totals.completed,
                total_failed: totals.failed,
                inflight: self.inflight,
                e2e: Latency::of(latency.e2e),
                ttft: Latency::of(latency.ttft),
                progress,
                generator: GeneratorDelta {
                    ring_full: delta(0),
                    held_back: delta(1),
                    waited_for_connection: delta(2),
                    lateness_p99_ns: latency.late_p99,
                },
            });
        }
        live.seen = counters;
        live.totals = totals;
        live.from = now;
        live.next_at = now.saturating_add(live.every);
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
    fn failures_since_the_last_interval_are_named_in_taxonomy_order() {
        let mut before = Bucket::default();
        before.add_error(ErrorClass::HttpStatus, 503, 2);
        before.add_error(ErrorClass::Reset, 0, 1);
        let mut now = before.clone();
        now.add_error(ErrorClass::HttpStatus, 503, 3);
        now.add_error(ErrorClass::TlsError, 0, 1);
        now.add_error(ErrorClass::HttpStatus, 429, 1);
        now.add_error(ErrorClass::ConnectRefused, 0, 4);
        assert_eq!(
            failures_since(&now, &before),
            [
                ("connect_refused".to_string(), 4),
                ("http_429".to_string(), 1),
                ("http_503".to_string(), 3),
                ("tls_error".to_string(), 1),
            ]
        );
        assert!(failures_since(&now, &now).is_empty());
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
