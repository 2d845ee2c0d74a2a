//! The endpoint's own metrics (`--server-metrics`): `serve` speaking vLLM's
//! names is found by auto-detection and scraped through the run; its
//! gauges and counters agree with what the client saw; `off` scrapes
//! nothing; a URL that does not answer is counted, never fatal.

use std::time::Duration;

use crate::util::*;

fn series<'a>(m: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    m["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} series in {m}"))
}

#[test]
fn a_vllm_server_is_found_and_scraped_through_the_run() {
    let server = Server::start(&[
        "--metrics-names",
        "vllm",
        "--ttft",
        "100ms",
        "--tpot",
        "5ms",
    ]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "4",
            "--duration",
            "3s",
            "--max-tokens",
            "20",
            "--server-metrics-interval",
            "250ms",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    crate::report::assert_valid(&s);
    let m = &s["server_metrics"];
    assert_eq!(m["server"], "vllm", "{m}");
    assert_eq!(m["url"], format!("{}/metrics", server.url()));
    assert_eq!((u(&m["failures"]), f(&m["interval_s"])), (0, 0.25), "{m}");
    let running = series(m, "running");
    assert_eq!(running["name"], "vllm:num_requests_running");
    let points = running["points"].as_array().unwrap();
    assert!(points.len() >= 8, "{running}");
    let max = f(&running["max"]);
    assert!((1.0..=4.0).contains(&max), "{running}");
    // Each request runs ~200 ms with no gap between them: the server saw
    // the client's concurrency most of the time.
    assert!(f(&running["mean"]) >= 2.0, "{running}");
    // The generation-token rate over the run adds up to the client's count.
    let generated = series(m, "generation_tokens");
    assert_eq!(generated["kind"], "counter");
    let pts = generated["points"].as_array().unwrap();
    let mut total = 0.0;
    let mut prev: Option<f64> = None;
    for p in pts {
        let (t, rate) = (f(&p[0]), f(&p[1]));
        total += rate * prev.map_or(0.25, |pt| t - pt);
        prev = Some(t);
    }
    let client = f(&s["tokens"]["output_total"]);
    assert!(client > 0.0);
    assert!(
        (0.7 * client..=1.3 * client).contains(&total),
        "server {total} vs client {client}: {generated}"
    );
    let text = read(&run.out.join("report.txt"));
    assert!(text.contains("server metrics: vllm at http://"), "{text}");
    assert!(text.contains("vllm:generation_tokens_total"), "{text}");

    let off = bench_at(
        &server,
        &["--requests", "5", "--server-metrics", "off"],
        Duration::from_secs(30),
    );
    off.assert_success();
    assert!(off.summary().get("server_metrics").is_none());
}

#[test]
fn a_url_that_does_not_answer_is_counted_not_fatal() {
    let server = Server::start(&[]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics?key=sekret", closed.local_addr().unwrap());
    drop(closed);
    let run = bench_at(
        &server,
        &[
            "--duration",
            "1s",
            "--concurrency",
            "2",
            "--server-metrics",
            &url,
            "--server-metrics-interval",
            "100ms",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    let m = &s["server_metrics"];
    assert!(u(&m["failures"]) >= 5, "{m}");
    assert_eq!(u(&m["failures"]), u(&m["scrapes"]), "{m}");
    assert_eq!(m["error"], "connection refused", "{m}");
    assert_eq!(m["server"], "unknown");
    assert!(!m["url"].as_str().unwrap().contains("sekret"), "{m}");
    let text = read(&run.out.join("report.txt"));
    assert!(text.contains("first failure: connection refused"), "{text}");
}
