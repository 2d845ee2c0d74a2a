//! Goodput: the requests that succeeded and met every `--slo` bound
//! (DistServe's and vLLM's definition), per slice.

use serde::{Deserialize, Serialize};

/// A slice's goodput; absent without `--slo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Goodput {
    /// The bounds, ms; a bound not given is `None`.
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    /// Requests that succeeded and met every bound.
    pub good: u64,
    /// good / issued × 100 (failures count against it); `None` when
    /// nothing was issued.
    pub attainment_pct: Option<f64>,
    /// Good requests and their output tokens per second of the window.
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    /// Successful requests that missed each bound (a request may miss
    /// several).
    pub missed_ttft: u64,
    pub missed_tpot: u64,
    pub missed_e2e: u64,
}
