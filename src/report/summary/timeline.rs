//! The run second by second (`timeline` in summary.json, `timeline.csv`,
//! the HTML's curves): what ended in each interval, per scenario and for
//! the whole run, from the per-second buckets the parent keeps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every interval of the run, from its start (warm-up included, marked).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Timeline {
    /// Bucket width, s (1 unless the run said otherwise).
    pub interval_s: f64,
    /// The whole run first (`scenario: None`), then each scenario when
    /// there are several.
    pub series: Vec<TimelineSeries>,
}

/// One slice's buckets, in time order, none skipped (an idle second is a
/// point with zero counts).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct TimelineSeries {
    /// `None` for the whole run.
    pub scenario: Option<String>,
    pub points: Vec<TimelinePoint>,
}

/// What ended in one interval `[t_s, t_s + interval_s)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct TimelinePoint {
    /// Start of the interval, s since the run started.
    pub t_s: f64,
    /// The stage running at the interval's start, or `warmup`.
    pub stage: String,
    pub completed: u64,
    pub failed: u64,
    /// Failures by key (`reset`, `http_503`, …); only keys that occurred.
    pub errors: BTreeMap<String, u64>,
    /// Output and input tokens of the requests completed in the interval.
    pub output_tokens: u64,
    pub input_tokens: u64,
    /// Requests that met every `--slo` bound; `None` without `--slo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub good: Option<u64>,
    /// Requests in flight at the interval's end (whole run only; the
    /// scenarios' series leave it 0).
    pub in_flight: u64,
    /// completed / interval_s, output_tokens / interval_s.
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    /// Of the requests completed in the interval, ms; `None` when none.
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p99_ms: Option<f64>,
}
