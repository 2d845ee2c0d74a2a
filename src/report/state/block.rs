//! A `Block`, a `Series` and the other counters of a run as summary.json's
//! state holds them: every count and exact sum as recorded, histograms as
//! `hdr::to_text`, 128-bit sums as decimal strings (JSON readers lose
//! integers past 2^53), error counts by report key. Each converts both
//! ways; reading back checks what a hand-edited or foreign document could
//! get wrong (bounds, counts, keys) and says where.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::block::{Block, FINISH_KINDS, GoodputCounts};
use crate::metrics::endpoints::EndpointStats;
use crate::metrics::errors::ErrorCounts;
use crate::metrics::hdr;
use crate::metrics::run::ConnTimes;
use crate::metrics::series::{self, Series};

/// u128 as a decimal string.
pub(super) mod dec128 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a decimal integer")))
    }
}

/// One `Series`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SeriesState {
    pub count: u64,
    #[serde(with = "dec128")]
    pub sum: u128,
    #[serde(with = "dec128")]
    pub sum_sq: u128,
    /// Exact extremes (0 when empty).
    pub min: u64,
    pub max: u64,
    /// The histogram (`hdr::to_text`, 1 ns to 1 h, 3 digits); empty when
    /// nothing was recorded.
    pub hist: String,
}

impl SeriesState {
    pub(crate) fn of(s: &Series) -> SeriesState {
        SeriesState {
            count: s.count(),
            sum: s.sum_ns(),
            sum_sq: s.sum_sq(),
            min: s.min_ns().unwrap_or(0),
            max: s.max_ns().unwrap_or(0),
            hist: if s.count() > 0 {
                hdr::to_text(s.histogram())
            } else {
                String::new()
            },
        }
    }

    pub(crate) fn to_series(&self) -> Result<Series, String> {
        if self.count == 0 {
            return Ok(Series::new());
        }
        let hist = hdr::from_text(&self.hist, series::BOUNDS)?;
        Series::from_parts(
            hist,
            (self.count, self.sum, self.sum_sq),
            (self.min, self.max),
        )
    }
}

/// Counts by report key (`reset`, `http_503`), only those that occurred.
pub(crate) fn errors_of(e: &ErrorCounts) -> BTreeMap<String, u64> {
    e.named().into_iter().collect()
}

pub(crate) fn errors_from(m: &BTreeMap<String, u64>) -> Result<ErrorCounts, String> {
    ErrorCounts::from_named(m.iter().map(|(k, n)| (k.as_str(), *n)))
}

/// One `Block`: its counters, exact sums and every series.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct BlockState {
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    pub errors: BTreeMap<String, u64>,
    pub error_messages: BTreeMap<String, Vec<String>>,
    pub e2e: SeriesState,
    pub service: SeriesState,
    pub latency_all: SeriesState,
    pub ttft: SeriesState,
    pub ttft_sched: SeriesState,
    pub tpot: SeriesState,
    pub tpot_mlperf: SeriesState,
    pub itl: SeriesState,
    pub to_last_token: SeriesState,
    pub tpot_incl_ttft_weighted: SeriesState,
    pub tpot_weighted: SeriesState,
    pub send_lateness: SeriesState,
    pub isl: SeriesState,
    pub osl: SeriesState,
    pub output_tokens: u64,
    pub input_tokens: u64,
    pub output_sources: [u64; 4],
    pub input_sources: [u64; 5],
    #[serde(with = "dec128")]
    pub decode_ns: u128,
    pub decode_tokens: u64,
    pub text_bytes: u64,
    pub output_truncated: u64,
    pub output_untokenized: u64,
    pub finish: [u64; FINISH_KINDS],
    /// CLOCK_MONOTONIC ns of the shard (0: none seen).
    pub first_sched: u64,
    pub last_end: u64,
    pub last_sched: u64,
    pub last_sched_end: u64,
    pub first_send: u64,
    pub goodput: GoodputCounts,
}

impl BlockState {
    pub(crate) fn of(b: &Block) -> BlockState {
        let s = SeriesState::of;
        BlockState {
            issued: b.issued,
            completed: b.completed,
            failed: b.failed,
            errors: errors_of(&b.errors),
            error_messages: b.error_messages.clone(),
            e2e: s(&b.e2e),
            service: s(&b.service),
            latency_all: s(&b.latency_all),
            ttft: s(&b.ttft),
            ttft_sched: s(&b.ttft_sched),
            tpot: s(&b.tpot),
            tpot_mlperf: s(&b.tpot_mlperf),
            itl: s(&b.itl),
            to_last_token: s(&b.to_last_token),
            tpot_incl_ttft_weighted: s(&b.tpot_incl_ttft_weighted),
            tpot_weighted: s(&b.tpot_weighted),
            send_lateness: s(&b.send_lateness),
            isl: s(&b.isl),
            osl: s(&b.osl),
            output_tokens: b.output_tokens,
            input_tokens: b.input_tokens,
            output_sources: b.output_sources,
            input_sources: b.input_sources,
            decode_ns: b.decode_ns,
            decode_tokens: b.decode_tokens,
            text_bytes: b.text_bytes,
            output_truncated: b.output_truncated,
            output_untokenized: b.output_untokenized,
            finish: b.finish,
            first_sched: b.first_sched,
            last_end: b.last_end,
            last_sched: b.last_sched,
            last_sched_end: b.last_sched_end,
            first_send: b.first_send,
            goodput: b.goodput,
        }
    }

    /// The block; an error names the series or field at fault.
    pub(crate) fn to_block(&self) -> Result<Block, String> {
        let s = |name: &str, st: &SeriesState| st.to_series().map_err(|e| format!("{name}: {e}"));
        Ok(Block {
            issued: self.issued,
            completed: self.completed,
            failed: self.failed,
            errors: errors_from(&self.errors).map_err(|e| format!("errors: {e}"))?,
            error_messages: self.error_messages.clone(),
            e2e: s("e2e", &self.e2e)?,
            service: s("service", &self.service)?,
            latency_all: s("latency_all", &self.latency_all)?,
            ttft: s("ttft", &self.ttft)?,
            ttft_sched: s("ttft_sched", &self.ttft_sched)?,
            tpot: s("tpot", &self.tpot)?,
            tpot_mlperf: s("tpot_mlperf", &self.tpot_mlperf)?,
            itl: s("itl", &self.itl)?,
            to_last_token: s("to_last_token", &self.to_last_token)?,
            tpot_incl_ttft_weighted: s("tpot_incl_ttft_weighted", &self.tpot_incl_ttft_weighted)?,
            tpot_weighted: s("tpot_weighted", &self.tpot_weighted)?,
            send_lateness: s("send_lateness", &self.send_lateness)?,
            isl: s("isl", &self.isl)?,
            osl: s("osl", &self.osl)?,
            output_tokens: self.output_tokens,
            input_tokens: self.input_tokens,
            output_sources: self.output_sources,
            input_sources: self.input_sources,
            decode_ns: self.decode_ns,
            decode_tokens: self.decode_tokens,
            text_bytes: self.text_bytes,
            output_truncated: self.output_truncated,
            output_untokenized: self.output_untokenized,
            finish: self.finish,
            first_sched: self.first_sched,
            last_end: self.last_end,
            last_sched: self.last_sched,
            last_sched_end: self.last_sched_end,
            first_send: self.first_send,
            goodput: self.goodput,
        })
    }
}

/// One endpoint's share (`EndpointStats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct EndpointState {
    pub url: String,
    pub completed: u64,
    pub failed: u64,
    pub errors: BTreeMap<String, u64>,
    pub ttft: SeriesState,
    pub e2e: SeriesState,
}

impl EndpointState {
    pub(crate) fn of(e: &EndpointStats) -> EndpointState {
        EndpointState {
            url: e.url.clone(),
            completed: e.completed,
            failed: e.failed,
            errors: errors_of(&e.errors),
            ttft: SeriesState::of(&e.ttft),
            e2e: SeriesState::of(&e.e2e),
        }
    }

    pub(crate) fn to_stats(&self) -> Result<EndpointStats, String> {
        Ok(EndpointStats {
            url: self.url.clone(),
            completed: self.completed,
            failed: self.failed,
            errors: errors_from(&self.errors)?,
            ttft: self.ttft.to_series().map_err(|e| format!("ttft: {e}"))?,
            e2e: self.e2e.to_series().map_err(|e| format!("e2e: {e}"))?,
        })
    }
}

/// Connection times (`ConnTimes`): the workers' fixed buckets as
/// `[middle ns, count]`, ascending.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ConnTimesState {
    pub buckets: Vec<[u64; 2]>,
    pub count: u64,
    #[serde(with = "dec128")]
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl ConnTimesState {
    pub(crate) fn of(t: &ConnTimes) -> ConnTimesState {
        ConnTimesState {
            buckets: t.buckets.iter().map(|&(v, n)| [v, n]).collect(),
            count: t.count,
            sum_ns: t.sum_ns,
            min_ns: t.min_ns,
            max_ns: t.max_ns,
        }
    }

    pub(crate) fn to_times(&self) -> ConnTimes {
        ConnTimes {
            buckets: self.buckets.iter().map(|&[v, n]| (v, n)).collect(),
            count: self.count,
            sum_ns: self.sum_ns,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Rng, log_normal_ns};

    /// Shards' series, each through its state, merged: the same as one
    /// series that recorded every value.
    #[test]
    fn decoded_and_merged_series_equal_one_series_of_every_value() {
        let mut rng = Rng::seeded(7);
        let values = log_normal_ns(&mut rng, 30_000);
        let mut whole = Series::new();
        let mut parts = [Series::new(), Series::new(), Series::new()];
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
            let json = serde_json::to_string(&SeriesState::of(p)).unwrap();
            let state: SeriesState = serde_json::from_str(&json).unwrap();
            merged.merge(&state.to_series().unwrap());
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
    fn big_sums_are_decimal_strings_and_bad_states_are_named() {
        let mut s = Series::new();
        s.record_n(3_000_000_000_000, 1 << 40);
        let v = serde_json::to_value(SeriesState::of(&s)).unwrap();
        assert!(v["sum"].is_string() && v["sum_sq"].is_string(), "{v}");
        let back: SeriesState = serde_json::from_value(v).unwrap();
        assert_eq!(back.to_series().unwrap().sum_ns(), s.sum_ns());
        let mut wrong = back.clone();
        wrong.count += 1;
        assert!(wrong.to_series().unwrap_err().contains("count"));
        let mut block = BlockState::of(&Block::default());
        block.ttft = wrong;
        assert!(block.to_block().unwrap_err().starts_with("ttft: "));
        let bad = serde_json::json!({"sum": "1e3"});
        assert!(serde_json::from_value::<SeriesState>(bad).is_err());
    }
}
