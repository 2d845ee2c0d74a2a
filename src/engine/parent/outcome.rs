//! What a run produced, assembled once it has drained: stage and scenario
//! blocks merged into totals, thresholds evaluated per stage, the workers'
//! own counters read from shared memory, and the reasons — generator limits,
//! incomplete accounting — a reader must know to trust the numbers.

use std::sync::atomic::Ordering;

use super::Parent;
use crate::clock::now_ns;
use crate::metrics::block::Block;
use crate::metrics::run::{
    GeneratorStats, Incomplete, Limit, RunResult, ScenarioResult, StageResult,
};

impl Parent<'_, '_, '_> {
    pub(super) fn finish(mut self, started_ns: u64) -> RunResult {
        let mut generator = GeneratorStats {
            workers: self.workers.len(),
            ring_full: self.counts.ring_full,
            held_back: self.counts.held_back,
            corrupt_records: self.counts.corrupt_records,
            max_inflight: self.counts.max_inflight,
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
        generator.limits = Limit::find(&generator, &total);
        let mut incomplete = std::mem::take(&mut self.incomplete);
        if self.interrupted {
            incomplete.insert(0, Incomplete::Interrupted);
        }
        if let Some(abort) = &self.threshold_abort {
            incomplete.push(Incomplete::ThresholdAbort(abort.clone()));
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
