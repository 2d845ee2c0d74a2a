//! The page's run-wide sections that are text and tables: identity,
//! status, headline numbers, thresholds, accuracy, generator health and
//! the resolved configuration. Each reads the `Summary` only and writes
//! nothing for a block the summary lacks.

use std::fmt::Write;

use serde_json::Value;

use super::{esc, kv_table, n, opt, tables};
use crate::report::summary::{INSECURE_LINE, Load, Summary};

/// A stage's load in words.
pub(super) fn load(l: Option<&Load>) -> String {
    let open = |kind: &str, from: f64, to: f64| {
        if from == to {
            format!("{kind} arrivals at {from} req/s")
        } else {
            format!("{kind} arrivals ramping {from} → {to} req/s")
        }
    };
    match l {
        Some(Load::Concurrency { concurrency }) => format!("concurrency {concurrency}"),
        Some(Load::Offline) => "offline, every request due at start".into(),
        Some(Load::Poisson { rate_from, rate_to }) => open("poisson", *rate_from, *rate_to),
        Some(Load::Uniform { rate_from, rate_to }) => open("uniform", *rate_from, *rate_to),
        None => "unknown".into(),
    }
}

/// The run's length on the timeline (warm-up included), else its window.
pub(super) fn run_length_s(s: &Summary) -> f64 {
    s.timeline
        .as_ref()
        .and_then(|t| {
            let last = t.series.first()?.points.last()?;
            Some(last.t_s + t.interval_s)
        })
        .unwrap_or(s.run.window_s)
}

/// A duration in words: `42.5 s`, `12 min 5 s`, `1 h 2 min`.
pub(super) fn duration(secs: f64) -> String {
    if secs < 120.0 {
        return format!("{} s", n(secs));
    }
    let whole = secs.round() as u64;
    if whole < 3600 {
        format!("{} min {} s", whole / 60, whole % 60)
    } else {
        format!("{} h {} min", whole / 3600, whole % 3600 / 60)
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(super) fn identity(o: &mut String, s: &Summary) {
    let _ = write!(
        o,
        "<section id=\"identity\"><h1>llmload report <span class=\"muted\">— {}</span></h1>",
        esc(&s.target)
    );
    let mut rows = vec![
        ("tool", esc(&format!("{} {}", s.tool, s.version))),
        ("target", esc(&s.target)),
    ];
    if let Some(m) = str_of(&s.config, "model") {
        rows.push(("model", esc(m)));
    }
    if let Some(a) = str_of(&s.config, "api") {
        rows.push(("API", esc(a)));
    }
    rows.push(("started", esc(&s.started_at)));
    rows.push((
        "duration",
        esc(&format!(
            "{} (measured window {})",
            duration(run_length_s(s)),
            duration(s.run.window_s)
        )),
    ));
    for st in &s.stages {
        rows.push((
            "stage",
            esc(&format!("{}: {}", st.name, load(st.load.as_ref()))),
        ));
    }
    if s.generator.workers > 0 {
        rows.push(("workers", s.generator.workers.to_string()));
    }
    kv_table(o, "identity", &rows);
    if let Some(h) = &s.info {
        let mut rows = Vec::new();
        let mut add = |k: &'static str, v: Option<String>| {
            if let Some(v) = v {
                rows.push((k, esc(&v)));
            }
        };
        add("os", h.os.clone());
        add("kernel", h.kernel.clone());
        add("machine", h.machine.clone());
        add("cpu", h.cpu_model.clone());
        add(
            "cpus",
            h.cpus_online.map(|c| match h.cpus_available {
                Some(a) if a != c => format!("{c} online, {a} available to the run"),
                _ => format!("{c} online"),
            }),
        );
        add(
            "memory",
            h.memory_total_bytes
                .map(|b| format!("{} GiB", n(b as f64 / (1u64 << 30) as f64))),
        );
        add("NUMA nodes", h.numa_nodes.map(|v| v.to_string()));
        add(
            "ephemeral ports",
            h.ephemeral_ports
                .as_ref()
                .map(|p| format!("{}–{}", p.low, p.high)),
        );
        if !rows.is_empty() {
            o.push_str("<details class=\"host\"><summary>host</summary>");
            kv_table(o, "host", &rows);
            o.push_str("</details>");
        }
    }
    nav(o, s);
    o.push_str("</section>\n");
}

/// Links to the sections and slices present.
fn nav(o: &mut String, s: &Summary) {
    o.push_str(
        "<nav class=\"toc\"><a href=\"#status\">status</a><a href=\"#headline\">headline</a>",
    );
    if s.stages.len() > 1 {
        o.push_str("<a href=\"#stages\">stages</a>");
    }
    for (i, st) in s.stages.iter().enumerate() {
        let _ = write!(o, "<a href=\"#slice-{i}-all\">{}</a>", esc(&st.name));
    }
    let optional = [
        (super::tables::any_goodput(s), "goodput"),
        (s.definitions.is_some(), "definitions"),
        (s.server_metrics.is_some(), "server-metrics"),
        (
            s.stages.iter().any(|st| !st.thresholds.is_empty()),
            "thresholds",
        ),
        (s.accuracy.is_some(), "accuracy"),
        (true, "generator"),
        (true, "config"),
    ];
    for (present, id) in optional {
        if present {
            let _ = write!(o, "<a href=\"#{id}\">{}</a>", id.replace('-', " "));
        }
    }
    o.push_str("</nav>");
}

pub(super) fn status(o: &mut String, s: &Summary) {
    o.push_str("<section id=\"status\"><h2>Status</h2>");
    if s.every_request_failed() {
        let _ = write!(
            o,
            "<div class=\"banner bad\" data-status=\"all-failed\"><strong>Failed</strong> — {}: see the errors below.</div>",
            esc(&s.all_failed_line())
        );
    }
    if s.complete && s.every_request_failed() {
        o.push_str(
            "<div class=\"banner\" data-status=\"complete\"><strong>Accounted for</strong> — every issued request was accounted for.</div>",
        );
    } else if s.complete {
        o.push_str(
            "<div class=\"banner ok\" data-status=\"complete\"><strong>Complete</strong> — every issued request was accounted for.</div>",
        );
    } else {
        let what = if s.interrupted {
            "INTERRUPTED"
        } else if s.stopped_early {
            "STOPPED EARLY"
        } else {
            "INCOMPLETE"
        };
        let _ = write!(
            o,
            "<div class=\"banner bad\" data-status=\"incomplete\"><strong>{what}</strong> — the numbers cover part of the run.<ul>"
        );
        for r in &s.incomplete_reasons {
            let _ = write!(o, "<li>{}</li>", esc(r));
        }
        o.push_str("</ul></div>");
    }
    let thresholds = s.stages.iter().any(|st| !st.thresholds.is_empty());
    if !s.thresholds_passed {
        o.push_str(
            "<div class=\"banner bad\" data-status=\"thresholds-failed\"><strong>Thresholds FAILED</strong>",
        );
        if let Some(why) = &s.aborted_on_threshold {
            let _ = write!(o, " — {}", esc(why));
        }
        o.push_str(" (<a href=\"#thresholds\">details</a>)</div>");
    } else if thresholds {
        o.push_str("<div class=\"banner ok\" data-status=\"thresholds-passed\"><strong>Thresholds passed</strong></div>");
    }
    if s.generator.limited_by_generator {
        o.push_str(
            "<div class=\"banner warn\" data-status=\"generator-limited\"><strong>The load generator limited this run</strong> — \
             the numbers describe llmload as much as the endpoint (<a href=\"#generator\">why</a>).</div>",
        );
    }
    if s.accuracy.as_ref().is_some_and(|a| a["phase"] == "acc") {
        o.push_str("<p>Accuracy only: no performance phase ran.</p>");
    }
    let mut notes = String::new();
    for note in &s.notes {
        if note == INSECURE_LINE {
            let _ = write!(o, "<div class=\"banner warn\">{}</div>", esc(note));
        } else {
            let _ = write!(notes, "<li>{}</li>", esc(note));
        }
    }
    if let Some(skipped) = s.dataset["skipped"].as_u64()
        && skipped > 0
    {
        let _ = write!(
            notes,
            "<li>dataset: {skipped} invalid entries skipped, e.g. {}</li>",
            esc(&s.dataset["skip_examples"][0].to_string())
        );
    }
    let w = &s.warmup;
    if w.issued > 0 {
        let _ = write!(
            notes,
            "<li>warm-up: {} issued, {} completed, {} failed (not in the numbers)</li>",
            w.issued, w.completed, w.failed
        );
    }
    if s.events.dropped > 0 {
        let _ = write!(
            notes,
            "<li>events.jsonl: {} record(s) dropped</li>",
            s.events.dropped
        );
    }
    if !notes.is_empty() {
        let _ = write!(o, "<ul class=\"notes\">{notes}</ul>");
    }
    o.push_str("</section>\n");
}

/// The headline keys the browser test reads, with the summary's raw
/// value (`{}`: the digits summary.json has) and how a person reads it.
fn headline_rows(s: &Summary) -> Vec<(&'static str, &'static str, Option<String>, String)> {
    let r = &s.run;
    let l = &r.latency_ms;
    let ms = |key, label, v: Option<f64>| (key, label, v.map(|v| v.to_string()), opt(v, " ms"));
    let rate = |key, label, v: f64| (key, label, Some(v.to_string()), n(v));
    let count = |key, label, v: u64| (key, label, Some(v.to_string()), v.to_string());
    vec![
        count(
            "requests_completed",
            "requests completed",
            r.requests.completed,
        ),
        count("requests_failed", "requests failed", r.requests.failed),
        rate("requests_per_s", "requests/s", r.throughput.requests_per_s),
        rate(
            "output_tokens_per_s",
            "output tokens/s",
            r.throughput.output_tokens_per_s,
        ),
        ms("ttft_p50_ms", "TTFT p50", l.ttft.p50),
        ms("ttft_p99_ms", "TTFT p99", l.ttft.p99),
        ms("e2e_p50_ms", "e2e p50", l.e2e.p50),
        ms("e2e_p99_ms", "e2e p99", l.e2e.p99),
    ]
}

pub(super) fn headline(o: &mut String, s: &Summary) {
    o.push_str("<section id=\"headline\"><h2>Headline</h2><div class=\"scroll\"><table id=\"headline-table\"><thead><tr>");
    let rows = headline_rows(s);
    for (_, label, _, _) in &rows {
        let _ = write!(o, "<th class=\"num\">{label}</th>");
    }
    o.push_str("</tr></thead><tbody><tr>");
    for (key, _, raw, shown) in &rows {
        match raw {
            Some(raw) => {
                let _ = write!(
                    o,
                    "<td class=\"num big\" data-key=\"{key}\" data-value=\"{raw}\">{shown}</td>"
                );
            }
            None => {
                let _ = write!(o, "<td class=\"num big\" data-key=\"{key}\">–</td>");
            }
        }
    }
    o.push_str("</tr></tbody></table></div>");
    let r = &s.run;
    let mut more = vec![
        ("issued", r.requests.issued.to_string()),
        (
            "error rate",
            r.requests
                .error_rate()
                .map(|e| format!("{} %", n(e * 100.0)))
                .unwrap_or_else(|| "–".into()),
        ),
        ("input tokens/s", n(r.throughput.input_tokens_per_s)),
        ("TPOT p50", opt(r.latency_ms.tpot.p50, " ms")),
        ("ITL p50", opt(r.latency_ms.itl.p50, " ms")),
        ("window", super::esc(&duration(r.window_s))),
    ];
    if !r.requests.errors.is_empty() {
        let errs: Vec<String> = r
            .requests
            .errors
            .iter()
            .map(|(k, v)| format!("{} {v}", esc(k)))
            .collect();
        more.push(("failures by class", errs.join(", ")));
    }
    if let Some(g) = &r.goodput {
        more.push((
            "goodput",
            format!(
                "{} req/s, {} % attainment",
                n(g.requests_per_s),
                opt(g.attainment_pct, "")
            ),
        ));
    }
    kv_table(o, "more", &more);
    o.push_str("<h3>Whole run: percentiles</h3>");
    tables::percentiles(o, &s.run);
    tables::error_messages(o, &s.run);
    o.push_str("</section>\n");
}

pub(super) fn thresholds(o: &mut String, s: &Summary) {
    if s.stages.iter().all(|st| st.thresholds.is_empty()) {
        return;
    }
    o.push_str(
        "<section id=\"thresholds\"><h2>Thresholds</h2><table><thead><tr><th>stage</th><th>threshold</th>\
         <th class=\"num\">limit</th><th class=\"num\">value</th><th>verdict</th></tr></thead><tbody>",
    );
    for st in &s.stages {
        for t in &st.thresholds {
            let (class, word) = if t.pass {
                ("pass", "PASS")
            } else {
                ("fail", "FAIL")
            };
            let _ = write!(
                o,
                "<tr data-threshold=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"{class}\">{word}</td></tr>",
                esc(&t.name),
                esc(&st.name),
                esc(&t.name),
                n(t.limit),
                opt(t.value, ""),
            );
        }
    }
    o.push_str("</tbody></table>");
    if let Some(why) = &s.aborted_on_threshold {
        let _ = write!(o, "<p class=\"fail\">Stopped early: {}</p>", esc(why));
    }
    o.push_str("</section>\n");
}

pub(super) fn accuracy(o: &mut String, s: &Summary) {
    let Some(a) = &s.accuracy else { return };
    o.push_str(
        "<section id=\"accuracy\"><h2>Accuracy</h2>\
         <p class=\"muted\">One request at a time, rows in order; a failed, cut or unanswered request scores as wrong.</p>\
         <div class=\"scroll\"><table><thead><tr><th>dataset</th><th>scorer</th><th>extractor</th><th class=\"num\">score</th>\
         <th class=\"num\">issued</th><th class=\"num\">answered</th><th class=\"num\">correct</th>\
         <th class=\"num\">failed</th><th class=\"num\">cut</th><th class=\"num\">duration</th><th></th></tr></thead><tbody>",
    );
    for d in a["datasets"].as_array().into_iter().flatten() {
        let u = |k: &str| {
            d[k].as_u64()
                .map(|v| v.to_string())
                .unwrap_or_else(|| "–".into())
        };
        let score = match (&d["rouge"], d["score"].as_f64()) {
            (Value::Object(r), _) => ["rouge1", "rouge2", "rougeL", "rougeLsum"]
                .iter()
                .map(|k| format!("{k} {}", n(r[*k].as_f64().unwrap_or(0.0))))
                .collect::<Vec<_>>()
                .join(", "),
            (_, Some(x)) => format!("{:.2} %", x * 100.0),
            _ => "–".into(),
        };
        let raw = d["score"]
            .as_f64()
            .map(|x| format!(" data-value=\"{x}\""))
            .unwrap_or_default();
        let _ = write!(
            o,
            "<tr data-dataset=\"{name}\"><td>{name}</td><td>{}</td><td>{}</td><td class=\"num\"{raw}>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{} s</td><td class=\"fail\">{}</td></tr>",
            esc(str_of(d, "scorer").unwrap_or("?")),
            esc(str_of(d, "extractor").unwrap_or("?")),
            esc(&score),
            u("issued"),
            u("scored"),
            u("correct"),
            u("failed"),
            u("truncated"),
            n(d["duration_s"].as_f64().unwrap_or(0.0)),
            if d["complete"] == Value::Bool(false) {
                "INCOMPLETE"
            } else {
                ""
            },
            name = esc(str_of(d, "name").unwrap_or("?")),
        );
    }
    o.push_str("</tbody></table></div>");
    if let Some(avg) = a["average_accuracy"].as_f64() {
        let _ = write!(
            o,
            "<p>Average accuracy: <strong data-value=\"{avg}\">{:.2} %</strong></p>",
            avg * 100.0
        );
    }
    o.push_str("</section>\n");
}

pub(super) fn generator(o: &mut String, s: &Summary) {
    let g = &s.generator;
    o.push_str("<section id=\"generator\"><h2>Generator health</h2>");
    if g.limited_by_generator || !g.limits.is_empty() {
        o.push_str(
            "<div class=\"banner warn\" data-status=\"generator-limited\"><strong>The generator, not the endpoint, limited this run</strong><ul>",
        );
        for l in &g.limits {
            let _ = write!(o, "<li>{}</li>", esc(l));
        }
        o.push_str("</ul></div>");
    } else {
        o.push_str("<p class=\"pass\">The generator kept up: no limit was reached.</p>");
    }
    let lat = &g.send_lateness_us;
    let rss = g.worker_max_rss_kib.iter().max().copied().unwrap_or(0);
    let mut rows = vec![("workers", g.workers.to_string())];
    if let Some(io) = &g.io {
        let sqpoll = if io.sqpoll { " with SQPOLL" } else { "" };
        rows.push((
            "I/O backend",
            esc(&format!("{}{sqpoll} ({})", io.backend.name(), io.reason)),
        ));
    }
    rows.extend([
        ("most in flight", g.max_inflight.to_string()),
        (
            "send lateness p50 / p99 / max",
            format!(
                "{} / {} / {}",
                opt(lat.p50, " µs"),
                opt(lat.p99, " µs"),
                opt(lat.max, " µs")
            ),
        ),
        (
            "busiest worker",
            format!("{} % of the time", n(g.worker_busy_max * 100.0)),
        ),
        ("issue ring full", g.ring_full.to_string()),
        ("held back (openloop_max_inflight)", g.held_back.to_string()),
        (
            "waited for a connection",
            g.waited_for_connection.to_string(),
        ),
        ("completion ring full", g.completion_ring_full.to_string()),
        ("ITL samples truncated", g.itl_truncated.to_string()),
        ("corrupt records", g.corrupt_records.to_string()),
        ("startup", format!("{} ms", n(g.startup_ms))),
        ("fd limit", g.fd_limit.to_string()),
    ]);
    if rss > 0 {
        rows.push((
            "largest worker RSS",
            format!("{} MiB", n(rss as f64 / 1024.0)),
        ));
    }
    let c = &s.connections;
    if c.any() {
        rows.push((
            "connections",
            format!(
                "{} opened, {} failed, {} resumed TLS, {}/s in the window{}",
                c.opened,
                c.failed,
                c.resumed,
                n(c.connects_per_s),
                if c.keep_alive { "" } else { ", no keep-alive" }
            ),
        ));
        rows.push((
            "TCP connect p50 / p99",
            format!(
                "{} / {}",
                opt(c.tcp_connect_ms.p50, " ms"),
                opt(c.tcp_connect_ms.p99, " ms")
            ),
        ));
        if let Some(t) = &c.tls_handshake_ms {
            rows.push((
                "TLS handshake p50 / p99",
                format!("{} / {}", opt(t.p50, " ms"), opt(t.p99, " ms")),
            ));
        }
    }
    kv_table(o, "generator", &rows);
    o.push_str("</section>\n");
}

pub(super) fn config(o: &mut String, s: &Summary) {
    o.push_str("<section id=\"config\"><h2>Configuration</h2>");
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let _ = write!(
        o,
        "<details class=\"config\"><summary>resolved configuration (secrets redacted)</summary><pre>{}</pre></details>",
        esc(&pretty(&s.config))
    );
    if !s.dataset.is_null() {
        let _ = write!(
            o,
            "<details class=\"dataset\"><summary>dataset</summary><pre>{}</pre></details>",
            esc(&pretty(&s.dataset))
        );
    }
    if let Some(b) = &s.builtin_endpoint {
        let _ = write!(
            o,
            "<details class=\"builtin\"><summary>built-in endpoint</summary><pre>{}</pre></details>",
            esc(&pretty(b))
        );
    }
    o.push_str("</section>\n");
}
