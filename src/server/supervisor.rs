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
//! stdout, no locks that another thread might have held, and (through
//! `sys::process::fork_child_keeping`) no unwinding back into the caller's
//! stack and no descriptor but its own socket and the ready pipe.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::unistd::pipe2;

use super::access::Access;
use super::conn::{MAX_BODY, Settings};
use super::faults::{FaultPlan, FaultRates};
use super::stats::CounterBlock;
use super::worker::{Limits, Worker};
use super::{ServerConfig, Shared};
use crate::sys::process::{self, Child, Exit, fork_child_keeping, reap_all};
use crate::sys::signal::ignore;
use crate::sys::socket;

/// How long `spawn` waits for every worker to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a worker has to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A child's readiness report: worker index, status (0 = ready), message.
const REPORT_LEN: usize = 256;

/// The running workers and their shared counters.
#[derive(Debug)]
pub(super) struct Workers {
    children: Vec<Child>,
    pids: Vec<i32>,
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
/// `shared` is built before the fork so every worker holds the same TLS
/// ticket key and the same answers.
pub(super) fn start(cfg: &ServerConfig, shared: Shared) -> Result<(SocketAddr, Workers), String> {
    let (listeners, addr) =
        socket::listeners(cfg.listen, cfg.workers).map_err(|e| listen_error(cfg.listen, &e))?;
    let counters =
        CounterBlock::new(cfg.workers).map_err(|e| format!("cannot map shared counters: {e}"))?;
    let (ready_r, ready_w) =
        pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
    let parent = std::process::id();
    let mut workers = Workers {
        children: Vec::with_capacity(cfg.workers),
        pids: Vec::with_capacity(cfg.workers),
        counters,
    };
    for (k, listener) in listeners.iter().enumerate() {
        let counters = &workers.counters;
        // `child` touches nothing another thread of the parent could have
        // left locked: no stdio, no shared locks (the allocator stays usable).
        let forked =
            fork_child_keeping([listener.as_fd(), ready_w.as_fd()], |[listener, ready]| {
                child(
                    k,
                    listener.into(),
                    ready,
                    parent,
                    cfg,
                    shared.clone(),
                    counters,
                )
            });
        match forked {
            Ok(c) => {
                workers.pids.push(c.pid());
                workers.children.push(c);
            }
            Err(e) => {
                workers.terminate();
                return Err(format!("cannot fork worker {k}: {e}"));
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

/// The whole life of a worker process; returns its exit status.
fn child(
    k: usize,
    listener: TcpListener,
    ready: OwnedFd,
    parent: u32,
    cfg: &ServerConfig,
    shared: Shared,
    counters: &CounterBlock,
) -> i32 {
    let mut worker = match prepare(k, listener, parent, cfg, shared, counters) {
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
            // Straight to the descriptor: the stderr lock may have been held
            // by another thread of the parent at fork time.
            let msg = format!("llmload serve: worker {k}: {e}\n");
            let _ = nix::unistd::write(io::stderr(), msg.as_bytes());
            1
        }
    }
}

/// Process setup in the child, then the worker's event loop objects.
fn prepare<'a>(
    k: usize,
    listener: TcpListener,
    parent: u32,
    cfg: &ServerConfig,
    shared: Shared,
    counters: &'a CounterBlock,
) -> Result<Worker<'a>, String> {
    // The parent owns shutdown: in `llmload bench` a Ctrl-C (or a closed
    // terminal's SIGHUP) reaches the whole process group, and the embedded
    // server must outlive it until the parent stops it. SIGTERM is blocked so
    // only the signalfd sees it. A peer closing early surfaces as EPIPE, not
    // a signal.
    ignore(Signal::SIGINT).map_err(|e| e.to_string())?;
    ignore(Signal::SIGHUP).map_err(|e| e.to_string())?;
    ignore(Signal::SIGPIPE).map_err(|e| e.to_string())?;
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&mask), None).map_err(|e| e.to_string())?;

    process::die_with_parent(Signal::SIGTERM, parent).map_err(|e| e.to_string())?;
    // Timerfd wake-ups land when asked.
    process::tight_timer_slack().map_err(|e| format!("PR_SET_TIMERSLACK: {e}"))?;
    // Thousands of concurrent streams need as many descriptors.
    process::raise_fd_limit();

    if let Some(first) = cfg.pin {
        let cpu = first + k;
        process::pin_to(cpu).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    }

    let nanos = |d: Duration| d.as_nanos().min(u128::from(u64::MAX)) as u64;
    let settings = Settings {
        idle_timeout_ns: nanos(cfg.idle_timeout),
        body_cap: MAX_BODY.min(cfg.input_budget),
        drip_ns: nanos(cfg.drip),
        fault_after: cfg.fault_after,
        malformed: cfg.malformed_kind,
        ttft_ns: cfg.ttft.as_nanos().min(u64::MAX as u128) as u64,
        tpot_ns: cfg.tpot.as_nanos().min(u64::MAX as u128) as u64,
        output_tokens: cfg.output_tokens,
        reasoning: cfg.reasoning_tokens,
        ignore_stream: cfg.ignore_stream,
        no_usage: cfg.no_usage,
        cache_repeats: cfg.cache_repeats,
        worker: k as u32,
        started_unix: crate::clock::wall_ns() / 1_000_000_000,
        metrics_names: cfg.metrics_names,
        capacity: (cfg.max_connections as u64).saturating_mul(cfg.workers as u64),
    };
    let faults = FaultPlan::new(
        FaultRates {
            error: cfg.error_rate,
            malformed: cfg.malformed_rate,
            reset: cfg.reset_rate,
            stall: cfg.stall_rate,
            endless: cfg.endless_rate,
            inband: cfg.inband_error_rate,
            error_burst: cfg.error_burst,
        },
        &cfg.error_statuses,
    );
    let limits = Limits {
        max_connections: cfg.max_connections,
        input_budget: cfg.input_budget,
    };
    let access = Access {
        key: cfg.api_key.clone(),
        models: cfg.served_models.clone(),
    };
    Worker::new(listener, settings, limits, faults, access, shared, counters)
        .map_err(|e| format!("event loop: {e}"))
}

impl Workers {
    pub(super) fn pids(&self) -> &[i32] {
        &self.pids
    }

    pub(super) fn counters(&self) -> &CounterBlock {
        &self.counters
    }

    /// Reaps any worker that has exited, without waiting; returns a
    /// description of the first one found.
    pub(super) fn reap_exited(&mut self) -> Option<String> {
        let mut found = None;
        for (k, child) in self.children.iter_mut().enumerate() {
            if child.reaped() {
                continue;
            }
            match child.try_wait() {
                Ok(Some(Exit::Lost)) | Ok(None) | Err(_) => {}
                Ok(Some(exit)) => {
                    found.get_or_insert_with(|| {
                        format!("worker {k} (pid {}) {exit} unexpectedly", child.pid())
                    });
                }
            }
        }
        found
    }

    /// SIGTERM to every live worker, then waits for each (SIGKILL after
    /// `STOP_TIMEOUT`). Safe to call twice.
    pub(super) fn terminate(&mut self) {
        for child in &self.children {
            let _ = child.signal(Signal::SIGTERM);
        }
        reap_all(&mut self.children, Instant::now() + STOP_TIMEOUT);
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Writes the foreground server's first line: the bound address, as an
/// `https://` URL when the server speaks TLS (a bare address otherwise, as
/// scripts have always read it).
pub(super) fn print_addr(addr: SocketAddr, tls: bool) {
    let mut out = io::stdout().lock();
    let _ = if tls {
        writeln!(out, "https://{addr}")
    } else {
        writeln!(out, "{addr}")
    };
    let _ = out.flush();
}
