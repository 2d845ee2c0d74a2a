//! What a run produced, assembled once it has drained: stage and scenario
//! blocks merged into totals, thresholds evaluated per stage, the workers'
//! own counters read from shared memory, and the reasons — generator limits,
//! incomplete accounting — a reader must know to trust the numbers.

use std::sync::atomic::Ordering;

use super::Parent;
use crate::clock::now_ns;
use crate::metrics::block::Block;
use crate::metrics::run::{
    ConnTimes, ConnectionStats, FailedFast, GeneratorStats, Incomplete, Limit, RunResult,
    ScenarioResult, StageResult,
};
use crate::shm::run::{TIME_BUCKETS, TimeHist, time_bucket_mid};

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
        let connections = self.connection_stats(generator.connections_opened);
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
                measured: vec![(self.stage_starts[i], self.stage_starts[i] + window_ns)],
                block,
                window_ns,
                thresholds,
            });
        }
        if let [only] = self.by_endpoint.as_mut_slice() {
            only.take_latency(&total);
        }
        let total_window_ns = total.last_end.saturating_sub(self.measure_start);
        let offline = self
            .plan
            .stages
            .iter()
            .all(|s| matches!(s.load, crate::plan::Load::Offline));
        generator.limits = Limit::find(&generator, &total, offline);
        let mut incomplete = std::mem::take(&mut self.incomplete);
        if let Some(t) = self.fail_fast.tripped() {
            incomplete.insert(
                0,
                Incomplete::FailedFast(FailedFast {
                    first: t.first,
                    error: t.class.key(t.status),
                    endpoint: self
                        .plan
                        .endpoints
                        .get(t.endpoint as usize)
                        .map(|e| e.url.clone()),
                    message: t.message.clone(),
                    cause: None,
                }),
            );
        }
        if self.before_start {
            incomplete.insert(0, Incomplete::InterruptedBeforeStart);
        } else if self.interrupted {
            incomplete.insert(0, Incomplete::Interrupted);
        }
        if let Some(abort) = &self.threshold_abort {
            incomplete.push(Incomplete::ThresholdAbort(abort.clone()));
        }
        let timeline = self.timeline_result();
        RunResult {
            started_wall_ns: self.run_start_wall,
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
            measured: vec![(self.measure_start, self.measure_start + total_window_ns)],
            thresholds: self.plan.thresholds.clone(),
            warmup: std::mem::take(&mut self.warmup),
            generator,
            connections,
            interrupted: self.interrupted,
            complete: incomplete.is_empty(),
            incomplete_reasons: incomplete,
            startup_ns: self
                .first_send
                .saturating_sub(started_ns)
                .saturating_sub(self.waited),
            run_start_ns: self.run_start,
            slo: self.plan.slo,
            endpoints: std::mem::take(&mut self.by_endpoint),
            timeline,
        }
    }
}

impl Parent<'_, '_, '_> {
    /// Every worker's connection statistics merged; `opened` is the run's
    /// total from the workers' counters.
    fn connection_stats(&self, opened: u64) -> ConnectionStats {
        let n = self.workers.len();
        let stats = || (0..n).map(|k| self.shared.conn_stats(k));
        ConnectionStats {
            opened,
            resumed: stats().map(|s| s.resumed.load(Ordering::Relaxed)).sum(),
            failed: stats().map(|s| s.failed.load(Ordering::Relaxed)).sum(),
            opened_in_window: opened.saturating_sub(self.opened_at_measure.unwrap_or(opened)),
            tls: self.plan.endpoints.iter().any(|e| e.tls.is_some()),
            keep_alive: self.plan.endpoints.iter().all(|e| e.keep_alive),
            tcp_connect: merge(stats().map(|s| &s.tcp_connect)),
            tls_handshake: merge(stats().map(|s| &s.tls_handshake)),
        }
    }

    /// Connections opened so far, over every worker.
    pub(super) fn connections_opened(&self) -> u64 {
        (0..self.workers.len())
            .map(|k| {
                self.shared
                    .counters(k)
                    .connections_opened
                    .load(Ordering::Relaxed)
            })
            .sum()
    }
}

/// The workers' histograms of one kind as one.
fn merge<'a>(hists: impl Iterator<Item = &'a TimeHist>) -> ConnTimes {
    let mut counts = vec![0u64; TIME_BUCKETS];
    let mut t = ConnTimes {
        min_ns: u64::MAX,
        ..ConnTimes::default()
    };
    for h in hists {
        let Some(min) = h.min_ns() else { continue };
        t.count += h.count.load(Ordering::Relaxed);
        t.sum_ns += u128::from(h.sum_ns.load(Ordering::Relaxed));
        t.min_ns = t.min_ns.min(min);
        t.max_ns = t.max_ns.max(h.max_ns.load(Ordering::Relaxed));
        for (c, b) in counts.iter_mut().zip(&h.buckets) {
            *c += b.load(Ordering::Relaxed);
        }
    }
    if t.count == 0 {
        return ConnTimes::default();
    }
    t.buckets = counts
        .into_iter()
        .enumerate()
        .filter(|(_, c)| *c > 0)
        .map(|(i, c)| (time_bucket_mid(i), c))
        .collect();
    t
}
