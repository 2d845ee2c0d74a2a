//! Every wire format end to end against the built-in endpoint, streamed and
//! not: exact token totals, usage, TTFT from the first text of each format,
//! in-band errors counted with their message, reasoning counted as output.

use std::time::Duration;

use crate::util::*;

const APIS: [&str; 4] = ["openai-chat", "openai-completions", "sglang", "anthropic"];

fn run_api(api: &str, stream: bool, server_args: &[&str], extra: &[&str]) -> serde_json::Value {
    let server = Server::start(server_args);
    let concurrency = if extra.contains(&"--concurrency") {
        vec![]
    } else {
        vec!["--concurrency", "4"]
    };
    let mut args = concurrency;
    args.extend_from_slice(&[
        "--api",
        api,
        "--requests",
        "40",
        "--max-tokens",
        "12",
        if stream { "--stream" } else { "--no-stream" },
    ]);
    args.extend_from_slice(extra);
    let run = bench_at(&server, &args, Duration::from_secs(60));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    s
}

#[test]
fn every_api_counts_tokens_exactly_streamed_and_not() {
    for api in APIS {
        for stream in [true, false] {
            let s = run_api(api, stream, &["--ttft", "2ms", "--tpot", "1ms"], &[]);
            let what = format!("{api} stream={stream}: {}", s["requests"]);
            assert_eq!(u(&s["requests"]["completed"]), 40, "{what}");
            assert_eq!(u(&s["tokens"]["output_total"]), 40 * 12, "{what}");
            assert_eq!(s["tokens"]["output_source"], "usage", "{what}");
            assert!(u(&s["tokens"]["input_total"]) > 0, "{what}");
            assert_eq!(s["config"]["api"], api);
            if stream {
                assert_eq!(u(&s["latency_ms"]["ttft"]["count"]), 40, "{what}");
                assert_eq!(u(&s["latency_ms"]["itl"]["count"]), 40 * 11, "{what}");
            }
        }
    }
}

#[test]
fn every_api_paces_ttft_like_the_server() {
    for api in APIS {
        let s = run_api(api, true, &["--ttft", "30ms", "--tpot", "3ms"], &[]);
        let ttft = f(&s["latency_ms"]["ttft"]["p50"]);
        // The server cannot be early; a loaded 2-core CI machine can be late.
        assert!((29.0..36.0).contains(&ttft), "{api}: ttft p50 {ttft}");
        let tpot = f(&s["latency_ms"]["tpot"]["p50"]);
        assert!((2.8..4.0).contains(&tpot), "{api}: tpot p50 {tpot}");
    }
}

#[test]
fn in_band_errors_are_counted_with_their_message() {
    for api in APIS {
        for stream in [true, false] {
            let s = run_api(
                api,
                stream,
                &["--inband-error-rate", "0.25"],
                &["--concurrency", "1"],
            );
            let what = format!("{api} stream={stream}: {}", s["requests"]);
            assert_eq!(u(&s["requests"]["errors"]["inband_error"]), 10, "{what}");
            assert_eq!(u(&s["requests"]["completed"]), 30, "{what}");
            let msgs = s["error_messages"].as_object().expect("error_messages");
            assert!(
                msgs["inband_error"].as_array().unwrap()[0]
                    .as_str()
                    .unwrap()
                    .contains("injected in-band error"),
                "{what}: {msgs:?}"
            );
        }
    }
}

#[test]
fn reasoning_counts_as_output_and_first_token() {
    for api in ["openai-chat", "anthropic"] {
        let s = run_api(
            api,
            true,
            &[
                "--reasoning-tokens",
                "4",
                "--ttft",
                "20ms",
                "--tpot",
                "10ms",
            ],
            &[],
        );
        assert_eq!(u(&s["tokens"]["output_total"]), 40 * 12, "{api}");
        // Reasoning and text events alike are token events.
        assert_eq!(u(&s["latency_ms"]["itl"]["count"]), 40 * 11, "{api}");
        let ttft = f(&s["latency_ms"]["ttft"]["p50"]);
        // Were the first reasoning event not the first token, TTFT would be
        // 20 ms + 4 × 10 ms; the upper bound leaves room for a loaded machine.
        assert!((19.0..32.0).contains(&ttft), "{api}: ttft {ttft}");
    }
}

#[test]
fn endpoint_without_path_uses_the_api_default() {
    for api in APIS {
        let server = Server::start(&[]);
        let run = bench(
            &[
                "--endpoint",
                &server.url(),
                "--api",
                api,
                "--model",
                "m",
                "--requests",
                "3",
                "--concurrency",
                "1",
            ],
            Duration::from_secs(30),
        );
        run.assert_success();
        let s = run.summary();
        assert_eq!(u(&s["requests"]["completed"]), 3, "{api}");
    }
}

#[test]
fn anthropic_sends_its_headers_and_key() {
    let server = Server::start(&["--api-key", "sk-ant-test-XYZ"]);
    let run = bench_at(
        &server,
        &[
            "--api",
            "anthropic",
            "--api-key",
            "sk-ant-test-XYZ",
            "--requests",
            "5",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    assert_eq!(u(&run.summary()["requests"]["completed"]), 5);
    let bad = bench_at(
        &server,
        &["--api", "anthropic", "--requests", "2"],
        Duration::from_secs(30),
    );
    assert_eq!(u(&bad.summary()["requests"]["errors"]["http_401"]), 2);
}

#[test]
fn sampling_flags_and_extra_body_are_accepted() {
    let s = run_api(
        "openai-chat",
        true,
        &[],
        &[
            "--temperature",
            "0.7",
            "--top-p",
            "0.9",
            "--seed",
            "7",
            "--stop",
            "END",
            "--ignore-eos",
            "--extra-body",
            "{\"top_k\": 20}",
        ],
    );
    assert_eq!(u(&s["requests"]["completed"]), 40);
    assert_eq!(s["config"]["temperature"], 0.7);
    assert_eq!(s["config"]["extra_body"]["top_k"], 20);
    let run = bench(&["--extra-body", "[1]"], Duration::from_secs(10));
    assert!(run.stderr.contains("--extra-body"), "{}", run.stderr);
}
