//! The "MLPerf" section of `report.txt` in MLPerf mode: the numbers of
//! `performance/result_summary.json`, each with the contract it follows,
//! and the early-stopping estimates beside the percentiles they bound.

use std::fmt::Write;

use super::series::SeriesStats;
use super::summary::ResultSummary;
use crate::metrics::mlperf::{ES_MIN_PERCENTILE, GRID, percentile_key};
use crate::report::fmt::{Whole, num};

/// Milliseconds, four digits.
fn ms(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |v| num(v as f64 / 1e6, 4, Whole::Bare))
}

/// The section, starting with a blank line.
pub(crate) fn render(r: &ResultSummary) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "\n== MLPerf (performance/result_summary.json) ==");
    let _ = writeln!(
        o,
        "samples issued {}  completed {} (failures count as completed)  failed {}",
        r.n_samples_issued, r.n_samples_completed, r.n_samples_failed
    );
    let rate = |v: Option<f64>| v.map_or("-".into(), |v| num(v, 4, Whole::Decimals));
    let window = match r.legacy_loadgen_window_duration_ns {
        Some(w) => format!(
            "LoadGen window: (completed - 1) / first issue -> completion of the last-issued query, {} s",
            num(w as f64 / 1e9, 4, Whole::Decimals)
        ),
        None => format!(
            "completed / measured window, {} s",
            r.duration_ns
                .map_or("-".into(), |d| num(d as f64 / 1e9, 4, Whole::Decimals))
        ),
    };
    let _ = writeln!(o, "qps {}  tps {}  ({window})", rate(r.qps), rate(r.tps));
    let _ = writeln!(
        o,
        "ttft     from issue (llmload's ttft_sched), not from the send"
    );
    let _ = writeln!(o, "latency  completion - issue, failed requests included");
    let _ = writeln!(o, "tpot     {}", r.tpot_contract);
    let shown: Vec<f64> = GRID
        .iter()
        .copied()
        .filter(|&p| p >= ES_MIN_PERCENTILE)
        .rev()
        .collect();
    let _ = write!(o, "\n{:<26}", "(ms)");
    for &p in &shown {
        let label = percentile_key(p);
        let _ = write!(o, "{:>10}", format!("p{}", label.trim_end_matches(".0")));
    }
    o.push('\n');
    for (name, s) in [
        ("ttft", &r.ttft),
        ("tpot", &r.tpot),
        ("latency", &r.latency),
    ] {
        line(&mut o, name, "percentile", &shown, s, SeriesStats::at);
        line(
            &mut o,
            name,
            "early stopping",
            &shown,
            s,
            SeriesStats::estimate,
        );
    }
    let _ = writeln!(
        o,
        "early stopping: the value the true percentile is at most with 99% confidence (LoadGen's test); - where too few samples"
    );
    o
}

fn line(
    o: &mut String,
    name: &str,
    what: &str,
    shown: &[f64],
    s: &SeriesStats,
    get: fn(&SeriesStats, f64) -> Option<u64>,
) {
    let _ = write!(o, "{:<26}", format!("{name} {what}"));
    for &p in shown {
        let _ = write!(o, "{:>10}", ms(get(s, p)));
    }
    o.push('\n');
}
