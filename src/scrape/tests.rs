use std::io::{Read, Write};
use std::net::TcpListener;

use super::*;

const S: u64 = 1_000_000_000;

/// A `Scraped` whose rows hold `names`' values at each time (seconds).
fn scraped(names: &[&'static str], rows: &[(f64, &[Option<f64>])]) -> Scraped {
    Scraped {
        watched: names.to_vec(),
        rows: rows
            .iter()
            .map(|(t, v)| Row {
                t_ns: (t * 1e9) as u64,
                values: v.to_vec(),
            })
            .collect(),
        ..Scraped::default()
    }
}

#[test]
fn counters_become_rates_and_a_reset_is_skipped() {
    let n = ["vllm:generation_tokens_total"];
    let s = scraped(
        &n,
        &[
            (9.0, &[Some(0.0)]),
            (10.0, &[Some(100.0)]),
            (11.0, &[Some(300.0)]),
            // The server restarted: this interval is no rate.
            (12.0, &[Some(50.0)]),
            (14.0, &[Some(250.0)]),
        ],
    );
    let f = s.found(10 * S);
    assert_eq!(f.server, "vllm");
    let g = &f.series[0];
    assert_eq!((g.key, g.kind), ("generation_tokens", Kind::Counter));
    // The interval ending at zero is before the run.
    assert_eq!(g.points, vec![[1.0, 200.0], [4.0, 100.0]]);
    assert_eq!(g.max, Some(200.0));
    // 400 tokens over the 3 s the kept intervals cover.
    assert!((g.mean.unwrap() - 400.0 / 3.0).abs() < 1e-9);
}

#[test]
fn gauges_keep_the_run_s_values() {
    let n = ["sglang:num_running_reqs", "sglang:token_usage"];
    let s = scraped(
        &n,
        &[
            (0.5, &[Some(9.0), None]),
            (1.0, &[Some(2.0), Some(0.5)]),
            (2.0, &[Some(4.0), Some(f64::NAN)]),
            (3.0, &[None, Some(0.25)]),
        ],
    );
    let f = s.found(S);
    assert_eq!(f.server, "sglang");
    let running = &f.series[0];
    assert_eq!(running.key, "running");
    assert_eq!(running.points, vec![[0.0, 2.0], [1.0, 4.0]]);
    assert_eq!((running.mean, running.max), (Some(3.0), Some(4.0)));
    let usage = &f.series[1];
    assert_eq!(usage.key, "kv_cache_usage");
    assert_eq!(usage.points, vec![[0.0, 0.5], [2.0, 0.25]]);
}

#[test]
fn a_hit_rate_comes_from_two_counters() {
    let n = [
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_queries_total",
    ];
    let s = scraped(
        &n,
        &[
            (0.0, &[Some(0.0), Some(0.0)]),
            (1.0, &[Some(10.0), Some(40.0)]),
            // No queries: no rate.
            (2.0, &[Some(10.0), Some(40.0)]),
            (3.0, &[Some(40.0), Some(80.0)]),
        ],
    );
    let f = s.found(0);
    let r = &f.series[0];
    assert_eq!(r.key, "prefix_cache_hit_rate");
    assert_eq!(
        r.name,
        "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total"
    );
    assert_eq!(r.points, vec![[1.0, 0.25], [3.0, 0.75]]);
    assert_eq!(r.mean, Some(0.5));
}

#[test]
fn unknown_names_make_an_unknown_server() {
    let s = scraped(&["vllm:num_requests_running"], &[(1.0, &[None])]);
    assert_eq!(
        s.found(0),
        Found {
            server: "unknown",
            series: Vec::new()
        }
    );
}

/// A server that answers every connection with `answer`, `conns` times.
fn serve(answer: &'static str, conns: usize) -> Target {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..conns {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(answer.as_bytes());
        }
    });
    Target {
        endpoint: Endpoint::local(addr, "/metrics"),
        headers: Vec::new(),
        tls: None,
    }
}

#[test]
fn the_probe_wants_prometheus_text_with_a_sample() {
    let ok = serve("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nup 1 12\n", 1);
    assert_eq!(probe(&ok, Duration::from_secs(2)), Ok(()));
    let html = serve(
        "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<!DOCTYPE html>",
        1,
    );
    let e = probe(&html, Duration::from_secs(2)).unwrap_err();
    assert!(e.starts_with("not Prometheus text: line 1:"), "{e}");
    let none = serve("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n# x\n\n\n", 1);
    assert_eq!(
        probe(&none, Duration::from_secs(2)).unwrap_err(),
        "no samples"
    );
    let missing = serve("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 1);
    assert_eq!(
        probe(&missing, Duration::from_secs(2)).unwrap_err(),
        "HTTP 404"
    );
}

#[test]
fn the_thread_counts_failures_and_keeps_the_first_reason() {
    let t = serve("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n", 100);
    let sc = Scraper::start(t, 20_000_000).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let got = sc.stop();
    assert!(got.scrapes >= 3, "{got:?}");
    assert_eq!(got.failures, got.scrapes);
    assert_eq!(got.error.as_deref(), Some("HTTP 500"));
    assert_eq!(got.found(0).server, "unknown");
}

#[test]
fn a_body_cut_at_the_cap_is_a_failed_scrape() {
    let line = "vllm:num_requests_running 1\n";
    let body = line.repeat(blocking::MAX_BODY / line.len() + 1);
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let t = serve(Box::leak(answer.into_boxed_str()), 1);
    let watched = HashMap::from([("vllm:num_requests_running", 0)]);
    let e = t.scrape(&watched, Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        e,
        "the body is longer than 1 MiB: not read, its sums would be partial"
    );
    // One line less fits and is read whole.
    let fits = line.repeat(blocking::MAX_BODY / line.len());
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{fits}",
        fits.len()
    );
    let t = serve(Box::leak(answer.into_boxed_str()), 1);
    let (sums, n) = t.scrape(&watched, Duration::from_secs(5)).unwrap();
    assert_eq!(n, fits.len() / line.len());
    assert_eq!(sums, vec![Some(n as f64)]);
}
