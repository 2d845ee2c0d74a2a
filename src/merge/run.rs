//! Shards' runs into one `RunResult`: every monotonic time rebased onto the
//! earliest shard's clock through each shard's wall anchor, counts summed,
//! histograms added (exact: the same bounds, no resize), windows the union
//! of the shards' measured intervals, generator counters summed (busiest
//! worker: the maximum) and verdicts judged again on the merged blocks.

use crate::metrics::block::Block;
use crate::metrics::endpoints::EndpointStats;
use crate::metrics::run::{
    ConnTimes, Incomplete, Limit, RunResult, ScenarioResult, StageResult, union, union_ns,
};
use crate::plan::Load;

/// A shard's run and how it relates to the merged one.
pub(crate) struct Part<'a> {
    pub index: u32,
    pub run: &'a RunResult,
    /// Add to its monotonic times for the merged run's.
    pub delta_ns: i64,
    /// Its timeline's interval 0 is the merged run's interval `shift`.
    pub shift: u32,
}

/// `run`'s monotonic-to-wall offset: `run_start_ns` and `started_wall_ns`
/// are one instant.
pub(crate) fn mono_to_wall(run: &RunResult) -> i64 {
    run.started_wall_ns as i64 - run.run_start_ns as i64
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

fn merge_conn(a: &mut ConnTimes, b: &ConnTimes) {
    if b.count == 0 {
        return;
    }
    if a.count == 0 {
        *a = b.clone();
        return;
    }
    a.count += b.count;
    a.sum_ns += b.sum_ns;
    a.min_ns = a.min_ns.min(b.min_ns);
    a.max_ns = a.max_ns.max(b.max_ns);
    for &(v, n) in &b.buckets {
        match a.buckets.binary_search_by_key(&v, |&(x, _)| x) {
            Ok(i) => a.buckets[i].1 += n,
            Err(i) => a.buckets.insert(i, (v, n)),
        }
    }
}

/// The merged run of `parts` (ascending by index, the first being the
/// earliest start: its clock is the merged run's), with `reasons` why it is
/// incomplete (missing or incomplete shards).
pub(crate) fn merge(parts: &[Part<'_>], reasons: Vec<Incomplete>) -> RunResult {
    let base = parts
        .iter()
        .find(|p| p.delta_ns == 0)
        .unwrap_or(&parts[0])
        .run;
    let mut out = RunResult {
        started_wall_ns: base.started_wall_ns,
        run_start_ns: base.run_start_ns,
        thresholds: base.thresholds.clone(),
        slo: base.slo,
        ..RunResult::default()
    };
    let mut measured = Vec::new();
    for p in parts {
        let r = p.run;
        let d = p.delta_ns;
        out.total.merge(&rebased(&r.total, d));
        out.warmup.merge(&rebased(&r.warmup, d));
        merge_scenarios(&mut out.scenarios, &r.scenarios, d);
        measured.extend(rebase_window(&r.measured, d));
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
        let (g, h) = (&mut out.generator, &r.generator);
        g.workers += h.workers;
        g.ring_full += h.ring_full;
        g.held_back += h.held_back;
        g.waited_for_connection += h.waited_for_connection;
        g.completion_ring_full += h.completion_ring_full;
        g.itl_truncated += h.itl_truncated;
        g.connections_opened += h.connections_opened;
        g.stale_retries += h.stale_retries;
        g.worker_busy_max = g.worker_busy_max.max(h.worker_busy_max);
        g.corrupt_records += h.corrupt_records;
        g.max_inflight += h.max_inflight;
        g.worker_max_rss_kib.extend(&h.worker_max_rss_kib);
        let (c, e) = (&mut out.connections, &r.connections);
        c.opened += e.opened;
        c.resumed += e.resumed;
        c.failed += e.failed;
        c.opened_in_window += e.opened_in_window;
        c.tls |= e.tls;
        c.keep_alive = if p.index == parts[0].index {
            e.keep_alive
        } else {
            c.keep_alive && e.keep_alive
        };
        merge_conn(&mut c.tcp_connect, &e.tcp_connect);
        merge_conn(&mut c.tls_handshake, &e.tls_handshake);
        merge_endpoints(&mut out.endpoints, &r.endpoints);
        out.interrupted |= r.interrupted;
        out.startup_ns = out.startup_ns.max(r.startup_ns);
        if out.aborted_on_threshold.is_none() {
            out.aborted_on_threshold = r.aborted_on_threshold.clone();
        }
    }
    for st in &mut out.stages {
        st.window_ns = union_ns(&st.measured);
        st.measured = union(&st.measured);
        st.thresholds = out.thresholds.evaluate(&st.block, st.window_ns);
    }
    out.thresholds_passed = out
        .stages
        .iter()
        .all(|s| s.thresholds.iter().all(|v| v.pass));
    out.total_window_ns = union_ns(&measured);
    out.measured = union(&measured);
    out.generator.limits = Limit::find(&out.generator, &out.total);
    out.timeline = super::timeline::merge(parts);
    out.complete = reasons.is_empty();
    out.incomplete_reasons = reasons;
    out
}

fn merge_endpoints(into: &mut Vec<EndpointStats>, from: &[EndpointStats]) {
    for e in from {
        match into.iter_mut().find(|x| x.url == e.url) {
            Some(x) => {
                x.completed += e.completed;
                x.failed += e.failed;
                x.errors.merge(&e.errors);
                x.ttft.merge(&e.ttft);
                x.e2e.merge(&e.e2e);
            }
            None => into.push(e.clone()),
        }
    }
}
