//! Shared memory between the parent and its forked workers: one anonymous
//! shared mapping made before `fork()`, single-producer single-consumer rings
//! laid out inside it, and a doorbell (eventfd) that wakes a side only when it
//! said it was about to sleep. Nothing here allocates or makes a syscall per
//! message; this is one of the few modules allowed `unsafe`.

pub mod doorbell;
pub mod mapping;
pub mod ring;

/// Forking helpers for the tests in this module. A forked child of the
/// multithreaded test harness may not allocate, lock, print or panic (another
/// thread may have held the allocator's lock at the fork), so it runs only
/// ring operations and raw syscalls and reports through its exit code.
#[cfg(test)]
pub(crate) mod test_util {
    use crate::clock::now_ns;
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

        /// Lets the peer run: tests share two cores with each other and with
        /// parallel builds, so a bare spin could starve the other side.
        pub(crate) fn relax(self) {
            // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
            unsafe { libc::sched_yield() };
        }
    }

    /// A forked child; killed and reaped if dropped before `wait`.
    #[derive(Debug)]
    pub(crate) struct Child {
        pid: libc::pid_t,
    }

    /// Forks; the child runs `body` and leaves with its return value through
    /// `_exit`, running no destructors and no unwinding.
    pub(crate) fn fork_child(body: impl FnOnce() -> i32) -> Child {
        // SAFETY: the child runs only `body`, which callers keep to
        // async-signal-safe work (see the module docs), then `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let code = body();
            // SAFETY: leaves the child at once, skipping the parent's
            // destructors and atexit handlers.
            unsafe { libc::_exit(code) };
        }
        Child { pid }
    }

    impl Child {
        /// Waits up to `limit`: the child's exit code, or why there is none
        /// (killed by a signal, or overstayed and was killed).
        pub(crate) fn wait(self, limit: Duration) -> Result<i32, String> {
            let deadline = now_ns() + limit.as_nanos() as u64;
            let mut status = 0;
            loop {
                // SAFETY: waits for our own child without blocking.
                let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
                if r == self.pid {
                    break;
                }
                assert_eq!(r, 0, "waitpid: {}", std::io::Error::last_os_error());
                if now_ns() >= deadline {
                    return Err(format!("child {} overstayed {limit:?}", self.pid));
                    // `Drop` kills and reaps it.
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            std::mem::forget(self);
            if libc::WIFEXITED(status) {
                Ok(libc::WEXITSTATUS(status))
            } else {
                Err(format!("child ended with wait status {status:#x}"))
            }
        }
    }

    impl Drop for Child {
        fn drop(&mut self) {
            // SAFETY: kills and reaps our own child, which has not been reaped
            // (a reaped child's `Child` is forgotten).
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}
