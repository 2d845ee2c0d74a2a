//! The end of a run and the loss of workers. A normal end lets the
//! conversations under way run their turns (each request bounded by its own
//! timeout); an interrupt waits only for the requests in flight; both wait
//! at most the drain timeout, and a signal during a normal end's drain
//! turns it into an interrupt's (a second signal cuts that short). What is
//! still out then is aborted, and what no worker ever reports — because it
//! died, wrote a record that cannot be read, or did not answer the abort —
//! is counted as `worker_lost`, each against the scenario and stage (or
//! warmup) of its own conversation.

use std::sync::atomic::{AtomicU32, Ordering};

use super::source::Source;
use super::{Bounds, Parent, Stop};
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
    /// to exit, takes the gaps they folded, and collects the tokenizer
    /// lane's last requests.
    pub(super) fn drain(&mut self, signals: &AtomicU32) {
        let start = now_ns();
        let drain_ns = self.plan.limits.drain_ns;
        // A run that failed fast waits only for what is in flight, as an
        // interrupted one does: its conversations' next turns would fail too.
        let mut deadline = if self.interrupted || self.fail_fast.tripped().is_some() {
            self.shared.set_phase(RunPhase::WindDown);
            start.saturating_add(drain_ns)
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
            let l = self.plan.limits;
            start.saturating_add(normal_drain_ns(
                turns,
                l.timeout_ns,
                think,
                l.connect_ns,
                drain_ns,
            ))
        };
        let mut seen = signals.load(Ordering::Relaxed);
        let mut abort_at: Option<u64> = None;
        let mut source = Source::Drain;
        loop {
            let until = abort_at.unwrap_or(deadline);
            let bounds = Bounds {
                end: until,
                limit: u64::MAX,
                min_end: 0,
            };
            match self.pump(&mut source, self.current_stage, bounds, signals, seen) {
                Stop::Exhausted | Stop::NoWorkers => break,
                Stop::FailedFast => {
                    self.shared.set_phase(RunPhase::WindDown);
                    deadline = deadline.min(now_ns().saturating_add(drain_ns));
                }
                Stop::Signal => {
                    seen = signals.load(Ordering::Relaxed);
                    if self.interrupted {
                        deadline = now_ns();
                    } else {
                        self.interrupted = true;
                        self.shared.set_phase(RunPhase::WindDown);
                        deadline = deadline.min(now_ns().saturating_add(drain_ns));
                    }
                }
                Stop::Reached if abort_at.is_none() => {
                    self.shared.set_phase(RunPhase::Abort);
                    abort_at = Some(now_ns().saturating_add(ABORT_GRACE_NS));
                }
                Stop::Reached => {
                    let lost = (0..self.workers.len()).map(|k| self.write_off(k)).sum();
                    // The last report may have come just as time ran out.
                    if lost > 0 {
                        self.incomplete.push(Incomplete::NeverReported { lost });
                    }
                    break;
                }
            }
        }
        self.shared.set_phase(RunPhase::Exit);
        self.collect_series();
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
        // What it reported before it died counts.
        self.collect();
        if !self.workers[k].alive {
            // Its last record was corrupt: already written off.
            return;
        }
        self.workers[k].alive = false;
        let lost = self.write_off(k);
        self.reshare_connections();
        self.incomplete.push(Incomplete::WorkerDied {
            worker: k,
            pid: self.workers[k].child.pid(),
            how,
            lost,
        });
    }

    /// Worker `k` wrote a completion record that cannot be read: nothing it
    /// sends can be trusted any more, so it is stopped (reaped with the
    /// others at the end) and treated as dead.
    pub(super) fn worker_corrupt(&mut self, k: usize) {
        self.counts.corrupt_records += 1;
        let w = &mut self.workers[k];
        w.alive = false;
        let _ = w.child.kill();
        let pid = w.child.pid();
        let lost = self.write_off(k);
        self.reshare_connections();
        self.incomplete.push(Incomplete::CorruptRecord {
            worker: k,
            pid,
            lost,
        });
    }

    /// Shares the run's connections among the workers still alive, so the
    /// conversations a lost worker carried go on from the others at the
    /// server's pace rather than queueing behind their connections: each
    /// survivor opens more as it needs them (`worker::more_slots`).
    fn reshare_connections(&mut self) {
        let alive = self.workers.iter().filter(|w| w.alive).count();
        if alive > 0 {
            let share = self.plan.connections.div_ceil(alive);
            self.shared.publish_conn_share(share as u64);
        }
    }

    /// Counts every conversation in flight on worker `k` as a `worker_lost`
    /// failure of its own scenario, in the stage it is measured in (or
    /// warmup), and forgets them; returns how many. Which turn each was at
    /// died with the worker.
    fn write_off(&mut self, k: usize) -> u64 {
        let n = self.plan.scenarios.len();
        let now = now_ns();
        let mut open = std::mem::take(&mut self.workers[k].open);
        let mut lost = 0;
        for (i, &count) in open.iter().enumerate().filter(|(_, c)| **c > 0) {
            let (slot, s) = (i / n, i % n);
            // Only the stage under way has its window end now; an older
            // stage's window is not stretched by a loss noticed later.
            let current = slot == self.current_stage + 1;
            let t = if current || slot == 0 { now } else { 0 };
            let sample = RequestSample {
                t_sched: t,
                t_end: t,
                error: Some(ErrorClass::WorkerLost),
                ..Default::default()
            };
            let block = match slot {
                0 => &mut self.warmup,
                stage => &mut self.blocks[stage - 1][s],
            };
            for _ in 0..count {
                block.record(&sample, []);
            }
            let stage = slot.checked_sub(1).map(|k| k as u16);
            self.timeline.record_lost(now, stage, s, count);
            self.inflight_by_scenario[s] -= count;
            lost += count;
        }
        open.fill(0);
        let w = &mut self.workers[k];
        w.open = open;
        w.inflight = 0;
        self.inflight -= lost;
        lost
    }
}

/// How long a normal end waits for the conversations under way: what they
/// could need by their own limits (every turn timing out after its think
/// time, plus a connect and some slack), but never longer than `drain_ns`.
/// Saturating: durations are user input up to `u64::MAX / 2`.
pub(super) fn normal_drain_ns(
    turns: u64,
    timeout_ns: u64,
    think_ns: u64,
    connect_ns: u64,
    drain_ns: u64,
) -> u64 {
    turns
        .saturating_mul(timeout_ns.saturating_add(think_ns))
        .saturating_add(connect_ns)
        .saturating_add(DRAIN_SLACK_NS)
        .min(drain_ns)
}
