//! Crashes and hostile surroundings: a bench worker SIGKILLed mid-run (closed
//! and open loop), a worker that scribbles on its completion ring, the bench
//! parent SIGKILLed, a closed stdout and stderr, and results that cannot be
//! written. Each run is bounded in time and ends with a summary that says
//! what happened, and the exit status says it too.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The bench's engine workers (named `llmload-worker`), once `n` are up.
pub(crate) fn workers_of(bench: &Child, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found: Vec<i32> = children(bench.id() as i32)
            .into_iter()
            .filter(|&p| alive(p) && comm(p) == "llmload-worker")
            .collect();
        if found.len() == n {
            return found;
        }
        assert!(Instant::now() < deadline, "workers: {found:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `llmload bench ARGS --out <fresh dir>` with live lines every 100 ms
/// (not `--quiet`, which silences them too).
fn bench_live(args: &[&str]) -> Llmload {
    llmload(&["bench"])
        .args(args)
        .args(["--live-interval", "100ms"])
        .fresh_out("crash")
}

/// The in-flight counts of every live line.
fn live_inflight(stderr: &str) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|l| l.split("in-flight").nth(1))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

/// Peak memory of each worker, read back from the summary: one per worker,
/// each that of a live process (above 1 MiB) and bounded (below 1 GiB).
fn assert_worker_rss(s: &serde_json::Value, workers: usize) {
    let rss = s["generator"]["worker_max_rss_kib"].as_array().unwrap();
    assert_eq!(rss.len(), workers, "{rss:?}");
    for kib in rss {
        let kib = u(kib);
        assert!((1024..1024 * 1024).contains(&kib), "{rss:?}");
    }
}

/// Kills one of two workers after 1 s of a run, returns the run.
fn kill_a_worker(server: &Server, load: &[&str]) -> Run {
    let url = server.url();
    let mut args = vec!["--endpoint", &url, "--model", "m", "--workers", "2"];
    args.extend_from_slice(&["--duration", "3s", "--warmup", "0s"]);
    args.extend_from_slice(&["--max-tokens", "8"]);
    args.extend_from_slice(load);
    let (child, out) = bench_live(&args).spawn();
    let workers = workers_of(&child, 2);
    std::thread::sleep(Duration::from_millis(1000));
    sigkill(workers[0]);
    wait_run(child, out, Duration::from_secs(60))
}

fn assert_lost_a_worker(run: &Run, s: &serde_json::Value) {
    assert_eq!(run.status.code(), Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("the run is incomplete"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(s["complete"], false);
    assert_eq!(s["interrupted"], false);
    let reasons = s["incomplete_reasons"].to_string();
    assert!(reasons.contains("killed by signal 9"), "{reasons}");
    let r = &s["requests"];
    assert_accounted(r);
    let lost = u(&r["errors"]["worker_lost"]);
    assert!(lost > 0, "{r}");
    // Nothing else failed: the other worker went on as before.
    assert_eq!(u(&r["failed"]), lost, "{r}");
    assert_worker_rss(s, 2);
}

#[test]
fn a_killed_worker_in_a_closed_loop_loses_only_its_own_requests() {
    let server = Server::start(&["--ttft", "100ms", "--tpot", "1ms"]);
    let run = kill_a_worker(&server, &["--concurrency", "8"]);
    let s = run.summary();
    assert_lost_a_worker(&run, &s);
    // Worker 0 held about half of the 8.
    let lost = u(&s["requests"]["errors"]["worker_lost"]);
    assert!(lost <= 8, "{lost}");
    // The survivor's requests stayed counted: never more than 8 in flight,
    // before or after the kill.
    assert_eq!(u(&s["generator"]["max_inflight"]), 8, "{}", s["generator"]);
    let live = live_inflight(&run.stderr);
    assert!(live.len() >= 10, "{}", run.stderr);
    assert!(live.iter().all(|&n| n <= 8), "{live:?}");
    // And the loop kept all 8 busy: about 3 s × 8 / 110 ms.
    assert!(u(&s["requests"]["completed"]) > 100, "{}", s["requests"]);
}

#[test]
fn a_killed_worker_in_an_open_loop_loses_only_its_own_requests() {
    let server = Server::start(&["--ttft", "200ms", "--tpot", "1ms"]);
    let run = kill_a_worker(&server, &["--rate", "50", "--arrival", "uniform"]);
    let s = run.summary();
    assert_lost_a_worker(&run, &s);
    // 50/s for 3 s keeps about 10 in flight; the schedule went on.
    let lost = u(&s["requests"]["errors"]["worker_lost"]);
    assert!(lost <= 15, "{lost}");
    let issued = u(&s["requests"]["issued"]);
    assert!((140..=160).contains(&issued), "issued {issued}");
    assert!(
        u(&s["generator"]["max_inflight"]) <= 20,
        "{}",
        s["generator"]
    );
}

#[test]
fn a_corrupt_completion_record_stops_its_worker_not_the_run() {
    let (child, out) = bench_live(&[
        "--workers",
        "2",
        "--concurrency",
        "8",
        "--duration",
        "2s",
        "--max-tokens",
        "16",
    ])
    // Worker 0 scribbles on its ring when it takes its fifth request.
    .env("LLMLOAD_TEST_CORRUPT_RECORD", "0:4")
    .spawn();
    let run = wait_run(child, out, Duration::from_secs(60));
    assert_eq!(run.status.code(), Some(3), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["complete"], false);
    assert_eq!(u(&s["generator"]["corrupt_records"]), 1);
    let reasons = s["incomplete_reasons"].to_string();
    assert!(
        reasons.contains("worker 0") && reasons.contains("could not be read"),
        "{reasons}"
    );
    let r = &s["requests"];
    assert_accounted(r);
    // Worker 1 carried the run.
    assert!(u(&r["completed"]) > 50, "{r}");
    assert_eq!(u(&r["failed"]), u(&r["errors"]["worker_lost"]), "{r}");
    assert!(u(&s["generator"]["max_inflight"]) <= 8);
    assert_worker_rss(&s, 2);
}

#[test]
fn a_killed_bench_leaves_no_worker_or_builtin_server_behind() {
    // No --endpoint: the built-in endpoint's workers are children too.
    let (mut child, _out) = bench_live(&["--workers", "2", "--duration", "60s"]).spawn();
    let workers = workers_of(&child, 2);
    let all: Vec<i32> = children(child.id() as i32)
        .into_iter()
        .filter(|&p| alive(p))
        .collect();
    let servers: Vec<i32> = all
        .iter()
        .copied()
        .filter(|p| !workers.contains(p))
        .collect();
    assert!(!servers.is_empty(), "no built-in endpoint among {all:?}");
    std::thread::sleep(Duration::from_millis(500));
    sigkill(child.id() as i32);
    let killed = Instant::now();
    child.wait().unwrap();
    // Zombies (waiting for init to reap them) count as gone.
    loop {
        let left: Vec<i32> = all.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(1),
            "still alive 1 s after the parent died: {:?}",
            left.iter().map(|&p| (p, comm(p))).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn closed_stdout_and_stderr_neither_panic_nor_change_the_status() {
    let out = temp_dir("closed-stdout");
    let mut child = Command::new(bin())
        .args(["bench", "--requests", "20", "--concurrency", "2"])
        .args(["--live-interval", "50ms"])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `llmload bench 2>&1 | head -0`: both pipes closed before a line is read.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "bench did not finish");
        std::thread::sleep(Duration::from_millis(10));
    };
    // A panic would exit 101.
    assert_eq!(status.code(), Some(0));
    let s: serde_json::Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(s["complete"], true);
    assert_eq!(u(&s["requests"]["completed"]), 20);

    // `llmload bench --help | head -1`.
    let mut help = Command::new(bin())
        .args(["bench", "--help"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(help.stdout.take());
    let run = wait_run_without_stdout(help);
    assert_eq!(run.0.code(), Some(0), "{}", run.1);
}

/// Waits for a child whose stdout was already closed; its status and stderr.
fn wait_run_without_stdout(mut child: Child) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (child.wait().unwrap(), err)
}

#[test]
fn results_that_cannot_be_written_still_leave_the_printed_report() {
    for quiet in [false, true] {
        let out = temp_dir("unwritable");
        // A directory where summary.json goes: the rename over it fails.
        std::fs::create_dir_all(out.join("summary.json").join("keep")).unwrap();
        let mut cmd = Command::new(bin());
        cmd.args(["bench", "--requests", "10", "--concurrency", "2"])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if quiet {
            cmd.arg("--quiet");
        }
        let run = wait_run(cmd.spawn().unwrap(), out, Duration::from_secs(60));
        assert_eq!(run.status.code(), Some(4), "{}", run.stderr);
        let printed = if quiet { &run.stderr } else { &run.stdout };
        assert!(
            printed.contains("generator health"),
            "quiet {quiet}: {printed}"
        );
        assert!(printed.contains("completed"), "{printed}");
        assert!(
            run.stderr.contains("could not write") && run.stderr.contains("summary.json"),
            "{}",
            run.stderr
        );
        // The other files were written all the same.
        for name in ["report.txt", "report.csv", "metrics.prom", "events.jsonl"] {
            assert!(run.out.join(name).is_file(), "{name}");
        }
        assert!(read(&run.out.join("report.txt")).contains("generator health"));
    }
}
