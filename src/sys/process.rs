//! Processes: forking a child that never returns into its parent's stack,
//! waiting for it (with its peak memory, from `wait4`) and killing it, what
//! a forked worker sets up for itself
//! (parent-death signal, CPU, timer slack), and the descriptor limit. A child
//! leaves through `_exit` whatever its closure does, panics included, so no
//! destructor of the parent's objects (a server handle that would stop the
//! endpoint under test) runs in it; the price: the child's own are not run.

use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use nix::sched::{CpuSet, sched_setaffinity};
use nix::sys::prctl;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::{ForkResult, Pid, fork, getppid};

use super::cvt;

/// Exit status of a child whose closure panicked: Rust's own for a panicking
/// `main`.
pub const PANIC_STATUS: i32 = 101;

/// Forks. The child runs `f` and leaves through `_exit` with its return
/// value, or with `PANIC_STATUS` after a panic (whose message the panic hook
/// prints as usual); it never returns from this call. The parent gets the
/// child.
///
/// A child of a multithreaded parent inherits the locks other threads held at
/// the fork (stdio's, or one inside a library) still held, and deadlocks if it
/// takes one. Fork before starting threads, or keep `f` to work that takes no
/// lock another thread may hold. (glibc and musl keep their allocators usable
/// in the child.)
pub fn fork_child(f: impl FnOnce() -> i32) -> io::Result<Child> {
    // SAFETY: the child runs only `f` and then `_exit`s (`run_child` never
    // returns or unwinds), so it never returns through the caller's frames and
    // none of the parent's objects is dropped or used in it beyond what `f`
    // touches; memory is copied, not shared. Locks held by the parent's other
    // threads can deadlock the child but not corrupt it; the doc above says
    // so, and each caller states why its child is safe from them.
    match unsafe { fork() }? {
        ForkResult::Parent { child } => Ok(Child {
            pid: child,
            exit: None,
            max_rss_kib: None,
        }),
        ForkResult::Child => run_child(f),
    }
}

/// As `fork_child`, and the child holds no descriptor but stdio and `keep`:
/// every other one it inherited (the parent's other sockets and pipes, and in
/// a multithreaded parent whatever other threads had open, whose closing must
/// reach their peers) is closed before `f` runs, and `f` gets `keep` as its
/// own. The parent keeps its copies.
///
/// `f` must reach descriptors only through its argument: an object it
/// captured that owns another descriptor would find it closed.
pub fn fork_child_keeping<const N: usize>(
    keep: [BorrowedFd<'_>; N],
    f: impl FnOnce([OwnedFd; N]) -> i32,
) -> io::Result<Child> {
    let raw = keep.map(|fd| fd.as_raw_fd());
    fork_child(move || {
        close_all_but(raw);
        // SAFETY: each descriptor is open (kept above); the objects that own
        // it in the parent live in frames this child never returns to, so the
        // handles given to `f` are their only owners here.
        f(raw.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }))
    })
}

/// The child's side of `fork_child`.
fn run_child(f: impl FnOnce() -> i32) -> ! {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(code) => code,
        Err(payload) => {
            // Dropping the payload could panic again, outside the catch.
            std::mem::forget(payload);
            PANIC_STATUS
        }
    };
    // SAFETY: `_exit` ends the process at once: no destructors, no atexit
    // handlers, no flushing of stdio buffers copied from the parent.
    unsafe { libc::_exit(code) }
}

/// Closes every descriptor from 3 up except those in `keep`.
fn close_all_but<const N: usize>(mut keep: [RawFd; N]) {
    keep.sort_unstable();
    let mut lo = 3u32;
    for fd in keep {
        let fd = fd as u32;
        if fd > lo {
            close_range(lo, fd - 1);
        }
        lo = lo.max(fd + 1);
    }
    close_range(lo, u32::MAX);
}

fn close_range(lo: u32, hi: u32) {
    // SAFETY: closes descriptors nothing in this child uses (see
    // `fork_child_keeping`); the raw syscall also exists where the C library
    // has no wrapper (musl).
    if cvt(unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) }).is_err() {
        // Kernels before 5.9: one by one up to the descriptor limit.
        let max = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
        let top = u64::from(hi).min(max.saturating_sub(1)).min(1 << 20);
        for fd in u64::from(lo)..=top {
            // SAFETY: as above, one descriptor at a time.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

/// How a child ended; written `{"status": n}`, `{"signal": n}` or `"lost"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    /// It exited with this status.
    Status(i32),
    /// This signal killed it.
    Signal(i32),
    /// Someone else reaped it, so how it ended is unknown.
    Lost,
}

/// Reads as the end of "worker 3 (pid 123) …".
impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exit::Status(code) => write!(f, "exited with status {code}"),
            Exit::Signal(sig) => write!(f, "was killed by signal {sig}"),
            Exit::Lost => f.write_str("ended (reaped elsewhere)"),
        }
    }
}

/// A forked child process. Like `std::process::Child`, dropping it neither
/// kills nor reaps it: its owner decides, through `try_wait`, `wait`, `kill`
/// or `reap_all`. Once reaped, its exit is remembered and no signal is sent
/// to its PID again (which the kernel may have given to another process).
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    exit: Option<Exit>,
    /// Peak resident set, KiB, as its reaping reported it.
    max_rss_kib: Option<u64>,
}

impl Child {
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }

    /// Whether the child has been reaped (how it ended is known).
    pub fn reaped(&self) -> bool {
        self.exit.is_some()
    }

    /// The child's peak resident set in KiB (`ru_maxrss`), once this handle
    /// has reaped it; `None` before, or when someone else reaped it.
    pub fn max_rss_kib(&self) -> Option<u64> {
        self.max_rss_kib
    }

    /// How the child ended, reaping it if it has; `None` while it runs.
    pub fn try_wait(&mut self) -> io::Result<Option<Exit>> {
        self.wait_with(libc::WNOHANG)
    }

    /// Blocks until the child ends (a signal handler's EINTR does not end
    /// the wait).
    pub fn wait(&mut self) -> io::Result<Exit> {
        loop {
            if let Some(exit) = self.wait_with(0)? {
                return Ok(exit);
            }
        }
    }

    fn wait_with(&mut self, flags: libc::c_int) -> io::Result<Option<Exit>> {
        if let Some(exit) = self.exit {
            return Ok(Some(exit));
        }
        let mut status = 0;
        // SAFETY: `rusage` is plain integers, valid when zeroed.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // libc rather than nix: nix's `WaitStatus` cannot hold a real-time
        // signal and would lose such a child's status after reaping it, and
        // nix has no `wait4`, the one call that reaps and reports the
        // child's own resource use.
        // SAFETY: waits for our own child with valid status and rusage
        // pointers.
        let got = cvt(unsafe { libc::wait4(self.pid.as_raw(), &mut status, flags, &mut usage) });
        let reaped = got.is_ok();
        let exit = match got {
            Ok(0) => return Ok(None),
            Ok(_) if libc::WIFEXITED(status) => Exit::Status(libc::WEXITSTATUS(status)),
            Ok(_) if libc::WIFSIGNALED(status) => Exit::Signal(libc::WTERMSIG(status)),
            // Stopped or continued: not asked for, so not an end.
            Ok(_) => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Exit::Lost,
            Err(e) => return Err(e),
        };
        if reaped {
            // Linux reports ru_maxrss in KiB.
            self.max_rss_kib = Some(usage.ru_maxrss.max(0) as u64);
        }
        self.exit = Some(exit);
        Ok(Some(exit))
    }

    /// Sends `sig`, unless the child has been reaped.
    pub fn signal(&self, sig: Signal) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        kill(self.pid, sig)?;
        Ok(())
    }

    /// SIGKILL, unless the child has been reaped.
    pub fn kill(&self) -> io::Result<()> {
        self.signal(Signal::SIGKILL)
    }
}

/// Waits for every child until `deadline`, then SIGKILLs and reaps those
/// still running. A child that cannot be waited for counts as ended.
pub fn reap_all(children: &mut [Child], deadline: Instant) {
    for child in children {
        loop {
            match child.try_wait() {
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(500));
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
                Ok(Some(_)) | Err(_) => break,
            }
        }
    }
}

/// Has the kernel send `sig` to this process when the thread that forked it
/// exits, then checks that the parent is still `parent` (the process id it
/// had before forking): one that died before the request took effect sends
/// nothing.
pub fn die_with_parent(sig: Signal, parent: u32) -> io::Result<()> {
    prctl::set_pdeathsig(sig)
        .map_err(|e| io::Error::new(io::Error::from(e).kind(), format!("PR_SET_PDEATHSIG: {e}")))?;
    if getppid().as_raw() as u32 != parent {
        return Err(io::Error::other("the parent exited during start"));
    }
    Ok(())
}

/// Names this process: its `comm`, what `ps` and `/proc/<pid>/comm` show,
/// at most 15 bytes (longer names are cut).
pub fn set_name(name: &std::ffi::CStr) -> io::Result<()> {
    prctl::set_name(name)?;
    Ok(())
}

/// Runs this process on `cpu` only.
pub fn pin_to(cpu: usize) -> io::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    sched_setaffinity(Pid::from_raw(0), &set)?;
    Ok(())
}

/// Nanosecond timer slack: timed sleeps and timerfd wake-ups end within a
/// microsecond or so of their deadline instead of within the default 50 µs.
pub fn tight_timer_slack() -> io::Result<()> {
    prctl::set_timerslack(1)?;
    Ok(())
}

/// Puts the calling thread (alone) in the idle scheduling class
/// (`SCHED_IDLE`; where that is refused, nice 19): it runs when the threads
/// beside it leave the CPU, gets only a sliver of it when they do not, and
/// any of them that wakes takes the CPU back at once, so work handed to it
/// never delays theirs.
pub fn lower_thread_priority() -> io::Result<()> {
    let tid = nix::unistd::gettid().as_raw();
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler reads `param` (a valid local) and its
    // integers; on Linux a thread id names that one thread.
    if unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) } == 0 {
        return Ok(());
    }
    // SAFETY: setpriority only reads its three integer arguments; a thread
    // id as `PRIO_PROCESS`'s `who` names that one thread.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Threads of this process, when `/proc` says.
pub fn threads() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

/// Descriptors a worker keeps beside its connections: stdio, its epoll
/// instance and doorbells, and whatever it inherits from the parent (the
/// events file, the built-in endpoint's sockets). Generous, so that a run
/// the check lets through never meets `EMFILE` halfway.
pub const WORKER_OWN_FDS: u64 = 1_000;

/// Raises the soft descriptor limit to the hard limit; returns the new
/// soft limit (0 when it cannot be read).
pub fn raise_fd_limit() -> u64 {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

/// CPUs this process may run on.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_and_signal_are_described() {
        let mut ok = fork_child(|| 7).unwrap();
        assert_eq!(ok.wait().unwrap(), Exit::Status(7));
        assert_eq!(ok.wait().unwrap().to_string(), "exited with status 7");
        ok.kill().unwrap(); // reaped: no signal goes to a reused PID

        let mut sleeper = fork_child(|| {
            std::thread::sleep(Duration::from_secs(30));
            0
        })
        .unwrap();
        assert_eq!(sleeper.try_wait().unwrap(), None);
        sleeper.kill().unwrap();
        let exit = sleeper.wait().unwrap();
        assert_eq!(exit, Exit::Signal(libc::SIGKILL));
        assert_eq!(exit.to_string(), "was killed by signal 9");
    }

    /// The child's exit, or a failure (and a killed child) after `limit`.
    fn wait_within(mut child: Child, limit: Duration) -> Exit {
        reap_all(std::slice::from_mut(&mut child), Instant::now() + limit);
        child.try_wait().unwrap().unwrap()
    }

    #[test]
    fn a_panic_in_the_child_never_unwinds_into_the_caller() {
        /// Dropped in the child only if the panic unwound past `fork_child`
        /// into this test's frame: the child then exits with 42.
        struct Guard(u32);
        impl Drop for Guard {
            fn drop(&mut self) {
                if std::process::id() != self.0 {
                    // SAFETY: leaves the forked test child at once.
                    unsafe { libc::_exit(42) };
                }
            }
        }
        let _guard = Guard(std::process::id());
        let child = fork_child(|| panic!("on purpose, in a forked test child")).unwrap();
        assert_eq!(
            wait_within(child, Duration::from_secs(20)),
            Exit::Status(PANIC_STATUS)
        );
    }

    #[test]
    fn reaping_reports_the_childs_peak_memory() {
        const MIB: usize = 1 << 20;
        let mut small = fork_child(|| 0).unwrap();
        // The child touches 64 MiB of its own before it exits.
        let mut big = fork_child(|| {
            let mut v = vec![0u8; 64 * MIB];
            for i in (0..v.len()).step_by(4096) {
                v[i] = 1;
            }
            i32::from(std::hint::black_box(&v)[MIB])
        })
        .unwrap();
        assert_eq!(big.max_rss_kib(), None);
        assert_eq!(big.wait().unwrap(), Exit::Status(1));
        small.wait().unwrap();
        let (big, small) = (big.max_rss_kib().unwrap(), small.max_rss_kib().unwrap());
        assert!(big >= 64 * 1024, "{big} KiB");
        assert!(big >= small + 60 * 1024, "{big} KiB vs {small} KiB");
    }

    #[test]
    fn a_thread_lowers_its_own_priority_only() {
        // (scheduling policy, nice) from /proc: fields 41 and 19.
        let class = |tid: i32| {
            let p = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
            let rest: Vec<&str> = p[p.rfind(')').unwrap() + 2..].split(' ').collect();
            let field = |n: usize| rest[n - 3].parse::<i32>().unwrap();
            (field(41), field(19))
        };
        let me = nix::unistd::gettid().as_raw();
        let before = class(me);
        let other = std::thread::spawn(move || {
            lower_thread_priority().unwrap();
            class(nix::unistd::gettid().as_raw())
        })
        .join()
        .unwrap();
        assert!(
            other.0 == libc::SCHED_IDLE || other.1 == 19,
            "policy {} nice {}",
            other.0,
            other.1
        );
        assert_eq!(class(me), before);
    }

    #[test]
    fn reap_all_kills_what_outlives_the_deadline() {
        let mut children = vec![
            fork_child(|| 0).unwrap(),
            fork_child(|| {
                std::thread::sleep(Duration::from_secs(30));
                0
            })
            .unwrap(),
        ];
        let t = Instant::now();
        reap_all(&mut children, Instant::now() + Duration::from_millis(200));
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(children[0].try_wait().unwrap(), Some(Exit::Status(0)));
        assert_eq!(
            children[1].try_wait().unwrap(),
            Some(Exit::Signal(libc::SIGKILL))
        );
    }

    #[test]
    fn fd_limit_is_raised_and_read() {
        let limit = raise_fd_limit();
        assert!(limit > 0);
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap().0, limit);
        assert!(available_cpus() >= 1);
    }
}
