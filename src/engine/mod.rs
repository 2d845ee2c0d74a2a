//! The load engine. The parent process (`scheduler`) decides when each
//! request is due and collects results; forked workers (`worker`) do all
//! socket I/O; `shared` holds the rings between them and `supervisor` forks,
//! pins and reaps. One loop serves every load shape: a stage is an arrival
//! source (`Load`) plus a stop condition (duration and/or request count).

pub mod arrival;
pub mod conn;
pub mod conversation;
pub mod record;
pub mod requests;
pub mod scheduler;
pub mod shared;
pub mod supervisor;
pub mod tokenize;
pub mod worker;

use std::net::SocketAddr;

use crate::metrics::block::Block;
use crate::metrics::thresholds::{Thresholds, Verdict};
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

/// Content checks on successful responses; one that fails turns the
/// request into a `check_failed` error.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checks {
    pub contains: Vec<String>,
    pub not_contains: Vec<String>,
    pub min_completion_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    /// The status a response must have.
    pub status: Option<u16>,
}

impl Checks {
    pub fn is_empty(&self) -> bool {
        *self == Checks::default()
    }

    /// Whether the response text must reach the parent.
    pub fn needs_text(&self) -> bool {
        !self.contains.is_empty() || !self.not_contains.is_empty()
    }

    /// The first check a response fails, as a message; `None` when all pass.
    pub fn failure(&self, status: u16, output_tokens: u64, text: &str) -> Option<String> {
        if let Some(want) = self.status
            && status != want
        {
            return Some(format!("status {status}, expected {want}"));
        }
        if let Some(min) = self.min_completion_tokens
            && output_tokens < min
        {
            return Some(format!(
                "{output_tokens} completion tokens, expected at least {min}"
            ));
        }
        if let Some(max) = self.max_completion_tokens
            && output_tokens > max
        {
            return Some(format!(
                "{output_tokens} completion tokens, expected at most {max}"
            ));
        }
        if let Some(m) = self.contains.iter().find(|m| !text.contains(m.as_str())) {
            return Some(format!("output does not contain {m:?}"));
        }
        if let Some(m) = self.not_contains.iter().find(|m| text.contains(m.as_str())) {
            return Some(format!("output contains {m:?}"));
        }
        None
    }
}

/// One weighted kind of traffic: its wire format, endpoint, content and
/// checks.
pub struct ScenarioPlan<'a> {
    pub name: String,
    /// Share of concurrency (closed loop) or of arrivals (open loop).
    pub weight: f64,
    pub protocol: &'a dyn Protocol,
    /// Index into `Plan::endpoints`.
    pub endpoint: usize,
    /// Prebuilt requests of a single-turn scenario (empty when multi-turn).
    pub requests: RequestSet,
    /// How a multi-turn scenario's turns are built on the worker.
    pub conversation: Option<conversation::ConversationTemplate>,
    /// Turns per conversation, drawn uniformly from `min..=max`.
    pub turns: (u16, u16),
    pub think_time_ns: u64,
    /// Which sample each new conversation starts from.
    pub order: crate::dataset::Order,
    pub checks: Checks,
    /// Responses' text must reach the parent (content checks).
    pub keep_text: bool,
}

impl ScenarioPlan<'_> {
    /// Samples the parent picks from.
    pub fn samples(&self) -> usize {
        match &self.conversation {
            Some(c) => c.turns.len().max(1),
            None => self.requests.len().max(1),
        }
    }
}

/// Everything the engine needs for a run.
pub struct Plan<'a> {
    /// Every endpoint scenarios send to, resolved once; `None` for a host
    /// that did not resolve (its requests fail as `dns_error`).
    pub endpoints: Vec<Option<SocketAddr>>,
    pub scenarios: Vec<ScenarioPlan<'a>>,
    pub stages: Vec<StagePlan>,
    /// Run before the first stage is measured, with the first stage's load.
    pub warmup_ns: u64,
    pub workers: usize,
    pub pin: bool,
    /// Connections across all workers.
    pub connections: usize,
    /// In-flight bound of open loops; arrivals beyond it wait, charged from
    /// their scheduled time.
    pub openloop_max_inflight: Option<u64>,
    pub timeout_ns: u64,
    pub ttft_timeout_ns: Option<u64>,
    pub connect_timeout_ns: u64,
    pub drain_timeout_ns: u64,
    pub max_gaps: usize,
    pub seed: u64,
    /// Workers send each response's text (to count tokens or record outputs).
    pub keep_text: bool,
    /// Counts output tokens of responses that report no usage.
    pub tokenizer: Option<&'a crate::tokens::Tokenizer>,
    pub thresholds: Thresholds,
    /// Rolling progress every this often (0: none).
    pub live_interval_ns: u64,
}

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
