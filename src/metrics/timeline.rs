//! The run second by second, as the parent's per-second buckets closed it:
//! plain data that `report` turns into summary.json's `timeline`,
//! `timeline.csv` and the HTML's curves. Counts are exact; the latency
//! percentiles come from small per-bucket histograms (2 significant
//! digits, about 1 %), good enough to plot and cheap enough to keep open.

use serde::{Deserialize, Serialize};

use super::errors::ErrorClass;
use super::hdr::Bounds;

/// The buckets' latency histograms: 1 µs to 1 hour at 2 significant digits
/// (about 1 %, plenty for a curve), 13 KiB each with 32-bit counts.
pub(crate) const BOUNDS: Bounds = Bounds {
    low: 1_000,
    high: 3_600_000_000_000,
    sigfig: 2,
};

/// Bucket width: one second.
pub(crate) const INTERVAL_NS: u64 = 1_000_000_000;

/// Scenarios beyond this many have no series of their own (they still
/// count in the whole run's): a long run with many scenarios would
/// otherwise keep a point per second for each.
pub(crate) const MAX_SCENARIO_SERIES: usize = 16;

/// Every interval of a run, per slice.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct RunTimeline {
    /// Bucket width, ns.
    pub interval_ns: u64,
    /// The plan's stage names; `Bucket::stage` indexes them.
    pub stage_names: Vec<String>,
    /// The whole run first (`scenario: None`), then each scenario (at most
    /// `MAX_SCENARIO_SERIES`) when there are several.
    pub slices: Vec<TimelineSlice>,
    /// Conversations in flight at each interval's end, by interval.
    pub in_flight: Vec<u64>,
    /// `--slo` was given: `Bucket::good` counts.
    pub slo: bool,
    /// Requests whose record reached the parent after their interval had
    /// closed: counted in it, but not in its latency percentiles.
    pub stragglers: u64,
    /// Scenarios past `MAX_SCENARIO_SERIES`, counted in the whole run only.
    pub scenarios_left_out: usize,
}

/// One slice's buckets in time order. Every interval has at least one
/// bucket (an idle one has zero counts and the stage running at its
/// start); an interval in which requests of two stages (or of warm-up and
/// the first stage) ended has one bucket per stage, in stage order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct TimelineSlice {
    /// `None` for the whole run.
    pub scenario: Option<String>,
    pub buckets: Vec<Bucket>,
}

/// What ended in one interval, of one stage (or warm-up).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct Bucket {
    /// Index of the interval from the run's start.
    pub interval: u32,
    /// The stage the requests were measured in (`None`: warm-up).
    pub stage: Option<u16>,
    pub completed: u64,
    pub failed: u64,
    /// Failures as (class, HTTP status for `HttpStatus` else 0, count),
    /// one entry per key; `ErrorClass::key` names them, and the written
    /// form is `[key, count]` in this order.
    #[serde(with = "keyed")]
    #[cfg_attr(test, schemars(with = "Vec<(String, u64)>"))]
    pub errors: Vec<(ErrorClass, u16, u64)>,
    /// Of the successful requests, as `Block` counts them.
    pub output_tokens: u64,
    pub input_tokens: u64,
    /// Successful requests that met every `--slo` bound.
    pub good: u64,
    /// TTFT (streamed successes) and e2e (successes), ns.
    pub ttft_p50_ns: Option<u64>,
    pub ttft_p99_ns: Option<u64>,
    pub e2e_p50_ns: Option<u64>,
    pub e2e_p99_ns: Option<u64>,
    /// The histograms those percentiles were read from (`BOUNDS`, 32-bit
    /// counts), in `hdr::to_text`'s form, so merged buckets have exact
    /// percentiles too; `None` when nothing was recorded in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_hist: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_hist: Option<String>,
}

/// A bucket's errors as `[key, count]` pairs.
mod keyed {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::ErrorClass;

    pub(super) fn serialize<S: Serializer>(
        v: &[(ErrorClass, u16, u64)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|&(class, status, n)| (class.key(status), n)))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(ErrorClass, u16, u64)>, D::Error> {
        let pairs: Vec<(String, u64)> = Vec::deserialize(d)?;
        pairs
            .into_iter()
            .map(|(key, n)| {
                let (class, status) = ErrorClass::from_key(&key).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown error key {key:?}"))
                })?;
                Ok((class, status, n))
            })
            .collect()
    }
}

impl Bucket {
    /// Adds `o`'s counts (not its percentiles or histograms: they merge
    /// as histograms, `merge::timeline`).
    pub(crate) fn add_counts(&mut self, o: &Bucket) {
        self.completed += o.completed;
        self.output_tokens += o.output_tokens;
        self.input_tokens += o.input_tokens;
        self.good += o.good;
        // Failures not itemized by key, then each key's.
        self.failed += o.failed - o.errors.iter().map(|e| e.2).sum::<u64>().min(o.failed);
        for &(class, status, n) in &o.errors {
            self.add_error(class, status, n);
        }
    }

    /// Nothing ended in it.
    pub(crate) fn is_empty(&self) -> bool {
        self.completed == 0 && self.failed == 0
    }

    /// Counts `n` failures of `class` (with `status` for `HttpStatus`).
    pub(crate) fn add_error(&mut self, class: ErrorClass, status: u16, n: u64) {
        let status = if class == ErrorClass::HttpStatus {
            status
        } else {
            0
        };
        self.failed += n;
        match self
            .errors
            .iter_mut()
            .find(|(c, s, _)| *c == class && *s == status)
        {
            Some(e) => e.2 += n,
            None => self.errors.push((class, status, n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_one_entry_per_key() {
        let mut b = Bucket::default();
        b.add_error(ErrorClass::HttpStatus, 503, 1);
        b.add_error(ErrorClass::HttpStatus, 429, 1);
        b.add_error(ErrorClass::HttpStatus, 503, 2);
        b.add_error(ErrorClass::Reset, 200, 1);
        b.add_error(ErrorClass::Reset, 0, 1);
        assert_eq!(
            b.errors,
            vec![
                (ErrorClass::HttpStatus, 503, 3),
                (ErrorClass::HttpStatus, 429, 1),
                (ErrorClass::Reset, 0, 2),
            ]
        );
        assert_eq!((b.completed, b.failed), (0, 6));
    }
}
