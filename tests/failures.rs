//! Failures are counted and classified exactly, and never stop the run:
//! injected 503s, malformed responses, resets, timeouts, a dead endpoint.

use std::time::Duration;

use crate::util::*;

fn run_against(server_args: &[&str], bench_args: &[&str]) -> serde_json::Value {
    let server = Server::start(server_args);
    let run = bench_at(&server, bench_args, Duration::from_secs(60));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    s
}

#[test]
fn error_rate_is_counted_exactly_as_503() {
    // One server worker and one request at a time: exactly a quarter fail.
    let s = run_against(
        &["--error-rate", "0.25"],
        &[
            "--concurrency",
            "1",
            "--requests",
            "40",
            "--max-tokens",
            "4",
        ],
    );
    assert_eq!(u(&s["requests"]["issued"]), 40);
    assert_eq!(u(&s["requests"]["failed"]), 10);
    assert_eq!(u(&s["requests"]["errors"]["http_503"]), 10);
    assert_eq!(u(&s["tokens"]["output_total"]), 30 * 4);
}

#[test]
fn error_rate_non_stream_under_concurrency() {
    let s = run_against(
        &["--error-rate", "0.5"],
        &[
            "--no-stream",
            "--concurrency",
            "8",
            "--requests",
            "100",
            "--max-tokens",
            "2",
        ],
    );
    assert_eq!(u(&s["requests"]["errors"]["http_503"]), 50);
    assert_eq!(u(&s["requests"]["completed"]), 50);
}

#[test]
fn malformed_responses_are_classified() {
    let s = run_against(
        &["--malformed-rate", "1"],
        &["--concurrency", "2", "--requests", "10"],
    );
    assert_eq!(u(&s["requests"]["errors"]["malformed_response"]), 10);
    assert_eq!(u(&s["requests"]["completed"]), 0);
}

#[test]
fn resets_mid_stream_are_classified() {
    let s = run_against(
        &["--reset-rate", "0.5", "--tpot", "1ms"],
        &[
            "--concurrency",
            "1",
            "--requests",
            "10",
            "--max-tokens",
            "10",
        ],
    );
    assert_eq!(u(&s["requests"]["errors"]["reset"]), 5);
    assert_eq!(u(&s["requests"]["completed"]), 5);
}

#[test]
fn slow_responses_time_out() {
    let s = run_against(
        &["--ttft", "3s"],
        &[
            "--concurrency",
            "3",
            "--requests",
            "3",
            "--timeout",
            "300ms",
        ],
    );
    assert_eq!(u(&s["requests"]["errors"]["request_timeout"]), 3);
}

#[test]
fn unreachable_endpoint_gives_a_clean_failure_report() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &["--endpoint", &url, "--requests", "25", "--concurrency", "5"],
        Duration::from_secs(30),
    );
    assert!(
        run.elapsed < Duration::from_secs(15),
        "took {:?}",
        run.elapsed
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["issued"]), 25);
    assert_eq!(u(&s["requests"]["errors"]["connect_refused"]), 25);
    assert_eq!(s["complete"], true);
    assert!(run.out.join("report.txt").exists());
}

#[test]
fn unreachable_endpoint_with_duration_ends_in_time() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &["--endpoint", &url, "--duration", "1s", "--model", "m"],
        Duration::from_secs(30),
    );
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert!(u(&s["requests"]["errors"]["connect_refused"]) > 0);
    assert_eq!(u(&s["requests"]["completed"]), 0);
}
