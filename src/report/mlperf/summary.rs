//! `performance/result_summary.json`: the file MLPerf's submission tooling
//! reads, in the key order and units of the reference's `Report`
//! (`metrics/report.py`): times in ns, counts as integers, `null` where the
//! reference writes `None`. It covers the run's measured requests (every
//! stage and scenario, warmup excluded) under MLPerf's metric contract
//! (`super::contract`).

use serde::Serialize;

use super::contract;
use super::series::SeriesStats;
use super::{MlperfInfo, RunConfig};
use crate::metrics::errors::ErrorClass;
use crate::metrics::run::RunResult;
use crate::protocol::Finish;

/// The whole document, fields in the reference's order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ResultSummary {
    /// Which TPOT the file holds, for the report (not a field of MLPerf's).
    #[serde(skip)]
    pub tpot_contract: &'static str,
    pub version: String,
    pub git_sha: Option<String>,
    /// CLOCK_MONOTONIC ns when the run started (the reference's
    /// session-start stamp; it writes 0 until it has one).
    pub test_started_at: u64,
    pub n_samples_issued: u64,
    /// Every request that finished, failures included (MLPerf counts a
    /// failed query as completed).
    pub n_samples_completed: u64,
    pub n_samples_failed: u64,
    /// The measured window: its start to the last completion.
    pub duration_ns: Option<u64>,
    /// `complete` or `interrupted`.
    pub state: &'static str,
    pub complete: bool,
    pub ttft: SeriesStats,
    pub tpot: SeriesStats,
    pub latency: SeriesStats,
    pub output_sequence_lengths: SeriesStats,
    pub input_sequence_lengths: SeriesStats,
    /// LoadGen's window when `qps` and `tps` are over it (poisson), else null.
    pub legacy_loadgen_window_duration_ns: Option<u64>,
    pub qps: Option<f64>,
    pub tps: Option<f64>,
    pub finish_reason_counts: FinishReasonCounts,
    pub run_config: RunConfig,
}

/// Successful requests by finish reason, MLPerf's six names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct FinishReasonCounts {
    pub stop: u64,
    pub length: u64,
    pub tool_calls: u64,
    pub content_filter: u64,
    /// Servers' `function_call` is counted with `tool_calls`: always 0.
    pub function_call: u64,
    pub other: u64,
}

impl ResultSummary {
    pub(crate) fn build(run: &RunResult, info: &MlperfInfo) -> ResultSummary {
        let b = &run.total;
        let lost = b.errors.get(ErrorClass::WorkerLost);
        let n_completed = (b.completed + b.failed).saturating_sub(lost);
        let duration_ns = (run.total_window_ns > 0).then_some(run.total_window_ns);
        let none = || SeriesStats {
            rollups: None,
            early_stopping: None,
        };
        let osl = if info.tokenizer {
            SeriesStats::of(&b.osl, false)
        } else {
            none()
        };
        let osl_total = osl.rollups.as_ref().map(|r| r.total as f64);
        // As the reference: LoadGen's window only when asked for, measured,
        // and with the two completions its (n − 1) needs; otherwise both
        // rates fall back to the measured window and the field says so.
        let window = b
            .loadgen_window_ns()
            .filter(|_| info.legacy_window && n_completed >= 2);
        let (qps, tps) = match (window, duration_ns) {
            (Some(w), _) => {
                let s = w as f64 / 1e9;
                (Some((n_completed - 1) as f64 / s), osl_total.map(|t| t / s))
            }
            (None, Some(d)) => {
                let s = d as f64 / 1e9;
                (Some(n_completed as f64 / s), osl_total.map(|t| t / s))
            }
            (None, None) => (None, None),
        };
        let finish = |f: Finish| b.finish[f as usize];
        ResultSummary {
            tpot_contract: contract::tpot_contract(b),
            version: env!("CARGO_PKG_VERSION").into(),
            // Set by build.rs from the checkout, or given when building.
            git_sha: option_env!("LLMLOAD_GIT_SHA")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            test_started_at: info.test_started_at,
            n_samples_issued: b.issued,
            n_samples_completed: n_completed,
            n_samples_failed: b.failed,
            duration_ns,
            state: if run.interrupted {
                "interrupted"
            } else {
                "complete"
            },
            complete: run.complete,
            ttft: match info.streaming {
                true => SeriesStats::of(contract::ttft(b), info.early_stopping),
                false => none(),
            },
            tpot: match info.streaming {
                true => SeriesStats::of(contract::tpot(b), info.early_stopping),
                false => none(),
            },
            latency: SeriesStats::of(contract::latency(b), info.early_stopping),
            output_sequence_lengths: osl,
            // Counted at issue, as MLPerf tokenizes each prompt it sends.
            input_sequence_lengths: match info.tokenizer {
                true => SeriesStats::of(&b.isl_issued, false),
                false => none(),
            },
            legacy_loadgen_window_duration_ns: window,
            qps,
            tps,
            finish_reason_counts: FinishReasonCounts {
                stop: finish(Finish::Stop),
                length: finish(Finish::Length),
                tool_calls: finish(Finish::ToolCalls),
                content_filter: finish(Finish::ContentFilter),
                function_call: 0,
                other: finish(Finish::Other),
            },
            run_config: info.run_config.clone(),
        }
    }

    /// The document as MLPerf writes it: indented by two, a final newline.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a result summary serializes");
        out.push(b'\n');
        out
    }
}
