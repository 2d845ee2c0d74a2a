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
mod tests;
