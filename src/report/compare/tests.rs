use super::*;
use crate::report::fixture;

fn regressed(c: &Comparison) -> Vec<(String, &'static str)> {
    c.matches
        .iter()
        .flat_map(|m| {
            m.rows
                .iter()
                .filter(|r| r.regression)
                .map(move |r| (m.title(), r.metric.key))
        })
        .collect()
}

#[test]
fn identical_runs_pass() {
    let s = fixture::document();
    let c = compare(&s, &s, 10.0).unwrap();
    assert_eq!(c.regressions(), 0);
    assert!(c.unmatched.is_empty());
    // run, 2 run-wide scenarios, 2 stages × (stage + 2 scenarios)
    assert_eq!(c.matches.len(), 3 + 2 * 3);
    assert!(c.render_text("a", "b").contains("no regression"));
    assert_eq!(c.to_json("a", "b")["regression"], false);
    // With a zero threshold, too: nothing changed.
    assert_eq!(compare(&s, &s, 0.0).unwrap().regressions(), 0);
}

/// Each metric kind, moved just past and just short of the threshold in
/// one scenario of one stage.
#[test]
fn each_metric_kind_is_flagged_past_the_threshold() {
    let at = |doc: &mut Value, path: &[&str], v: Value| {
        let mut p = &mut doc["stages"][1]["scenarios"][0];
        for k in path {
            p = &mut p[*k];
        }
        *p = v;
    };
    let old = fixture::document();
    // stage "high", scenario "chat": 12 req/s, 1536 tok/s, e2e p99 50 ms,
    // ttft p50 2 ms, 15 of 135 failed.
    let cases: [(&[&str], Value, Value, &str); 5] = [
        (
            &["throughput", "requests_per_s"],
            json!(10.7),
            json!(10.9),
            "requests_per_s",
        ),
        (
            &["throughput", "output_tokens_per_s"],
            json!(1380.0),
            json!(1390.0),
            "output_tokens_per_s",
        ),
        (
            &["latency_ms", "e2e", "p99"],
            json!(55.1),
            json!(54.9),
            "e2e_p99_ms",
        ),
        // 2 → 3.1 ms is +55% and ≥ 1 ms; 2 → 2.9 ms is +45% but under the floor.
        (
            &["latency_ms", "ttft", "p50"],
            json!(3.1),
            json!(2.9),
            "ttft_p50_ms",
        ),
        (&["requests", "failed"], json!(29), json!(28), "error_rate"),
    ];
    for (path, bad, fine, key) in cases {
        let mut new = old.clone();
        at(&mut new, path, bad);
        let c = compare(&old, &new, 10.0).unwrap();
        assert_eq!(
            regressed(&c),
            [("stage high, scenario chat".to_string(), key)],
            "{key}"
        );
        assert!(
            c.render_text("o", "n")
                .contains("REGRESSION: 1 metric regressed")
        );
        let j = c.to_json("o", "n");
        assert_eq!(j["regression"], true);
        let m = j["matches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["scenario"] == "chat" && m["stage"]["old"] == "high")
            .unwrap();
        assert_eq!(m["metrics"][key]["regression"], true, "{j}");

        let mut new = old.clone();
        at(&mut new, path, fine);
        assert_eq!(regressed(&compare(&old, &new, 10.0).unwrap()), [], "{key}");
    }
}

#[test]
fn improvements_and_missing_values_are_not_regressions() {
    let old = fixture::document();
    let mut new = old.clone();
    new["throughput"]["requests_per_s"] = json!(1000.0);
    new["latency_ms"]["e2e"]["p99"] = json!(0.1);
    // TTFT gone (e.g. a non-streaming run): shown as -, not compared.
    new["latency_ms"]["ttft"] = fixture::empty_hist();
    let c = compare(&old, &new, 10.0).unwrap();
    assert_eq!(c.regressions(), 0);
    let text = c.render_text("o", "n");
    assert!(
        text.lines()
            .any(|l| l.starts_with("ttft p50 ms") && l.contains(" - ")),
        "{text}"
    );
}

#[test]
fn stages_pair_by_name_then_position() {
    let old = fixture::document();
    let mut new = old.clone();
    // Swapped order: still paired by name.
    new["stages"] = json!([old["stages"][1], old["stages"][0]]);
    let c = compare(&old, &new, 10.0).unwrap();
    assert_eq!(c.regressions(), 0);
    assert!(c.unmatched.is_empty());
    assert!(
        c.matches
            .iter()
            .flat_map(|m| &m.stage)
            .all(|p| p.by == PairedBy::Name)
    );

    // Renamed: paired by position; a regression there is still found.
    let mut new = old.clone();
    new["stages"][1]["name"] = json!("high-v2");
    new["stages"][1]["latency_ms"]["e2e"]["p50"] = json!(100.0);
    let c = compare(&old, &new, 10.0).unwrap();
    let p = c
        .matches
        .iter()
        .flat_map(|m| &m.stage)
        .find(|p| p.old == "high")
        .unwrap();
    assert_eq!((p.new.as_str(), p.by), ("high-v2", PairedBy::Position));
    assert_eq!(
        regressed(&c),
        [(
            "stage high → high-v2 (paired by position)".to_string(),
            "e2e_p50_ms"
        )]
    );

    // An extra stage and a missing scenario are listed, not errors.
    let mut new = old.clone();
    let mut extra = old["stages"][0].clone();
    extra["name"] = json!("extra");
    new["stages"].as_array_mut().unwrap().push(extra);
    new["stages"][0]["scenarios"].as_array_mut().unwrap().pop();
    let c = compare(&old, &new, 10.0).unwrap();
    assert_eq!(
        c.unmatched,
        [
            Unmatched {
                only_in: Side::Old,
                stage: Some("low".into()),
                scenario: Some("summarize".into())
            },
            Unmatched {
                only_in: Side::New,
                stage: Some("extra".into()),
                scenario: None
            },
        ]
    );
    assert!(c.render_text("o", "n").contains("stage extra: only in new"));
}

#[test]
fn today_summaries_without_scenarios() {
    let mut old = fixture::document();
    for st in old["stages"].as_array_mut().unwrap() {
        st["scenarios"] = json!([]);
    }
    old.as_object_mut().unwrap().remove("scenarios");
    let c = compare(&old, &old, 10.0).unwrap();
    assert_eq!(c.matches.len(), 3);
}

/// Why a document is not a summary is `Summary::from_value`'s to say
/// (its tests list the cases); compare names the side.
#[test]
fn not_a_summary() {
    let s = fixture::document();
    let bad = json!({"tool": "oha"});
    let reason = "no \"tool\": \"llmload\"".to_string();
    assert_eq!(
        compare(&s, &bad, 10.0).unwrap_err(),
        Error::NotASummary {
            side: Side::New,
            reason: reason.clone()
        }
    );
    assert_eq!(
        compare(&bad, &s, 10.0).unwrap_err(),
        Error::NotASummary {
            side: Side::Old,
            reason
        }
    );
    let none = json!({"tool": "llmload", "stages": []});
    assert_eq!(
        compare(&s, &none, 10.0).unwrap_err(),
        Error::NoStageInCommon
    );
    assert_eq!(
        compare(&s, &s, -1.0).unwrap_err(),
        Error::BadRegressPct(-1.0)
    );
    assert!(compare(&s, &s, f64::NAN).is_err());
}

/// The least a document can hold: no numbers, nothing flagged, and the
/// run described with `?` for what it does not say.
#[test]
fn a_bare_document_compares_without_notes() {
    let bare = json!({"tool": "llmload", "stages": [{"name": "main"}]});
    let c = compare(&bare, &bare, 10.0).unwrap();
    assert_eq!(c.regressions(), 0);
    assert_eq!(c.notes, Vec::<String>::new());
    assert_eq!(c.old_run, "llmload ?, started ?, ?");
    assert_eq!(c.matches.len(), 2);
    let text = c.render_text("a", "b");
    assert!(text.contains("error rate"), "{text}");
    assert!(text.contains("no regression"), "{text}");
}

#[test]
fn notes_say_what_weakens_the_comparison() {
    let old = fixture::document();
    let mut new = old.clone();
    new["complete"] = json!(false);
    new["incomplete_reasons"] = json!(["interrupted by SIGINT"]);
    new["generator"]["limited_by_generator"] = json!(true);
    new["config"]["model"] = json!("other");
    new["stages"][0]["load"]["concurrency"] = json!(8);
    let c = compare(&old, &new, 10.0).unwrap();
    let all = c.notes.join("\n");
    for want in [
        "new run is incomplete: interrupted by SIGINT",
        "limited the new run",
        "config model differs",
        "stage low: the load differs",
    ] {
        assert!(all.contains(want), "{want} not in\n{all}");
    }
}
