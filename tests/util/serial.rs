//! One integration test at a time, while the unit tests run in parallel.
//!
//! These tests start servers and benches and check their timing on a
//! 2-core machine, so two of them must not overlap; the unit tests are
//! in-process and short, and gain from every core. libtest takes one
//! `--test-threads` for every test binary of a `cargo test`, so this
//! binary keeps its own order instead: the first helper of a test that
//! starts a process or makes a directory for one (`bin`, `temp_dir`, the
//! `serve` module's fixture) takes a process-wide lock, and the test's
//! thread holds it until the test ends (libtest runs each test on a thread
//! of its own). A test that starts nothing, pure computation, may run
//! beside another.

use std::cell::RefCell;
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

static LOCK: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread's hold on `LOCK`, released when the thread ends.
    static HELD: RefCell<Option<MutexGuard<'static, ()>>> = const { RefCell::new(None) };
}

/// Longer than any test and the epoll pass together: past it the wait is
/// a deadlock (a test's helper thread, not the test's own, asking for the
/// lock the test holds), and failing says so where hanging would not.
const PATIENCE: Duration = Duration::from_secs(30 * 60);

/// Waits until no other test holds the lock, then holds it for the rest of
/// this test; at once if this test holds it already.
pub(crate) fn serial() {
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if held.is_some() {
            return;
        }
        let asked = Instant::now();
        let guard = loop {
            match LOCK.try_lock() {
                Ok(guard) => break guard,
                // A test that failed holding it is over all the same.
                Err(TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    assert!(
                        asked.elapsed() < PATIENCE,
                        "waited {PATIENCE:?} for the integration tests' lock: a helper thread \
                         may not start processes; the test's own thread must"
                    );
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        };
        *held = Some(guard);
    });
}
