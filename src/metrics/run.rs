//! What a finished run produced, before anyone renders it: per stage and
//! scenario blocks, the run's totals, generator health and whether the run
//! was complete. The engine fills it; `report` reads it.

use super::block::Block;
use super::thresholds::Verdict;
use crate::plan::Load;

/// Generator health: how the load generator itself coped.
#[derive(Clone, Debug, Default)]
pub struct GeneratorStats {
    pub workers: usize,
    /// Requests that found their worker's issue ring full.
    pub ring_full: u64,
    /// Open-loop arrivals held back by `openloop_max_inflight`.
    pub held_back: u64,
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

/// A scenario's results within a stage (or the whole run).
#[derive(Clone, Debug)]
pub struct ScenarioResult {
    pub name: String,
    pub block: Block,
}

/// A stage's results.
#[derive(Clone, Debug)]
pub struct StageResult {
    pub name: String,
    pub load: Load,
    /// Every scenario together.
    pub block: Block,
    pub scenarios: Vec<ScenarioResult>,
    /// Measured window of the stage, ns.
    pub window_ns: u64,
    pub thresholds: Vec<Verdict>,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    pub started_wall_ns: u64,
    pub stages: Vec<StageResult>,
    /// All measured requests (warmup excluded).
    pub total: Block,
    /// Per scenario over the whole run.
    pub scenarios: Vec<ScenarioResult>,
    /// Every stage met every threshold.
    pub thresholds_passed: bool,
    /// Stopped early because a stage broke a threshold (`abort_on_fail`).
    pub aborted_on_threshold: Option<String>,
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
