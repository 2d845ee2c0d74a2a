//! The page's tables with a row per metric or slice: percentile grids,
//! failure messages, goodput and every tool's definitions. Value cells
//! carry the summary's raw number in `data-value` beside the formatted
//! one, so a test (or a reader's script) can compare them to summary.json.

use std::fmt::Write;

use super::{esc, n, opt, value_cell};
use crate::metrics::series::Rollup;
use crate::report::summary::{Numbers, Summary};

/// The percentile grid's columns: `data-q` key, header.
type Stat = fn(&Rollup) -> Option<f64>;

const GRID: [(&str, &str, Stat); 15] = [
    ("min", "min", |r| r.min),
    ("mean", "mean", |r| r.mean),
    ("p1", "p1", |r| r.p1),
    ("p5", "p5", |r| r.p5),
    ("p10", "p10", |r| r.p10),
    ("p25", "p25", |r| r.p25),
    ("p50", "p50", |r| r.p50),
    ("p75", "p75", |r| r.p75),
    ("p80", "p80", |r| r.p80),
    ("p90", "p90", |r| r.p90),
    ("p95", "p95", |r| r.p95),
    ("p97", "p97", |r| r.p97),
    ("p99", "p99", |r| r.p99),
    ("p999", "p99.9", |r| r.p999),
    ("max", "max", |r| r.max),
];

/// A slice's percentile table: one row per latency series (and the
/// lengths), the core four always, the others when they have samples.
pub(super) fn percentiles(o: &mut String, x: &Numbers) {
    let l = &x.latency_ms;
    let rows: [(&str, &str, &str, &Rollup, bool); 9] = [
        ("ttft", "TTFT (from send)", "ms", &l.ttft, true),
        (
            "ttft_sched",
            "TTFT (from schedule)",
            "ms",
            &l.ttft_sched,
            false,
        ),
        ("tpot", "TPOT", "ms", &l.tpot, true),
        ("tpot_mlperf", "TPOT (MLPerf)", "ms", &l.tpot_mlperf, false),
        ("itl", "ITL", "ms", &l.itl, true),
        ("e2e", "e2e", "ms", &l.e2e, true),
        ("service", "service", "ms", &l.service, false),
        ("isl", "input length", "tokens", &x.tokens.isl, false),
        ("osl", "output length", "tokens", &x.tokens.osl, false),
    ];
    o.push_str(
        "<div class=\"scroll\"><table class=\"percentiles\"><thead><tr><th>metric</th><th>unit</th><th class=\"num\">count</th>",
    );
    for (_, head, _) in GRID {
        let _ = write!(o, "<th class=\"num\">{head}</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for (key, label, unit, r, core) in rows {
        if !core && r.count == 0 {
            continue;
        }
        let _ = write!(
            o,
            "<tr data-metric=\"{key}\"><th>{label}</th><td>{unit}</td><td class=\"num\" data-q=\"count\" data-value=\"{}\">{}</td>",
            r.count, r.count
        );
        for (q, _, get) in GRID {
            let v = get(r);
            o.push_str(&value_cell("data-q", q, v, &opt(v, "")));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>\n");
}

/// The failures of a slice with up to three messages each.
pub(super) fn error_messages(o: &mut String, x: &Numbers) {
    if x.requests.errors.is_empty() {
        return;
    }
    o.push_str(
        "<table class=\"errors\"><thead><tr><th>failure</th><th class=\"num\">count</th><th>messages</th></tr></thead><tbody>",
    );
    for (key, count) in &x.requests.errors {
        let msgs = x
            .error_messages
            .get(key)
            .map(|m| {
                m.iter()
                    .map(|s| format!("<code>{}</code>", esc(s)))
                    .collect::<Vec<_>>()
                    .join("<br>")
            })
            .unwrap_or_default();
        let _ = write!(
            o,
            "<tr data-error=\"{k}\"><td>{k}</td><td class=\"num\">{count}</td><td>{msgs}</td></tr>",
            k = esc(key)
        );
    }
    o.push_str("</tbody></table>\n");
}

/// Whether any slice has goodput (`--slo` was given).
pub(super) fn any_goodput(s: &Summary) -> bool {
    s.run.goodput.is_some()
        || s.stages.iter().any(|st| {
            st.numbers.goodput.is_some()
                || st.scenarios.iter().any(|sc| sc.numbers.goodput.is_some())
        })
}

/// Goodput per slice: the whole run, each stage, each stage's scenarios.
pub(super) fn goodput(o: &mut String, s: &Summary) {
    if !any_goodput(s) {
        return;
    }
    let bounds = [&s.run]
        .into_iter()
        .chain(s.stages.iter().map(|st| &st.numbers))
        .find_map(|x| x.goodput.as_ref());
    o.push_str("<section id=\"goodput\"><h2>Goodput</h2>");
    if let Some(g) = bounds {
        let b: Vec<String> = [("TTFT", g.ttft_ms), ("TPOT", g.tpot_ms), ("e2e", g.e2e_ms)]
            .iter()
            .filter_map(|(k, v)| v.map(|v| format!("{k} ≤ {} ms", n(v))))
            .collect();
        let _ = write!(
            o,
            "<p>A request is <em>good</em> when it succeeded and met every bound: {}. \
             Attainment is good requests over issued ones (failures count against it).</p>",
            esc(&b.join(", "))
        );
    }
    o.push_str(
        "<div class=\"scroll\"><table class=\"goodput\"><thead><tr><th>stage</th><th>scenario</th><th class=\"num\">good</th>\
         <th class=\"num\">attainment</th><th class=\"num\">good req/s</th><th class=\"num\">good output tok/s</th>\
         <th class=\"num\">missed TTFT</th><th class=\"num\">missed TPOT</th><th class=\"num\">missed e2e</th></tr></thead><tbody>",
    );
    let mut row = |stage: &str, scenario: &str, x: &Numbers| {
        let Some(g) = &x.goodput else { return };
        let _ = write!(
            o,
            "<tr data-stage=\"{}\" data-scenario=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td>{}{}{}\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(stage),
            esc(scenario),
            esc(stage),
            esc(scenario),
            g.good,
            value_cell(
                "data-q",
                "attainment_pct",
                g.attainment_pct,
                &opt(g.attainment_pct, " %")
            ),
            value_cell(
                "data-q",
                "requests_per_s",
                Some(g.requests_per_s),
                &n(g.requests_per_s)
            ),
            value_cell(
                "data-q",
                "output_tokens_per_s",
                Some(g.output_tokens_per_s),
                &n(g.output_tokens_per_s)
            ),
            g.missed_ttft,
            g.missed_tpot,
            g.missed_e2e
        );
    };
    row("whole run", "all", &s.run);
    for st in &s.stages {
        row(&st.name, "all", &st.numbers);
        for sc in &st.scenarios {
            row(&st.name, &sc.name, &sc.numbers);
        }
    }
    o.push_str("</tbody></table></div></section>\n");
}

/// Every tool's definitions side by side; the preset's column marked.
pub(super) fn definitions(o: &mut String, s: &Summary) {
    let Some(d) = &s.definitions else { return };
    let _ = write!(
        o,
        "<section id=\"definitions\"><h2>Every tool's definitions</h2>\
         <p>The run's headline metrics computed the way each tool defines them; the headline numbers use \
         <strong>{}</strong> (<code>--metrics-preset</code>). Each cell says how it was computed.</p>\
         <div class=\"scroll\"><table class=\"definitions\"><thead><tr><th>metric</th>",
        esc(&d.preset)
    );
    for t in &d.tools {
        let preset = *t == d.preset;
        let _ = write!(
            o,
            "<th class=\"num{}\" data-tool=\"{}\">{}{}</th>",
            if preset { " preset" } else { "" },
            esc(t),
            esc(t),
            if preset { " ★" } else { "" }
        );
    }
    o.push_str("</tr></thead><tbody>");
    for r in &d.rows {
        let _ = write!(
            o,
            "<tr data-metric=\"{}\"><th>{}</th>",
            esc(&r.metric),
            esc(&r.label)
        );
        for (i, t) in d.tools.iter().enumerate() {
            let v = r.values.get(i).copied().flatten();
            let how = r.how.get(i).map(String::as_str).unwrap_or("");
            let raw = v
                .map(|v| format!(" data-value=\"{v}\""))
                .unwrap_or_default();
            let _ = write!(
                o,
                "<td class=\"num{}\" data-tool=\"{}\"{raw}>{}<small>{}</small></td>",
                if *t == d.preset { " preset" } else { "" },
                esc(t),
                opt(v, ""),
                esc(how)
            );
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div></section>\n");
}
