//! The compare page: two runs drawn over each other on the same axes
//! (time since each run's own start, so runs started at different hours
//! line up), and a table of headline deltas for the whole run and for each
//! stage name both runs have. Pairing is by name only, unlike
//! `report::compare`'s positional fallback: a chart of two differently
//! named stages would claim a likeness the reader cannot check.

use std::fmt::Write;

use super::axis::{Axis, Unit};
use super::sections::{duration, run_length_s};
use super::svg::{Chart, Series};
use super::{esc, n, opt};
use crate::report::summary::timeline::TimelinePoint;
use crate::report::summary::{Numbers, Summary};

const OLD: usize = 0;
const NEW: usize = 3;

pub(super) fn body(old: &Summary, new: &Summary, old_name: &str, new_name: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<section id=\"identity\"><h1>llmload compare <span class=\"muted\">— {} vs {}</span></h1>\
         <table><thead><tr><th></th><th>old</th><th>new</th></tr></thead><tbody>",
        esc(old_name),
        esc(new_name)
    );
    type Cell = fn(&Summary) -> String;
    let rows: [(&str, Cell); 6] = [
        ("target", |s| s.target.clone()),
        ("version", |s| s.version.clone()),
        ("started", |s| s.started_at.clone()),
        ("duration", |s| duration(run_length_s(s))),
        ("stages", |s| {
            s.stages
                .iter()
                .map(|st| st.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }),
        ("status", |s| {
            if s.complete { "complete" } else { "INCOMPLETE" }.to_string()
        }),
    ];
    let _ = write!(
        o,
        "<tr><th>name</th><td>{}</td><td>{}</td></tr>",
        esc(old_name),
        esc(new_name)
    );
    for (label, get) in rows {
        let _ = write!(
            o,
            "<tr><th>{label}</th><td>{}</td><td>{}</td></tr>",
            esc(&get(old)),
            esc(&get(new))
        );
    }
    o.push_str("</tbody></table></section>\n");

    o.push_str("<section id=\"compare-charts\"><h2>Over each other</h2><div class=\"charts\">");
    let names = [(old, "old", OLD, old_name), (new, "new", NEW, new_name)];
    let timed = |get: fn(&TimelinePoint) -> Option<f64>, additive: bool, dashed: bool| {
        names
            .iter()
            .filter_map(|(s, key, color, name)| {
                let t = s.timeline.as_ref()?;
                let whole = t.series.first()?;
                let mid = if t.interval_s > 0.0 {
                    t.interval_s
                } else {
                    1.0
                } / 2.0;
                let pts = per_second(&whole.points, get, additive)
                    .map(|(t, v)| (t + mid, v))
                    .collect();
                let mut se = Series::line(key, *color, pts);
                se.dashed = dashed;
                se.legend = Some(format!("{key}: {name}"));
                Some(se)
            })
            .collect::<Vec<_>>()
    };
    let end = run_length_s(old).max(run_length_s(new)).max(1.0);
    let time = || Axis::new("time since each run's start", Unit::Time).fixed(0.0, end);
    let mut c = Chart::new(
        "compare-throughput",
        "Requests/s",
        time(),
        Axis::new("requests/s", Unit::Count),
    );
    c.series = timed(|p| Some(p.requests_per_s), true, false);
    o.push_str(&c.render());
    let mut c = Chart::new(
        "compare-latency",
        "e2e latency (solid p50, dashed p99)",
        time(),
        Axis::new("ms", Unit::Ms),
    );
    c.series = timed(|p| p.e2e_p50_ms, false, false);
    c.series.extend(timed(|p| p.e2e_p99_ms, false, true));
    o.push_str(&c.render());
    type Cdf = fn(&Numbers) -> Option<&Vec<[f64; 2]>>;
    let cdfs: [(&str, &str, Cdf); 2] = [
        ("compare-cdf-ttft", "TTFT: cumulative distribution", |x| {
            x.distributions.as_ref().map(|d| &d.ttft_ms)
        }),
        ("compare-cdf-e2e", "e2e: cumulative distribution", |x| {
            x.distributions.as_ref().map(|d| &d.e2e_ms)
        }),
    ];
    for (kind, title, get) in cdfs {
        let mut c = Chart::new(
            kind,
            title,
            Axis::new("ms (log)", Unit::Ms).log(),
            Axis::new("share of requests ≤ x", Unit::Fraction),
        );
        for (s, key, color, name) in &names {
            if let Some(pts) = get(&s.run).filter(|p| !p.is_empty()) {
                let mut se = Series::line(key, *color, pts.iter().map(|p| (p[0], p[1])).collect());
                se.legend = Some(format!("{key}: {name}"));
                c.series.push(se);
            }
        }
        o.push_str(&c.render());
    }
    o.push_str("</div></section>\n");

    o.push_str(
        "<section id=\"compare-deltas\"><h2>Headline deltas</h2><div class=\"scroll\"><table id=\"compare-table\">\
         <thead><tr><th>slice</th><th>metric</th><th class=\"num\">old</th><th class=\"num\">new</th>\
         <th class=\"num\">Δ %</th></tr></thead><tbody>",
    );
    deltas(&mut o, "whole run", &old.run, &new.run);
    let mut unpaired = Vec::new();
    for st in &old.stages {
        match new.stages.iter().find(|n| n.name == st.name) {
            Some(other) => deltas(&mut o, &st.name, &st.numbers, &other.numbers),
            None => unpaired.push(format!("{} (old only)", st.name)),
        }
    }
    for st in &new.stages {
        if !old.stages.iter().any(|o| o.name == st.name) {
            unpaired.push(format!("{} (new only)", st.name));
        }
    }
    o.push_str("</tbody></table></div>");
    if !unpaired.is_empty() {
        let _ = write!(
            o,
            "<p class=\"muted\">Stages without a partner of the same name: {}</p>",
            esc(&unpaired.join(", "))
        );
    }
    o.push_str("</section>\n");
    o
}

fn deltas(o: &mut String, slice: &str, a: &Numbers, b: &Numbers) {
    type Get = fn(&Numbers) -> Option<f64>;
    let rows: [(&str, &str, Get); 10] = [
        ("requests_completed", "requests completed", |x| {
            Some(x.requests.completed as f64)
        }),
        ("requests_failed", "requests failed", |x| {
            Some(x.requests.failed as f64)
        }),
        ("requests_per_s", "requests/s", |x| {
            Some(x.throughput.requests_per_s)
        }),
        ("output_tokens_per_s", "output tokens/s", |x| {
            Some(x.throughput.output_tokens_per_s)
        }),
        ("ttft_p50_ms", "TTFT p50 (ms)", |x| x.latency_ms.ttft.p50),
        ("ttft_p99_ms", "TTFT p99 (ms)", |x| x.latency_ms.ttft.p99),
        ("tpot_p50_ms", "TPOT p50 (ms)", |x| x.latency_ms.tpot.p50),
        ("e2e_p50_ms", "e2e p50 (ms)", |x| x.latency_ms.e2e.p50),
        ("e2e_p99_ms", "e2e p99 (ms)", |x| x.latency_ms.e2e.p99),
        ("error_rate_pct", "error rate (%)", |x| {
            x.requests.error_rate().map(|e| e * 100.0)
        }),
    ];
    for (key, label, get) in rows {
        let (va, vb) = (get(a), get(b));
        let delta = match (va, vb) {
            (Some(x), Some(y)) if x != 0.0 => Some((y - x) / x * 100.0),
            _ => None,
        };
        let _ = write!(
            o,
            "<tr data-slice=\"{s}\" data-metric=\"{key}\"><td>{s}</td><td>{label}</td>{}{}{}</tr>",
            super::value_cell("data-side", "old", va, &opt(va, "")),
            super::value_cell("data-side", "new", vb, &opt(vb, "")),
            match delta {
                Some(d) => format!(
                    "<td class=\"num\" data-side=\"delta\" data-value=\"{d}\">{}{} %</td>",
                    if d > 0.0 { "+" } else { "" },
                    n(d)
                ),
                None => "<td class=\"num\" data-side=\"delta\">–</td>".into(),
            },
            s = esc(slice),
        );
    }
}

/// One value per second of the whole run: a second in which requests of two
/// stages ended has a point for each, whose rates add up; a percentile is
/// not additive, so the point with the most completions speaks for it.
pub(super) fn per_second<'a>(
    points: &'a [TimelinePoint],
    get: fn(&TimelinePoint) -> Option<f64>,
    additive: bool,
) -> impl Iterator<Item = (f64, f64)> + 'a {
    points.chunk_by(|a, b| a.t_s == b.t_s).map(move |same| {
        let v = if additive {
            same.iter().filter_map(get).sum::<f64>()
        } else {
            same.iter()
                .max_by_key(|p| p.completed)
                .and_then(get)
                .unwrap_or(f64::NAN)
        };
        (same[0].t_s, v)
    })
}
