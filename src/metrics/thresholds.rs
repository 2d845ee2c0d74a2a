//! SLO thresholds, evaluated per stage: a handful of limits on a block's
//! percentiles, error rate and throughput, each giving a pass or fail with
//! the measured value beside the limit. No data is a failure for a latency
//! or throughput limit: a stage that completed nothing met no SLO.

use serde::{Deserialize, Serialize};

use super::block::Block;
use crate::plan::Thresholds;

/// Which limit: the `plan::Thresholds` field it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub(crate) enum ThresholdName {
    TtftP95Ms,
    TtftP99Ms,
    TpotP99Ms,
    P95Ms,
    P99Ms,
    ErrorRate,
    MinRps,
}

impl ThresholdName {
    /// The name reports print, as serde writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ThresholdName::TtftP95Ms => "ttft_p95_ms",
            ThresholdName::TtftP99Ms => "ttft_p99_ms",
            ThresholdName::TpotP99Ms => "tpot_p99_ms",
            ThresholdName::P95Ms => "p95_ms",
            ThresholdName::P99Ms => "p99_ms",
            ThresholdName::ErrorRate => "error_rate",
            ThresholdName::MinRps => "min_rps",
        }
    }
}

/// One limit's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct Verdict {
    pub name: ThresholdName,
    pub limit: f64,
    /// `None` when the block had no data for it.
    pub value: Option<f64>,
    pub pass: bool,
}

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
        use ThresholdName as N;
        upper(N::TtftP95Ms, self.ttft_p95_ms, ms(0.95, &b.ttft));
        upper(N::TtftP99Ms, self.ttft_p99_ms, ms(0.99, &b.ttft));
        upper(N::TpotP99Ms, self.tpot_p99_ms, ms(0.99, &b.tpot));
        upper(N::P95Ms, self.p95_ms, ms(0.95, &b.e2e));
        upper(N::P99Ms, self.p99_ms, ms(0.99, &b.e2e));
        let rate = (b.issued > 0).then(|| b.failed as f64 / b.issued as f64);
        if let Some(limit) = self.error_rate {
            out.push(Verdict {
                name: N::ErrorRate,
                limit,
                value: Some(rate.unwrap_or(0.0)),
                pass: rate.unwrap_or(0.0) <= limit,
            });
        }
        if let Some(limit) = self.min_rps {
            let rps = (window_ns > 0).then(|| b.completed as f64 / (window_ns as f64 / 1e9));
            out.push(Verdict {
                name: N::MinRps,
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
    fn names_are_those_serde_writes() {
        use ThresholdName as N;
        for n in [
            N::TtftP95Ms,
            N::TtftP99Ms,
            N::TpotP99Ms,
            N::P95Ms,
            N::P99Ms,
            N::ErrorRate,
            N::MinRps,
        ] {
            assert_eq!(serde_json::to_value(n).unwrap(), n.name());
            let back: ThresholdName = serde_json::from_value(n.name().into()).unwrap();
            assert_eq!(back, n);
        }
        let e = serde_json::from_value::<ThresholdName>("p42_ms".into()).unwrap_err();
        assert!(e.to_string().contains("p42_ms"), "{e}");
    }

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
        let get = |n: &str| v.iter().find(|x| x.name.name() == n).unwrap().clone();
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
        assert_eq!(below.name, ThresholdName::TtftP99Ms);
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
        assert_eq!(below.name, ThresholdName::TpotP99Ms);
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
