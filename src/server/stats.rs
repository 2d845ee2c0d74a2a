//! Counters each worker keeps and the parent reads: a block of atomics per
//! worker, whole cache lines, inside a `MAP_SHARED` mapping made before
//! `fork()` (the block's layout is `shm::serve`'s). Each worker writes only
//! its own lines (no sharing, no contention); the parent sums the blocks when
//! asked. Relaxed ordering is enough: the numbers are statistics, and the
//! final read after `waitpid` is ordered by the kernel anyway.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use super::formats::Format;
use crate::shm::mapping::SharedArray;
pub(super) use crate::shm::serve::WorkerCounters;

/// What the server did, summed over its workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerStats {
    /// Generation requests (every format) received in full, including those
    /// rejected (400, 401, 404) or given an injected fault.
    pub requests: u64,
    /// Generation requests answered in full with status 200 (an in-band
    /// error is not an answer in full).
    pub completed: u64,
    /// Requests answered with an injected 503.
    pub errors_injected: u64,
    /// Requests answered with injected non-HTTP bytes.
    pub malformed_injected: u64,
    /// Connections reset on purpose (mid-stream, or instead of a body).
    pub resets_injected: u64,
    /// Output tokens of the completed responses.
    pub output_tokens: u64,
    /// Prompt tokens (words, or token ids) of the completed responses.
    pub prompt_tokens: u64,
    /// Generation requests that asked for `"stream": true`.
    pub streams: u64,
    /// Requests answered 200 with an injected in-band error object.
    pub inband_errors_injected: u64,
    /// Requests refused 401 for want of the API key (any path).
    pub unauthorized: u64,
    /// Requests refused 404 for naming a model not served.
    pub unknown_model: u64,
    /// `requests` by format: `POST /v1/chat/completions`.
    pub requests_chat: u64,
    /// `POST /v1/completions`.
    pub requests_completions: u64,
    /// `POST /generate`.
    pub requests_generate: u64,
    /// `POST /v1/messages`.
    pub requests_messages: u64,
    /// Responses stopped mid-way on purpose, the connection held open.
    pub stalls_injected: u64,
    /// Responses that never end, on purpose.
    pub endless_injected: u64,
    /// Connections closed for waiting on their client past the idle
    /// timeout (an idle keep-alive, a request dribbled in, a client that
    /// does not read).
    pub timed_out: u64,
    /// Connections answered 503 and closed at the per-worker cap.
    pub over_capacity: u64,
    /// Requests answered 503 because the worker's input budget was taken.
    pub over_budget: u64,
    /// Requests answered 413 (body) or 431 (head) for their size.
    pub too_large: u64,
    /// Times `accept` failed for want of descriptors or memory (the worker
    /// retries shortly after, or as soon as a connection closes).
    pub accept_failures: u64,
    /// TLS handshakes completed (`serve --tls-*`).
    pub tls_handshakes: u64,
    /// Of those, the ones that resumed a session (a ticket).
    pub tls_resumed: u64,
    /// TLS handshakes that failed: a client that does not speak TLS, or
    /// lacks the client certificate asked for, or rejects ours.
    pub tls_handshake_failures: u64,
    /// Generation requests answered at once as repeats (`--cache-repeats`).
    pub cache_hits: u64,
    /// Valid generation requests whose prompt `--answers` has no reply to,
    /// without `--echo` to say it instead: they get the generated text (or
    /// their fault, which is counted as usual).
    pub answers_missed: u64,
    /// Responses under way (a gauge, summed over the workers: 0 once the
    /// server is idle).
    pub running: u64,
}

/// The snapshot of a shared counter block and the sum of two snapshots, one
/// field each. The struct patterns name every field of both types, so a field
/// added to one and not the other fails to compile.
macro_rules! counters {
    ($($field:ident),* $(,)?) => {
        impl WorkerCounters {
            pub(crate) fn snapshot(&self) -> ServerStats {
                let WorkerCounters { $($field),* } = self;
                ServerStats {
                    $($field: $field.load(Relaxed),)*
                }
            }
        }

        impl ServerStats {
            fn add(&mut self, o: &ServerStats) {
                let ServerStats { $($field),* } = self;
                $(*$field += o.$field;)*
            }
        }
    };
}

counters!(
    requests,
    completed,
    errors_injected,
    malformed_injected,
    resets_injected,
    output_tokens,
    prompt_tokens,
    streams,
    inband_errors_injected,
    unauthorized,
    unknown_model,
    requests_chat,
    requests_completions,
    requests_generate,
    requests_messages,
    stalls_injected,
    endless_injected,
    timed_out,
    over_capacity,
    over_budget,
    too_large,
    accept_failures,
    tls_handshakes,
    tls_resumed,
    tls_handshake_failures,
    cache_hits,
    answers_missed,
    running,
);

impl WorkerCounters {
    /// Adds `n` to one counter. Only this worker writes the block, so a
    /// plain relaxed add never contends.
    #[inline]
    pub(crate) fn bump(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    /// Takes one from a gauge (`running`), which only this worker moves.
    #[inline]
    pub(crate) fn drop_one(counter: &AtomicU64) {
        counter.fetch_sub(1, Relaxed);
    }

    /// The per-format request counter.
    pub(crate) fn format_requests(&self, f: Format) -> &AtomicU64 {
        match f {
            Format::Chat => &self.requests_chat,
            Format::Completions => &self.requests_completions,
            Format::Generate => &self.requests_generate,
            Format::Messages => &self.requests_messages,
        }
    }
}

/// The shared array of per-worker counters.
#[derive(Debug)]
pub(crate) struct CounterBlock {
    blocks: SharedArray<WorkerCounters>,
}

impl CounterBlock {
    pub(super) fn new(workers: usize) -> io::Result<Self> {
        Ok(CounterBlock {
            blocks: SharedArray::new(workers)?,
        })
    }

    /// Worker `k`'s counters.
    ///
    /// # Panics
    /// When `k` is not below the worker count the block was made for.
    pub(crate) fn worker(&self, k: usize) -> &WorkerCounters {
        self.blocks.get(k)
    }

    pub(super) fn per_worker(&self) -> Vec<ServerStats> {
        self.blocks.iter().map(WorkerCounters::snapshot).collect()
    }

    pub(crate) fn total(&self) -> ServerStats {
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
    fn whole_lines_per_worker() {
        assert_eq!(size_of::<WorkerCounters>() % 64, 0);
        assert_eq!(size_of::<WorkerCounters>(), 256);
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
