//! MLPerf mode's result files, written beside our own when a run has
//! `preset: mlperf`: `performance/result_summary.json` (the file MLPerf's
//! submission tooling reads), `sample_idx_map.json` (request id → dataset
//! row), and an "MLPerf" section appended to `report.txt`. They follow
//! MLPerf's metric contract (`contract`), which differs from ours in the
//! TTFT anchor, in counting failures in latency and QPS, and in LoadGen's
//! QPS window; our `summary.json` keeps our definitions. The trade-off of
//! reading MLPerf's exact order statistics from HDR histograms (within
//! 0.1 %, no samples kept) is `metrics::mlperf`'s.

pub(crate) mod contract;
pub(crate) mod samples;
pub(crate) mod series;
pub(crate) mod summary;
#[cfg(test)]
mod tests;
pub(crate) mod text;

use serde::Serialize;

use super::events::SampleRow;
use crate::metrics::run::RunResult;
use crate::plan::{ArrivalKind, Load};
use summary::ResultSummary;

/// What the MLPerf files need beyond the engine's result.
#[derive(Clone, Debug, Default)]
pub(crate) struct MlperfInfo {
    pub run_config: RunConfig,
    /// Every stage is a Poisson open loop: QPS and TPS over LoadGen's window.
    pub legacy_window: bool,
    /// MLPerf's early-stopping estimates for ttft, tpot and latency
    /// (`settings.early_stopping.enabled`); off, the key is left out, as
    /// MLPerf leaves it.
    pub early_stopping: bool,
    /// CLOCK_MONOTONIC ns when the run started.
    pub test_started_at: u64,
    /// Responses were streamed: without a stream MLPerf records no TTFT
    /// or TPOT and writes both as `{}`.
    pub streaming: bool,
    /// A tokenizer counted the tokens: without one MLPerf records no
    /// sequence lengths (`{}`) and no `tps`; the endpoint's usage counts
    /// stay in our own summary.
    pub tokenizer: bool,
    /// Every measured request's id and dataset row.
    pub sample_rows: Vec<SampleRow>,
    /// A performance phase ran (an accuracy-only run has none, and no
    /// `result_summary.json`).
    pub performance: bool,
    /// Each accuracy dataset's requests, by the dataset's name.
    pub accuracy_rows: Vec<(String, Vec<SampleRow>)>,
}

/// `run_config` of the summary: the settings that identify a valid run,
/// in the reference's key order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct RunConfig {
    pub load_pattern: LoadPattern,
    pub warmup: WarmupConfig,
    pub scheduler_random_seed: u64,
    pub dataloader_random_seed: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct LoadPattern {
    /// `max_throughput`, `poisson`, `concurrency`, or our `uniform`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub target_qps: Option<f64>,
    pub target_concurrency: Option<u64>,
    /// Written for a poisson pattern only, as MLPerf serializes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_legacy_loadgen_qps_metrics: Option<bool>,
}

impl LoadPattern {
    /// MLPerf's name for a stage's load; a ramp reports its starting rate.
    pub(crate) fn of(load: &Load) -> LoadPattern {
        match *load {
            Load::Offline => LoadPattern {
                kind: "max_throughput",
                ..LoadPattern::default()
            },
            Load::Closed { concurrency } => LoadPattern {
                kind: "concurrency",
                target_qps: None,
                target_concurrency: Some(concurrency as u64),
                use_legacy_loadgen_qps_metrics: None,
            },
            Load::Open {
                kind, rate_from, ..
            } => LoadPattern {
                kind: match kind {
                    ArrivalKind::Poisson => "poisson",
                    ArrivalKind::Uniform => "uniform",
                },
                target_qps: Some(rate_from),
                target_concurrency: None,
                // MLPerf's default; `with_legacy_qps` sets the config's.
                use_legacy_loadgen_qps_metrics: (kind == ArrivalKind::Poisson).then_some(true),
            },
        }
    }
}

impl LoadPattern {
    /// The pattern with the config's `use_legacy_loadgen_qps_metrics`
    /// (which only a poisson pattern carries).
    pub(crate) fn with_legacy_qps(mut self, legacy: Option<bool>) -> LoadPattern {
        if let (Some(v), Some(l)) = (self.use_legacy_loadgen_qps_metrics.as_mut(), legacy) {
            *v = l;
        }
        self
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct WarmupConfig {
    pub enabled: bool,
    pub n_requests: Option<u64>,
    /// We never salt warm-up prompts.
    pub salt: bool,
    /// Our warm-up never waits for its requests before measuring.
    pub drain: bool,
    pub warmup_random_seed: u64,
}

/// The MLPerf files of `run`, as (path in the report directory, bytes), and
/// the section for `report.txt`.
pub(crate) fn render(run: &RunResult, info: &MlperfInfo) -> (Vec<(&'static str, Vec<u8>)>, String) {
    let perf = info.performance.then_some(&info.sample_rows[..]);
    let mut files = vec![(
        "sample_idx_map.json",
        samples::render(perf, &info.accuracy_rows),
    )];
    if !info.performance {
        return (files, String::new());
    }
    let summary = ResultSummary::build(run, info);
    files.insert(0, ("performance/result_summary.json", summary.to_json()));
    (files, text::render(&summary))
}
