//! One measured quantity (a latency, a gap, a lateness) in nanoseconds: an
//! HDR histogram (3 significant digits, 1 ns to 1 hour, never resized) for
//! percentiles, beside exact count, sum, min and max. Values past the
//! histogram's range are clamped into it there but stay exact in min/max/mean.
//!
//! The trade-off: a fixed ~270 KiB of counters per series, paid once at
//! construction, buys recording that never allocates and percentiles within
//! 0.1% without keeping samples. Percentiles are clamped into the exact
//! `[min, max]`, so a report never shows a p50 above its max or a p99 of a
//! single sample that differs from that sample.

use std::fmt;

use hdrhistogram::Histogram;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::dec128;
use super::hdr::{self, Bounds};
use super::mlperf::{self, HdrOrder};

/// The histogram's top: one hour in nanoseconds. Longer values are recorded
/// as one hour, so percentiles that fall among them read one hour (then at
/// most the exact max) while min, max and mean stay exact.
const HIGHEST_NS: u64 = 3_600_000_000_000;

/// Significant decimal digits the histogram resolves (relative error < 0.1%).
const SIGFIG: u8 = 3;

/// Every series' histogram bounds (what a decoded one must have).
pub(crate) const BOUNDS: Bounds = Bounds {
    low: 1,
    high: HIGHEST_NS,
    sigfig: SIGFIG,
};

/// A recorded series of nanosecond values.
#[derive(Clone)]
pub(crate) struct Series {
    hist: Histogram<u64>,
    count: u64,
    sum: u128,
    /// Σx², for the standard deviation; saturates rather than wrapping
    /// (only past ~10^13 hour-long values).
    sum_sq: u128,
    min: u64,
    max: u64,
}

/// The rollup the report shows, in a chosen unit (ms for latencies, µs for
/// lateness): the summary schema's `histogram`, with MLPerf's percentile
/// grid (1 to 99.9) and the sample standard deviation. Every field but
/// `count` is `None` when nothing was recorded (`std_dev` also where no sum
/// of squares is kept); a document that lacks a field reads as that empty
/// rollup's field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema), schemars(deny_unknown_fields))]
#[serde(default)]
pub(crate) struct Rollup {
    pub count: u64,
    pub min: Option<f64>,
    pub mean: Option<f64>,
    pub std_dev: Option<f64>,
    pub p1: Option<f64>,
    pub p5: Option<f64>,
    pub p10: Option<f64>,
    pub p25: Option<f64>,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p80: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p97: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl Rollup {
    /// A rollup whose percentiles are `at(q)` for each quantile of the grid.
    pub(crate) fn with_grid(
        count: u64,
        (min, mean, std_dev, max): (Option<f64>, Option<f64>, Option<f64>, Option<f64>),
        at: impl Fn(f64) -> Option<f64>,
    ) -> Rollup {
        Rollup {
            count,
            min,
            mean,
            std_dev,
            p1: at(0.01),
            p5: at(0.05),
            p10: at(0.10),
            p25: at(0.25),
            p50: at(0.50),
            p75: at(0.75),
            p80: at(0.80),
            p90: at(0.90),
            p95: at(0.95),
            p97: at(0.97),
            p99: at(0.99),
            p999: at(0.999),
            max,
        }
    }
}

/// A series as summary.json writes it: the exact count, sums and extremes,
/// and the histogram in HdrHistogram's V2 encoding, so a reader (`llmload
/// merge`) rebuilds the very same series and adds it to others exactly.
#[derive(Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename = "Series")]
struct SeriesDoc {
    count: u64,
    /// Exact sum of the values, a decimal string.
    #[serde(with = "dec128")]
    #[cfg_attr(test, schemars(schema_with = "dec128::schema"))]
    sum: u128,
    /// Exact sum of their squares (saturating), a decimal string.
    #[serde(with = "dec128")]
    #[cfg_attr(test, schemars(schema_with = "dec128::schema"))]
    sum_sq: u128,
    /// Exact smallest and largest value (0 when empty).
    min: u64,
    max: u64,
    /// The histogram (1 ns to 1 h, 3 significant digits), HdrHistogram V2
    /// compressed and base64; empty when nothing was recorded.
    hist: String,
}

impl Serialize for Series {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SeriesDoc {
            count: self.count,
            sum: self.sum,
            sum_sq: self.sum_sq,
            min: self.min_ns().unwrap_or(0),
            max: self.max,
            hist: if self.count > 0 {
                hdr::to_text(&self.hist)
            } else {
                String::new()
            },
        }
        .serialize(s)
    }
}

/// Refuses what a hand-edited or foreign document could get wrong: a
/// histogram of other bounds, a count the histogram does not hold, a min
/// above the max.
impl<'de> Deserialize<'de> for Series {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Series, D::Error> {
        let doc = SeriesDoc::deserialize(d)?;
        if doc.count == 0 {
            return Ok(Series::new());
        }
        let hist = hdr::from_text(&doc.hist, BOUNDS).map_err(serde::de::Error::custom)?;
        Series::from_parts(hist, (doc.count, doc.sum, doc.sum_sq), (doc.min, doc.max))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
impl schemars::JsonSchema for Series {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Series".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        SeriesDoc::json_schema(g)
    }
}

/// The exact fields and a few percentiles: the derived form would print all
/// 33 792 histogram counters.
impl fmt::Debug for Series {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Series")
            .field("count", &self.count)
            .field("min_ns", &self.min_ns())
            .field("mean_ns", &self.mean_ns())
            .field("p50_ns", &self.quantile_ns(0.5))
            .field("p99_ns", &self.quantile_ns(0.99))
            .field("max_ns", &self.max_ns())
            .finish()
    }
}

impl Default for Series {
    fn default() -> Self {
        Self::new()
    }
}

impl Series {
    pub(crate) fn new() -> Self {
        // Auto-resize off (`Bounds::histogram`): recording without
        // allocation depends on it.
        let hist = BOUNDS.histogram();
        Self {
            hist,
            count: 0,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// A series from its parts (a worker's folded gaps, a summary's
    /// state): `hist` must have `BOUNDS` and `count` must be its total count.
    pub(crate) fn from_parts(
        hist: Histogram<u64>,
        (count, sum, sum_sq): (u64, u128, u128),
        (min, max): (u64, u64),
    ) -> Result<Series, String> {
        if hist.len() != count {
            return Err(format!(
                "count {count} but the histogram holds {}",
                hist.len()
            ));
        }
        if count == 0 {
            return Ok(Series::new());
        }
        if min > max {
            return Err(format!("min {min} above max {max}"));
        }
        Ok(Series {
            hist,
            count,
            sum,
            sum_sq,
            min,
            max,
        })
    }

    /// The histogram itself (to encode it).
    pub(crate) fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Records one value in nanoseconds. Never allocates.
    pub(crate) fn record(&mut self, ns: u64) {
        // The histogram's lowest discernible value is 1, and values above its
        // top are clamped by `saturating_record`; the exact fields keep `ns`.
        self.hist.saturating_record(ns.max(1));
        self.count += 1;
        self.sum += u128::from(ns);
        self.sum_sq = self.sum_sq.saturating_add(u128::from(ns) * u128::from(ns));
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Records each of `values`, as `record` would one by one, keeping the
    /// exact fields in registers meanwhile (a worker folds a response's
    /// inter-token gaps this way). Never allocates.
    pub(crate) fn record_all(&mut self, values: &[u64]) {
        let (mut sum, mut sum_sq) = (self.sum, self.sum_sq);
        let (mut min, mut max) = (self.min, self.max);
        for &ns in values {
            self.hist.saturating_record(ns.max(1));
            sum += u128::from(ns);
            sum_sq = sum_sq.saturating_add(u128::from(ns) * u128::from(ns));
            min = min.min(ns);
            max = max.max(ns);
        }
        self.count += values.len() as u64;
        (self.sum, self.sum_sq, self.min, self.max) = (sum, sum_sq, min, max);
    }

    /// Records `ns` as `n` equal values (a value weighted by `n`, as
    /// guidellm weights a request's TPOT by its tokens). Never allocates.
    pub(crate) fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.hist.saturating_record_n(ns.max(1), n);
        self.count += n;
        let (x, w) = (u128::from(ns), u128::from(n));
        self.sum += x * w;
        self.sum_sq = self
            .sum_sq
            .saturating_add(x.saturating_mul(x).saturating_mul(w));
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Adds every value of `other` (stage rollups into the run total).
    /// Equivalent to having recorded all of `other`'s values here.
    pub(crate) fn merge(&mut self, other: &Series) {
        if other.count == 0 {
            return;
        }
        // Both histograms have the same bounds and `other` holds only
        // clamped values, so `add` can neither fail nor resize.
        self.hist
            .add(&other.hist)
            .expect("series histograms share bounds");
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Exact sum of every recorded value, in nanoseconds.
    pub(crate) fn sum_ns(&self) -> u128 {
        self.sum
    }

    /// Exact sum of the squares of every recorded value (saturating).
    pub(crate) fn sum_sq(&self) -> u128 {
        self.sum_sq
    }

    /// The sample standard deviation (divisor n − 1), exact from the sums;
    /// `None` when empty, 0 for one value.
    pub(crate) fn std_dev_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| mlperf::std_dev(self.count, self.sum, self.sum_sq))
    }

    /// MLPerf's 30-bucket log histogram of the values, over their exact
    /// min and max; `None` when empty.
    pub(crate) fn log_histogram(&self) -> Option<mlperf::LogHistogram> {
        (self.count > 0).then(|| mlperf::LogHistogram::from_hdr(&self.hist, self.min, self.max))
    }

    /// The values in ascending order as MLPerf's statistics read them: by
    /// rank from the histogram, the first and last rank the exact min and
    /// max.
    pub(crate) fn order(&self) -> HdrOrder<'_> {
        let order = HdrOrder::new(&self.hist);
        match (self.min_ns(), self.max_ns()) {
            (Some(min), Some(max)) => order.with_bounds(min, max),
            _ => order,
        }
    }

    /// Every recorded value's histogram bucket in ascending order, as
    /// (value, count): the bucket's highest equivalent value clamped into
    /// the exact `[min, max]` (so the last is the exact max), and how many
    /// values it holds. Empty when nothing was recorded.
    pub(crate) fn recorded(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let (min, max) = (self.min, self.max);
        self.hist.iter_recorded().map(move |v| {
            (
                v.value_iterated_to().clamp(min, max),
                v.count_since_last_iteration(),
            )
        })
    }

    /// Exact smallest value; `None` when empty.
    pub(crate) fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// Exact largest value; `None` when empty.
    pub(crate) fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Exact mean (up to `f64` rounding); `None` when empty.
    pub(crate) fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Value at quantile `q` in `0.0..=1.0`, in nanoseconds; `None` when empty.
    ///
    /// This is the value of rank `ceil(q * count)` (at least 1) in sorted
    /// order, to the histogram's resolution (reported as the top of its
    /// bucket, within 0.1%), then clamped into the exact `[min, max]`; so
    /// `q = 0` gives the exact min and `q = 1` the exact max. `q` outside
    /// `0..=1` is clamped; NaN reads as 0.
    pub(crate) fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        // The ends are known exactly; the histogram would give the edge of
        // a bucket (and the clamped top for values past one hour).
        if q.is_nan() || q <= 0.0 {
            return Some(self.min);
        }
        if q >= 1.0 {
            return Some(self.max);
        }
        Some(self.hist.value_at_quantile(q).clamp(self.min, self.max))
    }

    /// The rollup with every value divided by `unit_ns` (1e6 for ms, 1e3 for µs).
    pub(crate) fn rollup(&self, unit_ns: f64) -> Rollup {
        if self.count == 0 {
            return Rollup::default();
        }
        let scale = |ns: u64| Some(ns as f64 / unit_ns);
        let exact = (
            scale(self.min),
            self.mean_ns().map(|m| m / unit_ns),
            self.std_dev_ns().map(|s| s / unit_ns),
            scale(self.max),
        );
        Rollup::with_grid(self.count, exact, |q| self.quantile_ns(q).and_then(scale))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recording_all_at_once_is_recording_each() {
        let values = [0, 1, 7, 999_999, 3_600_000_000_001, u64::MAX, 42, 42];
        let (mut each, mut all) = (Series::new(), Series::new());
        each.record(5);
        all.record(5);
        for &v in &values {
            each.record(v);
        }
        all.record_all(&values);
        all.record_all(&[]);
        assert_eq!(all.histogram(), each.histogram());
        assert_eq!(
            (
                all.count(),
                all.sum_ns(),
                all.sum_sq(),
                all.min_ns(),
                all.max_ns()
            ),
            (
                each.count(),
                each.sum_ns(),
                each.sum_sq(),
                each.min_ns(),
                each.max_ns()
            )
        );
    }

    #[test]
    fn a_weighted_value_counts_as_that_many_equal_values() {
        let mut w = Series::new();
        w.record_n(10, 3);
        w.record_n(40, 1);
        w.record_n(99, 0);
        let mut plain = Series::new();
        for v in [10, 10, 10, 40] {
            plain.record(v);
        }
        assert_eq!(w.count(), 4);
        assert_eq!(w.mean_ns(), Some(17.5));
        assert_eq!((w.min_ns(), w.max_ns()), (Some(10), Some(40)));
        assert_eq!(w.quantile_ns(0.75), Some(10));
        assert_eq!(w.rollup(1.0), plain.rollup(1.0));
    }
    use crate::rng::{Rng, log_normal_ns};

    /// The naive reference: the value of rank `ceil(q * n)` in sorted order.
    fn exact_quantile(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    const QUANTILES: [f64; 5] = [0.5, 0.9, 0.95, 0.99, 0.999];

    #[test]
    fn percentiles_match_exact_within_resolution() {
        let mut rng = Rng::seeded(11);
        let values = log_normal_ns(&mut rng, 100_000);
        let mut s = Series::new();
        for &v in &values {
            s.record(v);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();

        for q in QUANTILES {
            let exact = exact_quantile(&sorted, q) as f64;
            let got = s.quantile_ns(q).unwrap() as f64;
            let rel = (got - exact).abs() / exact;
            assert!(rel <= 0.001, "q {q}: hdr {got} exact {exact} rel {rel}");
        }
        assert_eq!(s.count(), 100_000);
        assert_eq!(s.min_ns(), Some(sorted[0]));
        assert_eq!(s.max_ns(), Some(*sorted.last().unwrap()));
        assert_eq!(s.quantile_ns(0.0), Some(sorted[0]));
        assert_eq!(s.quantile_ns(1.0), Some(*sorted.last().unwrap()));
        let sum: u128 = values.iter().map(|&v| u128::from(v)).sum();
        assert_eq!(s.sum_ns(), sum);
        assert_eq!(s.mean_ns(), Some(sum as f64 / 100_000.0));
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut rng = Rng::seeded(12);
        let values = log_normal_ns(&mut rng, 30_000);
        let mut whole = Series::new();
        let mut parts = [Series::new(), Series::new(), Series::new()];
        for (i, &v) in values.iter().enumerate() {
            whole.record(v);
            parts[i % 3].record(v);
        }
        // A value past the top and a zero, in one part only.
        whole.record(HIGHEST_NS * 2);
        parts[1].record(HIGHEST_NS * 2);
        whole.record(0);
        parts[2].record(0);

        let mut merged = Series::new();
        merged.merge(&Series::new());
        for p in &parts {
            merged.merge(p);
        }
        merged.merge(&Series::new());
        assert_eq!(merged.rollup(1.0), whole.rollup(1.0));
        assert_eq!(merged.sum_ns(), whole.sum_ns());
        for q in [0.0, 0.001, 0.25, 0.5, 0.75, 0.9, 0.99, 0.9999, 1.0] {
            assert_eq!(merged.quantile_ns(q), whole.quantile_ns(q), "q {q}");
        }

        // Merging into an empty series copies; merging an empty one is a no-op.
        let mut copy = Series::new();
        copy.merge(&whole);
        assert_eq!(copy.rollup(1e6), whole.rollup(1e6));
    }

    /// Shards' series, each through its JSON, merged: the same as one
    /// series that recorded every value.
    #[test]
    fn series_through_json_merge_into_one_series_of_every_value() {
        let mut rng = Rng::seeded(7);
        let values = log_normal_ns(&mut rng, 30_000);
        let mut whole = Series::new();
        let mut parts = [Series::new(), Series::new(), Series::new(), Series::new()];
        for (i, &v) in values.iter().enumerate() {
            whole.record(v);
            parts[i % 3].record(v);
        }
        // Past the histogram's top, and zero: exact fields keep them.
        whole.record(5_000_000_000_000);
        parts[1].record(5_000_000_000_000);
        whole.record(0);
        parts[2].record(0);
        let mut merged = Series::new();
        for p in &parts {
            let json = serde_json::to_string(p).unwrap();
            merged.merge(&serde_json::from_str::<Series>(&json).unwrap());
        }
        assert_eq!(merged.histogram(), whole.histogram());
        assert_eq!(merged.rollup(1e6), whole.rollup(1e6));
        assert_eq!(merged.sum_ns(), whole.sum_ns());
        assert_eq!(merged.sum_sq(), whole.sum_sq());
        for q in [0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            assert_eq!(merged.quantile_ns(q), whole.quantile_ns(q), "q {q}");
        }
    }

    #[test]
    fn big_sums_are_decimal_strings_and_bad_series_are_refused() {
        let mut s = Series::new();
        s.record_n(3_000_000_000_000, 1 << 40);
        let v = serde_json::to_value(&s).unwrap();
        assert!(v["sum"].is_string() && v["sum_sq"].is_string(), "{v}");
        let back: Series = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back.sum_ns(), s.sum_ns());
        assert_eq!(back.sum_sq(), s.sum_sq());
        let refused = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut w = v.clone();
            f(&mut w);
            serde_json::from_value::<Series>(w).unwrap_err().to_string()
        };
        let e = refused(&|w| w["count"] = (1u64 << 40 | 1).into());
        assert!(e.contains("count"), "{e}");
        let e = refused(&|w| w["min"] = u64::MAX.into());
        assert!(e.contains("above max"), "{e}");
        let e = refused(&|w| w["sum"] = "1e3".into());
        assert!(e.contains("not a decimal integer"), "{e}");
        let other = super::super::hdr::to_text(
            &Bounds {
                sigfig: 2,
                ..BOUNDS
            }
            .histogram::<u64>(),
        );
        let e = refused(&|w| w["hist"] = other.clone().into());
        assert!(e.contains("at 2 digits"), "{e}");
        // An empty series writes no histogram and reads back empty.
        let empty: Series =
            serde_json::from_value(serde_json::to_value(Series::new()).unwrap()).unwrap();
        assert_eq!(empty.count(), 0);
        assert_eq!(serde_json::to_value(Series::new()).unwrap()["hist"], "");
    }

    #[test]
    fn values_past_the_top_are_clamped_but_exact_stats_are_not() {
        let mut s = Series::new();
        let huge = 10 * HIGHEST_NS; // ten hours
        s.record(1_000);
        s.record(huge);
        s.record(u64::MAX);
        assert_eq!(s.count(), 3);
        assert_eq!(s.max_ns(), Some(u64::MAX));
        assert_eq!(s.min_ns(), Some(1_000));
        let sum = 1_000u128 + u128::from(huge) + u128::from(u64::MAX);
        assert_eq!(s.sum_ns(), sum);
        assert_eq!(s.mean_ns(), Some(sum as f64 / 3.0));
        // The median lands among the clamped values: it reads one hour (to
        // the histogram's resolution), not ten hours.
        let p50 = s.quantile_ns(0.5).unwrap();
        assert!(
            (HIGHEST_NS..=HIGHEST_NS + HIGHEST_NS / 1000).contains(&p50),
            "{p50}"
        );
        assert_eq!(s.quantile_ns(1.0), Some(u64::MAX));
        let sum = s.rollup(1e6);
        assert!(sum.p50.unwrap() <= sum.max.unwrap());
    }

    #[test]
    fn zero_is_kept_exact() {
        let mut s = Series::new();
        s.record(0);
        let sum = s.rollup(1.0);
        assert_eq!(sum.count, 1);
        for v in [sum.min, sum.mean, sum.p50, sum.p999, sum.max] {
            assert_eq!(v, Some(0.0));
        }
        s.record(0);
        s.record(5);
        assert_eq!(s.min_ns(), Some(0));
        assert_eq!(s.quantile_ns(0.5), Some(1)); // histogram holds 0 as 1
        assert_eq!(s.quantile_ns(0.0), Some(0));
    }

    #[test]
    fn empty() {
        let s = Series::default();
        assert_eq!(s.count(), 0);
        assert_eq!(s.count(), 0);
        assert_eq!(s.quantile_ns(0.5), None);
        assert_eq!(s.min_ns(), None);
        assert_eq!(s.max_ns(), None);
        assert_eq!(s.mean_ns(), None);
        let sum = s.rollup(1e6);
        assert_eq!(sum, Rollup::default());
        assert_eq!(sum.p50, None);
        assert_eq!(
            serde_json::to_value(sum).unwrap(),
            serde_json::json!({"count": 0, "min": null, "mean": null, "std_dev": null,
                "p1": null, "p5": null, "p10": null, "p25": null, "p50": null, "p75": null,
                "p80": null, "p90": null, "p95": null, "p97": null, "p99": null, "p999": null,
                "max": null})
        );
    }

    #[test]
    fn single_value_gives_that_value_everywhere() {
        // 123_456_789 is not a bucket boundary: HDR alone would report the
        // top of its bucket.
        let v = 123_456_789;
        let mut s = Series::new();
        s.record(v);
        for q in [0.0, 0.5, 0.9, 0.999, 1.0] {
            assert_eq!(s.quantile_ns(q), Some(v));
        }
        let sum = s.rollup(1.0);
        let v = v as f64;
        assert_eq!(sum.count, 1);
        for field in [
            sum.min, sum.mean, sum.p50, sum.p90, sum.p95, sum.p99, sum.p999, sum.max,
        ] {
            assert_eq!(field, Some(v));
        }
    }

    #[test]
    fn unit_scaling() {
        let mut s = Series::new();
        for ms in 1..=1000u64 {
            s.record(ms * 1_000_000);
        }
        let ms = s.rollup(1e6);
        let us = s.rollup(1e3);
        assert_eq!(ms.count, 1000);
        assert_eq!(ms.min, Some(1.0));
        assert_eq!(ms.max, Some(1000.0));
        assert_eq!(ms.mean, Some(500.5));
        assert_eq!(us.min, Some(1000.0));
        assert_eq!(us.mean, Some(500_500.0));
        for (p, want) in [(ms.p50, 500.0), (ms.p90, 900.0), (ms.p99, 990.0)] {
            let p = p.unwrap();
            assert!(p >= want && p <= want * 1.001, "{p} vs {want}");
        }
        assert!((us.p50.unwrap() - ms.p50.unwrap() * 1e3).abs() < 1e-6);
        let ms = ms.p999.unwrap();
        assert!((999.0..=999.0 * 1.001).contains(&ms), "{ms}");
    }

    #[test]
    fn percentiles_are_ordered_and_bounded() {
        let mut rng = Rng::seeded(13);
        let mut s = Series::new();
        for v in log_normal_ns(&mut rng, 1000) {
            s.record(v);
        }
        let m = s.rollup(1e6);
        let seq = [m.min, m.p50, m.p90, m.p95, m.p99, m.p999, m.max].map(Option::unwrap);
        assert!(seq.windows(2).all(|w| w[0] <= w[1]), "{seq:?}");
    }

    #[test]
    fn std_dev_and_the_full_grid() {
        let mut s = Series::new();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            s.record(v);
        }
        // Sample standard deviation of these eight values: sqrt(32 / 7).
        assert!((s.std_dev_ns().unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.sum_sq(), 4 + 3 * 16 + 2 * 25 + 49 + 81);
        let r = s.rollup(1.0);
        let grid = [
            r.min, r.p1, r.p5, r.p10, r.p25, r.p50, r.p75, r.p80, r.p90, r.p95, r.p97, r.p99,
            r.p999, r.max,
        ]
        .map(Option::unwrap);
        assert!(grid.windows(2).all(|w| w[0] <= w[1]), "{grid:?}");
        assert_eq!((r.p25, r.p75), (Some(4.0), Some(5.0)));
        let mut one = Series::new();
        one.record(3);
        assert_eq!(one.std_dev_ns(), Some(0.0));
        assert_eq!(Series::new().std_dev_ns(), None);
        // The squares survive a merge.
        let mut m = Series::new();
        m.merge(&s);
        m.merge(&one);
        assert_eq!(m.sum_sq(), s.sum_sq() + 9);
    }

    /// MLPerf's grid and early-stopping estimates read from a series (its
    /// HDR histogram, exact min and max) against the exact order statistics
    /// of the same values: equal within the histogram's resolution.
    #[test]
    fn mlperf_statistics_from_the_series_match_the_exact_ones() {
        let mut rng = Rng::seeded(14);
        for n in [1usize, 64, 700, 20_000] {
            let values = log_normal_ns(&mut rng, n);
            let mut s = Series::new();
            for &v in &values {
                s.record(v);
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let close = |exact: u64, got: u64, what: String| {
                let rel = (got as f64 - exact as f64).abs() / exact as f64;
                assert!(rel <= 0.001, "{what}: exact {exact} series {got}");
            };
            let exact = mlperf::grid(&sorted[..]).unwrap();
            let ours = mlperf::grid(&s.order()).unwrap();
            for (e, o) in exact.iter().zip(&ours) {
                close(e.1, o.1, format!("n {n} p{}", e.0));
            }
            let exact = mlperf::early_stopping_grid(&sorted[..]);
            let ours = mlperf::early_stopping_grid(&s.order());
            for (e, o) in exact.iter().zip(&ours) {
                match (e.1, o.1) {
                    (Some(a), Some(b)) => close(a, b, format!("n {n} es p{}", e.0)),
                    (a, b) => assert_eq!(a, b, "n {n} es p{}", e.0),
                }
            }
            let h = s.log_histogram().unwrap();
            assert_eq!(h.counts.iter().sum::<u64>(), n as u64);
        }
        assert!(Series::new().log_histogram().is_none());
    }

    #[test]
    fn debug_is_short() {
        let mut s = Series::new();
        s.record(42);
        let text = format!("{s:?}");
        assert!(text.len() < 200, "{text}");
        assert!(text.contains("count: 1"), "{text}");
    }

    #[test]
    fn histogram_size_is_as_documented() {
        // The module doc promises ~270 KiB per series.
        assert_eq!(Series::new().hist.distinct_values(), 33_792);
    }
}
