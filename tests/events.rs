//! `--events all|errors|none`: which requests get a line in events.jsonl,
//! and what the summary says was recorded.

use std::time::Duration;

use serde_json::Value;

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(30);

/// The lines of the run's events.jsonl, parsed.
fn lines(run: &Run) -> Vec<Value> {
    read(&run.out.join("events.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("an events line is JSON"))
        .collect()
}

/// One request at a time against one server worker failing a quarter of
/// its requests: exactly 10 of 40 fail.
fn faulty(events: Option<&str>) -> Run {
    let server = Server::start(&["--error-rate", "0.25"]);
    let mut args = vec![
        "--concurrency",
        "1",
        "--requests",
        "40",
        "--max-tokens",
        "4",
    ];
    if let Some(mode) = events {
        args.extend(["--events", mode]);
    }
    let run = bench_at(&server, &args, LIMIT);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

#[test]
fn default_writes_a_line_per_request() {
    let run = faulty(None);
    let s = run.summary();
    assert_eq!(u(&s["requests"]["failed"]), 10);
    assert_eq!(lines(&run).len(), 40);
    assert_eq!(s["events"]["mode"], "all");
    assert_eq!(u(&s["events"]["written"]), 40);
}

#[test]
fn errors_writes_exactly_the_failed_requests() {
    let run = faulty(Some("errors"));
    let s = run.summary();
    assert_eq!(u(&s["requests"]["failed"]), 10);
    let got = lines(&run);
    assert_eq!(got.len(), 10, "{got:?}");
    for l in &got {
        assert_eq!(l["error"], "http_503", "{l}");
        assert_eq!(l["status"], 503, "{l}");
    }
    let mut seqs: Vec<u64> = got.iter().map(|l| u(&l["seq"])).collect();
    seqs.dedup();
    assert_eq!(seqs.len(), 10, "one line per failed request");
    assert_eq!(s["events"]["mode"], "errors");
    assert_eq!(u(&s["events"]["written"]), 10);
    let report = read(&run.out.join("report.txt"));
    assert!(
        report.contains("events.jsonl: failed requests only (--events errors), 10 line(s)"),
        "{report}"
    );
}

#[test]
fn none_writes_no_file_and_says_so() {
    let run = faulty(Some("none"));
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["issued"]), 40);
    assert!(!run.out.join("events.jsonl").exists());
    assert_eq!(s["events"]["mode"], "none");
    assert_eq!(s["events"]["path"], "");
    assert_eq!(u(&s["events"]["written"]), 0);
    let report = read(&run.out.join("report.txt"));
    assert!(
        report.contains("events.jsonl: not written (--events none)"),
        "{report}"
    );
}

#[test]
fn what_needs_every_line_refuses_fewer() {
    let run = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9/v1/chat/completions",
            "--events",
            "none",
            "--record-output",
        ],
        LIMIT,
    );
    assert!(!run.status.success());
    assert!(
        run.stderr.contains("--events none does not write"),
        "{}",
        run.stderr
    );
    assert!(!run.out.join("events.jsonl").exists());
}
