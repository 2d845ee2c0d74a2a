//! Accuracy runs against `llmload serve --answers` and `--echo`: scores
//! are exact fractions of the rows issued, failures count as wrong, each
//! extractor works inside a run, `--phase both` writes the files a
//! submission needs, and MLPerf's command line and YAML run the same.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(40);

fn json(p: &Path) -> Value {
    serde_json::from_str(&read(p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// Ten questions `q0`…`q9` with answers `a0`…`a9`, and an answers file
/// for `serve` replying right to the first six and wrong to the rest.
fn qa(dir: &Path) -> (String, String) {
    let rows: String = (0..10)
        .map(|i| format!("{{\"question\": \"q{i}\", \"answer\": \"a{i}\"}}\n"))
        .collect();
    let replies: String = (0..10)
        .map(|i| {
            let reply = if i < 6 {
                format!(" a{i}\n")
            } else {
                format!("b{i}")
            };
            serde_json::json!({"prompt": format!("q{i}"), "reply": reply}).to_string() + "\n"
        })
        .collect();
    (
        write(dir, "qa.jsonl", &rows),
        write(dir, "answers.jsonl", &replies),
    )
}

/// The accuracy phase's lines of `events.jsonl`.
fn accuracy_lines(out: &Path) -> Vec<Value> {
    read(&out.join("events.jsonl"))
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["phase"] == "accuracy")
        .collect()
}

#[test]
fn six_right_answers_of_ten_score_exactly_point_six() {
    let dir = temp_dir("acc-six");
    let (data, answers) = qa(&dir);
    let server = Server::start(&["--answers", &answers, "--ttft", "1ms", "--tpot", "1ms"]);
    let spec = format!("{data},expected=answer,scorer=string_match");
    let run = bench_at(
        &server,
        &["--phase", "acc", "--accuracy-dataset", &spec],
        LIMIT,
    );
    run.assert_success();
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    let e = &results["accuracy_scores"][0];
    assert_eq!(e["score"], 0.6, "{results}");
    assert_eq!(results["average_accuracy"], 0.6);
    assert_eq!(e["dataset_name"], "qa");
    assert_eq!(e["extractor"], "IdentityExtractor");
    assert_eq!(e["ground_truth_column"], "answer");
    assert_eq!((u(&e["unit_samples"]), u(&e["total_samples"])), (10, 10));
    assert_eq!(e["complete"], true);
    assert_eq!(e["dataset_type"], "accuracy");
    let s = run.summary();
    let d = &s["accuracy"]["datasets"][0];
    assert_eq!(
        (u(&d["issued"]), u(&d["correct"]), u(&d["failed"])),
        (10, 6, 0)
    );
    // No performance phase ran.
    assert_eq!(u(&s["requests"]["issued"]), 0);
    assert!(!run.out.join("performance/result_summary.json").exists());
    // One line per row, in order, each with its reply and verdict.
    let lines = accuracy_lines(&run.out);
    assert_eq!(lines.len(), 10);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(u(&l["row"]), i as u64);
        assert_eq!(l["dataset"], "qa");
        assert_eq!(l["correct"], i < 6, "{l}");
        assert_eq!(l["extracted"], l["output"]);
    }
    let report = read(&run.out.join("report.txt"));
    assert!(report.contains("60.00 % (6 of 10 right)"), "{report}");
    assert!(report.contains("phase: accuracy only"), "{report}");
    let prom = read(&run.out.join("metrics.prom"));
    assert!(
        prom.contains("llmload_accuracy_score{dataset=\"qa\",scorer=\"string_match\"} 0.6"),
        "{prom}"
    );
    let csv = read(&run.out.join("report.csv"));
    assert!(csv.lines().any(|l| l.starts_with("accuracy,qa,")), "{csv}");
}

#[test]
fn failed_requests_score_as_wrong() {
    let dir = temp_dir("acc-fail");
    let (data, answers) = qa(&dir);
    let server = Server::start(&[
        "--answers",
        &answers,
        "--error-rate",
        "0.5",
        "--ttft",
        "1ms",
        "--tpot",
        "1ms",
    ]);
    let spec = format!("{data},expected=answer,repeats=3");
    let run = bench_at(
        &server,
        &["--phase", "acc", "--accuracy-dataset", &spec],
        LIMIT,
    );
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    let e = &results["accuracy_scores"][0];
    let lines = accuracy_lines(&run.out);
    assert_eq!(lines.len(), 30);
    let failed = lines.iter().filter(|l| !l["error"].is_null()).count();
    let right = lines.iter().filter(|l| l["correct"] == true).count();
    assert!(failed > 0 && failed < 30, "{failed} failed of 30");
    // A failed request is never right, and the denominator is every row
    // issued.
    assert!(
        lines
            .iter()
            .all(|l| l["error"].is_null() || l["correct"] == false)
    );
    assert_eq!(e["score"], right as f64 / 30.0, "{results}");
    assert_eq!(u(&e["num_repeats"]), 3);
    assert_eq!(u(&e["response_counts"]["empty"]), failed as u64);
    let d = &run.summary()["accuracy"]["datasets"][0];
    assert_eq!(u(&d["failed"]), failed as u64);
}

/// `serve --echo` answers each prompt with itself: a multiple-choice set
/// whose prompts are the letters, scored through the ABCD extractor.
#[test]
fn both_phases_write_both_result_files_and_extractors_run_inside() {
    let dir = temp_dir("acc-both");
    let rows: String = ["B", "Answer: C", "**D**", "none of them"]
        .iter()
        .zip(["choice2", "choice3", "choice4", "choice1"])
        .map(|(q, a)| serde_json::json!({"question": q, "gt": a}).to_string() + "\n")
        .collect();
    let mcq = write(&dir, "mcq.jsonl", &rows);
    let perf = write(&dir, "perf.jsonl", "{\"prompt\": \"hello there\"}\n");
    let server = Server::start(&["--echo", "--ttft", "1ms", "--tpot", "1ms"]);
    let spec = format!("{mcq},expected=gt,scorer=pass_at_1,extractor=abcd,repeats=2,name=gpqa");
    let run = bench_at(
        &server,
        &[
            "--phase",
            "both",
            "--dataset",
            &perf,
            "--requests",
            "12",
            "--concurrency",
            "3",
            "--accuracy-dataset",
            &spec,
        ],
        LIMIT,
    );
    run.assert_success();
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    let e = &results["accuracy_scores"][0];
    assert_eq!(e["dataset_name"], "gpqa");
    assert_eq!(e["extractor"], "ABCDExtractor");
    assert_eq!(e["score"], 0.75, "{results}");
    assert_eq!(u(&e["total_samples"]), 8);
    let lines = accuracy_lines(&run.out);
    let extracted: Vec<&str> = lines
        .iter()
        .map(|l| l["extracted"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        &extracted[..4],
        ["choice2", "choice3", "choice4", ""],
        "{lines:?}"
    );
    // What MLPerf's publish_submission.py reads for each part.
    let summary = json(&run.out.join("performance/result_summary.json"));
    assert_eq!(u(&summary["n_samples_issued"]), 12);
    assert!(
        f(&summary["latency"]["percentiles"]["99.0"]) > 0.0,
        "{summary}"
    );
    assert!(run.out.join("config.yaml").is_file());
    let config = read(&run.out.join("config.yaml"));
    assert!(config.contains("type: accuracy"), "{config}");
    // Each phase's requests by id, none shared.
    let map = json(&run.out.join("sample_idx_map.json"));
    let perf_ids = map["performance"].as_object().unwrap();
    let acc_ids = map["gpqa"].as_object().unwrap();
    assert_eq!((perf_ids.len(), acc_ids.len()), (12, 8));
    assert!(acc_ids.keys().all(|k| !perf_ids.contains_key(k)));
    let mut rows: Vec<u64> = acc_ids.values().map(u).collect();
    rows.sort_unstable();
    assert_eq!(rows, [0, 0, 1, 1, 2, 2, 3, 3]);
    for l in &lines {
        assert!(acc_ids.contains_key(l["sample_uuid"].as_str().unwrap()));
    }
    let s = run.summary();
    assert_eq!(u(&s["requests"]["issued"]), 12);
    assert_eq!(s["accuracy"]["phase"], "both");
}

#[test]
fn rouge_of_echoed_references_is_a_hundred() {
    let dir = temp_dir("acc-rouge");
    let rows: String = [
        "The cat sat on the mat. It was happy.",
        "Mr. Smith went to Washington on Tuesday.",
    ]
    .iter()
    .map(|t| serde_json::json!({"article": t, "highlights": t}).to_string() + "\n")
    .collect();
    let data = write(&dir, "cnn.jsonl", &rows);
    let server = Server::start(&["--echo", "--ttft", "1ms", "--tpot", "1ms"]);
    let spec = format!("{data},prompt=article,expected=highlights,scorer=rouge");
    let run = bench_at(
        &server,
        &["--phase", "acc", "--accuracy-dataset", &spec, "--no-stream"],
        LIMIT,
    );
    run.assert_success();
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    let score = &results["accuracy_scores"][0]["score"];
    for k in ["rouge1", "rouge2", "rougeL", "rougeLsum"] {
        assert_eq!(score[k], "100.0", "{results}");
    }
    assert_eq!(u(&score["gen_num"]), 2);
    // ROUGE's dict is not a number: no average.
    assert!(results.get("average_accuracy").is_none(), "{results}");
}

/// MLPerf's own spelling: `benchmark offline --mode both` with an `acc:`
/// dataset, and the same run from a YAML `type: submission` config.
#[test]
fn mlperf_command_line_and_config_run_the_accuracy_phase() {
    let dir = temp_dir("acc-mlperf");
    let (data, answers) = qa(&dir);
    let server = Server::start(&["--answers", &answers, "--ttft", "1ms", "--tpot", "1ms"]);
    let url = server.url();
    let acc = format!(
        "acc:{data},accuracy_config.eval_method=string_match,accuracy_config.ground_truth=answer"
    );
    let out = dir.join("cli");
    let run = llmload(&[
        "benchmark",
        "offline",
        "--report-dir",
        out.to_str().unwrap(),
        "--endpoints",
        &url,
        "--model",
        "m",
        "--dataset",
        &data,
        "--dataset",
        &acc,
        "--num-samples",
        "10",
        "--mode",
        "both",
        "--max-output-tokens",
        "8",
    ])
    .out(&out)
    .limit(LIMIT)
    .run();
    run.assert_success();
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    assert_eq!(results["accuracy_scores"][0]["score"], 0.6, "{results}");
    assert!(run.out.join("performance/result_summary.json").is_file());

    let yaml = format!(
        "type: submission\nbenchmark_mode: offline\nmodel_params: {{name: m, max_new_tokens: 8}}\n\
         datasets:\n- {{name: perf, type: performance, path: '{data}'}}\n\
         - name: qa-acc\n  type: accuracy\n  path: '{data}'\n  samples: 5\n  \
         accuracy_config: {{eval_method: string_match, ground_truth: answer, num_repeats: 2}}\n\
         settings:\n  runtime: {{n_samples_to_issue: 10}}\n  load_pattern: {{type: max_throughput}}\n\
         endpoint_config: {{endpoints: ['{url}']}}\nreport_dir: '{}'\n",
        dir.join("yaml").display()
    );
    let cfg = write(&dir, "submission.yaml", &yaml);
    let run = llmload(&["benchmark", "from-config", "-c", &cfg])
        .out(&dir.join("yaml"))
        .limit(LIMIT)
        .run();
    run.assert_success();
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    let e = &results["accuracy_scores"][0];
    assert_eq!(e["dataset_name"], "qa-acc");
    // `samples` is no row limit, as in MLPerf (which reads it nowhere):
    // all ten rows, twice, six of ten answered right; the report says so.
    assert_eq!((u(&e["unit_samples"]), u(&e["total_samples"])), (10, 20));
    assert_eq!(e["score"], 0.6, "{results}");
    let notes = run.summary()["notes"].to_string();
    assert!(
        notes.contains("datasets[1].samples: 5 has no effect"),
        "{notes}"
    );
}

#[test]
fn a_phase_without_an_accuracy_dataset_or_reference_column_is_refused() {
    let dir = temp_dir("acc-refuse");
    let data = write(&dir, "plain.jsonl", "{\"prompt\": \"hi\"}\n");
    let run = bench(&["--phase", "acc", "--dataset", &data], LIMIT);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("needs an accuracy dataset"),
        "{}",
        run.stderr
    );
    let spec = format!("{data},scorer=pass_at_1");
    let run = bench(&["--accuracy-dataset", &spec], LIMIT);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr
            .contains("no reference answers: no column named ground_truth, expected, answer"),
        "{}",
        run.stderr
    );
}

/// `--prompt-template` builds each accuracy prompt from the row's columns
/// (the echo shows what was sent), and a Parquet file is an accuracy
/// dataset like any other, `samples=` taking its first rows.
#[test]
fn templates_and_parquet_feed_the_accuracy_phase() {
    let dir = temp_dir("acc-template");
    let (data, _) = qa(&dir);
    let server = Server::start(&["--echo", "--ttft", "1ms", "--tpot", "1ms"]);
    let parquet = format!(
        "{}/tests/fixtures/columnar/rows-zstd.parquet,prompt=user_prompt,expected=answer,samples=4,name=pq",
        env!("CARGO_MANIFEST_DIR")
    );
    let run = bench_at(
        &server,
        &[
            "--phase",
            "acc",
            "--accuracy-dataset",
            &format!("{data},expected=answer"),
            "--accuracy-dataset",
            &parquet,
            "--prompt-template",
            "Answer with the letter only. {question}",
        ],
        LIMIT,
    );
    run.assert_success();
    let lines = accuracy_lines(&run.out);
    let qa: Vec<&Value> = lines.iter().filter(|l| l["dataset"] == "qa").collect();
    assert_eq!(qa.len(), 10);
    for (i, l) in qa.iter().enumerate() {
        assert_eq!(
            l["output"],
            format!("Answer with the letter only. q{i}"),
            "{l}"
        );
    }
    let results = json(&run.out.join("accuracy/accuracy_results.json"));
    let pq = &results["accuracy_scores"][1];
    assert_eq!(pq["dataset_name"], "pq");
    assert_eq!((u(&pq["unit_samples"]), u(&pq["total_samples"])), (4, 4));
    assert_eq!(lines.iter().filter(|l| l["dataset"] == "pq").count(), 4);
}
