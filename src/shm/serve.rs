//! The built-in server's per-worker counters as they lie in shared memory:
//! one `AtomicU64` per field of `server::ServerStats`, same names, in whole
//! cache lines so neighbouring workers never share one. Defined here because
//! only shm may vouch that a type is `Plain`; `server::stats` gives it its
//! behaviour (and fails to compile if the two field lists ever differ).

use std::sync::atomic::AtomicU64;

use super::mapping::Plain;

/// One server worker's counters; only that worker writes them.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub(crate) struct WorkerCounters {
    pub requests: AtomicU64,
    pub completed: AtomicU64,
    pub errors_injected: AtomicU64,
    pub malformed_injected: AtomicU64,
    pub resets_injected: AtomicU64,
    pub output_tokens: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub streams: AtomicU64,
    pub inband_errors_injected: AtomicU64,
    pub unauthorized: AtomicU64,
    pub unknown_model: AtomicU64,
    pub requests_chat: AtomicU64,
    pub requests_completions: AtomicU64,
    pub requests_generate: AtomicU64,
    pub requests_messages: AtomicU64,
    pub stalls_injected: AtomicU64,
    pub endless_injected: AtomicU64,
    pub timed_out: AtomicU64,
    pub over_capacity: AtomicU64,
    pub over_budget: AtomicU64,
    pub too_large: AtomicU64,
    pub accept_failures: AtomicU64,
    pub tls_handshakes: AtomicU64,
    pub tls_resumed: AtomicU64,
    pub tls_handshake_failures: AtomicU64,
    pub cache_hits: AtomicU64,
    pub answers_missed: AtomicU64,
    pub running: AtomicU64,
}

// SAFETY: atomics only: valid as zero, no pointers, changed atomically.
unsafe impl Plain for WorkerCounters {}
