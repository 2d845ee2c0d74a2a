//! `result_summary.json` against the reference run's: the same keys in the
//! same order, with values of the same JSON types.

use serde_json::{Value, json};

use super::*;
use crate::metrics::block::{Block, InputCount, RequestSample};
use crate::metrics::errors::ErrorClass;
use crate::metrics::run::{RunResult, StageResult};

/// The reference run's file (a concurrency run of 400 requests).
const REFERENCE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mlperf/result_summary.json"
));

/// The keys of every object in `v`, in document order, by path, with each
/// leaf's JSON type. Read from the text, since `serde_json::Value` sorts keys.
fn shape(text: &str) -> Vec<(String, &'static str)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v: OrderedValue = serde::Deserialize::deserialize(&mut de).unwrap();
    let mut out = Vec::new();
    walk(&v, String::new(), &mut out);
    out
}

/// A JSON value whose objects keep their key order.
enum OrderedValue {
    Leaf(&'static str),
    Array(Vec<OrderedValue>),
    Object(Vec<(String, OrderedValue)>),
}

impl<'de> serde::Deserialize<'de> for OrderedValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = OrderedValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, _: bool) -> Result<OrderedValue, E> {
                Ok(OrderedValue::Leaf("bool"))
            }
            fn visit_u64<E>(self, _: u64) -> Result<OrderedValue, E> {
                Ok(OrderedValue::Leaf("number"))
            }
            fn visit_i64<E>(self, _: i64) -> Result<OrderedValue, E> {
                Ok(OrderedValue::Leaf("number"))
            }
            fn visit_f64<E>(self, _: f64) -> Result<OrderedValue, E> {
                Ok(OrderedValue::Leaf("number"))
            }
            fn visit_str<E>(self, _: &str) -> Result<OrderedValue, E> {
                Ok(OrderedValue::Leaf("string"))
            }
            fn visit_unit<E>(self) -> Result<OrderedValue, E> {
                Ok(OrderedValue::Leaf("null"))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<OrderedValue, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(OrderedValue::Array(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<OrderedValue, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry()? {
                    v.push((k, x));
                }
                Ok(OrderedValue::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

fn walk(v: &OrderedValue, path: String, out: &mut Vec<(String, &'static str)>) {
    match v {
        OrderedValue::Leaf(t) => out.push((path, t)),
        OrderedValue::Array(items) => {
            out.push((path.clone(), "array"));
            // Arrays are uniform: their first element stands for all.
            if let Some(first) = items.first() {
                walk(first, format!("{path}[]"), out);
            }
        }
        OrderedValue::Object(members) => {
            out.push((path.clone(), "object"));
            for (k, x) in members {
                walk(x, format!("{path}.{k}"), out);
            }
        }
    }
}

/// A measured concurrency run like the reference's: 400 requests, with
/// TTFT, TPOT and lengths, none failed.
fn run() -> RunResult {
    let mut b = Block::default();
    for i in 0..400u64 {
        let t_sched = 1_000_000_000 + i * 20_000_000;
        b.record(
            &RequestSample {
                t_sched,
                t_send: t_sched + 100_000,
                t_first_token: t_sched + 50_000_000 + i * 10_000,
                t_last_token: t_sched + 360_000_000,
                t_end: t_sched + 361_000_000 + i * 5_000,
                status: 200,
                completion_tokens: Some(63),
                input_tokens: Some(44 + (i % 24) as u32),
                input_source: InputCount::Tokenizer,
                streamed: true,
                finish: crate::protocol::Finish::Stop as u8,
                ..RequestSample::default()
            },
            [],
        );
    }
    let load = crate::plan::Load::Closed { concurrency: 16 };
    RunResult {
        stages: vec![StageResult {
            name: "main".into(),
            load,
            block: b.clone(),
            scenarios: Vec::new(),
            window_ns: 9_118_456_115,
            measured: vec![(1_000_000_000, 10_118_456_115)],
            thresholds: Vec::new(),
        }],
        total: b,
        total_window_ns: 9_118_456_115,
        complete: true,
        thresholds_passed: true,
        ..RunResult::default()
    }
}

fn info(load: &crate::plan::Load) -> MlperfInfo {
    MlperfInfo {
        run_config: RunConfig {
            load_pattern: LoadPattern::of(load),
            warmup: WarmupConfig {
                warmup_random_seed: 42,
                ..WarmupConfig::default()
            },
            scheduler_random_seed: 42,
            dataloader_random_seed: 42,
        },
        early_stopping: true,
        legacy_window: matches!(
            load,
            crate::plan::Load::Open {
                kind: crate::plan::ArrivalKind::Poisson,
                ..
            }
        ),
        test_started_at: 0,
        streaming: true,
        tokenizer: true,
        sample_rows: Vec::new(),
        performance: true,
        accuracy_rows: Vec::new(),
    }
}

#[test]
fn keys_order_and_types_match_the_reference_run() {
    let r = run();
    let ours = ResultSummary::build(&r, &info(&r.stages[0].load)).to_json();
    let ours = String::from_utf8(ours).unwrap();
    let (want, got) = (shape(REFERENCE), shape(&ours));
    // git_sha is a string there and null here unless the build sets one.
    let normal = |s: Vec<(String, &'static str)>| -> Vec<(String, &'static str)> {
        s.into_iter()
            .map(|(p, t)| match (p.as_str(), t) {
                (".git_sha", _) => (p, "string|null"),
                // Early-stopping estimates are null below their sample floor.
                (p2, "null" | "number") if p2.contains(".early_stopping_percentiles.") => {
                    (p, "number|null")
                }
                _ => (p, t),
            })
            .collect()
    };
    assert_eq!(normal(got), normal(want));
}

#[test]
fn a_poisson_run_reads_qps_over_loadgen_s_window_and_counts_failures() {
    let mut r = run();
    // One failure, issued last: it completes the window and counts in
    // latency and in completions.
    let fail = RequestSample {
        t_sched: 1_000_000_000 + 400 * 20_000_000,
        t_end: 1_000_000_000 + 400 * 20_000_000 + 900_000_000,
        error: Some(ErrorClass::HttpStatus),
        status: 503,
        ..RequestSample::default()
    };
    r.total.record(&fail, []);
    let poisson = crate::plan::Load::Open {
        kind: crate::plan::ArrivalKind::Poisson,
        rate_from: 50.0,
        rate_to: 50.0,
    };
    let s = ResultSummary::build(&r, &info(&poisson));
    assert_eq!(s.n_samples_issued, 401);
    assert_eq!(s.n_samples_completed, 401);
    assert_eq!(s.n_samples_failed, 1);
    let window = 400 * 20_000_000 + 900_000_000;
    assert_eq!(s.legacy_loadgen_window_duration_ns, Some(window));
    assert_eq!(s.qps, Some(400.0 / (window as f64 / 1e9)));
    assert_eq!(s.tps, Some(400.0 * 63.0 / (window as f64 / 1e9)));
    assert_eq!(s.latency.rollups.as_ref().unwrap().max, 900_000_000);
    assert_eq!(s.ttft.rollups.as_ref().unwrap().min, 50_000_000);
    assert_eq!(s.finish_reason_counts.stop, 400);
    let v: Value = serde_json::from_slice(&s.to_json()).unwrap();
    assert_eq!(
        v["run_config"]["load_pattern"],
        json!({"type": "poisson", "target_qps": 50.0, "target_concurrency": null,
               "use_legacy_loadgen_qps_metrics": true})
    );
    // Not poisson: the measured window, and no LoadGen window.
    let s = ResultSummary::build(&r, &info(&r.stages[0].load));
    assert_eq!(s.legacy_loadgen_window_duration_ns, None);
    assert_eq!(s.qps, Some(401.0 / 9.118_456_115));
    // The report section says which contract each number follows.
    let text = text::render(&s);
    for needle in [
        "from issue",
        "failed requests included",
        "early stopping",
        "completed / measured window",
    ] {
        assert!(text.contains(needle), "{needle} in\n{text}");
    }
}

#[test]
fn early_stopping_off_leaves_the_estimates_out() {
    let run = run();
    let mut i = info(&crate::plan::Load::Closed { concurrency: 4 });
    i.early_stopping = false;
    let v: serde_json::Value =
        serde_json::from_slice(&ResultSummary::build(&run, &i).to_json()).unwrap();
    for k in ["ttft", "tpot", "latency"] {
        assert!(v[k].get("early_stopping_percentiles").is_none(), "{k}");
    }
    i.early_stopping = true;
    let v: serde_json::Value =
        serde_json::from_slice(&ResultSummary::build(&run, &i).to_json()).unwrap();
    assert!(v["latency"].get("early_stopping_percentiles").is_some());
}

#[test]
fn without_a_stream_ttft_and_tpot_are_empty_objects() {
    let run = run();
    let mut i = info(&crate::plan::Load::Closed { concurrency: 4 });
    i.streaming = false;
    let v: Value = serde_json::from_slice(&ResultSummary::build(&run, &i).to_json()).unwrap();
    assert_eq!(v["ttft"], json!({}));
    assert_eq!(v["tpot"], json!({}));
    assert!(v["latency"]["early_stopping_percentiles"].is_object());
    assert_eq!(v["output_sequence_lengths"]["total"], json!(400 * 63));
}

#[test]
fn without_a_tokenizer_the_token_blocks_are_left_as_mlperf_leaves_them() {
    let run = run();
    let mut i = info(&crate::plan::Load::Closed { concurrency: 4 });
    i.tokenizer = false;
    let v: Value = serde_json::from_slice(&ResultSummary::build(&run, &i).to_json()).unwrap();
    assert_eq!(v["output_sequence_lengths"], json!({}));
    assert_eq!(v["input_sequence_lengths"], json!({}));
    assert_eq!(v["tps"], Value::Null);
    assert!(v["qps"].is_number());
}

#[test]
fn isl_counts_every_issued_sample_failures_included() {
    let mut r = run();
    let fail = RequestSample {
        t_sched: 1_000_000_000,
        t_end: 1_100_000_000,
        error: Some(ErrorClass::HttpStatus),
        status: 503,
        input_tokens: Some(1000),
        input_source: InputCount::Tokenizer,
        ..RequestSample::default()
    };
    r.total.record(&fail, []);
    let s = ResultSummary::build(&r, &info(&r.stages[0].load));
    let isl = s.input_sequence_lengths.rollups.unwrap();
    assert_eq!(isl.max, 1000);
    let successes: u128 = (0..400u128).map(|i| 44 + i % 24).sum();
    assert_eq!(isl.total, successes + 1000);
}

#[test]
fn a_poisson_pattern_carries_the_configs_qps_definition() {
    let poisson = crate::plan::Load::Open {
        kind: crate::plan::ArrivalKind::Poisson,
        rate_from: 5.0,
        rate_to: 5.0,
    };
    let p = LoadPattern::of(&poisson).with_legacy_qps(Some(false));
    assert_eq!(p.use_legacy_loadgen_qps_metrics, Some(false));
    let closed = LoadPattern::of(&crate::plan::Load::Closed { concurrency: 2 });
    let v = serde_json::to_value(closed.with_legacy_qps(Some(false))).unwrap();
    assert!(v.get("use_legacy_loadgen_qps_metrics").is_none());
}
