//! The fault matrix: `llmload bench` against hostile or broken servers
//! (`llmload serve`'s fault options), crashed processes and signals. Every
//! case is bounded twice: a hard deadline after which the bench is killed and
//! the test fails, and a tighter stated bound on how long the run may take.
//! Every case then checks the same things: no panic, a summary that says
//! whether the run is complete, issued = completed + failed, every failure
//! in the expected class (the whole error map is compared), the exit code,
//! and, where memory is the point, the workers' peak RSS.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Kill the bench and fail after this, whatever the case's own bound.
const HARD_LIMIT: Duration = Duration::from_secs(30);

/// The checks every case makes; returns the summary.
fn checked(run: &Run, bound: Duration) -> Value {
    assert_ne!(run.status.code(), Some(101), "panic exit\n{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(
        run.elapsed < bound,
        "took {:?}, over the bound of {bound:?}\n{}",
        run.elapsed,
        run.stderr
    );
    let s = run.summary();
    assert!(s["complete"].is_boolean(), "{s}");
    assert_accounted(&s["requests"]);
    s
}

/// The summary's error counts.
fn errors(s: &Value) -> BTreeMap<String, u64> {
    s["requests"]["errors"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), u(v)))
        .collect()
}

/// Exactly these failures, no others.
fn assert_errors(s: &Value, want: &[(&str, u64)]) {
    let want: BTreeMap<String, u64> = want.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(errors(s), want, "{}", s["requests"]);
}

/// Every failure is of one of `classes`; returns how many of each.
fn assert_classes_within(s: &Value, classes: &[&str]) -> BTreeMap<String, u64> {
    let e = errors(s);
    for k in e.keys() {
        assert!(
            classes.contains(&k.as_str()),
            "unexpected {k}: {}",
            s["requests"]
        );
    }
    e
}

fn exit(run: &Run) -> Option<i32> {
    run.status.code()
}

/// Runs bench against `server`, sampling its workers' peak RSS (`VmHWM`
/// of every child) while it runs.
fn bench_watched(server: &str, args: &[&str], limit: Duration) -> (Run, u64) {
    let mut all = vec!["--endpoint", server, "--model", "m"];
    all.extend_from_slice(args);
    let (child, out) = spawn_bench(&all);
    let (run, peak) = wait_run_watching(child, out, limit);
    (run, peak.unwrap_or(0))
}

/// The workers' peak RSS in KiB: the summary's `generator.worker_max_rss_kib`
/// when the run reports it, else what was sampled from /proc.
fn worker_peak_kib(s: &Value, sampled: u64) -> u64 {
    match s["generator"]["worker_max_rss_kib"].as_array() {
        Some(per_worker) => per_worker.iter().map(u).max().unwrap_or(0),
        None => sampled,
    }
}

fn assert_peak_under(s: &Value, sampled: u64, limit_mib: u64) {
    let kib = worker_peak_kib(s, sampled);
    eprintln!("worker peak RSS {kib} KiB (limit {limit_mib} MiB)");
    assert!(kib > 0, "no worker RSS was seen");
    assert!(
        kib < limit_mib * 1024,
        "worker peak RSS {} MiB, over the limit of {limit_mib} MiB",
        kib / 1024
    );
}

// ---------------------------------------------------------------------------
// Hostile servers

#[test]
fn reset_mid_stream_is_reset() {
    let server = Server::start(&["--reset-rate", "0.5", "--fault-after", "3", "--tpot", "1ms"]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "1",
            "--requests",
            "10",
            "--max-tokens",
            "8",
        ],
        HARD_LIMIT,
    );
    let s = checked(&run, Duration::from_secs(10));
    assert_eq!(exit(&run), Some(0), "{}", run.stderr);
    assert_eq!(s["complete"], true);
    assert_eq!(u(&s["requests"]["issued"]), 10);
    assert_errors(&s, &[("reset", 5)]);
}

#[test]
fn a_stall_past_the_timeout_is_request_timeout() {
    let server = Server::start(&["--stall-rate", "1", "--fault-after", "2"]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "2",
            "--requests",
            "4",
            "--timeout",
            "500ms",
        ],
        HARD_LIMIT,
    );
    let s = checked(&run, Duration::from_secs(10));
    assert!(
        run.elapsed >= Duration::from_millis(1000),
        "{:?}",
        run.elapsed
    );
    assert_eq!(exit(&run), Some(1), "no request succeeded\n{}", run.stderr);
    assert_eq!(s["complete"], true);
    assert_errors(&s, &[("request_timeout", 4)]);
}

#[test]
fn error_and_rate_limit_bursts_are_counted_exactly() {
    let server = Server::start(&[
        "--error-rate",
        "0.5",
        "--error-burst",
        "5",
        "--error-status",
        "500",
        "--error-status",
        "429",
    ]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "1",
            "--requests",
            "40",
            "--max-tokens",
            "2",
        ],
        HARD_LIMIT,
    );
    let s = checked(&run, Duration::from_secs(10));
    assert_eq!(exit(&run), Some(0), "{}", run.stderr);
    assert_errors(&s, &[("http_429", 10), ("http_500", 10)]);
    assert_eq!(u(&s["requests"]["completed"]), 20);
}

/// A server whose every response is malformed in the way `kind` says.
fn malformed_run(kind: &str, bench_args: &[&str]) -> (Run, Value, u64) {
    let server = Server::start(&["--malformed-rate", "1", "--malformed-kind", kind]);
    let (run, sampled) = bench_watched(&server.url(), bench_args, HARD_LIMIT);
    let s = checked(&run, Duration::from_secs(15));
    assert_eq!(exit(&run), Some(1), "no request succeeded\n{}", run.stderr);
    assert_eq!(s["complete"], true);
    (run, s, sampled)
}

#[test]
fn malformed_chunk_sizes_are_malformed_response() {
    let (_, s, _) = malformed_run("chunk-size", &["--concurrency", "2", "--requests", "4"]);
    assert_errors(&s, &[("malformed_response", 4)]);
}

#[test]
fn a_70_kib_response_head_is_malformed_response() {
    let (_, s, _) = malformed_run("huge-head", &["--concurrency", "2", "--requests", "4"]);
    assert_errors(&s, &[("malformed_response", 4)]);
}

#[test]
fn garbage_instead_of_http_is_malformed_response() {
    let (_, s, _) = malformed_run("garbage", &["--concurrency", "2", "--requests", "4"]);
    assert_errors(&s, &[("malformed_response", 4)]);
}

#[test]
fn an_endless_sse_line_is_malformed_response_at_1_mib() {
    // The timeout is far off: the line cap ends each request.
    let (run, s, sampled) = malformed_run(
        "endless-line",
        &[
            "--concurrency",
            "2",
            "--requests",
            "4",
            "--workers",
            "1",
            "--timeout",
            "20s",
        ],
    );
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
    assert_errors(&s, &[("malformed_response", 4)]);
    assert_peak_under(&s, sampled, 64);
}

#[test]
fn a_10_gb_content_length_is_malformed_response_in_bounded_memory() {
    let (run, s, sampled) = malformed_run(
        "huge-length",
        &[
            "--concurrency",
            "1",
            "--requests",
            "2",
            "--workers",
            "1",
            "--timeout",
            "20s",
        ],
    );
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
    assert_errors(&s, &[("malformed_response", 2)]);
    // One body, cut at the body cap (64 MiB at most), and nothing kept.
    assert_peak_under(&s, sampled, 100);
}

/// A server streaming valid token events for ever, as fast as read.
fn endless_run(extra: &[&str]) -> (Run, Value, u64) {
    let server = Server::start(&["--endless-rate", "1"]);
    let mut args = vec![
        "--concurrency",
        "2",
        "--requests",
        "2",
        "--workers",
        "1",
        "--timeout",
        "2s",
    ];
    args.extend_from_slice(extra);
    let (run, sampled) = bench_watched(&server.url(), &args, HARD_LIMIT);
    let s = checked(&run, Duration::from_secs(10));
    assert!(run.elapsed >= Duration::from_secs(2), "{:?}", run.elapsed);
    assert_eq!(exit(&run), Some(1), "no request succeeded\n{}", run.stderr);
    assert_errors(&s, &[("request_timeout", 2)]);
    (run, s, sampled)
}

#[test]
fn a_never_ending_stream_times_out_in_bounded_memory() {
    let (_, s, sampled) = endless_run(&[]);
    assert_peak_under(&s, sampled, 64);
}

#[test]
fn a_never_ending_stream_recorded_times_out_in_bounded_memory() {
    // Kept text is capped (4 MiB a response by default), so recording the
    // output costs a few MiB, not the stream's length.
    let (run, s, sampled) = endless_run(&["--record-output"]);
    assert_peak_under(&s, sampled, 64);
    let events = read(&run.out.join("events.jsonl"));
    assert_eq!(events.lines().count(), 2);
    for line in events.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["output_truncated"],
            true,
            "{}",
            &line[..line.len().min(300)]
        );
    }
}

#[test]
fn a_slowloris_server_times_out_at_the_timeout() {
    // One byte every 100 ms: the head alone would take seconds.
    let server = Server::start(&["--drip", "100ms"]);
    let run = bench_at(
        &server,
        &["--concurrency", "2", "--requests", "2", "--timeout", "1s"],
        HARD_LIMIT,
    );
    let s = checked(&run, Duration::from_secs(6));
    assert!(run.elapsed >= Duration::from_secs(1), "{:?}", run.elapsed);
    assert_eq!(exit(&run), Some(1), "no request succeeded\n{}", run.stderr);
    assert_errors(&s, &[("request_timeout", 2)]);
}

#[test]
fn a_200_html_page_is_no_output() {
    let (_, s, _) = malformed_run("html", &["--concurrency", "2", "--requests", "4"]);
    assert_errors(&s, &[("no_output", 4)]);
}

#[test]
fn an_unreachable_endpoint_gives_a_complete_report() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--requests",
            "10",
            "--concurrency",
            "2",
            // Every request sent, to see each accounted for.
            "--no-fail-fast",
        ],
        HARD_LIMIT,
    );
    let s = checked(&run, Duration::from_secs(10));
    assert_eq!(exit(&run), Some(1), "{}", run.stderr);
    assert_eq!(s["complete"], true);
    assert_errors(&s, &[("connect_refused", 10)]);
    assert!(run.out.join("report.txt").exists());
}

// ---------------------------------------------------------------------------
// Crashed processes

#[test]
fn the_server_killed_mid_run_gives_refusals_and_a_summary() {
    let mut server = ServeProcess::start(&[], &["--ttft", "5ms", "--tpot", "2ms"]);
    let url = server.url();
    let (child, out) = spawn_bench(&[
        "--endpoint",
        &url,
        "--model",
        "m",
        "--concurrency",
        "4",
        "--duration",
        "2s",
        "--max-tokens",
        "16",
    ]);
    std::thread::sleep(Duration::from_millis(800));
    server.kill();
    let run = wait_run(child, out, HARD_LIMIT);
    let s = checked(&run, Duration::from_secs(8));
    assert_eq!(exit(&run), Some(0), "{}", run.stderr);
    assert_eq!(s["complete"], true);
    assert!(u(&s["requests"]["completed"]) > 0);
    // Streams cut by the kill end as resets (or, cut at a clean close, as
    // truncated); everything after is refused.
    let e = assert_classes_within(&s, &["connect_refused", "reset", "truncated"]);
    eprintln!("after the kill: {e:?}");
    assert!(e.get("connect_refused").copied().unwrap_or(0) > 0, "{e:?}");
}

/// Starts a bench against `server` (its live lines on stderr) and waits
/// until its workers exist.
fn started_bench(
    server: &Server,
    args: &[&str],
    workers: usize,
) -> (std::process::Child, std::path::PathBuf, Vec<i32>) {
    let url = server.url();
    let mut all = vec!["--endpoint", url.as_str(), "--model", "m"];
    all.extend_from_slice(args);
    let (child, out) = spawn_bench_live(&all);
    let pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    let kids = loop {
        let kids = children(pid);
        if kids.len() >= workers {
            break kids;
        }
        assert!(Instant::now() < deadline, "bench's workers never appeared");
        std::thread::sleep(Duration::from_millis(10));
    };
    (child, out, kids)
}

/// The live lines' in-flight counts printed at or after `from_s` seconds.
fn inflight_after(stderr: &str, from_s: f64) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|l| {
            let t: f64 = l
                .strip_prefix('[')?
                .split('s')
                .next()?
                .trim()
                .parse()
                .ok()?;
            let n = l
                .split("in-flight")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()?;
            (t >= from_s).then_some(n)
        })
        .collect()
}

#[test]
fn a_worker_killed_in_a_closed_loop_is_worker_lost_exit_3() {
    let server = Server::start(&["--ttft", "20ms", "--tpot", "2ms"]);
    let (child, out, workers) = started_bench(
        &server,
        &[
            "--workers",
            "2",
            "--concurrency",
            "8",
            "--duration",
            "3s",
            "--max-tokens",
            "16",
            "--live-interval",
            "250ms",
        ],
        2,
    );
    std::thread::sleep(Duration::from_millis(1000));
    sigkill(workers[0]);
    let run = wait_run(child, out, HARD_LIMIT);
    let s = checked(&run, Duration::from_secs(10));
    assert_eq!(
        exit(&run),
        Some(3),
        "incomplete, not by a signal\n{}",
        run.stderr
    );
    assert_eq!(s["complete"], false);
    assert_eq!(s["interrupted"], false);
    assert!(
        !s["incomplete_reasons"].as_array().unwrap().is_empty(),
        "{s}"
    );
    let e = assert_classes_within(&s, &["worker_lost"]);
    assert!(e.get("worker_lost").copied().unwrap_or(0) > 0, "{e:?}");
    assert!(u(&s["requests"]["completed"]) > 0);
    // Only the dead worker's requests were written off: the survivor never
    // carries more than the concurrency.
    let after = inflight_after(&run.stderr, 1.6);
    assert!(
        !after.is_empty(),
        "no live lines after the kill\n{}",
        run.stderr
    );
    assert!(
        after.iter().all(|&n| n <= 8),
        "in flight after the kill: {after:?}"
    );
}

#[test]
fn a_worker_killed_in_an_open_loop_is_worker_lost_exit_3() {
    let server = Server::start(&["--ttft", "50ms", "--tpot", "2ms"]);
    let (child, out, workers) = started_bench(
        &server,
        &[
            "--workers",
            "2",
            "--rate",
            "100",
            "--duration",
            "2s",
            "--max-tokens",
            "16",
        ],
        2,
    );
    std::thread::sleep(Duration::from_millis(800));
    sigkill(workers[1]);
    let run = wait_run(child, out, HARD_LIMIT);
    let s = checked(&run, Duration::from_secs(10));
    assert_eq!(
        exit(&run),
        Some(3),
        "incomplete, not by a signal\n{}",
        run.stderr
    );
    assert_eq!(s["complete"], false);
    assert!(
        !s["incomplete_reasons"].as_array().unwrap().is_empty(),
        "{s}"
    );
    let e = assert_classes_within(&s, &["worker_lost"]);
    assert!(e.get("worker_lost").copied().unwrap_or(0) > 0, "{e:?}");
    assert!(u(&s["requests"]["completed"]) > 0);
}

#[test]
fn the_parent_killed_leaves_no_worker_or_server_process() {
    // No endpoint: the built-in server's workers are the bench's children
    // too, beside the engine's.
    let out = temp_dir("parent-kill");
    let mut child = std::process::Command::new(bin())
        .args([
            "bench",
            "--duration",
            "30s",
            "--concurrency",
            "4",
            "--workers",
            "1",
            "--quiet",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    let kids = loop {
        let kids = children(pid);
        if kids.len() >= 2 {
            break kids;
        }
        assert!(Instant::now() < deadline, "bench's children never appeared");
        std::thread::sleep(Duration::from_millis(10));
    };
    std::thread::sleep(Duration::from_millis(500));
    let kids: Vec<i32> = children(pid).into_iter().chain(kids).collect();
    sigkill(pid);
    let _ = child.wait();
    let killed = Instant::now();
    loop {
        let left: Vec<i32> = kids.iter().copied().filter(|&k| alive(k)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "still running 1 s after the parent died: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------
// Signals

fn interrupted_by(sig: i32) {
    let server = Server::start(&["--ttft", "5ms", "--tpot", "1ms"]);
    let url = server.url();
    let (child, out) = spawn_bench(&[
        "--endpoint",
        &url,
        "--model",
        "m",
        "--duration",
        "30s",
        "--concurrency",
        "4",
        "--max-tokens",
        "8",
        "--drain-timeout",
        "2s",
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, sig);
    let run = wait_run(child, out, HARD_LIMIT);
    let s = checked(&run, Duration::from_secs(6));
    assert_eq!(exit(&run), Some(130), "{}", run.stderr);
    assert_eq!(s["interrupted"], true);
    assert_eq!(s["complete"], false);
    assert!(u(&s["requests"]["completed"]) > 0);
    assert_classes_within(&s, &["aborted"]);
    assert!(run.out.join("report.txt").exists());
}

#[test]
fn sigint_gives_an_interrupted_summary_and_130() {
    interrupted_by(libc::SIGINT);
}

#[test]
fn sigterm_gives_an_interrupted_summary_and_130() {
    interrupted_by(libc::SIGTERM);
}

#[test]
fn sighup_gives_an_interrupted_summary_and_130() {
    interrupted_by(libc::SIGHUP);
}

/// `llmload ARGS` for a hostile file: under a 1 GiB address-space limit
/// (`prlimit`, where util-linux has it) and 20 s, so a file that makes the
/// reader grow fails the test instead of the machine.
pub(crate) fn under_limits(args: &[&str]) -> Run {
    let mut cmd = if have("prlimit") {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={}", 1u64 << 30)).arg("--").arg(bin());
        c
    } else {
        Command::new(bin())
    };
    let child = cmd
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload");
    wait_run(child, std::path::PathBuf::new(), Duration::from_secs(20))
}

/// A refusal: exit 1 and `want` in a line that names `file`.
pub(crate) fn assert_refused(run: &Run, file: &std::path::Path, want: &str) {
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    let file = file.display().to_string();
    assert!(
        run.stderr
            .lines()
            .any(|l| l.contains(&file) && l.contains(want)),
        "no line naming {file} with {want:?}:\n{}",
        run.stderr
    );
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

/// Hostile files given where a config, profile, certificate, tokenizer or
/// answer file is read: each refused at once, naming the file and the
/// limit, under a 1 GiB address-space limit.
#[test]
fn hostile_files_are_refused_in_bounded_memory_and_time() {
    let dir = temp_dir("hostile-files");
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let sparse = |name: &str, len: u64| {
        let p = dir.join(name);
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        p
    };
    let laughs = |indent: &str| {
        let mut s = format!(
            "{indent}a0: &a0 {{k0: lol, k1: lol, k2: lol, k3: lol, k4: lol, k5: lol, k6: lol, k7: lol, k8: lol, k9: lol}}\n"
        );
        for i in 1..9 {
            let items: Vec<String> = (0..10).map(|k| format!("k{k}: *a{}", i - 1)).collect();
            s += &format!("{indent}a{i}: &a{i} {{{}}}\n", items.join(", "));
        }
        s
    };
    let values = "more than 100000 values once anchors are expanded";
    let deep = "lists and mappings nested deeper than 64 levels";
    let yaml_cases = [
        // Mappings of aliases (the dict form of billion laughs).
        (write("map-laughs.yaml", laughs("")), values),
        // The same under a merge key, which MLPerf's schema does not know.
        (
            write(
                "merge-laughs.yaml",
                format!("x:\n{}  <<: *a8\n", laughs("  ")),
            ),
            values,
        ),
        // The scanner's own flow limit (which looks ahead) answers first.
        (
            write("flow.yaml", format!("x: {}", "[".repeat(300))),
            "line 1, column 259: recursion limit exceeded",
        ),
        (
            write("flow-65.yaml", format!("x: {}", "[".repeat(65))),
            deep,
        ),
        (
            write(
                "maps.yaml",
                (0..3000)
                    .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                    .collect(),
            ),
            deep,
        ),
        (
            write(
                "many.yaml",
                (0..300_000).map(|i| format!("x_{i}: 1\n")).collect(),
            ),
            values,
        ),
        (
            sparse("huge-scalar.yaml", 200 << 20),
            "209715200 bytes, more than the 16 MiB",
        ),
    ];
    for (file, want) in &yaml_cases {
        let run = under_limits(&["validate", file.to_str().unwrap()]);
        assert_refused(&run, file, want);
    }
    let huge = sparse("huge", 2 << 30);
    let over_1g = "2147483648 bytes, more than the 1024 MiB this file may have";
    let target = [
        "--endpoint",
        "http://127.0.0.1:9/v1/completions",
        "--model",
        "m",
    ];
    let cases: [(Vec<&str>, &str); 3] = [
        (vec!["bench", "--tokenizer"], over_1g),
        (
            vec!["serve", "--listen", "127.0.0.1:0", "--answers"],
            over_1g,
        ),
        (
            vec!["bench", "--profile"],
            "2147483648 bytes, more than the 16 MiB",
        ),
    ];
    for (mut args, want) in cases {
        args.push(huge.to_str().unwrap());
        if args[0] == "bench" {
            args.extend(target);
        }
        assert_refused(&under_limits(&args), &huge, want);
    }
    let zero = std::path::Path::new("/dev/zero");
    let endless = "longer than the 16 MiB this file may have";
    let cases: [&[&str]; 2] = [
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--tls-cert",
            "/dev/zero",
            "--tls-key",
            "/dev/zero",
        ],
        &[
            "probe",
            "--endpoint",
            "https://127.0.0.1:9/v1/completions",
            "--ca-cert",
            "/dev/zero",
        ],
    ];
    for args in cases {
        assert_refused(&under_limits(args), zero, endless);
    }
}

// Corrupted shards: `llmload merge` on two real shards, one of them edited
// as a damaged or hostile file would be. Each merge runs under a 1 GiB
// address-space cap and a deadline: a field that sizes an allocation is
// refused (exit 2, naming the file and the field) before anything is
// allocated by it, and counts that contradict themselves leave the shard
// out and make the merged run incomplete (exit 1, naming the shard).

/// The merge's address-space cap, MiB: a merge of two shards uses tens.
pub(crate) const MERGE_CAP_MIB: u64 = 1024;

/// `llmload merge --quiet ROOT --out ROOT/merged`, capped, stated to end
/// within `bound` and without a panic or an abort.
pub(crate) fn merge_capped(root: &std::path::Path, bound: Duration) -> Capped {
    let out = root.join("merged");
    let args = [
        "merge".as_ref(),
        "--quiet".as_ref(),
        root.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    let run = capped(&args, MERGE_CAP_MIB, bound + Duration::from_secs(10));
    assert!(run.code.is_some(), "killed by a signal: {}", run.stderr);
    assert_ne!(run.code, Some(101), "panic: {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(
        run.elapsed < bound,
        "took {:?}, over {bound:?}: {}",
        run.elapsed,
        run.stderr
    );
    run
}

/// A merge refused: exit 2, the file and `field` named.
pub(crate) fn assert_merge_refused(run: &Capped, shard: u32, field: &str) {
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let file = format!("shard-{shard}/summary.json");
    assert!(
        run.stderr.contains(&file) && run.stderr.contains(field),
        "{file}, {field}: {}",
        run.stderr
    );
}

/// A merge done but incomplete: exit 1, and the merged summary says which
/// shard was left out and why (`why` in its reason).
pub(crate) fn assert_merge_left_out(root: &std::path::Path, run: &Capped, shard: u32, why: &str) {
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let s: Value = serde_json::from_str(&read(&root.join("merged/summary.json"))).unwrap();
    assert_eq!(s["complete"], false);
    let reasons = s["incomplete_reasons"].to_string();
    assert!(
        reasons.contains(&format!("shard {shard} of 2 left out"))
            && reasons.contains("inconsistent")
            && reasons.contains(why),
        "{why}: {reasons}"
    );
    assert!(
        !s["merged"]["merged"]
            .as_array()
            .unwrap()
            .contains(&shard.into()),
        "{}",
        s["merged"]
    );
}

/// An HdrHistogram V2 text (base64) whose header declares `declared`
/// payload bytes, compressed, with the bytes of `payload` actually there.
pub(crate) fn hdr_text(low: u64, high: u64, digits: u32, declared: u32, payload: u64) -> String {
    use base64::Engine as _;
    use std::io::Write as _;
    let mut plain = Vec::new();
    plain.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    plain.extend_from_slice(&declared.to_be_bytes());
    plain.extend_from_slice(&0u32.to_be_bytes());
    plain.extend_from_slice(&digits.to_be_bytes());
    plain.extend_from_slice(&low.to_be_bytes());
    plain.extend_from_slice(&high.to_be_bytes());
    plain.extend_from_slice(&1f64.to_be_bytes());
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&plain).unwrap();
    let zeros = vec![0u8; 1 << 20];
    let mut left = payload;
    while left > 0 {
        let n = left.min(zeros.len() as u64) as usize;
        z.write_all(&zeros[..n]).unwrap();
        left -= n as u64;
    }
    let packed = z.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&(packed.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&packed);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An edit to a summary.json.
pub(crate) type Edit = Box<dyn Fn(&mut Value)>;

/// One case: two fresh shards, `edit` applied to shard 2's summary (and
/// to shard 1's too when `both`), merged under the cap.
pub(crate) fn merge_case(
    tag: &str,
    both: bool,
    edit: impl Fn(&mut Value),
) -> (std::path::PathBuf, Capped) {
    let root = two_shards(tag);
    edit_summary(&root.join("shard-2"), &edit);
    if both {
        edit_summary(&root.join("shard-1"), &edit);
    }
    let run = merge_capped(&root, Duration::from_secs(10));
    (root, run)
}

#[test]
fn corrupted_shards_sizes_are_refused_by_file_and_field() {
    let bucket = |v: &mut Value, interval: u64| {
        v["state"]["timeline"]["slices"][0]["buckets"][0]["interval"] = interval.into();
    };
    let cases: Vec<(&str, bool, Edit, &str)> = vec![
        (
            "interval-4e9",
            false,
            Box::new(move |v| bucket(v, 4_000_000_000)),
            ".interval 4000000000",
        ),
        (
            "interval-5e7",
            false,
            Box::new(move |v| bucket(v, 50_000_000)),
            ".interval 50000000",
        ),
        (
            "interval-max",
            false,
            Box::new(move |v| bucket(v, u64::from(u32::MAX))),
            ".interval 4294967295",
        ),
        (
            "interval-ns-1",
            false,
            Box::new(|v| {
                v["state"]["timeline"]["interval_ns"] = 1.into();
                let w = v["state"]["started_wall_ns"].as_u64().unwrap();
                v["state"]["started_wall_ns"] = (w + 3_000_000_000).into();
            }),
            "state.timeline.interval_ns 1",
        ),
        (
            "wall-3-years",
            false,
            Box::new(|v| {
                let w = v["state"]["started_wall_ns"].as_u64().unwrap();
                v["state"]["started_wall_ns"] = (w + 100_000_000_000_000_000).into();
            }),
            "state.started_wall_ns",
        ),
        (
            "mono-max",
            false,
            Box::new(|v| {
                v["state"]["started_wall_ns"] = 0.into();
                v["state"]["run_start_ns"] = u64::MAX.into();
            }),
            "state.run_start_ns 18446744073709551615",
        ),
        (
            "count-1e8",
            true,
            Box::new(|v| v["shard"]["count"] = 100_000_000.into()),
            "shard.count 100000000",
        ),
        (
            "count-u32",
            true,
            Box::new(|v| v["shard"]["count"] = u32::MAX.into()),
            "shard.count 4294967295",
        ),
        (
            "hdr-declared-2g",
            false,
            Box::new(|v| {
                v["state"]["total"]["e2e"]["hist"] =
                    hdr_text(1, 3_600_000_000_000, 3, 0x7fff_ffff, 0).into();
            }),
            "total.e2e: the encoding declares 2147483647 payload bytes but holds 0",
        ),
        (
            "hdr-bounds",
            false,
            Box::new(|v| {
                v["state"]["total"]["e2e"]["hist"] = hdr_text(1, 1 << 62, 5, 0, 0).into();
            }),
            "total.e2e: histogram bounds 1..4611686018427387904 at 5 digits",
        ),
        (
            "hdr-bomb",
            false,
            Box::new(|v| {
                v["state"]["total"]["e2e"]["hist"] =
                    hdr_text(1, 3_600_000_000_000, 3, 1 << 30, 1 << 30).into();
            }),
            // The text alone is past what the bounds allow (its inflating
            // stops at the same bound: metrics::hdr's tests).
            "total.e2e: ",
        ),
        (
            "bucket-hists-2g",
            false,
            Box::new(|v| {
                let text = hdr_text(1_000, 3_600_000_000_000, 2, 0x7fff_ffff, 0);
                for b in v["state"]["timeline"]["slices"][0]["buckets"]
                    .as_array_mut()
                    .unwrap()
                {
                    b["ttft_hist"] = text.clone().into();
                    b["e2e_hist"] = text.clone().into();
                }
            }),
            "ttft_hist: the encoding declares 2147483647",
        ),
        (
            "bucket-stage",
            false,
            Box::new(|v| {
                v["state"]["timeline"]["slices"][0]["buckets"][0]["stage"] = 65_535.into();
            }),
            ".stage 65535",
        ),
    ];
    for (tag, both, edit, field) in cases {
        let (_root, run) = merge_case(tag, both, edit);
        assert_merge_refused(&run, if both { 1 } else { 2 }, field);
    }
}

#[test]
fn corrupted_shards_inconsistent_counts_leave_the_shard_out() {
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "sum-u128",
            Box::new(|v| v["state"]["total"]["e2e"]["sum"] = u128::MAX.to_string().into()),
            "total.e2e.sum 340282366920938463463374607431768211455",
        ),
        (
            "completed-u64",
            Box::new(|v| v["state"]["total"]["completed"] = u64::MAX.into()),
            "total.completed 18446744073709551615",
        ),
        (
            "issued-0",
            Box::new(|v| v["state"]["total"]["issued"] = 0.into()),
            "total: ",
        ),
        (
            "in-flight-2^63",
            Box::new(|v| {
                for n in v["state"]["timeline"]["in_flight"].as_array_mut().unwrap() {
                    *n = (1u64 << 63).into();
                }
            }),
            "timeline.in_flight[0] 9223372036854775808",
        ),
        (
            "connect-descending",
            Box::new(|v| {
                v["state"]["connections"]["tcp_connect"] = serde_json::json!({
                    "buckets": [[5, 1], [3, 1]], "count": 2, "sum_ns": "8", "min_ns": 3, "max_ns": 5
                });
            }),
            "connections.tcp_connect.buckets",
        ),
    ];
    for (tag, edit, why) in cases {
        let (root, run) = merge_case(tag, false, edit);
        assert_merge_left_out(&root, &run, 2, why);
    }
}

/// 300,000 connect-time buckets in each shard, interleaved: one pass over
/// both, not an insertion per bucket.
#[test]
fn corrupted_shards_many_connect_buckets_merge_in_one_pass() {
    let root = two_shards("connect-buckets");
    for i in 1..=2u64 {
        edit_summary(&root.join(format!("shard-{i}")), |v| {
            let t = &mut v["state"]["connections"]["tcp_connect"];
            let values: Vec<u64> = (0..300_000u64).map(|k| 1_000 + 2 * k + i).collect();
            t["buckets"] = values.iter().map(|&x| serde_json::json!([x, 1])).collect();
            t["count"] = 300_000.into();
            t["sum_ns"] = values
                .iter()
                .map(|&x| u128::from(x))
                .sum::<u128>()
                .to_string()
                .into();
            t["min_ns"] = values[0].into();
            t["max_ns"] = values[values.len() - 1].into();
        });
    }
    let run = merge_capped(&root, Duration::from_secs(10));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let s: Value = serde_json::from_str(&read(&root.join("merged/summary.json"))).unwrap();
    assert_eq!(s["state"]["connections"]["tcp_connect"]["count"], 600_000);
    assert_eq!(
        s["state"]["connections"]["tcp_connect"]["buckets"]
            .as_array()
            .unwrap()
            .len(),
        600_000
    );
}

/// Ten links back to a shard's own directory inside it, and a `self -> .`
/// at the top: each directory is searched once.
#[test]
fn corrupted_shards_links_back_into_the_tree_are_followed_once() {
    let root = two_shards("links");
    for k in 0..10 {
        std::os::unix::fs::symlink("../shard-1", root.join(format!("shard-1/back-{k}"))).unwrap();
    }
    std::os::unix::fs::symlink(".", root.join("self")).unwrap();
    let run = merge_capped(&root, Duration::from_secs(10));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let s: Value = serde_json::from_str(&read(&root.join("merged/summary.json"))).unwrap();
    assert_eq!(s["merged"]["merged"], serde_json::json!([1, 2]));
    assert_eq!(s["complete"], true);
}

// ---------------------------------------------------------------------------
// Hostile columnar datasets: each refused naming the file, in bounded
// memory and time (`under_limits`), never a panic or an allocation of what
// the file declares.

/// `bench ARGS` against a port nothing listens on, under `under_limits`:
/// a dataset is read (and refused) before any request.
pub(crate) fn bench_nowhere(args: &[&str]) -> Run {
    let mut all = vec![
        "bench",
        "--endpoint",
        "http://127.0.0.1:9/v1/chat/completions",
        "--model",
        "m",
    ];
    all.extend_from_slice(args);
    under_limits(&all)
}

#[cfg(feature = "columnar")]
fn bench_dataset(dataset: &str) -> Run {
    bench_nowhere(&["--requests", "1", "--dataset", dataset])
}

/// The summary of `bench --requests 1` on `dataset` against `serve`, under
/// `under_limits`; it must succeed.
pub(crate) fn one_request_on(dataset: &Path, dir: &Path) -> Value {
    let server = Server::start(&["--ttft", "0", "--tpot", "0", "--output-tokens", "2"]);
    let out = dir.join("out");
    let run = under_limits(&[
        "bench",
        "--endpoint",
        &server.url(),
        "--model",
        "m",
        "--requests",
        "1",
        "--dataset",
        dataset.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    serde_json::from_str(&read(&out.join("summary.json"))).unwrap()
}

#[cfg(feature = "columnar")]
#[test]
fn corrupt_columnar_files_are_refused_in_bounded_memory() {
    use crate::util::columnar::*;
    let dir = temp_dir("hostile-columnar");
    let footer = dir.join("footer.parquet");
    negative_offset_parquet(&footer);
    let run = bench_dataset(footer.to_str().unwrap());
    assert_refused(
        &run,
        &footer,
        "column 'prompt', row group 0: the file's footer puts the column's data at offset -1",
    );
    // 72 bytes declaring 2 GiB of metadata.
    let mut b = vec![0xff; 4];
    b.extend_from_slice(&0x7fff_fff0_i32.to_le_bytes());
    b.extend_from_slice(&[0; 64]);
    let meta = dir.join("meta");
    let file = hf_dir(&meta, &b);
    let run = bench_dataset(&format!("{},format=hf", meta.display()));
    assert_refused(
        &run,
        &file,
        "at byte 0: a message declares 2147483632 bytes of metadata, with 64 bytes left",
    );
    // A valid stream whose batch declares a body of 2^40 bytes.
    let stream = arrow_stream(&prompts((0..100).map(|i| format!("hello world {i}"))));
    let body = dir.join("body");
    let file = hf_dir(&body, &with_body_length(&stream, 1 << 40));
    let run = bench_dataset(&format!("{},format=hf", body.display()));
    assert_refused(
        &run,
        &file,
        "a message declares a body of 1099511627776 bytes",
    );
    // One 65 MiB cell in a 7 KB zstd file: refused from its page header.
    let big = dir.join("big.parquet");
    parquet(&big, &prompts(["x".repeat(65 << 20)]));
    assert!(std::fs::metadata(&big).unwrap().len() < 1 << 20);
    let run = bench_dataset(big.to_str().unwrap());
    assert_refused(
        &run,
        &big,
        "column 'prompt': the page from row 0 holds 68157444 bytes uncompressed, over the \
         67108864 bytes one cell may hold",
    );
}

#[cfg(feature = "columnar")]
#[test]
fn a_million_rows_with_one_request_reads_one_row() {
    use crate::util::columnar::*;
    let dir = temp_dir("million-rows");
    let file = dir.join("million.parquet");
    parquet(&file, &prompts((0..1_000_000).map(|i| format!("w{i}"))));
    let s = one_request_on(&file, &dir);
    assert_eq!(u(&s["dataset"]["samples"]), 1, "{}", s["dataset"]);
    assert_eq!(u(&s["requests"]["completed"]), 1);
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("read the first 1 row(s) of")
            && notes.contains("1 request(s) in sequential order"),
        "{notes}"
    );
}
