//! Inter-token gaps folded in the worker. A success whose verdict the
//! parent cannot change — its scenario has no content checks (`check_failed`
//! is the only failure the parent decides) and only successes have ITL —
//! has its gaps recorded here, in this worker's series for its block (stage
//! slot × scenario), instead of shipped in its record; each series goes to
//! the parent once, when the worker exits, and is merged into the block
//! exactly (histograms and sums add). A streamed request's record shrinks
//! from 128 + 8 bytes per gap to 128, and its gaps cost a histogram record
//! each here instead of in the parent's loop. Requests with checks keep
//! their gaps in their records.
//!
//! The block must be the one the parent records the request in, so its
//! stage must be certain when the gaps are folded (`fold_block`): a
//! request the parent issued was due before the parent published any later
//! boundary (`stages::stage_of` on the published values gives the parent's
//! answer); a later turn of a conversation, due when this worker started
//! it, is folded only once the last stage's start is published, when no
//! boundary can still move under it. A worker that dies takes its series
//! with it.

use std::time::Duration;

use super::Worker;
use crate::clock::now_ns;
use crate::engine::record::{self, Completion};
use crate::engine::stages;
use crate::metrics::series::Series;

/// How long an exiting worker waits for room in its ring for its series.
const SEND_FOR_NS: u64 = 5_000_000_000;

/// One block's folded gaps.
struct Fold {
    /// Requests whose gaps are in `itl`.
    requests: u64,
    itl: Series,
}

/// A worker's folded gaps by block, each series made on first use.
pub(super) struct Folded {
    scenarios: usize,
    /// By `slot * scenarios + scenario` (slot 0 warm-up, `1 + k` stage `k`).
    blocks: Vec<Option<Fold>>,
}

impl Folded {
    pub(super) fn new(stages: usize, scenarios: usize) -> Folded {
        Folded {
            scenarios,
            blocks: (0..(stages + 1) * scenarios).map(|_| None).collect(),
        }
    }

    /// Adds one request's `gaps` to block `key`.
    #[inline]
    pub(super) fn add(&mut self, key: usize, gaps: &[u64]) {
        let f = self.blocks[key].get_or_insert_with(|| Fold {
            requests: 0,
            itl: Series::new(),
        });
        f.requests += 1;
        f.itl.record_all(gaps);
    }
}

impl Worker<'_> {
    /// The block a success of `scenario`, turn `turn`, due at `t_sched` is
    /// measured in, when its gaps may be folded here; `None` when the parent
    /// needs them (content checks) or the block is not yet certain.
    #[inline]
    pub(super) fn fold_block(&self, scenario: u16, t_sched: u64, turn: u16) -> Option<usize> {
        let s = scenario as usize;
        if !self.s.scenarios.get(s)?.checks.is_empty() {
            return None;
        }
        let shared = self.s.shared;
        let stages = shared.stages();
        let measure_start = shared.measure_start();
        // A later turn was due when this worker started it: a boundary the
        // parent has yet to publish could still fall before it.
        if turn > 1
            && (measure_start == u64::MAX || stages == 0 || shared.stage_start(stages - 1) == 0)
        {
            return None;
        }
        let stage = stages::stage_of(
            t_sched,
            measure_start,
            (0..stages).map(|k| shared.stage_start(k)),
        );
        Some(stages::slot_of(stage) * self.folded.scenarios + s)
    }

    /// At exit: every folded series, then the record that says they have
    /// all gone, pushed as the parent reads them (it waits for the last);
    /// gives up on room after `SEND_FOR_NS`.
    pub(super) fn send_folded(&mut self) {
        let n = self.folded.scenarios;
        for (key, fold) in self.folded.blocks.iter().enumerate() {
            let Some(f) = fold else { continue };
            let slot = key / n;
            let rec = Completion {
                flags: record::SERIES,
                stage: stages::issue_stage(slot.checked_sub(1).map(|k| k as u16)),
                scenario: (key % n) as u16,
                ..Completion::default()
            };
            let bytes = record::series_bytes(f.requests, &f.itl);
            self.out.push(self.counters, rec, &[], &bytes, &[]);
        }
        let last = Completion {
            flags: record::SERIES,
            ..Completion::default()
        };
        self.out.push(self.counters, last, &[], &[], &[]);
        let deadline = now_ns().saturating_add(SEND_FOR_NS);
        loop {
            self.out.flush();
            if self.out.take_published() {
                self.s.shared.parent_bell.ring();
            }
            if self.out.is_empty() || now_ns() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
