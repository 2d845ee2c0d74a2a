//! The report files: summary.json validates against the committed schema,
//! report.txt carries the numbers, and secrets appear nowhere.

use std::time::Duration;

use crate::util::*;

fn schema() -> serde_json::Value {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/summary.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

pub(crate) fn assert_valid(summary: &serde_json::Value) {
    let validator = jsonschema::validator_for(&schema()).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(summary)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "summary.json violates the schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn summary_validates_against_the_schema() {
    let server = Server::start(&["--ttft", "2ms", "--tpot", "1ms", "--error-rate", "0.1"]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "4",
            "--requests",
            "50",
            "--max-tokens",
            "8",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_valid(&s);
    // A run where everything failed must validate too (empty histograms).
    let dead = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--requests",
            "3",
        ],
        Duration::from_secs(30),
    );
    assert_valid(&dead.summary());
}

#[test]
fn report_txt_matches_the_summary() {
    let server = Server::start(&["--ttft", "2ms"]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "2",
            "--requests",
            "30",
            "--max-tokens",
            "5",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let text = read(&run.out.join("report.txt"));
    assert!(text.contains("issued 30  completed 30  failed 0"), "{text}");
    assert!(text.contains("output 150 (from usage)"), "{text}");
    for row in ["e2e", "service", "ttft", "tpot", "itl", "send lateness"] {
        assert!(text.contains(row), "no {row} in\n{text}");
    }
}

#[test]
fn api_key_never_appears_in_outputs() {
    let server = Server::start(&[]);
    let url = server.url();
    let secret = "sk-llmload-test-SECRET-4242";
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--api-key",
            secret,
            "--header",
            "X-Api-Key: hdr-SECRET-99",
            "--header",
            "X-Team: blue",
            "--requests",
            "5",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let mut all = run.stdout.clone() + &run.stderr;
    for f in std::fs::read_dir(&run.out).unwrap() {
        all += &read(&f.unwrap().path());
    }
    assert!(!all.contains("SECRET"), "a secret leaked:\n{all}");
    let s = run.summary();
    assert_eq!(s["config"]["api_key"], "<redacted>");
    assert_eq!(s["config"]["headers"]["X-Team"], "blue");
}

#[test]
fn printed_report_and_default_out_dir() {
    let server = Server::start(&[]);
    let dir = temp_dir("cwd");
    let out = std::process::Command::new(bin())
        .args([
            "bench",
            "--endpoint",
            &server.url(),
            "--model",
            "m",
            "--requests",
            "5",
            "--concurrency",
            "1",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("latency (ms)"), "{stdout}");
    let results: Vec<_> = std::fs::read_dir(dir.join("results")).unwrap().collect();
    assert_eq!(results.len(), 1);
    let run_dir = results[0].as_ref().unwrap().path();
    assert!(run_dir.join("summary.json").exists());
    assert!(run_dir.join("report.txt").exists());
}
