//! The backend matrix: this binary's tests run under the default `--io`
//! (`auto`: io_uring where the kernel offers it), and the one test here
//! runs the tests whose outcome goes through the worker's I/O again with
//! `LLMLOAD_IO=epoll`, which `bench` takes as its default backend.
//!
//! What the two backends do differently (engine/worker/backend): open and
//! connect a socket (from a source address too), send (epoll writes the
//! prebuilt bytes, vectored after a further endpoint's own head; io_uring
//! copies them into the connection's buffer), receive (io_uring's provided
//! buffers cut a response elsewhere than epoll's reads), close and cancel
//! (io_uring waits for its in-flight operations and drops stale
//! completions), https (readiness mode under io_uring), and the wait whose
//! return stamps the times. A test is listed below when it drives one of
//! those. The rest do not reach the backend: datasets, profiles, outputs,
//! merge, the MLPerf configs, probe's own client, the built-in endpoint,
//! and `crash::` (what dies is a whole worker or the parent; the survivors
//! run as usual); `uring::` names `--io` in every run, so the variable
//! would change nothing there. A new test that drives a backend-specific
//! path belongs in the list.

use std::process::Command;
use std::time::{Duration, Instant};

/// The modules and tests run again under epoll, each with its reason.
const UNDER_EPOLL: &[(&str, &str)] = &[
    (
        "bench_modes::",
        "every load mode, streamed and not: both send and receive paths",
    ),
    (
        "protocols::",
        "each wire format's responses, cut where each backend's reads cut them",
    ),
    (
        "endpoints::",
        "a further endpoint's own head before the shared bytes; refused connects",
    ),
    (
        "failures::",
        "resets, timeouts, malformed responses, a dead endpoint: the error paths",
    ),
    (
        "faults::",
        "hostile servers: closes, stale connections, retries, stalls",
    ),
    (
        "interrupt::",
        "a drain with requests in flight: the backend's cancel and close",
    ),
    (
        "memory::",
        "an endless stream through each backend's receive buffers",
    ),
    (
        "scale::",
        "source addresses bound in each backend's open; descriptors run out",
    ),
    (
        "timing::",
        "TTFT, TPOT and ITL are stamped where the backend's wait returns",
    ),
    ("tls::", "https runs in readiness mode under io_uring"),
    (
        "regression::a_normal_end_drains_for_at_most_the_drain_timeout",
        "the drain cancels what is in flight",
    ),
    (
        "regression::ttft_timeout_no_longer_fails_non_streamed_responses",
        "a timeout closes the connection through the backend",
    ),
    (
        "regression::a_fully_written_request_is_not_resent_when_its_connection_closes_later",
        "how much of a request the send path counts as written",
    ),
    (
        "regression::a_retried_turn_does_not_repeat_its_user_message",
        "a retried turn goes out again from the connection's buffer",
    ),
    (
        "scenarios::cache_busting_id_is_in_the_first_message_and_the_header",
        "a request with its id written in goes out from the connection's buffer",
    ),
    (
        "scenarios::dataset_conversations_are_grouped_by_id",
        "conversation turns go out from the connection's buffer",
    ),
    (
        "scenarios::sigint_leaves_one_events_line_per_issued_turn",
        "conversation turns in flight when the run is interrupted",
    ),
];

/// Matched as substrings, so `tls::` and `timing::` would take the built-in
/// endpoint's own tests (`serve::tls::`, `serve::timing::`) too.
const SKIP: &[&str] = &["io_matrix::", "serve::"];

/// The whole second pass.
const BOUND: Duration = Duration::from_secs(20 * 60);

#[test]
fn backend_sensitive_tests_run_under_epoll_too() {
    if std::env::var_os("LLMLOAD_IO").is_some() {
        // Already a pass under one chosen backend (this test's own child,
        // or a run that set the variable): nothing to repeat.
        eprintln!("LLMLOAD_IO is set: this pass is the matrix's, not repeated");
        return;
    }
    // The pass runs alone, as every test that starts processes does.
    crate::util::serial();
    let listed = pass(&["--list", "--format", "terse"])
        .output()
        .expect("list");
    assert!(listed.status.success(), "{listed:?}");
    let names = String::from_utf8_lossy(&listed.stdout);
    for (filter, why) in UNDER_EPOLL {
        assert!(
            names.lines().any(|l| l.contains(filter)),
            "no test matches {filter:?} ({why}): renamed?\n{names}"
        );
    }
    let started = Instant::now();
    let mut child = pass(&[]).spawn().expect("the test binary starts");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the epoll pass did not finish within {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        status.success(),
        "some test failed under LLMLOAD_IO=epoll (above)"
    );
}

/// This test binary under `LLMLOAD_IO=epoll`, given `extra` and then the
/// list's filters and skips.
fn pass(extra: &[&str]) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.env("LLMLOAD_IO", "epoll").args(extra);
    cmd.args(UNDER_EPOLL.iter().map(|(filter, _)| filter));
    for skip in SKIP {
        cmd.args(["--skip", skip]);
    }
    cmd
}
