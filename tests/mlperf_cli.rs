//! Every `inference-endpoint …` command line in the code blocks of MLPerf
//! Inference Endpoint's README and `docs/*.md`, run with only the program
//! name, the endpoint, the model's server and small stand-in dataset files
//! changed, as a user switching tools would run them. Each runs in one
//! sandbox directory in document order (so `init` writes the template a
//! later line reads), against `llmload serve`, and is stopped with SIGINT
//! after a few seconds when still running (an interrupted run is accepted:
//! it was not refused). None may be refused; the few the docs show failing
//! on purpose are listed in `EXPECTED` with the status and message MLPerf's
//! own exit codes give them.
//!
//! The lines are read from MLPerf's sources at the pinned commit in
//! `shared/reference/mlperf-endpoints-src/` (`util::mlperf_src_or_skip`);
//! the test says why it skips where that folder is absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{Server, bin, mlperf_src_or_skip, read, signal, temp_dir};

/// How long a line runs before it is sent SIGINT.
const BOUND: Duration = Duration::from_secs(3);
/// How long an interrupted line may take to write its results and exit.
const AFTER_SIGINT: Duration = Duration::from_secs(30);

/// MLPerf's README.md at the pinned commit (ea332753): its command lines,
/// kept here because the reference folder's README.md is the folder's own
/// index, not MLPerf's.
const MLPERF_README_LINES: &[(&str, &str)] = &[
    (
        "README.md:38",
        "inference-endpoint probe --endpoints http://your-endpoint:8000 --model Qwen/Qwen3-8B",
    ),
    (
        "README.md:43",
        "inference-endpoint benchmark offline --endpoints http://your-endpoint:8000 \
         --model Qwen/Qwen3-8B --dataset tests/assets/datasets/dummy_1k.jsonl",
    ),
    (
        "README.md:49",
        "inference-endpoint benchmark online --endpoints http://your-endpoint:8000 \
         --model Qwen/Qwen3-8B --dataset tests/assets/datasets/dummy_1k.jsonl \
         --load-pattern poisson --target-qps 100",
    ),
    (
        "README.md:62",
        "inference-endpoint benchmark offline --endpoints http://localhost:8765 \
         --model test-model --dataset tests/assets/datasets/dummy_1k.jsonl",
    ),
];

/// A line the docs show failing, or one that needs work of another part:
/// where it is (`file:line`), the exit status it must end with, a piece of
/// its message, and why.
struct Expected {
    at: &'static str,
    status: &'static [i32],
    says: &'static str,
    why: &'static str,
}

const EXPECTED: &[Expected] = &[
    Expected {
        at: "docs/CLI_DESIGN.md:152",
        status: &[1],
        says: "required",
        why: "the docs' example of a missing required flag (MLPerf: `Required: --dataset`, exit 1)",
    },
    Expected {
        at: "docs/CLI_DESIGN.md:157",
        status: &[1],
        says: "--workers",
        why: "the docs' example of a malformed value, `--workers abc` (MLPerf: exit 1)",
    },
    Expected {
        at: "docs/CLI_QUICK_REFERENCE.md:59",
        status: &[1],
        says: "not yet implemented",
        why: "MLPerf's `eval` is a stub that always fails with exit 1",
    },
];

/// A line elided by its doc (`...` in place of its flags): not a command.
fn elided(words: &[String]) -> bool {
    words.iter().any(|w| w == "..." || w == "…")
}

/// The `inference-endpoint` lines of one Markdown file's code blocks, with
/// `file:line` of their first line: continuations joined, `$ ` and `uv
/// run ` dropped, trailing comments cut.
fn command_lines(file: &Path, name: &str) -> Vec<(String, String)> {
    let text = read(file);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_block = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("```") {
            in_block = !in_block;
            i += 1;
            continue;
        }
        let bare = line.trim_start_matches("$ ").trim_start_matches("uv run ");
        if in_block && (bare == "inference-endpoint" || bare.starts_with("inference-endpoint ")) {
            let at = format!("{name}:{}", i + 1);
            let mut cmd = bare.to_string();
            while cmd.ends_with('\\') && i + 1 < lines.len() {
                cmd.pop();
                i += 1;
                cmd.push(' ');
                cmd.push_str(lines[i].trim());
            }
            out.push((at, cmd));
        }
        i += 1;
    }
    out
}

/// Splits a shell line into words: double and single quotes group, ` #`
/// starts a comment.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut have = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                have = true;
            }
            (None, '#') if !have => break,
            (None, c) if c.is_whitespace() => {
                if have {
                    out.push(std::mem::take(&mut cur));
                    have = false;
                }
            }
            (None, c) => {
                cur.push(c);
                have = true;
            }
        }
    }
    if have {
        out.push(cur);
    }
    out
}

/// The stand-in files the lines name, in `dir`.
fn stand_ins(dir: &Path, url: &str) {
    let rows = |col: &str, extra: &str| -> String {
        (0..20)
            .map(|i| format!("{{\"{col}\": \"question number {i}\"{extra}}}\n"))
            .collect()
    };
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    // MLPerf's test datasets: dummy_1k.jsonl holds `text_input`.
    write(
        "tests/assets/datasets/dummy_1k.jsonl",
        &rows("text_input", ""),
    );
    write(
        "tests/assets/datasets/ds_samples.jsonl",
        &rows("prompt", ""),
    );
    for f in ["performance.jsonl", "perf.jsonl", "prod_queries.jsonl"] {
        write(f, &rows("prompt", ""));
    }
    write(
        "accuracy.jsonl",
        &rows("prompt", ", \"ground_truth\": \"4\""),
    );
    write("eval.jsonl", &rows("prompt", ", \"answer\": \"4\""));
    for f in ["openorca.jsonl", "gpqa.jsonl", "aime.jsonl"] {
        write(
            &format!("datasets/{f}"),
            &rows("prompt", ", \"ground_truth\": \"A\""),
        );
    }
    write(
        "test.yaml",
        &format!(
            "name: test\ntype: offline\nmodel_params:\n  name: test-model\n\
             datasets:\n- name: perf\n  type: performance\n  path: performance.jsonl\n\
             settings:\n  runtime:\n    n_samples_to_issue: 20\n\
             endpoint_config:\n  endpoints:\n  - {url}\n"
        ),
    );
}

/// Fills the placeholders of a template `init` wrote, as its comments ask
/// a user to: the endpoint, the model and the dataset paths.
fn fill_template(path: &Path, url: &str) {
    let text = read(path)
        .replace("http://localhost:8000", url)
        .replace(
            "'<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'",
            "test-model",
        )
        .replace(
            "'<DATASET_PATH eg: prompts.jsonl>'",
            "tests/assets/datasets/dummy_1k.jsonl",
        )
        .replace(
            "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
            "tests/assets/datasets/dummy_1k.jsonl",
        );
    std::fs::write(path, text).unwrap();
}

/// The line's words with our program and endpoint in place of MLPerf's.
fn substitute(words: &[String], url: &str) -> Vec<String> {
    words[1..]
        .iter()
        .map(|w| {
            if w == "URL" || w.starts_with("http://") || w.starts_with("https://") {
                url.to_string()
            } else {
                w.clone()
            }
        })
        .collect()
}

/// How one line ended.
struct Ended {
    status: i32,
    stopped: bool,
    stderr: String,
}

/// Runs `llmload ARGS` in `dir`; SIGINT after `BOUND`, failing the test if
/// it is still running `AFTER_SIGINT` later.
fn run_bounded(dir: &Path, args: &[String], at: &str) -> Ended {
    let out = std::fs::File::create(dir.join("stdout.txt")).unwrap();
    let err = std::fs::File::create(dir.join("stderr.txt")).unwrap();
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawn llmload");
    let start = Instant::now();
    let mut stopped = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if !stopped && start.elapsed() >= BOUND {
            signal(&child, libc::SIGINT);
            stopped = true;
        }
        if start.elapsed() >= BOUND + AFTER_SIGINT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{at}: still running {AFTER_SIGINT:?} after SIGINT: llmload {args:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ended {
        status: status.code().unwrap_or(-1),
        stopped,
        stderr: read(&dir.join("stderr.txt")),
    }
}

#[test]
fn mlperf_documented_command_lines_run() {
    let Some(src) = mlperf_src_or_skip() else {
        return;
    };
    let mut lines = command_lines(&src.join("README.md"), "README.md");
    if lines.is_empty() {
        lines.extend(
            MLPERF_README_LINES
                .iter()
                .map(|(at, l)| (at.to_string(), l.to_string())),
        );
    }
    let mut docs: Vec<PathBuf> = std::fs::read_dir(src.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    for d in &docs {
        let name = format!("docs/{}", d.file_name().unwrap().to_string_lossy());
        lines.extend(command_lines(d, &name));
    }
    // Unique lines, first place each appears.
    let mut seen = std::collections::HashSet::new();
    lines.retain(|(_, l)| seen.insert(words(l)));
    assert!(
        lines.len() >= 40,
        "fewer command lines than MLPerf's docs hold ({}): is the extraction broken?",
        lines.len()
    );

    let server = Server::start(&["--ttft", "1ms", "--tpot", "1ms", "--output-tokens", "4"]);
    let url = server.url();
    let dir = temp_dir("mlperf-cli");
    stand_ins(&dir, &url);

    let mut failures = Vec::new();
    let mut ran = 0;
    for (at, line) in &lines {
        let w = words(line);
        if elided(&w) {
            eprintln!("{at}: elided by its doc (`...`), not run: {line}");
            continue;
        }
        let args = substitute(&w, &url);
        let ended = run_bounded(&dir, &args, at);
        ran += 1;
        eprintln!(
            "{at}: exit {}{}: llmload {}",
            ended.status,
            if ended.stopped { " (stopped)" } else { "" },
            args.join(" ")
        );
        let first = ended.stderr.lines().next().unwrap_or("").to_string();
        if let Some(e) = EXPECTED.iter().find(|e| e.at == at) {
            if !e.status.contains(&ended.status) || !ended.stderr.contains(e.says) {
                failures.push(format!(
                    "{at}: expected exit {:?} saying '{}' ({}), got {}: {first}",
                    e.status, e.says, e.why, ended.status
                ));
            }
            continue;
        }
        let accepted = ended.status == 0 || (ended.stopped && ended.status == 130);
        if !accepted {
            failures.push(format!(
                "{at}: exit {}: llmload {}\n    {}",
                ended.status,
                args.join(" "),
                ended.stderr.trim().replace('\n', "\n    ")
            ));
        }
        // `init KIND` writes MLPerf's template by MLPerf's name, never a
        // file named KIND; then its placeholders are filled, as a user does.
        if let [_, init, kind, ..] = w.as_slice()
            && init == "init"
        {
            let written = dir.join(format!("{kind}_template.yaml"));
            if dir.join(kind).exists() {
                failures.push(format!("{at}: wrote a file named {kind}"));
            }
            if !written.is_file() {
                failures.push(format!("{at}: no {kind}_template.yaml written"));
                continue;
            }
            fill_template(&written, &url);
            if kind == "submission" {
                std::fs::copy(&written, dir.join("submission.yaml")).unwrap();
            }
        }
    }
    assert!(ran >= 40, "ran {ran} lines");
    assert!(
        failures.is_empty(),
        "{} of {ran} documented command lines refused:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn mlperf_exit_statuses() {
    let server = Server::start(&["--ttft", "1ms", "--tpot", "1ms", "--output-tokens", "4"]);
    let url = server.url();
    let dir = temp_dir("mlperf-status");
    std::fs::write(dir.join("d.jsonl"), "{\"prompt\": \"hi\"}\n").unwrap();
    std::fs::write(dir.join("bad.yaml"), "name: x\ntype: sideways\n").unwrap();
    let offline = format!("benchmark offline --endpoints {url} --model m --dataset");
    let probe = format!("probe --endpoints {url}");
    let cases: &[(String, i32, &str)] = &[
        // Bad input: a config that does not validate, a missing dataset.
        ("validate-yaml -c bad.yaml".into(), 2, "type"),
        ("benchmark from-config -c bad.yaml".into(), 2, "type"),
        ("benchmark from-config -c none.yaml".into(), 2, "none.yaml"),
        (format!("{offline} none.jsonl"), 2, "none.jsonl"),
        (format!("{offline} d.jsonl,parser.x"), 2, "key=value"),
        ("init --mlperf offline_fast".into(), 2, "llmload init"),
        // MLPerf's init has no _full forms: refused, never a JSON profile.
        ("init offline_full".into(), 2, "unknown template type"),
        (
            format!("{probe} --model m --api-type videogen"),
            2,
            "videogen",
        ),
        ("validate-yaml bad.yaml -vv".into(), 2, "type"),
        // The command line itself: MLPerf's parser exits 1.
        ("benchmark offline --frobnicate 1".into(), 1, "--frobnicate"),
        (probe.clone(), 1, "--model"),
        (
            format!("eval --dataset gpqa --endpoints {url}"),
            1,
            "not yet implemented",
        ),
        // Setup failed: a URL the probe cannot use.
        (
            "probe --endpoints ftp://x --model m".into(),
            3,
            "setup failed",
        ),
        // Execution failed: fewer than half of a probe's requests succeeded.
        (
            "probe --endpoints http://127.0.0.1:1 --model m --requests 2".into(),
            4,
            "0/2",
        ),
        // Finished.
        (format!("-v {probe} --model m --requests 3 -v"), 0, ""),
    ];
    for (line, want, says) in cases {
        let args: Vec<String> = line.split_whitespace().map(String::from).collect();
        let ended = run_bounded(&dir, &args, line);
        assert_eq!(
            ended.status, *want,
            "llmload {line}: exit {}, expected {want}\n{}",
            ended.status, ended.stderr
        );
        assert!(
            ended.stderr.contains(says),
            "llmload {line}: stderr lacks '{says}':\n{}",
            ended.stderr
        );
    }
    assert!(!dir.join("offline_fast_template.yaml").exists());
    assert!(!dir.join("offline_full").exists());
}
