//! Process setup for a run: signal handling in the parent, forking and
//! pinning the workers, waiting for them to be ready, running the plan on
//! them and reaping them at the end (with each one's peak memory). `spawn`
//! forks before the caller starts any thread — and checks that it does — so
//! every worker begins as a copy of a single-threaded process; the system
//! calls themselves are `sys::process`'s.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::Plan;
use super::parent::{Parent, WorkerEnd};
use super::token_lane::TokenLane;
use super::worker::{self, WorkerSetup};
use crate::metrics::observe::Observer;
use crate::metrics::run::RunResult;
use crate::plan::Load;
use crate::shm::ring::{ByteConsumer, SlotProducer};
use crate::shm::run::{IssueSlot, Shared};
use crate::sys::process::{self, Child, available_cpus, fork_child, reap_all};
use crate::sys::signal;

/// How long the workers have to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the workers have to exit after `EXIT` before they are killed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(2);

/// Routes SIGINT, SIGTERM and SIGHUP to a count the parent's loop reads
/// (without SA_RESTART, so a sleeping parent wakes with EINTR and sees it at
/// once).
pub(crate) fn install_signal_handlers() -> io::Result<()> {
    signal::count_interrupts()
}

/// The forked workers of a run, ready for requests: the shared mapping, the
/// parent's ends of every worker's rings, and the worker processes. Dropped
/// without `run`, it kills and reaps them.
pub(crate) struct Workers {
    shared: Shared,
    ends: Vec<(SlotProducer<IssueSlot>, ByteConsumer)>,
    children: Vec<Child>,
}

/// How long a thread that has been joined may still be listed.
const THREAD_EXIT: Duration = Duration::from_millis(500);

/// Ok once this process has one thread, waiting up to `within`: a thread
/// joined a moment ago (the previous phase's events sink, when phases run
/// back to back) stays in `/proc/self/task` until the kernel has finished
/// its exit, after `join` has already returned. Err: the count still there.
fn single_threaded(within: Duration) -> Result<(), usize> {
    let deadline = Instant::now() + within;
    loop {
        match process::threads() {
            Some(n) if n > 1 => {
                if Instant::now() >= deadline {
                    return Err(n);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            _ => return Ok(()),
        }
    }
}

/// Forks the workers and waits until each is ready.
///
/// Call it before starting any thread: a worker is a copy of this process
/// made by `fork()`, and a lock another thread held at that moment (stdio's,
/// the events sink's channel, a thread pool's) would stay held in the copy
/// forever. The events sink and the tokenizer lane start after it, and the
/// tokenizer never starts its thread pool (`tokens`); a process that has
/// another thread here anyway is refused rather than forked.
pub(crate) fn spawn(plan: &Plan<'_>) -> Result<Workers, String> {
    if let Err(n) = single_threaded(THREAD_EXIT) {
        return Err(format!(
            "internal error: {n} threads before the workers were forked (each must be a copy of a single-threaded process)"
        ));
    }
    let shared = Shared::new(plan.workers).map_err(|e| format!("shared memory: {e}"))?;
    let cpus = available_cpus();
    let per_worker = plan.connections.div_ceil(plan.workers).max(1);
    let parent = std::process::id();
    let mut workers = Workers {
        ends: Vec::with_capacity(plan.workers),
        children: Vec::with_capacity(plan.workers),
        shared,
    };
    let shared = &workers.shared;
    for k in 0..plan.workers {
        // This process has one thread here (checked above), so the child
        // inherits no lock held elsewhere; it runs the worker loop and
        // `_exit`s.
        let forked = fork_child(|| {
            // The parent owns shutdown: workers ignore the interrupts sent to
            // the process group (Ctrl-C, a closed terminal) and die only with
            // the parent.
            for sig in signal::INTERRUPTS {
                let _ = signal::ignore(sig);
            }
            // Told apart from the parent and the built-in endpoint in `ps`.
            let _ = process::set_name(c"llmload-worker");
            if process::die_with_parent(Signal::SIGKILL, parent).is_err() {
                return 1;
            }
            if plan.pin {
                let _ = process::pin_to((k + 1) % cpus);
            }
            worker::run(WorkerSetup {
                index: k,
                shared,
                scenarios: &plan.scenarios,
                endpoints: &plan.endpoints,
                max_conns: per_worker,
                limits: plan.limits,
                warm_conns: warm_per_worker(plan, per_worker),
                warm_endpoints: plan
                    .scenarios
                    .first()
                    .map_or_else(Vec::new, |s| s.endpoints.clone()),
                keep_text: plan.keep_text,
                seed: plan.scheduler_seed,
                io: &plan.io,
            })
        });
        let child = forked.map_err(|e| format!("fork: {e}"))?;
        workers.children.push(child);
        let ends = shared
            .take_parent_ends(k)
            .ok_or_else(|| format!("the rings of worker {k} are already in use"))?;
        workers.ends.push(ends);
    }
    if plan.pin {
        let _ = process::pin_to(0);
    }
    let _ = process::tight_timer_slack();
    workers.wait_ready()?;
    Ok(workers)
}

impl Workers {
    /// Runs the plan on the workers, then reaps them and records each one's
    /// peak memory. `observer` hears of every finished request and each live
    /// interval.
    pub(crate) fn run(
        mut self,
        plan: &Plan<'_>,
        started_ns: u64,
        observer: Option<&mut dyn Observer>,
    ) -> RunResult {
        let ends: Vec<WorkerEnd<'_>> = std::mem::take(&mut self.ends)
            .into_iter()
            .zip(&mut self.children)
            .map(|((issue, done), child)| WorkerEnd::new(child, issue, done))
            .collect();
        let shared = &self.shared;
        let mut result = std::thread::scope(|scope| {
            let lane = plan.tokenizer.map(|t| TokenLane::spawn(scope, t));
            Parent::new(plan, shared, ends, lane, observer).run(signal::interrupts(), started_ns)
        });
        reap_all(&mut self.children, Instant::now() + EXIT_TIMEOUT);
        result.generator.worker_max_rss_kib = self
            .children
            .iter()
            .map(|c| c.max_rss_kib().unwrap_or(0))
            .collect();
        result
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        for (k, child) in self.children.iter_mut().enumerate() {
            while self.shared.counters(k).ready.load(Ordering::Acquire) == 0 {
                if let Ok(Some(_)) = child.try_wait() {
                    return Err(format!("worker {k} exited during startup"));
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "worker {k} did not start within {} s",
                        READY_TIMEOUT.as_secs()
                    ));
                }
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        Ok(())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &self.children {
            let _ = child.kill();
        }
        reap_all(&mut self.children, Instant::now());
    }
}

/// Connections each worker opens before the run: what the first stage's
/// closed loop (or offline window) will use at once. Open loops connect on
/// demand, as their clients would.
fn warm_per_worker(plan: &Plan<'_>, per_worker: usize) -> usize {
    // Warm connections serve every scenario only when all share one list
    // of endpoints.
    let shared_endpoints = plan
        .scenarios
        .iter()
        .all(|s| s.endpoints == plan.scenarios[0].endpoints);
    match plan.stages.first().map(|s| s.load) {
        _ if !shared_endpoints => 0,
        Some(Load::Closed { concurrency }) => concurrency.div_ceil(plan.workers).min(per_worker),
        Some(Load::Offline) => per_worker,
        _ => 0,
    }
}
