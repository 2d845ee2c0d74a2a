//! Process setup for a run: signal handling in the parent, the descriptor
//! limit, forking and pinning the workers, waiting for them to be ready, and
//! reaping them at the end. This is where `unsafe` process calls live, each
//! one a thin wrapper with its invariant stated.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

use super::Plan;
use super::parent::{Parent, WorkerEnd};
use super::shared::Shared;
use super::token_lane::TokenLane;
use super::worker::{self, WorkerSetup};
use crate::clock::now_ns;
use crate::metrics::observe::Observer;
use crate::metrics::run::RunResult;
use crate::plan::Load;
use crate::sys::process::available_cpus;

/// SIGINT and SIGTERM deliveries to the parent.
pub static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::Relaxed);
}

/// Routes SIGINT and SIGTERM to `SIGNALS` (without SA_RESTART, so a sleeping
/// parent wakes with EINTR and sees the count at once).
pub fn install_signal_handlers() -> io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only touches an
        // atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within its bounds
    // because `cpu` is reduced modulo CPU_SETSIZE; pid 0 means this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu % libc::CPU_SETSIZE as usize, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Nanosecond timer slack, so the parent's sleeps end when asked.
fn tight_timer_slack() {
    // SAFETY: prctl with an integer argument, no pointers.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Forks the workers, runs the plan in the parent, reaps the workers.
/// `observer` hears of every finished request and each live interval.
pub fn run(
    plan: &Plan<'_>,
    started_ns: u64,
    observer: Option<&mut dyn Observer>,
) -> Result<RunResult, String> {
    let shared = Shared::new(plan.workers).map_err(|e| format!("shared memory: {e}"))?;
    let cpus = available_cpus();
    let per_worker = plan.connections.div_ceil(plan.workers).max(1);
    let parent_pid = std::process::id() as i32;
    let mut ends = Vec::with_capacity(plan.workers);
    for k in 0..plan.workers {
        // SAFETY: the parent is single-threaded here (no thread has been
        // started by the bench path), so the child inherits a consistent
        // heap and runs only the worker loop before `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            kill_all(&ends);
            return Err(format!("fork: {e}"));
        }
        if pid == 0 {
            child_setup(parent_pid);
            if plan.pin {
                pin_to((k + 1) % cpus);
            }
            let code = worker::run(WorkerSetup {
                index: k,
                shared: &shared,
                scenarios: &plan.scenarios,
                endpoints: &plan.endpoints,
                max_conns: per_worker,
                limits: plan.limits,
                warm_conns: warm_per_worker(plan, per_worker),
                warm_endpoint: plan.scenarios.first().map_or(0, |s| s.endpoint),
                keep_text: plan.keep_text,
                seed: plan.seed,
            });
            // SAFETY: leaving the child without running the parent's atexit
            // handlers or flushing its inherited stdio buffers.
            unsafe { libc::_exit(code) };
        }
        let (issue, done) = shared.parent_ends(k);
        ends.push(WorkerEnd::new(pid, issue, done));
    }
    if plan.pin {
        pin_to(0);
    }
    tight_timer_slack();
    if let Err(e) = wait_ready(&shared, &ends) {
        kill_all(&ends);
        reap(&ends);
        return Err(e);
    }
    let pids: Vec<i32> = ends.iter().map(|w| w.pid).collect();
    let result = std::thread::scope(|scope| {
        let lane = plan.tokenizer.map(|t| TokenLane::spawn(scope, t));
        Parent::new(plan, &shared, ends, lane, observer).run(&SIGNALS, started_ns)
    });
    reap_pids(&pids);
    Ok(result)
}

/// Connections each worker opens before the run: what the first stage's
/// closed loop (or offline window) will use at once. Open loops connect on
/// demand, as their clients would.
fn warm_per_worker(plan: &Plan<'_>, per_worker: usize) -> usize {
    let single_endpoint = plan.scenarios.iter().all(|s| s.endpoint == 0);
    match plan.stages.first().map(|s| s.load) {
        _ if !single_endpoint => 0,
        Some(Load::Closed { concurrency }) => concurrency.div_ceil(plan.workers).min(per_worker),
        Some(Load::Offline) => per_worker,
        _ => 0,
    }
}

fn child_setup(parent_pid: i32) {
    // SAFETY: prctl/signal/getppid take no pointers; SIG_IGN is a valid
    // disposition. The parent owns shutdown, so workers ignore SIGINT/SIGTERM
    // sent to the process group and die only with the parent (PDEATHSIG).
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        if libc::getppid() != parent_pid {
            libc::_exit(1);
        }
    }
}

fn wait_ready(shared: &Shared, ends: &[WorkerEnd]) -> Result<(), String> {
    let deadline = now_ns() + 5_000_000_000;
    for (k, w) in ends.iter().enumerate() {
        while shared.counters(k).ready.load(Ordering::Acquire) == 0 {
            let mut status = 0;
            // SAFETY: non-blocking wait on our own child.
            if unsafe { libc::waitpid(w.pid, &mut status, libc::WNOHANG) } == w.pid {
                return Err(format!("worker {k} exited during startup"));
            }
            if now_ns() > deadline {
                return Err(format!("worker {k} did not start within 5 s"));
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
    Ok(())
}

fn kill_all(ends: &[WorkerEnd]) {
    for w in ends {
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(w.pid, libc::SIGKILL) };
    }
}

fn reap(ends: &[WorkerEnd]) {
    let pids: Vec<i32> = ends.iter().map(|w| w.pid).collect();
    reap_pids(&pids);
}

/// Waits for workers to exit after `EXIT`; kills any that linger past 2 s.
fn reap_pids(pids: &[i32]) {
    let deadline = now_ns() + 2_000_000_000;
    for &pid in pids {
        loop {
            let mut status = 0;
            // SAFETY: non-blocking wait on our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid || r < 0 {
                break;
            }
            if now_ns() > deadline {
                // SAFETY: killing and reaping our own lingering child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
