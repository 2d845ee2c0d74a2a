//! `llmload compare` on real runs: a slower endpoint is a regression that
//! names TTFT, a run compared with itself is not, and bad files exit 2
//! naming the file. Also holds a real run's report.csv and metrics.prom to
//! their formats and to the summary's numbers.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use crate::util::*;

fn compare(args: &[&str]) -> Output {
    std::process::Command::new(bin())
        .arg("compare")
        .args(args)
        .output()
        .expect("run llmload compare")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn summary_path(run: &Run) -> String {
    run.out.join("summary.json").display().to_string()
}

const LOAD: [&str; 6] = [
    "--concurrency",
    "4",
    "--requests",
    "20",
    "--max-tokens",
    "4",
];

#[test]
fn slower_ttft_is_a_regression_and_a_run_matches_itself() {
    let fast = Server::start(&[]);
    let slow = Server::start(&["--ttft", "200ms"]);
    let before = bench_at(&fast, &LOAD, Duration::from_secs(60));
    let after = bench_at(&slow, &LOAD, Duration::from_secs(60));
    before.assert_success();
    after.assert_success();
    let (old, new) = (summary_path(&before), summary_path(&after));

    let out = compare(&[&old, &new]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let verdict = stdout
        .split("REGRESSION:")
        .nth(1)
        .unwrap_or_else(|| panic!("no verdict in\n{stdout}"));
    assert!(verdict.contains("ttft p50 ms"), "{stdout}");
    assert!(verdict.contains("run: "), "{stdout}");
    assert!(stdout.contains("== stage main =="), "{stdout}");

    // The same verdict as JSON, from the run directories.
    let out = compare(&[
        "--json",
        before.out.to_str().unwrap(),
        after.out.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["regression"], true);
    let run = &doc["matches"][0];
    assert!(run["stage"].is_null());
    for key in ["ttft_p50_ms", "ttft_p99_ms", "e2e_p50_ms"] {
        assert_eq!(run["metrics"][key]["regression"], true, "{key}: {run}");
    }
    assert!(f(&run["metrics"]["ttft_p50_ms"]["new"]) >= 200.0, "{run}");
    assert_eq!(run["metrics"]["error_rate"]["regression"], false);

    // Faster is not a regression; neither is a run against itself.
    let out = compare(&[&new, &old]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = compare(&["--regress-pct", "0", &old, &old]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("no regression"));
}

#[test]
fn unreadable_or_foreign_files_exit_2_naming_the_file() {
    let dir = temp_dir("compare-bad");
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        r#"{"tool": "llmload", "stages": [{"name": "main"}]}"#,
    )
    .unwrap();
    let missing = dir.join("nope/summary.json");
    let not_json = dir.join("report.txt");
    std::fs::write(&not_json, "latency (ms)\n").unwrap();
    let foreign = dir.join("other.json");
    std::fs::write(&foreign, r#"{"tool": "oha", "stages": []}"#).unwrap();
    let no_stages = dir.join("empty.json");
    std::fs::write(&no_stages, r#"{"tool": "llmload", "stages": []}"#).unwrap();

    let p = |p: &Path| p.display().to_string();
    for (args, named) in [
        ([p(&missing), p(&good)], p(&missing)),
        ([p(&good), p(&missing)], p(&missing)),
        ([p(&good), p(&not_json)], p(&not_json)),
        ([p(&foreign), p(&good)], p(&foreign)),
        ([p(&good), p(&no_stages)], p(&no_stages)),
    ] {
        let out = compare(&[&args[0], &args[1]]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&named), "{args:?}: {stderr}");
    }
    let out = compare(&["--regress-pct", "-5", &p(&good), &p(&good)]);
    assert_eq!(out.status.code(), Some(2));
    // A minimal summary with no numbers compares without a regression.
    assert_eq!(compare(&[&p(&good), &p(&good)]).status.code(), Some(0));
}

#[test]
fn csv_and_prometheus_files_of_a_real_run() {
    let server = Server::start(&["--error-rate", "0.2", "--ttft", "1ms"]);
    let run = bench_at(&server, &LOAD, Duration::from_secs(60));
    run.assert_success();
    let s = run.summary();
    let failed = u(&s["requests"]["failed"]);
    assert!(failed > 0, "{}", s["requests"]);

    let csv_text = read(&run.out.join("report.csv"));
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<Vec<String>> = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    // The stage, its one scenario, the run, the run's one scenario.
    assert_eq!(rows.len(), 4, "{csv_text}");
    assert_eq!((&*rows[0][0], &*rows[0][1]), ("main", "*"));
    assert_eq!((&*rows[1][0], &*rows[1][1]), ("main", "default"));
    assert_eq!((&*rows[2][0], &*rows[2][1]), ("*", "*"));
    assert_eq!(rows[2][col("failed")], failed.to_string());
    assert_eq!(rows[2][col("errors_http_503")], failed.to_string());
    assert_eq!(rows[1][col("failed")], failed.to_string());
    assert_eq!(rows[0][col("concurrency")], "4");
    let p99: f64 = rows[2][col("ttft_p99_ms")].parse().unwrap();
    assert_eq!(p99, f(&s["latency_ms"]["ttft"]["p99"]));

    let prom = read(&run.out.join("metrics.prom"));
    let samples = crate::prom_check::parse(&prom).unwrap_or_else(|e| panic!("{e}\n{prom}"));
    let get = |name: &str, labels: &[(&str, &str)]| -> f64 {
        samples
            .iter()
            .find(|(n, l, _)| {
                n == name
                    && l.len() == labels.len()
                    && labels
                        .iter()
                        .all(|(k, v)| l.iter().any(|(a, b)| a == k && b == v))
            })
            .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{prom}"))
            .2
    };
    let all = [("stage", "all"), ("scenario", "all")];
    let with = |k, v| [("stage", "all"), ("scenario", "all"), (k, v)];
    assert_eq!(
        get("llmload_requests_total", &with("outcome", "failed")),
        failed as f64
    );
    assert_eq!(
        get("llmload_errors_total", &with("class", "http_503")),
        failed as f64
    );
    let ttft = get("llmload_ttft_seconds", &with("quantile", "0.99"));
    assert!((ttft - p99 / 1e3).abs() < 1e-12, "{ttft} vs {p99} ms");
    assert_eq!(
        get("llmload_ttft_seconds_count", &all),
        f(&s["latency_ms"]["ttft"]["count"])
    );
    assert_eq!(get("llmload_run_complete", &[]), 1.0);
    assert_eq!(
        get(
            "llmload_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("api", "openai-chat"),
                ("model", "m")
            ]
        ),
        1.0
    );
}
