//! Ctrl-C and SIGTERM: stop issuing, drain, write everything, exit 130.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

fn interrupted_run(sig: i32, drain: &str, server_args: &[&str]) -> (Run, serde_json::Value) {
    let server = Server::start(server_args);
    let out = temp_dir("sigint");
    let child = Command::new(bin())
        .args([
            "bench",
            "--endpoint",
            &server.url(),
            "--model",
            "m",
            "--duration",
            "60s",
            "--concurrency",
            "16",
            "--quiet",
            "--drain-timeout",
            drain,
        ])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, sig);
    let run = wait_run(child, out, Duration::from_secs(30));
    let s = run.summary();
    (run, s)
}

#[test]
fn sigint_mid_run_writes_an_interrupted_summary() {
    let (run, s) = interrupted_run(libc::SIGINT, "10s", &["--ttft", "5ms", "--tpot", "1ms"]);
    assert_eq!(run.status.code(), Some(130), "{}", run.stderr);
    assert_eq!(s["interrupted"], true);
    assert_eq!(s["complete"], false);
    assert_accounted(&s["requests"]);
    assert!(u(&s["requests"]["completed"]) > 0);
    // In-flight requests finished within the drain: none aborted.
    assert!(
        s["requests"]["errors"].get("aborted").is_none(),
        "{}",
        s["requests"]
    );
    assert!(run.out.join("report.txt").exists());
    assert!(run.elapsed < Duration::from_secs(10));
}

#[test]
fn sigterm_with_short_drain_aborts_in_flight() {
    // Streams take 10 s; the 200 ms drain cannot wait for them.
    let (run, s) = interrupted_run(libc::SIGTERM, "200ms", &["--ttft", "10s"]);
    assert_eq!(run.status.code(), Some(130), "{}", run.stderr);
    assert_eq!(s["interrupted"], true);
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["errors"]["aborted"]), 16);
    assert!(
        run.elapsed < Duration::from_secs(6),
        "took {:?}",
        run.elapsed
    );
}
