//! Process setup for a run: signal handling in the parent, forking and
//! pinning the workers, waiting for them to be ready, running the plan on
//! them and reaping them at the end (with each one's peak memory). `spawn`
//! forks before the caller starts any thread — and checks that it does — so
//! every worker begins as a copy of a single-threaded process; the system
//! calls themselves are `sys::process`'s.

use std::io;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use nix::sys::resource::{Resource, getrlimit};
use nix::sys::signal::Signal;

use super::Plan;
use super::parent::{Parent, WorkerEnd};
use super::ports::{LocalPorts, PortPlan};
use super::token_lane::TokenLane;
use super::worker::{self, WorkerSetup};
use crate::metrics::observe::Observer;
use crate::metrics::run::RunResult;
use crate::plan::Load;
use crate::shm::ring::{ByteConsumer, SlotProducer};
use crate::shm::run::{IssueSlot, Shared};
use crate::sys::process::{self, Child, available_cpus, fork_child, reap_all};
use crate::sys::signal;

/// How long a starting worker may show no progress (no warm connection
/// started or settled, not ready) before it is taken for hung. A start has
/// no deadline of its own: opening 19,000 connections takes seconds, and
/// the worker bounds its own wait for them (`worker::pool`).
const STALL_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the parent looks at the starting workers.
const READY_POLL: Duration = Duration::from_micros(200);
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
    let shared =
        Shared::new(plan.workers, plan.stages.len()).map_err(|e| format!("shared memory: {e}"))?;
    let cpus = available_cpus();
    let per_worker = plan.connections.div_ceil(plan.workers).max(1);
    let most_conns = most_conns(plan.connections, per_worker);
    let parent = std::process::id();
    let sources = plan.io.source_addrs.len();
    let ports = PortPlan::for_run(plan.connections, sources);
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
                most_conns,
                limits: plan.limits,
                warm_conns: warm_per_worker(plan, per_worker),
                warm_endpoints: plan
                    .scenarios
                    .first()
                    .map_or_else(Vec::new, |s| s.endpoints.clone()),
                keep_text: plan.keep_text,
                seed: plan.scheduler_seed,
                io: &plan.io,
                ports: LocalPorts::for_worker(ports.as_ref(), k, plan.workers, sources),
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
    workers.wait_ready(warm_per_worker(plan, per_worker), STALL_TIMEOUT)?;
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

    /// Waits until every worker is ready, for as long as each keeps making
    /// progress: a worker that exits, or shows none for `stall`, fails the
    /// start.
    fn wait_ready(&mut self, warm_per_worker: usize, stall: Duration) -> Result<(), String> {
        let start = Instant::now();
        let mut seen = vec![(0u64, start); self.children.len()];
        loop {
            let mut starting = false;
            for (k, child) in self.children.iter_mut().enumerate() {
                let counters = self.shared.counters(k);
                if counters.ready.load(Ordering::Acquire) != 0 {
                    continue;
                }
                starting = true;
                if let Ok(Some(_)) = child.try_wait() {
                    return Err(format!("worker {k} exited during startup"));
                }
                let progress = counters.warming.load(Ordering::Acquire);
                let now = Instant::now();
                let (last, since) = &mut seen[k];
                if progress != *last {
                    *last = progress;
                    *since = now;
                } else if now.duration_since(*since) > stall {
                    return Err(stalled(
                        k,
                        counters.warm_started.load(Ordering::Relaxed),
                        warm_per_worker,
                        stall,
                        now.duration_since(start),
                    ));
                }
            }
            if !starting {
                return Ok(());
            }
            std::thread::sleep(READY_POLL);
        }
    }
}

/// The error for worker `k`, which made no progress for `stall` while
/// starting.
fn stalled(k: usize, started: u64, warm: usize, stall: Duration, after: Duration) -> String {
    let what = if warm == 0 {
        String::new()
    } else {
        format!(" ({started} of its {warm} connections started)")
    };
    format!(
        "worker {k} made no progress for {:.1} s while starting{what}; it was stopped after {:.1} s",
        stall.as_secs_f64(),
        after.as_secs_f64()
    )
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &self.children {
            let _ = child.kill();
        }
        reap_all(&mut self.children, Instant::now());
    }
}

/// The most connections a worker may grow to as others are lost: all
/// `connections` of the run (the last survivor carries them all), within
/// the descriptors a worker has for sockets, and never fewer than its own
/// share `per_worker`.
fn most_conns(connections: usize, per_worker: usize) -> usize {
    let sockets = getrlimit(Resource::RLIMIT_NOFILE)
        .map_or(0, |(soft, _)| soft.saturating_sub(process::WORKER_OWN_FDS));
    connections
        .min(usize::try_from(sockets).unwrap_or(usize::MAX))
        .max(per_worker)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::run::WorkerCounters;

    /// Workers around children forked by the test (no rings taken).
    fn workers(n: usize, body: impl Fn(&WorkerCounters) -> i32 + Copy) -> Workers {
        let shared = Shared::new(n, 1).expect("shared mapping");
        let mut children = Vec::new();
        for k in 0..n {
            let counters = shared.counters(k);
            // The child touches only the shared counters and sleeps.
            children.push(fork_child(|| body(counters)).expect("fork"));
        }
        Workers {
            shared,
            ends: Vec::new(),
            children,
        }
    }

    fn progress_for(c: &WorkerCounters, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            c.warming.fetch_add(1, Ordering::Release);
            c.warm_started.fetch_add(100, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_start_longer_than_the_stall_timeout_is_waited_for_while_it_progresses() {
        let mut w = workers(2, |c| {
            progress_for(c, Duration::from_millis(600));
            c.ready.store(1, Ordering::Release);
            std::thread::sleep(Duration::from_secs(5));
            0
        });
        let t = Instant::now();
        w.wait_ready(1000, Duration::from_millis(150)).unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(550),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn a_worker_that_stops_progressing_is_taken_for_hung() {
        let mut w = workers(1, |c| {
            progress_for(c, Duration::from_millis(300));
            std::thread::sleep(Duration::from_secs(5));
            0
        });
        let t = Instant::now();
        let e = w.wait_ready(1000, Duration::from_millis(150)).unwrap_err();
        assert!(e.starts_with("worker 0 made no progress for 0.1 s"), "{e}");
        assert!(e.contains(" of its 1000 connections started"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }

    #[test]
    fn a_worker_that_exits_fails_the_start() {
        let mut w = workers(1, |_| 3);
        let e = w.wait_ready(0, Duration::from_secs(5)).unwrap_err();
        assert_eq!(e, "worker 0 exited during startup");
    }
}
