//! One series of `result_summary.json` (`ttft`, `latency`,
//! `output_sequence_lengths`, …) as MLPerf's `metrics/report.py` shapes it:
//! `total, min, max, median, avg, std_dev, percentiles`, then
//! `early_stopping_percentiles` for the tail-latency series, then the
//! 30-bucket `histogram`. An empty series is `{}`, or only the all-null
//! early-stopping map for a tail-latency one, as there. Every statistic is
//! read from our HDR series through `metrics::mlperf`, so percentiles and
//! estimates are MLPerf's order statistics to the histogram's resolution.

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::metrics::mlperf::{self, LogHistogram};
use crate::metrics::series::Series;

/// The rollups of a non-empty series, in the series' unit (ns or tokens).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rollups {
    pub total: u128,
    pub min: u64,
    pub max: u64,
    /// The grid's 50th percentile.
    pub median: u64,
    pub avg: f64,
    pub std_dev: f64,
    /// `(percentile, value)` in `mlperf::GRID` order.
    pub percentiles: [(f64, u64); 12],
    pub histogram: LogHistogram,
}

/// One series of the summary.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeriesStats {
    /// `None` when nothing was recorded.
    pub rollups: Option<Rollups>,
    /// `(percentile, estimate)` for every grid percentile ≥ 50, for the
    /// tail-latency series only; an estimate is `None` (null) with too few
    /// samples.
    pub early_stopping: Option<Vec<(f64, Option<u64>)>>,
}

impl SeriesStats {
    /// The statistics of `s`, with early-stopping estimates when
    /// `tail_latency`.
    pub(crate) fn of(s: &Series, tail_latency: bool) -> SeriesStats {
        let order = s.order();
        let rollups = match (
            mlperf::grid(&order),
            s.min_ns(),
            s.max_ns(),
            s.log_histogram(),
        ) {
            (Some(percentiles), Some(min), Some(max), Some(histogram)) => Some(Rollups {
                total: s.sum_ns(),
                min,
                max,
                median: mlperf::percentile(&order, 50.0).unwrap_or(min),
                avg: s.sum_ns() as f64 / s.count() as f64,
                std_dev: mlperf::std_dev(s.count(), s.sum_ns(), s.sum_sq()),
                percentiles,
                histogram,
            }),
            _ => None,
        };
        SeriesStats {
            rollups,
            early_stopping: tail_latency.then(|| mlperf::early_stopping_grid(&order)),
        }
    }

    /// The value at grid percentile `p`, if recorded.
    pub(crate) fn at(&self, p: f64) -> Option<u64> {
        let r = self.rollups.as_ref()?;
        r.percentiles.iter().find(|(q, _)| *q == p).map(|&(_, v)| v)
    }

    /// The early-stopping estimate at `p`, if there is one.
    pub(crate) fn estimate(&self, p: f64) -> Option<u64> {
        let es = self.early_stopping.as_ref()?;
        es.iter().find(|(q, _)| *q == p).and_then(|&(_, v)| v)
    }
}

/// `{"99.9": v, …}` in the given order (a JSON object keeps what it is
/// given here; a map type would sort the keys).
struct Grid<'a, T>(&'a [(f64, T)]);

impl<T: Copy + Into<Option<u64>>> Serialize for Grid<'_, T> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(Some(self.0.len()))?;
        for &(p, v) in self.0 {
            // MLPerf's percentiles are floats even for integer series.
            let v: Option<u64> = v.into();
            m.serialize_entry(&mlperf::percentile_key(p), &v.map(|v| v as f64))?;
        }
        m.end()
    }
}

struct Histogram<'a>(&'a LogHistogram);

impl Serialize for Histogram<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let buckets: Vec<[f64; 2]> = self.0.buckets().map(|(lo, hi)| [lo, hi]).collect();
        let mut m = ser.serialize_map(Some(2))?;
        m.serialize_entry("buckets", &buckets)?;
        m.serialize_entry("counts", &self.0.counts[..])?;
        m.end()
    }
}

impl Serialize for SeriesStats {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(None)?;
        if let Some(r) = &self.rollups {
            m.serialize_entry("total", &r.total)?;
            m.serialize_entry("min", &r.min)?;
            m.serialize_entry("max", &r.max)?;
            m.serialize_entry("median", &(r.median as f64))?;
            m.serialize_entry("avg", &r.avg)?;
            m.serialize_entry("std_dev", &r.std_dev)?;
            m.serialize_entry("percentiles", &Grid(&r.percentiles))?;
        }
        if let Some(es) = &self.early_stopping {
            m.serialize_entry("early_stopping_percentiles", &Grid(es))?;
        }
        if let Some(r) = &self.rollups {
            m.serialize_entry("histogram", &Histogram(&r.histogram))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn series(values: impl IntoIterator<Item = u64>) -> Series {
        let mut s = Series::new();
        for v in values {
            s.record(v);
        }
        s
    }

    #[test]
    fn empty_series_are_empty_or_all_null_estimates() {
        let s = Series::new();
        assert_eq!(
            serde_json::to_value(SeriesStats::of(&s, false)).unwrap(),
            json!({})
        );
        let v = serde_json::to_value(SeriesStats::of(&s, true)).unwrap();
        let es = v["early_stopping_percentiles"].as_object().unwrap();
        assert_eq!(v.as_object().unwrap().len(), 1);
        assert_eq!(es.len(), 8);
        assert!(es.values().all(Value::is_null));
    }

    #[test]
    fn keys_in_order_and_values_as_mlperf_writes_them() {
        // 1..=700 ms: exact in the histogram at these round values? No —
        // 3 significant digits; the grid is checked within resolution.
        let s = series((1..=700u64).map(|i| i * 1_000_000));
        let stats = SeriesStats::of(&s, true);
        let text = serde_json::to_string(&stats).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        // serde_json's map sorts; the written text keeps our order.
        let order = [
            "\"total\"",
            "\"min\"",
            "\"max\"",
            "\"median\"",
            "\"avg\"",
            "\"std_dev\"",
            "\"percentiles\"",
            "\"early_stopping_percentiles\"",
            "\"histogram\"",
        ];
        let at: Vec<usize> = order.iter().map(|k| text.find(k).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(keys.len(), 9);
        assert_eq!(v["total"], json!(245_350_000_000u64));
        assert_eq!(v["min"], json!(1_000_000));
        assert_eq!(v["max"], json!(700_000_000));
        assert!(text.contains("\"99.9\":"), "{text}");
        let p = text.find("\"percentiles\"").unwrap();
        let grid_order: Vec<usize> = ["\"99.9\"", "\"99.0\"", "\"50.0\"", "\"1.0\""]
            .iter()
            .map(|k| p + text[p..].find(k).unwrap())
            .collect();
        assert!(grid_order.windows(2).all(|w| w[0] < w[1]));
        // numpy "lower": index floor(699 × 0.5) = 349, the 350th value.
        let median = v["median"].as_f64().unwrap();
        assert!((median - 350e6).abs() <= 350e6 * 1e-3, "{median}");
        assert!(v["median"].is_f64());
        // 700 samples: p99.9 has no estimate (6,636 needed), p99 has one
        // (662), and it is never below the grid's value.
        let es = &v["early_stopping_percentiles"];
        assert_eq!(es["99.9"], Value::Null);
        assert!(es["99.0"].as_f64().unwrap() >= v["percentiles"]["99.0"].as_f64().unwrap());
        assert_eq!(v["histogram"]["buckets"].as_array().unwrap().len(), 30);
        let counts: u64 = v["histogram"]["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(counts, 700);
        // Sample standard deviation of 1..=700 ms.
        let sd = v["std_dev"].as_f64().unwrap();
        let want = ((700.0f64 * 701.0 / 12.0) * 1e12).sqrt();
        assert!((sd - want).abs() < 1e-3 * want, "{sd} vs {want}");
        assert_eq!(stats.at(50.0), stats.rollups.as_ref().map(|r| r.median));
        assert!(stats.estimate(90.0).unwrap() >= stats.at(90.0).unwrap());
    }

    #[test]
    fn without_tail_latency_no_estimates() {
        let v = serde_json::to_value(SeriesStats::of(&series([63, 63, 64]), false)).unwrap();
        assert!(v.get("early_stopping_percentiles").is_none());
        assert_eq!(v["percentiles"]["50.0"], json!(63.0));
        assert_eq!(v["total"], json!(190));
    }
}
