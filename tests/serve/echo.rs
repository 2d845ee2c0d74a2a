//! `serve --echo` and `--answers` through the real binaries: `llmload bench
//! --record-output` against `llmload serve`, each recorded output compared
//! byte for byte with what the dataset row asked for, in the wire formats
//! and with and without streaming.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::util::{ServeProcess, bench, read, temp_dir, u};

const LIMIT: Duration = Duration::from_secs(30);

/// Prompts that test the escaping and the chunking: quotes, backslashes,
/// newlines, tabs, runs of spaces, leading and trailing whitespace, Unicode.
const PROMPTS: [&str; 6] = [
    "What is the capital of France?",
    "  say \"hi\" \\ then\n\tleave  ",
    "Ünïcödé: 日本語のテキスト 🦀 and\u{a0}nbsp",
    "one",
    "line one\r\nline two\n\nline four",
    "control \u{1} and \u{1f} bytes / slash",
];

/// A JSONL dataset of `prompts`, one `prompt` column each.
fn dataset(dir: &Path, prompts: &[&str]) -> String {
    let path = dir.join("prompts.jsonl");
    let lines: Vec<String> = prompts
        .iter()
        .map(|p| serde_json::json!({ "prompt": p }).to_string())
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path.display().to_string()
}

/// Runs every row once, in order, and returns the events by row.
fn run_rows(url: &str, data: &str, rows: usize, args: &[&str]) -> Vec<Value> {
    let n = rows.to_string();
    let mut all = vec![
        "--endpoint",
        url,
        "--model",
        "m",
        "--dataset",
        data,
        "--requests",
        &n,
        "--order",
        "sequential",
        "--concurrency",
        "2",
        "--record-output",
        // Prompts as written: a cache-busting prefix would be echoed too.
        "--cache-mode",
        "natural",
    ];
    all.extend_from_slice(args);
    let run = bench(&all, LIMIT);
    let events = read(&run.out.join("events.jsonl"));
    let mut by_row: Vec<Value> = vec![Value::Null; rows];
    for line in events.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let row = u(&v["row"]) as usize;
        by_row[row] = v;
    }
    assert!(
        by_row.iter().all(|v| !v.is_null()),
        "one event per row\n{events}\n{}",
        run.stderr
    );
    by_row
}

#[test]
fn echo_answers_every_api_with_the_prompt_byte_for_byte() {
    let dir = temp_dir("echo");
    let data = dataset(&dir, &PROMPTS);
    let server = ServeProcess::start(&[], &["--echo", "--ttft", "1ms", "--tpot", "200us"]);
    let url = server.url();
    for api in ["openai-chat", "openai-completions", "sglang", "anthropic"] {
        for stream in ["--stream", "--no-stream"] {
            let events = run_rows(&url, &data, PROMPTS.len(), &["--api", api, stream]);
            for (row, e) in events.iter().enumerate() {
                let what = format!("{api} {stream} row {row}: {e}");
                assert_eq!(e["status"], 200, "{what}");
                assert_eq!(e["output"], PROMPTS[row], "{what}");
                // bench reads Anthropic's end_turn as stop too.
                assert_eq!(e["finish_reason"], "stop", "{what}");
                let words = PROMPTS[row].split_whitespace().count() as u64;
                assert_eq!(u(&e["completion_tokens"]), words, "{what}");
            }
        }
    }
    let s = server.stop();
    assert_eq!(u(&s["completed"]), 8 * PROMPTS.len() as u64, "{s}");
    assert_eq!(u(&s["answers_missed"]), 0, "{s}");
}

#[test]
fn answers_give_mapped_replies_and_the_rest_generated_text() {
    let dir = temp_dir("answers");
    let data = dataset(&dir, &PROMPTS);
    let answers = dir.join("answers.jsonl");
    std::fs::write(
        &answers,
        [
            r#"{"prompt":"What is the capital of France?","reply":"Paris"}"#,
            // The reply key may be "answer"; other keys are ignored.
            r#"{"id":2,"prompt":"  say \"hi\" \\ then\n\tleave  ","answer":" \"hi\"\n"}"#,
            // Longer than the request's max_tokens: cut, finish "length".
            r#"{"prompt":"one","reply":"a b c d e f"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let answers = answers.display().to_string();
    let max = ["--max-tokens", "4"];
    let server = ServeProcess::start(&[], &["--answers", &answers]);
    let url = server.url();
    for stream in ["--stream", "--no-stream"] {
        let e = run_rows(&url, &data, PROMPTS.len(), &[&max[..], &[stream]].concat());
        let at = |row: usize| (e[row]["output"].clone(), e[row]["finish_reason"].clone());
        assert_eq!(at(0), ("Paris".into(), "stop".into()), "{stream}");
        assert_eq!(at(1), (" \"hi\"\n".into(), "stop".into()), "{stream}");
        assert_eq!(at(3), ("a b c d ".into(), "length".into()), "{stream}");
        // Not in the map: the vocabulary, as many tokens as asked.
        for row in [2, 4, 5] {
            let generated = (" the quick brown fox".into(), "length".into());
            assert_eq!(at(row), generated, "{stream} row {row}");
        }
    }
    let s = server.stop();
    assert_eq!(u(&s["answers_missed"]), 6, "{s}");

    // With --echo too, what the map lacks is echoed; faults still strike.
    let server = ServeProcess::start(
        &[],
        &["--answers", &answers, "--echo", "--error-rate", "0.5"],
    );
    let e = run_rows(
        &server.url(),
        &data,
        PROMPTS.len(),
        &["--max-tokens", "100"],
    );
    let ok: Vec<usize> = (0..PROMPTS.len())
        .filter(|&r| e[r]["status"] == 200)
        .collect();
    assert_eq!(ok.len(), 3, "half the requests fail: {e:?}");
    for row in ok {
        let want = match row {
            0 => "Paris",
            1 => " \"hi\"\n",
            3 => "a b c d e f",
            r => PROMPTS[r],
        };
        assert_eq!(e[row]["output"], want, "row {row}");
    }
    let s = server.stop();
    assert_eq!(u(&s["errors_injected"]), 3, "{s}");
    assert_eq!(u(&s["answers_missed"]), 0, "{s}");
}

#[test]
fn a_bad_answers_file_names_its_line() {
    let dir = temp_dir("bad-answers");
    let path = dir.join("a.jsonl");
    std::fs::write(
        &path,
        "{\"prompt\":\"q\",\"reply\":\"x\"}\n\n{\"prompt\":\"q\",\"reply\":\"y\"}\n",
    )
    .unwrap();
    let out = std::process::Command::new(crate::util::bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--answers"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "--answers {}:3: prompt \"q\" is also on line 1 with a different reply",
            path.display()
        )),
        "{err}"
    );
}
