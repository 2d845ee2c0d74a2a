//! Every load mode, streamed and not, against the built-in endpoint: every
//! request accounted for and the token totals equal what the server sent.

use std::time::Duration;

use crate::util::*;

/// Runs bench against a fresh server and checks the exact accounting.
fn exact(mode_args: &[&str], stream: bool, max_tokens: u32) -> serde_json::Value {
    let server = Server::start(&["--ttft", "1ms", "--tpot", "100us"]);
    let mt = max_tokens.to_string();
    let mut args = vec!["--max-tokens", &mt];
    args.push(if stream { "--stream" } else { "--no-stream" });
    args.extend_from_slice(mode_args);
    let run = bench_at(&server, &args, Duration::from_secs(60));
    run.assert_success();
    let s = run.summary();
    assert_accounted(&s["requests"]);
    let completed = u(&s["requests"]["completed"]);
    assert!(completed > 0);
    assert_eq!(u(&s["requests"]["failed"]), 0, "{}", s["requests"]);
    assert_eq!(
        u(&s["tokens"]["output_total"]),
        completed * max_tokens as u64
    );
    assert_eq!(s["tokens"]["output_source"], "usage");
    assert!(u(&s["tokens"]["input_total"]) > 0);
    assert_eq!(s["complete"], true);
    assert_eq!(s["interrupted"], false);
    let lat = &s["latency_ms"];
    assert_eq!(u(&lat["e2e"]["count"]), completed);
    assert_eq!(u(&lat["service"]["count"]), completed);
    if stream {
        assert_eq!(u(&lat["ttft"]["count"]), completed);
        assert_eq!(u(&lat["tpot"]["count"]), completed);
        assert_eq!(u(&lat["itl"]["count"]), completed * (max_tokens as u64 - 1));
    } else {
        assert_eq!(u(&lat["ttft"]["count"]), 0);
    }
    s
}

#[test]
fn concurrency_stream_counts_exactly() {
    let s = exact(&["--concurrency", "8", "--requests", "200"], true, 16);
    assert_eq!(u(&s["requests"]["issued"]), 200);
    assert_eq!(s["stages"][0]["load"]["mode"], "concurrency");
}

#[test]
fn concurrency_no_stream_counts_exactly() {
    let s = exact(
        &[
            "--mode",
            "concurrency",
            "--concurrency",
            "4",
            "--requests",
            "100",
        ],
        false,
        8,
    );
    assert_eq!(u(&s["requests"]["issued"]), 100);
}

#[test]
fn poisson_runs_for_its_duration() {
    let s = exact(
        &["--mode", "poisson", "--rate", "200", "--duration", "2s"],
        true,
        8,
    );
    let issued = u(&s["requests"]["issued"]) as f64;
    // 400 expected; a Poisson count's σ is 20.
    assert!((300.0..500.0).contains(&issued), "issued {issued}");
    assert!(f(&s["window_s"]) >= 1.9, "window {}", s["window_s"]);
}

#[test]
fn uniform_issues_exactly_rate_times_duration() {
    let s = exact(
        &["--mode", "uniform", "--rate", "100", "--duration", "2s"],
        false,
        4,
    );
    // Uniform arrivals at 0, 10 ms, …, 1990 ms.
    assert_eq!(u(&s["requests"]["issued"]), 200);
}

#[test]
fn uniform_with_request_limit() {
    let s = exact(
        &["--mode", "uniform", "--rate", "500", "--requests", "50"],
        true,
        4,
    );
    assert_eq!(u(&s["requests"]["issued"]), 50);
}

#[test]
fn offline_sends_everything_at_once() {
    let s = exact(
        &[
            "--mode",
            "offline",
            "--requests",
            "300",
            "--connections",
            "32",
        ],
        true,
        8,
    );
    assert_eq!(u(&s["requests"]["issued"]), 300);
    assert!(u(&s["generator"]["connections_opened"]) <= 32);
}

#[test]
fn warmup_is_excluded_from_statistics() {
    let server = Server::start(&["--ttft", "1ms"]);
    let run = bench_at(
        &server,
        &[
            "--mode",
            "uniform",
            "--rate",
            "100",
            "--warmup",
            "1s",
            "--duration",
            "1s",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["warmup"]["issued"]), 100);
    assert_eq!(u(&s["requests"]["issued"]), 100);
    assert_eq!(u(&s["latency_ms"]["e2e"]["count"]), 100);
    assert_accounted(&s["requests"]);
}

#[test]
fn dataset_prompts_are_sent() {
    let dir = temp_dir("dataset");
    let ds = dir.join("prompts.jsonl");
    std::fs::write(
        &ds,
        "{\"prompt\": \"one two three\"}\n{\"prompt\": \"four five\"}\n",
    )
    .unwrap();
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--dataset",
            ds.to_str().unwrap(),
            "--requests",
            "4",
            "--concurrency",
            "1",
            "--max-tokens",
            "3",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 4);
    assert_eq!(u(&s["tokens"]["output_total"]), 12);
}

#[test]
fn bad_dataset_line_is_named() {
    let dir = temp_dir("baddataset");
    let ds = dir.join("bad.jsonl");
    std::fs::write(&ds, "{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n").unwrap();
    let run = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--dataset",
            ds.to_str().unwrap(),
            // Two requests in order read two rows (a run reads no row it
            // cannot send), so the bad second line is reached.
            "--requests",
            "2",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.status.code(), Some(1));
    assert!(run.stderr.contains("bad.jsonl:2"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn bad_flags_are_clear_errors() {
    for (args, needle) in [
        (vec!["--mode", "poisson"], "--rate"),
        (vec!["--mode", "sideways"], "--mode"),
        (vec!["--rate", "-3"], "--rate"),
        (vec!["--endpoint", "ftp://x"], "--endpoint"),
        (vec!["--header", "no-colon"], "--header"),
        (vec!["--stream", "--no-stream"], "--stream"),
        (vec!["--duration", "5 parsecs"], "duration"),
    ] {
        let run = bench(&args, Duration::from_secs(10));
        assert!(!run.status.success(), "{args:?} succeeded");
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(all.contains(needle), "{args:?}: {all}");
        assert!(!all.contains("panicked"), "{args:?}: {all}");
    }
}

#[test]
fn default_run_measures_the_builtin_endpoint() {
    let run = bench(
        &[
            "--duration",
            "2s",
            "--concurrency",
            "8",
            "--max-tokens",
            "16",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["config"]["builtin_endpoint"], true);
    let completed = u(&s["requests"]["completed"]);
    assert!(completed > 20, "completed {completed}");
    assert_eq!(u(&s["requests"]["failed"]), 0);
    let server_tokens = u(&s["builtin_endpoint"]["output_tokens"]);
    let warm = u(&s["warmup"]["completed"]);
    assert_eq!(server_tokens, (completed + warm) * 16);
    // 20 ms ttft, 2 ms tpot at the built-in endpoint.
    let ttft = f(&s["latency_ms"]["ttft"]["p50"]);
    assert!((19.5..25.0).contains(&ttft), "ttft p50 {ttft}");
}

#[test]
fn offline_with_warmup_counts_only_measured_requests() {
    let server = Server::start(&["--ttft", "1ms"]);
    let run = bench_at(
        &server,
        &[
            "--mode",
            "offline",
            "--requests",
            "100",
            "--warmup",
            "300ms",
            "--connections",
            "8",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert!(u(&s["warmup"]["issued"]) > 0);
    assert_eq!(u(&s["requests"]["issued"]), 100);
    assert_eq!(u(&s["requests"]["completed"]), 100);
}

#[test]
fn two_workers_share_the_load() {
    let server = Server::start(&["--ttft", "1ms", "--workers", "2"]);
    let run = bench_at(
        &server,
        &[
            "--workers",
            "2",
            "--concurrency",
            "16",
            "--requests",
            "400",
            "--max-tokens",
            "8",
            "--pin",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["generator"]["workers"], 2);
    assert_eq!(u(&s["requests"]["completed"]), 400);
    assert_eq!(u(&s["tokens"]["output_total"]), 400 * 8);
    assert_eq!(u(&s["generator"]["connections_opened"]), 16);
}
