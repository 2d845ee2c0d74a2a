//! A summary shaped as the integrator's extended document, for the
//! renderers' and compare's tests: two stages of two scenarios each,
//! run-wide scenarios, errors, thresholds, and empty histograms (nulls). It
//! is written as JSON and read like any document, so it leaves fields out
//! the way a hand-written or older summary would.

use serde_json::{Value, json};

use super::summary::Summary;

/// A histogram in ms whose percentiles scale with `base`.
pub(crate) fn hist(count: u64, base: f64) -> Value {
    json!({
        "count": count, "min": base * 0.5, "mean": base * 1.1, "p50": base,
        "p90": base * 1.5, "p95": base * 1.8, "p99": base * 2.5,
        "p999": base * 3.0, "max": base * 3.2,
    })
}

pub(crate) fn empty_hist() -> Value {
    json!({"count": 0, "min": null, "mean": null, "p50": null, "p90": null,
           "p95": null, "p99": null, "p999": null, "max": null})
}

/// One block: `ok` completions, `errors` failures by class, latencies
/// scaled by `ms`; TTFT empty when `ttft` is false.
pub(crate) fn block(name: &str, ok: u64, errors: &[(&str, u64)], ms: f64, ttft: bool) -> Value {
    let failed: u64 = errors.iter().map(|e| e.1).sum();
    let errs: serde_json::Map<String, Value> = errors
        .iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    json!({
        "name": name,
        "requests": {"issued": ok + failed, "completed": ok, "failed": failed, "errors": errs},
        "window_s": 10.0,
        "throughput": {"requests_per_s": ok as f64 / 10.0,
                       "output_tokens_per_s": ok as f64 * 12.8,
                       "input_tokens_per_s": ok as f64 * 2.0},
        "tokens": {"output_total": ok * 128, "input_total": ok * 20,
                   "output_source": "usage", "input_source": "usage"},
        "latency_ms": {
            "e2e": hist(ok, ms * 10.0), "service": hist(ok, ms * 9.0),
            "ttft": if ttft { hist(ok, ms) } else { empty_hist() },
            "tpot": hist(ok, ms * 0.1), "itl": hist(ok * 127, ms * 0.1),
            "tpot_token_weighted": ms * 0.1,
        },
        "send_lateness_us": hist(ok + failed, 50.0),
    })
}

/// Two stages ("low", concurrency 4; "high", a poisson ramp) × two
/// scenarios ("chat", "summarize"), and the run-wide blocks, as a document.
pub(crate) fn document() -> Value {
    let mut low = block("low", 100, &[], 1.0, true);
    low["load"] = json!({"mode": "concurrency", "concurrency": 4});
    low["scenarios"] = json!([
        block("chat", 70, &[], 1.0, true),
        block("summarize", 30, &[], 1.0, false),
    ]);
    low["thresholds"] = json!([{"name": "p99_ms", "limit": 5000.0, "value": 25.0, "pass": true}]);
    let mut high = block("high", 180, &[("http_503", 15), ("reset", 5)], 2.0, true);
    high["load"] = json!({"mode": "poisson", "rate_from": 10.0, "rate_to": 20.0});
    high["scenarios"] = json!([
        block("chat", 120, &[("http_503", 15)], 2.0, true),
        block("summarize", 60, &[("reset", 5)], 2.0, false),
    ]);
    high["thresholds"] = json!([{"name": "p99_ms", "limit": 40.0, "value": 50.0, "pass": false}]);
    let mut doc = block("run", 280, &[("http_503", 15), ("reset", 5)], 1.5, true);
    let obj = doc.as_object_mut().unwrap();
    obj.remove("name");
    let lateness = obj.remove("send_lateness_us").unwrap();
    doc["tool"] = json!("llmload");
    doc["version"] = json!("0.1.0");
    doc["complete"] = json!(true);
    doc["interrupted"] = json!(false);
    doc["config"] = json!({"api": "openai-chat", "model": "m\"1\\x\ny"});
    doc["generator"] = json!({"send_lateness_us": lateness, "ring_full": 0,
                              "waited_for_connection": 3, "limited_by_generator": false});
    doc["stages"] = json!([low, high]);
    doc["scenarios"] = json!([
        block("chat", 190, &[("http_503", 15)], 1.5, true),
        block("summarize", 90, &[("reset", 5)], 1.5, false),
    ]);
    doc["thresholds_passed"] = json!(false);
    doc
}

/// `document()`, read.
pub(crate) fn summary() -> Summary {
    read(document())
}

/// Reads a test document that must be a summary.
pub(crate) fn read(doc: Value) -> Summary {
    Summary::from_value(doc).unwrap_or_else(|e| panic!("not a summary: {e}"))
}
