//! One workload spread over several endpoints (`--endpoints`): the split
//! is even between equal servers, each endpoint's numbers are its own, a
//! dead endpoint's failures are charged to it alone, and the two ways of
//! naming endpoints do not mix.

use std::time::Duration;

use crate::report::assert_valid;
use crate::util::*;

/// A loopback port nothing listens on: bound, then released.
fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

fn endpoint<'a>(s: &'a serde_json::Value, url: &str) -> &'a serde_json::Value {
    s["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["url"] == url)
        .unwrap_or_else(|| panic!("no endpoint {url} in {}", s["endpoints"]))
}

#[test]
fn offline_requests_split_evenly_over_two_servers() {
    let a = Server::start(&["--ttft", "2ms", "--tpot", "1ms"]);
    let b = Server::start(&["--ttft", "2ms", "--tpot", "1ms"]);
    let list = format!("{},{}", a.url(), b.url());
    let run = bench(
        &[
            "--endpoints",
            &list,
            "--model",
            "m",
            "--mode",
            "offline",
            "--requests",
            "400",
            "--workers",
            "2",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let s = run.summary();
    assert_valid(&s);
    assert_eq!(u(&s["requests"]["completed"]), 400);
    let mut sum = 0;
    for url in [a.url(), b.url()] {
        let e = endpoint(&s, &url);
        let done = u(&e["completed"]);
        assert!((150..=250).contains(&done), "{url}: {done} of 400\n{e}");
        assert_eq!(u(&e["failed"]), 0, "{e}");
        assert_eq!(u(&e["issued"]), done, "{e}");
        assert_eq!(u(&e["e2e_ms"]["count"]), done, "{e}");
        assert_eq!(u(&e["ttft_ms"]["count"]), done, "{e}");
        assert!(f(&e["ttft_ms"]["p50"]) >= 2.0, "{e}");
        sum += done;
    }
    assert_eq!(sum, 400);
    assert_eq!(s["config"]["endpoint"], list.as_str());
    let report = read(&run.out.join("report.txt"));
    assert!(
        report.contains(&a.url()) && report.contains(&b.url()),
        "{report}"
    );
    assert!(report.contains("endpoint  "), "{report}");
    let prom = read(&run.out.join("metrics.prom"));
    let samples = crate::prom_check::parse(&prom).unwrap_or_else(|e| panic!("{e}\n{prom}"));
    let completed = |url: String| {
        samples
            .iter()
            .find(|(n, l, _)| {
                n == "llmload_endpoint_requests_total"
                    && l.contains(&("endpoint".to_string(), url.clone()))
                    && l.contains(&("outcome".to_string(), "completed".to_string()))
            })
            .map(|s| s.2 as u64)
    };
    for url in [a.url(), b.url()] {
        assert_eq!(
            completed(url.clone()),
            Some(u(&endpoint(&s, &url)["completed"])),
            "{prom}"
        );
    }
}

#[test]
fn a_dead_endpoints_failures_are_its_own() {
    let live = Server::start(&["--ttft", "2ms", "--tpot", "1ms"]);
    let dead = closed_port();
    // An open loop opens connections on demand: worker 1 tries the second
    // endpoint first, so the dead one is tried before it is passed over.
    let list = format!("{},{dead}", live.url());
    let run = bench(
        &[
            "--endpoint",
            &list,
            "--model",
            "m",
            "--rate",
            "200",
            "--requests",
            "100",
            "--workers",
            "2",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(60),
    );
    let s = run.summary();
    assert_valid(&s);
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["issued"]), 100);
    let d = endpoint(&s, &dead);
    assert!(u(&d["failed"]) >= 1, "{d}");
    assert_eq!(u(&d["completed"]), 0, "{d}");
    assert_eq!(u(&d["errors"]["connect_refused"]), u(&d["failed"]), "{d}");
    let l = endpoint(&s, &live.url());
    assert_eq!(u(&l["failed"]), 0, "{l}");
    assert_eq!(u(&l["completed"]), u(&s["requests"]["completed"]), "{l}");
    assert_eq!(u(&l["issued"]) + u(&d["issued"]), 100);
    assert_eq!(
        u(&s["requests"]["errors"]["connect_refused"]),
        u(&d["failed"])
    );
}

#[test]
fn endpoint_and_endpoints_together_are_an_error() {
    let dir = temp_dir("endpoints-both");
    let p = dir.join("run.json");
    std::fs::write(
        &p,
        r#"{"endpoint": "http://127.0.0.1:9", "endpoints": ["http://127.0.0.1:10"]}"#,
    )
    .unwrap();
    let run = bench(&["--profile", p.to_str().unwrap()], Duration::from_secs(20));
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("endpoint and endpoints are alternatives"),
        "{}",
        run.stderr
    );
    // Both flags at once, the same.
    let run = bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--endpoints",
            "http://127.0.0.1:10,http://127.0.0.1:11",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("endpoints"), "{}", run.stderr);
}
