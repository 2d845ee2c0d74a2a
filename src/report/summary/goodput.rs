//! Goodput: the requests that succeeded and met every `--slo` bound
//! (DistServe's and vLLM's definition), per slice.

use serde::{Deserialize, Serialize};

use crate::metrics::block::Block;
use crate::plan::Slo;

/// A slice's goodput; absent without `--slo`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Goodput {
    /// The bounds, ms; a bound not given is `None`.
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    /// Requests that succeeded and met every bound.
    pub good: u64,
    /// good / issued × 100 (failures count against it); `None` when
    /// nothing was issued.
    #[cfg_attr(test, schemars(range(min = 0, max = 100)))]
    pub attainment_pct: Option<f64>,
    /// Good requests and their output tokens per second of the window.
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub requests_per_s: f64,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub output_tokens_per_s: f64,
    /// Successful requests that missed each bound (a request may miss
    /// several).
    pub missed_ttft: u64,
    pub missed_tpot: u64,
    pub missed_e2e: u64,
}

impl Goodput {
    /// The goodput of `b` over `window_ns` (the slice's throughput window)
    /// against `slo`; `None` without a bound.
    pub(crate) fn of(b: &Block, slo: &Slo, window_ns: u64) -> Option<Goodput> {
        if slo.is_empty() {
            return None;
        }
        let g = &b.goodput;
        let secs = window_ns as f64 / 1e9;
        let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let ms = |ns: Option<u64>| ns.map(|n| n as f64 / 1e6);
        Some(Goodput {
            ttft_ms: ms(slo.ttft_ns),
            tpot_ms: ms(slo.tpot_ns),
            e2e_ms: ms(slo.e2e_ns),
            good: g.good,
            attainment_pct: (b.issued > 0).then(|| g.good as f64 / b.issued as f64 * 100.0),
            requests_per_s: rate(g.good),
            output_tokens_per_s: rate(g.good_output_tokens),
            missed_ttft: g.missed_ttft,
            missed_tpot: g.missed_tpot,
            missed_e2e: g.missed_e2e,
        })
    }

    /// The bounds as a person reads them, e.g. `ttft ≤ 200 ms, e2e ≤ 10 s`.
    pub(crate) fn bounds(&self) -> String {
        [
            ("ttft", self.ttft_ms),
            ("tpot", self.tpot_ms),
            ("e2e", self.e2e_ms),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|ms| format!("{k} ≤ {}", duration(ms))))
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// `200 ms`, `10 s`, `1.5 ms`: seconds from one second up.
fn duration(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{} s", trim(ms / 1000.0))
    } else {
        format!("{} ms", trim(ms))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::block::RequestSample;
    use crate::metrics::errors::ErrorClass;
    use crate::metrics::goodput::judge;

    const MS: u64 = 1_000_000;

    fn sample(ttft_ms: u64, tokens: u32) -> RequestSample {
        RequestSample {
            t_sched: MS,
            t_send: MS,
            t_first_token: (1 + ttft_ms) * MS,
            t_last_token: (11 + ttft_ms) * MS,
            t_end: (11 + ttft_ms) * MS,
            completion_tokens: Some(tokens),
            streamed: true,
            status: 200,
            ..RequestSample::default()
        }
    }

    #[test]
    fn goodput_counts_good_requests_and_failures_count_against_attainment() {
        let slo = Slo {
            ttft_ns: Some(50 * MS),
            ..Slo::default()
        };
        let mut b = Block::default();
        let mut failed = sample(1, 0);
        failed.error = Some(ErrorClass::Reset);
        for s in [sample(10, 5), sample(20, 7), sample(80, 9), failed] {
            b.record(&s, []);
            b.record_judged(&judge(&slo, &s), s.output_tokens().0);
        }
        let mut rolled = Block::default();
        rolled.merge(&b);
        let g = Goodput::of(&rolled, &slo, 2_000_000_000).unwrap();
        assert_eq!(
            (g.good, g.missed_ttft, g.missed_tpot, g.missed_e2e),
            (2, 1, 0, 0)
        );
        assert_eq!(g.attainment_pct, Some(50.0), "2 good of 4 issued");
        assert_eq!(g.requests_per_s, 1.0);
        assert_eq!(g.output_tokens_per_s, 6.0, "(5 + 7) tokens over 2 s");
        assert_eq!(g.ttft_ms, Some(50.0));
        assert_eq!(g.bounds(), "ttft ≤ 50 ms");
        assert_eq!(Goodput::of(&rolled, &Slo::default(), 1), None);
        assert_eq!(
            Goodput::of(&Block::default(), &slo, 0)
                .unwrap()
                .attainment_pct,
            None
        );
    }

    #[test]
    fn bounds_read_in_ms_and_s() {
        let g = Goodput {
            ttft_ms: Some(200.0),
            tpot_ms: Some(1.5),
            e2e_ms: Some(10_000.0),
            ..Goodput::default()
        };
        assert_eq!(g.bounds(), "ttft ≤ 200 ms, tpot ≤ 1.5 ms, e2e ≤ 10 s");
    }
}
