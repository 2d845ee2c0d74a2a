//! Datasets through the real binary: each file format and column mapping,
//! errors that name the line, auto-detection, skipping, synthetic prompts
//! with a tokenizer, and token counting with --tokenizer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::*;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A word-level tokenizer.json fixture: one token per listed word.
fn fixture_tokenizer(dir: &Path) -> PathBuf {
    let words: Vec<String> = (0..400).map(|i| format!("w{i}")).collect();
    let mut all: Vec<&str> = words.iter().map(String::as_str).collect();
    all.extend([
        "the", "a", "of", "and", "hello", "world", "one", "two", "three", "four", "five",
    ]);
    let p = dir.join("tokenizer.json");
    std::fs::write(&p, llmload::tokens::word_level_json(&all)).unwrap();
    p
}

#[test]
fn jsonl_json_and_csv_all_load() {
    let dir = temp_dir("formats");
    let jsonl = write(
        &dir,
        "a.jsonl",
        "{\"prompt\": \"one two\"}\n{\"prompt\": \"three\"}\n",
    );
    let json = write(
        &dir,
        "b.json",
        "[{\"question\": \"one two\"}, {\"question\": \"three four\"}]",
    );
    let csv = write(&dir, "c.csv", "id,text,max\n1,\"one, two\",3\n2,three,5\n");
    let server = Server::start(&[]);
    for (spec, completed) in [
        (jsonl.clone(), 4),
        (json.clone(), 4),
        (format!("{csv},max_tokens=max"), 4),
    ] {
        let run = bench_at(
            &server,
            &[
                "--dataset",
                &spec,
                "--requests",
                "4",
                "--concurrency",
                "1",
                "--max-tokens",
                "2",
            ],
            Duration::from_secs(30),
        );
        run.assert_success();
        let s = run.summary();
        assert_eq!(u(&s["requests"]["completed"]), completed, "{spec}");
        assert_eq!(s["dataset"]["source"], "file");
        assert_eq!(u(&s["dataset"]["samples"]), 2, "{spec}");
    }
    // The CSV's per-row max_tokens (3 and 5) override --max-tokens.
    let run = bench_at(
        &server,
        &[
            "--dataset",
            &format!("{csv},max_tokens=max"),
            "--requests",
            "2",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(u(&run.summary()["tokens"]["output_total"]), 8);
}

#[test]
fn messages_column_sends_a_conversation() {
    let dir = temp_dir("messages");
    let ds = write(
        &dir,
        "conv.jsonl",
        r#"{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "more"}]}
"#,
    );
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &["--dataset", &ds, "--requests", "2", "--concurrency", "1"],
        Duration::from_secs(30),
    );
    run.assert_success();
    assert_eq!(u(&run.summary()["requests"]["completed"]), 2);
}

#[test]
fn malformed_line_is_named_or_skipped() {
    let dir = temp_dir("malformed");
    let ds = write(
        &dir,
        "bad.jsonl",
        "{\"prompt\": \"ok\"}\n{\"prompt\": 7}\n{\"prompt\": \"fine\"}\n",
    );
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        // Two requests read the second line (one would read only the first).
        &["--dataset", &ds, "--requests", "2"],
        Duration::from_secs(30),
    );
    assert_eq!(run.status.code(), Some(1));
    assert!(run.stderr.contains("bad.jsonl:2"), "{}", run.stderr);
    assert!(run.stderr.contains("prompt"), "{}", run.stderr);
    let run = bench_at(
        &server,
        &[
            "--dataset",
            &format!("{ds},skip_invalid=true"),
            "--requests",
            "4",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["dataset"]["samples"]), 2);
    assert_eq!(u(&s["dataset"]["skipped"]), 1);
    assert!(
        s["dataset"]["skip_examples"][0]
            .as_str()
            .unwrap()
            .contains("bad.jsonl:2")
    );
}

#[test]
fn missing_prompt_column_lists_the_columns() {
    let dir = temp_dir("nocol");
    let ds = write(&dir, "x.csv", "id,body\n1,hello\n");
    let run = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--dataset",
            &ds,
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("id") && run.stderr.contains("body"),
        "{}",
        run.stderr
    );
    let two = write(
        &dir,
        "y.jsonl",
        "{\"prompt\": \"a\", \"question\": \"b\"}\n",
    );
    let run = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--dataset",
            &two,
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr.contains("prompt") && run.stderr.contains("question"),
        "{}",
        run.stderr
    );
    let empty = write(&dir, "z.jsonl", "\n");
    let run = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--dataset",
            &empty,
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.status.code(), Some(1));
    assert!(!run.stderr.contains("panicked"));
}

#[test]
fn synthetic_prompts_have_exact_input_length_with_a_tokenizer() {
    let dir = temp_dir("synthetic");
    let tok = fixture_tokenizer(&dir);
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--synthetic",
            "isl=64,osl=8,count=20",
            "--tokenizer",
            tok.to_str().unwrap(),
            "--requests",
            "20",
            "--concurrency",
            "4",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["dataset"]["source"], "synthetic");
    assert_eq!(s["tokens"]["input_source"], "tokenizer");
    assert_eq!(u(&s["tokens"]["input_total"]), 20 * 64);
    assert_eq!(f(&s["tokens"]["isl"]["min"]), 64.0);
    assert_eq!(f(&s["tokens"]["isl"]["max"]), 64.0);
    // Requested output lengths reach the server: 8 each.
    assert_eq!(u(&s["tokens"]["output_total"]), 20 * 8);
}

#[test]
fn synthetic_without_a_tokenizer_is_close() {
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--synthetic",
            "isl=200,osl=4,isl_std=20,count=50",
            "--requests",
            "50",
            "--concurrency",
            "4",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    // The built-in endpoint counts words; prompts aim at 200 tokens by a
    // characters-per-token ratio, so words land within a wide band.
    let mean = f(&s["tokens"]["input_per_request_mean"]);
    assert!((50.0..400.0).contains(&mean), "mean input {mean}");
    assert_eq!(u(&s["tokens"]["output_total"]), 50 * 4);
}

#[test]
fn order_shuffle_and_random_run() {
    let dir = temp_dir("order");
    let ds = write(
        &dir,
        "p.jsonl",
        &(0..10)
            .map(|i| format!("{{\"prompt\": \"p{i}\"}}\n"))
            .collect::<String>(),
    );
    let server = Server::start(&[]);
    for order in ["sequential", "shuffle", "random"] {
        let run = bench_at(
            &server,
            &[
                "--dataset",
                &ds,
                "--order",
                order,
                "--requests",
                "25",
                "--concurrency",
                "2",
            ],
            Duration::from_secs(30),
        );
        run.assert_success();
        let s = run.summary();
        assert_eq!(u(&s["requests"]["completed"]), 25, "{order}");
        assert_eq!(s["config"]["order"], order);
    }
    let run = bench(&["--order", "backwards"], Duration::from_secs(10));
    assert!(run.stderr.contains("--order"), "{}", run.stderr);
}

#[test]
fn input_token_ids_are_sent_and_counted() {
    let dir = temp_dir("ids");
    let ds = write(
        &dir,
        "ids.jsonl",
        "{\"input_tokens\": [1, 2, 3, 4, 5]}\n{\"input_tokens\": [7, 8, 9]}\n",
    );
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--api",
            "openai-completions",
            "--dataset",
            &format!("{ds},input_tokens=input_tokens"),
            "--requests",
            "4",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["tokens"]["input_source"], "input_ids");
    assert_eq!(u(&s["tokens"]["input_total"]), 5 + 3 + 5 + 3);
}

#[test]
fn tokenizer_counts_output_when_the_endpoint_reports_no_usage() {
    let dir = temp_dir("tok-out");
    let tok = fixture_tokenizer(&dir);
    let server = Server::start(&["--no-usage"]);
    for stream in ["--stream", "--no-stream"] {
        let run = bench_at(
            &server,
            &[
                "--tokenizer",
                tok.to_str().unwrap(),
                stream,
                "--requests",
                "10",
                "--concurrency",
                "2",
                "--max-tokens",
                "7",
            ],
            Duration::from_secs(30),
        );
        run.assert_success();
        let s = run.summary();
        // Each mock token is one word: the word-level tokenizer counts 7.
        assert_eq!(s["tokens"]["output_source"], "tokenizer", "{stream}");
        assert_eq!(u(&s["tokens"]["output_total"]), 70, "{stream}");
        assert_eq!(s["tokens"]["input_source"], "tokenizer", "{stream}");
    }
    // Without a tokenizer a stream's tokens are its text events.
    let run = bench_at(
        &server,
        &["--requests", "4", "--concurrency", "1", "--max-tokens", "5"],
        Duration::from_secs(30),
    );
    let s = run.summary();
    assert_eq!(s["tokens"]["output_source"], "events");
    assert_eq!(u(&s["tokens"]["output_total"]), 20);
}

/// A character-level tokenizer.json: every non-space character is a token,
/// so it counts the mock's words very differently from its usage.
fn char_tokenizer(dir: &Path) -> PathBuf {
    let mut v: serde_json::Value =
        serde_json::from_str(&llmload::tokens::word_level_json(&["a", "b"])).unwrap();
    v["pre_tokenizer"] = serde_json::json!({"type": "Sequence", "pretokenizers": [
        {"type": "Whitespace"},
        {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": false}
    ]});
    let p = dir.join("tokenizer.json");
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn token_source_tokenizer_overrides_usage_and_usage_ignores_the_tokenizer() {
    let dir = temp_dir("tok-source");
    let tok = char_tokenizer(&dir);
    // The mock reports usage; its first 7 output tokens are these words.
    let server = Server::start(&[]);
    let words = ["the", "quick", "brown", "fox", "jumps", "over", "a"];
    let chars: usize = words.iter().map(|w| w.len()).sum();
    for stream in ["--stream", "--no-stream"] {
        let run = |source: &str| {
            let run = bench_at(
                &server,
                &[
                    "--tokenizer",
                    tok.to_str().unwrap(),
                    "--token-source",
                    source,
                    stream,
                    "--requests",
                    "10",
                    "--concurrency",
                    "2",
                    "--max-tokens",
                    "7",
                ],
                Duration::from_secs(30),
            );
            run.assert_success();
            run.summary()
        };
        let s = run("tokenizer");
        assert_eq!(s["tokens"]["output_source"], "tokenizer", "{stream}");
        assert_eq!(
            u(&s["tokens"]["output_total"]),
            10 * chars as u64,
            "{stream}"
        );
        assert_eq!(s["tokens"]["input_source"], "tokenizer", "{stream}");
        assert_eq!(s["config"]["token_source"], "tokenizer", "{stream}");
        let s = run("usage");
        assert_eq!(s["tokens"]["output_source"], "usage", "{stream}");
        assert_eq!(u(&s["tokens"]["output_total"]), 70, "{stream}");
        assert_eq!(s["tokens"]["input_source"], "usage", "{stream}");
        // auto: the usage first, as before.
        let s = run("auto");
        assert_eq!(s["tokens"]["output_source"], "usage", "{stream}");
        assert_eq!(u(&s["tokens"]["output_total"]), 70, "{stream}");
    }
    // Without usage, `usage` falls back to the text events, never the tokenizer.
    let bare = Server::start(&["--no-usage"]);
    let run = bench_at(
        &bare,
        &[
            "--tokenizer",
            tok.to_str().unwrap(),
            "--token-source",
            "usage",
            "--requests",
            "4",
            "--concurrency",
            "1",
            "--max-tokens",
            "5",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["tokens"]["output_source"], "events");
    assert_eq!(u(&s["tokens"]["output_total"]), 20);
    assert_eq!(s["tokens"]["input_source"], "unknown");
}

#[test]
fn token_source_tokenizer_without_a_tokenizer_is_an_error_naming_it() {
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &["--token-source", "tokenizer", "--requests", "1"],
        Duration::from_secs(30),
    );
    assert!(!run.status.success(), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--token-source: tokenizer needs a tokenizer.json"),
        "{}",
        run.stderr
    );
}

/// Runs `llmload ARGS` to its end (killed after 60 s): its exit code,
/// stderr, the highest peak RSS (`VmHWM`, KiB) sampled while it ran, and
/// its run time. Sampled, so a lower bound on the true peak: enough to tell
/// a load that stops at its cap from one that reads the input whole.
fn run_measured(args: &[&str]) -> (i32, String, u64, Duration) {
    use std::io::Read;
    let mut child = std::process::Command::new(bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // From the spawn: the test may have waited for the lock (`serial`) in
    // `bin()`.
    let start = std::time::Instant::now();
    let mut se = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(hwm) = read(Path::new(&status_file))
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(hwm);
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    (
        status.code().unwrap_or(-1),
        stderr.join().unwrap(),
        peak,
        start.elapsed(),
    )
}

#[test]
fn an_endless_line_fails_fast_in_bounded_memory() {
    use std::io::Write;
    let dir = temp_dir("endless");
    // A 70 MB line 2 between two good ones.
    let big = dir.join("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    f.write_all(b"{\"prompt\": \"a\"}\n{\"prompt\": \"")
        .unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..70 {
        f.write_all(&chunk).unwrap();
    }
    f.write_all(b"\"}\n{\"prompt\": \"b\"}\n").unwrap();
    f.into_inner().unwrap().sync_all().unwrap();
    let big_arg = big.to_str().unwrap();
    let cases = [
        (
            "/dev/zero,format=jsonl".to_string(),
            "/dev/zero:1: line too long (over 67108864 bytes)".to_string(),
        ),
        (
            "/dev/zero,format=csv".to_string(),
            "/dev/zero:1: record too long (over 67108864 bytes)".to_string(),
        ),
        (
            big_arg.to_string(),
            format!("{big_arg}:2: line too long (over 67108864 bytes)"),
        ),
    ];
    for (dataset, want) in cases {
        let (code, stderr, rss_kib, took) = run_measured(&[
            "bench",
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            // Two requests read a second line, where one case's is endless.
            "--requests",
            "2",
            "--dataset",
            &dataset,
        ]);
        eprintln!("{dataset}: exit {code}, peak RSS {rss_kib} KiB, {took:?}");
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains(&want), "{want} in {stderr}");
        // The cap (64 MiB) and the read buffer, not the input's size.
        assert!(rss_kib < 200 * 1024, "peak RSS {rss_kib} KiB");
        assert!(rss_kib > 0, "sampled at least once");
        assert!(took < Duration::from_secs(30), "{took:?}");
    }
}

/// A committed fixture written by pyarrow or `datasets`
/// (`scripts/columnar-fixtures.py`).
#[cfg(feature = "columnar")]
fn columnar_fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/columnar");
    p.join(name).to_str().unwrap().to_string()
}

#[test]
#[cfg(feature = "columnar")]
fn parquet_and_hugging_face_datasets_drive_a_run() {
    let server = Server::start(&[]);
    let parquet = format!(
        "{},prompt=user_prompt,expected=answer",
        columnar_fixture("rows-zstd.parquet")
    );
    // The test split of a DatasetDict (train has 6 rows), its prompts built
    // by a template.
    let hf = format!(
        "{},split=test,expected=answer,template=Q: {{question}} (A) {{choice1}} (B) {{choice2}}",
        columnar_fixture("hf-dict")
    );
    for (spec, rows) in [(parquet, 10), (hf, 4)] {
        let run = bench_at(
            &server,
            &[
                "--dataset",
                &spec,
                "--requests",
                &rows.to_string(),
                "--concurrency",
                "2",
                "--max-tokens",
                "2",
            ],
            Duration::from_secs(30),
        );
        run.assert_success();
        let s = run.summary();
        assert_eq!(u(&s["requests"]["completed"]), rows, "{spec}");
        assert_eq!(u(&s["dataset"]["samples"]), rows, "{spec}");
        assert_eq!(s["dataset"]["source"], "file");
    }
}
