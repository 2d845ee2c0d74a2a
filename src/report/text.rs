//! `report.txt`, and what the terminal shows at the end of a run: the same
//! numbers as summary.json laid out for a person, with the metric definitions
//! and a plain verdict on whether the generator limited the run. It reads
//! only the `Summary`, so it cannot show a number summary.json lacks; the
//! text is cleared of control characters, since some of it is the server's.

use serde_json::Value;
use std::fmt::Write;

use super::definitions_text;
use super::fmt::{Whole, num};
use super::summary::shard::MergedSummary;
use super::summary::{EndpointSummary, INSECURE_LINE, Load, Numbers, Scenario, Summary};
use crate::metrics::errors::ErrorClass;
use crate::metrics::series::Rollup;
use crate::protocol::Finish;
use crate::protocol::errors::{one_line, printable};

/// Report values: four digits, whole numbers bare.
fn n(v: f64) -> String {
    num(v, 4, Whole::Bare)
}

/// One shard's place in its run: `shard 2 of 3 (SLURM_PROCID) · run
/// 3f2a9c01… · started 0.21 ms after --start-at 2026-12-02T11:00:00Z ·
/// clock ±1.2 ms`.
fn shard_line(sh: &super::summary::shard::ShardSummary) -> String {
    let mut line = format!("shard {} of {} ({})", sh.index, sh.count, sh.source);
    let id: String = sh.run_id.chars().take(8).collect();
    let _ = write!(line, " · run {id}…");
    match (&sh.start_at, sh.start_late_ns) {
        (Some(at), Some(late)) => {
            let _ = write!(
                line,
                " · started {} ms after --start-at {at}",
                n(late as f64 / 1e6)
            );
        }
        (Some(at), None) => {
            let _ = write!(line, " · interrupted before --start-at {at}");
        }
        _ => line.push_str(" · started when launched (no --start-at)"),
    }
    match sh.clock_error_ns {
        Some(e) => {
            let _ = write!(line, " · clock ±{} ms", n(e as f64 / 1e6));
        }
        None if !sh.clock_synced => line.push_str(" · clock not synchronised"),
        None => {}
    }
    printable(&line)
}

/// Renders the report: report.txt is `body` then `tail`.
pub(crate) fn render(s: &Summary) -> String {
    let (body, tail) = render_parts(s);
    body + &tail
}

/// The report in two parts: the run's numbers (`body`), and the long
/// reference that is the same on every run (`tail`: how each tool counts,
/// the definitions), which the terminal shows only with `--verbose`.
pub(crate) fn render_parts(s: &Summary) -> (String, String) {
    let mut o = String::new();
    // The target holds a model id the server may have named: one line.
    let _ = writeln!(o, "llmload {} — {}", s.version, one_line(&s.target, 500));
    let _ = writeln!(o, "status: {}", status(s));
    if let Some(m) = &s.merged {
        let _ = writeln!(o, "{}", merged(m));
    }
    if let Some(sh) = &s.shard {
        let _ = writeln!(o, "{}", shard_line(sh));
    }
    if s.accuracy.as_ref().is_some_and(|a| a["phase"] == "acc") {
        let _ = writeln!(o, "phase: accuracy only (no performance phase ran)");
    }
    for st in &s.stages {
        let _ = writeln!(o, "load: {} ({})", load(st.load.as_ref()), st.name);
    }
    for note in &s.notes {
        if note == INSECURE_LINE {
            let _ = writeln!(o, "WARNING: {note}");
        } else {
            let _ = writeln!(o, "note: {note}");
        }
    }
    if let Some(skipped) = s.dataset["skipped"].as_u64()
        && skipped > 0
    {
        let _ = writeln!(
            o,
            "dataset: {} invalid entries skipped, e.g. {}",
            skipped, s.dataset["skip_examples"][0]
        );
    }
    let w = &s.warmup;
    if w.issued > 0 {
        let _ = writeln!(
            o,
            "warmup: {} issued, {} completed, {} failed (excluded below)",
            w.issued, w.completed, w.failed
        );
    }
    o.push('\n');
    if let Some(h) = &s.headline {
        definitions_text::headline(&mut o, h);
    }
    block(&mut o, &s.run);
    // Without keep-alive, connecting is what the run measures: right here.
    if !s.connections.keep_alive && s.connections.any() {
        connections(&mut o, s);
    }
    if s.scenarios.len() > 1 {
        o.push('\n');
        scenario_table(&mut o, &s.scenarios);
        definitions_text::scenario_goodput(&mut o, &s.scenarios);
    }
    if s.endpoints.len() > 1 {
        o.push('\n');
        endpoint_table(&mut o, &s.endpoints);
    }
    if s.stages.len() > 1 {
        for st in &s.stages {
            let _ = writeln!(o, "\n== stage {} ({}) ==", st.name, load(st.load.as_ref()));
            block(&mut o, &st.numbers);
            if st.scenarios.len() > 1 {
                o.push('\n');
                scenario_table(&mut o, &st.scenarios);
                definitions_text::scenario_goodput(&mut o, &st.scenarios);
            }
        }
    }
    thresholds(&mut o, s);
    if let Some(a) = &s.accuracy {
        accuracy(&mut o, a);
    }
    if s.connections.keep_alive && s.connections.any() {
        connections(&mut o, s);
    }
    if let Some(m) = &s.server_metrics {
        server_metrics(&mut o, m);
    }
    generator(&mut o, s);
    if s.events.dropped > 0 || s.events.error.is_some() {
        let _ = writeln!(
            o,
            "  WARNING: events.jsonl lost {} line(s){}",
            s.events.dropped,
            s.events
                .error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
    }
    let mut tail = String::new();
    if let Some(d) = &s.definitions {
        definitions_text::table(&mut tail, d);
    }
    tail.push_str(DEFINITIONS);
    // Server-supplied strings (model ids, error messages) must not drive
    // the terminal this is printed on.
    (printable(&o), printable(&tail))
}

/// What a terminal shows last, where the eye lands: the status, the
/// throughput, TTFT, TPOT and e2e at p50 and p99, and the failures.
pub(crate) fn headline(s: &Summary) -> String {
    let mut o = String::new();
    let r = &s.run;
    let _ = writeln!(o, "\n== result ==");
    let _ = writeln!(o, "status      {}", status(s));
    let t = &r.throughput;
    let _ = writeln!(
        o,
        "throughput  {:.2} req/s  {:.1} output tok/s  {:.1} total tok/s",
        t.requests_per_s, t.output_tokens_per_s, t.total_tokens_per_s
    );
    let f = |v: Option<f64>| v.map_or("-".to_string(), n);
    let l = &r.latency_ms;
    let lat: Vec<String> = [("ttft", &l.ttft), ("tpot", &l.tpot), ("e2e", &l.e2e)]
        .iter()
        .map(|(name, h)| format!("{name} {} / {}", f(h.p50), f(h.p99)))
        .collect();
    let _ = writeln!(o, "ms p50/p99  {}", lat.join("  "));
    let q = &r.requests;
    let mut failures = format!("{} of {}", q.failed, q.issued);
    if !q.errors.is_empty() {
        let mut errors: Vec<(&String, &u64)> = q.errors.iter().collect();
        errors.sort_by_key(|(key, _)| ErrorClass::report_order(key));
        let named: Vec<String> = errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(failures, " ({})", named.join(", "));
    }
    let _ = writeln!(o, "failures    {failures}");
    if s.generator.limited_by_generator {
        let _ = writeln!(
            o,
            "WARNING     the load generator limited this run (see generator health)"
        );
    }
    printable(&o)
}

/// The status line's text: that every request failed first, when it did,
/// then whether every request was accounted for and why not.
pub(crate) fn status(s: &Summary) -> String {
    let accounted = if s.complete {
        "complete".to_string()
    } else if s.interrupted {
        format!("INTERRUPTED — {}", s.incomplete_reasons.join("; "))
    } else if s.stopped_early {
        format!("STOPPED EARLY — {}", s.incomplete_reasons.join("; "))
    } else {
        format!("INCOMPLETE — {}", s.incomplete_reasons.join("; "))
    };
    if s.every_request_failed() {
        format!(
            "FAILED: {}; {}",
            s.all_failed_line(),
            if s.complete {
                "every issued request was accounted for".to_string()
            } else {
                accounted
            }
        )
    } else {
        accounted
    }
}

/// How a merged run was put together, and whether its shards' schedules
/// lined up.
pub(crate) fn merged(m: &MergedSummary) -> String {
    let id: String = m.run_id.chars().take(8).collect();
    let ellipsis = if m.run_id.chars().count() > 8 {
        "…"
    } else {
        ""
    };
    let head = format!(
        "merged from {} of {} shards (run {id}{ellipsis})",
        m.merged.len(),
        m.shards
    );
    if !m.aligned {
        return format!(
            "{head}: the shards started when launched: their schedules were not aligned"
        );
    }
    let ms = |ns: u64| num(ns as f64 / 1e6, 3, Whole::Bare);
    let clocks = match m.max_clock_error_ns {
        Some(ns) => format!("clocks ±{} ms", ms(ns)),
        None => "clock error unknown".to_string(),
    };
    format!(
        "{head}: largest start skew {} ms ({clocks})",
        ms(m.start_skew_ns)
    )
}

fn block(o: &mut String, b: &Numbers) {
    let r = &b.requests;
    let _ = writeln!(
        o,
        "requests    issued {}  completed {}  failed {}",
        r.issued, r.completed, r.failed
    );
    if !r.errors.is_empty() {
        let mut errors: Vec<(&String, &u64)> = r.errors.iter().collect();
        errors.sort_by_key(|(key, _)| ErrorClass::report_order(key));
        let list: Vec<String> = errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(o, "errors      {}", list.join(", "));
        for (key, msgs) in &b.error_messages {
            for m in msgs {
                let _ = writeln!(o, "            {key}: {m}");
            }
        }
    }
    let _ = writeln!(o, "window      {:.3} s", b.window_s);
    let t = &b.throughput;
    let _ = writeln!(
        o,
        "throughput  {:.2} req/s  {:.1} output tok/s  {:.1} input tok/s  {:.1} total tok/s",
        t.requests_per_s, t.output_tokens_per_s, t.input_tokens_per_s, t.total_tokens_per_s
    );
    if let Some(g) = &b.goodput {
        definitions_text::goodput_line(o, "goodput", g);
    }
    let k = &b.tokens;
    let _ = writeln!(
        o,
        "tokens      output {} (from {})  input {} (from {})",
        k.output_total, k.output_source, k.input_total, k.input_source
    );
    if k.output_truncated > 0 {
        let _ = writeln!(
            o,
            "            {} output text(s) cut short at the kept-text cap (output_truncated)",
            k.output_truncated
        );
    }
    if k.output_untokenized > 0 {
        let _ = writeln!(
            o,
            "            {} output(s) not tokenized (tokenizer behind, or text cut): counted by their events (unknown when not streamed)",
            k.output_untokenized
        );
    }
    let finishes: Vec<String> = Finish::ALL
        .iter()
        .filter(|f| **f != Finish::None)
        .filter_map(|f| {
            let n = k.finish_reasons.get(f.name()).copied().unwrap_or(0);
            (n > 0).then(|| format!("{} {n}", f.name()))
        })
        .collect();
    if !finishes.is_empty() {
        let _ = writeln!(o, "finish      {}", finishes.join(", "));
    }
    let _ = writeln!(
        o,
        "\n{:<18}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "latency (ms)", "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    let l = &b.latency_ms;
    for (name, h) in [
        ("e2e", &l.e2e),
        ("service", &l.service),
        ("ttft", &l.ttft),
        ("ttft from sched", &l.ttft_sched),
        ("tpot", &l.tpot),
        ("itl", &l.itl),
    ] {
        row(o, name, h);
    }
    if l.tpot_mlperf.count > 0 {
        row(o, "tpot (mlperf)", &l.tpot_mlperf);
    }
    if let Some(w) = l.tpot_token_weighted {
        let _ = writeln!(
            o,
            "tpot above is request-weighted (vLLM); token-weighted (guidellm): {} ms",
            n(w)
        );
    }
    let _ = writeln!(
        o,
        "\n{:<18}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "length (tokens)", "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    row(o, "input (isl)", &k.isl);
    row(o, "output (osl)", &k.osl);
}

/// Connections opened, resumed and failed, connects/s, and the connect and
/// handshake time percentiles.
fn connections(o: &mut String, s: &Summary) {
    let c = &s.connections;
    let _ = writeln!(
        o,
        "\nconnections opened {}  resumed {}  failed {}  {:.2} connects/s{}",
        c.opened,
        c.resumed,
        c.failed,
        c.connects_per_s,
        if c.keep_alive {
            ""
        } else {
            "  (one request per connection: --keep-alive false)"
        }
    );
    let _ = writeln!(
        o,
        "{:<18}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "connect (ms)", "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    row(o, "tcp connect", &c.tcp_connect_ms);
    if let Some(h) = &c.tls_handshake_ms {
        row(o, "tls handshake", h);
    }
}

/// What the endpoint said about itself: one line per kept series. A
/// counter's mean and max are rates per second.
fn server_metrics(o: &mut String, m: &super::summary::server::ServerMetricsSummary) {
    let _ = writeln!(
        o,
        "\nserver metrics: {} at {}, every {}s: {} scrapes, {} failed",
        m.server,
        one_line(&m.url, 200),
        n(m.interval_s),
        m.scrapes,
        m.failures
    );
    if let Some(e) = &m.error {
        let _ = writeln!(o, "  first failure: {}", one_line(e, 300));
    }
    if m.series.is_empty() {
        return;
    }
    let _ = writeln!(o, "{:<24}{:<48}{:>12}{:>12}", "key", "name", "mean", "max");
    let opt = |v: Option<f64>| v.map_or("-".to_string(), n);
    for x in &m.series {
        let key = match x.kind.as_str() {
            "counter" => format!("{} (/s)", x.key),
            _ => x.key.clone(),
        };
        let _ = writeln!(
            o,
            "{:<24}{:<48}{:>12}{:>12}",
            key,
            one_line(&x.name, 100),
            opt(x.mean),
            opt(x.max)
        );
    }
}

fn scenario_table(o: &mut String, scenarios: &[Scenario]) {
    let _ = writeln!(
        o,
        "{:<16}{:>9}{:>9}{:>9}{:>10}{:>10}{:>10}{:>11}{:>11}",
        "scenario",
        "issued",
        "done",
        "failed",
        "req/s",
        "e2e p50",
        "e2e p99",
        "ttft p50",
        "ttft p95"
    );
    let ms = |v: Option<f64>| v.map_or("-".to_string(), n);
    for sc in scenarios {
        let b = &sc.numbers;
        let _ = writeln!(
            o,
            "{:<16}{:>9}{:>9}{:>9}{:>10.2}{:>10}{:>10}{:>11}{:>11}",
            sc.name,
            b.requests.issued,
            b.requests.completed,
            b.requests.failed,
            b.throughput.requests_per_s,
            ms(b.latency_ms.e2e.p50),
            ms(b.latency_ms.e2e.p99),
            ms(b.latency_ms.ttft.p50),
            ms(b.latency_ms.ttft.p95),
        );
    }
}

/// One line per endpoint of a run spread over several: its counts, the
/// errors it had, and its latency.
fn endpoint_table(o: &mut String, endpoints: &[EndpointSummary]) {
    let _ = writeln!(
        o,
        "{:<32}{:>9}{:>9}{:>9}{:>10}{:>10}{:>11}{:>11}",
        "endpoint", "issued", "done", "failed", "e2e p50", "e2e p99", "ttft p50", "ttft p99"
    );
    let ms = |v: Option<f64>| v.map_or("-".to_string(), n);
    for e in endpoints {
        let _ = writeln!(
            o,
            "{:<32}{:>9}{:>9}{:>9}{:>10}{:>10}{:>11}{:>11}",
            one_line(&e.url, 200),
            e.issued,
            e.completed,
            e.failed,
            ms(e.e2e_ms.p50),
            ms(e.e2e_ms.p99),
            ms(e.ttft_ms.p50),
            ms(e.ttft_ms.p99),
        );
        if !e.errors.is_empty() {
            let list: Vec<String> = e.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(o, "  errors  {}", list.join(", "));
        }
    }
}

fn thresholds(o: &mut String, s: &Summary) {
    if s.stages.iter().all(|st| st.thresholds.is_empty()) {
        return;
    }
    let _ = writeln!(o, "\nthresholds");
    for st in &s.stages {
        for t in &st.thresholds {
            let value = t.value.map_or("no data".to_string(), n);
            let op = if t.name == "min_rps" { "≥" } else { "≤" };
            let _ = writeln!(
                o,
                "  {:<4} stage {:<12} {:<12} {op} {:<10} measured {:<10}",
                if t.pass { "PASS" } else { "FAIL" },
                st.name,
                t.name,
                n(t.limit),
                value
            );
        }
    }
    if let Some(why) = &s.aborted_on_threshold {
        let _ = writeln!(o, "  stopped early: {why}");
    }
}

/// The accuracy phase: one line per dataset with its score and what
/// became of its requests.
fn accuracy(o: &mut String, a: &Value) {
    let _ = writeln!(
        o,
        "\naccuracy (one request at a time, rows in order; a failed, cut or unanswered request scores as wrong):"
    );
    for d in a["datasets"].as_array().into_iter().flatten() {
        let u = |k: &str| d[k].as_u64().unwrap_or(0);
        let score = match (&d["rouge"], d["score"].as_f64()) {
            (Value::Object(r), _) => format!(
                "rouge1 {} rouge2 {} rougeL {} rougeLsum {}",
                num(r["rouge1"].as_f64().unwrap_or(0.0), 2, Whole::Bare),
                num(r["rouge2"].as_f64().unwrap_or(0.0), 2, Whole::Bare),
                num(r["rougeL"].as_f64().unwrap_or(0.0), 2, Whole::Bare),
                num(r["rougeLsum"].as_f64().unwrap_or(0.0), 2, Whole::Bare),
            ),
            (_, Some(x)) => format!(
                "{:.2} % ({} of {} right)",
                x * 100.0,
                u("correct"),
                u("issued")
            ),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            o,
            "  {:<16} {:<12} {:<13} {score}",
            one_line(d["name"].as_str().unwrap_or("?"), 60),
            d["scorer"].as_str().unwrap_or("?"),
            d["extractor"].as_str().unwrap_or("?"),
        );
        let mut detail = format!(
            "      {} rows × {} = {} issued, {} answered, {} failed, {} cut at the kept-text cap",
            u("rows"),
            u("repeats"),
            u("issued"),
            u("scored"),
            u("failed"),
            u("truncated"),
        );
        if u("missing") > 0 {
            let _ = write!(detail, ", {} never answered", u("missing"));
        }
        let _ = write!(detail, "; {:.1} s", d["duration_s"].as_f64().unwrap_or(0.0));
        if d["complete"] == Value::Bool(false) {
            detail.push_str("; INCOMPLETE");
        }
        let _ = writeln!(o, "{detail}");
    }
    if let Some(avg) = a["average_accuracy"].as_f64()
        && a["datasets"].as_array().is_some_and(|d| d.len() > 1)
    {
        let _ = writeln!(o, "  average accuracy: {:.2} %", avg * 100.0);
    }
}

fn row(o: &mut String, name: &str, h: &Rollup) {
    let _ = write!(o, "{name:<18}{:>8}", h.count);
    for v in [h.min, h.mean, h.p50, h.p90, h.p95, h.p99, h.p999, h.max] {
        match v {
            Some(v) => {
                let _ = write!(o, "{:>10}", n(v));
            }
            None => {
                let _ = write!(o, "{:>10}", "-");
            }
        }
    }
    o.push('\n');
}

fn generator(o: &mut String, s: &Summary) {
    let g = &s.generator;
    let l = &g.send_lateness_us;
    let f = |v: Option<f64>| v.map_or("-".to_string(), n);
    let _ = writeln!(o, "\ngenerator health");
    let _ = writeln!(
        o,
        "  send lateness (us)  p50 {}  p99 {}  max {}",
        f(l.p50),
        f(l.p99),
        f(l.max)
    );
    let _ = writeln!(
        o,
        "  ring full {}  waited for connection {}  held back {}  completion ring full {}  stale-connection retries {}",
        g.ring_full,
        g.waited_for_connection,
        g.held_back,
        g.completion_ring_full,
        g.stale_connection_retries
    );
    let _ = writeln!(
        o,
        "  workers {}  busiest worker {:.0}% busy  connections opened {}  fd limit {}  first request {:.1} ms after start",
        g.workers,
        g.worker_busy_max * 100.0,
        g.connections_opened,
        g.fd_limit,
        g.startup_ms
    );
    let rss = g
        .worker_max_rss_kib
        .iter()
        .max()
        .map_or("-".to_string(), |kib| {
            format!("{:.1} MiB", *kib as f64 / 1024.0)
        });
    let _ = writeln!(
        o,
        "  largest worker peak memory {rss}  most in flight {}  corrupt records {}",
        g.max_inflight, g.corrupt_records
    );
    if let Some(io) = &g.io {
        let sqpoll = if io.sqpoll { " with SQPOLL" } else { "" };
        let _ = writeln!(o, "  io {}{sqpoll} ({})", io.backend.name(), io.reason);
    }
    match s.events.mode.as_str() {
        "errors" => {
            let _ = writeln!(
                o,
                "  events.jsonl: failed requests only (--events errors), {} line(s)",
                s.events.written
            );
        }
        "none" => {
            let _ = writeln!(o, "  events.jsonl: not written (--events none)");
        }
        _ => {}
    }
    if g.limits.is_empty() {
        let _ = writeln!(
            o,
            "  ok: the generator kept up; the numbers above are the endpoint's"
        );
    } else {
        let _ = writeln!(
            o,
            "  WARNING: the load generator, not the endpoint, limited this run: {}",
            g.limits.join("; ")
        );
    }
}

fn load(l: Option<&Load>) -> String {
    let open = |kind: &str, from: f64, to: f64| {
        if from == to {
            format!("{kind} arrivals at {from} req/s, open loop")
        } else {
            format!("{kind} arrivals ramping {from} → {to} req/s, open loop")
        }
    };
    match l {
        Some(Load::Concurrency { concurrency }) => {
            format!("concurrency {concurrency}, closed loop")
        }
        Some(Load::Offline) => "offline, every request due at start".to_string(),
        Some(Load::Poisson { rate_from, rate_to }) => open("poisson", *rate_from, *rate_to),
        Some(Load::Uniform { rate_from, rate_to }) => open("uniform", *rate_from, *rate_to),
        None => "unknown".to_string(),
    }
}

const DEFINITIONS: &str = "
definitions
  e2e      t_end − t_sched: includes any wait in the generator or server queue (coordinated-omission corrected)
  service  t_end − t_send
  ttft     first token − t_send; the first token is the first SSE event with non-empty output text
  tpot     (last token − first token) / (output tokens − 1), per request with ≥ 2 output tokens
  tpot (mlperf)  MLPerf's: (t_end − first token) / tokenizer tokens after the first event's text, streams only
  itl      each gap between consecutive text-bearing events
  connect  per connection, warm-up ones included: tcp from connect start to connected, tls from connected to handshake done
  tokens   output: the endpoint's usage, else --tokenizer on the text, else text-bearing events;
           input: token ids given, else --tokenizer on the prompt (a message list through the model's
           chat template, as MLPerf counts it), else the endpoint's usage
";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::report::fixture;

    #[test]
    fn a_merged_run_says_how_its_shards_started() {
        let mut m = MergedSummary {
            run_id: "3f2a9c01deadbeef".into(),
            shards: 3,
            merged: vec![1, 2, 3],
            aligned: true,
            start_skew_ns: 420_000,
            max_clock_error_ns: Some(1_200_000),
            ..MergedSummary::default()
        };
        assert_eq!(
            super::merged(&m),
            "merged from 3 of 3 shards (run 3f2a9c01…): largest start skew 0.42 ms (clocks ±1.20 ms)"
        );
        m.max_clock_error_ns = None;
        assert!(super::merged(&m).ends_with("(clock error unknown)"));
        m.aligned = false;
        m.merged = vec![1, 3];
        assert_eq!(
            super::merged(&m),
            "merged from 2 of 3 shards (run 3f2a9c01…): the shards started when launched: their schedules were not aligned"
        );
    }

    fn with_connections(keep_alive: bool) -> Summary {
        let mut s = fixture::summary();
        s.connections = fixture::read(json!({
            "tool": "llmload", "stages": [],
            "connections": {"opened": 400, "resumed": 398, "failed": 1, "connects_per_s": 40.0,
                            "keep_alive": keep_alive,
                            "tcp_connect_ms": fixture::hist(400, 0.2),
                            "tls_handshake_ms": fixture::hist(400, 1.0)}
        }))
        .connections;
        s
    }

    #[test]
    fn a_shard_says_its_place_start_and_clock_near_the_top() {
        use crate::report::summary::shard::ShardSummary;
        let mut s = fixture::summary();
        assert!(!render(&s).contains("shard "));
        s.shard = Some(ShardSummary {
            index: 2,
            count: 3,
            source: "SLURM_PROCID".into(),
            run_id: "3f2a9c0123456789abcdef0123456789".into(),
            start_at: Some("2026-12-02T11:00:00Z".into()),
            start_late_ns: Some(210_000),
            clock_error_ns: Some(1_200_000),
            clock_synced: true,
            ..ShardSummary::default()
        });
        let text = render(&s);
        assert_eq!(
            text.lines().nth(2),
            Some(
                "shard 2 of 3 (SLURM_PROCID) · run 3f2a9c01… · started 0.210 ms after --start-at 2026-12-02T11:00:00Z · clock ±1.200 ms"
            )
        );
        s.shard = Some(ShardSummary {
            index: 1,
            count: 2,
            source: "flag".into(),
            ..ShardSummary::default()
        });
        let line = render(&s).lines().nth(2).unwrap().to_string();
        assert!(
            line.contains("when launched") && line.contains("not synchronised"),
            "{line}"
        );
    }

    #[test]
    fn several_endpoints_get_a_table_with_their_errors() {
        let mut s = fixture::summary();
        s.endpoints = fixture::read(json!({
            "tool": "llmload", "stages": [],
            "endpoints": [{"url": "http://a:1", "issued": 10, "completed": 10, "failed": 0,
                           "errors": {}, "ttft_ms": fixture::hist(10, 5.0),
                           "e2e_ms": fixture::hist(10, 40.0)}]
        }))
        .endpoints;
        assert!(!render(&s).contains("http://a:1"));
        let mut dead = s.endpoints[0].clone();
        dead.url = "http://b:2".into();
        dead.completed = 0;
        dead.failed = 4;
        dead.errors = [("connect_refused".to_string(), 4)].into_iter().collect();
        s.endpoints.push(dead);
        let text = render(&s);
        let table = &text[text.find("endpoint  ").expect("a table")..];
        let lines: Vec<&str> = table.lines().take(4).collect();
        assert!(
            lines[1].starts_with("http://a:1") && lines[1].contains(" 10 "),
            "{text}"
        );
        assert!(lines[2].starts_with("http://b:2"), "{text}");
        assert_eq!(lines[3].trim(), "errors  connect_refused 4", "{text}");
    }

    #[test]
    fn connections_come_first_without_keep_alive() {
        let text = render(&with_connections(false));
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("no {needle:?} in\n{text}"))
        };
        assert!(text.contains(
            "connections opened 400  resumed 398  failed 1  40.00 connects/s  (one request per connection: --keep-alive false)"
        ));
        assert!(at("connections opened") < at("generator health"));
        assert!(at("connections opened") < at("thresholds"));
        let row: Vec<&str> = text
            .lines()
            .find(|l| l.starts_with("tls handshake"))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(row[2..6], ["400", "0.500", "1.100", "1"]);
        // With keep-alive the section comes later, before generator health.
        let text = render(&with_connections(true));
        let thresholds = text.find("\nthresholds").unwrap();
        let conns = text.find("connections opened").unwrap();
        assert!(thresholds < conns && conns < text.find("generator health").unwrap());
        assert!(!text.contains("--keep-alive false"));
    }

    #[test]
    fn insecure_runs_say_so_in_a_warning_line() {
        let mut s = fixture::summary();
        s.notes.insert(0, INSECURE_LINE.to_string());
        let text = render(&s);
        assert!(
            text.lines()
                .any(|l| l.starts_with("WARNING: TLS verification OFF (--insecure)")),
            "{text}"
        );
        // A document without connections shows no such section.
        assert!(!text.contains("\nconnections opened"), "{text}");
    }
}
