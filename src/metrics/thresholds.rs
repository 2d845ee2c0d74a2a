//! SLO thresholds, evaluated per stage: a handful of limits on a block's
//! percentiles, error rate and throughput, each giving a pass or fail with
//! the measured value beside the limit. No data is a failure for a latency
//! or throughput limit: a stage that completed nothing met no SLO.

use serde::Serialize;

use super::block::Block;
use crate::plan::Thresholds;

/// One limit's outcome.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Verdict {
    pub name: &'static str,
    pub limit: f64,
    pub value: Option<f64>,
    pub pass: bool,
}

/// Every threshold's name, as `Verdict::name` spells it.
pub(crate) const NAMES: [&str; 7] = [
    "ttft_p95_ms",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "p95_ms",
    "p99_ms",
    "error_rate",
    "min_rps",
];

impl Thresholds {
    /// Every limit set, evaluated on `b` over a window of `window_ns`.
    pub(crate) fn evaluate(&self, b: &Block, window_ns: u64) -> Vec<Verdict> {
        let ms = |q: f64, s: &super::series::Series| s.quantile_ns(q).map(|v| v as f64 / 1e6);
        let mut out = Vec::new();
        let mut upper = |name, limit: Option<f64>, value: Option<f64>| {
            if let Some(limit) = limit {
                out.push(Verdict {
                    name,
                    limit,
                    value,
                    pass: value.is_some_and(|v| v <= limit),
                });
            }
        };
        upper("ttft_p95_ms", self.ttft_p95_ms, ms(0.95, &b.ttft));
        upper("ttft_p99_ms", self.ttft_p99_ms, ms(0.99, &b.ttft));
        upper("tpot_p99_ms", self.tpot_p99_ms, ms(0.99, &b.tpot));
        upper("p95_ms", self.p95_ms, ms(0.95, &b.e2e));
        upper("p99_ms", self.p99_ms, ms(0.99, &b.e2e));
        let rate = (b.issued > 0).then(|| b.failed as f64 / b.issued as f64);
        if let Some(limit) = self.error_rate {
            out.push(Verdict {
                name: "error_rate",
                limit,
                value: Some(rate.unwrap_or(0.0)),
                pass: rate.unwrap_or(0.0) <= limit,
            });
        }
        if let Some(limit) = self.min_rps {
            let rps = (window_ns > 0).then(|| b.completed as f64 / (window_ns as f64 / 1e9));
            out.push(Verdict {
                name: "min_rps",
                limit,
                value: rps,
                pass: rps.is_some_and(|v| v >= limit),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::block::RequestSample;
    use crate::metrics::errors::ErrorClass;

    #[test]
    fn limits_pass_and_fail() {
        let mut b = Block::default();
        for i in 0..100u64 {
            let s = RequestSample {
                t_sched: 1,
                t_send: 1,
                t_end: 1 + (i + 1) * 1_000_000,
                t_first_token: 1 + 5_000_000,
                ..Default::default()
            };
            b.record(&s, []);
        }
        b.record(
            &RequestSample {
                error: Some(ErrorClass::Reset),
                ..Default::default()
            },
            [],
        );
        let t = Thresholds {
            p99_ms: Some(50.0),
            p95_ms: Some(200.0),
            ttft_p95_ms: Some(10.0),
            error_rate: Some(0.001),
            min_rps: Some(10.0),
            ..Thresholds::default()
        };
        let v = t.evaluate(&b, 2_000_000_000);
        let get = |n: &str| v.iter().find(|x| x.name == n).unwrap().clone();
        assert!(!get("p99_ms").pass);
        assert!(get("p95_ms").pass);
        assert!(get("ttft_p95_ms").pass);
        assert!(!get("error_rate").pass);
        assert!(get("min_rps").pass);
        assert_eq!(get("min_rps").value, Some(50.0));
        let empty = Thresholds {
            p99_ms: Some(1.0),
            ..Thresholds::default()
        }
        .evaluate(&Block::default(), 0);
        assert!(!empty[0].pass);
    }

    /// The p99 caps read the tails of the TTFT and TPOT series: 98 requests
    /// with a 5 ms first token and 1 ms per token, two with 40 ms and 9 ms.
    #[test]
    fn p99_caps_on_ttft_and_tpot() {
        let mut b = Block::default();
        for i in 0..100u64 {
            let (ttft, tpot) = if i >= 98 { (40, 9) } else { (5, 1) };
            let first = 1 + ttft * 1_000_000;
            let last = first + 10 * tpot * 1_000_000;
            let s = RequestSample {
                t_sched: 1,
                t_send: 1,
                t_first_token: first,
                t_last_token: last,
                t_end: last,
                completion_tokens: Some(11),
                ..Default::default()
            };
            b.record(&s, []);
        }
        let eval = |t: Thresholds| {
            let v = t.evaluate(&b, 1_000_000_000);
            assert_eq!(v.len(), 1);
            v[0].clone()
        };
        let below = eval(Thresholds {
            ttft_p99_ms: Some(20.0),
            ..Thresholds::default()
        });
        assert_eq!(below.name, "ttft_p99_ms");
        assert!(!below.pass);
        assert!(below.value.unwrap() > 35.0, "{below:?}");
        assert!(
            eval(Thresholds {
                ttft_p99_ms: Some(50.0),
                ..Thresholds::default()
            })
            .pass
        );
        let below = eval(Thresholds {
            tpot_p99_ms: Some(5.0),
            ..Thresholds::default()
        });
        assert_eq!(below.name, "tpot_p99_ms");
        assert!(!below.pass);
        assert!((below.value.unwrap() - 9.0).abs() < 0.5, "{below:?}");
        assert!(
            eval(Thresholds {
                tpot_p99_ms: Some(10.0),
                ..Thresholds::default()
            })
            .pass
        );
        // The p95 does not see the two slow requests.
        assert!(
            eval(Thresholds {
                ttft_p95_ms: Some(20.0),
                ..Thresholds::default()
            })
            .pass
        );
        // No TPOT (one-token replies) is a failure, as for any latency cap.
        let mut one = Block::default();
        one.record(
            &RequestSample {
                t_sched: 1,
                t_send: 1,
                t_first_token: 2,
                t_last_token: 2,
                t_end: 3,
                completion_tokens: Some(1),
                ..Default::default()
            },
            [],
        );
        let v = Thresholds {
            tpot_p99_ms: Some(100.0),
            ..Thresholds::default()
        }
        .evaluate(&one, 1);
        assert_eq!((v[0].value, v[0].pass), (None, false));
    }
}
