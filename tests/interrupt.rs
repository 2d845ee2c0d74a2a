//! Ctrl-C, SIGTERM and SIGHUP: stop issuing, drain, write everything,
//! exit 130.

use std::os::unix::process::CommandExt;
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

#[test]
fn sighup_is_handled_like_sigterm() {
    let (run, s) = interrupted_run(libc::SIGHUP, "10s", &["--ttft", "5ms", "--tpot", "1ms"]);
    assert_eq!(run.status.code(), Some(130), "{}", run.stderr);
    assert_eq!(s["interrupted"], true);
    assert_eq!(s["complete"], false);
    assert!(
        s["incomplete_reasons"][0]
            .as_str()
            .unwrap()
            .contains("interrupted"),
        "{s}"
    );
    assert_accounted(&s["requests"]);
    assert!(u(&s["requests"]["completed"]) > 0);
    assert!(run.out.join("report.txt").exists());
}

/// A closed terminal sends SIGHUP to the whole foreground process group:
/// the workers and the built-in endpoint must ride it out while the parent
/// drains, so the requests in flight still finish.
#[test]
fn sighup_to_the_process_group_drains_cleanly() {
    let out = temp_dir("sighup-group");
    let child = Command::new(bin())
        .args(["bench", "--duration", "60s", "--concurrency", "8"])
        .args(["--workers", "2", "--quiet", "--drain-timeout", "10s"])
        .arg("--out")
        .arg(&out)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGHUP).unwrap();
    let run = wait_run(child, out, Duration::from_secs(30));
    assert_eq!(run.status.code(), Some(130), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["interrupted"], true);
    let r = &s["requests"];
    assert_accounted(r);
    assert!(u(&r["completed"]) > 0, "{r}");
    // Nothing failed: no worker lost, no endpoint gone.
    assert_eq!(u(&r["failed"]), 0, "{r}");
    assert_eq!(s["incomplete_reasons"].as_array().unwrap().len(), 1, "{s}");
}
