//! The load engine. The parent process (`scheduler`) decides when each
//! request is due and collects results; forked workers (`worker`) do all
//! socket I/O; `shared` holds the rings between them and `supervisor` forks,
//! pins and reaps. One loop serves every load shape: a stage is an arrival
//! source (`Load`) plus a stop condition (duration and/or request count).

pub mod arrival;
pub mod conn;
pub mod record;
pub mod requests;
pub mod scheduler;
pub mod shared;
pub mod supervisor;
pub mod tokenize;
pub mod worker;

use std::net::SocketAddr;

use crate::metrics::block::Block;
use crate::protocol::Protocol;
use arrival::ArrivalKind;
use requests::RequestSet;

/// How requests are released during a stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// Closed loop: keep `concurrency` requests in flight, each released when
    /// a previous one finishes (t_sched = release time).
    Closed { concurrency: usize },
    /// Every request due at the stage start, in flight up to the connection
    /// bound (t_sched = stage start).
    Offline,
    /// Open loop: arrivals on a schedule regardless of completions, at a rate
    /// sweeping linearly from `rate_from` to `rate_to` (equal for a constant rate).
    Open {
        kind: ArrivalKind,
        rate_from: f64,
        rate_to: f64,
    },
}

/// One stage of a run.
#[derive(Clone, Debug)]
pub struct StagePlan {
    pub name: String,
    pub load: Load,
    /// Measured length of the stage (the first stage's warmup comes before it).
    pub duration_ns: Option<u64>,
    /// Measured requests to issue in the stage.
    pub requests: Option<u64>,
}

/// Everything the engine needs for a run.
pub struct Plan<'a> {
    pub addr: SocketAddr,
    pub requests: &'a RequestSet,
    pub protocol: &'a dyn Protocol,
    pub stages: Vec<StagePlan>,
    /// Run before the first stage is measured, with the first stage's load.
    pub warmup_ns: u64,
    pub workers: usize,
    pub pin: bool,
    /// Connections across all workers (the in-flight bound of open loops).
    pub connections: usize,
    pub timeout_ns: u64,
    pub connect_timeout_ns: u64,
    pub drain_timeout_ns: u64,
    pub max_gaps: usize,
    pub seed: u64,
    /// Which sample each request sends.
    pub order: crate::dataset::Order,
    /// Workers send each response's text (to count tokens or record outputs).
    pub keep_text: bool,
    /// Counts output tokens of responses that report no usage.
    pub tokenizer: Option<&'a crate::tokens::Tokenizer>,
}

/// Generator health: how the load generator itself coped.
#[derive(Clone, Debug, Default)]
pub struct GeneratorStats {
    pub workers: usize,
    /// Requests that found their worker's issue ring full.
    pub ring_full: u64,
    pub waited_for_connection: u64,
    pub completion_ring_full: u64,
    pub itl_truncated: u64,
    pub connections_opened: u64,
    pub stale_retries: u64,
    /// Busiest worker's share of wall time spent handling events (0..1).
    pub worker_busy_max: f64,
    /// Parent busy-wait/sleep bookkeeping: arrivals the parent reached late.
    pub late_wakeups: u64,
    /// Reasons the generator, not the endpoint, limited the run.
    pub limits: Vec<String>,
}

/// A stage's results.
#[derive(Clone, Debug)]
pub struct StageResult {
    pub name: String,
    pub load: Load,
    pub block: Block,
    /// Measured window of the stage, ns.
    pub window_ns: u64,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub started_wall_ns: u64,
    pub stages: Vec<StageResult>,
    /// All measured requests (warmup excluded).
    pub total: Block,
    pub total_window_ns: u64,
    pub warmup: Block,
    pub generator: GeneratorStats,
    pub interrupted: bool,
    /// Every issued request was accounted for and no worker was lost.
    pub complete: bool,
    pub incomplete_reasons: Vec<String>,
    /// Start of run to first request on the wire, ns.
    pub startup_ns: u64,
}
