//! Shared memory between the parent and its forked workers: one anonymous
//! shared mapping made before `fork()`, single-producer single-consumer rings
//! laid out inside it, and a doorbell (eventfd) that wakes a side only when it
//! said it was about to sleep. Nothing here allocates or makes a syscall per
//! message. With `sys`, the only module allowed `unsafe`, so the layouts that
//! live in shared memory (`run`, `serve`) are defined here too.

#![allow(unsafe_code)]

pub(crate) mod doorbell;
pub mod mapping;
pub mod ring;
pub(crate) mod run;
pub(crate) mod serve;

#[cfg(test)]
pub(crate) mod test_util {
    //! Forking helpers for the tests in this module. A forked child of the
    //! multithreaded test harness may not allocate, lock, print or panic
    //! (another thread may have held the lock at the fork), so it runs only
    //! ring operations and raw syscalls and reports through its exit code.

    use crate::clock::now_ns;
    use crate::sys::process::{self, Exit};
    use std::time::Duration;

    /// A point in CLOCK_MONOTONIC time after which a test gives up; cheap
    /// enough to check in every spin of a wait loop.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Deadline(u64);

    impl Deadline {
        pub(crate) fn after(limit: Duration) -> Self {
            Deadline(now_ns() + limit.as_nanos() as u64)
        }

        pub(crate) fn passed(self) -> bool {
            now_ns() >= self.0
        }

        /// Lets the peer run at once: tests share two cores with each other
        /// and with parallel builds, so even a short spin could starve the
        /// other side.
        pub(crate) fn relax(self) {
            std::thread::yield_now();
        }
    }

    /// A forked child; killed and reaped if dropped before `wait`.
    #[derive(Debug)]
    pub(crate) struct Child(process::Child);

    /// Forks; the child runs `body` and leaves with its return value.
    pub(crate) fn fork_child(body: impl FnOnce() -> i32) -> Child {
        Child(process::fork_child(body).expect("fork"))
    }

    impl Child {
        /// Waits up to `limit`: the child's exit status, or why there is none
        /// (killed by a signal, or overstayed and was killed).
        pub(crate) fn wait(mut self, limit: Duration) -> Result<i32, String> {
            let deadline = Deadline::after(limit);
            loop {
                match self.0.try_wait().expect("waitpid") {
                    Some(Exit::Status(code)) => return Ok(code),
                    Some(other) => return Err(format!("child {other}")),
                    // `Drop` kills and reaps it.
                    None if deadline.passed() => {
                        return Err(format!("child {} overstayed {limit:?}", self.0.pid()));
                    }
                    None => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        }
    }

    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}
