//! The timeline (`RunTimeline`) as summary.json's state holds it: every
//! bucket's counts and its latency histograms as text, so a merge adds
//! histograms and reads each second's percentiles from the sum.

use serde::{Deserialize, Serialize};

use crate::metrics::errors::ErrorClass;
use crate::metrics::timeline::{Bucket, RunTimeline, TimelineSlice};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct TimelineState {
    pub interval_ns: u64,
    pub stage_names: Vec<String>,
    pub slices: Vec<SliceState>,
    pub in_flight: Vec<u64>,
    pub slo: bool,
    pub stragglers: u64,
    pub scenarios_left_out: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SliceState {
    pub scenario: Option<String>,
    pub buckets: Vec<BucketState>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct BucketState {
    pub interval: u32,
    pub stage: Option<u16>,
    pub completed: u64,
    pub failed: u64,
    /// `[key, count]` in the bucket's order.
    pub errors: Vec<(String, u64)>,
    pub output_tokens: u64,
    pub input_tokens: u64,
    pub good: u64,
    pub ttft_p50_ns: Option<u64>,
    pub ttft_p99_ns: Option<u64>,
    pub e2e_p50_ns: Option<u64>,
    pub e2e_p99_ns: Option<u64>,
    /// `hdr::to_text` of 1 µs..1 h at 2 digits; absent when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_hist: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e2e_hist: Option<String>,
}

impl TimelineState {
    pub(crate) fn of(t: &RunTimeline) -> TimelineState {
        TimelineState {
            interval_ns: t.interval_ns,
            stage_names: t.stage_names.clone(),
            slices: t
                .slices
                .iter()
                .map(|s| SliceState {
                    scenario: s.scenario.clone(),
                    buckets: s.buckets.iter().map(BucketState::of).collect(),
                })
                .collect(),
            in_flight: t.in_flight.clone(),
            slo: t.slo,
            stragglers: t.stragglers,
            scenarios_left_out: t.scenarios_left_out,
        }
    }

    pub(crate) fn to_timeline(&self) -> Result<RunTimeline, String> {
        let mut slices = Vec::with_capacity(self.slices.len());
        for (i, s) in self.slices.iter().enumerate() {
            let buckets = s
                .buckets
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    b.to_bucket()
                        .map_err(|e| format!("slices[{i}].buckets[{j}]: {e}"))
                })
                .collect::<Result<_, _>>()?;
            slices.push(TimelineSlice {
                scenario: s.scenario.clone(),
                buckets,
            });
        }
        Ok(RunTimeline {
            interval_ns: self.interval_ns,
            stage_names: self.stage_names.clone(),
            slices,
            in_flight: self.in_flight.clone(),
            slo: self.slo,
            stragglers: self.stragglers,
            scenarios_left_out: self.scenarios_left_out,
        })
    }
}

impl BucketState {
    fn of(b: &Bucket) -> BucketState {
        BucketState {
            interval: b.interval,
            stage: b.stage,
            completed: b.completed,
            failed: b.failed,
            errors: b
                .errors
                .iter()
                .map(|&(class, status, n)| (class.key(status), n))
                .collect(),
            output_tokens: b.output_tokens,
            input_tokens: b.input_tokens,
            good: b.good,
            ttft_p50_ns: b.ttft_p50_ns,
            ttft_p99_ns: b.ttft_p99_ns,
            e2e_p50_ns: b.e2e_p50_ns,
            e2e_p99_ns: b.e2e_p99_ns,
            ttft_hist: b.ttft_hist.clone(),
            e2e_hist: b.e2e_hist.clone(),
        }
    }

    fn to_bucket(&self) -> Result<Bucket, String> {
        let mut errors = Vec::with_capacity(self.errors.len());
        for (key, n) in &self.errors {
            let (class, status) =
                ErrorClass::from_key(key).ok_or_else(|| format!("unknown error key {key:?}"))?;
            errors.push((class, status, *n));
        }
        Ok(Bucket {
            interval: self.interval,
            stage: self.stage,
            completed: self.completed,
            failed: self.failed,
            errors,
            output_tokens: self.output_tokens,
            input_tokens: self.input_tokens,
            good: self.good,
            ttft_p50_ns: self.ttft_p50_ns,
            ttft_p99_ns: self.ttft_p99_ns,
            e2e_p50_ns: self.e2e_p50_ns,
            e2e_p99_ns: self.e2e_p99_ns,
            ttft_hist: self.ttft_hist.clone(),
            e2e_hist: self.e2e_hist.clone(),
        })
    }
}
