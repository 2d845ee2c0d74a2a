//! `llmload audit output-caching` (MLPerf TEST04) against `llmload serve`:
//! an endpoint that answers every request on its own time passes, one that
//! answers repeated prompts from a cache fails, settings it cannot run with
//! are refused before a request is sent; and bench's `--order single:I`,
//! which the audit phase uses.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::*;

/// Rows of different lengths (row i has i + 1 words), so each row's
/// prompt_tokens tell which row was sent.
fn dataset(dir: &Path, rows: usize) -> String {
    let text: String = (0..rows)
        .map(|i| format!("{{\"prompt\": \"{}\"}}\n", vec!["word"; i + 1].join(" ")))
        .collect();
    let p = dir.join("rows.jsonl");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// `llmload audit output-caching ARGS --out <fresh dir> --quiet`, killed
/// after `limit`; `out` is the report dir.
fn audit(args: &[&str], limit: Duration) -> Run {
    run_quiet(&["audit", "output-caching"], args, limit)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&read(p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Each phase: 20 requests at concurrency 4 against a TTFT of 200 ms, five
/// rounds of about 0.2 s.
fn run_against(server: &ServeProcess, dir: &Path) -> (Run, PathBuf) {
    let url = server.url();
    let data = dataset(dir, 30);
    let run = audit(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--dataset",
            &data,
            "--samples",
            "20",
            "--audit-samples",
            "20",
            "--sample-index",
            "3",
            "--threshold",
            "0.10",
            "--concurrency",
            "4",
            "--max-tokens",
            "4",
            "--workers",
            "1",
        ],
        Duration::from_secs(30),
    );
    let audit_dir = run.out.join("audit");
    (run, audit_dir)
}

const KEYS: [&str; 10] = [
    "test",
    "passed",
    "ref_qps",
    "audit_qps",
    "threshold",
    "ref_completed",
    "ref_requested",
    "audit_completed",
    "audit_requested",
    "reason",
];

#[test]
fn an_endpoint_without_a_cache_passes() {
    let server = ServeProcess::start(&[], &["--ttft", "200ms", "--tpot", "1ms"]);
    let dir = temp_dir("audit-pass");
    let (run, audit_dir) = run_against(&server, &dir);
    assert_eq!(
        run.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("output caching (MLPerf TEST04): PASS"));
    let record = audit_dir.join("audit_output_caching_test.json");
    let r = json(&record);
    let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
    let mut want = KEYS.to_vec();
    keys.sort();
    want.sort();
    assert_eq!(keys, want, "every key of MLPerf's, no other");
    let text = read(&record);
    let at: Vec<usize> = KEYS
        .iter()
        .map(|k| text.find(&format!("\n  \"{k}\": ")).unwrap())
        .collect();
    assert!(
        at.is_sorted(),
        "in MLPerf's order, two-space indents:\n{text}"
    );
    assert_eq!(r["test"], "output_caching_test");
    assert_eq!(r["passed"], true);
    assert_eq!(f(&r["threshold"]), 0.10);
    for k in [
        "ref_completed",
        "ref_requested",
        "audit_completed",
        "audit_requested",
    ] {
        assert_eq!(u(&r[k]), 20, "{k}");
    }
    // Four in flight, each about 0.2 s: about 20 per second either way.
    let (ref_qps, audit_qps) = (f(&r["ref_qps"]), f(&r["audit_qps"]));
    for q in [ref_qps, audit_qps] {
        assert!((12.0..21.0).contains(&q), "{r}");
    }
    assert!(audit_qps < ref_qps * 1.1);
    assert!(
        r["reason"].as_str().unwrap().starts_with("audit_qps="),
        "{r}"
    );
    assert_eq!(
        read(&audit_dir.join("verify_OUTPUT_CACHING_TEST.txt")),
        "Performance check pass: True\n"
    );
    // Each phase is a whole run in its own directory, prompts untouched.
    let reference = json(&audit_dir.join("reference/summary.json"));
    let repeated = json(&audit_dir.join("output_caching/summary.json"));
    assert_eq!(reference["config"]["order"], "shuffle");
    assert_eq!(repeated["config"]["order"], "single:3");
    for s in [&reference, &repeated] {
        assert_eq!(s["config"]["cache_mode"], "natural");
        assert_eq!(u(&s["requests"]["completed"]), 20);
    }
    // The repeated row is row 3: four words, every time.
    let events = read(&audit_dir.join("output_caching/events.jsonl"));
    assert_eq!(events.lines().count(), 20);
    for line in events.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(u(&e["prompt_tokens"]), 4, "{line}");
    }
    let counters = server.stop();
    assert_eq!(u(&counters["requests"]), 40);
}

#[test]
fn an_endpoint_that_caches_repeats_fails() {
    let server = ServeProcess::start(
        &[],
        &["--ttft", "200ms", "--tpot", "1ms", "--cache-repeats"],
    );
    let dir = temp_dir("audit-fail");
    let (run, audit_dir) = run_against(&server, &dir);
    assert_eq!(
        run.status.code(),
        Some(1),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("output caching (MLPerf TEST04): FAIL"));
    let r = json(&audit_dir.join("audit_output_caching_test.json"));
    assert_eq!(r["passed"], false);
    assert_eq!(u(&r["audit_completed"]), 20);
    // The first copy of the row takes its 0.2 s; the rest are answered at
    // once, so the audit phase is several times faster.
    assert!(f(&r["audit_qps"]) > 2.0 * f(&r["ref_qps"]), "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains(" >= ref_qps * (1 + 10%) = ")
    );
    assert_eq!(
        read(&audit_dir.join("verify_OUTPUT_CACHING_TEST.txt")),
        "Performance check pass: False\n"
    );
    let counters = server.stop();
    assert!(u(&counters["cache_hits"]) >= 16, "{counters}");
}

#[test]
fn settings_it_cannot_run_with_are_refused_with_their_flag() {
    let dir = temp_dir("audit-bad");
    let data = dataset(&dir, 5);
    // No --endpoint: refusals that need the dataset start the built-in one.
    let cases: [(&[&str], &str); 7] = [
        (&["--samples", "3", "--rate", "10"], "--mode poisson: "),
        (
            &["--samples", "3", "--cache-mode", "bust"],
            "--cache-mode bust: ",
        ),
        (&["--samples", "3", "--threshold", "1"], "--threshold: "),
        (&["--samples", "3", "--requests", "9"], "--requests: "),
        (&["--samples", "6"], "--samples 6: the dataset has 5 rows"),
        (
            &["--samples", "3", "--sample-index", "5"],
            "--sample-index 5: ",
        ),
        (&["--mode", "offline"], "--samples"),
    ];
    for (args, want) in cases {
        let mut all = vec!["--dataset", data.as_str(), "--workers", "1"];
        all.extend_from_slice(args);
        let run = audit(&all, Duration::from_secs(10));
        assert_eq!(run.status.code(), Some(2), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
        assert!(!run.out.join("audit").exists(), "{args:?} wrote results");
    }
}

#[test]
fn bench_order_single_sends_one_row() {
    let server = Server::start(&[]);
    let dir = temp_dir("order-single");
    let data = dataset(&dir, 8);
    let common = [
        "--dataset",
        data.as_str(),
        "--requests",
        "6",
        "--workers",
        "1",
        "--cache-mode",
        "natural",
    ];
    let mut args = common.to_vec();
    args.extend(["--order", "single:5", "--concurrency", "2"]);
    let run = bench_at(&server, &args, Duration::from_secs(10));
    run.assert_success();
    assert_eq!(run.summary()["config"]["order"], "single:5");
    let events = read(&run.out.join("events.jsonl"));
    assert_eq!(events.lines().count(), 6);
    for line in events.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(u(&e["prompt_tokens"]), 6, "row 5 has six words: {line}");
    }
    let mut args = common.to_vec();
    args.extend(["--order", "single:8"]);
    let run = bench_at(&server, &args, Duration::from_secs(10));
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("--order single:8: ") && run.stderr.contains("(rows 0 to 7)"),
        "{}",
        run.stderr
    );
}
