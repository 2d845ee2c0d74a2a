//! The live window: what ended since the last progress line (counts, e2e
//! and TTFT histograms), handed to the observer every live interval and
//! then cleared. Only measured requests count; warmup is labelled as such.

use super::Parent;
use crate::clock::now_ns;
use crate::metrics::block::RequestSample;
use crate::metrics::observe::Interval;
use crate::metrics::series::Series;

/// Requests that ended in the current live interval.
pub(super) struct LiveWindow {
    pub(super) next_at: u64,
    every: u64,
    from: u64,
    completed: u64,
    failed: u64,
    e2e: Series,
    ttft: Series,
}

impl LiveWindow {
    pub(super) fn new(now: u64, every: u64) -> LiveWindow {
        LiveWindow {
            next_at: now.saturating_add(every),
            every,
            from: now,
            completed: 0,
            failed: 0,
            e2e: Series::new(),
            ttft: Series::new(),
        }
    }

    pub(super) fn record(&mut self, s: &RequestSample) {
        if s.error.is_some() {
            self.failed += 1;
        } else {
            self.completed += 1;
            self.e2e.record(s.t_end.saturating_sub(s.t_sched));
            if s.t_first_token != 0 {
                self.ttft.record(s.t_first_token.saturating_sub(s.t_send));
            }
        }
    }
}

impl Parent<'_, '_, '_> {
    /// Hands the observer the last live interval when it is due.
    pub(super) fn tick_live(&mut self) {
        let Some(live) = &mut self.live else { return };
        let now = now_ns();
        if now < live.next_at {
            return;
        }
        let stage = if now < self.measure_start {
            "warmup"
        } else {
            &self.plan.stages[self.current_stage].name
        };
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.interval(&Interval {
                elapsed_ns: now - self.run_start,
                interval_ns: now - live.from,
                stage,
                completed: live.completed,
                failed: live.failed,
                inflight: self.inflight,
                e2e: &live.e2e,
                ttft: &live.ttft,
            });
        }
        live.from = now;
        live.next_at = now.saturating_add(live.every);
        live.completed = 0;
        live.failed = 0;
        live.e2e.clear();
        live.ttft.clear();
    }
}
