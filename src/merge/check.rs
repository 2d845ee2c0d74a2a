//! What a shard's `state` may say before a merge trusts it. Two kinds of
//! wrong: a field that would size the merge (the timeline's intervals, the
//! clocks that place a shard on the merged timeline) is checked before
//! anything is allocated by it, and a shard that fails is refused by file
//! and field (`clock`); counts that contradict each other or would overflow
//! once added up leave the shard out of the merge, which is then
//! incomplete and says why (`consistent`).

use std::fmt::Display;

use serde::Deserialize;
use serde_json::Value;

use crate::metrics::block::Block;
use crate::metrics::run::{ConnTimes, RunResult};
use crate::metrics::series::Series;
use crate::metrics::timeline::INTERVAL_NS;

/// Any count a shard holds: 1.7 × 10^13 (a million requests or tokens a
/// second for 200 days). Below it, the counts of as many shards as a run
/// may have (`shard::MAX_SHARDS`, under 2^17) add up without overflowing a
/// u64, and sums of values below 2^64 without overflowing a u128.
pub(crate) const MAX_COUNT: u64 = 1 << 44;

/// Workers a shard may have had: well above bench's `--workers` limit
/// (64), and a bound on the peak-RSS list merged from every shard.
const MAX_WORKERS: usize = 1024;

/// Any CLOCK_MONOTONIC or Unix time, ns (146 years; 2116): past it, the
/// offsets between two shards' clocks would not fit an i64.
const MAX_TIME_NS: u64 = 1 << 62;

/// A shard's timeline may run this long past the last request it measured
/// (the time to stop it), besides as long again as the run.
const MAX_IDLE_S: u64 = 3_600;

/// Shards may start this far apart beyond the timelines they have (a
/// scheduler that queued them, or ran them one after another): the merged
/// timeline keeps a bucket for every second between.
pub(crate) const MAX_START_GAP_S: u64 = 6 * 3_600;

/// Where a shard sits on the merged timeline: its clock anchors and the
/// seconds its own timeline spans, checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Clock {
    pub started_wall_ns: u64,
    pub run_start_ns: u64,
    /// Intervals in its timeline (0 when it has none).
    pub span_s: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ClockDoc {
    started_wall_ns: u64,
    run_start_ns: u64,
    total: EndDoc,
    warmup: EndDoc,
    measured: Vec<(u64, u64)>,
    stages: Vec<StageDoc>,
    timeline: TimelineDoc,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct EndDoc {
    last_end: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct StageDoc {
    block: EndDoc,
    measured: Vec<(u64, u64)>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct TimelineDoc {
    interval_ns: u64,
    stage_names: Vec<serde::de::IgnoredAny>,
    slices: Vec<SliceDoc>,
    in_flight: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SliceDoc {
    buckets: Vec<BucketDoc>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct BucketDoc {
    interval: u64,
    stage: Option<u64>,
}

/// The clock anchors and timeline extent of `state` (a shard summary's,
/// as JSON), read without decoding anything else; an error names the
/// field (`state.timeline.slices[0].buckets[3].interval: …`).
pub(crate) fn clock(state: &Value) -> Result<Clock, String> {
    let doc: ClockDoc = serde_path_to_error::deserialize(state)
        .map_err(|e| format!("state.{}: {}", e.path(), e.inner()))?;
    if doc.started_wall_ns > MAX_TIME_NS {
        return Err(format!(
            "state.started_wall_ns {}: past {MAX_TIME_NS} ns (the year 2116)",
            doc.started_wall_ns
        ));
    }
    if doc.run_start_ns > MAX_TIME_NS {
        return Err(format!(
            "state.run_start_ns {}: past {MAX_TIME_NS} ns (146 years of a monotonic clock)",
            doc.run_start_ns
        ));
    }
    let t = &doc.timeline;
    let empty = t.slices.iter().all(|s| s.buckets.is_empty()) && t.in_flight.is_empty();
    if !empty && t.interval_ns != INTERVAL_NS {
        return Err(format!(
            "state.timeline.interval_ns {}: a timeline's intervals are {INTERVAL_NS} ns",
            t.interval_ns
        ));
    }
    let ends = doc
        .measured
        .iter()
        .chain(doc.stages.iter().flat_map(|s| &s.measured))
        .map(|w| w.1)
        .chain([doc.total.last_end, doc.warmup.last_end])
        .chain(doc.stages.iter().map(|s| s.block.last_end))
        .filter(|&e| e <= MAX_TIME_NS);
    let ran_s = ends
        .map(|e| e.saturating_sub(doc.run_start_ns).div_ceil(INTERVAL_NS))
        .max()
        .unwrap_or(0);
    let allowed = 2 * ran_s + MAX_IDLE_S;
    let mut span_s = t.in_flight.len() as u64;
    if span_s > allowed {
        return Err(format!(
            "state.timeline.in_flight: {span_s} intervals, past the shard's end (its requests \
             ended within {ran_s} s of its start)"
        ));
    }
    for (i, slice) in t.slices.iter().enumerate() {
        for (j, b) in slice.buckets.iter().enumerate() {
            // Made only for an error: this runs per bucket, in both passes.
            let at = || format!("state.timeline.slices[{i}].buckets[{j}]");
            if b.interval >= allowed {
                return Err(format!(
                    "{}.interval {}: past the shard's end (its requests ended within {ran_s} s \
                     of its start)",
                    at(),
                    b.interval
                ));
            }
            // A shard closes every interval into at least one bucket per
            // slice, so a slice's buckets outnumber its intervals: what a
            // shard's timeline spans costs its file that many buckets.
            let n = slice.buckets.len() as u64;
            if b.interval >= n {
                return Err(format!(
                    "{}.interval {}: the slice has {n} bucket(s), one or more for every \
                     interval",
                    at(),
                    b.interval
                ));
            }
            if let Some(s) = b.stage
                && s >= t.stage_names.len() as u64
            {
                return Err(format!(
                    "{}.stage {s}: the timeline names {} stage(s)",
                    at(),
                    t.stage_names.len()
                ));
            }
            span_s = span_s.max(b.interval + 1);
        }
        if t.in_flight.len() > slice.buckets.len() {
            return Err(format!(
                "state.timeline.in_flight: {} intervals, but slices[{i}] has {} bucket(s), one \
                 or more for every interval",
                t.in_flight.len(),
                slice.buckets.len()
            ));
        }
    }
    Ok(Clock {
        started_wall_ns: doc.started_wall_ns,
        run_start_ns: doc.run_start_ns,
        span_s,
    })
}

/// Whole seconds between `start` and `earliest` (wall ns), rounded.
pub(crate) fn shift_s(start: u64, earliest: u64) -> u64 {
    let d = start.saturating_sub(earliest);
    (d + INTERVAL_NS / 2) / INTERVAL_NS
}

/// The seconds the merged timeline of shards at `clocks` would span, or
/// the index (into `clocks`) of the shard that would stretch it past the
/// shards' own timelines and `MAX_START_GAP_S` of gaps between them.
pub(crate) fn merged_span(clocks: &[Clock]) -> Result<u64, (usize, String)> {
    let earliest = clocks.iter().map(|c| c.started_wall_ns).min().unwrap_or(0);
    let own: u64 = clocks.iter().map(|c| c.span_s).sum();
    let limit = own + MAX_START_GAP_S;
    let mut span = 0;
    for (i, c) in clocks.iter().enumerate() {
        let shift = shift_s(c.started_wall_ns, earliest);
        let end = shift + c.span_s;
        if end > limit {
            return Err((
                i,
                format!(
                    "state.started_wall_ns {}: {shift} s after the earliest shard's start, so \
                     the merged timeline would span {end} s, more than the shards' timelines \
                     ({own} s) and {MAX_START_GAP_S} s between their starts",
                    c.started_wall_ns
                ),
            ));
        }
        span = span.max(end);
    }
    Ok(span)
}

/// Refuses a count past `MAX_COUNT`.
fn count(at: &dyn Display, n: u64) -> Result<(), String> {
    if n > MAX_COUNT {
        return Err(format!(
            "{at} {n}: more than any shard counts ({MAX_COUNT})"
        ));
    }
    Ok(())
}

fn time(at: &dyn Display, t: u64) -> Result<(), String> {
    if t > MAX_TIME_NS {
        return Err(format!(
            "{at} {t}: past {MAX_TIME_NS} ns, not a clock's time"
        ));
    }
    Ok(())
}

/// `n` values between `min` and `max` add up to `sum`: n × min ≤ sum ≤
/// n × max. The upper bound, `n × max`.
fn sum_within(at: &dyn Display, n: u64, min: u64, max: u64, sum: u128) -> Result<u128, String> {
    let n = u128::from(n);
    let (lo, hi) = (n * u128::from(min), n * u128::from(max));
    if min > max || !(lo..=hi).contains(&sum) {
        return Err(format!(
            "{at} {sum}: {n} values between {min} and {max} sum to {lo}..={hi}"
        ));
    }
    Ok(hi)
}

/// A series' count bounded and its sums within what its extremes allow.
fn series(at: &dyn Display, s: &Series) -> Result<(), String> {
    let n = s.count();
    count(&format_args!("{at}.count"), n)?;
    let (Some(min), Some(max)) = (s.min_ns(), s.max_ns()) else {
        return Ok(());
    };
    let hi = sum_within(&format_args!("{at}.sum"), n, min, max, s.sum_ns())?;
    let hi_sq = hi.saturating_mul(u128::from(max));
    if s.sum_sq() > hi_sq {
        return Err(format!(
            "{at}.sum_sq {}: {n} values of at most {max} have squares summing to at most {hi_sq}",
            s.sum_sq()
        ));
    }
    Ok(())
}

fn block(at: &dyn Display, b: &Block) -> Result<(), String> {
    let counts = [
        ("issued", b.issued),
        ("completed", b.completed),
        ("failed", b.failed),
        ("output_tokens", b.output_tokens),
        ("input_tokens", b.input_tokens),
        ("decode_tokens", b.decode_tokens),
        ("text_bytes", b.text_bytes),
        ("output_truncated", b.output_truncated),
        ("output_untokenized", b.output_untokenized),
        ("goodput.judged", b.goodput.judged),
        ("goodput.good", b.goodput.good),
        ("goodput.good_output_tokens", b.goodput.good_output_tokens),
        ("goodput.missed_ttft", b.goodput.missed_ttft),
        ("goodput.missed_tpot", b.goodput.missed_tpot),
        ("goodput.missed_e2e", b.goodput.missed_e2e),
    ];
    for (name, n) in counts {
        count(&format_args!("{at}.{name}"), n)?;
    }
    let arrays: [(&str, &[u64]); 3] = [
        ("output_sources", &b.output_sources),
        ("input_sources", &b.input_sources),
        ("finish", &b.finish),
    ];
    for (name, v) in arrays {
        for (i, &n) in v.iter().enumerate() {
            count(&format_args!("{at}.{name}[{i}]"), n)?;
        }
    }
    for (key, n) in b.errors.named() {
        count(&format_args!("{at}.errors.{key}"), n)?;
    }
    if b.completed + b.failed > b.issued {
        return Err(format!(
            "{at}: {} completed and {} failed of {} issued",
            b.completed, b.failed, b.issued
        ));
    }
    let decode_max = u128::from(b.decode_tokens) * u128::from(u64::MAX);
    if b.decode_ns > decode_max {
        return Err(format!(
            "{at}.decode_ns {}: more than {} tokens can take",
            b.decode_ns, b.decode_tokens
        ));
    }
    let times = [
        ("first_sched", b.first_sched),
        ("last_end", b.last_end),
        ("last_sched", b.last_sched),
        ("last_sched_end", b.last_sched_end),
        ("first_send", b.first_send),
    ];
    for (name, t) in times {
        time(&format_args!("{at}.{name}"), t)?;
    }
    let series_of = [
        ("e2e", &b.e2e),
        ("service", &b.service),
        ("latency_all", &b.latency_all),
        ("ttft", &b.ttft),
        ("ttft_sched", &b.ttft_sched),
        ("tpot", &b.tpot),
        ("tpot_mlperf", &b.tpot_mlperf),
        ("itl", &b.itl),
        ("to_last_token", &b.to_last_token),
        ("tpot_incl_ttft_weighted", &b.tpot_incl_ttft_weighted),
        ("tpot_weighted", &b.tpot_weighted),
        ("send_lateness", &b.send_lateness),
        ("isl", &b.isl),
        ("isl_issued", &b.isl_issued),
        ("osl", &b.osl),
    ];
    for (name, s) in series_of {
        series(&format_args!("{at}.{name}"), s)?;
    }
    Ok(())
}

fn windows(at: &dyn Display, w: &[(u64, u64)]) -> Result<(), String> {
    for (i, &(from, to)) in w.iter().enumerate() {
        time(&format_args!("{at}[{i}][0]"), from)?;
        time(&format_args!("{at}[{i}][1]"), to)?;
    }
    Ok(())
}

fn conn_times(at: &dyn Display, t: &ConnTimes) -> Result<(), String> {
    count(&format_args!("{at}.count"), t.count)?;
    if let Some((i, w)) = t
        .buckets
        .windows(2)
        .enumerate()
        .find(|(_, w)| w[0].0 >= w[1].0)
    {
        return Err(format!(
            "{at}.buckets[{}]: {} after {}, not ascending",
            i + 1,
            w[1].0,
            w[0].0
        ));
    }
    let held = t
        .buckets
        .iter()
        .fold(0u64, |h, &(_, n)| h.saturating_add(n));
    if held != t.count {
        return Err(format!("{at}.count {}: its buckets hold {held}", t.count));
    }
    if t.count > 0 {
        sum_within(
            &format_args!("{at}.sum_ns"),
            t.count,
            t.min_ns,
            t.max_ns,
            t.sum_ns,
        )?;
    }
    Ok(())
}

/// Every count of `run` within `MAX_COUNT` and consistent with the others
/// it bounds; the first that is not, by its path in `state`.
pub(crate) fn consistent(run: &RunResult) -> Result<(), String> {
    block(&"total", &run.total)?;
    block(&"warmup", &run.warmup)?;
    windows(&"measured", &run.measured)?;
    for (i, s) in run.scenarios.iter().enumerate() {
        block(&format_args!("scenarios[{i}].block"), &s.block)?;
    }
    for (i, st) in run.stages.iter().enumerate() {
        block(&format_args!("stages[{i}].block"), &st.block)?;
        for (j, s) in st.scenarios.iter().enumerate() {
            block(&format_args!("stages[{i}].scenarios[{j}].block"), &s.block)?;
        }
        windows(&format_args!("stages[{i}].measured"), &st.measured)?;
        match st.load {
            crate::plan::Load::Closed { concurrency } => {
                count(
                    &format_args!("stages[{i}].load.concurrency"),
                    concurrency as u64,
                )?;
            }
            crate::plan::Load::Open {
                rate_from, rate_to, ..
            } => {
                for (name, r) in [("rate_from", rate_from), ("rate_to", rate_to)] {
                    if !(r.is_finite() && r >= 0.0) {
                        return Err(format!("stages[{i}].load.{name} {r}: not a rate"));
                    }
                }
            }
            crate::plan::Load::Offline => {}
        }
    }
    let g = &run.generator;
    let counters = [
        ("ring_full", g.ring_full),
        ("held_back", g.held_back),
        ("waited_for_connection", g.waited_for_connection),
        ("completion_ring_full", g.completion_ring_full),
        ("itl_truncated", g.itl_truncated),
        ("connections_opened", g.connections_opened),
        ("stale_retries", g.stale_retries),
        ("corrupt_records", g.corrupt_records),
        ("max_inflight", g.max_inflight),
    ];
    for (name, n) in counters {
        count(&format_args!("generator.{name}"), n)?;
    }
    if g.workers > MAX_WORKERS || g.worker_max_rss_kib.len() > g.workers {
        return Err(format!(
            "generator.workers {} with {} peak RSS entries (at most {} workers, one entry each)",
            g.workers,
            g.worker_max_rss_kib.len(),
            MAX_WORKERS
        ));
    }
    if !(0.0..=1.0).contains(&g.worker_busy_max) {
        return Err(format!(
            "generator.worker_busy_max {}: not a share of time",
            g.worker_busy_max
        ));
    }
    let c = &run.connections;
    for (name, n) in [
        ("opened", c.opened),
        ("resumed", c.resumed),
        ("failed", c.failed),
        ("opened_in_window", c.opened_in_window),
    ] {
        count(&format_args!("connections.{name}"), n)?;
    }
    conn_times(&"connections.tcp_connect", &c.tcp_connect)?;
    conn_times(&"connections.tls_handshake", &c.tls_handshake)?;
    for (i, e) in run.endpoints.iter().enumerate() {
        count(&format_args!("endpoints[{i}].completed"), e.completed)?;
        count(&format_args!("endpoints[{i}].failed"), e.failed)?;
        for (key, n) in e.errors.named() {
            count(&format_args!("endpoints[{i}].errors.{key}"), n)?;
        }
        series(&format_args!("endpoints[{i}].ttft"), &e.ttft)?;
        series(&format_args!("endpoints[{i}].e2e"), &e.e2e)?;
    }
    let t = &run.timeline;
    count(&"timeline.stragglers", t.stragglers)?;
    count(&"timeline.scenarios_left_out", t.scenarios_left_out as u64)?;
    for (i, &n) in t.in_flight.iter().enumerate() {
        count(&format_args!("timeline.in_flight[{i}]"), n)?;
    }
    for (i, slice) in t.slices.iter().enumerate() {
        for (j, b) in slice.buckets.iter().enumerate() {
            for (name, n) in [
                ("completed", b.completed),
                ("failed", b.failed),
                ("output_tokens", b.output_tokens),
                ("input_tokens", b.input_tokens),
                ("good", b.good),
            ] {
                count(&format_args!("timeline.slices[{i}].buckets[{j}].{name}"), n)?;
            }
            for e in &b.errors {
                count(
                    &format_args!("timeline.slices[{i}].buckets[{j}].errors"),
                    e.2,
                )?;
            }
        }
    }
    Ok(())
}
