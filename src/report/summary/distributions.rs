//! Whole distributions, for the HTML's CDFs and histograms: a slice's
//! series read off its HDR histogram as points, so a report re-rendered
//! from summary.json draws the same curves.

use serde::{Deserialize, Serialize};

/// A slice's distributions; empty series have no points.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
    #[cfg_attr(test, schemars(inner(inner(range(min = 0)))))]
    pub isl: Vec<[f64; 3]>,
    #[cfg_attr(test, schemars(inner(inner(range(min = 0)))))]
    pub osl: Vec<[f64; 3]>,
}

use crate::metrics::block::Block;
use crate::metrics::series::Series;

/// The CDFs' points are in milliseconds.
const MS: f64 = 1e6;
/// A CDF keeps a point each time the value has grown by this share of the
/// series' range on a log axis …
const CDF_LOG_STEPS: f64 = 60.0;
/// … or the fraction by this much, and where it first reaches each tail
/// quantile: at most about 106 points, evenly spread on a log-x plot, with
/// the tail that matters kept.
const CDF_FRACTION_STEP: f64 = 0.025;
const CDF_TAIL: [f64; 3] = [0.9, 0.99, 0.999];
/// Bins of a length histogram (fewer when the range has fewer values).
const BINS: u64 = 30;

impl Distributions {
    /// The distributions of `b`'s series.
    pub(crate) fn of(b: &Block) -> Distributions {
        Distributions {
            ttft_ms: cdf(&b.ttft, MS),
            tpot_ms: cdf(&b.tpot, MS),
            itl_ms: cdf(&b.itl, MS),
            e2e_ms: cdf(&b.e2e, MS),
            isl: bins(&b.isl),
            osl: bins(&b.osl),
        }
    }
}

/// `s`'s CDF as `[value / unit, fraction ≤ value]` points read off its
/// histogram buckets: the first and last bucket (the last at the exact
/// max, fraction 1), the first bucket at or past each tail quantile, and
/// in between a bucket whenever the log-value or the fraction has moved
/// far enough since the last point kept. Fractions are rounded to 6
/// decimals (the last is exactly 1).
pub(crate) fn cdf(s: &Series, unit: f64) -> Vec<[f64; 2]> {
    let (Some(min), Some(max)) = (s.min_ns(), s.max_ns()) else {
        return Vec::new();
    };
    let n = s.count() as f64;
    let log = |v: u64| (v.max(1) as f64).ln();
    let step = (log(max) - log(min)) / CDF_LOG_STEPS;
    let mut out: Vec<[f64; 2]> = Vec::with_capacity(112);
    let (mut seen, mut tail) = (0u64, 0);
    let (mut last_x, mut last_f) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    let mut buckets = s.recorded().peekable();
    while let Some((v, c)) = buckets.next() {
        seen += c;
        let f = seen as f64 / n;
        let last = buckets.peek().is_none();
        let mut crossed = false;
        while tail < CDF_TAIL.len() && f >= CDF_TAIL[tail] {
            (tail, crossed) = (tail + 1, true);
        }
        if !(out.is_empty()
            || last
            || crossed
            || log(v) - last_x >= step
            || f - last_f >= CDF_FRACTION_STEP)
        {
            continue;
        }
        (last_x, last_f) = (log(v), f);
        out.push(if last {
            [max as f64 / unit, 1.0]
        } else {
            [v as f64 / unit, (f * 1e6).round() / 1e6]
        });
    }
    out
}

/// `s`'s values (token counts) in at most `BINS` contiguous bins of one
/// whole width over `[min, max]`, as `[low, high, count]` with `low`
/// included and `high` not; the counts sum to the series' count.
pub(crate) fn bins(s: &Series) -> Vec<[f64; 3]> {
    let (Some(min), Some(max)) = (s.min_ns(), s.max_ns()) else {
        return Vec::new();
    };
    let span = max - min + 1;
    let width = span.div_ceil(BINS);
    let n = span.div_ceil(width) as usize;
    let mut counts = vec![0u64; n];
    for (v, c) in s.recorded() {
        counts[(((v - min) / width) as usize).min(n - 1)] += c;
    }
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let low = min + i as u64 * width;
            [low as f64, (low + width) as f64, c as f64]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, log_normal_ns};

    fn series(values: &[u64]) -> Series {
        let mut s = Series::new();
        for &v in values {
            s.record(v);
        }
        s
    }

    #[test]
    fn cdf_points_rise_to_one_with_the_tail_kept() {
        let mut rng = Rng::seeded(7);
        let values = log_normal_ns(&mut rng, 50_000);
        let s = series(&values);
        let points = cdf(&s, MS);
        assert!(
            points.len() <= 120 && points.len() >= 40,
            "{}",
            points.len()
        );
        for w in points.windows(2) {
            assert!(w[1][0] > w[0][0], "values rise: {w:?}");
            assert!(w[1][1] >= w[0][1], "fractions never fall: {w:?}");
        }
        let (first, last) = (points[0], points[points.len() - 1]);
        assert_eq!(last, [s.max_ns().unwrap() as f64 / MS, 1.0]);
        assert!(first[0] >= s.min_ns().unwrap() as f64 / MS && first[1] > 0.0);
        // The tail is drawn: a point at or just past p99 and p99.9.
        for q in CDF_TAIL {
            let p = points.iter().find(|p| p[1] >= q).unwrap();
            let at = s.quantile_ns(q).unwrap() as f64 / MS;
            assert!((p[0] - at).abs() <= at * 0.002, "q {q}: {p:?} vs {at}");
        }
        // Log-spaced: no gap on the log axis wider than a few steps.
        let span = (last[0] / first[0]).ln();
        for w in points.windows(2) {
            assert!(
                (w[1][0] / w[0][0]).ln() <= span / CDF_LOG_STEPS * 3.0,
                "{w:?}"
            );
        }
    }

    #[test]
    fn cdf_of_one_value_and_of_nothing() {
        assert_eq!(cdf(&Series::new(), MS), Vec::<[f64; 2]>::new());
        assert_eq!(cdf(&series(&[2_500_000]), MS), [[2.5, 1.0]]);
        let two = cdf(&series(&[1_000_000, 3_000_000]), MS);
        assert_eq!(two.len(), 2);
        assert_eq!(two[0][1], 0.5);
        assert_eq!(two[1], [3.0, 1.0]);
    }

    #[test]
    fn length_bins_are_contiguous_and_hold_every_value() {
        let mut rng = Rng::seeded(3);
        let values: Vec<u64> = (0..10_000).map(|_| 50 + rng.next_u64() % 3000).collect();
        let s = series(&values);
        let b = bins(&s);
        assert!((20..=30).contains(&b.len()), "{}", b.len());
        assert_eq!(b.iter().map(|x| x[2]).sum::<f64>(), 10_000.0);
        assert_eq!(b[0][0], s.min_ns().unwrap() as f64);
        assert!(b[b.len() - 1][1] > s.max_ns().unwrap() as f64);
        for w in b.windows(2) {
            assert_eq!(w[0][1], w[1][0], "contiguous");
        }
        // A narrow range: a bin per value.
        let few = bins(&series(&[7, 8, 8, 10]));
        assert_eq!(
            few,
            [
                [7.0, 8.0, 1.0],
                [8.0, 9.0, 2.0],
                [9.0, 10.0, 0.0],
                [10.0, 11.0, 1.0]
            ]
        );
        assert_eq!(bins(&series(&[128; 5])), [[128.0, 129.0, 5.0]]);
        assert!(bins(&Series::new()).is_empty());
    }

    #[test]
    fn a_block_s_distributions() {
        let mut b = Block::default();
        let d = Distributions::of(&b);
        assert_eq!(d, Distributions::default());
        b.ttft.record(1_000_000);
        b.osl.record(12);
        let d = Distributions::of(&b);
        assert_eq!(d.ttft_ms, [[1.0, 1.0]]);
        assert_eq!(d.osl, [[12.0, 13.0, 1.0]]);
        assert!(d.e2e_ms.is_empty() && d.isl.is_empty());
    }
}
