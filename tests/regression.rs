//! Bugs fixed, one test each, named for what broke: each test failed before
//! its fix. Kept apart from the topic modules so a regression is never
//! "cleaned up" with the feature tests around it.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::failures::{CHAT_BODY, RawServer, Then, json_200};
use crate::faults::{assert_refused, under_limits};
use crate::util::*;

/// A panic in a bench worker unwound out of the worker into the bench
/// command's own code in the child, whose clean-up stopped the built-in
/// endpoint: one worker bug failed every other worker's requests. Now the
/// child leaves at once; its requests are `worker_lost` and the run goes on.
#[test]
fn a_panicking_worker_does_not_stop_the_builtin_endpoint() {
    let out = temp_dir("worker-panic");
    let child = Command::new(bin())
        .args(["bench", "--workers", "2", "--concurrency", "8"])
        .args(["--duration", "2s", "--warmup", "0s", "--max-tokens", "16"])
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        // Worker 0 panics when it takes its fifth request.
        .env("LLMLOAD_TEST_WORKER_PANIC", "0:4")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload bench");
    let run = wait_run(child, out, Duration::from_secs(60));
    assert!(
        run.stderr.contains("worker 0 panics on purpose"),
        "the switch did not fire:\n{}",
        run.stderr
    );
    let s = run.summary();
    assert_eq!(s["complete"], false, "{s}");
    let reasons = s["incomplete_reasons"].to_string();
    assert!(
        reasons.contains("worker 0") && reasons.contains("exited with status 101"),
        "{reasons}"
    );
    let requests = &s["requests"];
    assert_accounted(requests);
    // Worker 0's requests in flight are lost, and nothing else failed: the
    // endpoint never refused or dropped worker 1.
    let lost = u(&requests["errors"]["worker_lost"]);
    assert!((1..=8).contains(&lost), "{requests}");
    assert_eq!(u(&requests["failed"]), lost, "{requests}");
    // At 20 ms to the first token and 2 ms per token, at most 8 requests
    // finished before the panic; worker 1 kept going for the rest of the run.
    let completed = u(&requests["completed"]);
    assert!(completed > 50, "completed {completed}");
    let served = u(&s["builtin_endpoint"]["completed"]);
    assert!(
        served >= completed,
        "served {served}, completed {completed}"
    );
    // A run that lost a worker is incomplete, and says so in its status.
    assert_eq!(run.status.code(), Some(3), "{}", run.stderr);
}

/// A run that ended incomplete without a signal (a worker lost) exited 0,
/// so CI could not tell it from a clean one; a usage error exited 2, the
/// status of a broken threshold. Every status is now its own.
#[test]
fn exit_statuses_tell_usage_errors_and_incomplete_runs_apart() {
    let out = Command::new(bin())
        .args(["bench", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = Command::new(bin())
        .args(["bench", "--concurrency", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // Other subcommands keep 2 for a usage error.
    let out = Command::new(bin())
        .args(["compare", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A normal end waited up to turns × (timeout + think) + connect + 1 s for
/// requests in flight (311 s by default, and the sum could wrap with huge
/// durations): now it waits no longer than --drain-timeout, then aborts.
#[test]
fn a_normal_end_drains_for_at_most_the_drain_timeout() {
    let server = Server::start(&["--ttft", "30s"]);
    let run = bench_at(
        &server,
        &[
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--concurrency",
            "4",
            "--timeout",
            "60s",
            "--drain-timeout",
            "300ms",
        ],
        Duration::from_secs(30),
    );
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
    let s = run.summary();
    assert_eq!(s["interrupted"], false);
    assert_accounted(&s["requests"]);
    assert_eq!(
        u(&s["requests"]["errors"]["aborted"]),
        4,
        "{}",
        s["requests"]
    );
    // Nothing succeeded.
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
}

/// With a tokenizer.json that pads, counting the prompts before the run
/// started the tokenizer's thread pool, so the workers were forked from a
/// multithreaded process (whose locks a worker could inherit held). The
/// tokenizer now never starts it, and bench refuses to fork otherwise.
#[test]
fn workers_are_forked_from_a_single_threaded_process_even_with_a_padding_tokenizer() {
    let dir = temp_dir("padding-tokenizer");
    let mut tok: serde_json::Value =
        serde_json::from_str(&llmload::tokens::word_level_json(&["one", "two"])).unwrap();
    tok["padding"] = serde_json::json!({
        "strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": null,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "[UNK]"
    });
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, tok.to_string()).unwrap();
    let run = bench(
        &[
            "--tokenizer",
            path.to_str().unwrap(),
            "--requests",
            "4",
            "--concurrency",
            "2",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    assert!(!run.stderr.contains("threads"), "{}", run.stderr);
    assert_eq!(run.summary()["tokens"]["input_source"], "tokenizer");
}

/// `--ttft-timeout` failed every non-streamed request slower than it: such
/// a body has no first token, so the clock never stopped (review F10).
#[test]
fn ttft_timeout_no_longer_fails_non_streamed_responses() {
    let server = Server::start(&["--ttft", "300ms"]);
    let run = bench_at(
        &server,
        &[
            "--no-stream",
            "--ttft-timeout",
            "150ms",
            "--timeout",
            "2s",
            "--concurrency",
            "2",
            "--requests",
            "2",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(60),
    );
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 2, "{}", s["requests"]);
    run.assert_success();
}

/// A 200 HTML page (a proxy's login page) counted as a completed request
/// with no tokens, so throughput described the proxy (review F11).
#[test]
fn an_html_page_with_200_is_not_a_completed_request() {
    use std::io::Write;
    let server = RawServer::start(|s, _| {
        let page = "<html><title>Proxy</title></html>";
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{page}",
            page.len()
        );
        Then::Next
    });
    let url = server.url();
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--requests",
            "3",
            "--server-metrics",
            "off",
        ],
        Duration::from_secs(60),
    );
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 0, "{}", s["requests"]);
    assert_eq!(u(&s["requests"]["errors"]["no_output"]), 3);
    assert_eq!(
        s["error_messages"]["no_output"][0],
        "<html><title>Proxy</title></html>"
    );
    assert_eq!(run.status.code(), Some(1), "no request succeeded");
}

/// A reused connection closed after the request was fully written (here
/// 300 ms later, no response byte) had its POST re-sent on a new
/// connection: the server generated twice, and its drop was hidden as a
/// stale retry (review F15).
#[test]
fn a_fully_written_request_is_not_resent_when_its_connection_closes_later() {
    let server = RawServer::start(|s, req| {
        if req.nth == 0 {
            json_200(s, CHAT_BODY);
            return Then::Next;
        }
        std::thread::sleep(Duration::from_millis(300));
        Then::Close
    });
    let url = server.url();
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--server-metrics",
            "off",
            "--no-stream",
            "--concurrency",
            "1",
            "--requests",
            "2",
        ],
        Duration::from_secs(60),
    );
    let s = run.summary();
    let r = &s["requests"];
    assert_eq!(u(&r["completed"]), 1, "{r}");
    assert_eq!(u(&r["errors"]["reset"]), 1, "{r}");
    assert_eq!(u(&s["generator"]["stale_connection_retries"]), 0);
    assert_eq!(server.received().len(), 2, "each request was sent once");
}

/// A multi-turn turn retried on a new connection (its reused one was
/// closed by the server as the turn went out) was built again on a history
/// that already held its user message: the retry sent it twice (review
/// F15).
#[test]
fn a_retried_turn_does_not_repeat_its_user_message() {
    // The first request on each connection is answered; a second one is
    // read and the connection closed at once, as an idle close that
    // crossed the request.
    let server = RawServer::start(|s, req| {
        if req.nth == 0 {
            json_200(s, CHAT_BODY);
            return Then::Next;
        }
        Then::Close
    });
    let dir = temp_dir("retry-turn");
    let profile = dir.join("run.json");
    let json = serde_json::json!({
        "endpoint": format!("{}/v1/chat/completions", server.url()),
        "model": "m", "stream": false, "live_interval": "0", "cache_mode": "natural",
        "server_metrics": "off",
        "stages": [{"concurrency": 1, "requests": 1}],
        "scenarios": [{"name": "s", "turns": 2,
            "content": {"mode": "scripted", "script": ["first", "second"]}}]
    });
    std::fs::write(&profile, json.to_string()).unwrap();
    let run = bench(
        &["--profile", profile.to_str().unwrap()],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 2, "{}", s["requests"]);
    assert_eq!(u(&s["generator"]["stale_connection_retries"]), 1);
    let got = server.received();
    assert_eq!(got.len(), 3, "turn 1, turn 2, turn 2 again");
    let contents = |i: usize| -> Vec<String> {
        got[i].body()["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(contents(1), ["first", "ok", "second"]);
    assert_eq!(contents(2), contents(1), "the retry is the same request");
}

/// An MLPerf config with an `audit:` block ran the audit under preset
/// mlperf, whose stages are sized only once the dataset is loaded; the
/// audit saw an unsized stage and refused every phase as "run length
/// resolved otherwise". Now the exact count the phase asks for is read
/// from the preset's run-length rule, and the audit runs and passes.
#[test]
fn an_mlperf_config_with_an_audit_block_runs_the_audit() {
    let server = ServeProcess::start(&[], &["--ttft", "100ms", "--tpot", "1ms"]);
    let dir = temp_dir("mlperf-audit");
    let rows: String = (0..30)
        .map(|i| format!("{{\"text_input\": \"prompt number {i}\"}}\n"))
        .collect();
    std::fs::write(dir.join("d.jsonl"), rows).unwrap();
    let config = format!(
        "name: offline_benchmark\ntype: offline\nmodel_params:\n  name: m\n  max_new_tokens: 4\n\
         datasets:\n- name: perf\n  type: performance\n  path: {}\n  parser:\n    prompt: text_input\n\
         endpoint_config:\n  endpoints:\n  - {}\n\
         audit:\n  test: output_caching_test\n  only: true\n  samples: 12\n  audit_samples: 12\n  sample_index: 3\n  threshold: 0.1\n",
        dir.join("d.jsonl").display(),
        server.url()
    );
    let yaml = dir.join("audit.yaml");
    std::fs::write(&yaml, config).unwrap();
    let out = dir.join("report");
    let child = Command::new(bin())
        .args(["benchmark", "from-config", "-c"])
        .arg(&yaml)
        .arg("--report-dir")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload benchmark");
    let run = wait_run(child, out.clone(), Duration::from_secs(60));
    assert_eq!(run.status.code(), Some(0), "stderr: {}", run.stderr);
    let verdict: serde_json::Value =
        serde_json::from_str(&read(&out.join("audit/audit_output_caching_test.json"))).unwrap();
    assert_eq!(verdict["passed"], true, "{verdict}");
    assert_eq!(u(&verdict["ref_requested"]), 12);
    assert_eq!(u(&verdict["audit_completed"]), 12);
    // `only: true`: no benchmark run before the audit.
    assert!(!out.join("performance").exists());
}

/// Phases run back to back (the performance phase, then each accuracy
/// dataset) fork their workers right after joining the previous phase's
/// events thread, which the kernel may still list for a moment after
/// `join` returns: the fork check saw two threads and the accuracy phase
/// failed with "internal error: 2 threads before the workers were forked".
/// Now the check waits for a joined thread to be gone. The test hook leaves
/// such a thread (alive 50 ms) before each accuracy phase.
#[test]
fn phases_back_to_back_fork_once_the_previous_events_thread_is_gone() {
    let dir = temp_dir("phases-fork");
    let server = Server::start(&["--echo", "--ttft", "0ms", "--tpot", "0ms"]);
    let mut args = vec![
        "--endpoint".to_string(),
        server.url(),
        "--model".into(),
        "m".into(),
        "--requests".into(),
        "4".into(),
        "--out".into(),
        dir.join("out").to_str().unwrap().to_string(),
        "--quiet".into(),
    ];
    for i in 0..3 {
        let p = dir.join(format!("set{i}.jsonl"));
        std::fs::write(&p, "{\"prompt\": \"a\", \"answer\": \"a\"}\n").unwrap();
        args.push("--accuracy-dataset".into());
        args.push(p.to_str().unwrap().to_string());
    }
    let child = Command::new(bin())
        .arg("bench")
        .args(&args)
        .env("LLMLOAD_TEST_LINGERING_THREAD", "50")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload bench");
    let run = wait_run(child, dir.join("out"), Duration::from_secs(60));
    run.assert_success();
    let s = run.summary();
    let sets = s["accuracy"]["datasets"].as_array().unwrap();
    assert_eq!(sets.len(), 3);
    for d in sets {
        assert_eq!((u(&d["issued"]), u(&d["correct"])), (1, 1), "{d}");
    }
}

/// The accuracy phase rebuilt its profile from a list of the run's fields
/// and left the rest at their defaults: `--io epoll` (and
/// `--uring-sqpoll`, `--source-addrs`, …) never reached its worker, which
/// moved its bytes with io_uring (or whatever `$LLMLOAD_IO` said) while
/// summary.json said epoll. Read off the worker itself: its descriptors
/// hold an epoll instance and no io_uring.
#[test]
fn the_accuracy_phase_runs_on_the_backend_asked_for() {
    let dir = temp_dir("acc-io");
    // Slow replies keep the worker alive long enough to be looked at.
    let server = Server::start(&["--echo", "--ttft", "250ms"]);
    let data = dir.join("acc.jsonl");
    let rows: String = (0..8)
        .map(|i| format!("{{\"prompt\": \"q{i}\", \"answer\": \"q{i}\"}}\n"))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let out = dir.join("out");
    let child = Command::new(bin())
        .arg("bench")
        .args(["--phase", "acc", "--io", "epoll", "--model", "m"])
        .args(["--endpoint", &server.url()])
        .args(["--accuracy-dataset", data.to_str().unwrap()])
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        // What the phase fell back to without the flag: the environment's
        // backend, so the fallback shows on any kernel.
        .env("LLMLOAD_IO", "uring")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload bench");
    let pid = child.id() as i32;
    let fds = |p: i32| -> Vec<String> {
        std::fs::read_dir(format!("/proc/{p}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .map(|l| l.display().to_string())
            .collect()
    };
    let is_worker = |p: i32| {
        std::fs::read_to_string(format!("/proc/{p}/comm"))
            .is_ok_and(|c| c.trim() == "llmload-worker")
    };
    let backend = |links: &[String]| {
        links
            .iter()
            .any(|l| l == "anon_inode:[eventpoll]" || l == "anon_inode:[io_uring]")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen = None;
    while seen.is_none() && std::time::Instant::now() < deadline {
        seen = children(pid)
            .into_iter()
            .filter(|&c| is_worker(c))
            .map(fds)
            .find(|links| backend(links));
        std::thread::sleep(Duration::from_millis(10));
    }
    let run = wait_run(child, out, Duration::from_secs(60));
    let links = seen.unwrap_or_else(|| panic!("no worker seen; stderr: {}", run.stderr));
    assert!(
        links.iter().any(|l| l == "anon_inode:[eventpoll]"),
        "{links:?}"
    );
    assert!(
        !links.iter().any(|l| l == "anon_inode:[io_uring]"),
        "{links:?}"
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(
        s["generator"]["io"]["backend"], "epoll",
        "{}",
        s["generator"]
    );
    assert_eq!(u(&s["accuracy"]["datasets"][0]["correct"]), 8);
}

const MLPERF_OFFLINE: &str = include_str!("fixtures/mlperf/offline_template.yaml");

/// Review H2: yaml-rust2 copies an anchor at every alias while it loads, so
/// a 1.4 KB config of nine levels of ten aliases reached 2 GB and was still
/// growing; `validate` is what one runs on a config received from someone.
#[test]
fn a_yaml_billion_laughs_is_refused_before_it_grows() {
    let dir = temp_dir("yaml-laughs");
    let mut bomb =
        String::from("x_bomb:\n  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..9 {
        let items = vec![format!("*a{}", i - 1); 10].join(", ");
        bomb += &format!("  a{i}: &a{i} [{items}]\n");
    }
    let file = dir.join("laughs.yaml");
    std::fs::write(&file, format!("{MLPERF_OFFLINE}{bomb}")).unwrap();
    let f = file.to_str().unwrap();
    let want = "more than 100000 values once anchors are expanded";
    assert_refused(&under_limits(&["validate", f]), &file, want);
    assert_refused(&under_limits(&["bench", "--config", f]), &file, want);
}

/// Review M2: a block list 20,000 levels deep (40 KB) overflowed the stack
/// (abort, exit 134), and 10,000 levels cost 200 MB on the way to an
/// "unknown key".
#[test]
fn a_deeply_nested_yaml_is_an_error_naming_its_line() {
    let dir = temp_dir("yaml-deep");
    let file = dir.join("deep.yaml");
    let lines = MLPERF_OFFLINE.lines().count();
    for depth in [10_000, 20_000] {
        let deep = format!("{MLPERF_OFFLINE}x_deep:\n{}1\n", "- ".repeat(depth));
        std::fs::write(&file, deep).unwrap();
        let run = under_limits(&["validate", file.to_str().unwrap()]);
        let want = format!(
            "line {}: lists and mappings nested deeper than 64",
            lines + 2
        );
        assert_refused(&run, &file, &want);
    }
}

/// serde_json's recursion limit (128) holds for profiles: nothing in the
/// build turns on `unbounded_depth`, which would make this a stack overflow.
#[test]
fn a_deeply_nested_json_profile_is_an_error() {
    let dir = temp_dir("json-deep");
    let file = dir.join("deep.json");
    std::fs::write(
        &file,
        format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
    )
    .unwrap();
    let run = under_limits(&["bench", "--profile", file.to_str().unwrap()]);
    assert_refused(&run, &file, "recursion limit exceeded");
}

/// Review L3/L9: certificates, keys, profiles and configs were read whole,
/// so `/dev/zero` or the wrong huge file grew until memory ran out (1.05 GB
/// and "out of memory" under a 2 GB limit).
#[test]
fn oversized_certificates_profiles_and_configs_are_refused_by_size() {
    let dir = temp_dir("oversized");
    let big = |name: &str| {
        let p = dir.join(name);
        std::fs::File::create(&p)
            .unwrap()
            .set_len(100 << 20)
            .unwrap();
        p
    };
    let profile = big("profile.json");
    let run = under_limits(&["bench", "--profile", profile.to_str().unwrap()]);
    assert_refused(&run, &profile, "104857600 bytes, more than the 16 MiB");
    let config = big("config.yaml");
    let run = under_limits(&["validate", config.to_str().unwrap()]);
    assert_refused(&run, &config, "104857600 bytes, more than the 16 MiB");
    let zero = std::path::Path::new("/dev/zero");
    for flag in ["--ca-cert", "--client-cert"] {
        let mut args = vec!["bench", "--endpoint", "https://127.0.0.1:9/v1/completions"];
        args.extend(["--model", "m", "--requests", "1", flag, "/dev/zero"]);
        if flag == "--client-cert" {
            args.extend(["--client-key", "/dev/zero"]);
        }
        let run = under_limits(&args);
        assert_refused(&run, zero, "longer than the 16 MiB this file may have");
    }
}

/// Review L2: a config saved with a UTF-8 byte-order mark (as Windows
/// editors write one) had its first comment line read as a key: "﻿# An
/// MLPerf offline benchmark: unknown key".
#[test]
fn a_yaml_config_with_a_byte_order_mark_reads_as_written() {
    let dir = temp_dir("yaml-bom");
    let data = dir.join("prompts.jsonl");
    std::fs::write(&data, "{\"text_input\": \"hello\"}\n").unwrap();
    let config = MLPERF_OFFLINE
        .replace("'<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'", "m")
        .replace(
            "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
            &format!("'{}'", data.display()),
        );
    let file = dir.join("bom.yaml");
    std::fs::write(&file, format!("\u{feff}{config}")).unwrap();
    let run = llmload(&["validate", file.to_str().unwrap()]).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("valid"), "{}", run.stdout);
}

/// A chat completion as a server writes it, for bodies cut or spoiled.
const WHOLE_CHAT: &str = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#;

/// Runs a non-streamed bench of 3 requests against `server`.
fn bench_no_stream(server: &RawServer) -> Run {
    let url = server.url();
    let args = ["--endpoint", &url, "--model", "m", "--no-stream"];
    let more = ["--requests", "3", "--server-metrics", "off"];
    bench(&[&args[..], &more[..]].concat(), Duration::from_secs(60))
}

/// A non-streamed body the server cut short by closing its connection
/// (`connection: close`, no length) was read for its keys and counted as a
/// completed request with 0 tokens (review M5).
#[test]
fn a_whole_body_cut_by_the_close_is_truncated() {
    use std::io::Write;
    let server = RawServer::start(|s, _| {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n";
        let _ = write!(s, "{head}{}", &WHOLE_CHAT[..120]);
        Then::Close
    });
    let run = bench_no_stream(&server);
    let s = run.summary();
    let r = &s["requests"];
    assert_eq!(u(&r["completed"]), 0, "{r}");
    assert_eq!(u(&r["failed"]), 3, "{r}");
    assert_eq!(u(&r["errors"]["truncated"]), 3, "{r}");
    assert_eq!(
        s["error_messages"]["truncated"][0],
        "the server closed the connection inside the body's JSON document"
    );
    assert_eq!(run.status.code(), Some(1), "no request succeeded");
}

/// A body of the length its head declared that is not one JSON document
/// (cut inside, or a page after it) was counted as completed (review M5).
#[test]
fn a_whole_body_that_is_not_one_json_document_is_malformed() {
    let bodies = [
        WHOLE_CHAT[..150].to_string(),
        format!("{WHOLE_CHAT} trailing junk <html>"),
    ];
    for body in bodies {
        let answer = body.clone();
        let server = RawServer::start(move |s, _| {
            json_200(s, &answer);
            Then::Next
        });
        let run = bench_no_stream(&server);
        let s = run.summary();
        let r = &s["requests"];
        assert_eq!(u(&r["completed"]), 0, "{body}: {r}");
        assert_eq!(u(&r["errors"]["malformed_response"]), 3, "{body}: {r}");
        assert_eq!(run.status.code(), Some(1), "{body}");
    }
    // The same body whole is a success: the check is not what failed them.
    let server = RawServer::start(|s, _| {
        json_200(s, WHOLE_CHAT);
        Then::Next
    });
    let run = bench_no_stream(&server);
    run.assert_success();
    assert_eq!(u(&run.summary()["requests"]["completed"]), 3);
}

/// A `/metrics` body longer than the scraper's cap was cut there, its
/// prefix summed and the scrape counted a success: `running` read 37449
/// from a server running one request (review M8).
#[test]
fn a_metrics_body_over_the_cap_is_a_failed_scrape() {
    use std::io::Write;
    let metrics = RawServer::start(|s, _| {
        let line = "vllm:num_requests_running 1\n";
        let body = line.repeat((1 << 20) / line.len() + 64);
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        Then::Close
    });
    let url = format!("{}/metrics", metrics.url());
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--duration",
            "1s",
            "--concurrency",
            "1",
            "--server-metrics",
            &url,
            "--server-metrics-interval",
            "200ms",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    let m = &s["server_metrics"];
    assert!(u(&m["scrapes"]) >= 2, "{m}");
    assert_eq!(u(&m["failures"]), u(&m["scrapes"]), "{m}");
    assert_eq!(
        m["error"], "the body is longer than 1 MiB: not read, its sums would be partial",
        "{m}"
    );
    assert!(
        !m["series"].to_string().contains("running"),
        "no series from a cut body: {m}"
    );
}

/// A server that echoed the Authorization header in its 401 message had
/// the key written verbatim to summary.json, events.jsonl, the reports and
/// stdout, and for model discovery to stderr; probe masked it (review M6).
#[test]
fn a_key_a_server_echoes_is_masked_everywhere_bench_writes() {
    use std::io::Write;
    const KEY: &str = "SECECHO13";
    let server = RawServer::start(|s, req| {
        let auth = req
            .text
            .lines()
            .find_map(|l| {
                l.strip_prefix("authorization: ")
                    .or(l.strip_prefix("Authorization: "))
            })
            .unwrap_or("none")
            .to_string();
        let body = format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {auth}","type":"invalid_request_error"}}}}"#
        );
        let _ = write!(
            s,
            "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        Then::Next
    });
    let url = format!("{}/v1/chat/completions", server.url());
    // With a model the requests are refused; without one, model discovery.
    for model in [&["--model", "m"][..], &[]] {
        let out = temp_dir("echoed-key");
        let child = Command::new(bin())
            .args(["bench", "--endpoint", &url, "--api-key", KEY])
            .args(model)
            .args(["--requests", "3", "--server-metrics", "off"])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn llmload bench");
        let run = wait_run(child, out.clone(), Duration::from_secs(60));
        assert!(
            run.stderr.contains("<redacted>") || run.stdout.contains("<redacted>"),
            "the echo reached no output: {model:?}\n{}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(!run.stdout.contains(KEY), "stdout: {}", run.stdout);
        assert!(!run.stderr.contains(KEY), "stderr: {}", run.stderr);
        let mut files = 0;
        let mut dirs = vec![out];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                    continue;
                }
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(KEY),
                    "{}",
                    p.display()
                );
                files += 1;
            }
        }
        if !model.is_empty() {
            assert!(files >= 4, "summary, events and reports written: {files}");
            let s = run.summary();
            assert_eq!(
                u(&s["requests"]["errors"]["http_401"]),
                3,
                "{}",
                s["requests"]
            );
            let shown = s["error_messages"]["http_401"][0].as_str().unwrap();
            assert!(shown.contains("provided: <redacted>"), "{shown}");
        }
    }
}

/// H1: the accuracy extractors ran MLPerf's patterns on a backtracking
/// engine and rescanned to the end of the reply from every unclosed call,
/// on the parent: "answer" and a run of spaces with no letter after them
/// took 6 s at 10,000 spaces (hours at 256 KiB), `f(` × 40,000 took 9 s,
/// and Ctrl-C went unheard until they returned. Both replies, 256 KiB and
/// 200 KB, are scored now in a run bounded at 20 s.
#[test]
fn accuracy_extractors_take_linear_time_on_hostile_replies() {
    let dir = temp_dir("acc-hostile");
    let spaces = format!("answer{}x", " ".repeat(256 << 10));
    let calls = "f(".repeat(100_000);
    let answers: String = [("q1", spaces.as_str()), ("q2", calls.as_str())]
        .iter()
        .map(|(prompt, reply)| {
            serde_json::json!({"prompt": prompt, "reply": reply}).to_string() + "\n"
        })
        .collect();
    let answers_path = dir.join("answers.jsonl");
    std::fs::write(&answers_path, answers).unwrap();
    let write = |name: &str, prompt: &str, answer: &str| {
        let p = dir.join(name);
        std::fs::write(
            &p,
            serde_json::json!({"prompt": prompt, "answer": answer}).to_string() + "\n",
        )
        .unwrap();
        p.to_str().unwrap().to_string()
    };
    let abcd = write("abcd.jsonl", "q1", "choice1") + ",extractor=abcd";
    let call = write("call.jsonl", "q2", "[]") + ",extractor=function_call";
    let server = Server::start(&["--answers", answers_path.to_str().unwrap()]);
    let run = bench_at(
        &server,
        &[
            "--phase",
            "acc",
            "--no-stream",
            "--accuracy-dataset",
            &abcd,
            "--accuracy-dataset",
            &call,
        ],
        Duration::from_secs(20),
    );
    run.assert_success();
    let s = run.summary();
    let datasets = s["accuracy"]["datasets"].as_array().expect("datasets");
    assert_eq!(datasets.len(), 2, "{}", s["accuracy"]);
    // Answered in full and scored: no letter follows "answer", so MLPerf
    // falls back to the reply's first character, `a` (choice1, right); no
    // call closes, so nothing is extracted (wrong).
    for (d, correct) in datasets.iter().zip([1, 0]) {
        assert_eq!(
            (u(&d["issued"]), u(&d["scored"]), u(&d["correct"])),
            (1, 1, correct),
            "{d}"
        );
        assert_eq!(d["complete"], true, "{d}");
    }
}

/// M7: a chat template from tokenizer_config.json ran without a bound:
/// three nested `range(1000)` loops ran for minutes, and a template
/// writing 100 MB aborted the process while it was tokenized. Each now
/// stops at its budget, in a run bounded at 20 s, and the run does not
/// start: an error names the template's file and the budget it passed.
#[test]
fn chat_templates_stop_at_their_fuel_and_output_budgets() {
    let server = Server::start(&[]);
    for (name, template, why) in [
        (
            "loops",
            "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}\
             {% endfor %}{% endfor %}{% endfor %}x",
            "used up its budget of",
        ),
        (
            "output",
            "{{ 'x' * 100000000 }}",
            "wrote more than its cap of",
        ),
    ] {
        let dir = temp_dir(&format!("chat-budget-{name}"));
        let tok = dir.join("tok");
        std::fs::create_dir(&tok).unwrap();
        let fixture =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-chat");
        std::fs::copy(fixture.join("tokenizer.json"), tok.join("tokenizer.json")).unwrap();
        let mut config: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(fixture.join("tokenizer_config.json")).unwrap(),
        )
        .unwrap();
        config["chat_template"] = template.into();
        let config_path = tok.join("tokenizer_config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        let data = dir.join("m.jsonl");
        std::fs::write(
            &data,
            "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n\
             {\"messages\":[{\"role\":\"user\",\"content\":\"ho\"}]}\n",
        )
        .unwrap();
        let run = bench_at(
            &server,
            &[
                "--requests",
                "2",
                "--dataset",
                data.to_str().unwrap(),
                "--tokenizer",
                tok.to_str().unwrap(),
            ],
            Duration::from_secs(20),
        );
        assert_eq!(run.status.code(), Some(1), "{name}: {}", run.stderr);
        let error = format!(
            "--tokenizer: the chat template of {} {why}",
            config_path.display()
        );
        assert!(run.stderr.contains(&error), "{name}: {}", run.stderr);
    }
}

/// L1: a model name with ESC and BEL from a config received from someone
/// reaches the terminal spelled out, not as an escape sequence.
#[test]
fn validate_prints_control_characters_of_config_values_escaped() {
    let dir = temp_dir("validate-escapes");
    let data = dir.join("prompts.jsonl");
    std::fs::write(&data, "{\"text_input\": \"hello\"}\n").unwrap();
    let config = MLPERF_OFFLINE
        .replace(
            "'<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'",
            r#""m\x1b[31mRED\x07""#,
        )
        .replace(
            "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
            &format!("'{}'", data.display()),
        );
    let file = dir.join("escapes.yaml");
    std::fs::write(&file, config).unwrap();
    let run = llmload(&["validate", file.to_str().unwrap()]).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains(r"model m\u{1b}[31mRED\u{7}"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains(['\x1b', '\x07']), "{:?}", run.stdout);
}

/// Every file under `dir`, as text (lossy), with its path.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            out.push((p, text));
        }
    }
    out
}

/// L11: a refused config value that came from `${VAR}` was printed as the
/// variable's value (an untrusted config could read any variable into an
/// error message); so was a refused value under a key naming a credential.
#[test]
fn refused_config_values_from_the_environment_are_redacted() {
    let dir = temp_dir("config-env-redacted");
    let data = dir.join("prompts.jsonl");
    std::fs::write(&data, "{\"text_input\": \"hello\"}\n").unwrap();
    let config = MLPERF_OFFLINE
        .replace(
            "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
            &format!("'{}'", data.display()),
        )
        .replace("http://localhost:8000", "${LLMLOAD_T_SECRET}");
    let file = dir.join("env.yaml");
    std::fs::write(&file, config).unwrap();
    let secret = "sk-env-secret-4711";
    let run = llmload(&["validate", file.to_str().unwrap()])
        .env("LLMLOAD_T_SECRET", secret)
        .run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("'<redacted>': a URL must include its scheme"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(secret), "{}", run.stderr);
    assert!(!run.stdout.contains(secret), "{}", run.stdout);
}

/// A key given in a config as `${NAME}` is read at run time, and what the
/// run records (config.yaml, summary.json) names the variable, never the
/// value; the server's check of the key shows it was sent.
#[test]
fn an_api_key_from_a_variable_is_recorded_by_its_name() {
    let key = "sk-var-key-0815";
    let server = Server::start(&["--api-key", key, "--output-tokens", "2"]);
    let dir = temp_dir("config-key-var");
    let data = dir.join("prompts.jsonl");
    let rows: String = (0..6)
        .map(|i| format!("{{\"text_input\": \"q {i}\"}}\n"))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let config = format!(
        "name: offline_benchmark\ntype: offline\nmodel_params:\n  name: m\n  max_new_tokens: 2\n\
         datasets:\n- name: perf\n  type: performance\n  path: {}\n  parser:\n    prompt: text_input\n\
         settings:\n  runtime:\n    n_samples_to_issue: 6\n    min_duration_ms: 0\n\
         endpoint_config:\n  endpoints:\n  - {}\n  api_key: ${{LLMLOAD_T_KEY}}\n",
        data.display(),
        server.url()
    );
    let yaml = dir.join("key.yaml");
    std::fs::write(&yaml, config).unwrap();
    let out = dir.join("report");
    let run = llmload(&[
        "benchmark",
        "from-config",
        "-c",
        yaml.to_str().unwrap(),
        "--report-dir",
        out.to_str().unwrap(),
    ])
    .env("LLMLOAD_T_KEY", key)
    .out(&out)
    .run();
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 6, "{s}");
    assert_eq!(
        s["config"]["api_key"], "${LLMLOAD_T_KEY}",
        "{}",
        s["config"]
    );
    let c = read(&out.join("config.yaml"));
    assert!(c.contains("api_key: \"${LLMLOAD_T_KEY}\""), "{c}");
    for (path, text) in files_under(&out) {
        assert!(!text.contains(key), "{} holds the key", path.display());
    }
    assert!(!run.stdout.contains(key) && !run.stderr.contains(key));
    // Unset, the run refuses to start and names the variable.
    let run = llmload(&["validate", yaml.to_str().unwrap()])
        .env_remove("LLMLOAD_T_KEY")
        .run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("${LLMLOAD_T_KEY}"), "{}", run.stderr);
}

/// L1: a refused config value with ESC reached the terminal raw in the
/// error that quoted it.
#[test]
fn refused_config_values_print_control_characters_escaped() {
    let dir = temp_dir("refused-escapes");
    let data = dir.join("prompts.jsonl");
    std::fs::write(&data, "{\"text_input\": \"hello\"}\n").unwrap();
    let config = MLPERF_OFFLINE
        .replace(
            "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
            &format!("'{}'", data.display()),
        )
        .replace("http://localhost:8000", r#""\x1b]0;owned\x07""#);
    let file = dir.join("refused.yaml");
    std::fs::write(&file, config).unwrap();
    let run = llmload(&["validate", file.to_str().unwrap()]).run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains(r"'\u{1b}]0;owned\u{7}': a URL must include its scheme"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(['\x1b', '\x07']), "{:?}", run.stderr);
}

/// M4: a timeline bucket's `interval` sized the merged timeline (4e9
/// tried to allocate 32 GB; u32::MAX wrapped and the bucket vanished):
/// refused, naming the shard and the field.
#[test]
fn merge_refuses_a_bucket_interval_past_the_shards_end() {
    use crate::faults::*;
    for interval in [4_000_000_000u64, u64::from(u32::MAX)] {
        let (_root, run) = merge_case("bucket-interval", false, |v| {
            v["state"]["timeline"]["slices"][0]["buckets"][0]["interval"] = interval.into();
        });
        assert_merge_refused(
            &run,
            2,
            &format!("buckets[0].interval {interval}: past the shard's end"),
        );
    }
}

/// M4: clocks placed a shard 3 years after the other (a bucket per
/// second between) or wrapped the offset between two clocks: refused.
#[test]
fn merge_refuses_shard_clocks_that_would_stretch_the_timeline() {
    use crate::faults::*;
    let (_root, run) = merge_case("clock-skew", false, |v| {
        let w = v["state"]["started_wall_ns"].as_u64().unwrap();
        v["state"]["started_wall_ns"] = (w + 100_000_000_000_000_000).into();
    });
    assert_merge_refused(&run, 2, "s after the earliest shard's start");
    let (_root, run) = merge_case("clock-wrap", false, |v| {
        v["state"]["started_wall_ns"] = 0.into();
        v["state"]["run_start_ns"] = u64::MAX.into();
    });
    assert_merge_refused(&run, 2, "state.run_start_ns");
}

/// M4: `shard.count` 10^8 made a list of 10^8 missing shards (4.8 GB):
/// merge takes the count bench allows.
#[test]
fn merge_refuses_a_shard_count_past_the_benchs_limit() {
    use crate::faults::*;
    let (_root, run) = merge_case("shard-count", true, |v| {
        v["shard"]["count"] = 100_000_000.into();
    });
    assert_merge_refused(
        &run,
        1,
        "shard.count 100000000: a run has 1 to 100000 shards",
    );
}

/// M4: a histogram text declaring a 2 GiB payload cost 2.1 GB and 6 s,
/// and in timeline buckets was silently left out: refused by its field,
/// before anything of that size is allocated.
#[test]
fn merge_checks_histogram_sizes_before_allocating() {
    use crate::faults::*;
    let (_root, run) = merge_case("hdr-declared", false, |v| {
        v["state"]["total"]["e2e"]["hist"] =
            hdr_text(1, 3_600_000_000_000, 3, 0x7fff_ffff, 0).into();
    });
    assert_merge_refused(&run, 2, "total.e2e: the encoding declares 2147483647");
    let (_root, run) = merge_case("hdr-bucket", false, |v| {
        v["state"]["timeline"]["slices"][0]["buckets"][0]["e2e_hist"] =
            hdr_text(1_000, 3_600_000_000_000, 2, 0x7fff_ffff, 0).into();
    });
    assert_merge_refused(
        &run,
        2,
        "buckets[0].e2e_hist: the encoding declares 2147483647",
    );
}

/// M4: every shard's decoded run was held to the end (19 MB a shard; 300
/// shards took 5.7 GB): 200 shards now merge under a 1 GiB cap.
#[test]
fn merge_memory_does_not_grow_with_the_shards() {
    use crate::faults::*;
    let root = two_shards("many");
    let from = root.join("shard-1");
    let n = 200u32;
    for i in 1..=n {
        let dir = root.join(format!("s{i:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(from.join("summary.json"), dir.join("summary.json")).unwrap();
        edit_summary(&dir, |v| {
            v["shard"]["index"] = i.into();
            v["shard"]["count"] = n.into();
        });
    }
    std::fs::remove_dir_all(&from).unwrap();
    std::fs::remove_dir_all(root.join("shard-2")).unwrap();
    let run = merge_capped(&root, Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let one: serde_json::Value =
        serde_json::from_str(&read(&root.join("s001/summary.json"))).unwrap();
    let all: serde_json::Value =
        serde_json::from_str(&read(&root.join("merged/summary.json"))).unwrap();
    assert_eq!(
        u(&all["requests"]["completed"]),
        u64::from(n) * u(&one["requests"]["completed"])
    );
}

/// L12: `completed` u64::MAX in two shards wrapped, `sum` u128::MAX made a
/// mean of 4e30 ms, `issued` 0 left issued below completed — each merged
/// as "complete", exit 0. The shard is left out and the run incomplete.
#[test]
fn merge_of_inconsistent_counts_is_incomplete_naming_the_shard() {
    use crate::faults::*;
    let edits: [(&str, Edit, &str); 3] = [
        (
            "completed",
            Box::new(|v| v["state"]["total"]["completed"] = u64::MAX.into()),
            "total.completed 18446744073709551615",
        ),
        (
            "sum",
            Box::new(|v| v["state"]["total"]["e2e"]["sum"] = u128::MAX.to_string().into()),
            "total.e2e.sum",
        ),
        (
            "issued",
            Box::new(|v| v["state"]["total"]["issued"] = 0.into()),
            "of 0 issued",
        ),
    ];
    for (tag, edit, why) in edits {
        let (root, run) = merge_case(tag, false, edit);
        assert_merge_left_out(&root, &run, 2, why);
    }
}

/// L10 and M4: ten links back to a shard's directory inside it (10^8
/// paths at depth 8; 3.9 GB) and a `self -> .`: each directory once.
#[test]
fn merge_follows_links_back_into_the_tree_once() {
    use crate::faults::*;
    let root = two_shards("links-back");
    for k in 0..10 {
        std::os::unix::fs::symlink("../shard-1", root.join(format!("shard-1/l{k}"))).unwrap();
    }
    std::os::unix::fs::symlink(".", root.join("shard-2/self")).unwrap();
    let run = merge_capped(&root, Duration::from_secs(10));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// Worker loss: the survivors of a closed loop took over a killed worker's
/// virtual users but only had their own connections, so the users queued
/// behind each other and every request after the loss took two TTFTs. Now
/// the survivors open the connections those users need, and latency after
/// the loss stays the server's; the run still says which worker was lost.
#[test]
fn a_lost_workers_virtual_users_do_not_queue_on_the_survivors() {
    const TTFT_MS: f64 = 250.0;
    let server = Server::start(&["--ttft", "250ms", "--tpot", "1ms"]);
    let url = server.url();
    let (child, out) = llmload(&["bench", "--endpoint", &url, "--model", "m"])
        .args(["--workers", "3", "--concurrency", "9", "--duration", "4s"])
        .args(["--warmup", "0s", "--max-tokens", "8", "--quiet"])
        .fresh_out("worker-loss")
        .spawn();
    let workers = crate::crash::workers_of(&child, 3);
    std::thread::sleep(Duration::from_millis(1500));
    sigkill(workers[0]);
    let killed_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3;
    let run = wait_run(child, out, Duration::from_secs(60));
    assert_eq!(run.status.code(), Some(3), "{}", run.stderr);
    let s = run.summary();
    let reasons = s["incomplete_reasons"].to_string();
    assert!(
        reasons.contains(&format!("(pid {})", workers[0])) && reasons.contains("signal 9"),
        "{reasons}"
    );
    let report = read(&run.out.join("report.txt"));
    assert!(
        report.contains(&format!("(pid {}) was killed by signal 9", workers[0])),
        "{report}"
    );
    // Requests scheduled after the parent noticed the loss (it looks every
    // 20 ms): e2e counts from the schedule, so a queue shows in it.
    let events = read(&run.out.join("events.jsonl"));
    let mut after: Vec<f64> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["error"].is_null() && f(&e["scheduled_ms"]) > killed_ms + 100.0)
        .map(|e| f(&e["latency_ms"]))
        .collect();
    after.sort_by(f64::total_cmp);
    // 9 users for about 2.4 s at ~260 ms each.
    assert!(after.len() >= 40, "{} requests after the loss", after.len());
    let p90 = after[after.len() * 9 / 10];
    assert!(
        p90 <= 1.3 * TTFT_MS,
        "e2e p90 after the loss {p90:.1} ms: {after:?}"
    );
    // The survivors kept all 9 users going.
    assert_eq!(u(&s["generator"]["max_inflight"]), 9, "{}", s["generator"]);
}

/// L5: a SIGINT while a shard waited for `--start-at` ended the run with
/// nothing issued, yet its summary had a negative `start_late_ns` and its
/// report said "started -5631 ms after --start-at". It now says the run
/// was interrupted before it began.
#[test]
fn an_interrupt_before_start_at_is_not_reported_as_an_early_start() {
    let server = Server::start(&[]);
    let out = temp_dir("start-at-interrupt");
    let (at, _) = start_in(30_000);
    let child = spawn_shard(
        &server,
        1,
        2,
        &out,
        &["--start-at", &at, "--duration", "1s"],
    );
    crate::crash::workers_of(&child, 1);
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, libc::SIGINT);
    let run = wait_run(child, out, Duration::from_secs(20));
    assert_eq!(run.status.code(), Some(130), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(u(&s["requests"]["issued"]), 0, "{}", s["requests"]);
    assert_eq!(s["interrupted"], true);
    assert_eq!(
        s["shard"]["start_late_ns"],
        serde_json::Value::Null,
        "{}",
        s["shard"]
    );
    let reasons = s["incomplete_reasons"].to_string();
    assert!(
        reasons.contains("while waiting for --start-at"),
        "{reasons}"
    );
    let report = read(&run.out.join("report.txt"));
    assert!(report.contains("interrupted before --start-at"), "{report}");
    assert!(!report.contains("ms after --start-at"), "{report}");
}

/// A TLS server on 127.0.0.1 with `pki`'s leaf (for `localhost`): each
/// connection completes its handshake and reads one request, then
/// `answer` does what a broken server does with the TLS stream.
fn tls_fake(
    pki: &crate::pki::Pki,
    answer: fn(&mut rustls::StreamOwned<rustls::ServerConnection, std::net::TcpStream>),
) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::Read;
    let certs = CertificateDer::pem_file_iter(&pki.cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(&pki.key).unwrap();
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for sock in l.incoming() {
            let Ok(sock) = sock else { return };
            let config = config.clone();
            std::thread::spawn(move || {
                sock.set_read_timeout(Some(Duration::from_secs(20)))
                    .unwrap();
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut s = rustls::StreamOwned::new(conn, sock);
                let (mut buf, mut chunk) = (Vec::new(), [0u8; 8192]);
                while crate::failures::request_len(&buf).is_none() {
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                answer(&mut s);
            });
        }
    });
    port
}

/// One request to `https://localhost:PORT` with `--ca-cert CA`, and a
/// system trust store of `store` only.
fn bench_tls(port: u16, ca: &std::path::Path, store: &std::path::Path) -> Run {
    let url = format!("https://localhost:{port}");
    llmload(&[
        "bench",
        "--endpoint",
        &url,
        "--model",
        "m",
        "--requests",
        "1",
    ])
    .args(["--ca-cert", ca.to_str().unwrap(), "--quiet"])
    .env("SSL_CERT_FILE", store)
    .env_remove("SSL_CERT_DIR")
    .fresh_out("tls-bench")
    .limit(Duration::from_secs(30))
    .run()
}

/// The one request's failure: its class and message.
fn only_failure(run: &Run) -> (String, String) {
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    let s = run.summary();
    let errors = s["requests"]["errors"].as_object().unwrap().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let class = errors.keys().next().unwrap().clone();
    let msgs = s["error_messages"][&class].to_string();
    (class, msgs)
}

/// L8: over TLS, a chunked stream cut by the server's TCP close without
/// `close_notify` failed as `reset` with an empty message; the reason
/// rustls gives is now the message.
#[test]
fn a_tls_stream_cut_without_close_notify_says_so() {
    use std::io::Write;
    let pki = crate::pki::Pki::new(&temp_dir("pki"));
    let port = tls_fake(&pki, |s| {
        let ev =
            b"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\
            \"delta\":{\"content\":\"tok \"},\"finish_reason\":null}]}\n\n";
        let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
            transfer-encoding: chunked\r\n\r\n"
            .to_vec();
        for _ in 0..3 {
            out.extend_from_slice(format!("{:x}\r\n", ev.len()).as_bytes());
            out.extend_from_slice(ev);
            out.extend_from_slice(b"\r\n");
        }
        let _ = s.write_all(&out);
        let _ = s.flush();
        std::thread::sleep(Duration::from_millis(50));
        let _ = s.sock.shutdown(std::net::Shutdown::Both);
    });
    let (class, msgs) = only_failure(&bench_tls(port, &pki.ca, &pki.other_ca));
    assert_eq!(class, "reset", "{msgs}");
    assert!(msgs.contains("without sending TLS close_notify"), "{msgs}");
}

/// L8's other case: plaintext bytes from the server after the TLS
/// handshake are named by rustls's reason, not an empty `reset`. (The
/// review's fake never sent its plaintext: its raw socket was already
/// wrapped, so it closed without `close_notify`, the case above.)
#[test]
fn plaintext_after_the_tls_handshake_is_named() {
    use std::io::Write;
    let pki = crate::pki::Pki::new(&temp_dir("pki"));
    let port = tls_fake(&pki, |s| {
        let _ = s
            .sock
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        std::thread::sleep(Duration::from_millis(500));
    });
    let (class, msgs) = only_failure(&bench_tls(port, &pki.ca, &pki.other_ca));
    assert!(msgs.contains("not TLS"), "{class}: {msgs}");
}

/// L4: a self-signed certificate as `openssl req -x509` makes it (basic
/// constraints CA:TRUE), trusted with `--ca-cert`, failed with webpki's
/// Debug text "invalid certificate: Other(OtherError(CaUsedAsEndEntity))".
/// The message now says what is wrong and what to do.
#[test]
fn a_ca_certificate_as_the_servers_own_is_explained() {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let dir = temp_dir("ca-as-leaf");
    let mut p = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    p.distinguished_name.push(DnType::CommonName, "localhost");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    let (cert_path, key_path) = (dir.join("self.pem"), dir.join("self.key"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let server = tls_server(&cert_path, &key_path, &[]);
    let run = bench_tls(server.addr.port(), &cert_path, &cert_path);
    let (class, msgs) = only_failure(&run);
    assert_eq!(class, "tls_handshake", "{msgs}");
    assert!(
        msgs.contains("is a CA's (CA:TRUE")
            && msgs.contains("leaf signed by that CA")
            && msgs.contains("--insecure"),
        "{msgs}"
    );
    assert!(!msgs.contains("Other("), "{msgs}");
}

/// A loopback URL nothing listens on: a port bound, then released.
fn nothing_listening() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

/// The cause line bench prints when `--fail-fast` stopped it.
const STOPPED: &str = "llmload bench: stopped early (--fail-fast; --no-fail-fast runs on): ";

/// Asserts `run` stopped early, after a handful of requests and well
/// before its 30 s, with `cause` printed and in the summary.
fn assert_failed_fast(run: &Run, error: &str, cause: &str) {
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
    assert!(
        run.stderr.contains(&format!("{STOPPED}{cause}")),
        "{}",
        run.stderr
    );
    let s = run.summary();
    assert_eq!(s["stopped_early"], true, "{s}");
    assert_eq!(s["complete"], false, "{s}");
    let reason = s["incomplete_reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with(&format!(
            "stopped early (--fail-fast): the first 8 requests all failed with {error}: {cause}"
        )),
        "{reason}"
    );
    let issued = u(&s["requests"]["issued"]);
    assert!((8..=1000).contains(&issued), "{issued} requests");
    assert_eq!(u(&s["requests"]["completed"]), 0);
    assert_eq!(u(&s["requests"]["errors"][error]), issued, "{s}");
    let events = std::fs::metadata(run.out.join("events.jsonl"))
        .unwrap()
        .len();
    assert!(events < 1 << 20, "events.jsonl is {events} bytes");
}

/// A wrong port sent 334,717 refused requests in 3 s and wrote a 195 MB
/// events.jsonl: the run now stops at its first requests, saying why in
/// probe's words.
#[test]
fn a_wrong_port_fails_fast_with_probes_cause() {
    let url = nothing_listening();
    let addr = url.trim_start_matches("http://").to_string();
    let run = bench(
        &["--endpoint", &url, "--model", "m", "--duration", "30s"],
        Duration::from_secs(60),
    );
    assert_failed_fast(
        &run,
        "connect_refused",
        &format!(
            "connection refused at {addr}: nothing is listening; is the server running and the port right?"
        ),
    );
    // Stopped in its warm-up, it measured nothing, and failed all the same.
    let run = bench(
        &["--endpoint", &url, "--model", "m", "--warmup", "20s"],
        Duration::from_secs(60),
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
    assert_eq!(run.summary()["stopped_early"], true);
    // --no-fail-fast: the run as asked, to its end.
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--duration",
            "1s",
            "--no-fail-fast",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.elapsed >= Duration::from_secs(1), "{:?}", run.elapsed);
    assert!(!run.stderr.contains(STOPPED), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["stopped_early"], false, "{s}");
    assert!(u(&s["requests"]["issued"]) > 8, "{}", s["requests"]);
}

/// A wrong path, missing credentials with --model given and a model the
/// server does not serve each ran the whole duration: each now stops at
/// once with the fix.
#[test]
fn a_wrong_path_credentials_or_model_fail_fast() {
    let server = Server::start(&["--served-model", "llama-3", "--api-key", "sekret"]);
    let base = server.url();
    let path = format!("{base}/v1/chat/completion");
    let chat = format!("{base}/v1/chat/completions");
    let cases: [(&[&str], &str, String); 3] = [
        (
            &[
                "--endpoint",
                &path,
                "--api-key",
                "sekret",
                "--model",
                "llama-3",
            ],
            "http_404",
            "POST /v1/chat/completion → 404: this server does not serve openai-chat at that path"
                .to_string(),
        ),
        (
            &["--endpoint", &chat, "--model", "llama-3"],
            "http_401",
            "POST /v1/chat/completions → 401: authentication failed: pass --api-key or --header"
                .to_string(),
        ),
        (
            &[
                "--endpoint",
                &chat,
                "--api-key",
                "sekret",
                "--model",
                "llama-4",
            ],
            "http_404",
            "POST /v1/chat/completions → 404: model 'llama-4' is not served; served: llama-3"
                .to_string(),
        ),
    ];
    for (args, error, cause) in cases {
        let mut all = args.to_vec();
        all.extend(["--duration", "30s"]);
        let run = bench(&all, Duration::from_secs(60));
        assert_failed_fast(&run, error, &cause);
    }
}

/// A run against a closed port with --no-fail-fast said `status: complete`
/// and advised "raise --connections" for a server that was down: now the
/// status says every request failed, first, and no generator limit is
/// blamed on the generator.
#[test]
fn a_run_where_every_request_failed_says_so_and_blames_no_generator() {
    let url = nothing_listening();
    let run = llmload(&["bench", "--endpoint", &url, "--model", "m"])
        .args(["--rate", "2000", "--duration", "1s", "--connections", "4"])
        .args(["--no-fail-fast"])
        .fresh_out("all-failed")
        .limit(Duration::from_secs(60))
        .run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    let report = read(&run.out.join("report.txt"));
    let status = report.lines().nth(1).unwrap();
    assert!(
        status.starts_with("status: FAILED: every request failed ("),
        "{status}"
    );
    assert!(!report.contains("raise --connections"), "{report}");
    let s = run.summary();
    assert_eq!(
        s["generator"]["limited_by_generator"], false,
        "{}",
        s["generator"]
    );
    let html = read(&run.out.join("report.html"));
    assert!(html.contains("data-status=\"all-failed\""));
    assert!(!html.contains("<strong>Complete</strong>"));
    // The terminal's last lines say it too.
    let tail: Vec<&str> = run.stdout.lines().rev().take(6).collect();
    assert!(
        tail.iter()
            .any(|l| l.starts_with("status      FAILED: every request failed")),
        "{}",
        run.stdout
    );
}

/// Offline runs queue by definition (every request is due at t=0), yet
/// the report warned that the generator limited them.
#[test]
fn an_offline_burst_is_not_called_generator_limited() {
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--mode",
            "offline",
            "--requests",
            "400",
            "--connections",
            "4",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    // Everything is due at t=0: the sends' lateness is the queue itself.
    assert!(
        f(&s["generator"]["send_lateness_us"]["p99"]) > 1000.0,
        "{}",
        s["generator"]
    );
    assert_eq!(
        s["generator"]["limited_by_generator"], false,
        "{}",
        s["generator"]
    );
    let report = read(&run.out.join("report.txt"));
    assert!(!report.contains("raise --connections"), "{report}");
}

/// The end of a run on a terminal was 65 lines of definitions: the
/// headline (status, throughput, latency percentiles, failures) comes
/// last now, the definitions stay in report.txt and behind --verbose.
#[test]
fn the_terminal_ends_with_the_headline() {
    let server = Server::start(&[]);
    let url = server.url();
    let args = [
        "bench",
        "--endpoint",
        &url,
        "--model",
        "m",
        "--requests",
        "5",
    ];
    let run = llmload(&args).fresh_out("headline").run();
    run.assert_success();
    let lines: Vec<&str> = run.stdout.lines().collect();
    let n = lines.len();
    assert_eq!(lines[n - 5], "== result ==", "{}", run.stdout);
    assert_eq!(lines[n - 4], "status      complete", "{}", run.stdout);
    assert!(lines[n - 3].starts_with("throughput  "), "{}", run.stdout);
    assert!(
        lines[n - 2].starts_with("ms p50/p99  ttft "),
        "{}",
        run.stdout
    );
    assert!(lines[n - 2].contains(" e2e "), "{}", run.stdout);
    assert_eq!(lines[n - 1], "failures    0 of 5");
    assert!(
        !run.stdout
            .contains("how each tool counts (DESIGN.md has every cell):"),
        "{}",
        run.stdout
    );
    let report = read(&run.out.join("report.txt"));
    assert!(report.contains("how each tool counts (DESIGN.md has every cell):"));
    let verbose = llmload(&args)
        .args(["--verbose"])
        .fresh_out("headline")
        .run();
    assert!(
        verbose
            .stdout
            .contains("how each tool counts (DESIGN.md has every cell):")
    );
}

/// A mistyped flag got `Unrecognized argument: --concurency`, and
/// `--version` did not exist.
#[test]
fn a_typo_gets_the_nearest_flag_and_version_is_known() {
    let run = llmload(&["bench", "--concurency", "8"]).run();
    assert_eq!(run.status.code(), Some(1));
    assert_eq!(
        run.stderr.trim(),
        "llmload bench: unknown flag --concurency: did you mean --concurrency? \
         (llmload bench --help lists every flag)"
    );
    let run = llmload(&["probe", "--endpiont", "http://x"]).run();
    assert_eq!(run.status.code(), Some(2));
    assert!(
        run.stderr.contains("did you mean --endpoint?"),
        "{}",
        run.stderr
    );
    for flag in ["--version", "-V"] {
        let run = llmload(&[flag]).run();
        run.assert_success();
        assert_eq!(
            run.stdout,
            format!("llmload {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

/// `--endpoint http://host:8000/v1`, the base URL OpenAI's SDKs take, was
/// sent as the request path: 100 % http_404.
#[test]
fn a_v1_base_url_reaches_the_apis_path() {
    let server = Server::start(&[]);
    for base in ["/v1", "/v1/"] {
        let url = format!("{}{base}", server.url());
        let run = bench(
            &["--endpoint", &url, "--model", "m", "--requests", "4"],
            Duration::from_secs(30),
        );
        run.assert_success();
        assert_eq!(u(&run.summary()["requests"]["completed"]), 4);
    }
}

/// probe's "ready to benchmark" command over https dropped --ca-cert, so
/// copying it failed every handshake.
#[test]
fn probes_bench_command_keeps_the_tls_flags() {
    let dir = temp_dir("probe-tls-command");
    let pki = crate::pki::Pki::new(&dir);
    let server = tls_server(&pki.cert, &pki.key, &[]);
    let url = server.url();
    let ca = pki.ca.to_str().unwrap();
    let run = crate::probe::probe_env(&["--endpoint", &url, "--ca-cert", ca], &[]);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("ok: ready to benchmark: "))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(line.ends_with(&format!(" --ca-cert {ca}")), "{line}");
    let command = line.trim_start_matches("ok: ready to benchmark: llmload bench ");
    let args: Vec<&str> = command.split(' ').collect();
    let mut all = args.clone();
    all.extend(["--requests", "4"]);
    let run = bench(&all, Duration::from_secs(30));
    run.assert_success();
}

/// A ShareGPT file was sent as each whole recorded conversation, ending
/// with the assistant's own reply; it is now the first human turn, with
/// the reply's length as the output length (as vLLM's `bench serve` and
/// aiperf send it), unless `sharegpt=whole` asks for the recording.
#[test]
fn sharegpt_rows_send_the_first_human_turn() {
    let dir = temp_dir("sharegpt");
    let data = dir.join("sg.jsonl");
    std::fs::write(
        &data,
        r#"{"id": "a", "conversations": [{"from": "human", "value": "Q1"}, {"from": "gpt", "value": "one two three"}, {"from": "human", "value": "Q2"}, {"from": "gpt", "value": "r"}]}
"#,
    )
    .unwrap();
    for (spec, messages, max_tokens) in [
        (
            data.display().to_string(),
            serde_json::json!([{"role": "user", "content": "Q1"}]),
            4,
        ),
        (
            format!("{},sharegpt=whole", data.display()),
            serde_json::json!([
                {"role": "user", "content": "Q1"},
                {"role": "assistant", "content": "one two three"},
                {"role": "user", "content": "Q2"},
                {"role": "assistant", "content": "r"}
            ]),
            128,
        ),
    ] {
        let server = RawServer::start(|s, _| {
            json_200(s, CHAT_BODY);
            Then::Next
        });
        let url = server.url();
        let run = bench(
            &[
                "--endpoint",
                &url,
                "--model",
                "m",
                "--requests",
                "1",
                "--dataset",
                &spec,
                "--server-metrics",
                "off",
                "--no-stream",
                "--cache-mode",
                "natural",
            ],
            Duration::from_secs(30),
        );
        run.assert_success();
        let got = server.received();
        let body = got
            .iter()
            .find(|r| r.text.starts_with("POST"))
            .unwrap()
            .body();
        assert_eq!(body["messages"], messages, "{spec}");
        assert_eq!(body["max_tokens"], max_tokens, "{spec}");
    }
}

/// M3(a): a changed footer byte (a negative column offset) given as an
/// accuracy dataset is refused naming the file; it panicked inside the
/// parquet crate (exit 101).
#[cfg(feature = "columnar")]
#[test]
fn a_corrupt_parquet_accuracy_dataset_is_refused_not_a_panic() {
    let dir = temp_dir("m3a-accuracy");
    let file = dir.join("panic.parquet");
    crate::util::columnar::negative_offset_parquet(&file);
    let run = crate::faults::bench_nowhere(&[
        "--phase",
        "acc",
        "--accuracy-dataset",
        &format!("{},expected=answer,name=qa", file.display()),
    ]);
    assert_refused(
        &run,
        &file,
        "the file's footer puts the column's data at offset -1",
    );
}

/// M3(b): 100 KB of random bytes as a Hugging Face data file cost 2.1 GB
/// and 5.6 s before its error: now refused at once from its first length.
#[cfg(feature = "columnar")]
#[test]
fn random_bytes_as_an_arrow_file_are_refused_at_once() {
    let dir = temp_dir("m3b-random");
    let mut rng = llmload::rng::Rng::seeded(7);
    let bytes: Vec<u8> = (0..100_000).map(|_| rng.below(256) as u8).collect();
    let file = crate::util::columnar::hf_dir(&dir.join("hb"), &bytes);
    let hb = format!("{},format=hf", dir.join("hb").display());
    let run = crate::faults::bench_nowhere(&["--requests", "1", "--dataset", &hb]);
    assert_refused(&run, &file, "(the file is cut or corrupt)");
}

/// M3(c): a cell over the 64 MiB cap in a Hugging Face file is an error
/// naming the row and column, as a JSONL line over it is.
#[cfg(feature = "columnar")]
#[test]
fn an_arrow_cell_over_64_mib_is_named_by_row_and_column() {
    use crate::util::columnar::*;
    let dir = temp_dir("m3c-cell");
    let stream = arrow_stream(&prompts(["small".to_string(), "z".repeat(65 << 20)]));
    hf_dir(&dir.join("big"), &stream);
    drop(stream);
    let shown = dir.join("big");
    let hf = format!("{},format=hf", shown.display());
    let run =
        crate::faults::bench_nowhere(&["--requests", "1", "--order", "shuffle", "--dataset", &hf]);
    assert_refused(
        &run,
        &shown,
        "row 1: column 'prompt': a value over 67108864 bytes, more than one cell may hold",
    );
}

/// M3(d): the loop that reads Parquet rows reads JSONL lines too: a
/// million lines with `--requests 1` are no longer all read and
/// serialized, and a bad line past the one used does not stop the run.
#[test]
fn one_request_reads_one_jsonl_line_of_a_million() {
    let dir = temp_dir("m3d-jsonl");
    let file = dir.join("million.jsonl");
    let mut text: String = (0..1_000_000)
        .map(|i| format!("{{\"prompt\": \"w{i}\"}}\n"))
        .collect();
    text.push_str("not json\n");
    std::fs::write(&file, text).unwrap();
    let s = crate::faults::one_request_on(&file, &dir);
    assert_eq!(u(&s["dataset"]["samples"]), 1, "{}", s["dataset"]);
}

/// L7: a NaN float prompt is said to be NaN, not null; and a file whose
/// only prompt-like column is mapped to expected= says so.
#[cfg(feature = "columnar")]
#[test]
fn nan_prompts_and_a_prompt_column_mapped_elsewhere_are_named() {
    use crate::util::columnar::*;
    let dir = temp_dir("l7-messages");
    let nan = dir.join("nan.parquet");
    parquet(&nan, &float_prompts(&[f64::NAN]));
    let run =
        crate::faults::bench_nowhere(&["--requests", "1", "--dataset", nan.to_str().unwrap()]);
    assert_refused(
        &run,
        &nan,
        "row 0: field 'prompt': expected a non-empty string, found NaN (column 'prompt' holds \
         Float64 numbers)",
    );
    let only = dir.join("only.parquet");
    parquet(&only, &prompts(["a"]));
    let run = crate::faults::bench_nowhere(&[
        "--phase",
        "acc",
        "--accuracy-dataset",
        &format!("{},expected=prompt,name=qa", only.display()),
    ]);
    assert_refused(
        &run,
        &only,
        "no column left for the prompt: 'prompt' is mapped to expected=prompt",
    );
}

/// Fuzz finding 6 (docs/FUZZING.md): corrupt definition levels inside a
/// data page panicked in the parquet crate mid-decode (exit 101, an abort
/// in the dist build), past every check made before the reader runs.
#[cfg(feature = "columnar")]
#[test]
fn corrupt_definition_levels_in_a_parquet_page_are_refused_not_a_panic() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/columnar/corrupt-def-levels.parquet");
    let run =
        crate::faults::bench_nowhere(&["--requests", "1", "--dataset", file.to_str().unwrap()]);
    assert_refused(
        &run,
        &file,
        "row 0: cannot decode: the decoder failed on malformed data (offset + len out of bounds)",
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// `llmload validate` on an MLPerf config printed what `${VAR}`
/// substitution put into it: the success summary showed the substituted
/// model name, and a refused field quoted its substituted value. Neither
/// may show what came from the environment or under a credential's key.
#[test]
fn mlperf_validate_never_prints_what_came_from_the_environment() {
    let dir = temp_dir("mlperf-redact");
    let ok = dir.join("ok.yaml");
    std::fs::write(
        &ok,
        "type: online\nmodel_params: {name: '${SECRET_MODEL}'}\n\
         endpoint_config: {endpoints: ['http://127.0.0.1:9']}\n\
         settings:\n  load_pattern: {type: poisson, target_qps: 5}\n\
         \x20 client: {log_level: '${SECRET_LEVEL}'}\n",
    )
    .unwrap();
    let run = llmload(&["validate", ok.to_str().unwrap()])
        .envs(&[
            ("SECRET_MODEL", "model-sekrit-4242"),
            ("SECRET_LEVEL", "level-sekrit-4242"),
        ])
        .out(&dir)
        .run();
    run.assert_success();
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("<redacted>"), "{all}");
    assert!(!all.contains("sekrit-4242"), "{all}");

    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "type: online\nmodel_params: {name: m}\n\
         endpoint_config: {endpoints: ['http://127.0.0.1:9']}\n\
         settings:\n  load_pattern: {type: poisson, target_qps: 5}\n\
         \x20 profiling: {engine: '${SECRET_ENGINE}'}\n\
         datasets:\n- {path: x.jsonl, type: accuracy, generate_params: {auth_token: plain-sekrit-4242}}\n",
    )
    .unwrap();
    let run = llmload(&["validate", bad.to_str().unwrap()])
        .env("SECRET_ENGINE", "engine-sekrit-4242")
        .out(&dir)
        .run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("settings.profiling.engine"),
        "{}",
        run.stderr
    );
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(!all.contains("sekrit-4242"), "{all}");
}

/// `llmload init offline`, MLPerf's command for its offline template,
/// wrote llmload's JSON profile into a file named `offline` (exit 0), and
/// the documented next step (`validate-yaml --config
/// offline_template.yaml`) found nothing; MLPerf's `-v` after the
/// subcommand was refused as the config field `verbose`.
#[test]
fn init_offline_writes_mlperf_template_and_trailing_v_is_verbosity() {
    let dir = temp_dir("init-offline");
    let run = llmload(&["init", "offline"]).current_dir(&dir).run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(!dir.join("offline").exists(), "a file named offline");
    let text = read(&dir.join("offline_template.yaml"));
    assert!(text.contains("type: offline"), "{text}");
    let run = llmload(&["validate-yaml", "--config", "offline_template.yaml", "-v"])
        .current_dir(&dir)
        .run();
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("Config valid: offline_benchmark"),
        "{}",
        run.stdout
    );
}

/// An MLPerf accuracy dataset whose prompt column holds numbers and is
/// also its ground truth runs as in MLPerf (the numbers sent as their
/// text, each reply scored against its own prompt): it was refused twice,
/// for the number and for the column mapped twice.
#[test]
fn mlperf_accuracy_takes_number_prompts_and_a_prompt_that_is_the_reference() {
    let server = Server::start(&["--echo", "--ttft", "1ms"]);
    let dir = temp_dir("mlperf-number-prompts");
    let data = dir.join("answers.jsonl");
    std::fs::write(
        &data,
        "{\"answer\": 750}\n{\"answer\": \"seven\"}\n{\"answer\": 2.5}\n",
    )
    .unwrap();
    let out = dir.join("report");
    let config = format!(
        "name: ident\ntype: eval\nmodel_params: {{name: m, max_new_tokens: 8}}\n\
         datasets:\n- name: ident\n  type: accuracy\n  path: '{}'\n  parser: {{prompt: answer}}\n  \
         accuracy_config: {{eval_method: string_match, ground_truth: answer}}\n\
         endpoint_config: {{endpoints: ['{}']}}\nreport_dir: '{}'\n",
        data.display(),
        server.url(),
        out.display(),
    );
    let path = dir.join("ident.yaml");
    std::fs::write(&path, config).unwrap();
    let run = llmload(&["benchmark", "from-config", "-c", path.to_str().unwrap()])
        .out(&out)
        .limit(Duration::from_secs(30))
        .run();
    run.assert_success();
    let results: serde_json::Value =
        serde_json::from_str(&read(&out.join("accuracy/accuracy_results.json"))).unwrap();
    let e = &results["accuracy_scores"][0];
    assert_eq!(u(&e["total_samples"]), 3, "{results}");
    assert_eq!(e["score"], 1.0, "{results}");
}

/// `validate-yaml` printed the config's name and the run's would-be
/// refusals with what `${VAR}` substitution put into them (a dataset path
/// from the environment appeared in "no such file"), where `validate`
/// redacts both.
#[test]
fn mlperf_validate_yaml_never_prints_what_came_from_the_environment() {
    let dir = temp_dir("mlperf-redact-yaml");
    let yaml = dir.join("c.yaml");
    std::fs::write(
        &yaml,
        "name: '${SECRET_NAME}'\ntype: online\nmodel_params: {name: m}\n\
         endpoint_config: {endpoints: ['http://127.0.0.1:9']}\n\
         settings:\n  load_pattern: {type: poisson, target_qps: 5}\n\
         datasets:\n- {path: '${SECRET_PATH}', type: performance}\n",
    )
    .unwrap();
    let run = llmload(&["validate-yaml", "-c", yaml.to_str().unwrap()])
        .envs(&[
            ("SECRET_NAME", "name-sekrit-4242"),
            ("SECRET_PATH", "/nowhere/path-sekrit-4242.jsonl"),
        ])
        .out(&dir)
        .run();
    run.assert_success();
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("Config valid: <redacted>"), "{all}");
    assert!(all.contains("warning: the run would refuse"), "{all}");
    assert!(!all.contains("sekrit-4242"), "{all}");
}
