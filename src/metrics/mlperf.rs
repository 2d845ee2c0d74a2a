//! The statistics the MLPerf Inference Endpoint benchmark reports in
//! `result_summary.json`, with its exact definitions: the 12-point percentile
//! grid (`np.percentile(method="lower")`), the sample standard deviation, the
//! 30-bucket log-spaced histogram, and LoadGen's early-stopping percentile
//! estimates (binomial test, confidence 0.99, tolerance 0).
//!
//! The trade-off: MLPerf keeps every raw sample and sorts them; our series
//! keep only an HDR histogram (3 significant digits). Every order statistic
//! here is therefore read through [`OrderStats`], implemented both for an
//! exact sorted slice (the reference) and for an HDR histogram read by rank,
//! so the same formulas run on both and differ only by the histogram's
//! resolution (< 0.1 % relative), which the tests check.

use hdrhistogram::Histogram;

/// LoadGen's early-stopping confidence (`results.cc`); an algorithm constant,
/// not a knob: lowering it weakens the certified claim.
pub(crate) const CONFIDENCE: f64 = 0.99;

/// MLPerf's percentile grid, in its order (descending) and its convention
/// (0–100). `DEFAULT_PERCENTILES` in the reference's metrics registry.
pub(crate) const GRID: [f64; 12] = [
    99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0,
];

/// Early-stopping estimates cover the grid entries at or above the median: an
/// estimate is a tail certification, meaningless below it.
pub(crate) const ES_MIN_PERCENTILE: f64 = 50.0;

/// Buckets in MLPerf's display histogram.
pub(crate) const HISTOGRAM_BUCKETS: usize = 30;

// ---------------------------------------------------------------------------
// Order statistics
// ---------------------------------------------------------------------------

/// A sample seen through its ascending order: the one view both the exact
/// and the HDR computations need, so every statistic below is written once.
pub(crate) trait OrderStats {
    /// Number of samples.
    fn count(&self) -> u64;
    /// The sample at 0-based position `index` of the ascending order
    /// (`index < count()`).
    fn at(&self, index: u64) -> u64;
}

/// An ascending-sorted slice of raw samples: the exact reference.
impl OrderStats for [u64] {
    fn count(&self) -> u64 {
        self.len() as u64
    }

    fn at(&self, index: u64) -> u64 {
        self[index as usize]
    }
}

/// An HDR histogram read by rank. The value at a rank is the top of the
/// bucket holding it (as `Histogram::value_at_quantile` reports), so it is
/// within the histogram's resolution of the exact order statistic; with the
/// exact min and max known, the first and last ranks read them exactly and
/// every other value is clamped into them.
pub(crate) struct HdrOrder<'a> {
    hist: &'a Histogram<u64>,
    bounds: Option<(u64, u64)>,
}

impl<'a> HdrOrder<'a> {
    pub(crate) fn new(hist: &'a Histogram<u64>) -> Self {
        Self { hist, bounds: None }
    }

    /// Adds the exact `min` and `max` kept beside the histogram.
    pub(crate) fn with_bounds(self, min: u64, max: u64) -> Self {
        Self {
            bounds: Some((min, max)),
            ..self
        }
    }
}

impl OrderStats for HdrOrder<'_> {
    fn count(&self) -> u64 {
        self.hist.len()
    }

    fn at(&self, index: u64) -> u64 {
        let n = self.hist.len();
        if let Some((min, max)) = self.bounds {
            if index == 0 {
                return min;
            }
            if index + 1 >= n {
                return max;
            }
        }
        // Rank `index + 1`: the first bucket whose cumulative count reaches it.
        let mut seen = 0u64;
        let mut value = self.hist.max();
        for step in self.hist.iter_recorded() {
            seen += step.count_at_value();
            if seen > index {
                value = step.value_iterated_to();
                break;
            }
        }
        match self.bounds {
            Some((min, max)) => value.clamp(min, max),
            None => value,
        }
    }
}

// ---------------------------------------------------------------------------
// Percentile grid
// ---------------------------------------------------------------------------

/// The summary's key for a grid percentile: Python's `str(float)`, so 99 is
/// `"99.0"` and 99.9 is `"99.9"` (Rust's `Debug` for `f64` prints the same
/// shortest round-trip form with a `.0` for whole numbers).
pub(crate) fn percentile_key(percentile: f64) -> String {
    format!("{percentile:?}")
}

/// The 0-based index into `n` ascending samples that `np.percentile(...,
/// method="lower")` picks: `floor((n - 1) * p / 100)`, computed in `f64` in
/// numpy's order (divide by 100 first) so the floor lands identically.
/// `n` must be at least 1.
pub(crate) fn percentile_index(n: u64, percentile: f64) -> u64 {
    debug_assert!(n > 0);
    let q = percentile / 100.0;
    ((n - 1) as f64 * q).floor() as u64
}

/// The value MLPerf reports at `percentile`; `None` for an empty sample.
pub(crate) fn percentile<S: OrderStats + ?Sized>(s: &S, percentile: f64) -> Option<u64> {
    let n = s.count();
    (n > 0).then(|| s.at(percentile_index(n, percentile)))
}

/// The whole grid, in [`GRID`] order: `(percentile, value)`.
pub(crate) fn grid<S: OrderStats + ?Sized>(s: &S) -> Option<[(f64, u64); 12]> {
    if s.count() == 0 {
        return None;
    }
    Some(GRID.map(|p| (p, s.at(percentile_index(s.count(), p)))))
}

// ---------------------------------------------------------------------------
// Standard deviation
// ---------------------------------------------------------------------------

/// MLPerf's `std_dev`: the *sample* standard deviation (divisor `n - 1`)
/// from the rollups `count`, `total` = Σx and `sum_sq` = Σx², 0 for fewer
/// than two samples. Like the reference for integer series, it takes the
/// exact integer form `sqrt(n·Σx² − (Σx)²) / sqrt(n·(n − 1))`, which avoids
/// the cancellation of `Σx² − (Σx)²/n` with nanosecond values; only if
/// `n·Σx²` overflows `u128` (hour-long values times tens of millions of
/// samples) does it fall back to the reference's float form.
pub(crate) fn std_dev(count: u64, total: u128, sum_sq: u128) -> f64 {
    if count < 2 {
        return 0.0;
    }
    let n = u128::from(count);
    let exact = n
        .checked_mul(sum_sq)
        .zip(total.checked_mul(total))
        .map(|(a, b)| a.saturating_sub(b));
    match exact {
        Some(num) => (num as f64).sqrt() / ((n * (n - 1)) as f64).sqrt(),
        None => {
            let (nf, t) = (count as f64, total as f64);
            let var_num = sum_sq as f64 - t * t / nf;
            (var_num / (nf - 1.0)).max(0.0).sqrt()
        }
    }
}

// ---------------------------------------------------------------------------
// Histogram
// ---------------------------------------------------------------------------

/// MLPerf's display histogram: [`HISTOGRAM_BUCKETS`] buckets log-spaced from
/// the observed min to the observed max. Bucket `i` is
/// `[edges[i], edges[i + 1])`, the last one closed; values outside the edges
/// are counted in the end buckets, so the counts always sum to the sample
/// count. Serialized as `{"buckets": [[lo, hi], ...], "counts": [...]}`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LogHistogram {
    pub edges: [f64; HISTOGRAM_BUCKETS + 1],
    pub counts: [u64; HISTOGRAM_BUCKETS],
}

impl LogHistogram {
    /// Empty buckets over MLPerf's edges for an observed `[min, max]`: the low
    /// end is raised to 1 (so the log exists for zero-based series) and the
    /// high end to at least 10× the low end, so a narrow series gets a decade.
    /// Edges are `exp(ln(lo) + i·step)`, as the reference computes them.
    pub(crate) fn empty(min: f64, max: f64) -> Self {
        let lo = min.max(1.0);
        let hi = max.max(lo * 10.0);
        let (log_lo, log_hi) = (lo.ln(), hi.ln());
        let step = (log_hi - log_lo) / HISTOGRAM_BUCKETS as f64;
        let edges = std::array::from_fn(|i| (log_lo + i as f64 * step).exp());
        Self {
            edges,
            counts: [0; HISTOGRAM_BUCKETS],
        }
    }

    /// Counts `count` samples of `value` in its bucket.
    pub(crate) fn add(&mut self, value: f64, count: u64) {
        // Edges at or below the value, minus one: the bucket whose low edge
        // is the greatest one not above it, clamped to the ends.
        let above = self.edges.partition_point(|&e| e <= value);
        let i = above.saturating_sub(1).min(HISTOGRAM_BUCKETS - 1);
        self.counts[i] += count;
    }

    /// The exact histogram of raw samples, given their exact min and max:
    /// the reference the HDR path is tested against.
    #[cfg(test)]
    pub(crate) fn from_samples(samples: &[u64], min: u64, max: u64) -> Self {
        let mut h = Self::empty(min as f64, max as f64);
        for &v in samples {
            h.add(v as f64, 1);
        }
        h
    }

    /// The histogram read from an HDR histogram, each HDR bucket counted at
    /// its top value (as the reference's own HDR path does), given the exact
    /// min and max. Differs from [`LogHistogram::from_samples`] only for
    /// samples within the HDR resolution of an edge.
    pub(crate) fn from_hdr(hist: &Histogram<u64>, min: u64, max: u64) -> Self {
        let mut h = Self::empty(min as f64, max as f64);
        for step in hist.iter_recorded() {
            h.add(step.value_iterated_to() as f64, step.count_at_value());
        }
        h
    }

    /// The `(lo, hi)` pairs of the buckets, in order.
    pub(crate) fn buckets(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.edges.windows(2).map(|w| (w[0], w[1]))
    }
}

// ---------------------------------------------------------------------------
// Early stopping
// ---------------------------------------------------------------------------

/// `ln Γ(x)` for `x ≥ 1` (Lanczos, g = 7, 9 terms; ~15 significant digits).
/// std has no stable `ln_gamma`; the reference uses `math.lgamma`.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * std::f64::consts::TAU.ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the regularized incomplete beta, by the modified
/// Lentz method (Numerical Recipes `betacf`). The constants are the
/// reference's so its decisions reproduce: relative convergence 3e-16, 1e-300
/// in place of a vanishing denominator, and at most 399 steps — which can
/// truncate near the distribution's midpoint at tens of millions of samples,
/// harmless here because every decision compares against 0.01, far from it.
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const EPS: f64 = 3e-16;
    const FPMIN: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < FPMIN { FPMIN } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..400 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let de = d * c;
        h *= de;
        if (de - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// Regularized incomplete beta `I_x(a, b)` (Numerical Recipes `betai`),
/// equal to LoadGen's hypergeometric-series `beta_regularized` but converging
/// in tens of steps. The prefactor is taken through logs so large `a`, `b`
/// cannot overflow, and the fraction is evaluated on whichever side of
/// `I_x(a, b) = 1 − I_{1−x}(b, a)` converges faster.
fn beta_regularized(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_bt = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let bt = ln_bt.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * beta_cf(a, b, x) / a
    } else {
        1.0 - bt * beta_cf(b, a, 1.0 - x) / b
    }
}

/// LoadGen's `odds`: the probability of at most `t` over-latency samples
/// among `h + t` when each exceeds the true p-quantile with probability
/// `1 − p` — the binomial CDF as `I_p(h, t + 1)` (tolerance 0).
fn odds(h: u64, t: u64, p: f64) -> f64 {
    beta_regularized(h as f64, (t + 1) as f64, p)
}

/// The fraction (0–1) for a grid percentile, checked: outside `(0, 100)` the
/// searches below would not terminate.
fn fraction(percentile: f64) -> f64 {
    assert!(
        percentile > 0.0 && percentile < 100.0,
        "early-stopping percentile must be in (0, 100), got {percentile}"
    );
    percentile / 100.0
}

/// LoadGen's `MinPassingQueriesFinder`: the fewest under-latency samples `h`
/// that, beside `t` over-latency ones, certify at [`CONFIDENCE`] that the true
/// `percentile` (0–100) is at most the bound: the least `h` with
/// `odds(h, t) < 1 − c` (strict, as LoadGen). `odds` falls as `h` grows, so
/// doubling then bisecting finds the boundary.
pub(crate) fn min_passing(t: u64, percentile: f64) -> u64 {
    let p = fraction(percentile);
    let target = 1.0 - CONFIDENCE;
    let (mut lo, mut hi) = (1u64, 2u64);
    while odds(hi, t, p) >= target {
        hi *= 2;
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if odds(mid, t, p) < target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The fewest samples for which an early-stopping estimate at `percentile`
/// exists: one over-latency sample plus the under-latency ones it needs
/// (662 at p99). Below it the estimate is null. The estimate search finds
/// the floor by itself; this names it for the tests.
#[cfg(test)]
pub(crate) fn min_samples(percentile: f64) -> u64 {
    min_passing(1, percentile) + 1
}

/// LoadGen's over-latency budget for `n` samples: the largest `t ≥ 1` with
/// `min_passing(t) + t ≤ n`, 0 below [`min_samples`]. The estimate is then
/// the `t`-th highest sample (`t − 1` discarded above it). The margin is
/// monotone in `t`, so the search is again doubling then bisecting.
pub(crate) fn over_latency_count(n: u64, percentile: f64) -> u64 {
    let fits = |t: u64| min_passing(t, percentile) + t <= n;
    if !fits(1) {
        return 0;
    }
    let (mut lo, mut hi) = (1u64, 2u64);
    while fits(hi) {
        hi *= 2;
    }
    while lo < hi - 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The 0-based index into `n` ascending samples of the early-stopping
/// estimate at `percentile`: `n − t`, the `t`-th highest sample. `None` when
/// `n` is below [`min_samples`].
pub(crate) fn estimate_index(n: u64, percentile: f64) -> Option<u64> {
    match over_latency_count(n, percentile) {
        0 => None,
        t => Some(n - t),
    }
}

/// The early-stopping estimate at `percentile`: a value the true percentile
/// is at most with confidence [`CONFIDENCE`], never below the grid's value.
/// `None` (null in the summary) with too few samples.
pub(crate) fn early_stopping_estimate<S: OrderStats + ?Sized>(
    s: &S,
    percentile: f64,
) -> Option<u64> {
    estimate_index(s.count(), percentile).map(|i| s.at(i))
}

/// The estimates for every grid percentile at or above the median, in
/// [`GRID`] order: the summary's `early_stopping_percentiles` map.
pub(crate) fn early_stopping_grid<S: OrderStats + ?Sized>(s: &S) -> Vec<(f64, Option<u64>)> {
    GRID.iter()
        .filter(|&&p| (ES_MIN_PERCENTILE..100.0).contains(&p))
        .map(|&p| (p, early_stopping_estimate(s, p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, log_normal_ns};

    /// Expected values below come from running the reference's
    /// `metrics/early_stopping.py` (pure stdlib Python) at commit ea33275.
    #[test]
    fn min_samples_match_loadgen_floors() {
        let floors = [
            (50.0, 11),
            (75.0, 24),
            (80.0, 31),
            (90.0, 64),
            (95.0, 130),
            (97.0, 219),
            (99.0, 662),
            (99.9, 6_636),
        ];
        for (p, want) in floors {
            assert_eq!(min_samples(p), want, "p{p}");
        }
    }

    #[test]
    fn min_passing_with_no_over_latency_is_459_at_p99() {
        assert_eq!(min_passing(0, 99.0), 459);
        assert_eq!(min_passing(1, 99.0), 661);
    }

    #[test]
    fn over_latency_counts_match_reference() {
        let cases = [
            (10_000, 99.0, 77),
            (10_000, 90.0, 930),
            (10_000, 50.0, 4_883),
            (1_000_000, 99.9, 926),
            (100_000, 97.0, 2_874),
            (3_000, 75.0, 694),
            (661, 99.0, 0),
            (662, 99.0, 1),
            (663, 99.0, 1),
        ];
        for (n, p, want) in cases {
            assert_eq!(over_latency_count(n, p), want, "n {n} p{p}");
        }
    }

    /// `_discard_count(n, p)` from the reference across the floors (each one
    /// below, at and above) and up to ten million samples, where its
    /// continued fraction is capped: the same capped arithmetic must give
    /// the same budgets.
    #[test]
    fn over_latency_counts_match_reference_across_sizes() {
        let table: [(u64, [u64; 8]); 27] = [
            (11, [0, 0, 0, 0, 0, 0, 0, 1]),
            (12, [0, 0, 0, 0, 0, 0, 0, 1]),
            (23, [0, 0, 0, 0, 0, 0, 0, 5]),
            (24, [0, 0, 0, 0, 0, 0, 1, 5]),
            (25, [0, 0, 0, 0, 0, 0, 1, 6]),
            (30, [0, 0, 0, 0, 0, 0, 1, 8]),
            (31, [0, 0, 0, 0, 0, 1, 2, 8]),
            (63, [0, 0, 0, 0, 0, 5, 7, 21]),
            (64, [0, 0, 0, 0, 1, 5, 7, 22]),
            (65, [0, 0, 0, 0, 1, 5, 8, 22]),
            (129, [0, 0, 0, 0, 5, 15, 20, 50]),
            (130, [0, 0, 0, 1, 5, 15, 20, 51]),
            (131, [0, 0, 0, 1, 5, 15, 21, 51]),
            (218, [0, 0, 0, 3, 11, 29, 39, 91]),
            (219, [0, 0, 1, 3, 11, 30, 39, 91]),
            (220, [0, 0, 1, 3, 11, 30, 39, 92]),
            (500, [0, 0, 6, 13, 34, 79, 102, 223]),
            (1000, [0, 2, 17, 34, 78, 170, 218, 462]),
            (2500, [0, 13, 55, 99, 215, 453, 574, 1191]),
            (6635, [0, 47, 166, 290, 606, 1251, 1576, 3222]),
            (6636, [1, 47, 166, 290, 606, 1251, 1576, 3222]),
            (6637, [1, 47, 166, 290, 606, 1251, 1577, 3223]),
            (20000, [9, 167, 544, 928, 1901, 3868, 4857, 9835]),
            (54321, [37, 489, 1537, 2598, 5269, 10647, 13345, 26888]),
            (
                270336,
                [232, 2583, 7903, 13253, 26670, 53583, 67060, 134562],
            ),
            (
                1000003,
                [926, 9768, 29603, 49493, 99302, 199070, 248993, 498837],
            ),
            (
                10000000,
                [
                    9767, 99268, 298745, 498396, 997793, 1997057, 2496814, 4996321,
                ],
            ),
        ];
        let ps = [99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0];
        for (n, want) in table {
            let got = ps.map(|p| over_latency_count(n, p));
            assert_eq!(got, want, "n {n}");
        }
    }

    #[test]
    fn estimate_index_is_the_t_th_highest_or_none() {
        assert_eq!(estimate_index(10_000, 99.0), Some(10_000 - 77));
        // At the floor the estimate is the maximum; one below, none.
        assert_eq!(estimate_index(662, 99.0), Some(661));
        assert_eq!(estimate_index(661, 99.0), None);
        assert_eq!(estimate_index(0, 50.0), None);
        let sorted: Vec<u64> = (1..=10_000).collect();
        assert_eq!(early_stopping_estimate(&sorted[..], 99.0), Some(9_924));
        assert_eq!(early_stopping_estimate(&sorted[..661], 99.0), None);
        // Never below the grid value.
        for p in GRID.iter().filter(|&&p| p >= ES_MIN_PERCENTILE) {
            let es = early_stopping_estimate(&sorted[..], *p).unwrap();
            assert!(es >= percentile(&sorted[..], *p).unwrap(), "p{p}");
        }
    }

    #[test]
    fn early_stopping_grid_covers_the_median_and_above() {
        let sorted: Vec<u64> = (1..=700).collect();
        let got = early_stopping_grid(&sorted[..]);
        let keys: Vec<String> = got.iter().map(|&(p, _)| percentile_key(p)).collect();
        assert_eq!(
            keys,
            [
                "99.9", "99.0", "97.0", "95.0", "90.0", "80.0", "75.0", "50.0"
            ]
        );
        assert_eq!(got[0].1, None); // 700 < 6,636
        assert!(got[1].1.is_some()); // 700 >= 662
    }

    #[test]
    fn keys_are_spelled_as_python_floats() {
        let keys: Vec<String> = GRID.iter().map(|&p| percentile_key(p)).collect();
        assert_eq!(
            keys,
            [
                "99.9", "99.0", "97.0", "95.0", "90.0", "80.0", "75.0", "50.0", "25.0", "10.0",
                "5.0", "1.0"
            ]
        );
    }

    #[test]
    fn percentile_is_numpy_lower() {
        // floor((n - 1) * p / 100)
        assert_eq!(percentile_index(10, 99.9), 8);
        assert_eq!(percentile_index(10, 50.0), 4);
        assert_eq!(percentile_index(10, 1.0), 0);
        assert_eq!(percentile_index(400, 99.9), 398);
        assert_eq!(percentile_index(400, 99.0), 395);
        assert_eq!(percentile_index(1, 99.9), 0);
        let sorted = [10u64, 20, 30, 40];
        assert_eq!(percentile(&sorted[..], 50.0), Some(20));
        assert_eq!(percentile(&sorted[..], 99.9), Some(30));
        assert_eq!(percentile(&[][..], 50.0), None);
        assert_eq!(grid(&sorted[..]).unwrap()[0], (99.9, 30));
    }

    #[test]
    fn std_dev_is_the_sample_form() {
        let rollups = |v: &[u64]| {
            let total: u128 = v.iter().map(|&x| u128::from(x)).sum();
            let sum_sq: u128 = v.iter().map(|&x| u128::from(x) * u128::from(x)).sum();
            (v.len() as u64, total, sum_sq)
        };
        // Python: sqrt(n*s - t*t) / sqrt(n*(n-1)) on the same values.
        let (n, t, s) = rollups(&[
            1_000_000_007,
            1_200_003_001,
            999_999_999,
            1_500_000_000,
            1_000,
        ]);
        assert_eq!(std_dev(n, t, s), 563_914_816.538_543_1);
        let (n, t, s) = rollups(&[1, 2, 3, 4]);
        assert!((std_dev(n, t, s) - 1.290_994_448_735_805_6).abs() < 1e-15);
        assert_eq!(std_dev(1, 5, 25), 0.0);
        assert_eq!(std_dev(0, 0, 0), 0.0);
        // Past u128 the float form still gives the right answer.
        let (big, n) = (u128::from(u64::MAX), u64::MAX);
        let sd = std_dev(n, big * 7, big * 49);
        assert!(sd < 1e-3, "{sd}");
    }

    #[test]
    fn histogram_edges_match_the_reference_run() {
        // result_summary.json of the reference run: ttft min 49837027, max
        // 67128963; input_sequence_lengths min 44 max 67.
        let h = LogHistogram::empty(49_837_027.0, 67_128_963.0);
        assert_eq!(h.edges[0], 49_837_026.999_999_95);
        assert_eq!(h.edges[1], 53_812_783.918_855_32);
        assert_eq!(h.edges[30], 498_370_270.000_000_06);
        let h = LogHistogram::empty(44.0, 67.0);
        assert_eq!(h.edges[1], 47.510_107_142_419_21);
        assert_eq!(h.edges[30], 439.999_999_999_999_83);
        assert_eq!(h.buckets().count(), HISTOGRAM_BUCKETS);
        // Zero-based series start at 1; a wide one ends at its max.
        let h = LogHistogram::empty(0.0, 1e6);
        assert_eq!(h.edges[0], 1.0);
        assert!((h.edges[30] - 1e6).abs() < 1e-6);
    }

    #[test]
    fn histogram_buckets_are_half_open_and_total_the_count() {
        let samples = [1u64, 2, 10, 100, 999, 1000];
        let h = LogHistogram::from_samples(&samples, 1, 1000);
        assert_eq!(h.counts.iter().sum::<u64>(), samples.len() as u64);
        assert_eq!(h.counts[0], 1); // [1, 1.258)
        assert_eq!(h.counts[29], 2); // 999 and the max, in the closed last bucket
        // 10 sits on edge 10 exactly or just above/below it: either way in
        // bucket 9 or 10, and 100 in 19 or 20.
        assert_eq!(h.counts[9] + h.counts[10], 1);
        assert_eq!(h.counts[19] + h.counts[20], 1);
        // Values outside the edges land in the end buckets.
        let mut h = LogHistogram::empty(5.0, 50.0);
        h.add(0.5, 3);
        h.add(1e9, 4);
        assert_eq!((h.counts[0], h.counts[29]), (3, 4));
    }

    fn hdr_of(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    fn assert_close(exact: u64, hdr: u64, what: &str) {
        let rel = (hdr as f64 - exact as f64).abs() / exact as f64;
        assert!(rel <= 0.001, "{what}: exact {exact} hdr {hdr} rel {rel}");
    }

    #[test]
    fn hdr_grid_and_estimates_match_exact_within_resolution() {
        let mut rng = Rng::seeded(10);
        for n in [1, 11, 700, 10_000, 100_000] {
            let values = log_normal_ns(&mut rng, n);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let hist = hdr_of(&values);
            let (min, max) = (sorted[0], sorted[n - 1]);
            let bounded = HdrOrder::new(&hist).with_bounds(min, max);
            let bare = HdrOrder::new(&hist);

            let exact = grid(&sorted[..]).unwrap();
            let (hdr, hdr_bare) = (grid(&bounded).unwrap(), grid(&bare).unwrap());
            for ((e, h), b) in exact.iter().zip(&hdr).zip(&hdr_bare) {
                assert_close(e.1, h.1, &format!("n {n} grid p{}", e.0));
                assert_close(e.1, b.1, &format!("n {n} bare grid p{}", e.0));
            }
            let exact = early_stopping_grid(&sorted[..]);
            let hdr = early_stopping_grid(&bounded);
            for (e, h) in exact.iter().zip(&hdr) {
                match (e.1, h.1) {
                    (Some(e1), Some(h1)) => assert_close(e1, h1, &format!("n {n} es p{}", e.0)),
                    (None, None) => {}
                    other => panic!("n {n} es p{}: {other:?}", e.0),
                }
            }
            assert_eq!(bounded.at(0), min);
            assert_eq!(bounded.at(n as u64 - 1), max);
        }
    }

    #[test]
    fn hdr_histogram_differs_only_at_edges() {
        let mut rng = Rng::seeded(12);
        let values = log_normal_ns(&mut rng, 50_000);
        let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
        let exact = LogHistogram::from_samples(&values, min, max);
        let hdr = LogHistogram::from_hdr(&hdr_of(&values), min, max);
        assert_eq!(exact.edges, hdr.edges);
        assert_eq!(hdr.counts.iter().sum::<u64>(), values.len() as u64);
        // A sample can move only if it lies within the HDR resolution below
        // an interior edge (HDR reads the top of its bucket).
        let near_edge = values
            .iter()
            .filter(|&&v| {
                exact.edges[1..HISTOGRAM_BUCKETS]
                    .iter()
                    .any(|&e| (v as f64) < e && (v as f64) >= e * (1.0 - 0.001))
            })
            .count() as u64;
        let moved: u64 = exact
            .counts
            .iter()
            .zip(&hdr.counts)
            .map(|(a, b)| a.abs_diff(*b))
            .sum();
        assert!(
            moved <= 2 * near_edge,
            "moved {moved} near edges {near_edge}"
        );
    }
}
