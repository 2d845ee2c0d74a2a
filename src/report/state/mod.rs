//! `summary.json`'s `state`: everything a merge needs that the rendered
//! numbers lose — every block's exact counts and sums, its histograms in
//! HdrHistogram's V2 compressed encoding (base64), the stages' measured
//! windows and the timeline's buckets — so `llmload merge` rebuilds each
//! shard's `RunResult` exactly (`RunState::to_run`) and merges those, never
//! percentiles. Times are the shard's CLOCK_MONOTONIC ns; `run_start_ns`
//! and `started_wall_ns` are one instant on both clocks, the anchor a merge
//! rebases them through. The cost is size: a few KiB per histogram.

mod block;
#[cfg(test)]
mod tests;
mod timeline;

use serde::{Deserialize, Serialize};

pub(crate) use block::{BlockState, ConnTimesState, EndpointState};
pub(crate) use timeline::TimelineState;

use crate::metrics::run::{
    ConnectionStats, GeneratorStats, Incomplete, Limit, RunResult, ScenarioResult, StageResult,
    ThresholdAbort,
};
use crate::metrics::thresholds::{self, Verdict};
use crate::plan::{self, ArrivalKind};
use crate::report::summary::Load;
use crate::sys::process::Exit;

/// The format of `state`; a reader refuses others.
pub(crate) const VERSION: u32 = 1;

/// A run's mergeable state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RunState {
    pub version: u32,
    /// CLOCK_MONOTONIC ns of the run's time zero (timeline, windows) …
    pub run_start_ns: u64,
    /// … and the same instant in Unix ns.
    pub started_wall_ns: u64,
    pub startup_ns: u64,
    /// The measured window(s), `[from, to]` monotonic ns.
    pub measured: Vec<[u64; 2]>,
    pub total_window_ns: u64,
    pub thresholds: plan::Thresholds,
    pub thresholds_passed: bool,
    pub aborted_on_threshold: Option<AbortState>,
    pub slo: plan::Slo,
    pub stages: Vec<StageState>,
    pub total: BlockState,
    pub scenarios: Vec<NamedBlock>,
    pub warmup: BlockState,
    pub generator: GeneratorState,
    pub connections: ConnectionsState,
    pub endpoints: Vec<EndpointState>,
    pub interrupted: bool,
    pub complete: bool,
    pub incomplete: Vec<IncompleteState>,
    pub timeline: TimelineState,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct NamedBlock {
    pub name: String,
    pub block: BlockState,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StageState {
    pub name: String,
    pub load: Load,
    pub measured: Vec<[u64; 2]>,
    pub window_ns: u64,
    pub block: BlockState,
    pub scenarios: Vec<NamedBlock>,
    pub thresholds: Vec<VerdictState>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct VerdictState {
    pub name: String,
    pub limit: f64,
    pub value: Option<f64>,
    pub pass: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct AbortState {
    pub stage: String,
    pub broken: Vec<String>,
}

/// `GeneratorStats`; `limits` as the engine found them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct GeneratorState {
    pub workers: usize,
    pub ring_full: u64,
    pub held_back: u64,
    pub waited_for_connection: u64,
    pub completion_ring_full: u64,
    pub itl_truncated: u64,
    pub connections_opened: u64,
    pub stale_retries: u64,
    pub worker_busy_max: f64,
    pub corrupt_records: u64,
    pub max_inflight: u64,
    pub worker_max_rss_kib: Vec<u64>,
    pub limits: Vec<LimitState>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum LimitState {
    RingFull { n: u64 },
    WaitedForConnection { n: u64 },
    HeldBack { n: u64 },
    CompletionRingFull { n: u64 },
    WorkerBusy { share: f64 },
    SendLateness { p99_ns: u64 },
    Descriptors { fds: u64, ports: u64 },
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ConnectionsState {
    pub opened: u64,
    pub resumed: u64,
    pub failed: u64,
    pub opened_in_window: u64,
    pub tls: bool,
    pub keep_alive: bool,
    pub tcp_connect: ConnTimesState,
    pub tls_handshake: ConnTimesState,
}

/// `Incomplete`, its facts kept (the English is the summary's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum IncompleteState {
    Interrupted,
    WorkerDied {
        worker: usize,
        pid: i32,
        /// `{"status": n}`, `{"signal": n}` or `"lost"`.
        exit: ExitState,
        lost: u64,
    },
    CorruptRecord {
        worker: usize,
        pid: i32,
        lost: u64,
    },
    NeverReported {
        lost: u64,
    },
    ThresholdAbort(AbortState),
    AccuracyPhase {
        why: String,
    },
    ShardMissing {
        index: u32,
        count: u32,
    },
    ShardPartial {
        index: u32,
        count: u32,
        reasons: Vec<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ExitState {
    Status(i32),
    Signal(i32),
    Lost,
}

fn pairs(v: &[(u64, u64)]) -> Vec<[u64; 2]> {
    v.iter().map(|&(a, b)| [a, b]).collect()
}

fn tuples(v: &[[u64; 2]]) -> Vec<(u64, u64)> {
    v.iter().map(|&[a, b]| (a, b)).collect()
}

/// A threshold's name as the engine spells it (`Verdict::name`).
fn threshold_name(name: &str) -> Result<&'static str, String> {
    thresholds::NAMES
        .iter()
        .find(|n| **n == name)
        .copied()
        .ok_or_else(|| format!("unknown threshold {name:?}"))
}

fn named(v: &[ScenarioResult]) -> Vec<NamedBlock> {
    v.iter()
        .map(|s| NamedBlock {
            name: s.name.clone(),
            block: BlockState::of(&s.block),
        })
        .collect()
}

fn scenarios(v: &[NamedBlock], at: &str) -> Result<Vec<ScenarioResult>, String> {
    v.iter()
        .map(|s| {
            Ok(ScenarioResult {
                name: s.name.clone(),
                block: s
                    .block
                    .to_block()
                    .map_err(|e| format!("{at} {:?}: {e}", s.name))?,
            })
        })
        .collect()
}

impl RunState {
    /// The state of `run`.
    pub(crate) fn of(run: &RunResult) -> RunState {
        let g = &run.generator;
        let c = &run.connections;
        RunState {
            version: VERSION,
            run_start_ns: run.run_start_ns,
            started_wall_ns: run.started_wall_ns,
            startup_ns: run.startup_ns,
            measured: pairs(&run.measured),
            total_window_ns: run.total_window_ns,
            thresholds: run.thresholds.clone(),
            thresholds_passed: run.thresholds_passed,
            aborted_on_threshold: run.aborted_on_threshold.as_ref().map(AbortState::of),
            slo: run.slo,
            stages: run.stages.iter().map(StageState::of).collect(),
            total: BlockState::of(&run.total),
            scenarios: named(&run.scenarios),
            warmup: BlockState::of(&run.warmup),
            generator: GeneratorState {
                workers: g.workers,
                ring_full: g.ring_full,
                held_back: g.held_back,
                waited_for_connection: g.waited_for_connection,
                completion_ring_full: g.completion_ring_full,
                itl_truncated: g.itl_truncated,
                connections_opened: g.connections_opened,
                stale_retries: g.stale_retries,
                worker_busy_max: g.worker_busy_max,
                corrupt_records: g.corrupt_records,
                max_inflight: g.max_inflight,
                worker_max_rss_kib: g.worker_max_rss_kib.clone(),
                limits: g.limits.iter().map(LimitState::of).collect(),
            },
            connections: ConnectionsState {
                opened: c.opened,
                resumed: c.resumed,
                failed: c.failed,
                opened_in_window: c.opened_in_window,
                tls: c.tls,
                keep_alive: c.keep_alive,
                tcp_connect: ConnTimesState::of(&c.tcp_connect),
                tls_handshake: ConnTimesState::of(&c.tls_handshake),
            },
            endpoints: run.endpoints.iter().map(EndpointState::of).collect(),
            interrupted: run.interrupted,
            complete: run.complete,
            incomplete: run
                .incomplete_reasons
                .iter()
                .map(IncompleteState::of)
                .collect(),
            timeline: TimelineState::of(&run.timeline),
        }
    }

    /// The run this state was made of; an error names the part at fault.
    pub(crate) fn to_run(&self) -> Result<RunResult, String> {
        if self.version != VERSION {
            return Err(format!(
                "state version {} (this llmload reads {VERSION})",
                self.version
            ));
        }
        let g = &self.generator;
        let c = &self.connections;
        let mut stages = Vec::with_capacity(self.stages.len());
        for s in &self.stages {
            stages.push(
                s.to_stage()
                    .map_err(|e| format!("stage {:?}: {e}", s.name))?,
            );
        }
        let endpoints = self
            .endpoints
            .iter()
            .map(|e| e.to_stats().map_err(|m| format!("endpoint {}: {m}", e.url)))
            .collect::<Result<_, _>>()?;
        Ok(RunResult {
            started_wall_ns: self.started_wall_ns,
            run_start_ns: self.run_start_ns,
            stages,
            total: self.total.to_block().map_err(|e| format!("total: {e}"))?,
            scenarios: scenarios(&self.scenarios, "scenario")?,
            thresholds_passed: self.thresholds_passed,
            aborted_on_threshold: self
                .aborted_on_threshold
                .as_ref()
                .map(AbortState::to_abort)
                .transpose()?,
            total_window_ns: self.total_window_ns,
            measured: tuples(&self.measured),
            thresholds: self.thresholds.clone(),
            warmup: self.warmup.to_block().map_err(|e| format!("warmup: {e}"))?,
            generator: GeneratorStats {
                workers: g.workers,
                ring_full: g.ring_full,
                held_back: g.held_back,
                waited_for_connection: g.waited_for_connection,
                completion_ring_full: g.completion_ring_full,
                itl_truncated: g.itl_truncated,
                connections_opened: g.connections_opened,
                stale_retries: g.stale_retries,
                worker_busy_max: g.worker_busy_max,
                corrupt_records: g.corrupt_records,
                max_inflight: g.max_inflight,
                worker_max_rss_kib: g.worker_max_rss_kib.clone(),
                limits: g.limits.iter().map(LimitState::to_limit).collect(),
            },
            connections: ConnectionStats {
                opened: c.opened,
                resumed: c.resumed,
                failed: c.failed,
                opened_in_window: c.opened_in_window,
                tls: c.tls,
                keep_alive: c.keep_alive,
                tcp_connect: c.tcp_connect.to_times(),
                tls_handshake: c.tls_handshake.to_times(),
            },
            interrupted: self.interrupted,
            complete: self.complete,
            incomplete_reasons: self
                .incomplete
                .iter()
                .map(IncompleteState::to_incomplete)
                .collect::<Result<_, _>>()?,
            startup_ns: self.startup_ns,
            endpoints,
            timeline: self
                .timeline
                .to_timeline()
                .map_err(|e| format!("timeline: {e}"))?,
            slo: self.slo,
        })
    }
}

impl StageState {
    fn of(s: &StageResult) -> StageState {
        StageState {
            name: s.name.clone(),
            load: Load::from(&s.load),
            measured: pairs(&s.measured),
            window_ns: s.window_ns,
            block: BlockState::of(&s.block),
            scenarios: named(&s.scenarios),
            thresholds: s
                .thresholds
                .iter()
                .map(|v| VerdictState {
                    name: v.name.to_string(),
                    limit: v.limit,
                    value: v.value,
                    pass: v.pass,
                })
                .collect(),
        }
    }

    fn to_stage(&self) -> Result<StageResult, String> {
        let thresholds = self
            .thresholds
            .iter()
            .map(|v| {
                Ok(Verdict {
                    name: threshold_name(&v.name)?,
                    limit: v.limit,
                    value: v.value,
                    pass: v.pass,
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(StageResult {
            name: self.name.clone(),
            load: plan_load(self.load),
            block: self.block.to_block()?,
            scenarios: scenarios(&self.scenarios, "scenario")?,
            window_ns: self.window_ns,
            measured: tuples(&self.measured),
            thresholds,
        })
    }
}

/// The plan's load a summary's `Load` names.
fn plan_load(l: Load) -> plan::Load {
    match l {
        Load::Concurrency { concurrency } => plan::Load::Closed { concurrency },
        Load::Offline => plan::Load::Offline,
        Load::Poisson { rate_from, rate_to } => plan::Load::Open {
            kind: ArrivalKind::Poisson,
            rate_from,
            rate_to,
        },
        Load::Uniform { rate_from, rate_to } => plan::Load::Open {
            kind: ArrivalKind::Uniform,
            rate_from,
            rate_to,
        },
    }
}

impl AbortState {
    fn of(a: &ThresholdAbort) -> AbortState {
        AbortState {
            stage: a.stage.clone(),
            broken: a.broken.iter().map(|b| b.to_string()).collect(),
        }
    }

    fn to_abort(&self) -> Result<ThresholdAbort, String> {
        Ok(ThresholdAbort {
            stage: self.stage.clone(),
            broken: self
                .broken
                .iter()
                .map(|b| threshold_name(b))
                .collect::<Result<_, _>>()?,
        })
    }
}

impl LimitState {
    fn of(l: &Limit) -> LimitState {
        match *l {
            Limit::RingFull(n) => LimitState::RingFull { n },
            Limit::WaitedForConnection(n) => LimitState::WaitedForConnection { n },
            Limit::HeldBack(n) => LimitState::HeldBack { n },
            Limit::CompletionRingFull(n) => LimitState::CompletionRingFull { n },
            Limit::WorkerBusy(share) => LimitState::WorkerBusy { share },
            Limit::SendLateness { p99_ns } => LimitState::SendLateness { p99_ns },
            Limit::Descriptors { fds, ports } => LimitState::Descriptors { fds, ports },
        }
    }

    fn to_limit(&self) -> Limit {
        match *self {
            LimitState::RingFull { n } => Limit::RingFull(n),
            LimitState::WaitedForConnection { n } => Limit::WaitedForConnection(n),
            LimitState::HeldBack { n } => Limit::HeldBack(n),
            LimitState::CompletionRingFull { n } => Limit::CompletionRingFull(n),
            LimitState::WorkerBusy { share } => Limit::WorkerBusy(share),
            LimitState::SendLateness { p99_ns } => Limit::SendLateness { p99_ns },
            LimitState::Descriptors { fds, ports } => Limit::Descriptors { fds, ports },
        }
    }
}

impl IncompleteState {
    fn of(i: &Incomplete) -> IncompleteState {
        match i {
            Incomplete::Interrupted => IncompleteState::Interrupted,
            &Incomplete::WorkerDied {
                worker,
                pid,
                how,
                lost,
            } => IncompleteState::WorkerDied {
                worker,
                pid,
                exit: match how {
                    Exit::Status(n) => ExitState::Status(n),
                    Exit::Signal(n) => ExitState::Signal(n),
                    Exit::Lost => ExitState::Lost,
                },
                lost,
            },
            &Incomplete::CorruptRecord { worker, pid, lost } => {
                IncompleteState::CorruptRecord { worker, pid, lost }
            }
            &Incomplete::NeverReported { lost } => IncompleteState::NeverReported { lost },
            Incomplete::ThresholdAbort(a) => IncompleteState::ThresholdAbort(AbortState::of(a)),
            Incomplete::AccuracyPhase(why) => IncompleteState::AccuracyPhase { why: why.clone() },
            &Incomplete::ShardMissing { index, count } => {
                IncompleteState::ShardMissing { index, count }
            }
            Incomplete::ShardPartial {
                index,
                count,
                reasons,
            } => IncompleteState::ShardPartial {
                index: *index,
                count: *count,
                reasons: reasons.clone(),
            },
        }
    }

    fn to_incomplete(&self) -> Result<Incomplete, String> {
        Ok(match self {
            IncompleteState::Interrupted => Incomplete::Interrupted,
            &IncompleteState::WorkerDied {
                worker,
                pid,
                exit,
                lost,
            } => Incomplete::WorkerDied {
                worker,
                pid,
                how: match exit {
                    ExitState::Status(n) => Exit::Status(n),
                    ExitState::Signal(n) => Exit::Signal(n),
                    ExitState::Lost => Exit::Lost,
                },
                lost,
            },
            &IncompleteState::CorruptRecord { worker, pid, lost } => {
                Incomplete::CorruptRecord { worker, pid, lost }
            }
            &IncompleteState::NeverReported { lost } => Incomplete::NeverReported { lost },
            IncompleteState::ThresholdAbort(a) => Incomplete::ThresholdAbort(a.to_abort()?),
            IncompleteState::AccuracyPhase { why } => Incomplete::AccuracyPhase(why.clone()),
            &IncompleteState::ShardMissing { index, count } => {
                Incomplete::ShardMissing { index, count }
            }
            IncompleteState::ShardPartial {
                index,
                count,
                reasons,
            } => Incomplete::ShardPartial {
                index: *index,
                count: *count,
                reasons: reasons.clone(),
            },
        })
    }
}
