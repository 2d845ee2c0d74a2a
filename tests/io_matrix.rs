//! The backend matrix: this binary's tests run under the default `--io`
//! (`auto`: io_uring where the kernel offers it), and the one test here
//! runs every other integration test again with `LLMLOAD_IO=epoll`, which
//! `bench` takes as its default backend. One set of tests, two backends.

use std::process::Command;
use std::time::{Duration, Instant};

/// The whole second pass; the suite itself takes a few minutes.
const BOUND: Duration = Duration::from_secs(40 * 60);

#[test]
fn every_integration_test_runs_under_epoll_too() {
    if std::env::var_os("LLMLOAD_IO").is_some() {
        // Already a pass under one chosen backend (this test's own child,
        // or a run that set the variable): nothing to repeat.
        eprintln!("LLMLOAD_IO is set: this pass is the matrix's, not repeated");
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let started = Instant::now();
    let mut child = Command::new(exe)
        .env("LLMLOAD_IO", "epoll")
        // The built-in endpoint's own tests and the browser's page do not
        // depend on the generator's backend.
        .args([
            "--test-threads=1",
            "--skip",
            "io_matrix::",
            "--skip",
            "serve::",
            "--skip",
            "browser::",
        ])
        .spawn()
        .expect("the test binary starts");
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
