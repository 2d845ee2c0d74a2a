//! One measured quantity (a latency, a gap, a lateness) in nanoseconds: an
//! HDR histogram (3 significant digits, 1 ns to 1 hour, never resized) for
//! percentiles, beside exact count, sum, min and max. Values past the
//! histogram's range are clamped into it there but stay exact in min/max/mean.

use serde::Serialize;

/// A recorded series of nanosecond values.
#[derive(Clone, Debug)]
pub struct Series {
    _private: (),
}

/// The rollup the report shows, in a chosen unit (ms for latencies, µs for
/// lateness). Every field is `None` when nothing was recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl Default for Series {
    fn default() -> Self {
        Self::new()
    }
}

impl Series {
    pub fn new() -> Self {
        todo!("metrics helper")
    }

    /// Records one value in nanoseconds. Never allocates.
    pub fn record(&mut self, ns: u64) {
        let _ = ns;
        todo!("metrics helper")
    }

    /// Adds every value of `other` (stage rollups into the run total).
    pub fn merge(&mut self, other: &Series) {
        let _ = other;
        todo!("metrics helper")
    }

    pub fn count(&self) -> u64 {
        todo!("metrics helper")
    }

    /// Value at quantile `q` in `0.0..=1.0`, in nanoseconds; `None` when empty.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        let _ = q;
        todo!("metrics helper")
    }

    /// The rollup with every value divided by `unit_ns` (1e6 for ms, 1e3 for µs).
    pub fn summary(&self, unit_ns: f64) -> Summary {
        let _ = unit_ns;
        todo!("metrics helper")
    }
}
