//! The end of a run and the loss of workers. A normal end lets the
//! conversations under way run all their turns (each request bounded by
//! its own timeout); an interrupt waits only for the requests in flight,
//! for at most the drain timeout, and a second signal cuts that short. What
//! is still out then is aborted, and what no worker ever reports — because
//! it died, or did not answer the abort — is counted as `worker_lost`.

use std::sync::atomic::{AtomicU32, Ordering};

use super::source::Source;
use super::{Parent, Stop};
use crate::clock::now_ns;
use crate::metrics::block::RequestSample;
use crate::metrics::errors::ErrorClass;
use crate::metrics::run::Incomplete;
use crate::shm::run::RunPhase;
use crate::sys::process::Exit;

/// After `ABORT`, how long workers get to report what they failed.
const ABORT_GRACE_NS: u64 = 5_000_000_000;
/// Slack on top of the longest a normal drain can take by its limits.
const DRAIN_SLACK_NS: u64 = 1_000_000_000;
/// How often the parent asks whether a worker died.
const LIVENESS_EVERY_NS: u64 = 20_000_000;

impl Parent<'_, '_, '_> {
    /// Stops issuing and waits for what is in flight, then tells the workers
    /// to exit and collects the tokenizer lane's last requests.
    pub(super) fn drain(&mut self, signals: &AtomicU32) {
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
                + DRAIN_SLACK_NS
        };
        let mut seen = signals.load(Ordering::Relaxed);
        let mut abort_at: Option<u64> = None;
        let mut source = Source::Drain;
        loop {
            let until = abort_at.unwrap_or(deadline);
            match self.pump(
                &mut source,
                self.current_stage,
                until,
                u64::MAX,
                signals,
                seen,
            ) {
                Stop::Exhausted | Stop::NoWorkers => break,
                Stop::Signal => {
                    seen = signals.load(Ordering::Relaxed);
                    if self.interrupted {
                        deadline = now_ns();
                    } else {
                        self.interrupted = true;
                        self.shared.set_phase(RunPhase::WindDown);
                        deadline = deadline.min(now_ns() + self.plan.limits.drain_ns);
                    }
                }
                Stop::Reached if abort_at.is_none() => {
                    self.shared.set_phase(RunPhase::Abort);
                    abort_at = Some(now_ns() + ABORT_GRACE_NS);
                }
                Stop::Reached => {
                    let lost = self.inflight;
                    self.incomplete.push(Incomplete::NeverReported { lost });
                    for w in &mut self.workers {
                        w.inflight = 0;
                    }
                    self.inflight = 0;
                    self.record_lost(lost);
                    break;
                }
            }
        }
        self.shared.set_phase(RunPhase::Exit);
        if let Some(mut lane) = self.lane.take() {
            lane.close();
            while let Some(f) = lane.take() {
                self.finalize(f);
            }
        }
    }

    /// Notices workers that died; their unreported requests are lost.
    pub(super) fn check_workers(&mut self) {
        let now = now_ns();
        if now < self.next_liveness {
            return;
        }
        self.next_liveness = now + LIVENESS_EVERY_NS;
        for k in 0..self.workers.len() {
            if !self.workers[k].alive {
                continue;
            }
            if let Ok(Some(exit)) = self.workers[k].child.try_wait() {
                self.worker_died(k, exit);
            }
        }
    }

    fn worker_died(&mut self, k: usize, how: Exit) {
        self.collect();
        let w = &mut self.workers[k];
        w.alive = false;
        let lost = w.inflight;
        w.inflight = 0;
        self.inflight -= lost;
        self.incomplete.push(Incomplete::WorkerDied {
            worker: k,
            pid: w.child.pid(),
            how,
            lost,
        });
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
}
