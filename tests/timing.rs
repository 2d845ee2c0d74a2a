//! Measured TTFT, TPOT and ITL against the server's configured pacing. The
//! server paces tokens exactly (±1 ms); the generator's stamps add loopback
//! transit and scheduling noise on a shared 2-core machine, so medians must
//! sit within 2 ms of the configuration and means within 3 ms.

use std::time::Duration;

use crate::util::*;

#[test]
fn ttft_and_tpot_match_the_server() {
    let server = Server::start(&["--ttft", "50ms", "--tpot", "5ms"]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "4",
            "--requests",
            "40",
            "--max-tokens",
            "20",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    let lat = &s["latency_ms"];
    assert_eq!(u(&lat["ttft"]["count"]), 40);
    let near = |v: f64, want: f64, tol: f64, what: &str| {
        assert!(
            (v - want).abs() <= tol,
            "{what} = {v} ms, configured {want} ms (±{tol})\n{lat}"
        );
    };
    near(f(&lat["ttft"]["p50"]), 50.0, 2.0, "ttft p50");
    near(f(&lat["ttft"]["mean"]), 50.0, 3.0, "ttft mean");
    near(f(&lat["tpot"]["p50"]), 5.0, 0.5, "tpot p50");
    near(f(&lat["tpot"]["mean"]), 5.0, 0.5, "tpot mean");
    near(f(&lat["itl"]["p50"]), 5.0, 1.0, "itl p50");
    // 50 ms + 19 × 5 ms = 145 ms for the whole stream.
    near(f(&lat["service"]["p50"]), 145.0, 4.0, "service p50");
    assert_eq!(u(&lat["itl"]["count"]), 40 * 19);
}

#[test]
fn non_stream_latency_matches_generation_time() {
    let server = Server::start(&["--ttft", "30ms", "--tpot", "2ms"]);
    let run = bench_at(
        &server,
        &[
            "--no-stream",
            "--concurrency",
            "2",
            "--requests",
            "20",
            "--max-tokens",
            "11",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    // The whole body leaves when the last token would: 30 + 10 × 2 ms.
    let p50 = f(&s["latency_ms"]["service"]["p50"]);
    assert!((p50 - 50.0).abs() <= 3.0, "service p50 {p50}");
    assert_eq!(u(&s["tokens"]["output_total"]), 20 * 11);
}

/// Every success's gaps are counted once, in its own stage and scenario,
/// whichever path they took: folded by a worker (no checks: single
/// requests, first turns, later turns once the last stage began) or
/// shipped to the parent (a scenario with checks, later turns before the
/// last stage). Two workers, a warm-up and two stages.
#[test]
fn itl_counts_each_gap_once_in_its_own_stage_and_scenario() {
    let server = Server::start(&["--ttft", "1ms", "--tpot", "1ms"]);
    let tokens = [("plain", 6u64), ("checked", 5), ("chat", 4)];
    let json = serde_json::json!({
        "warmup": "300ms",
        "workers": 2,
        "live_interval": "0",
        "stages": [
            {"name": "closed", "concurrency": 4, "duration": "1s"},
            {"name": "open", "rate": 80, "duration": "1s"}
        ],
        "scenarios": [
            {"name": "plain", "weight": 2, "max_tokens": 6},
            {"name": "checked", "weight": 1, "max_tokens": 5,
             "checks": {"min_completion_tokens": 1}},
            {"name": "chat", "weight": 1, "max_tokens": 4, "turns": {"min": 2, "max": 3},
             "content": {"mode": "scripted", "script": ["Hi", "more", "and then?"]}}
        ]
    });
    let run = bench_profile(&server, &json, &[], Duration::from_secs(60));
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["generator"]["workers"], 2);
    let mut gaps = 0;
    for st in s["stages"].as_array().unwrap() {
        for sc in st["scenarios"].as_array().unwrap() {
            let name = sc["name"].as_str().unwrap();
            let per = tokens.iter().find(|t| t.0 == name).unwrap().1 - 1;
            let done = u(&sc["requests"]["completed"]);
            assert!(done > 0, "{name} in {}", st["name"]);
            let itl = u(&sc["latency_ms"]["itl"]["count"]);
            assert_eq!(itl, done * per, "{name} in {}", st["name"]);
            gaps += itl;
        }
    }
    assert_eq!(u(&s["latency_ms"]["itl"]["count"]), gaps);
}
