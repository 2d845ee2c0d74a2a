//! `metrics.prom`: the summary in the Prometheus text exposition format
//! 0.0.4, for node_exporter's textfile collector or a Pushgateway. Like
//! `report.csv` it is rendered from the `Summary`, over the same
//! slices: labels `stage` and `scenario`, with `"all"` marking an aggregate
//! (`stage="all",scenario="all"` is the whole run). Values are in base
//! units — seconds, ratios in 0..1, `_total` counters — so the summary's
//! milliseconds and microseconds are converted here. A stage or scenario
//! literally named `all`, or named twice, gets `#<position>` appended so
//! that every series stays distinct.
//!
//! Latency distributions are `summary` families: the HDR percentiles as
//! `quantile` 0.5 … 0.999, the exact maximum as `quantile="1"`, and `_sum`
//! (mean × count) and `_count`. A run is a finished measurement, not a live
//! process, so these are the run's totals, not a sliding window; a null in
//! the summary (an empty histogram) is left out rather than written as NaN.

use std::fmt::Write;

use super::slices::{LATENCIES, Slice, Stat, slices};
use super::summary::Summary;
use crate::metrics::series::Rollup;

/// The aggregate marker in `stage` and `scenario` labels.
const ALL: &str = "all";

/// A label name and its unescaped value.
type Label = (&'static str, String);

/// Renders `metrics.prom`.
pub(crate) fn render(summary: &Summary) -> String {
    let slices = slices(summary, ALL);
    let mut fams = Families::default();
    run_families(&mut fams, summary);
    for s in &slices {
        slice_families(&mut fams, s);
    }
    threshold_families(&mut fams, summary, &slices);
    endpoint_families(&mut fams, summary);
    accuracy_families(&mut fams, summary);
    fams.render()
}

/// The accuracy phase, per dataset (label `dataset`): the score (0–1; the
/// ROUGE measures 0–100 apart) and its requests by outcome.
fn accuracy_families(f: &mut Families, summary: &Summary) {
    let Some(datasets) = summary
        .accuracy
        .as_ref()
        .and_then(|a| a["datasets"].as_array())
    else {
        return;
    };
    for d in datasets {
        let name = d["name"].as_str().unwrap_or("").to_string();
        let scorer = d["scorer"].as_str().unwrap_or("").to_string();
        f.get(
            "llmload_accuracy_score",
            Kind::Gauge,
            "Accuracy per dataset, 0 to 1: right answers over requests issued (ROUGE-1 for rouge).",
        )
        .push(
            "",
            &[("dataset", name.clone()), ("scorer", scorer)],
            d["score"].as_f64().map(|x| x.to_string()),
        );
        let fam = f.get(
            "llmload_accuracy_requests_total",
            Kind::Counter,
            "Accuracy requests per dataset, by outcome (issued, answered, correct, failed, truncated, missing).",
        );
        for (outcome, key) in [
            ("issued", "issued"),
            ("answered", "scored"),
            ("correct", "correct"),
            ("failed", "failed"),
            ("truncated", "truncated"),
            ("missing", "missing"),
        ] {
            fam.push(
                "",
                &[("dataset", name.clone()), ("outcome", outcome.into())],
                d[key].as_u64().map(|n| n.to_string()),
            );
        }
        if let Some(r) = d["rouge"].as_object() {
            let fam = f.get(
                "llmload_accuracy_rouge",
                Kind::Gauge,
                "ROUGE per dataset, 0 to 100 (mean F-measure, as rouge_score computes it).",
            );
            for (k, v) in r {
                fam.push(
                    "",
                    &[("dataset", name.clone()), ("measure", k.clone())],
                    v.as_f64().map(|x| x.to_string()),
                );
            }
        }
    }
}

/// Each endpoint's share of a run spread over several (label `endpoint`,
/// the URL as echoed; a URL listed twice gets `#<position>`): requests by
/// outcome, failures by key, and TTFT and e2e latency. Absent for a single
/// endpoint, whose numbers are the run's.
fn endpoint_families(f: &mut Families, summary: &Summary) {
    if summary.endpoints.len() < 2 {
        return;
    }
    for (k, e) in summary.endpoints.iter().enumerate() {
        let repeated = summary.endpoints[..k].iter().any(|o| o.url == e.url);
        let name = if repeated {
            format!("{}#{}", e.url, k + 1)
        } else {
            e.url.clone()
        };
        let ep = || ("endpoint", name.clone());
        let fam = f.get(
            "llmload_endpoint_requests_total",
            Kind::Counter,
            "Measured requests per endpoint, by outcome (completed or failed).",
        );
        for (outcome, n) in [("completed", e.completed), ("failed", e.failed)] {
            fam.push(
                "",
                &[ep(), ("outcome", outcome.into())],
                Some(n.to_string()),
            );
        }
        let fam = f.get(
            "llmload_endpoint_errors_total",
            Kind::Counter,
            "Failed requests per endpoint, by error key.",
        );
        for (key, n) in &e.errors {
            fam.push("", &[ep(), ("error", key.clone())], Some(n.to_string()));
        }
        let at = |q: Option<Label>| {
            let mut l = vec![ep()];
            l.extend(q);
            l
        };
        summary_family(
            f,
            (
                "llmload_endpoint_ttft_seconds",
                "Time to first token per endpoint: first token minus send.",
            ),
            &e.ttft_ms,
            1e-3,
            &at,
        );
        summary_family(
            f,
            (
                "llmload_endpoint_e2e_seconds",
                "End-to-end latency per endpoint: end minus scheduled time.",
            ),
            &e.e2e_ms,
            1e-3,
            &at,
        );
    }
}

fn run_families(f: &mut Families, summary: &Summary) {
    let cfg = &summary.config;
    let text = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    f.get(
        "llmload_info",
        Kind::Gauge,
        "The run: llmload version, wire format and model.",
    )
    .push(
        "",
        &[
            ("version", summary.version.clone()),
            ("api", text(&cfg["api"])),
            ("model", text(&cfg["model"])),
        ],
        Some("1".into()),
    );
    let g = &summary.generator;
    let flags = [
        (
            "llmload_run_complete",
            summary.complete,
            "1 when every issued request was accounted for, no worker was lost and the run was not interrupted.",
        ),
        (
            "llmload_run_interrupted",
            summary.interrupted,
            "1 when the run was stopped by SIGINT, SIGTERM or SIGHUP.",
        ),
        (
            "llmload_generator_limited",
            g.limited_by_generator,
            "1 when the load generator, not the endpoint, limited the run.",
        ),
        (
            "llmload_thresholds_passed",
            summary.thresholds_passed,
            "1 when every stage met its thresholds.",
        ),
    ];
    for (name, v, help) in flags {
        f.get(name, Kind::Gauge, help)
            .push("", &[], Some(bool01(v)));
    }
    for (name, n, help) in [
        (
            "llmload_generator_ring_full_total",
            g.ring_full,
            "Times the scheduler found a worker's issue ring full.",
        ),
        (
            "llmload_generator_waited_for_connection_total",
            g.waited_for_connection,
            "Requests that waited for a free connection.",
        ),
        (
            "llmload_generator_corrupt_records_total",
            g.corrupt_records,
            "Completion records that could not be read; each stopped its worker.",
        ),
    ] {
        f.get(name, Kind::Counter, help)
            .push("", &[], Some(n.to_string()));
    }
    f.get(
        "llmload_generator_max_inflight",
        Kind::Gauge,
        "Most conversations in flight at once.",
    )
    .push("", &[], Some(g.max_inflight.to_string()));
    connection_families(f, summary);
    let rss = f.get(
        "llmload_generator_worker_max_rss_bytes",
        Kind::Gauge,
        "Each worker process's peak resident set.",
    );
    for (k, kib) in g.worker_max_rss_kib.iter().enumerate() {
        rss.push(
            "",
            &[("worker", k.to_string())],
            Some((kib * 1024).to_string()),
        );
    }
}

/// The run's connections: counts, connects per second, and the connect and
/// handshake time distributions (whole run, no stage or scenario labels:
/// connections are shared across them); whether verification was off.
fn connection_families(f: &mut Families, summary: &Summary) {
    let c = &summary.connections;
    for (name, n, help) in [
        (
            "llmload_connections_opened_total",
            c.opened,
            "Connections ready for requests (TCP connected and, for https, the TLS handshake done).",
        ),
        (
            "llmload_connections_resumed_total",
            c.resumed,
            "TLS handshakes that resumed a session.",
        ),
        (
            "llmload_connections_failed_total",
            c.failed,
            "Connection attempts that ended without a usable connection (connect or TLS handshake failed).",
        ),
    ] {
        f.get(name, Kind::Counter, help)
            .push("", &[], Some(n.to_string()));
    }
    f.get(
        "llmload_connects_per_second",
        Kind::Gauge,
        "Connections opened during the measured window, per second of it.",
    )
    .push("", &[], Some(float(c.connects_per_s)));
    // No labels but the quantile's.
    let at = |q: Option<Label>| q.into_iter().collect();
    summary_family(
        f,
        (
            "llmload_tcp_connect_seconds",
            "TCP connect time per connection: connect start to connected.",
        ),
        &c.tcp_connect_ms,
        1e-3,
        &at,
    );
    if let Some(h) = &c.tls_handshake_ms {
        summary_family(
            f,
            (
                "llmload_tls_handshake_seconds",
                "TLS handshake time per connection: TCP connected to handshake done.",
            ),
            h,
            1e-3,
            &at,
        );
    }
    if let Some(tls) = &summary.tls {
        f.get(
            "llmload_tls_insecure",
            Kind::Gauge,
            "1 when some endpoint's TLS certificate was not verified (--insecure).",
        )
        .push("", &[], Some(bool01(tls.insecure)));
    }
}

fn slice_families(f: &mut Families, s: &Slice) {
    let stage = s.stage.clone().unwrap_or_else(|| ALL.into());
    let scenario = s.scenario.clone().unwrap_or_else(|| ALL.into());
    let at = |extra: Option<Label>| {
        let mut l = vec![("stage", stage.clone()), ("scenario", scenario.clone())];
        l.extend(extra);
        l
    };
    let b = s.numbers;
    let req = &b.requests;

    let requests = f.get(
        "llmload_requests_total",
        Kind::Counter,
        "Measured requests by outcome (warmup excluded).",
    );
    for (outcome, n) in [("completed", req.completed), ("failed", req.failed)] {
        requests.push(
            "",
            &at(Some(("outcome", outcome.into()))),
            Some(n.to_string()),
        );
    }
    let fam = f.get(
        "llmload_errors_total",
        Kind::Counter,
        "Failed requests by error class (connect_refused, reset, http_503, ...).",
    );
    for (class, n) in &req.errors {
        fam.push("", &at(Some(("class", class.clone()))), Some(n.to_string()));
    }
    f.get(
        "llmload_error_ratio",
        Kind::Gauge,
        "Failed over issued measured requests.",
    )
    .push("", &at(None), req.error_rate().map(float));

    let tp = &b.throughput;
    for (name, v, help) in [
        (
            "llmload_window_seconds",
            b.window_s,
            "Measured window: from the end of warmup to the last measured completion.",
        ),
        (
            "llmload_requests_per_second",
            tp.requests_per_s,
            "Completed requests per second over the measured window.",
        ),
        (
            "llmload_output_tokens_per_second",
            tp.output_tokens_per_s,
            "Output tokens per second over the measured window.",
        ),
        (
            "llmload_input_tokens_per_second",
            tp.input_tokens_per_s,
            "Input tokens per second over the measured window.",
        ),
    ] {
        f.get(name, Kind::Gauge, help)
            .push("", &at(None), Some(float(v)));
    }
    if let Some(g) = &b.goodput {
        for (name, v, help) in [
            (
                "llmload_goodput_requests_per_second",
                Some(g.requests_per_s),
                "Requests that succeeded and met every --slo bound, per second of the measured window.",
            ),
            (
                "llmload_goodput_output_tokens_per_second",
                Some(g.output_tokens_per_s),
                "Output tokens of the requests that met every --slo bound, per second of the measured window.",
            ),
            (
                "llmload_slo_attainment_ratio",
                g.attainment_pct.map(|p| p / 100.0),
                "Requests that succeeded and met every --slo bound over issued requests.",
            ),
        ] {
            f.get(name, Kind::Gauge, help)
                .push("", &at(None), v.map(float));
        }
    }
    for (name, n, help) in [
        (
            "llmload_output_tokens_total",
            b.tokens.output_total,
            "Output tokens of completed requests.",
        ),
        (
            "llmload_input_tokens_total",
            b.tokens.input_total,
            "Input tokens of completed requests.",
        ),
    ] {
        f.get(name, Kind::Counter, help)
            .push("", &at(None), Some(n.to_string()));
    }

    for ((_, latency), family) in LATENCIES.iter().zip(LATENCY_FAMILIES) {
        summary_family(f, family, latency(&b.latency_ms), 1e-3, &at);
    }
    summary_family(
        f,
        (
            "llmload_send_lateness_seconds",
            "How late each request left the generator after it was due.",
        ),
        s.lateness,
        1e-6,
        &at,
    );
}

/// Names and help of the `latency_ms` histograms, in `LATENCIES` order.
const LATENCY_FAMILIES: [(&str, &str); 5] = [
    (
        "llmload_e2e_latency_seconds",
        "End-to-end latency, t_end - t_sched (coordinated-omission corrected).",
    ),
    (
        "llmload_service_latency_seconds",
        "Service latency, t_end - t_send.",
    ),
    (
        "llmload_ttft_seconds",
        "Time to first token: the first SSE event with output text - t_send.",
    ),
    (
        "llmload_tpot_seconds",
        "Time per output token after the first, per request with at least 2 output tokens.",
    ),
    (
        "llmload_itl_seconds",
        "Inter-token latency: each gap between consecutive text-bearing events.",
    ),
];

/// Quantile labels and the histogram fields they come from.
const QUANTILES: [(&str, Stat); 6] = [
    ("0.5", |h| h.p50),
    ("0.9", |h| h.p90),
    ("0.95", |h| h.p95),
    ("0.99", |h| h.p99),
    ("0.999", |h| h.p999),
    ("1", |h| h.max),
];

fn summary_family(
    f: &mut Families,
    (name, help): (&'static str, &'static str),
    h: &Rollup,
    to_seconds: f64,
    at: &dyn Fn(Option<Label>) -> Vec<Label>,
) {
    let fam = f.get(name, Kind::Summary, help);
    for (q, stat) in QUANTILES {
        let v = stat(h).map(|v| float(v * to_seconds));
        fam.push("", &at(Some(("quantile", q.into()))), v);
    }
    let sum = match (h.count, h.mean) {
        (0, _) => Some(0.0),
        (n, Some(mean)) => Some(mean * n as f64 * to_seconds),
        (_, None) => None,
    };
    // A summary's _sum and _count describe the same observations: write both or neither.
    if let Some(sum) = sum {
        fam.push("_sum", &at(None), Some(float(sum)));
        fam.push("_count", &at(None), Some(h.count.to_string()));
    }
}

fn threshold_families(f: &mut Families, summary: &Summary, slices: &[Slice]) {
    // Stage labels come from the slice walk so they match the other series.
    let stage_labels = slices
        .iter()
        .filter(|s| s.stage.is_some() && s.scenario.is_none());
    for (stage, s) in summary.stages.iter().zip(stage_labels) {
        let fam = f.get(
            "llmload_threshold_passed",
            Kind::Gauge,
            "1 when the stage met the threshold.",
        );
        let label = s.stage.clone().unwrap_or_default();
        let mut seen = std::collections::BTreeSet::new();
        for t in &stage.thresholds {
            // Two thresholds of one name would be one series twice; keep the first.
            if seen.insert(t.name.as_str()) {
                fam.push(
                    "",
                    &[("stage", label.clone()), ("threshold", t.name.clone())],
                    Some(bool01(t.pass)),
                );
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
    Summary,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Summary => "summary",
        }
    }
}

/// Families in first-use order; the format needs each family's samples
/// together after its HELP and TYPE, while the slices visit every family
/// once each, so samples are gathered here and written at the end.
#[derive(Default)]
struct Families(Vec<Family>);

struct Family {
    name: &'static str,
    kind: Kind,
    help: &'static str,
    /// Rendered `name{labels} value` lines.
    samples: Vec<String>,
}

impl Families {
    fn get(&mut self, name: &'static str, kind: Kind, help: &'static str) -> &mut Family {
        match self.0.iter().position(|f| f.name == name) {
            Some(i) => &mut self.0[i],
            None => {
                self.0.push(Family {
                    name,
                    kind,
                    help,
                    samples: Vec::new(),
                });
                self.0.last_mut().expect("just pushed")
            }
        }
    }

    fn render(&self) -> String {
        let mut o = String::new();
        for f in self.0.iter().filter(|f| !f.samples.is_empty()) {
            let _ = writeln!(o, "# HELP {} {}", f.name, escape_help(f.help));
            let _ = writeln!(o, "# TYPE {} {}", f.name, f.kind.name());
            for s in &f.samples {
                o.push_str(s);
                o.push('\n');
            }
        }
        o
    }
}

impl Family {
    /// Adds `name<suffix>{labels} value`; a missing value adds nothing.
    fn push(&mut self, suffix: &str, labels: &[(&str, String)], value: Option<String>) {
        let Some(value) = value else { return };
        let mut line = format!("{}{suffix}", self.name);
        if !labels.is_empty() {
            line.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                let _ = write!(line, "{k}=\"{}\"", escape_label(v));
            }
            line.push('}');
        }
        line.push(' ');
        line.push_str(&value);
        self.samples.push(line);
    }
}

fn escape_label(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

fn bool01(v: bool) -> String {
    if v { "1" } else { "0" }.into()
}

/// A float in the format's syntax (which Go's ParseFloat reads). Rounded to
/// 15 significant digits first so that a unit conversion does not print the
/// binary noise of the division (0.1234 ms → 0.0001234 s, not
/// 0.00012339999999999999).
fn float(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let rounded: f64 = format!("{v:.14e}").parse().unwrap_or(v);
    rounded.to_string()
}

/// The naive reader of the format that the tests hold output to; it lives
/// with the integration tests, which read real runs' files with it too.
#[cfg(test)]
#[path = "../../tests/prom_check.rs"]
mod check;

#[cfg(test)]
mod tests {
    use super::check::{Sample, parse};
    use super::*;
    use crate::report::fixture;
    use crate::report::summary::Threshold;
    use serde_json::json;

    fn find(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && labels.len() == l.len()
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|s| s.2)
    }

    fn rendered(doc: &Summary) -> (String, Vec<Sample>) {
        let text = render(doc);
        let samples = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        (text, samples)
    }

    #[test]
    fn passes_the_format_check_with_values_in_base_units() {
        let (text, s) = rendered(&fixture::summary());
        let v = |name, labels: &[(&str, &str)]| {
            find(&s, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
        };
        let q = |stage, scenario, quantile| {
            [
                ("stage", stage),
                ("scenario", scenario),
                ("quantile", quantile),
            ]
        };
        // p99 of the "high"/"chat" e2e block: 2.5 × 20 ms.
        assert_eq!(
            v("llmload_e2e_latency_seconds", &q("high", "chat", "0.99")),
            0.05
        );
        assert!(text.contains("quantile=\"0.99\"} 0.05\n"), "{text}");
        assert_eq!(v("llmload_ttft_seconds", &q("low", "all", "1")), 0.0032);
        assert_eq!(
            v("llmload_send_lateness_seconds", &q("all", "all", "0.99")),
            0.000125
        );
        let run = [("stage", "all"), ("scenario", "all")];
        assert_eq!(v("llmload_e2e_latency_seconds_count", &run), 280.0);
        assert!((v("llmload_e2e_latency_seconds_sum", &run) - 280.0 * 0.0165).abs() < 1e-9);
        let hs = [("stage", "high"), ("scenario", "all")];
        assert_eq!(v("llmload_error_ratio", &hs), 0.1);
        assert_eq!(v("llmload_requests_per_second", &hs), 18.0);
        let with = |k, val| [("stage", "high"), ("scenario", "all"), (k, val)];
        assert_eq!(
            v("llmload_requests_total", &with("outcome", "failed")),
            20.0
        );
        assert_eq!(
            v("llmload_requests_total", &with("outcome", "completed")),
            180.0
        );
        assert_eq!(v("llmload_errors_total", &with("class", "http_503")), 15.0);
        assert_eq!(
            v(
                "llmload_errors_total",
                &[
                    ("stage", "all"),
                    ("scenario", "summarize"),
                    ("class", "reset")
                ]
            ),
            5.0
        );
        assert_eq!(v("llmload_run_complete", &[]), 1.0);
        assert_eq!(v("llmload_generator_limited", &[]), 0.0);
        assert_eq!(v("llmload_thresholds_passed", &[]), 0.0);
        assert_eq!(
            v(
                "llmload_threshold_passed",
                &[("stage", "high"), ("threshold", "p99_ms")]
            ),
            0.0
        );
        assert_eq!(v("llmload_generator_waited_for_connection_total", &[]), 3.0);
        // Label values are escaped and read back intact.
        assert_eq!(
            v(
                "llmload_info",
                &[
                    ("version", "0.1.0"),
                    ("api", "openai-chat"),
                    ("model", "m\"1\\x\ny")
                ]
            ),
            1.0
        );
        // Empty histograms: no quantile samples, a zero count and sum.
        let empty = [("stage", "low"), ("scenario", "summarize")];
        assert_eq!(
            find(&s, "llmload_ttft_seconds", &q("low", "summarize", "0.5")),
            None
        );
        assert_eq!(v("llmload_ttft_seconds_count", &empty), 0.0);
        assert_eq!(v("llmload_ttft_seconds_sum", &empty), 0.0);
        for (name, _, _) in &s {
            assert!(!name.contains("_ms"), "{name}: not a base unit");
        }
        assert_eq!(
            text.matches("# TYPE llmload_e2e_latency_seconds summary\n")
                .count(),
            1
        );
        assert_eq!(
            text.matches("# TYPE llmload_requests_total counter\n")
                .count(),
            1
        );
    }

    #[test]
    fn connections_are_counters_a_rate_and_summaries_in_seconds() {
        let mut doc = fixture::summary();
        doc.connections = crate::report::fixture::read(json!({
            "tool": "llmload", "stages": [],
            "connections": {"opened": 40, "resumed": 39, "failed": 2, "connects_per_s": 12.5,
                            "tcp_connect_ms": fixture::hist(40, 0.2),
                            "tls_handshake_ms": fixture::hist(40, 1.0)},
            "tls": {"insecure": true, "endpoints": []}
        }))
        .connections;
        doc.tls = Some(crate::report::summary::TlsSummary {
            insecure: true,
            endpoints: Vec::new(),
        });
        let (text, s) = rendered(&doc);
        let v = |name, labels: &[(&str, &str)]| {
            find(&s, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
        };
        assert_eq!(v("llmload_connections_opened_total", &[]), 40.0);
        assert_eq!(v("llmload_connections_resumed_total", &[]), 39.0);
        assert_eq!(v("llmload_connections_failed_total", &[]), 2.0);
        assert_eq!(v("llmload_connects_per_second", &[]), 12.5);
        assert_eq!(
            v("llmload_tcp_connect_seconds", &[("quantile", "0.5")]),
            0.0002
        );
        assert_eq!(
            v("llmload_tls_handshake_seconds", &[("quantile", "0.99")]),
            0.0025
        );
        assert_eq!(v("llmload_tls_handshake_seconds_count", &[]), 40.0);
        assert_eq!(v("llmload_tls_insecure", &[]), 1.0);
        // Plain http: no handshake family, no insecure gauge.
        let (text, s) = rendered(&fixture::summary());
        assert_eq!(find(&s, "llmload_tls_handshake_seconds_count", &[]), None);
        assert!(!text.contains("llmload_tls_insecure"), "{text}");
        assert_eq!(
            find(&s, "llmload_tcp_connect_seconds_count", &[]),
            Some(0.0)
        );
    }

    #[test]
    fn empty_scenarios_leave_stage_and_run_series() {
        let mut doc = fixture::summary();
        for st in &mut doc.stages {
            st.scenarios.clear();
        }
        doc.scenarios.clear();
        let (_, s) = rendered(&doc);
        let mut pairs: Vec<(String, String)> = s
            .iter()
            .filter(|(n, _, _)| n == "llmload_requests_per_second")
            .map(|(_, l, _)| (l[0].1.clone(), l[1].1.clone()))
            .collect();
        pairs.sort();
        let want = [("all", "all"), ("high", "all"), ("low", "all")];
        assert_eq!(pairs, want.map(|(a, b)| (a.to_string(), b.to_string())));
    }

    #[test]
    fn endpoints_get_families_of_their_own_when_there_are_several() {
        use crate::report::summary::EndpointSummary;
        let ep = |url: &str, completed, failed| EndpointSummary {
            url: url.into(),
            issued: completed + failed,
            completed,
            failed,
            errors: [("connect_refused".to_string(), failed)]
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .collect(),
            ttft_ms: Rollup {
                count: completed,
                mean: Some(10.0),
                p50: Some(10.0),
                max: Some(12.0),
                ..Rollup::default()
            },
            ..EndpointSummary::default()
        };
        let mut doc = fixture::summary();
        doc.endpoints = vec![ep("http://a", 5, 0)];
        let (text, _) = rendered(&doc);
        assert!(!text.contains("llmload_endpoint_"), "{text}");
        // A URL listed twice stays two series.
        doc.endpoints = vec![
            ep("http://a", 5, 0),
            ep("http://b", 0, 3),
            ep("http://a", 1, 0),
        ];
        let (text, s) = rendered(&doc);
        let req = |e, o| {
            find(
                &s,
                "llmload_endpoint_requests_total",
                &[("endpoint", e), ("outcome", o)],
            )
        };
        assert_eq!(req("http://a", "completed"), Some(5.0), "{text}");
        assert_eq!(req("http://a#3", "completed"), Some(1.0), "{text}");
        assert_eq!(req("http://b", "failed"), Some(3.0), "{text}");
        let refused = [("endpoint", "http://b"), ("error", "connect_refused")];
        assert_eq!(
            find(&s, "llmload_endpoint_errors_total", &refused),
            Some(3.0)
        );
        let p50 = [("endpoint", "http://a"), ("quantile", "0.5")];
        assert_eq!(find(&s, "llmload_endpoint_ttft_seconds", &p50), Some(0.01));
        let count = [("endpoint", "http://a")];
        assert_eq!(
            find(&s, "llmload_endpoint_ttft_seconds_count", &count),
            Some(5.0)
        );
    }

    #[test]
    fn colliding_names_stay_distinct_series() {
        let mut doc = fixture::summary();
        doc.stages[0].name = "all".into();
        doc.stages[1].name = "all".into();
        doc.stages[1].scenarios[0].name = "all".into();
        let p99 = |pass| Threshold {
            name: "p99_ms".into(),
            pass,
            ..Threshold::default()
        };
        doc.stages[1].thresholds = vec![p99(true), p99(false)];
        let (text, s) = rendered(&doc);
        assert!(text.contains("stage=\"all#1\""), "{text}");
        assert!(
            text.contains("stage=\"all#2\",scenario=\"all#1\""),
            "{text}"
        );
        // The first of two thresholds of one name is kept.
        let passed = [("stage", "all#2"), ("threshold", "p99_ms")];
        assert_eq!(find(&s, "llmload_threshold_passed", &passed), Some(1.0));
    }

    #[test]
    fn a_bare_document_renders_valid_text() {
        let doc = fixture::read(json!({"tool": "llmload", "stages": [{"name": "main"}]}));
        let (text, s) = rendered(&doc);
        let main = [("stage", "main"), ("scenario", "all")];
        assert_eq!(find(&s, "llmload_requests_per_second", &main), Some(0.0));
        // Nothing issued: no error ratio, and empty histograms count zero.
        assert_eq!(find(&s, "llmload_error_ratio", &main), None);
        assert_eq!(
            find(&s, "llmload_e2e_latency_seconds_count", &main),
            Some(0.0)
        );
        assert!(!text.contains("quantile"), "{text}");
    }

    #[test]
    fn the_checker_rejects_what_it_should() {
        let ok = "# HELP a x\n# TYPE a gauge\na{b=\"1\"} 2\n";
        assert!(parse(ok).is_ok());
        for bad in [
            "a 1\n",
            "# HELP a x\n# TYPE a gauge\na{b=\"1\"} 2\na{b=\"1\"} 3\n",
            "# HELP a x\n# TYPE a gauge\n# HELP c x\n# TYPE c gauge\nc 1\na 2\n",
            "# HELP 1a x\n# TYPE 1a gauge\n1a 2\n",
            "# HELP a x\n# TYPE a gauge\na{b=\"x\\q\"} 2\n",
            "# HELP a x\n# TYPE a gauge\na 2",
            "# HELP a x\n# TYPE a summary\na_sum{quantile=\"0.5\"} 2\n",
        ] {
            assert!(parse(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn float_spelling() {
        assert_eq!(float(0.1234 * 1e-3), "0.0001234");
        assert_eq!(float(281.664419 * 1e-3), "0.281664419");
        assert_eq!(float(2.0), "2");
        assert_eq!(float(f64::NAN), "NaN");
    }
}
