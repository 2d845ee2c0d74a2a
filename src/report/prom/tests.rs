use super::check::{Sample, parse};
use super::*;
use crate::report::fixture;
use crate::report::summary::Threshold;
use serde_json::json;

fn find(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && labels.len() == l.len()
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
        })
        .map(|s| s.2)
}

fn rendered(doc: &Summary) -> (String, Vec<Sample>) {
    let text = render(doc);
    let samples = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, samples)
}

#[test]
fn passes_the_format_check_with_values_in_base_units() {
    let (text, s) = rendered(&fixture::summary());
    let v = |name, labels: &[(&str, &str)]| {
        find(&s, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
    };
    let q = |stage, scenario, quantile| {
        [
            ("stage", stage),
            ("scenario", scenario),
            ("quantile", quantile),
        ]
    };
    // p99 of the "high"/"chat" e2e block: 2.5 × 20 ms.
    assert_eq!(
        v("llmload_e2e_latency_seconds", &q("high", "chat", "0.99")),
        0.05
    );
    assert!(text.contains("quantile=\"0.99\"} 0.05\n"), "{text}");
    assert_eq!(v("llmload_ttft_seconds", &q("low", "all", "1")), 0.0032);
    assert_eq!(
        v("llmload_send_lateness_seconds", &q("all", "all", "0.99")),
        0.000125
    );
    let run = [("stage", "all"), ("scenario", "all")];
    assert_eq!(v("llmload_e2e_latency_seconds_count", &run), 280.0);
    assert!((v("llmload_e2e_latency_seconds_sum", &run) - 280.0 * 0.0165).abs() < 1e-9);
    let hs = [("stage", "high"), ("scenario", "all")];
    assert_eq!(v("llmload_error_ratio", &hs), 0.1);
    assert_eq!(v("llmload_requests_per_second", &hs), 18.0);
    let with = |k, val| [("stage", "high"), ("scenario", "all"), (k, val)];
    assert_eq!(
        v("llmload_requests_total", &with("outcome", "failed")),
        20.0
    );
    assert_eq!(
        v("llmload_requests_total", &with("outcome", "completed")),
        180.0
    );
    assert_eq!(v("llmload_errors_total", &with("class", "http_503")), 15.0);
    assert_eq!(
        v(
            "llmload_errors_total",
            &[
                ("stage", "all"),
                ("scenario", "summarize"),
                ("class", "reset")
            ]
        ),
        5.0
    );
    assert_eq!(v("llmload_run_complete", &[]), 1.0);
    assert_eq!(v("llmload_generator_limited", &[]), 0.0);
    assert_eq!(v("llmload_thresholds_passed", &[]), 0.0);
    assert_eq!(
        v(
            "llmload_threshold_passed",
            &[("stage", "high"), ("threshold", "p99_ms")]
        ),
        0.0
    );
    assert_eq!(v("llmload_generator_waited_for_connection_total", &[]), 3.0);
    // Label values are escaped and read back intact.
    assert_eq!(
        v(
            "llmload_info",
            &[
                ("version", "0.1.0"),
                ("api", "openai-chat"),
                ("model", "m\"1\\x\ny")
            ]
        ),
        1.0
    );
    // Empty histograms: no quantile samples, a zero count and sum.
    let empty = [("stage", "low"), ("scenario", "summarize")];
    assert_eq!(
        find(&s, "llmload_ttft_seconds", &q("low", "summarize", "0.5")),
        None
    );
    assert_eq!(v("llmload_ttft_seconds_count", &empty), 0.0);
    assert_eq!(v("llmload_ttft_seconds_sum", &empty), 0.0);
    for (name, _, _) in &s {
        assert!(!name.contains("_ms"), "{name}: not a base unit");
    }
    assert_eq!(
        text.matches("# TYPE llmload_e2e_latency_seconds summary\n")
            .count(),
        1
    );
    assert_eq!(
        text.matches("# TYPE llmload_requests_total counter\n")
            .count(),
        1
    );
}

#[test]
fn connections_are_counters_a_rate_and_summaries_in_seconds() {
    let mut doc = fixture::summary();
    doc.connections = crate::report::fixture::read(json!({
        "tool": "llmload", "stages": [],
        "connections": {"opened": 40, "resumed": 39, "failed": 2, "connects_per_s": 12.5,
                        "tcp_connect_ms": fixture::hist(40, 0.2),
                        "tls_handshake_ms": fixture::hist(40, 1.0)},
        "tls": {"insecure": true, "endpoints": []}
    }))
    .connections;
    doc.tls = Some(crate::report::summary::TlsSummary {
        insecure: true,
        endpoints: Vec::new(),
    });
    let (text, s) = rendered(&doc);
    let v = |name, labels: &[(&str, &str)]| {
        find(&s, name, labels).unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
    };
    assert_eq!(v("llmload_connections_opened_total", &[]), 40.0);
    assert_eq!(v("llmload_connections_resumed_total", &[]), 39.0);
    assert_eq!(v("llmload_connections_failed_total", &[]), 2.0);
    assert_eq!(v("llmload_connects_per_second", &[]), 12.5);
    assert_eq!(
        v("llmload_tcp_connect_seconds", &[("quantile", "0.5")]),
        0.0002
    );
    assert_eq!(
        v("llmload_tls_handshake_seconds", &[("quantile", "0.99")]),
        0.0025
    );
    assert_eq!(v("llmload_tls_handshake_seconds_count", &[]), 40.0);
    assert_eq!(v("llmload_tls_insecure", &[]), 1.0);
    // Plain http: no handshake family, no insecure gauge.
    let (text, s) = rendered(&fixture::summary());
    assert_eq!(find(&s, "llmload_tls_handshake_seconds_count", &[]), None);
    assert!(!text.contains("llmload_tls_insecure"), "{text}");
    assert_eq!(
        find(&s, "llmload_tcp_connect_seconds_count", &[]),
        Some(0.0)
    );
}

#[test]
fn empty_scenarios_leave_stage_and_run_series() {
    let mut doc = fixture::summary();
    for st in &mut doc.stages {
        st.scenarios.clear();
    }
    doc.scenarios.clear();
    let (_, s) = rendered(&doc);
    let mut pairs: Vec<(String, String)> = s
        .iter()
        .filter(|(n, _, _)| n == "llmload_requests_per_second")
        .map(|(_, l, _)| (l[0].1.clone(), l[1].1.clone()))
        .collect();
    pairs.sort();
    let want = [("all", "all"), ("high", "all"), ("low", "all")];
    assert_eq!(pairs, want.map(|(a, b)| (a.to_string(), b.to_string())));
}

#[test]
fn endpoints_get_families_of_their_own_when_there_are_several() {
    use crate::report::summary::EndpointSummary;
    let ep = |url: &str, completed, failed| EndpointSummary {
        url: url.into(),
        issued: completed + failed,
        completed,
        failed,
        errors: [("connect_refused".to_string(), failed)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .collect(),
        ttft_ms: Rollup {
            count: completed,
            mean: Some(10.0),
            p50: Some(10.0),
            max: Some(12.0),
            ..Rollup::default()
        },
        ..EndpointSummary::default()
    };
    let mut doc = fixture::summary();
    doc.endpoints = vec![ep("http://a", 5, 0)];
    let (text, _) = rendered(&doc);
    assert!(!text.contains("llmload_endpoint_"), "{text}");
    // A URL listed twice stays two series.
    doc.endpoints = vec![
        ep("http://a", 5, 0),
        ep("http://b", 0, 3),
        ep("http://a", 1, 0),
    ];
    let (text, s) = rendered(&doc);
    let req = |e, o| {
        find(
            &s,
            "llmload_endpoint_requests_total",
            &[("endpoint", e), ("outcome", o)],
        )
    };
    assert_eq!(req("http://a", "completed"), Some(5.0), "{text}");
    assert_eq!(req("http://a#3", "completed"), Some(1.0), "{text}");
    assert_eq!(req("http://b", "failed"), Some(3.0), "{text}");
    let refused = [("endpoint", "http://b"), ("error", "connect_refused")];
    assert_eq!(
        find(&s, "llmload_endpoint_errors_total", &refused),
        Some(3.0)
    );
    let p50 = [("endpoint", "http://a"), ("quantile", "0.5")];
    assert_eq!(find(&s, "llmload_endpoint_ttft_seconds", &p50), Some(0.01));
    let count = [("endpoint", "http://a")];
    assert_eq!(
        find(&s, "llmload_endpoint_ttft_seconds_count", &count),
        Some(5.0)
    );
}

#[test]
fn colliding_names_stay_distinct_series() {
    let mut doc = fixture::summary();
    doc.stages[0].name = "all".into();
    doc.stages[1].name = "all".into();
    doc.stages[1].scenarios[0].name = "all".into();
    let p99 = |pass| Threshold {
        name: "p99_ms".into(),
        pass,
        ..Threshold::default()
    };
    doc.stages[1].thresholds = vec![p99(true), p99(false)];
    let (text, s) = rendered(&doc);
    assert!(text.contains("stage=\"all#1\""), "{text}");
    assert!(
        text.contains("stage=\"all#2\",scenario=\"all#1\""),
        "{text}"
    );
    // The first of two thresholds of one name is kept.
    let passed = [("stage", "all#2"), ("threshold", "p99_ms")];
    assert_eq!(find(&s, "llmload_threshold_passed", &passed), Some(1.0));
}

#[test]
fn a_bare_document_renders_valid_text() {
    let doc = fixture::read(json!({"tool": "llmload", "stages": [{"name": "main"}]}));
    let (text, s) = rendered(&doc);
    let main = [("stage", "main"), ("scenario", "all")];
    assert_eq!(find(&s, "llmload_requests_per_second", &main), Some(0.0));
    // Nothing issued: no error ratio, and empty histograms count zero.
    assert_eq!(find(&s, "llmload_error_ratio", &main), None);
    assert_eq!(
        find(&s, "llmload_e2e_latency_seconds_count", &main),
        Some(0.0)
    );
    assert!(!text.contains("quantile"), "{text}");
}

#[test]
fn the_checker_rejects_what_it_should() {
    let ok = "# HELP a x\n# TYPE a gauge\na{b=\"1\"} 2\n";
    assert!(parse(ok).is_ok());
    for bad in [
        "a 1\n",
        "# HELP a x\n# TYPE a gauge\na{b=\"1\"} 2\na{b=\"1\"} 3\n",
        "# HELP a x\n# TYPE a gauge\n# HELP c x\n# TYPE c gauge\nc 1\na 2\n",
        "# HELP 1a x\n# TYPE 1a gauge\n1a 2\n",
        "# HELP a x\n# TYPE a gauge\na{b=\"x\\q\"} 2\n",
        "# HELP a x\n# TYPE a gauge\na 2",
        "# HELP a x\n# TYPE a summary\na_sum{quantile=\"0.5\"} 2\n",
    ] {
        assert!(parse(bad).is_err(), "accepted {bad:?}");
    }
}

#[test]
fn float_spelling() {
    assert_eq!(float(0.1234 * 1e-3), "0.0001234");
    assert_eq!(float(281.664419 * 1e-3), "0.281664419");
    assert_eq!(float(2.0), "2");
    assert_eq!(float(f64::NAN), "NaN");
}
