//! The load engine. The parent process (`parent`) decides when each
//! request is due and collects results; forked workers (`worker`) do all
//! socket I/O; the rings between them are `shm::run`'s, and `supervisor`
//! forks, pins and reaps. One loop serves every load shape: a stage is an arrival
//! source (`Load`) plus a stop condition (duration and/or request count).

pub(crate) mod arrival;
pub(crate) mod conn;
pub(crate) mod conversation;
pub(crate) mod io;
pub(crate) mod parent;
pub(crate) mod ports;
pub(crate) mod record;
pub(crate) mod requests;
pub(crate) mod stages;
pub(crate) mod supervisor;
pub(crate) mod token_lane;
pub(crate) mod worker;

use std::net::SocketAddr;

use crate::plan::{Checks, Limits, StagePlan, Thresholds};
use crate::protocol::Protocol;
use crate::tls::TlsClient;
use requests::RequestSet;

/// One endpoint the workers connect to: where, whether over TLS, and
/// whether its connections are reused. Scenarios that share all three
/// share one entry, and with it one pool of idle connections per worker.
#[derive(Clone, Debug)]
pub(crate) struct EndpointPlan {
    /// The URL as it may be echoed (query values masked), for the
    /// per-endpoint results.
    pub url: String,
    /// `None` for a host that did not resolve (its requests fail as
    /// `dns_error`).
    pub addr: Option<SocketAddr>,
    /// The TLS client of an https endpoint, built before the fork: each
    /// worker process then resumes from its own copy of its session store.
    pub tls: Option<TlsClient>,
    /// Connections go back to the idle pool after a response; false: each
    /// carries one request (sent with `Connection: close`) and is closed.
    pub keep_alive: bool,
}

/// One weighted kind of traffic: its wire format, endpoint, content and
/// checks.
pub(crate) struct ScenarioPlan<'a> {
    pub name: String,
    /// Share of concurrency (closed loop) or of arrivals (open loop).
    pub weight: f64,
    pub protocol: &'a dyn Protocol,
    /// Indices into `Plan::endpoints`: the servers that share this
    /// scenario's requests (one, or several from `--endpoints`). Position
    /// `k` here is target `k` of `requests` and of `conversation`.
    pub endpoints: Vec<usize>,
    /// Prebuilt requests of a single-turn scenario (empty when multi-turn).
    pub requests: RequestSet,
    /// A request's sample index is the dataset row its prompt came from
    /// (a single-turn scenario reading a dataset); false for synthetic
    /// prompts, pools and conversations.
    pub rows: bool,
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

impl<'a> ScenarioPlan<'a> {
    /// A plain single-turn scenario of weight 1 without checks, as the
    /// engine's own tests build them.
    #[cfg(test)]
    pub(crate) fn plain(
        name: &str,
        protocol: &'a dyn Protocol,
        endpoints: Vec<usize>,
        requests: RequestSet,
    ) -> Self {
        ScenarioPlan {
            name: name.into(),
            weight: 1.0,
            protocol,
            endpoints,
            requests,
            rows: false,
            conversation: None,
            turns: (1, 1),
            think_time_ns: 0,
            order: crate::dataset::Order::Sequential,
            checks: Checks::default(),
            keep_text: false,
        }
    }

    /// Samples the parent picks from.
    pub(crate) fn samples(&self) -> usize {
        match &self.conversation {
            Some(c) => c.turns.len().max(1),
            None => self.requests.len().max(1),
        }
    }
}

/// MLPerf's draws: its warm-up phase's generators are seeded apart from
/// the measured ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PythonDraws {
    /// `warmup_random_seed`: the warm-up's arrivals come from it, its
    /// sample order from it + 1.
    pub warmup_seed: u64,
}

/// Everything the engine needs for a run.
pub(crate) struct Plan<'a> {
    /// Masked in every message a server sent back (`http::redact`): some
    /// echo the credentials they refused.
    pub secrets: Vec<String>,
    /// Every endpoint scenarios send to, resolved once.
    pub endpoints: Vec<EndpointPlan>,
    pub scenarios: Vec<ScenarioPlan<'a>>,
    pub stages: Vec<StagePlan>,
    /// Run before the first stage is measured, with the first stage's load.
    pub warmup_ns: u64,
    /// Conversations issued (with the first stage's load) before measuring;
    /// with `warmup_ns` too, measuring begins once both are done.
    pub warmup_requests: u64,
    pub workers: usize,
    pub pin: bool,
    /// Connections across all workers.
    pub connections: usize,
    /// In-flight bound of open loops; arrivals beyond it wait, charged from
    /// their scheduled time.
    pub openloop_max_inflight: Option<u64>,
    pub limits: Limits,
    /// Seeds the arrival schedules and the scenario of each arrival (and
    /// the workers' conversation ids).
    pub scheduler_seed: u64,
    /// Seeds each scenario's sample order.
    pub dataloader_seed: u64,
    /// Sample orders and Poisson arrivals drawn as MLPerf Inference
    /// Endpoint draws them, from CPython's `random.Random` seeded with the
    /// two seeds (`None`: from our own generator).
    pub python_draws: Option<PythonDraws>,
    /// Workers send each response's text (to count tokens or record outputs).
    pub keep_text: bool,
    /// Counts output tokens of responses that report no usage (or of
    /// every response, with `TokenPolicy::Tokenizer`).
    pub tokenizer: Option<&'a crate::tokens::Tokenizer>,
    /// Where token counts come from (`--token-source`).
    pub token_source: crate::plan::TokenPolicy,
    pub thresholds: Thresholds,
    /// Rolling progress every this often (0: none).
    pub live_interval_ns: u64,
    /// Stop when this many first completions all failed alike for a reason
    /// load cannot change (`--fail-fast`); `None`: never.
    pub fail_fast: Option<u64>,
    /// Goodput's bounds (empty: none).
    pub slo: crate::plan::Slo,
    /// The I/O backend and the local addresses connections come from.
    pub io: io::IoPlan,
    /// Hold time zero until the wall clock reads this (Unix ns), once the
    /// workers are ready (`--start-at`).
    pub start_at_unix_ns: Option<u64>,
    /// Uniform arrivals' place between the points of their rate's grid,
    /// `[0, 1)`: a shard's `(i−1)/N`, 0 unsharded.
    pub uniform_phase: f64,
    /// A shard's part of every scenario's samples: `(index from 0,
    /// count)`, each picker covering the samples `r % count == index`.
    pub partition: Option<(u32, u32)>,
}
