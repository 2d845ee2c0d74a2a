//! The run second by second (`timeline` in summary.json, `timeline.csv`,
//! the HTML's curves): what ended in each interval, per scenario and for
//! the whole run, from the per-second buckets the parent keeps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::timeline::RunTimeline;

/// Every interval of the run, from its start (warm-up included, marked).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Timeline {
    /// Bucket width, s (1 unless the run said otherwise).
    #[cfg_attr(test, schemars(extend("exclusiveMinimum" = 0)))]
    pub interval_s: f64,
    /// The whole run first (`scenario: None`), then each scenario when
    /// there are several (at most 16).
    pub series: Vec<TimelineSeries>,
    /// Requests whose record reached the parent after their interval had
    /// closed: counted in it, left out of its latency percentiles.
    pub stragglers: u64,
    /// Scenarios with no series of their own (past the first 16), counted
    /// in the whole run's.
    pub scenarios_left_out: usize,
}

/// One slice's buckets, in time order, none skipped (an idle second is a
/// point with zero counts, under the stage running at its start). A second
/// in which requests of two stages ended (warm-up and the first stage, or a
/// stage's last requests after the next began) has a point for each, in
/// stage order, with the same `t_s`: the run's total in that second is
/// their sum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct TimelineSeries {
    /// `None` for the whole run.
    pub scenario: Option<String>,
    /// In time order, none skipped; a second in which requests of two
    /// stages ended has a point for each, same `t_s`.
    pub points: Vec<TimelinePoint>,
}

/// What ended in one interval `[t_s, t_s + interval_s)`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct TimelinePoint {
    /// Start of the interval, s since the run started.
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub t_s: f64,
    /// The stage the interval's requests were measured in (a request's
    /// stage, as in `stages`), or `warmup`; an idle interval's is the stage
    /// running at its start.
    pub stage: String,
    pub completed: u64,
    pub failed: u64,
    /// Failures by key (`reset`, `http_503`, …); only keys that occurred
    /// (absent when none did).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, u64>,
    /// Output and input tokens of the requests completed in the interval.
    pub output_tokens: u64,
    pub input_tokens: u64,
    /// Requests that met every `--slo` bound; `None` without `--slo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub good: Option<u64>,
    /// Requests in flight at the interval's end (whole run only; the
    /// scenarios' series leave it 0).
    pub in_flight: u64,
    /// completed / interval_s, output_tokens / interval_s.
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub requests_per_s: f64,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub output_tokens_per_s: f64,
    /// Of the requests completed in the interval, ms; `None` when none.
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub e2e_p50_ms: Option<f64>,
    pub e2e_p99_ms: Option<f64>,
}

impl Timeline {
    /// The summary's timeline of `t`; `None` when the run kept none (no
    /// engine run, as an accuracy-only one).
    pub(crate) fn of(t: &RunTimeline) -> Option<Timeline> {
        if t.slices.is_empty() || t.interval_ns == 0 {
            return None;
        }
        let interval_s = t.interval_ns as f64 / 1e9;
        let ms = |ns: Option<u64>| ns.map(|v| v as f64 / 1e6);
        let series = t
            .slices
            .iter()
            .map(|slice| TimelineSeries {
                scenario: slice.scenario.clone(),
                points: slice
                    .buckets
                    .iter()
                    .map(|b| TimelinePoint {
                        t_s: b.interval as f64 * interval_s,
                        stage: match b.stage {
                            None => "warmup".to_string(),
                            Some(k) => t.stage_names.get(k as usize).cloned().unwrap_or_default(),
                        },
                        completed: b.completed,
                        failed: b.failed,
                        errors: b
                            .errors
                            .iter()
                            .map(|&(class, status, n)| (class.key(status), n))
                            .collect(),
                        output_tokens: b.output_tokens,
                        input_tokens: b.input_tokens,
                        good: t.slo.then_some(b.good),
                        in_flight: if slice.scenario.is_none() {
                            t.in_flight.get(b.interval as usize).copied().unwrap_or(0)
                        } else {
                            0
                        },
                        requests_per_s: b.completed as f64 / interval_s,
                        output_tokens_per_s: b.output_tokens as f64 / interval_s,
                        ttft_p50_ms: ms(b.ttft_p50_ns),
                        ttft_p99_ms: ms(b.ttft_p99_ns),
                        e2e_p50_ms: ms(b.e2e_p50_ns),
                        e2e_p99_ms: ms(b.e2e_p99_ns),
                    })
                    .collect(),
            })
            .collect();
        Some(Timeline {
            interval_s,
            series,
            stragglers: t.stragglers,
            scenarios_left_out: t.scenarios_left_out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::errors::ErrorClass;
    use crate::metrics::timeline::{Bucket, TimelineSlice};

    #[test]
    fn buckets_become_points_in_seconds_and_milliseconds() {
        let mut busy = Bucket {
            interval: 2,
            stage: Some(1),
            completed: 4,
            output_tokens: 40,
            input_tokens: 8,
            good: 3,
            ttft_p50_ns: Some(1_500_000),
            e2e_p99_ns: Some(250_000_000),
            ..Bucket::default()
        };
        busy.add_error(ErrorClass::HttpStatus, 503, 2);
        let warm = Bucket {
            interval: 0,
            completed: 1,
            ..Bucket::default()
        };
        let run = RunTimeline {
            interval_ns: 1_000_000_000,
            stage_names: vec!["low".into(), "high".into()],
            slices: vec![
                TimelineSlice {
                    scenario: None,
                    buckets: vec![warm.clone(), busy.clone()],
                },
                TimelineSlice {
                    scenario: Some("chat".into()),
                    buckets: vec![warm, busy],
                },
            ],
            in_flight: vec![5, 6, 7],
            slo: true,
            stragglers: 1,
            scenarios_left_out: 0,
        };
        let t = Timeline::of(&run).unwrap();
        assert_eq!((t.interval_s, t.stragglers), (1.0, 1));
        let all = &t.series[0];
        assert_eq!(all.scenario, None);
        assert_eq!(all.points[0].stage, "warmup");
        assert_eq!(all.points[0].in_flight, 5);
        let p = &all.points[1];
        assert_eq!((p.t_s, p.stage.as_str(), p.in_flight), (2.0, "high", 7));
        assert_eq!((p.completed, p.failed, p.good), (4, 2, Some(3)));
        assert_eq!((p.requests_per_s, p.output_tokens_per_s), (4.0, 40.0));
        assert_eq!((p.ttft_p50_ms, p.ttft_p99_ms), (Some(1.5), None));
        assert_eq!(p.e2e_p99_ms, Some(250.0));
        assert_eq!(p.errors, BTreeMap::from([("http_503".to_string(), 2)]));
        assert_eq!(t.series[1].points[1].in_flight, 0, "the whole run's only");
        let json = serde_json::to_value(&t).unwrap();
        assert!(json["series"][0]["points"][0].get("errors").is_none());
        assert_eq!(
            serde_json::from_value::<Timeline>(json).unwrap(),
            t,
            "reads back"
        );
        let plain = RunTimeline {
            slo: false,
            ..run.clone()
        };
        assert_eq!(Timeline::of(&plain).unwrap().series[0].points[1].good, None);
        assert_eq!(Timeline::of(&RunTimeline::default()), None);
    }
}
