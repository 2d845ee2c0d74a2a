//! Profiles with stages and weighted scenarios: multi-turn conversations,
//! cache-busting ids, checks, thresholds, and every output file, against
//! the built-in endpoint (or a capturing test server where the test must see
//! the exact bytes sent).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::*;

fn write_profile(dir: &Path, json: &serde_json::Value) -> String {
    let p = dir.join("run.json");
    std::fs::write(&p, serde_json::to_string_pretty(json).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

fn events(out: &Path) -> Vec<serde_json::Value> {
    read(&out.join("events.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad events line {l}: {e}")))
        .collect()
}

fn three_scenarios() -> serde_json::Value {
    serde_json::json!({
        "model": "demo",
        "max_tokens": 8,
        "warmup": "0s",
        "arrival": "poisson",
        "live_interval": "0",
        "stages": [
            {"name": "closed", "concurrency": 6, "duration": "2s"},
            {"name": "open", "rate": 40, "duration": "2s"},
            {"name": "ramp", "rate_from": 10, "rate_to": 50, "duration": "2s"}
        ],
        "scenarios": [
            {"name": "chat", "weight": 50, "turns": {"min": 2, "max": 3},
             "content": {"mode": "scripted", "script": ["Hi", "tell me more", "and then?"]}},
            {"name": "qa", "weight": 30, "stream": false, "max_tokens": 4,
             "content": {"mode": "pool", "prompts": ["What is 2+2?", "Name a color."]},
             "checks": {"min_completion_tokens": 1, "max_completion_tokens": 4}},
            {"name": "long", "weight": 20, "content": {"mode": "sized", "approx_input_tokens": 300}}
        ]
    })
}

#[test]
fn profile_with_three_scenarios_over_three_stages() {
    let server = Server::start(&["--ttft", "2ms", "--tpot", "1ms"]);
    let dir = temp_dir("profile3");
    let profile = write_profile(&dir, &three_scenarios());
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_accounted(&s["requests"]);
    let stages = s["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 3);
    for st in stages {
        assert_accounted(&st["requests"]);
        assert!(u(&st["requests"]["completed"]) > 10, "{}", st["name"]);
        let names: Vec<_> = st["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].clone())
            .collect();
        assert_eq!(names, vec!["chat", "qa", "long"]);
        let sum: u64 = st["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| u(&x["requests"]["issued"]))
            .sum();
        assert_eq!(sum, u(&st["requests"]["issued"]));
    }
    assert_eq!(u(&s["requests"]["failed"]), 0, "{}", s["requests"]);
    // Open stage: about 40/s × 2 s conversation starts (chat ones have 2–3 turns).
    let open = &stages[1];
    assert_eq!(open["load"]["mode"], "poisson");
    // Multi-turn: a conversation's turns carry a growing history, which the
    // built-in endpoint counts as prompt tokens.
    let ev = events(&run.out);
    assert_eq!(
        ev.len() as u64,
        u(&s["requests"]["issued"]) + u(&s["warmup"]["issued"])
    );
    let mut by_conv: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    for e in ev.iter().filter(|e| e["scenario"] == "chat") {
        by_conv
            .entry(e["conversation_id"].as_str().unwrap().to_string())
            .or_default()
            .push((u(&e["turn"]), u(&e["prompt_tokens"])));
    }
    let multi: Vec<_> = by_conv.values().filter(|t| t.len() >= 2).collect();
    assert!(multi.len() > 5, "{by_conv:?}");
    for turns in multi {
        let mut t = turns.clone();
        t.sort();
        assert_eq!(t[0].0, 1);
        for w in t.windows(2) {
            assert_eq!(w[1].0, w[0].0 + 1, "{t:?}");
            assert!(w[1].1 > w[0].1, "history grows: {t:?}");
        }
    }
    // Sized prompts: ~300 tokens by the characters-per-token ratio.
    let long = s["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "long")
        .unwrap();
    assert!(
        f(&long["tokens"]["input_per_request_mean"]) > 100.0,
        "{}",
        long["tokens"]
    );
    // Outputs.
    for f in [
        "summary.json",
        "report.txt",
        "report.csv",
        "metrics.prom",
        "events.jsonl",
    ] {
        assert!(run.out.join(f).exists(), "{f} missing");
    }
    let csv = read(&run.out.join("report.csv"));
    let rows: Vec<&str> = csv.lines().collect();
    // Header + 3 stages × (3 scenarios + aggregate) + run aggregate rows.
    assert!(rows.len() > 3 * 4, "{csv}");
    for stage in ["closed", "open", "ramp"] {
        for sc in ["chat", "qa", "long"] {
            assert!(
                rows.iter()
                    .any(|r| r.starts_with(&format!("{stage},{sc},"))),
                "no {stage}/{sc} row:\n{csv}"
            );
        }
    }
    let prom = read(&run.out.join("metrics.prom"));
    for line in prom
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line}"));
        assert!(value.parse::<f64>().is_ok(), "bad value in {line}");
        assert!(series.starts_with("llmload_"), "{line}");
    }
    assert!(prom.contains("# TYPE"), "{prom}");
    assert!(prom.contains("stage=\"open\""), "{prom}");
    assert!(prom.contains("scenario=\"qa\""), "{prom}");
}

#[test]
fn checks_fail_when_they_should() {
    let server = Server::start(&[]);
    let dir = temp_dir("checks");
    let profile = write_profile(
        &dir,
        &serde_json::json!({
            "model": "m", "max_tokens": 4, "live_interval": "0",
            "stages": [{"concurrency": 3, "requests": 30}],
            "scenarios": [
                {"name": "never", "weight": 1, "content": {"mode": "pool", "prompts": ["x"]},
                 "checks": {"contains": ["this text is never generated"]}},
                {"name": "always", "weight": 1, "content": {"mode": "pool", "prompts": ["x"]},
                 "checks": {"not_contains": ["this text is never generated"], "min_completion_tokens": 4}},
                {"name": "toolong", "weight": 1, "content": {"mode": "pool", "prompts": ["x"]},
                 "checks": {"max_completion_tokens": 2}}
            ]
        }),
    );
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(60),
    );
    let s = run.summary();
    assert_accounted(&s["requests"]);
    let by = |n: &str| {
        s["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == n)
            .unwrap()
            .clone()
    };
    let never = by("never");
    assert_eq!(
        u(&never["requests"]["errors"]["check_failed"]),
        u(&never["requests"]["issued"])
    );
    assert_eq!(u(&by("always")["requests"]["failed"]), 0);
    let toolong = by("toolong");
    assert_eq!(
        u(&toolong["requests"]["errors"]["check_failed"]),
        u(&toolong["requests"]["issued"])
    );
    assert!(
        s["error_messages"]["check_failed"][0]
            .as_str()
            .unwrap()
            .len()
            > 5
    );
}

#[test]
fn broken_threshold_exits_2_and_abort_on_fail_stops_early() {
    let server = Server::start(&["--ttft", "30ms"]);
    let dir = temp_dir("thresholds");
    let mut p = serde_json::json!({
        "model": "m", "max_tokens": 4, "live_interval": "0",
        "stages": [
            {"name": "one", "concurrency": 2, "duration": "1s"},
            {"name": "two", "concurrency": 2, "duration": "1s"}
        ],
        "thresholds": {"p99_ms": 5, "error_rate": 0.5}
    });
    let profile = write_profile(&dir, &p);
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(60),
    );
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["thresholds_passed"], false);
    assert_eq!(s["stages"].as_array().unwrap().len(), 2);
    let v = &s["stages"][0]["thresholds"];
    let p99 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "p99_ms")
        .unwrap();
    assert_eq!(p99["pass"], false);
    let er = v
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "error_rate")
        .unwrap();
    assert_eq!(er["pass"], true);
    assert!(read(&run.out.join("report.txt")).contains("FAIL"));

    p["thresholds"]["abort_on_fail"] = true.into();
    let profile = write_profile(&dir, &p);
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(60),
    );
    assert_eq!(run.status.code(), Some(2));
    let s = run.summary();
    assert_eq!(
        s["stages"].as_array().unwrap().len(),
        1,
        "abort_on_fail stops after stage one"
    );
    assert!(s["aborted_on_threshold"].as_str().unwrap().contains("one"));
    assert!(run.elapsed < Duration::from_secs(10));

    p["thresholds"] = serde_json::json!({"p99_ms": 5000, "error_rate": 0.01, "min_rps": 1});
    let profile = write_profile(&dir, &p);
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(60),
    );
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.summary()["thresholds_passed"], true);
}

/// The MLPerf-style p99 caps: TTFT p99 and TPOT p99 below what the server
/// paces fail the stage (exit 2), caps above it pass.
#[test]
fn ttft_and_tpot_p99_caps_pass_and_fail() {
    let server = Server::start(&["--ttft", "20ms", "--tpot", "2ms"]);
    let dir = temp_dir("p99-caps");
    let run_with = |caps: serde_json::Value| {
        let p = serde_json::json!({
            "model": "m", "max_tokens": 8, "live_interval": "0", "warmup": "0s",
            "stages": [{"name": "one", "concurrency": 2, "duration": "1s"}],
            "thresholds": caps
        });
        let profile = write_profile(&dir, &p);
        bench(
            &["--profile", &profile, "--endpoint", &server.url()],
            Duration::from_secs(60),
        )
    };
    let verdict = |s: &serde_json::Value, name: &str| {
        s["stages"][0]["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {s}"))
            .clone()
    };

    let run = run_with(serde_json::json!({"ttft_p99_ms": 5, "tpot_p99_ms": 0.5}));
    assert_eq!(run.status.code(), Some(2), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["thresholds_passed"], false);
    for (name, at_least) in [("ttft_p99_ms", 15.0), ("tpot_p99_ms", 1.5)] {
        let v = verdict(&s, name);
        assert_eq!(v["pass"], false, "{v}");
        assert!(v["value"].as_f64().unwrap() >= at_least, "{v}");
    }
    let report = read(&run.out.join("report.txt"));
    assert!(
        report.contains("ttft_p99_ms") && report.contains("FAIL"),
        "{report}"
    );

    let run = run_with(serde_json::json!({"ttft_p99_ms": 2000, "tpot_p99_ms": 100}));
    assert_eq!(run.status.code(), Some(0), "{}", run.stderr);
    let s = run.summary();
    assert_eq!(s["thresholds_passed"], true);
    assert_eq!(verdict(&s, "ttft_p99_ms")["pass"], true);
    assert_eq!(verdict(&s, "tpot_p99_ms")["pass"], true);
}

#[test]
fn sigint_leaves_one_events_line_per_issued_turn() {
    let server = Server::start(&["--ttft", "20ms", "--tpot", "2ms"]);
    let dir = temp_dir("sigint-events");
    let profile = write_profile(
        &dir,
        &serde_json::json!({
            "model": "m", "max_tokens": 16, "live_interval": "0",
            "stages": [{"concurrency": 8, "duration": "60s"}],
            "scenarios": [
                {"name": "chat", "weight": 1, "turns": 3, "think_time": "10ms",
                 "content": {"mode": "scripted", "script": ["a", "b", "c"]}},
                {"name": "one", "weight": 1, "content": {"mode": "pool", "prompts": ["x"]}}
            ]
        }),
    );
    let out = temp_dir("sigint-events-out");
    let child = Command::new(bin())
        .args([
            "bench",
            "--profile",
            &profile,
            "--endpoint",
            &server.url(),
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let run = wait_run(child, out, Duration::from_secs(30));
    assert_eq!(run.status.code(), Some(130), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    let ev = events(&run.out);
    let issued = u(&s["requests"]["issued"]) + u(&s["warmup"]["issued"]);
    assert_eq!(ev.len() as u64, issued);
    assert_eq!(u(&s["events"]["written"]), issued);
    assert_eq!(u(&s["events"]["dropped"]), 0);
    let seqs: std::collections::BTreeSet<_> =
        ev.iter().map(|e| (u(&e["seq"]), u(&e["turn"]))).collect();
    assert_eq!(seqs.len(), ev.len(), "every (conversation, turn) once");
}

/// A server that answers every request with a fixed non-streamed body and
/// keeps every request it received.
fn capture_server(seen: Arc<Mutex<Vec<String>>>) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let body = r#"{"choices":[{"message":{"content":"four"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#;
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Ok(n) = s.read(&mut chunk) else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some(head_end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let len: usize = text[..head_end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if buf.len() < head_end + 4 + len {
                        continue;
                    }
                    seen.lock()
                        .unwrap()
                        .push(text[..head_end + 4 + len].to_string());
                    buf.drain(..head_end + 4 + len);
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if s.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn cache_busting_id_is_in_the_first_message_and_the_header() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = capture_server(seen.clone());
    let dir = temp_dir("bust");
    let profile = write_profile(
        &dir,
        &serde_json::json!({
            "endpoint": format!("http://127.0.0.1:{port}/v1/chat/completions"),
            "model": "m", "stream": false, "live_interval": "0",
            // Every request it sees is the run's: no GET /metrics probe.
            "server_metrics": "off",
            "stages": [{"concurrency": 2, "requests": 6}],
            "scenarios": [{"name": "s", "turns": 2, "content": {"mode": "scripted", "script": ["first", "second"]}}]
        }),
    );
    let run = bench(&["--profile", &profile], Duration::from_secs(30));
    run.assert_success();
    let reqs = seen.lock().unwrap().clone();
    assert_eq!(reqs.len(), 12, "6 conversations × 2 turns");
    let ev = events(&run.out);
    let mut ids = std::collections::BTreeSet::new();
    for r in &reqs {
        let id = r
            .lines()
            .find_map(|l| l.strip_prefix("x-request-id: "))
            .unwrap_or_else(|| panic!("no x-request-id in {r}"))
            .trim()
            .to_string();
        assert_eq!(id.len(), 36);
        let body: serde_json::Value =
            serde_json::from_str(&r[r.find("\r\n\r\n").unwrap() + 4..]).unwrap();
        let first = body["messages"][0]["content"].as_str().unwrap();
        assert!(first.starts_with(&id), "{first} vs {id}");
        assert!(
            ev.iter().any(|e| e["conversation_id"] == id.as_str()),
            "id {id} not in events"
        );
        ids.insert(id);
    }
    assert_eq!(ids.len(), 6, "one id per conversation, shared by its turns");

    // Natural mode: prompts untouched, the header still joins records.
    seen.lock().unwrap().clear();
    let mut p: serde_json::Value = serde_json::from_str(&read(Path::new(&profile))).unwrap();
    p["cache_mode"] = "natural".into();
    let profile = write_profile(&dir, &p);
    let run = bench(&["--profile", &profile], Duration::from_secs(30));
    run.assert_success();
    for r in seen.lock().unwrap().iter() {
        let body: serde_json::Value =
            serde_json::from_str(&r[r.find("\r\n\r\n").unwrap() + 4..]).unwrap();
        assert_eq!(body["messages"][0]["content"], "first");
        assert!(r.contains("x-request-id: "));
    }
}

#[test]
fn mixed_protocols_against_one_gateway() {
    let server = Server::start(&[]);
    let dir = temp_dir("mixed");
    let profile = write_profile(
        &dir,
        &serde_json::json!({
            "model": "m", "max_tokens": 5, "live_interval": "0",
            "stages": [{"concurrency": 4, "requests": 40}],
            "scenarios": [
                {"name": "openai", "weight": 1, "api": "openai-chat", "content": {"mode": "pool", "prompts": ["a"]}},
                {"name": "claude", "weight": 1, "api": "anthropic", "content": {"mode": "pool", "prompts": ["b"]}}
            ]
        }),
    );
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 40);
    assert_eq!(u(&s["tokens"]["output_total"]), 200);
    for sc in s["scenarios"].as_array().unwrap() {
        assert!(u(&sc["requests"]["completed"]) > 0, "{sc}");
    }
}

#[test]
fn the_issue_example_runs_as_written() {
    let server = Server::start(&["--ttft", "2ms", "--tpot", "1ms"]);
    let dir = temp_dir("example");
    let example = r#"{
  "endpoint": "http://127.0.0.1:8000/v1/chat/completions",
  "api": "openai-chat",
  "model": "demo",
  "max_tokens": 32,
  "stream": true,
  "warmup": "1s",
  "arrival": "poisson",
  "stages": [
    {"concurrency": 8, "duration": "5s"},
    {"rate": 50, "duration": "5s"},
    {"rate_from": 20, "rate_to": 100, "duration": "5s"}
  ],
  "scenarios": [
    {"name": "chat", "weight": 70, "turns": {"min": 2, "max": 4},
     "content": {"mode": "scripted", "script": ["Hi", "tell me more", "and then?", "why?"]}},
    {"name": "qa", "weight": 30, "stream": false, "max_tokens": 16,
     "content": {"mode": "pool", "prompts": ["What is 2+2?", "Name a color."]},
     "checks": {"min_completion_tokens": 1}}
  ],
  "thresholds": {"p99_ms": 5000, "error_rate": 0.01}
}"#;
    let p = dir.join("run.json");
    std::fs::write(&p, example).unwrap();
    let url = format!("{}/v1/chat/completions", server.url());
    let run = bench(
        &["--profile", p.to_str().unwrap(), "--endpoint", &url],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_eq!(s["stages"].as_array().unwrap().len(), 3);
    assert_eq!(s["thresholds_passed"], true);
    assert_eq!(u(&s["requests"]["failed"]), 0);
    assert!(u(&s["warmup"]["issued"]) > 0);
}

#[test]
fn dataset_conversations_are_grouped_by_id() {
    let server = Server::start(&[]);
    let dir = temp_dir("convds");
    let ds = dir.join("convs.csv");
    std::fs::write(
        &ds,
        "conv,text\na,hello there\nb,hi\na,and then\na,why\nb,ok\n",
    )
    .unwrap();
    let profile = write_profile(
        &dir,
        &serde_json::json!({
            "model": "m", "max_tokens": 3, "live_interval": "0",
            "stages": [{"concurrency": 2, "requests": 4}],
            "scenarios": [{"name": "replay", "turns": {"min": 1, "max": 10},
                "content": {"mode": "dataset", "dataset": ds.to_str().unwrap(), "conversation": "conv"}}]
        }),
    );
    let run = bench(
        &["--profile", &profile, "--endpoint", &server.url()],
        Duration::from_secs(30),
    );
    run.assert_success();
    let ev = events(&run.out);
    let mut turns: std::collections::BTreeMap<String, u64> = Default::default();
    for e in &ev {
        let t = turns
            .entry(e["conversation_id"].as_str().unwrap().into())
            .or_default();
        *t = (*t).max(u(&e["turn"]));
    }
    // Conversation a has 3 user turns, b has 2; each ran at most that many.
    let mut maxes: Vec<u64> = turns.values().copied().collect();
    maxes.sort();
    assert!(maxes.iter().all(|&m| m <= 3), "{maxes:?}");
    assert_eq!(turns.len(), 4, "4 conversations");
}
