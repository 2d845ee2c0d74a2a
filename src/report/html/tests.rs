//! The page from a hand-built summary with every block (three stages, two
//! scenarios, a timeline, distributions, goodput, definitions, server
//! metrics, thresholds, accuracy, generator limits) and from an old one
//! with none; `LLMLOAD_HTML_OUT=DIR` also writes both pages there to look
//! at.

use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::report::fixture;
use crate::report::summary::definitions::{DefinitionRow, Definitions};
use crate::report::summary::distributions::Distributions;
use crate::report::summary::goodput::Goodput;
use crate::report::summary::server::{ServerMetricsSummary, ServerSeries};
use crate::report::summary::timeline::{Timeline, TimelinePoint, TimelineSeries};
use crate::report::summary::{Numbers, Stage, Threshold};
use crate::sys::info::HostInfo;

const MODEL: &str = "<script>alert('m')</script> & \"model\"";

fn cdf(base: f64) -> Vec<[f64; 2]> {
    (1..=40)
        .map(|i| [base * 1.12f64.powi(i), i as f64 / 40.0])
        .collect()
}

fn bins(width: f64) -> Vec<[f64; 3]> {
    (0..12)
        .map(|i| {
            let lo = i as f64 * width;
            [lo, lo + width, (20 - (i as i64 - 5).abs() * 3) as f64]
        })
        .collect()
}

fn dists(base: f64) -> Distributions {
    Distributions {
        ttft_ms: cdf(base),
        tpot_ms: cdf(base * 0.1),
        itl_ms: cdf(base * 0.08),
        e2e_ms: cdf(base * 10.0),
        isl: bins(16.0),
        osl: bins(32.0),
    }
}

fn goodput(x: &Numbers) -> Goodput {
    Goodput {
        ttft_ms: Some(200.0),
        tpot_ms: Some(40.0),
        e2e_ms: None,
        good: x.requests.completed * 9 / 10,
        attainment_pct: Some(90.0),
        requests_per_s: x.throughput.requests_per_s * 0.9,
        output_tokens_per_s: x.throughput.output_tokens_per_s * 0.9,
        missed_ttft: 3,
        missed_tpot: 1,
        missed_e2e: 0,
    }
}

/// `secs` seconds per stage after two of warm-up, for the whole run and
/// each scenario; errors in the second stage.
fn timeline(stages: &[&str], scenarios: &[&str], secs: usize) -> Timeline {
    let labels: Vec<&str> = std::iter::repeat_n("warmup", 2)
        .chain(stages.iter().flat_map(|s| std::iter::repeat_n(*s, secs)))
        .collect();
    let series = |scenario: Option<&str>, share: f64| TimelineSeries {
        scenario: scenario.map(str::to_string),
        points: labels
            .iter()
            .enumerate()
            .map(|(i, stage)| {
                let level = 1.0 + stages.iter().position(|s| s == stage).unwrap_or(0) as f64;
                let wave = (i as f64 / 7.0).sin();
                let completed = ((10.0 * level + 3.0 * wave) * share) as u64;
                let mut errors = BTreeMap::new();
                if *stage == "high" && i % 3 == 0 {
                    errors.insert("http_503".to_string(), 2);
                    errors.insert("reset".to_string(), 1);
                }
                TimelinePoint {
                    t_s: i as f64,
                    stage: stage.to_string(),
                    completed,
                    failed: errors.values().sum(),
                    errors,
                    output_tokens: completed * 128,
                    input_tokens: completed * 20,
                    good: Some(completed * 9 / 10),
                    in_flight: if scenario.is_none() {
                        4 * level as u64
                    } else {
                        0
                    },
                    requests_per_s: completed as f64,
                    output_tokens_per_s: (completed * 128) as f64,
                    ttft_p50_ms: (completed > 0).then_some(20.0 * level + wave),
                    ttft_p99_ms: (completed > 0).then_some(45.0 * level + 4.0 * wave),
                    e2e_p50_ms: (completed > 0).then_some(300.0 * level + 20.0 * wave),
                    e2e_p99_ms: (i % 11 != 5).then_some(700.0 * level + 60.0 * wave),
                }
            })
            .collect(),
    };
    let mut all = vec![series(None, 1.0)];
    for sc in scenarios {
        all.push(series(Some(sc), 0.5));
    }
    Timeline {
        interval_s: 1.0,
        series: all,
        ..Timeline::default()
    }
}

fn server(end: usize) -> ServerMetricsSummary {
    let pts = |f: &dyn Fn(f64) -> f64| (0..end).map(|i| [i as f64, f(i as f64)]).collect();
    let series = |key: &str, name: &str, kind: &str, points: Vec<[f64; 2]>| ServerSeries {
        name: name.into(),
        key: key.into(),
        kind: kind.into(),
        mean: Some(points.iter().map(|p| p[1]).sum::<f64>() / points.len() as f64),
        max: points.iter().map(|p| p[1]).reduce(f64::max),
        points,
    };
    ServerMetricsSummary {
        url: "http://127.0.0.1:8000/metrics".into(),
        server: "vllm".into(),
        interval_s: 1.0,
        scrapes: end as u64,
        failures: 1,
        error: Some("timed out <after 1 s>".into()),
        series: vec![
            series(
                "running",
                "vllm:num_requests_running",
                "gauge",
                pts(&|t| 4.0 + (t / 10.0).floor()),
            ),
            series(
                "kv_cache_usage",
                "vllm:gpu_cache_usage_perc",
                "gauge",
                pts(&|t| (t / end as f64).min(1.0)),
            ),
            series(
                "generation_tokens",
                "vllm:generation_tokens_total",
                "counter",
                pts(&|t| 1000.0 + 50.0 * (t / 5.0).sin()),
            ),
        ],
    }
}

/// The sample run: three stages × two scenarios, every block present.
fn sample() -> Summary {
    let mut s = fixture::summary();
    let mut peak = s.stages[1].clone();
    peak.name = "peak".into();
    peak.numbers.throughput.requests_per_s = 24.0;
    peak.numbers.latency_ms.e2e.p99 = Some(90.0);
    peak.thresholds = vec![Threshold {
        name: "p99_ms".into(),
        limit: 100.0,
        value: Some(90.0),
        pass: true,
    }];
    s.stages.push(peak);
    let put = |x: &mut Numbers, base: f64| {
        x.distributions = Some(dists(base));
        x.goodput = Some(goodput(x));
    };
    put(&mut s.run, 2.0);
    for (i, st) in s.stages.iter_mut().enumerate() {
        put(&mut st.numbers, 1.0 + i as f64);
        for (j, sc) in st.scenarios.iter_mut().enumerate() {
            put(&mut sc.numbers, 1.0 + i as f64 + j as f64 * 0.5);
        }
    }
    let names: Vec<&str> = s.stages.iter().map(|st| st.name.as_str()).collect();
    s.timeline = Some(timeline(&names, &["chat", "summarize"], 20));
    s.server_metrics = Some(server(62));
    s.definitions = Some(Definitions {
        preset: "llmload".into(),
        tools: ["llmload", "vllm", "guidellm", "aiperf", "mlperf"]
            .map(String::from)
            .to_vec(),
        rows: vec![
            DefinitionRow {
                metric: "ttft_mean_ms".into(),
                label: "TTFT mean (ms)".into(),
                values: vec![Some(21.5), Some(21.5), Some(23.25), Some(21.5), None],
                how: ["first token − send, successes"; 5]
                    .map(String::from)
                    .to_vec(),
            },
            DefinitionRow {
                metric: "tpot_mean_ms".into(),
                label: "TPOT mean (ms)".into(),
                values: vec![Some(4.0), Some(4.0), Some(3.9), Some(4.1), Some(4.2)],
                how: ["request-weighted"; 5].map(String::from).to_vec(),
            },
        ],
    });
    s.accuracy = Some(json!({
        "phase": "both", "average_accuracy": 0.8125, "complete": true,
        "datasets": [
            {"name": "gsm8k <math>", "scorer": "string_match", "extractor": "boxed_math",
             "score": 0.875, "issued": 8, "scored": 8, "correct": 7, "failed": 0,
             "truncated": 0, "missing": 0, "duration_s": 3.5, "complete": true},
            {"name": "cnn", "scorer": "rouge", "extractor": "identity", "score": 0.75,
             "rouge": {"rouge1": 0.42, "rouge2": 0.2, "rougeL": 0.3, "rougeLsum": 0.35},
             "issued": 4, "scored": 4, "failed": 0, "truncated": 1, "missing": 0,
             "duration_s": 2.0, "complete": false}
        ]
    }));
    s.generator.limited_by_generator = true;
    s.generator.limits = vec!["7 request(s) found their worker's issue ring full <oops>".into()];
    s.generator.workers = 2;
    s.info = Some(HostInfo {
        tool: "llmload".into(),
        version: "0.1.0".into(),
        os: Some("Debian GNU/Linux 13".into()),
        cpus_online: Some(2),
        ..HostInfo::default()
    });
    s.config["model"] = json!(MODEL);
    s.target = format!("http://127.0.0.1:8000/v1/chat/completions (openai-chat, model {MODEL})");
    s.started_at = "2026-12-02T04:00:00Z".into();
    s.complete = false;
    s.interrupted = true;
    s.incomplete_reasons = vec!["interrupted by a signal".into()];
    s.aborted_on_threshold = None;
    s
}

/// Checks every element opens and closes in order (void elements and
/// `/>` aside; script and style bodies skipped); returns the tag count.
fn balanced(html: &str) -> usize {
    const VOID: [&str; 6] = ["meta", "br", "input", "link", "img", "hr"];
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    let mut tags = 0;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        if rest.starts_with('!') {
            rest = &rest[rest.find('>').expect("unclosed <!") + 1..];
            continue;
        }
        let end = rest.find('>').expect("unclosed tag");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        tags += 1;
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack
                .pop()
                .unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(open, name, "</{name}> closes <{open}>");
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(!name.is_empty(), "a bare < in text: <{tag}>");
        if tag.ends_with('/') || VOID.contains(&name.as_str()) {
            continue;
        }
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            rest = &rest[rest.find(&close).expect("unclosed script/style") + close.len()..];
            continue;
        }
        stack.push(name);
    }
    assert!(stack.is_empty(), "left open: {stack:?}");
    tags
}

/// The attribute values of `attr` in `html`, in order.
fn values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let needle = format!(" {attr}=\"");
    html.match_indices(&needle)
        .map(|(i, _)| {
            let v = &html[i + needle.len()..];
            &v[..v.find('"').unwrap()]
        })
        .collect()
}

fn write_if_asked(name: &str, page: &str) {
    if let Ok(dir) = std::env::var("LLMLOAD_HTML_OUT") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(std::path::Path::new(&dir).join(name), page).unwrap();
    }
}

#[test]
fn the_sample_has_every_section_and_plot() {
    let s = sample();
    let page = render(&s);
    write_if_asked("report.html", &page);
    balanced(&page);
    assert!(page.starts_with("<!doctype html>\n<html lang=\"en\" data-llmload-report=\"run\">"));
    assert!(
        page.contains("document.documentElement.dataset.ready='1'")
            || page.contains("root.dataset.ready='1'")
    );
    assert!(page.contains("dataset.jsError"));
    let ids = values(&page, "id");
    for id in [
        "identity",
        "status",
        "headline",
        "config",
        "definitions",
        "goodput",
        "server-metrics",
        "generator",
        "thresholds",
        "accuracy",
        "headline-table",
    ] {
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "id {id}");
    }
    let plots = values(&page, "data-plot");
    for kind in [
        "throughput",
        "latency",
        "inflight",
        "errors",
        "cdf-ttft",
        "cdf-tpot",
        "cdf-itl",
        "cdf-e2e",
        "hist-isl",
        "hist-osl",
        "stages",
        "server-running",
        "server-kv_cache_usage",
        "server-generation_tokens",
    ] {
        assert!(plots.contains(&kind), "plot {kind}: {plots:?}");
    }
    // Three stages, each as "all" and per scenario; in-flight only for "all".
    let slices: Vec<(&str, &str)> = values(&page, "data-stage")
        .into_iter()
        .zip(values(&page, "data-scenario"))
        .collect();
    assert!(slices.contains(&("peak", "summarize")), "{slices:?}");
    assert_eq!(page.matches("<section class=\"slice\"").count(), 9);
    assert_eq!(plots.iter().filter(|k| **k == "throughput").count(), 9);
    assert_eq!(plots.iter().filter(|k| **k == "inflight").count(), 3);
    // Every plot has drawn series, each named.
    for svg in page.split("<svg class=\"plot\"").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(svg.contains("<title>"), "{svg}");
        assert!(svg.contains("data-series=\""), "{svg}");
    }
    // Stage bands: the warm-up shaded in the first stage's charts.
    assert!(page.contains(">warmup</text>"));
    // The headline cells carry the summary's own digits.
    let r = &s.run;
    for (key, raw) in [
        ("requests_completed", r.requests.completed.to_string()),
        ("requests_failed", r.requests.failed.to_string()),
        ("requests_per_s", r.throughput.requests_per_s.to_string()),
        (
            "output_tokens_per_s",
            r.throughput.output_tokens_per_s.to_string(),
        ),
        ("ttft_p50_ms", r.latency_ms.ttft.p50.unwrap().to_string()),
        ("ttft_p99_ms", r.latency_ms.ttft.p99.unwrap().to_string()),
        ("e2e_p50_ms", r.latency_ms.e2e.p50.unwrap().to_string()),
        ("e2e_p99_ms", r.latency_ms.e2e.p99.unwrap().to_string()),
    ] {
        let cell = format!("data-key=\"{key}\" data-value=\"{raw}\"");
        assert_eq!(page.matches(&cell).count(), 1, "{cell}");
    }
    assert!(page.contains("data-key=\"requests_per_s\" data-value=\"28\">28</td>"));
    // The run's percentile table first: TTFT p50 and e2e p99.9.
    let table = &page[page.find("<table class=\"percentiles\"").unwrap()..];
    let ttft = &table[table.find("<tr data-metric=\"ttft\">").unwrap()..];
    assert!(
        ttft.contains("data-q=\"p50\" data-value=\"1.5\">1.500</td>"),
        "{ttft:.400}"
    );
    let e2e = &table[table.find("<tr data-metric=\"e2e\">").unwrap()..];
    assert!(e2e.contains("data-q=\"p999\" data-value=\"45\">45</td>"));
    // Status: interrupted and thresholds failed, prominently.
    assert!(page.contains("<strong>INTERRUPTED</strong>"));
    assert!(page.contains("<strong>Thresholds FAILED</strong>"));
    assert!(page.contains("<td class=\"fail\">FAIL</td>"));
    assert!(page.contains("data-status=\"generator-limited\""));
    // Definitions: the preset marked; accuracy: a score per dataset.
    assert!(page.contains("data-tool=\"llmload\">llmload ★</th>"));
    assert!(page.contains("data-value=\"0.875\">87.50 %</td>"));
    assert!(page.contains("data-series=\"good requests/s\""));
}

#[test]
fn an_old_summary_renders_without_the_new_sections() {
    let mut s = Summary::default();
    s.stages.push(Stage {
        name: "main".into(),
        ..Stage::default()
    });
    for (s, stages) in [(s, 1), (fixture::summary(), 2)] {
        let page = render(&s);
        balanced(&page);
        let ids = values(&page, "id");
        for id in ["identity", "status", "headline", "config", "generator"] {
            assert!(ids.contains(&id), "{id}");
        }
        for id in ["definitions", "goodput", "server-metrics", "accuracy"] {
            assert!(!ids.contains(&id), "{id}");
        }
        // The curve across stages only when there are several.
        assert_eq!(ids.contains(&"stages"), stages > 1);
        assert!(page.contains("No timeline for this slice"));
        assert!(!page.contains("data-plot=\"cdf-"));
    }
    // An empty run: absent latencies have no data-value.
    let page = render(&Summary::default());
    assert!(page.contains("<td class=\"num big\" data-key=\"ttft_p50_ms\">–</td>"));
    assert!(page.contains("data-key=\"requests_per_s\" data-value=\"0\""));
}

#[test]
fn strings_from_the_summary_are_escaped() {
    let page = render(&sample());
    // Our two scripts only; the model's arrives as text.
    assert_eq!(page.matches("<script").count(), 2);
    assert!(
        page.contains("&lt;script&gt;alert(&#39;m&#39;)&lt;/script&gt; &amp; &quot;model&quot;")
    );
    assert!(page.contains("gsm8k &lt;math&gt;"));
    assert!(page.contains("timed out &lt;after 1 s&gt;"));
    assert!(!page.contains("<oops>"));
    assert_eq!(esc("a\u{1b}[31m<b>\n"), "a[31m&lt;b&gt;\n");
}

#[test]
fn generator_health_names_the_io_backend_and_why() {
    let mut s = sample();
    assert!(!render(&s).contains("I/O backend"));
    s.generator.io = Some(crate::plan::IoChosen {
        backend: crate::plan::IoBackend::Uring,
        requested: crate::plan::IoChoice::Auto,
        reason: "auto: <probed>".into(),
        sqpoll: true,
    });
    let page = render(&s);
    assert!(
        page.contains("<th>I/O backend</th><td>uring with SQPOLL (auto: &lt;probed&gt;)</td>"),
        "{page}"
    );
    let text = crate::report::text::render(&s);
    assert!(
        text.contains("  io uring with SQPOLL (auto: <probed>)\n"),
        "{text}"
    );
}

#[test]
fn an_hour_long_run_stays_under_two_megabytes() {
    let mut s = fixture::summary();
    s.stages.truncate(1);
    s.stages[0].name = "main".into();
    let names = ["main"];
    s.timeline = Some(timeline(&names, &["chat", "summarize"], 3600));
    s.stages[0].numbers.distributions = Some(dists(1.0));
    s.server_metrics = Some(server(3602));
    let page = render(&s);
    write_if_asked("hour.html", &page);
    balanced(&page);
    assert!(page.len() < 2_000_000, "{} bytes", page.len());
    // Thinned to pixel columns, not dropped: every chart still spans the hour.
    assert!(page.contains(">1:00:00</text>") || page.contains(">1:00:02</text>"));
    assert!(page.contains("data-plot=\"server-running\""));
}

#[test]
fn compare_draws_two_runs_over_each_other() {
    let old = sample();
    let mut new = sample();
    new.run.throughput.requests_per_s = 35.0;
    new.stages.remove(0);
    let page = render_compare(&old, &new, "base <1>", "head");
    write_if_asked("compare.html", &page);
    balanced(&page);
    assert!(
        page.starts_with("<!doctype html>\n<html lang=\"en\" data-llmload-report=\"compare\">")
    );
    let plots = values(&page, "data-plot");
    for kind in [
        "compare-throughput",
        "compare-latency",
        "compare-cdf-ttft",
        "compare-cdf-e2e",
    ] {
        assert!(plots.contains(&kind), "{kind}");
        let svg = &page[page.find(&format!("data-plot=\"{kind}\"")).unwrap()..];
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(svg.contains("data-series=\"old\"") && svg.contains("data-series=\"new\""));
    }
    assert!(
        page.contains(
            "<table id=\"compere-table\">"
                .replace("compere", "compare")
                .as_str()
        )
    );
    assert!(page.contains("old: base &lt;1&gt;"));
    // Whole run: 28 → 35 req/s is +25 %.
    let row = &page[page
        .find("data-slice=\"whole run\" data-metric=\"requests_per_s\"")
        .unwrap()..];
    assert!(
        row.contains("data-side=\"delta\" data-value=\"25\">+25 %</td>"),
        "{row:.300}"
    );
    // "low" is in old only: listed, not paired.
    assert!(page.contains("low (old only)"));
    assert!(!page.contains("data-slice=\"low\""));
    assert!(page.contains("data-slice=\"high\""));
}

#[test]
fn a_second_shared_by_two_stages_is_one_value_in_the_whole_run() {
    let point = |t_s: f64, stage: &str, completed: u64, p50: f64| TimelinePoint {
        t_s,
        stage: stage.into(),
        completed,
        requests_per_s: completed as f64,
        e2e_p50_ms: Some(p50),
        ..TimelinePoint::default()
    };
    let points = [
        point(0.0, "a", 10, 5.0),
        point(1.0, "a", 2, 9.0),
        point(1.0, "b", 7, 6.0),
        point(2.0, "b", 8, 6.5),
    ];
    let rates: Vec<_> =
        super::compare::per_second(&points, |p| Some(p.requests_per_s), true).collect();
    assert_eq!(rates, [(0.0, 10.0), (1.0, 9.0), (2.0, 8.0)]);
    let p50: Vec<_> = super::compare::per_second(&points, |p| p.e2e_p50_ms, false).collect();
    assert_eq!(p50, [(0.0, 5.0), (1.0, 6.0), (2.0, 6.5)]);
}
