//! `timeline.csv`: the summary's timeline, a row per interval and series —
//! the whole run as scenario `all`, then each scenario — rendered from the
//! `Summary` (so it never disagrees with summary.json, and numbers are
//! spelled as there). RFC 4180: CRLF line ends, fields quoted when needed.

use super::csv::name;
use super::summary::Summary;
use super::summary::timeline::{TimelinePoint, TimelineSeries};

const HEADER: [&str; 16] = [
    "t_s",
    "stage",
    "scenario",
    "completed",
    "failed",
    "requests_per_s",
    "output_tokens",
    "output_tokens_per_s",
    "input_tokens",
    "good",
    "in_flight",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "errors",
];

/// The file for `summary` (a header only when the run has no timeline).
pub(crate) fn render(summary: &Summary) -> String {
    let mut w = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::CRLF)
        .from_writer(Vec::new());
    // Writes into a Vec cannot fail, whatever the summary holds.
    w.write_record(HEADER).expect("CSV into memory");
    for series in summary.timeline.iter().flat_map(|t| &t.series) {
        for p in &series.points {
            w.write_record(row(series, p)).expect("CSV into memory");
        }
    }
    let bytes = w.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

fn row(series: &TimelineSeries, p: &TimelinePoint) -> [String; 16] {
    [
        number(Some(p.t_s)),
        name(&p.stage),
        series
            .scenario
            .as_deref()
            .map_or_else(|| "all".into(), name),
        p.completed.to_string(),
        p.failed.to_string(),
        number(Some(p.requests_per_s)),
        p.output_tokens.to_string(),
        number(Some(p.output_tokens_per_s)),
        p.input_tokens.to_string(),
        p.good.map_or_else(String::new, |n| n.to_string()),
        p.in_flight.to_string(),
        number(p.ttft_p50_ms),
        number(p.ttft_p99_ms),
        number(p.e2e_p50_ms),
        number(p.e2e_p99_ms),
        p.errors
            .iter()
            .map(|(k, n)| format!("{k}={n}"))
            .collect::<Vec<_>>()
            .join(";"),
    ]
}

/// A number exactly as summary.json spells it; nothing is an empty cell.
fn number(v: Option<f64>) -> String {
    v.and_then(serde_json::Number::from_f64)
        .map_or_else(String::new, |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::timeline::Timeline;

    fn point(t_s: f64, stage: &str, completed: u64) -> TimelinePoint {
        TimelinePoint {
            t_s,
            stage: stage.into(),
            completed,
            requests_per_s: completed as f64,
            ..TimelinePoint::default()
        }
    }

    #[test]
    fn a_row_per_point_per_series_with_empty_cells_for_none() {
        let mut busy = point(1.0, "ramp, fast", 3);
        busy.failed = 2;
        busy.errors = [("http_503".to_string(), 1), ("reset".to_string(), 1)].into();
        busy.good = Some(2);
        busy.in_flight = 7;
        busy.ttft_p50_ms = Some(1.5);
        let summary = Summary {
            timeline: Some(Timeline {
                interval_s: 1.0,
                series: vec![
                    TimelineSeries {
                        scenario: None,
                        points: vec![point(0.0, "warmup", 1), busy],
                    },
                    TimelineSeries {
                        scenario: Some("chat".into()),
                        points: vec![point(0.0, "warmup", 1)],
                    },
                ],
                ..Timeline::default()
            }),
            ..Summary::default()
        };
        let text = render(&summary);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines[0], HEADER.join(","));
        assert_eq!(lines[1], "0.0,warmup,all,1,0,1.0,0,0.0,0,,0,,,,,");
        assert_eq!(
            lines[2],
            "1.0,\"ramp, fast\",all,3,2,3.0,0,0.0,0,2,7,1.5,,,,http_503=1;reset=1"
        );
        assert_eq!(lines[3], "0.0,warmup,chat,1,0,1.0,0,0.0,0,,0,,,,,");
        assert_eq!((lines.len(), lines[4]), (5, ""));
        assert_eq!(render(&Summary::default()), HEADER.join(",") + "\r\n");
    }

    #[test]
    fn names_that_read_as_formulas_are_text() {
        let summary = Summary {
            timeline: Some(Timeline {
                interval_s: 1.0,
                series: vec![TimelineSeries {
                    scenario: Some("@SUM(1+1)".into()),
                    points: vec![point(-1.0, "=1+1", 1)],
                }],
                ..Timeline::default()
            }),
            ..Summary::default()
        };
        let text = render(&summary);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(lines[1], "-1.0,'=1+1,'@SUM(1+1),1,0,1.0,0,0.0,0,,0,,,,,");
    }
}
