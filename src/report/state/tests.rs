use hdrhistogram::Histogram;

use super::*;
use crate::metrics::errors::ErrorClass;
use crate::metrics::hdr;
use crate::metrics::timeline::{self, Bucket, RunTimeline, TimelineSlice};
use crate::plan;
use crate::report::summary::Summary;
use crate::report::summary::tests::{info, run};

/// The summary fixture's run with a timeline whose buckets carry
/// histograms, and thresholds to re-evaluate.
fn full_run() -> RunResult {
    let mut r = run();
    let mut h: Histogram<u32> = timeline::BOUNDS.histogram();
    for v in [2_000_000, 3_500_000, 90_000_000] {
        h.record(v).unwrap();
    }
    let bucket = |interval, stage| Bucket {
        interval,
        stage,
        completed: 3,
        output_tokens: 24,
        ttft_p50_ns: Some(h.value_at_quantile(0.5)),
        ttft_hist: Some(hdr::to_text(&h)),
        e2e_hist: Some(hdr::to_text(&h)),
        ..Bucket::default()
    };
    let mut failed = bucket(2, Some(1));
    failed.add_error(ErrorClass::HttpStatus, 503, 2);
    failed.add_error(ErrorClass::Reset, 0, 1);
    r.timeline = RunTimeline {
        interval_ns: timeline::INTERVAL_NS,
        stage_names: vec!["warm".into(), "ramp".into()],
        slices: vec![TimelineSlice {
            scenario: None,
            buckets: vec![bucket(0, None), bucket(1, Some(0)), failed],
        }],
        in_flight: vec![4, 4, 0],
        slo: false,
        stragglers: 1,
        scenarios_left_out: 0,
    };
    r.thresholds = plan::Thresholds {
        p99_ms: Some(40.0),
        min_rps: Some(1.0),
        ..plan::Thresholds::default()
    };
    r.endpoints = vec![crate::metrics::endpoints::EndpointStats::new("http://h/v1")];
    r.endpoints[0].take_latency(&r.total);
    r
}

/// The summary a rebuilt run renders, state and all, is the one the run
/// itself rendered.
#[test]
fn a_run_through_its_summary_json_renders_the_same_summary() {
    let run = full_run();
    let built = Summary::build(&run, &info());
    let json = serde_json::to_string(&built).unwrap();
    let read = Summary::from_value(serde_json::from_str(&json).unwrap()).unwrap();
    let state = read.state.as_ref().expect("a summary carries its state");
    let rebuilt = state.to_run().unwrap();
    let again = Summary::build(&rebuilt, &info());
    assert_eq!(again, built);
    // Beyond what the summary shows: the raw parts themselves.
    assert_eq!(rebuilt.timeline, run.timeline);
    assert_eq!(rebuilt.measured, run.measured);
    assert_eq!(rebuilt.thresholds, run.thresholds);
    assert_eq!(rebuilt.incomplete_reasons, run.incomplete_reasons);
    assert_eq!(rebuilt.generator.limits, run.generator.limits);
    assert_eq!(
        rebuilt.connections.tls_handshake,
        run.connections.tls_handshake
    );
    for (a, b) in rebuilt.stages.iter().zip(&run.stages) {
        assert_eq!(a.measured, b.measured);
        assert_eq!(a.thresholds, b.thresholds);
        assert_eq!(a.block.itl.histogram(), b.block.itl.histogram());
    }
    assert_eq!(rebuilt.total.e2e.histogram(), run.total.e2e.histogram());
}

/// The written form keeps the names a reader of `state` relies on.
#[test]
fn state_is_the_run_as_serde_writes_it_with_a_version() {
    let s = RunState::of(&full_run()).0;
    assert_eq!(s["version"], VERSION);
    assert_eq!(s["stages"][1]["load"]["mode"], "uniform");
    assert_eq!(s["stages"][1]["thresholds"][0]["name"], "p99_ms");
    assert_eq!(s["aborted_on_threshold"]["broken"][1], "error_rate");
    assert_eq!(s["total"]["errors"]["http_503"], 2);
    assert!(s["total"]["e2e"]["sum"].is_string());
    assert!(s["total"]["decode_ns"].is_string());
    assert_eq!(s["generator"]["limits"][0]["kind"], "ring_full");
    assert_eq!(
        s["timeline"]["slices"][0]["buckets"][2]["errors"][0][0],
        "http_503"
    );
    let kinds: Vec<&str> = s["incomplete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"worker_died"), "{kinds:?}");
}

#[test]
fn a_state_this_version_cannot_read_says_why() {
    let edited = |f: &dyn Fn(&mut Value)| {
        let mut s = RunState::of(&full_run());
        f(&mut s.0);
        s.to_run().unwrap_err()
    };
    let e = edited(&|s| s["version"] = 9.into());
    assert!(e.contains("version 9") && e.contains("reads 2"), "{e}");
    let e = edited(&|s| s["stages"][1]["thresholds"][0]["name"] = "p42_ms".into());
    assert!(
        e.starts_with("stages[1].thresholds[0].name") && e.contains("p42_ms"),
        "{e}"
    );
    let e =
        edited(&|s| s["timeline"]["slices"][0]["buckets"][2]["errors"][0][0] = "http_oops".into());
    assert!(e.starts_with("timeline.slices[0].buckets[2].errors"), "{e}");
    assert!(e.contains("http_oops"), "{e}");
    let e = edited(&|s| s["total"]["e2e"]["hist"] = "AAAA".into());
    assert!(e.starts_with("total.e2e: "), "{e}");
    let e = edited(&|s| s["total"]["ttft"]["count"] = 1.into());
    assert!(
        e.starts_with("total.ttft: ") && e.contains("count 1"),
        "{e}"
    );
    let e = edited(&|s| s["total"]["errors"]["nope"] = 1.into());
    assert!(e.starts_with("total.errors: ") && e.contains("nope"), "{e}");
    let e = edited(&|s| s["total"]["e2e"]["sum"] = "1e3".into());
    assert!(e.starts_with("total.e2e.sum: "), "{e}");
}
