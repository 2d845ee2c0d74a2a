//! `report.csv`: the summary as one table for spreadsheets and notebooks — a
//! row per stage × scenario, an aggregate row per stage (scenario `*`) and
//! rows for the whole run (stage `*`). It is rendered from the summary
//! document rather than from the engine's result, so it can never disagree
//! with `summary.json`; the price is that every cell is looked up by name in
//! a `Value`, and a field the summary lacks becomes an empty cell instead of
//! a compile error. The slice walk below is shared with `metrics.prom`.

use std::collections::BTreeSet;

use serde_json::Value;

/// One measured slice of a run: the whole run, a stage, or one scenario of
/// either.
pub(crate) struct Slice<'a> {
    /// The stage's label; `None` for run-wide slices.
    pub stage: Option<String>,
    /// The scenario's label; `None` for the aggregate over all scenarios.
    pub scenario: Option<String>,
    /// The block: `requests`, `window_s`, `throughput`, `tokens`, `latency_ms`.
    pub block: &'a Value,
    /// The stage's `load`, for slices within a stage.
    pub load: Option<&'a Value>,
    /// Send lateness in µs: the block's own, or the generator's for the run.
    pub lateness: &'a Value,
}

/// Every slice of `summary` in report order: each stage's aggregate followed
/// by its scenarios, then the whole run followed by its run-wide scenarios.
///
/// Labels are made unique because both outputs key rows by them: a missing
/// name, a repeated one, or one equal to `reserved` (the marker the caller
/// uses for "all") gets `#<position>` appended, 1-based.
pub(crate) fn slices<'a>(summary: &'a Value, reserved: &str) -> Vec<Slice<'a>> {
    let stages = array(&summary["stages"]);
    let stage_labels = labels(stages, reserved);
    let mut out = Vec::new();
    for (stage, label) in stages.iter().zip(stage_labels) {
        let lateness = &stage["send_lateness_us"];
        out.push(Slice {
            stage: Some(label.clone()),
            scenario: None,
            block: stage,
            load: Some(&stage["load"]),
            lateness,
        });
        let scenarios = array(&stage["scenarios"]);
        for (sc, sc_label) in scenarios.iter().zip(labels(scenarios, reserved)) {
            out.push(Slice {
                stage: Some(label.clone()),
                scenario: Some(sc_label),
                block: sc,
                load: Some(&stage["load"]),
                lateness: &sc["send_lateness_us"],
            });
        }
    }
    out.push(Slice {
        stage: None,
        scenario: None,
        block: summary,
        load: None,
        lateness: &summary["generator"]["send_lateness_us"],
    });
    let scenarios = array(&summary["scenarios"]);
    for (sc, sc_label) in scenarios.iter().zip(labels(scenarios, reserved)) {
        out.push(Slice {
            stage: None,
            scenario: Some(sc_label),
            block: sc,
            load: None,
            lateness: &sc["send_lateness_us"],
        });
    }
    out
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn labels(items: &[Value], reserved: &str) -> Vec<String> {
    let mut used = BTreeSet::new();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let name = item["name"].as_str().unwrap_or("");
            let mut label = name.to_string();
            let mut n = i + 1;
            while label.is_empty() || label == reserved || used.contains(&label) {
                label = format!("{name}#{n}");
                n += 1;
            }
            used.insert(label.clone());
            label
        })
        .collect()
}

/// The latency histograms, in column order.
pub(crate) const LATENCIES: [&str; 5] = ["e2e", "service", "ttft", "tpot", "itl"];
const STATS: [&str; 7] = ["p50", "p90", "p95", "p99", "p999", "mean", "max"];

/// Renders `report.csv` (RFC 4180: CRLF line ends, fields quoted when needed).
pub fn render(summary: &Value) -> String {
    let slices = slices(summary, "*");
    let classes: BTreeSet<&str> = slices
        .iter()
        .filter_map(|s| s.block["requests"]["errors"].as_object())
        .flat_map(|m| m.keys().map(String::as_str))
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
    for l in LATENCIES {
        header.extend(STATS.iter().map(|s| format!("{l}_{s}_ms")));
    }
    header.extend(["output_tokens", "input_tokens", "send_lateness_p99_us"].map(String::from));
    header.extend(classes.iter().map(|c| format!("errors_{c}")));

    let mut w = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::CRLF)
        .from_writer(Vec::new());
    // Writes into a Vec cannot fail, whatever the summary holds.
    w.write_record(&header).expect("CSV into memory");
    for s in &slices {
        w.write_record(row(s, &classes)).expect("CSV into memory");
    }
    let bytes = w.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

fn row(s: &Slice, classes: &BTreeSet<&str>) -> Vec<String> {
    let b = s.block;
    let req = &b["requests"];
    let load = s.load.unwrap_or(&Value::Null);
    let mut r = vec![
        s.stage.clone().unwrap_or_else(|| "*".into()),
        s.scenario.clone().unwrap_or_else(|| "*".into()),
        load["mode"].as_str().unwrap_or("").to_string(),
        cell(&load["concurrency"]),
        cell(&load["rate_from"]),
        cell(&load["rate_to"]),
        cell(&b["window_s"]),
        cell(&req["issued"]),
        cell(&req["completed"]),
        cell(&req["failed"]),
        error_rate(req).map_or_else(String::new, |r| r.to_string()),
        cell(&b["throughput"]["requests_per_s"]),
        cell(&b["throughput"]["output_tokens_per_s"]),
        cell(&b["throughput"]["input_tokens_per_s"]),
    ];
    for l in LATENCIES {
        let h = &b["latency_ms"][l];
        r.extend(STATS.iter().map(|st| cell(&h[st])));
    }
    r.push(cell(&b["tokens"]["output_total"]));
    r.push(cell(&b["tokens"]["input_total"]));
    r.push(cell(&s.lateness["p99"]));
    let errors = req["errors"].as_object();
    r.extend(classes.iter().map(|c| match errors {
        // The summary lists only classes that occurred: absent means zero.
        Some(m) => m.get(*c).map_or_else(|| "0".to_string(), cell),
        None => String::new(),
    }));
    r
}

/// A number exactly as summary.json spells it; anything else is empty.
fn cell(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// failed / issued, when anything was issued.
pub(crate) fn error_rate(requests: &Value) -> Option<f64> {
    let issued = requests["issued"].as_f64()?;
    let failed = requests["failed"].as_f64()?;
    (issued > 0.0).then(|| failed / issued)
}

/// A summary shaped as the integrator's extended document: two stages of two
/// scenarios each, run-wide scenarios, errors, thresholds, and empty
/// histograms (nulls). Shared by the renderers' and compare's tests.
#[cfg(test)]
pub(crate) mod fixture {
    use serde_json::{Value, json};

    /// A histogram in ms whose percentiles scale with `base`.
    pub fn hist(count: u64, base: f64) -> Value {
        json!({
            "count": count, "min": base * 0.5, "mean": base * 1.1, "p50": base,
            "p90": base * 1.5, "p95": base * 1.8, "p99": base * 2.5,
            "p999": base * 3.0, "max": base * 3.2,
        })
    }

    pub fn empty_hist() -> Value {
        json!({"count": 0, "min": null, "mean": null, "p50": null, "p90": null,
               "p95": null, "p99": null, "p999": null, "max": null})
    }

    /// One block: `ok` completions, `errors` failures by class, latencies
    /// scaled by `ms`; TTFT empty when `ttft` is false.
    pub fn block(name: &str, ok: u64, errors: &[(&str, u64)], ms: f64, ttft: bool) -> Value {
        let failed: u64 = errors.iter().map(|e| e.1).sum();
        let errs: serde_json::Map<String, Value> = errors
            .iter()
            .map(|(k, n)| (k.to_string(), json!(n)))
            .collect();
        json!({
            "name": name,
            "requests": {"issued": ok + failed, "completed": ok, "failed": failed, "errors": errs},
            "window_s": 10.0,
            "throughput": {"requests_per_s": ok as f64 / 10.0,
                           "output_tokens_per_s": ok as f64 * 12.8,
                           "input_tokens_per_s": ok as f64 * 2.0},
            "tokens": {"output_total": ok * 128, "input_total": ok * 20,
                       "output_source": "usage", "input_source": "usage"},
            "latency_ms": {
                "e2e": hist(ok, ms * 10.0), "service": hist(ok, ms * 9.0),
                "ttft": if ttft { hist(ok, ms) } else { empty_hist() },
                "tpot": hist(ok, ms * 0.1), "itl": hist(ok * 127, ms * 0.1),
                "tpot_token_weighted": ms * 0.1,
            },
            "send_lateness_us": hist(ok + failed, 50.0),
        })
    }

    /// Two stages ("low", concurrency 4; "high", a poisson ramp) × two
    /// scenarios ("chat", "summarize"), and the run-wide blocks.
    pub fn summary() -> Value {
        let mut low = block("low", 100, &[], 1.0, true);
        low["load"] = json!({"mode": "concurrency", "concurrency": 4});
        low["scenarios"] = json!([
            block("chat", 70, &[], 1.0, true),
            block("summarize", 30, &[], 1.0, false),
        ]);
        low["thresholds"] =
            json!([{"name": "p99_ms", "limit": 5000.0, "value": 25.0, "pass": true}]);
        let mut high = block("high", 180, &[("http_503", 15), ("reset", 5)], 2.0, true);
        high["load"] = json!({"mode": "poisson", "rate_from": 10.0, "rate_to": 20.0});
        high["scenarios"] = json!([
            block("chat", 120, &[("http_503", 15)], 2.0, true),
            block("summarize", 60, &[("reset", 5)], 2.0, false),
        ]);
        high["thresholds"] =
            json!([{"name": "p99_ms", "limit": 40.0, "value": 50.0, "pass": false}]);
        let mut doc = block("run", 280, &[("http_503", 15), ("reset", 5)], 1.5, true);
        let obj = doc.as_object_mut().unwrap();
        obj.remove("name");
        let lateness = obj.remove("send_lateness_us").unwrap();
        doc["tool"] = json!("llmload");
        doc["version"] = json!("0.1.0");
        doc["complete"] = json!(true);
        doc["interrupted"] = json!(false);
        doc["config"] = json!({"api": "openai-chat", "model": "m\"1\\x\ny"});
        doc["generator"] = json!({"send_lateness_us": lateness, "ring_full": 0,
                                  "waited_for_connection": 3, "limited_by_generator": false});
        doc["stages"] = json!([low, high]);
        doc["scenarios"] = json!([
            block("chat", 190, &[("http_503", 15)], 1.5, true),
            block("summarize", 90, &[("reset", 5)], 1.5, false),
        ]);
        doc["thresholds_passed"] = json!(false);
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        s["stages"][0]["scenarios"] = json!([]);
        s["stages"][1]["scenarios"] = json!([]);
        s["scenarios"] = json!([]);
        let (header, rows) = parse(&render(&s));
        let keys: Vec<(&str, &str)> = rows.iter().map(|r| (&*r[0], &*r[1])).collect();
        assert_eq!(keys, [("low", "*"), ("high", "*"), ("*", "*")]);
        assert!(header.contains(&"errors_http_503".to_string()));
    }

    #[test]
    fn quoting_and_label_collisions() {
        let mut s = fixture::summary();
        s["stages"][0]["name"] = json!("a, \"b\"\nc");
        s["stages"][1]["name"] = json!("*");
        s["stages"][0]["scenarios"][1]["name"] = json!("chat");
        let text = render(&s);
        assert!(text.contains("\"a, \"\"b\"\"\nc\""), "{text}");
        let (_, rows) = parse(&text);
        assert_eq!(rows[0][0], "a, \"b\"\nc");
        assert_eq!(rows[2][1], "chat#2");
        assert_eq!(rows[3][0], "*#2");
    }

    #[test]
    fn malformed_summary_renders_empty_cells() {
        for doc in [
            json!(null),
            json!({"stages": 3}),
            json!({"stages": [1, "x"]}),
        ] {
            let (header, rows) = parse(&render(&doc));
            assert!(!rows.is_empty());
            assert!(rows.iter().all(|r| r.len() == header.len()));
        }
    }
}
