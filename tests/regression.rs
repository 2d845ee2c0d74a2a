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
/// stops at its budget, in a run bounded at 20 s, with a warning naming
/// the template's file and the budget it passed.
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
        run.assert_success();
        let warning = format!(
            "the chat template failed on 2 message prompt(s), counted as plain text instead \
             (first: the chat template of {} {why}",
            config_path.display()
        );
        assert!(run.stderr.contains(&warning), "{name}: {}", run.stderr);
        assert_eq!(u(&run.summary()["requests"]["completed"]), 2);
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

/// M3(a): a changed footer byte (a negative column offset) given as an
/// accuracy dataset is refused naming the file; it panicked inside the
/// parquet crate (exit 101, or an abort in the dist build).
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
