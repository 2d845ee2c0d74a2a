//! Whole distributions, for the HTML's CDFs and histograms: a slice's
//! series read off its HDR histogram as points, so a report re-rendered
//! from summary.json draws the same curves.

use serde::{Deserialize, Serialize};

/// A slice's distributions; empty series have no points.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Distributions {
    /// CDFs, as `[value_ms, fraction ≤ value]` points with increasing value
    /// and fraction (last fraction 1.0).
    pub ttft_ms: Vec<[f64; 2]>,
    pub tpot_ms: Vec<[f64; 2]>,
    pub itl_ms: Vec<[f64; 2]>,
    pub e2e_ms: Vec<[f64; 2]>,
    /// Histograms of input and output lengths (tokens) as
    /// `[bin_low, bin_high, count]`, bins contiguous.
    pub isl: Vec<[f64; 3]>,
    pub osl: Vec<[f64; 3]>,
}
