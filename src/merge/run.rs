//! Shards' runs into one `RunResult`: every monotonic time rebased onto the
//! earliest shard's clock through each shard's wall anchor, counts summed,
//! histograms added (exact: the same bounds, no resize), windows the union
//! of the shards' measured intervals, generator counters summed (busiest
//! worker: the maximum) and verdicts judged again on the merged blocks.

use crate::metrics::block::Block;
use crate::metrics::endpoints::EndpointStats;
use crate::metrics::run::{
    Incomplete, Limit, RunResult, ScenarioResult, StageResult, union, union_ns,
};
use crate::plan::Load;

use super::check::Clock;

/// A shard's run and how it relates to the merged one.
pub(crate) struct Part<'a> {
    pub run: &'a RunResult,
    /// Add to its monotonic times for the merged run's.
    pub delta_ns: i64,
    /// Its timeline's interval 0 is the merged run's interval `shift`.
    pub shift: u64,
}

/// A shard's monotonic-to-wall offset: `run_start_ns` and
/// `started_wall_ns` are one instant (both below 2^62, `check::clock`).
pub(crate) fn mono_to_wall(c: &Clock) -> i64 {
    c.started_wall_ns as i64 - c.run_start_ns as i64
}

fn rebase(t: u64, delta: i64) -> u64 {
    if t == 0 {
        0
    } else {
        (t as i64).saturating_add(delta).max(1) as u64
    }
}

fn rebase_window(w: &[(u64, u64)], delta: i64) -> Vec<(u64, u64)> {
    w.iter()
        .map(|&(a, b)| (rebase(a, delta), rebase(b, delta)))
        .collect()
}

/// `b` with its times moved by `delta`.
fn rebased(b: &Block, delta: i64) -> Block {
    let mut b = b.clone();
    for t in [
        &mut b.first_sched,
        &mut b.last_end,
        &mut b.last_sched,
        &mut b.last_sched_end,
        &mut b.first_send,
    ] {
        *t = rebase(*t, delta);
    }
    b
}

/// Adds `from` into `into` by scenario name, in first-seen order.
fn merge_scenarios(into: &mut Vec<ScenarioResult>, from: &[ScenarioResult], delta: i64) {
    for s in from {
        let b = rebased(&s.block, delta);
        match into.iter_mut().find(|x| x.name == s.name) {
            Some(x) => x.block.merge(&b),
            None => into.push(ScenarioResult {
                name: s.name.clone(),
                block: b,
            }),
        }
    }
}

/// The whole run's load from its shards' shares: rates and concurrency add
/// up (each shard ran its part of the one run).
fn add_load(a: Load, b: Load) -> Load {
    match (a, b) {
        (Load::Closed { concurrency: x }, Load::Closed { concurrency: y }) => {
            Load::Closed { concurrency: x + y }
        }
        (
            Load::Open {
                kind,
                rate_from,
                rate_to,
            },
            Load::Open {
                rate_from: f2,
                rate_to: t2,
                ..
            },
        ) => Load::Open {
            kind,
            rate_from: rate_from + f2,
            rate_to: rate_to + t2,
        },
        (a, _) => a,
    }
}

/// The merged run under way: shards are added one at a time (each then
/// dropped), so memory holds one merged run and one shard's, however many
/// shards there are.
pub(crate) struct Merger {
    out: RunResult,
    measured: Vec<(u64, u64)>,
    /// Thresholds and `--slo` come from the shard on the merged clock
    /// (the earliest), else from the first added.
    based: bool,
    added: usize,
    timeline: super::timeline::Merger,
}

impl Merger {
    /// A merge onto the clock whose anchors are `started_wall_ns` and
    /// `run_start_ns`, with a timeline of at most `span_s` intervals.
    pub(crate) fn new(started_wall_ns: u64, run_start_ns: u64, span_s: u64) -> Merger {
        Merger {
            out: RunResult {
                started_wall_ns,
                run_start_ns,
                ..RunResult::default()
            },
            measured: Vec::new(),
            based: false,
            added: 0,
            timeline: super::timeline::Merger::new(span_s),
        }
    }

    /// Adds one shard (in ascending index order); an error names the field
    /// of its state that does not fit the merged timeline.
    pub(crate) fn add(&mut self, p: &Part<'_>) -> Result<(), String> {
        self.timeline.add(p)?;
        let out = &mut self.out;
        let r = p.run;
        let d = p.delta_ns;
        if !self.based && (self.added == 0 || d == 0) {
            out.thresholds = r.thresholds.clone();
            out.slo = r.slo;
            self.based = d == 0;
        }
        out.total.merge(&rebased(&r.total, d));
        out.warmup.merge(&rebased(&r.warmup, d));
        merge_scenarios(&mut out.scenarios, &r.scenarios, d);
        self.measured.extend(rebase_window(&r.measured, d));
        for s in &r.stages {
            let st = match out.stages.iter().position(|x| x.name == s.name) {
                Some(i) => {
                    let st = &mut out.stages[i];
                    st.load = add_load(st.load, s.load);
                    st
                }
                None => {
                    out.stages.push(StageResult {
                        name: s.name.clone(),
                        load: s.load,
                        block: Block::default(),
                        scenarios: Vec::new(),
                        window_ns: 0,
                        measured: Vec::new(),
                        thresholds: Vec::new(),
                    });
                    out.stages.last_mut().expect("just pushed")
                }
            };
            st.block.merge(&rebased(&s.block, d));
            merge_scenarios(&mut st.scenarios, &s.scenarios, d);
            st.measured.extend(rebase_window(&s.measured, d));
        }
        out.generator.merge(&r.generator);
        // A first shard's connections as they are: keep-alive holds only
        // while every shard's did, which an empty start cannot say.
        if self.added == 0 {
            out.connections = r.connections.clone();
        } else {
            out.connections.merge(&r.connections);
        }
        merge_endpoints(&mut out.endpoints, &r.endpoints);
        out.interrupted |= r.interrupted;
        out.startup_ns = out.startup_ns.max(r.startup_ns);
        if out.aborted_on_threshold.is_none() {
            out.aborted_on_threshold = r.aborted_on_threshold.clone();
        }
        self.added += 1;
        Ok(())
    }

    /// The merged run, with `reasons` why it is incomplete (missing,
    /// incomplete or inconsistent shards).
    pub(crate) fn finish(self, reasons: Vec<Incomplete>) -> RunResult {
        let mut out = self.out;
        for st in &mut out.stages {
            st.window_ns = union_ns(&st.measured);
            st.measured = union(&st.measured);
            st.thresholds = out.thresholds.evaluate(&st.block, st.window_ns);
        }
        out.thresholds_passed = out
            .stages
            .iter()
            .all(|s| s.thresholds.iter().all(|v| v.pass));
        out.total_window_ns = union_ns(&self.measured);
        out.measured = union(&self.measured);
        let offline = out
            .stages
            .iter()
            .all(|s| matches!(s.load, crate::plan::Load::Offline));
        out.generator.limits = Limit::find(&out.generator, &out.total, offline);
        out.timeline = self.timeline.finish();
        out.complete = reasons.is_empty();
        out.incomplete_reasons = reasons;
        out
    }
}

fn merge_endpoints(into: &mut Vec<EndpointStats>, from: &[EndpointStats]) {
    for e in from {
        match into.iter_mut().find(|x| x.url == e.url) {
            Some(x) => x.merge(e),
            None => into.push(e.clone()),
        }
    }
}
