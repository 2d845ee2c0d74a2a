//! `--io`: which backend ran, and why, is in the summary; the io_uring
//! backend (with and without its kernel polling thread) and epoll both
//! complete runs with exact counts; a bad value names the flag. (Every
//! other integration test runs under both backends: `io_matrix`.)

use std::time::Duration;

use crate::util::{Server, assert_accounted, bench_at, u};

const LIMIT: Duration = Duration::from_secs(30);

fn run_with(server: &Server, io: &[&str], stream: &str) -> serde_json::Value {
    let mut args = vec![
        "--requests",
        "300",
        "--concurrency",
        "8",
        "--workers",
        "1",
        stream,
        "--max-tokens",
        "16",
    ];
    args.extend_from_slice(io);
    let run = bench_at(server, &args, LIMIT);
    run.assert_success();
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["completed"]), 300, "{}", s["requests"]);
    assert_eq!(u(&s["requests"]["failed"]), 0, "{}", s["requests"]);
    assert_eq!(u(&s["tokens"]["output_total"]), 300 * 16, "{}", s["tokens"]);
    s
}

#[test]
fn each_backend_runs_and_the_summary_says_which_and_why() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let s = run_with(&server, &["--io", "uring"], "--stream");
    let io = &s["generator"]["io"];
    assert_eq!(io["backend"], "uring", "{io}");
    assert_eq!(io["requested"], "uring", "{io}");
    assert!(
        io["reason"].as_str().unwrap().contains("--io uring"),
        "{io}"
    );
    assert_eq!(io["sqpoll"], false, "{io}");

    let s = run_with(&server, &["--io", "epoll"], "--no-stream");
    let io = &s["generator"]["io"];
    assert_eq!(io["backend"], "epoll", "{io}");
    assert!(
        io["reason"].as_str().unwrap().contains("--io epoll"),
        "{io}"
    );

    // This kernel offers io_uring, so auto takes it and says so.
    let s = run_with(&server, &["--io", "auto"], "--no-stream");
    let io = &s["generator"]["io"];
    assert_eq!(io["backend"], "uring", "{io}");
    assert!(io["reason"].as_str().unwrap().starts_with("auto"), "{io}");
}

#[test]
fn io_uring_with_a_kernel_polling_thread_completes_a_run() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let s = run_with(&server, &["--io", "uring", "--uring-sqpoll"], "--stream");
    assert_eq!(s["generator"]["io"]["backend"], "uring");
    assert_eq!(s["generator"]["io"]["sqpoll"], true);
}

#[test]
fn io_uring_connects_from_the_source_addresses() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let s = run_with(
        &server,
        &["--io", "uring", "--source-addrs", "127.0.0.2-127.0.0.3"],
        "--no-stream",
    );
    assert_eq!(s["generator"]["io"]["backend"], "uring");
}

#[test]
fn a_bad_io_value_names_the_flag() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let run = bench_at(&server, &["--requests", "1", "--io", "kqueue"], LIMIT);
    assert!(!run.status.success());
    assert!(run.stderr.contains("--io"), "{}", run.stderr);
}
