//! `report.csv`: the summary as one table for spreadsheets and notebooks — a
//! row per stage × scenario, an aggregate row per stage (scenario `*`) and
//! rows for the whole run (stage `*`). It is rendered from the `Summary`,
//! so it can never disagree with `summary.json`, and every number is
//! spelled exactly as summary.json spells it. Error classes are columns, so
//! the header depends on which errors the run saw.

use std::collections::BTreeSet;

use super::slices::{LATENCIES, Slice, Stat, slices};
use super::summary::{Load, Summary};

/// The histogram statistics each latency gets, in column order.
const STATS: [(&str, Stat); 7] = [
    ("p50", |h| h.p50),
    ("p90", |h| h.p90),
    ("p95", |h| h.p95),
    ("p99", |h| h.p99),
    ("p999", |h| h.p999),
    ("mean", |h| h.mean),
    ("max", |h| h.max),
];

/// Renders `report.csv` (RFC 4180: CRLF line ends, fields quoted when needed).
pub(crate) fn render(summary: &Summary) -> String {
    let slices = slices(summary, "*");
    let classes: BTreeSet<&str> = slices
        .iter()
        .flat_map(|s| s.numbers.requests.errors.keys().map(String::as_str))
        .collect();

    let mut header: Vec<String> = [
        "stage",
        "scenario",
        "load_mode",
        "concurrency",
        "rate_from_per_s",
        "rate_to_per_s",
        "window_s",
        "issued",
        "completed",
        "failed",
        "error_rate",
        "requests_per_s",
        "output_tokens_per_s",
        "input_tokens_per_s",
    ]
    .map(String::from)
    .to_vec();
    for (l, _) in LATENCIES {
        header.extend(STATS.iter().map(|(s, _)| format!("{l}_{s}_ms")));
    }
    header.extend(["output_tokens", "input_tokens", "send_lateness_p99_us"].map(String::from));
    header.extend(classes.iter().map(|c| format!("errors_{c}")));
    // Goodput columns only with --slo, as the error columns only with errors.
    let goodput = slices.iter().any(|s| s.numbers.goodput.is_some());
    if goodput {
        header.extend(GOODPUT.map(String::from));
    }
    // The accuracy phase's datasets: rows of their own after the
    // performance rows, in columns only they fill.
    let accuracy: Vec<&serde_json::Value> = summary
        .accuracy
        .as_ref()
        .and_then(|a| a["datasets"].as_array())
        .map(|d| d.iter().collect())
        .unwrap_or_default();
    if !accuracy.is_empty() {
        header.extend(ACCURACY.map(String::from));
    }

    let mut w = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::CRLF)
        .from_writer(Vec::new());
    // Writes into a Vec cannot fail, whatever the summary holds.
    w.write_record(&header).expect("CSV into memory");
    let pad = ACCURACY.len() * usize::from(!accuracy.is_empty());
    for s in &slices {
        let mut r = row(s, &classes);
        if goodput {
            let g = s.numbers.goodput.as_ref();
            r.extend([
                g.map_or_else(String::new, |g| g.good.to_string()),
                number(g.map(|g| g.requests_per_s)),
                number(g.map(|g| g.output_tokens_per_s)),
                number(g.and_then(|g| g.attainment_pct)),
            ]);
        }
        r.extend(std::iter::repeat_n(String::new(), pad));
        w.write_record(r).expect("CSV into memory");
    }
    for d in accuracy {
        let mut r = vec![String::new(); header.len() - ACCURACY.len()];
        r[0] = "accuracy".into();
        r[1] = name(d["name"].as_str().unwrap_or(""));
        r.extend(
            ACCURACY.map(|k| match &d[k.trim_start_matches("accuracy_")] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => String::new(),
                v => v.to_string(),
            }),
        );
        w.write_record(r).expect("CSV into memory");
    }
    let bytes = w.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

/// The goodput columns (`--slo`), as summary.json's `goodput` spells them.
const GOODPUT: [&str; 4] = [
    "goodput_good",
    "goodput_requests_per_s",
    "goodput_output_tokens_per_s",
    "goodput_attainment_pct",
];

/// The accuracy columns, each the summary's dataset key after `accuracy_`.
const ACCURACY: [&str; 10] = [
    "accuracy_scorer",
    "accuracy_extractor",
    "accuracy_score",
    "accuracy_rows",
    "accuracy_repeats",
    "accuracy_issued",
    "accuracy_correct",
    "accuracy_failed",
    "accuracy_truncated",
    "accuracy_missing",
];

fn row(s: &Slice, classes: &BTreeSet<&str>) -> Vec<String> {
    let b = s.numbers;
    let req = &b.requests;
    let (concurrency, rates) = match s.load {
        Some(Load::Concurrency { concurrency }) => (Some(*concurrency), None),
        Some(Load::Poisson { rate_from, rate_to } | Load::Uniform { rate_from, rate_to }) => {
            (None, Some((*rate_from, *rate_to)))
        }
        Some(Load::Offline) | None => (None, None),
    };
    let mut r = vec![
        s.stage.as_deref().map_or_else(|| "*".into(), name),
        s.scenario.as_deref().map_or_else(|| "*".into(), name),
        s.load.map_or("", Load::mode).to_string(),
        concurrency.map_or_else(String::new, |c| c.to_string()),
        number(rates.map(|r| r.0)),
        number(rates.map(|r| r.1)),
        number(Some(b.window_s)),
        req.issued.to_string(),
        req.completed.to_string(),
        req.failed.to_string(),
        req.error_rate().map_or_else(String::new, |r| r.to_string()),
        number(Some(b.throughput.requests_per_s)),
        number(Some(b.throughput.output_tokens_per_s)),
        number(Some(b.throughput.input_tokens_per_s)),
    ];
    for (_, latency) in LATENCIES {
        let h = latency(&b.latency_ms);
        r.extend(STATS.iter().map(|(_, stat)| number(stat(h))));
    }
    r.push(b.tokens.output_total.to_string());
    r.push(b.tokens.input_total.to_string());
    r.push(number(s.lateness.p99));
    // The summary lists only classes that occurred: absent means zero.
    r.extend(
        classes
            .iter()
            .map(|c| req.errors.get(*c).copied().unwrap_or(0).to_string()),
    );
    r
}

/// A user-given name as a cell a spreadsheet shows as text: one that a
/// spreadsheet would read as a formula (OWASP's CSV injection: `=`, `+`,
/// `-`, `@`, tab, CR) gets a leading `'`. Only names go through this; the
/// numbers this file writes (`-1`) must stay numbers.
pub(crate) fn name(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

/// A number exactly as summary.json spells it; nothing (or a value JSON
/// cannot hold) is an empty cell.
fn number(v: Option<f64>) -> String {
    v.and_then(serde_json::Number::from_f64)
        .map_or_else(String::new, |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;
    use serde_json::json;

    fn parse(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
        let mut r = ::csv::Reader::from_reader(text.as_bytes());
        let header = r.headers().unwrap().iter().map(String::from).collect();
        let rows = r
            .records()
            .map(|rec| rec.unwrap().iter().map(String::from).collect())
            .collect();
        (header, rows)
    }

    fn col(header: &[String], name: &str) -> usize {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    }

    #[test]
    fn rows_columns_and_values() {
        let text = render(&fixture::summary());
        assert!(text.ends_with("\r\n"));
        let (header, rows) = parse(&text);
        assert_eq!(header.len(), 14 + 5 * 7 + 3 + 2);
        assert_eq!(
            &header[header.len() - 2..],
            ["errors_http_503", "errors_reset"]
        );
        assert!(rows.iter().all(|r| r.len() == header.len()));
        let keys: Vec<(&str, &str)> = rows.iter().map(|r| (&*r[0], &*r[1])).collect();
        assert_eq!(
            keys,
            [
                ("low", "*"),
                ("low", "chat"),
                ("low", "summarize"),
                ("high", "*"),
                ("high", "chat"),
                ("high", "summarize"),
                ("*", "*"),
                ("*", "chat"),
                ("*", "summarize"),
            ]
        );
        let at = |r: usize, c: &str| rows[r][col(&header, c)].as_str();
        assert_eq!(at(0, "load_mode"), "concurrency");
        assert_eq!(at(0, "concurrency"), "4");
        assert_eq!(at(0, "rate_from_per_s"), "");
        assert_eq!(at(4, "load_mode"), "poisson");
        assert_eq!(at(4, "rate_to_per_s"), "20.0");
        assert_eq!(at(6, "load_mode"), "");
        assert_eq!(at(3, "issued"), "200");
        assert_eq!(at(3, "error_rate"), "0.1");
        assert_eq!(at(0, "error_rate"), "0");
        assert_eq!(at(3, "errors_http_503"), "15");
        assert_eq!(at(4, "errors_reset"), "0");
        assert_eq!(at(1, "e2e_p99_ms"), "25.0");
        assert_eq!(at(1, "ttft_max_ms"), "3.2");
        // An empty histogram's percentiles are empty cells, not zeros.
        assert_eq!(at(2, "ttft_p50_ms"), "");
        assert_eq!(at(2, "tpot_p50_ms"), "0.1");
        assert_eq!(at(6, "output_tokens"), (280 * 128).to_string());
        assert_eq!(at(6, "send_lateness_p99_us"), "125.0");
    }

    #[test]
    fn stage_without_scenarios_is_its_own_row() {
        let mut s = fixture::summary();
        s.stages[0].scenarios.clear();
        s.stages[1].scenarios.clear();
        s.scenarios.clear();
        let (header, rows) = parse(&render(&s));
        let keys: Vec<(&str, &str)> = rows.iter().map(|r| (&*r[0], &*r[1])).collect();
        assert_eq!(keys, [("low", "*"), ("high", "*"), ("*", "*")]);
        assert!(header.contains(&"errors_http_503".to_string()));
    }

    #[test]
    fn quoting_and_label_collisions() {
        let mut s = fixture::summary();
        s.stages[0].name = "a, \"b\"\nc".into();
        s.stages[1].name = "*".into();
        s.stages[0].scenarios[1].name = "chat".into();
        let text = render(&s);
        assert!(text.contains("\"a, \"\"b\"\"\nc\""), "{text}");
        let (_, rows) = parse(&text);
        assert_eq!(rows[0][0], "a, \"b\"\nc");
        assert_eq!(rows[2][1], "chat#2");
        assert_eq!(rows[3][0], "*#2");
    }

    #[test]
    fn names_that_read_as_formulas_are_text() {
        let mut s = fixture::summary();
        s.stages[0].name = "=HYPERLINK(\"http://evil.example/\",\"click\")".into();
        s.stages[1].name = "@SUM(1+1)".into();
        s.stages[0].scenarios[0].name = "+1+1".into();
        s.stages[0].scenarios[1].name = "-2".into();
        s.stages[1].scenarios[0].name = "\tx".into();
        s.stages[1].scenarios[1].name = "\rcmd".into();
        let (_, rows) = parse(&render(&s));
        let keys: Vec<(&str, &str)> = rows.iter().map(|r| (&*r[0], &*r[1])).collect();
        assert_eq!(
            &keys[..6],
            [
                ("'=HYPERLINK(\"http://evil.example/\",\"click\")", "*"),
                ("'=HYPERLINK(\"http://evil.example/\",\"click\")", "'+1+1"),
                ("'=HYPERLINK(\"http://evil.example/\",\"click\")", "'-2"),
                ("'@SUM(1+1)", "*"),
                ("'@SUM(1+1)", "'\tx"),
                ("'@SUM(1+1)", "'\rcmd"),
            ]
        );
        // Plain names and the numbers beside them are left alone.
        assert_eq!(
            (name("low"), name("a-b"), name("")),
            ("low".into(), "a-b".into(), String::new())
        );
    }

    #[test]
    fn a_bare_document_renders_a_row_per_slice() {
        let s = fixture::read(json!({"tool": "llmload", "stages": [{"name": "main"}]}));
        let (header, rows) = parse(&render(&s));
        let keys: Vec<(&str, &str)> = rows.iter().map(|r| (&*r[0], &*r[1])).collect();
        assert_eq!(keys, [("main", "*"), ("*", "*")]);
        assert!(rows.iter().all(|r| r.len() == header.len()));
        let at = |c: &str| rows[0][col(&header, c)].as_str();
        // No load: no mode; no requests: no error rate; counts are zero.
        assert_eq!(
            (at("load_mode"), at("error_rate"), at("issued")),
            ("", "", "0")
        );
        assert_eq!(at("e2e_p50_ms"), "");
    }
}
