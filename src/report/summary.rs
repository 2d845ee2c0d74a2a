//! `summary.json`: every number of a run, machine-readable. Field names and
//! units follow DESIGN.md (times in milliseconds as floats, lateness in
//! microseconds, rates per second); `docs/summary.schema.json` is the contract
//! and a test validates real output against it.

use serde_json::{Value, json};

use super::RunInfo;
use crate::clock::format_utc;
use crate::metrics::block::{Block, INPUT_SOURCES, OUTPUT_SOURCES};
use crate::metrics::run::RunResult;
use crate::plan::Load;
use crate::protocol::Finish;

const MS: f64 = 1e6;
const US: f64 = 1e3;

/// The whole summary document.
pub fn build(run: &RunResult, info: &RunInfo) -> Value {
    let g = &run.generator;
    let lateness = run.total.send_lateness.summary(US);
    let mut doc = json!({
        "tool": "llmload",
        "version": env!("CARGO_PKG_VERSION"),
        "complete": run.complete,
        "interrupted": run.interrupted,
        "incomplete_reasons": run.incomplete_reasons,
        "started_at": format_utc(info.started_wall_ns),
        "target": info.target,
        "config": info.config,
        "dataset": info.dataset,
        "requests": requests(&run.total),
        "error_messages": run.total.error_messages,
        "warmup": {
            "issued": run.warmup.issued,
            "completed": run.warmup.completed,
            "failed": run.warmup.failed,
        },
        "window_s": run.total_window_ns as f64 / 1e9,
        "throughput": throughput(&run.total, run.total_window_ns),
        "tokens": tokens(&run.total),
        "latency_ms": latency(&run.total),
        "generator": {
            "send_lateness_us": lateness,
            "ring_full": g.ring_full,
            "held_back": g.held_back,
            "waited_for_connection": g.waited_for_connection,
            "completion_ring_full": g.completion_ring_full,
            "itl_truncated": g.itl_truncated,
            "connections_opened": g.connections_opened,
            "stale_connection_retries": g.stale_retries,
            "workers": g.workers,
            "worker_busy_max": g.worker_busy_max,
            "fd_limit": info.fd_limit,
            "startup_ms": run.startup_ns as f64 / MS,
            "limited_by_generator": !g.limits.is_empty(),
            "limits": g.limits,
        },
        "stages": run.stages.iter().map(|s| {
            let mut v = slice(&s.block, s.window_ns);
            v["name"] = s.name.clone().into();
            v["load"] = load(&s.load);
            v["scenarios"] = s
                .scenarios
                .iter()
                .map(|sc| {
                    let mut b = slice(&sc.block, s.window_ns);
                    b["name"] = sc.name.clone().into();
                    b
                })
                .collect::<Vec<_>>()
                .into();
            v["thresholds"] = serde_json::to_value(&s.thresholds).expect("verdicts serialize");
            v["thresholds_passed"] = s.thresholds.iter().all(|t| t.pass).into();
            v
        }).collect::<Vec<_>>(),
        "scenarios": run.scenarios.iter().map(|sc| {
            let mut b = slice(&sc.block, run.total_window_ns);
            b["name"] = sc.name.clone().into();
            b
        }).collect::<Vec<_>>(),
        "thresholds_passed": run.thresholds_passed,
        "aborted_on_threshold": run.aborted_on_threshold,
        "events": info.events,
        "notes": info.notes,
    });
    if let Some(stats) = &info.builtin_endpoint {
        doc["builtin_endpoint"] = stats.clone();
    }
    doc
}

/// The blocks every slice of a run has (a stage, a scenario).
fn slice(b: &Block, window_ns: u64) -> Value {
    json!({
        "requests": requests(b),
        "error_messages": b.error_messages,
        "window_s": window_ns as f64 / 1e9,
        "throughput": throughput(b, window_ns),
        "tokens": tokens(b),
        "latency_ms": latency(b),
        "send_lateness_us": b.send_lateness.summary(US),
    })
}

fn requests(b: &Block) -> Value {
    let errors: serde_json::Map<String, Value> = b
        .errors
        .named()
        .into_iter()
        .map(|(k, n)| (k, Value::from(n)))
        .collect();
    json!({
        "issued": b.issued,
        "completed": b.completed,
        "failed": b.failed,
        "errors": errors,
    })
}

fn throughput(b: &Block, window_ns: u64) -> Value {
    let secs = window_ns as f64 / 1e9;
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    json!({
        "requests_per_s": rate(b.completed),
        "output_tokens_per_s": rate(b.output_tokens),
        "input_tokens_per_s": rate(b.input_tokens),
        "total_tokens_per_s": rate(b.output_tokens + b.input_tokens),
    })
}

fn tokens(b: &Block) -> Value {
    let by_source = |counts: &[u64; 4], names: &[&str; 4]| -> Value {
        names
            .iter()
            .zip(counts)
            .map(|(k, n)| (k.to_string(), Value::from(*n)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let mean = |n: u64| {
        if b.completed > 0 {
            n as f64 / b.completed as f64
        } else {
            0.0
        }
    };
    json!({
        "output_total": b.output_tokens,
        "input_total": b.input_tokens,
        "output_source": b.output_source(),
        "input_source": b.input_source(),
        "output_source_requests": by_source(&b.output_sources, &OUTPUT_SOURCES),
        "input_source_requests": by_source(&b.input_sources, &INPUT_SOURCES),
        "output_per_request_mean": mean(b.output_tokens),
        "input_per_request_mean": mean(b.input_tokens),
        "isl": b.isl.summary(1.0),
        "osl": b.osl.summary(1.0),
        "text_bytes": b.text_bytes,
        "finish_reasons": Finish::ALL
            .iter()
            .zip(b.finish)
            .filter(|(_, n)| *n > 0)
            .map(|(f, n)| (f.name().to_string(), Value::from(n)))
            .collect::<serde_json::Map<_, _>>(),
    })
}

fn latency(b: &Block) -> Value {
    json!({
        "e2e": b.e2e.summary(MS),
        "service": b.service.summary(MS),
        "ttft": b.ttft.summary(MS),
        "ttft_sched": b.ttft_sched.summary(MS),
        "tpot": b.tpot.summary(MS),
        "tpot_token_weighted": b.tpot_token_weighted_ns().map(|ns| ns / MS),
        "itl": b.itl.summary(MS),
    })
}

fn load(l: &Load) -> Value {
    match *l {
        Load::Closed { concurrency } => json!({"mode": "concurrency", "concurrency": concurrency}),
        Load::Offline => json!({"mode": "offline"}),
        Load::Open {
            kind,
            rate_from,
            rate_to,
        } => json!({"mode": kind, "rate_from": rate_from, "rate_to": rate_to}),
    }
}
