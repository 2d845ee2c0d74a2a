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

/// Every kind of secret a run can be given, in every place one can hide:
/// stdout (the report printed, not --quiet), stderr, and every file written.
#[test]
fn api_key_never_appears_in_outputs() {
    let server = Server::start(&[]);
    // A key in the URL's query, Gemini style; the server ignores queries.
    let url = format!(
        "{}/v1/chat/completions?key=QRY-SECRET-1&api-version=2024-10-01",
        server.url()
    );
    let secret = "sk-llmload-test-SECRET-4242";
    let headers = [
        "X-Api-Key: hdr-SECRET-99",
        "X-Goog-Api-Key: goog-SECRET-1",
        "Ocp-Apim-Subscription-Key: apim-SECRET-2",
        "apikey: plain-SECRET-3",
        "X-Auth-Key: auth-SECRET-4",
        "Proxy-Authorization: Basic proxy-SECRET-5",
        "Set-Cookie: session=cookie-SECRET-6",
        "X-Amz-Signature: sig-SECRET-7",
    ];
    let out = temp_dir("secrets");
    let mut cmd = std::process::Command::new(bin());
    cmd.args([
        "bench",
        "--endpoint",
        &url,
        "--model",
        "m",
        "--api-key",
        secret,
    ]);
    for h in headers {
        cmd.args(["--header", h]);
    }
    cmd.args(["--header", "X-Team: blue"])
        .args(["--requests", "5", "--concurrency", "1", "--record-output"])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let run = wait_run(cmd.spawn().unwrap(), out, Duration::from_secs(30));
    run.assert_success();
    assert!(run.stdout.contains("latency (ms)"), "the report is printed");
    let mut all = run.stdout.clone() + &run.stderr;
    let mut files = 0;
    for f in std::fs::read_dir(&run.out).unwrap() {
        all += &read(&f.unwrap().path());
        files += 1;
    }
    assert!(files >= 4, "summary, report, csv, prom, events: {files}");
    assert!(!all.contains("SECRET"), "a secret leaked:\n{all}");
    // The URL is echoed with its query values masked, names kept.
    let shown = "?key=<redacted>&api-version=<redacted>";
    assert!(run.stderr.contains(shown), "{}", run.stderr);
    assert!(run.stdout.contains(shown), "{}", run.stdout);
    assert!(!run.stderr.contains("clear text"), "loopback: no warning");
    let s = run.summary();
    assert!(s["config"]["endpoint"].as_str().unwrap().ends_with(shown));
    assert!(s["target"].as_str().unwrap().contains(shown));
    assert_eq!(s["config"]["api_key"], "<redacted>");
    assert_eq!(s["config"]["headers"]["X-Team"], "blue");
    for h in headers {
        let name = h.split_once(':').unwrap().0;
        assert_eq!(s["config"]["headers"][name], "<redacted>", "{name}");
    }
    // The real URL was used: every request succeeded.
    assert_eq!(s["requests"]["completed"], 5);
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
