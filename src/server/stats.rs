//! Counters each worker keeps and the parent reads: one cache line of
//! atomics per worker inside a `MAP_SHARED` mapping made before `fork()`.
//! Each worker writes only its own line (no sharing, no contention); the
//! parent sums the lines when asked. Relaxed ordering is enough: the numbers
//! are statistics, and the final read after `waitpid` is ordered by the
//! kernel anyway.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use crate::shm::mapping::SharedMapping;

/// What the server did, summed over its workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerStats {
    /// `POST /v1/chat/completions` requests received in full, including
    /// those rejected (400) or given an injected fault.
    pub requests: u64,
    /// Chat completions answered in full with status 200.
    pub completed: u64,
    /// Requests answered with an injected 503.
    pub errors_injected: u64,
    /// Requests answered with injected non-HTTP bytes.
    pub malformed_injected: u64,
    /// Connections reset on purpose (mid-stream, or instead of a body).
    pub resets_injected: u64,
    /// Content tokens of the completed responses.
    pub output_tokens: u64,
    /// Prompt tokens (whitespace-separated words) of the completed responses.
    pub prompt_tokens: u64,
    /// Chat completion requests that asked for `"stream": true`.
    pub streams: u64,
}

impl ServerStats {
    fn add(&mut self, o: &ServerStats) {
        self.requests += o.requests;
        self.completed += o.completed;
        self.errors_injected += o.errors_injected;
        self.malformed_injected += o.malformed_injected;
        self.resets_injected += o.resets_injected;
        self.output_tokens += o.output_tokens;
        self.prompt_tokens += o.prompt_tokens;
        self.streams += o.streams;
    }
}

/// One worker's counters: exactly one cache line, so neighbours never share.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct WorkerCounters {
    pub requests: AtomicU64,
    pub completed: AtomicU64,
    pub errors_injected: AtomicU64,
    pub malformed_injected: AtomicU64,
    pub resets_injected: AtomicU64,
    pub output_tokens: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub streams: AtomicU64,
}

impl WorkerCounters {
    /// Adds `n` to one counter. Only this worker writes the line, so a plain
    /// relaxed add never contends.
    #[inline]
    pub fn bump(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn snapshot(&self) -> ServerStats {
        ServerStats {
            requests: self.requests.load(Relaxed),
            completed: self.completed.load(Relaxed),
            errors_injected: self.errors_injected.load(Relaxed),
            malformed_injected: self.malformed_injected.load(Relaxed),
            resets_injected: self.resets_injected.load(Relaxed),
            output_tokens: self.output_tokens.load(Relaxed),
            prompt_tokens: self.prompt_tokens.load(Relaxed),
            streams: self.streams.load(Relaxed),
        }
    }
}

/// The shared array of per-worker counters.
#[derive(Debug)]
pub struct CounterBlock {
    map: SharedMapping,
    workers: usize,
}

impl CounterBlock {
    pub fn new(workers: usize) -> io::Result<Self> {
        let map = SharedMapping::new(workers * size_of::<WorkerCounters>())?;
        Ok(CounterBlock { map, workers })
    }

    /// Worker `k`'s counters.
    ///
    /// # Panics
    /// When `k` is not below the worker count the block was made for.
    pub fn worker(&self, k: usize) -> &WorkerCounters {
        assert!(k < self.workers, "worker {k} of {}", self.workers);
        let p = self.map.at(k * size_of::<WorkerCounters>());
        // SAFETY: the mapping is page aligned and holds `workers` slots of
        // `size_of::<WorkerCounters>()` bytes each, so slot `k` is in bounds
        // and 64-byte aligned; the kernel zero-fills it, and all-zero bytes
        // are valid `AtomicU64`s; the reference lives no longer than `self`,
        // which owns the mapping.
        unsafe { &*p.cast::<WorkerCounters>() }
    }

    pub fn per_worker(&self) -> Vec<ServerStats> {
        (0..self.workers)
            .map(|k| self.worker(k).snapshot())
            .collect()
    }

    pub fn total(&self) -> ServerStats {
        let mut sum = ServerStats::default();
        for s in self.per_worker() {
            sum.add(&s);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_worker() {
        assert_eq!(size_of::<WorkerCounters>(), 64);
    }

    #[test]
    fn sums_workers() {
        let block = CounterBlock::new(3).unwrap();
        WorkerCounters::bump(&block.worker(0).requests, 2);
        WorkerCounters::bump(&block.worker(2).requests, 5);
        WorkerCounters::bump(&block.worker(1).output_tokens, 7);
        let t = block.total();
        assert_eq!(t.requests, 7);
        assert_eq!(t.output_tokens, 7);
        assert_eq!(block.per_worker()[2].requests, 5);
    }
}
