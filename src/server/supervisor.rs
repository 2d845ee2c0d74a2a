//! Worker processes: binding every listening socket in the parent, forking
//! one worker per socket, preparing each child (signals, parent-death
//! signal, descriptors, timer slack, CPU pinning), waiting until all of them
//! report ready, and stopping them by PID. Sockets are bound and listening
//! before `fork()`, so a connection made the moment `spawn` returns queues on
//! a socket that a worker will accept; each child keeps only its own socket,
//! so none is left listening without a process to accept on it.
//!
//! The parent may be multithreaded (the test harness is), so a child runs
//! nothing but this crate's own code between `fork()` and `_exit()`: no
//! stdout, no locks that another thread might have held, no unwinding back
//! into the caller's stack.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::{CpuSet, sched_setaffinity};
use nix::sys::prctl;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, kill, pthread_sigmask, signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid, getppid, pipe2};

use super::ServerConfig;
use super::access::Access;
use super::conn::Settings;
use super::faults::{FaultPlan, FaultRates};
use super::socket;
use super::stats::{CounterBlock, WorkerCounters};
use super::worker::Worker;

/// How long `spawn` waits for every worker to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a worker has to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A child's readiness report: worker index, status (0 = ready), message.
const REPORT_LEN: usize = 256;

/// The running workers and their shared counters.
#[derive(Debug)]
pub struct Workers {
    pids: Vec<i32>,
    reaped: Vec<bool>,
    counters: CounterBlock,
}

/// Why starting the workers failed, worded for the person who ran the command.
fn listen_error(addr: SocketAddr, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::AddrInUse => format!("cannot listen on {addr}: address already in use"),
        io::ErrorKind::AddrNotAvailable => {
            format!("cannot listen on {addr}: no such local address")
        }
        io::ErrorKind::PermissionDenied => {
            format!("cannot listen on {addr}: permission denied (ports below 1024 need privileges)")
        }
        _ => format!("cannot listen on {addr}: {e}"),
    }
}

/// Binds, forks the workers and returns once each has reported ready.
pub fn start(cfg: &ServerConfig) -> Result<(SocketAddr, Workers), String> {
    let (listeners, addr) =
        socket::listeners(cfg.listen, cfg.workers).map_err(|e| listen_error(cfg.listen, &e))?;
    let counters =
        CounterBlock::new(cfg.workers).map_err(|e| format!("cannot map shared counters: {e}"))?;
    let (ready_r, ready_w) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
    let parent = getpid();
    let mut workers = Workers {
        pids: Vec::with_capacity(cfg.workers),
        reaped: Vec::with_capacity(cfg.workers),
        counters,
    };
    for (k, listener) in listeners.iter().enumerate() {
        // SAFETY: the child runs only `child`, which touches nothing another
        // thread of the parent could have left locked (no stdio, no shared
        // locks; glibc's malloc is fork-safe) and leaves through `_exit`
        // without returning into the caller.
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => {
                let e = io::Error::last_os_error();
                workers.terminate();
                return Err(format!("cannot fork worker {k}: {e}"));
            }
            0 => child(
                k,
                listener.as_raw_fd(),
                ready_w.as_raw_fd(),
                parent,
                cfg,
                workers.counters.worker(k),
            ),
            pid => {
                workers.pids.push(pid);
                workers.reaped.push(false);
            }
        }
    }
    // The children own the sockets and the pipe's write end now.
    drop(listeners);
    drop(ready_w);
    if let Err(e) = wait_ready(ready_r, cfg.workers) {
        workers.terminate();
        return Err(e);
    }
    Ok((addr, workers))
}

fn wait_ready(ready: OwnedFd, n: usize) -> Result<(), String> {
    let mut pipe = std::fs::File::from(ready);
    let mut seen = 0;
    let deadline = Instant::now() + READY_TIMEOUT;
    nix::fcntl::fcntl(&pipe, nix::fcntl::FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .map_err(|e| format!("cannot set up the ready pipe: {e}"))?;
    let mut buf = [0u8; REPORT_LEN];
    let mut filled = 0;
    while seen < n {
        match pipe.read(&mut buf[filled..]) {
            Ok(0) => return Err("a worker exited while starting".to_string()),
            Ok(m) => {
                filled += m;
                if filled < REPORT_LEN {
                    continue;
                }
                filled = 0;
                let status = u32::from_le_bytes(buf[4..8].try_into().unwrap_or_default());
                if status != 0 {
                    let k = u32::from_le_bytes(buf[0..4].try_into().unwrap_or_default());
                    let len = (u32::from_le_bytes(buf[8..12].try_into().unwrap_or_default())
                        as usize)
                        .min(REPORT_LEN - 12);
                    let msg = String::from_utf8_lossy(&buf[12..12 + len]);
                    return Err(format!("worker {k} failed to start: {msg}"));
                }
                seen += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    return Err(format!(
                        "only {seen} of {n} workers were ready after {} s",
                        READY_TIMEOUT.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading worker readiness: {e}")),
        }
    }
    Ok(())
}

/// Sends one readiness report; a write to a pipe under `PIPE_BUF` is atomic,
/// so reports from several children never interleave.
fn report(ready: &OwnedFd, k: usize, result: &Result<(), String>) {
    let mut rec = [0u8; REPORT_LEN];
    rec[0..4].copy_from_slice(&(k as u32).to_le_bytes());
    if let Err(msg) = result {
        let bytes = msg.as_bytes();
        let len = bytes.len().min(REPORT_LEN - 12);
        rec[4..8].copy_from_slice(&1u32.to_le_bytes());
        rec[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        rec[12..12 + len].copy_from_slice(&bytes[..len]);
    }
    let _ = nix::unistd::write(ready, &rec);
}

/// The whole life of a worker process.
fn child(
    k: usize,
    listener: RawFd,
    ready: RawFd,
    parent: Pid,
    cfg: &ServerConfig,
    counters: &WorkerCounters,
) -> ! {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // A child inherits every descriptor open in the parent at fork
        // time: the other workers' sockets, and in a multithreaded parent
        // whatever other threads had open (client sockets whose close would
        // never reach their peers while this worker lives).
        close_all_but(&[listener, ready]);
        // SAFETY: both descriptors are open (kept above), and the parent's
        // objects owning them are never dropped in this process, which
        // leaves through `_exit`; so these become their only owners.
        let (listener, ready) = unsafe {
            (
                TcpListener::from_raw_fd(listener),
                OwnedFd::from_raw_fd(ready),
            )
        };
        let mut worker = match prepare(k, listener, parent, cfg, counters) {
            Ok(w) => w,
            Err(msg) => {
                report(&ready, k, &Err(msg));
                return 1;
            }
        };
        report(&ready, k, &Ok(()));
        drop(ready);
        match worker.run() {
            Ok(()) => 0,
            Err(e) => {
                // Straight to the descriptor: the stderr lock may have been
                // held by another thread of the parent at fork time.
                let msg = format!("llmload serve: worker {k}: {e}\n");
                let _ = nix::unistd::write(io::stderr(), msg.as_bytes());
                1
            }
        }
    }));
    let code = outcome.unwrap_or(101);
    // SAFETY: ends the child without running the parent's atexit handlers or
    // flushing stdio buffers copied from the parent.
    unsafe { libc::_exit(code) }
}

/// Process setup in the child, then the worker's event loop objects.
fn prepare<'a>(
    k: usize,
    listener: TcpListener,
    parent: Pid,
    cfg: &ServerConfig,
    counters: &'a WorkerCounters,
) -> Result<Worker<'a>, String> {
    // The parent owns shutdown: in `llmload bench` a Ctrl-C reaches the whole
    // process group, and the embedded server must outlive it until the
    // parent stops it. SIGTERM is blocked so only the signalfd sees it.
    // SAFETY: installing SIG_IGN, no handler code runs.
    unsafe { signal(Signal::SIGINT, SigHandler::SigIgn) }.map_err(|e| e.to_string())?;
    // SAFETY: as above; a peer closing early surfaces as EPIPE, not a signal.
    unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) }.map_err(|e| e.to_string())?;
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&mask), None).map_err(|e| e.to_string())?;

    // Die with the parent; if it is already gone, the signal was missed.
    prctl::set_pdeathsig(Signal::SIGTERM).map_err(|e| format!("PR_SET_PDEATHSIG: {e}"))?;
    if getppid() != parent {
        return Err("the parent exited during start".to_string());
    }

    // Timerfd wake-ups land within a microsecond or so of their deadline
    // instead of within the default 50 µs slack.
    prctl::set_timerslack(1).map_err(|e| format!("PR_SET_TIMERSLACK: {e}"))?;

    // Thousands of concurrent streams need as many descriptors.
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }

    if let Some(first) = cfg.pin {
        let cpu = first + k;
        let mut set = CpuSet::new();
        set.set(cpu).map_err(|e| format!("CPU {cpu}: {e}"))?;
        sched_setaffinity(Pid::from_raw(0), &set)
            .map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }

    let settings = Settings {
        ttft_ns: cfg.ttft.as_nanos().min(u64::MAX as u128) as u64,
        tpot_ns: cfg.tpot.as_nanos().min(u64::MAX as u128) as u64,
        output_tokens: cfg.output_tokens,
        reasoning: cfg.reasoning_tokens,
        ignore_stream: cfg.ignore_stream,
        no_usage: cfg.no_usage,
        worker: k as u32,
        started_unix: crate::clock::wall_ns() / 1_000_000_000,
    };
    let faults = FaultPlan::new(FaultRates {
        error: cfg.error_rate,
        malformed: cfg.malformed_rate,
        reset: cfg.reset_rate,
        inband: cfg.inband_error_rate,
    });
    let access = Access {
        key: cfg.api_key.clone(),
        models: cfg.served_models.clone(),
    };
    Worker::new(listener, settings, faults, access, counters)
        .map_err(|e| format!("event loop: {e}"))
}

/// Closes every descriptor from 3 up except those in `keep`.
fn close_all_but(keep: &[RawFd]) {
    let mut keep: Vec<u32> = keep.iter().map(|&fd| fd as u32).collect();
    keep.sort_unstable();
    let mut lo = 3u32;
    for &fd in &keep {
        if fd > lo {
            close_range(lo, fd - 1);
        }
        lo = lo.max(fd + 1);
    }
    close_range(lo, u32::MAX);
}

fn close_range(lo: u32, hi: u32) {
    // SAFETY: closing descriptors this process does not use any more; the
    // raw syscall also exists where the C library has no wrapper (musl).
    let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) };
    if r == -1 {
        // Kernels before 5.9: close one by one up to the descriptor limit.
        let max = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
        let top = u64::from(hi).min(max.saturating_sub(1));
        for fd in u64::from(lo)..=top {
            // SAFETY: as above, one descriptor at a time.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

impl Workers {
    pub fn pids(&self) -> &[i32] {
        &self.pids
    }

    pub fn counters(&self) -> &CounterBlock {
        &self.counters
    }

    /// Reaps any worker that has exited, without waiting; returns a
    /// description of the first one found.
    pub fn reap_exited(&mut self) -> Option<String> {
        let mut found = None;
        for (k, &pid) in self.pids.iter().enumerate() {
            if self.reaped[k] {
                continue;
            }
            match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => {}
                Ok(status) => {
                    self.reaped[k] = true;
                    found.get_or_insert_with(|| {
                        format!(
                            "worker {k} (pid {pid}) exited unexpectedly: {}",
                            describe(status)
                        )
                    });
                }
                Err(Errno::ECHILD) => self.reaped[k] = true,
                Err(_) => {}
            }
        }
        found
    }

    /// SIGTERM to every live worker, then waits for each (SIGKILL after
    /// `STOP_TIMEOUT`). Safe to call twice.
    pub fn terminate(&mut self) {
        for (k, &pid) in self.pids.iter().enumerate() {
            if !self.reaped[k] {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        for (k, &pid) in self.pids.iter().enumerate() {
            let pid = Pid::from_raw(pid);
            while !self.reaped[k] {
                match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_micros(500));
                    }
                    Ok(WaitStatus::StillAlive) => {
                        let _ = kill(pid, Signal::SIGKILL);
                        let _ = waitpid(pid, None);
                        self.reaped[k] = true;
                    }
                    Err(Errno::EINTR) => {}
                    // Exited, or reaped by someone else (ECHILD).
                    Ok(_) | Err(_) => self.reaped[k] = true,
                }
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.terminate();
    }
}

fn describe(status: WaitStatus) -> String {
    match status {
        WaitStatus::Exited(_, code) => format!("exit status {code}"),
        WaitStatus::Signaled(_, sig, _) => format!("killed by {sig}"),
        other => format!("{other:?}"),
    }
}

/// Writes the foreground server's first line: the bound address.
pub fn print_addr(addr: SocketAddr) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{addr}");
    let _ = out.flush();
}
