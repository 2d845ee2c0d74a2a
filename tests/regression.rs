//! Bugs fixed, one test each, named for what broke: each test failed before
//! its fix. Kept apart from the topic modules so a regression is never
//! "cleaned up" with the feature tests around it.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

/// A panic in a bench worker unwound out of the worker into the bench
/// command's own code in the child, whose clean-up stopped the built-in
/// endpoint: one worker bug failed every other worker's requests. Now the
/// child leaves at once; its requests are `worker_lost` and the run goes on.
#[test]
fn a_panicking_worker_does_not_stop_the_builtin_endpoint() {
    let out = temp_dir("worker-panic");
    let child = Command::new(bin())
        .args(["bench", "--workers", "2", "--concurrency", "8"])
        .args(["--duration", "2s", "--warmup", "0s", "--max-tokens", "16"])
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        // Worker 0 panics when it takes its fifth request.
        .env("LLMLOAD_TEST_WORKER_PANIC", "0:4")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload bench");
    let run = wait_run(child, out, Duration::from_secs(60));
    assert!(
        run.stderr.contains("worker 0 panics on purpose"),
        "the switch did not fire:\n{}",
        run.stderr
    );
    let s = run.summary();
    assert_eq!(s["complete"], false, "{s}");
    let reasons = s["incomplete_reasons"].to_string();
    assert!(
        reasons.contains("worker 0") && reasons.contains("exited with status 101"),
        "{reasons}"
    );
    let requests = &s["requests"];
    assert_accounted(requests);
    // Worker 0's requests in flight are lost, and nothing else failed: the
    // endpoint never refused or dropped worker 1.
    let lost = u(&requests["errors"]["worker_lost"]);
    assert!((1..=8).contains(&lost), "{requests}");
    assert_eq!(u(&requests["failed"]), lost, "{requests}");
    // At 20 ms to the first token and 2 ms per token, at most 8 requests
    // finished before the panic; worker 1 kept going for the rest of the run.
    let completed = u(&requests["completed"]);
    assert!(completed > 50, "completed {completed}");
    let served = u(&s["builtin_endpoint"]["completed"]);
    assert!(
        served >= completed,
        "served {served}, completed {completed}"
    );
    run.assert_success();
}
