//! `report.txt`, and what the terminal shows at the end of a run: the same
//! numbers as summary.json laid out for a person, with the metric definitions
//! and a plain verdict on whether the generator limited the run.

use std::fmt::Write;

use super::RunInfo;
use crate::metrics::block::Block;
use crate::metrics::run::{RunResult, ScenarioResult};
use crate::metrics::series::{Series, Summary};
use crate::plan::{ArrivalKind, Load};
use crate::protocol::Finish;

/// Renders the report.
pub fn render(run: &RunResult, info: &RunInfo) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "llmload {} — {}", env!("CARGO_PKG_VERSION"), info.target);
    let status = if run.complete {
        "complete".to_string()
    } else if run.interrupted {
        format!("INTERRUPTED — {}", run.incomplete_reasons.join("; "))
    } else {
        format!("INCOMPLETE — {}", run.incomplete_reasons.join("; "))
    };
    let _ = writeln!(o, "status: {status}");
    for s in &run.stages {
        let _ = writeln!(o, "load: {} ({})", load(&s.load), s.name);
    }
    for n in &info.notes {
        let _ = writeln!(o, "note: {n}");
    }
    if let Some(skipped) = info.dataset["skipped"].as_u64()
        && skipped > 0
    {
        let _ = writeln!(
            o,
            "dataset: {} invalid entries skipped, e.g. {}",
            skipped, info.dataset["skip_examples"][0]
        );
    }
    if run.warmup.issued > 0 {
        let _ = writeln!(
            o,
            "warmup: {} issued, {} completed, {} failed (excluded below)",
            run.warmup.issued, run.warmup.completed, run.warmup.failed
        );
    }
    o.push('\n');
    block(&mut o, &run.total, run.total_window_ns);
    if run.scenarios.len() > 1 {
        o.push('\n');
        scenario_table(&mut o, &run.scenarios, run.total_window_ns);
    }
    if run.stages.len() > 1 {
        for s in &run.stages {
            let _ = writeln!(o, "\n== stage {} ({}) ==", s.name, load(&s.load));
            block(&mut o, &s.block, s.window_ns);
            if s.scenarios.len() > 1 {
                o.push('\n');
                scenario_table(&mut o, &s.scenarios, s.window_ns);
            }
        }
    }
    thresholds(&mut o, run);
    generator(&mut o, run, info);
    if info.events.dropped > 0 || info.events.error.is_some() {
        let _ = writeln!(
            o,
            "  WARNING: events.jsonl lost {} line(s){}",
            info.events.dropped,
            info.events
                .error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
    }
    o.push_str(DEFINITIONS);
    o
}

fn block(o: &mut String, b: &Block, window_ns: u64) {
    let secs = window_ns as f64 / 1e9;
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let _ = writeln!(
        o,
        "requests    issued {}  completed {}  failed {}",
        b.issued, b.completed, b.failed
    );
    let errors = b.errors.named();
    if !errors.is_empty() {
        let list: Vec<String> = errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(o, "errors      {}", list.join(", "));
        for (key, msgs) in &b.error_messages {
            for m in msgs {
                let _ = writeln!(o, "            {key}: {m}");
            }
        }
    }
    let _ = writeln!(o, "window      {secs:.3} s");
    let _ = writeln!(
        o,
        "throughput  {:.2} req/s  {:.1} output tok/s  {:.1} input tok/s  {:.1} total tok/s",
        rate(b.completed),
        rate(b.output_tokens),
        rate(b.input_tokens),
        rate(b.output_tokens + b.input_tokens)
    );
    let _ = writeln!(
        o,
        "tokens      output {} (from {})  input {} (from {})",
        b.output_tokens,
        b.output_source(),
        b.input_tokens,
        b.input_source()
    );
    let finishes: Vec<String> = Finish::ALL
        .iter()
        .zip(b.finish)
        .filter(|(f, n)| *n > 0 && **f != Finish::None)
        .map(|(f, n)| format!("{} {n}", f.name()))
        .collect();
    if !finishes.is_empty() {
        let _ = writeln!(o, "finish      {}", finishes.join(", "));
    }
    let _ = writeln!(
        o,
        "\n{:<18}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "latency (ms)", "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    for (name, s) in [
        ("e2e", &b.e2e),
        ("service", &b.service),
        ("ttft", &b.ttft),
        ("ttft from sched", &b.ttft_sched),
        ("tpot", &b.tpot),
        ("itl", &b.itl),
    ] {
        row(o, name, s, 1e6);
    }
    if let Some(w) = b.tpot_token_weighted_ns() {
        let _ = writeln!(
            o,
            "tpot above is request-weighted (vLLM); token-weighted (guidellm): {} ms",
            num(w / 1e6)
        );
    }
    let _ = writeln!(
        o,
        "\n{:<18}{:>8}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "length (tokens)", "count", "min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    row(o, "input (isl)", &b.isl, 1.0);
    row(o, "output (osl)", &b.osl, 1.0);
}

fn scenario_table(o: &mut String, scenarios: &[ScenarioResult], window_ns: u64) {
    let secs = window_ns as f64 / 1e9;
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
    let ms = |s: &Series, q: f64| {
        s.quantile_ns(q)
            .map_or("-".to_string(), |v| num(v as f64 / 1e6))
    };
    for sc in scenarios {
        let b = &sc.block;
        let _ = writeln!(
            o,
            "{:<16}{:>9}{:>9}{:>9}{:>10.2}{:>10}{:>10}{:>11}{:>11}",
            sc.name,
            b.issued,
            b.completed,
            b.failed,
            if secs > 0.0 {
                b.completed as f64 / secs
            } else {
                0.0
            },
            ms(&b.e2e, 0.5),
            ms(&b.e2e, 0.99),
            ms(&b.ttft, 0.5),
            ms(&b.ttft, 0.95),
        );
    }
}

fn thresholds(o: &mut String, run: &RunResult) {
    if run.stages.iter().all(|s| s.thresholds.is_empty()) {
        return;
    }
    let _ = writeln!(o, "\nthresholds");
    for s in &run.stages {
        for t in &s.thresholds {
            let value = t.value.map_or("no data".to_string(), num);
            let op = if t.name == "min_rps" { "≥" } else { "≤" };
            let _ = writeln!(
                o,
                "  {:<4} stage {:<12} {:<12} {op} {:<10} measured {:<10}",
                if t.pass { "PASS" } else { "FAIL" },
                s.name,
                t.name,
                num(t.limit),
                value
            );
        }
    }
    if let Some(why) = &run.aborted_on_threshold {
        let _ = writeln!(o, "  stopped early: {why}");
    }
}

fn row(o: &mut String, name: &str, s: &Series, unit: f64) {
    let Summary {
        count,
        min,
        mean,
        p50,
        p90,
        p95,
        p99,
        p999,
        max,
    } = s.summary(unit);
    let _ = write!(o, "{name:<18}{count:>8}");
    for v in [min, mean, p50, p90, p95, p99, p999, max] {
        match v {
            Some(v) => {
                let _ = write!(o, "{:>10}", num(v));
            }
            None => {
                let _ = write!(o, "{:>10}", "-");
            }
        }
    }
    o.push('\n');
}

/// Three significant digits at most, as the histograms hold.
fn num(v: f64) -> String {
    if v.fract() == 0.0 || v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn generator(o: &mut String, run: &RunResult, info: &RunInfo) {
    let g = &run.generator;
    let l = run.total.send_lateness.summary(1e3);
    let f = |v: Option<f64>| v.map_or("-".to_string(), num);
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
        g.ring_full, g.waited_for_connection, g.held_back, g.completion_ring_full, g.stale_retries
    );
    let _ = writeln!(
        o,
        "  workers {}  busiest worker {:.0}% busy  connections opened {}  fd limit {}  first request {:.1} ms after start",
        g.workers,
        g.worker_busy_max * 100.0,
        g.connections_opened,
        info.fd_limit,
        run.startup_ns as f64 / 1e6
    );
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

fn load(l: &Load) -> String {
    match *l {
        Load::Closed { concurrency } => format!("concurrency {concurrency}, closed loop"),
        Load::Offline => "offline, every request due at start".to_string(),
        Load::Open {
            kind,
            rate_from,
            rate_to,
        } => {
            let kind = match kind {
                ArrivalKind::Uniform => "uniform",
                ArrivalKind::Poisson => "poisson",
            };
            if rate_from == rate_to {
                format!("{kind} arrivals at {rate_from} req/s, open loop")
            } else {
                format!("{kind} arrivals ramping {rate_from} → {rate_to} req/s, open loop")
            }
        }
    }
}

const DEFINITIONS: &str = "
definitions
  e2e      t_end − t_sched: includes any wait in the generator or server queue (coordinated-omission corrected)
  service  t_end − t_send
  ttft     first token − t_send; the first token is the first SSE event with non-empty output text
  tpot     (last token − first token) / (output tokens − 1), per request with ≥ 2 output tokens
  itl      each gap between consecutive text-bearing events
  tokens   output: the endpoint's usage, else --tokenizer on the text, else text-bearing events;
           input: token ids given, else --tokenizer on the prompt, else the endpoint's usage
";
