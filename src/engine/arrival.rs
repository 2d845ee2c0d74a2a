//! When open-loop requests are due: uniform (evenly paced) or Poisson
//! (exponential gaps), at a constant rate or along a linear ramp from
//! `rate_from` to `rate_to` over a stage. Every shape is one rule: arrival k
//! is at `Λ⁻¹(x_k)`, where `Λ(t)` is the cumulative expected arrivals by time
//! t and `x_k` is `k` (uniform) or the k-th point of a unit-rate Poisson
//! process (Poisson, which makes a ramp a non-homogeneous Poisson process).

use std::time::Duration;

/// Inter-arrival law.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArrivalKind {
    Uniform,
    Poisson,
}

/// A sequence of arrival offsets from the start of a stage.
#[derive(Clone, Debug)]
pub struct Arrivals {
    _private: (),
}

impl Arrivals {
    /// `rate` arrivals per second for as long as the caller asks. Uniform
    /// arrivals start at offset 0.
    pub fn constant(kind: ArrivalKind, rate: f64, seed: u64) -> Self {
        let _ = (kind, rate, seed);
        todo!("metrics helper")
    }

    /// Rate sweeping linearly from `rate_from` to `rate_to` over `duration`;
    /// the sequence ends at `duration`.
    pub fn ramp(
        kind: ArrivalKind,
        rate_from: f64,
        rate_to: f64,
        duration: Duration,
        seed: u64,
    ) -> Self {
        let _ = (kind, rate_from, rate_to, duration, seed);
        todo!("metrics helper")
    }

    /// Offset in nanoseconds of the next arrival, non-decreasing; `None` once
    /// a ramp's duration has passed.
    pub fn next_offset_ns(&mut self) -> Option<u64> {
        todo!("metrics helper")
    }
}
