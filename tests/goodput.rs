//! Goodput (`--slo`) and every tool's definitions (`definitions`,
//! `--metrics-preset`) end to end: a server that paces its tokens exactly,
//! SLO bounds on either side of what it does, and the definitions table
//! checked against the summary's own numbers.

use std::time::Duration;

use crate::report::assert_valid;
use crate::util::*;

/// The value of `metric` in `tool`'s column of the definitions table.
fn cell(s: &serde_json::Value, metric: &str, tool: &str) -> Option<f64> {
    let d = &s["definitions"];
    let col = d["tools"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t == tool)
        .unwrap_or_else(|| panic!("no column {tool}: {d}"));
    let row = d["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {metric}: {d}"));
    row["values"][col].as_f64()
}

fn run(server: &Server, extra: &[&str]) -> Run {
    let mut args = vec![
        "--concurrency",
        "2",
        "--requests",
        "12",
        "--max-tokens",
        "5",
    ];
    args.extend_from_slice(extra);
    let run = bench_at(server, &args, Duration::from_secs(30));
    run.assert_success();
    run
}

#[test]
fn loose_bounds_make_every_request_good_and_the_llmload_column_is_the_summary() {
    let server = Server::start(&["--ttft", "20ms", "--tpot", "5ms"]);
    // A loaded machine is late, never early: bounds far above the pacing.
    let run = run(&server, &["--slo", "ttft=5s,tpot=1s,e2e=30s"]);
    let s = run.summary();
    assert_valid(&s);
    let g = &s["goodput"];
    assert_eq!(u(&g["good"]), 12, "{g}");
    assert_eq!(f(&g["attainment_pct"]), 100.0);
    assert_eq!(f(&g["ttft_ms"]), 5000.0);
    assert_eq!(
        f(&g["requests_per_s"]),
        f(&s["throughput"]["requests_per_s"])
    );
    assert_eq!(
        f(&g["output_tokens_per_s"]),
        f(&s["throughput"]["output_tokens_per_s"])
    );
    assert_eq!(u(&s["stages"][0]["goodput"]["good"]), 12);
    assert_eq!(u(&s["scenarios"][0]["goodput"]["good"]), 12);

    // Our column is our numbers, exactly.
    let lat = &s["latency_ms"];
    for (metric, want) in [
        ("ttft_mean_ms", &lat["ttft"]["mean"]),
        ("ttft_p50_ms", &lat["ttft"]["p50"]),
        ("ttft_p99_ms", &lat["ttft"]["p99"]),
        ("tpot_mean_ms", &lat["tpot"]["mean"]),
        ("tpot_p99_ms", &lat["tpot"]["p99"]),
        ("itl_mean_ms", &lat["itl"]["mean"]),
        ("itl_p99_ms", &lat["itl"]["p99"]),
        ("e2e_mean_ms", &lat["e2e"]["mean"]),
        ("e2e_p99_ms", &lat["e2e"]["p99"]),
        ("requests_per_s", &s["throughput"]["requests_per_s"]),
        (
            "output_tokens_per_s",
            &s["throughput"]["output_tokens_per_s"],
        ),
    ] {
        assert_eq!(cell(&s, metric, "llmload"), Some(f(want)), "{metric}");
    }
    // vLLM's TTFT is from the send too; MLPerf's from the schedule, later.
    let ttft = f(&lat["ttft"]["mean"]);
    assert_eq!(cell(&s, "ttft_mean_ms", "vllm"), Some(ttft));
    assert!(ttft >= 20.0, "the server is never early: {ttft}");
    assert!(cell(&s, "ttft_mean_ms", "mlperf").unwrap() >= ttft);
    // guidellm's TPOT takes the TTFT in: (20 + 4 × 5) / 5 ≥ 8 ms, above ours.
    let tpot_guidellm = cell(&s, "tpot_mean_ms", "guidellm").unwrap();
    assert!(tpot_guidellm >= 8.0, "{tpot_guidellm}");
    assert!(tpot_guidellm > f(&lat["tpot"]["mean"]));
    assert_eq!(cell(&s, "itl_mean_ms", "mlperf"), None, "MLPerf has no ITL");
    assert_eq!(s["definitions"]["preset"], "llmload");
    assert_eq!(s["headline"]["preset"], "llmload");

    let report = read(&run.out.join("report.txt"));
    assert!(
        report.contains("goodput     ")
            && report.contains("SLO attainment 100.0 % (ttft ≤ 5 s, tpot ≤ 1 s, e2e ≤ 30 s)"),
        "{report}"
    );
    assert!(report.contains("Definitions: the same run under each tool's rules"));
    assert!(
        !report.lines().any(|l| l.starts_with("headline:")),
        "llmload's own numbers are the headline"
    );
    let prom = read(&run.out.join("metrics.prom"));
    assert!(
        prom.contains("llmload_slo_attainment_ratio{stage=\"all\",scenario=\"all\"} 1\n"),
        "{prom}"
    );
    assert!(prom.contains("llmload_goodput_requests_per_second{"));
    let csv = read(&run.out.join("report.csv"));
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains("goodput_attainment_pct")
    );
}

#[test]
fn a_bound_below_the_servers_ttft_makes_nothing_good_and_the_preset_moves_the_headline() {
    let server = Server::start(&["--ttft", "20ms", "--tpot", "5ms"]);
    let run = run(&server, &["--slo", "ttft=5ms", "--metrics-preset", "vllm"]);
    let s = run.summary();
    assert_valid(&s);
    let g = &s["goodput"];
    assert_eq!(u(&g["good"]), 0, "{g}");
    assert_eq!(f(&g["attainment_pct"]), 0.0);
    assert_eq!(u(&g["missed_ttft"]), 12);
    assert_eq!(f(&g["requests_per_s"]), 0.0);
    assert_eq!(s["definitions"]["preset"], "vllm");
    let h = &s["headline"];
    assert_eq!(h["preset"], "vllm");
    assert_eq!(
        h["ttft_ms"]["mean"].as_f64(),
        cell(&s, "ttft_mean_ms", "vllm")
    );
    assert_eq!(h["e2e_ms"]["p99"].as_f64(), cell(&s, "e2e_p99_ms", "vllm"));
    // The machine contract keeps ours.
    assert_eq!(
        cell(&s, "ttft_mean_ms", "llmload"),
        s["latency_ms"]["ttft"]["mean"].as_f64()
    );
    let report = read(&run.out.join("report.txt"));
    assert!(report.contains("headline: vllm definitions"), "{report}");
    assert!(report.contains("SLO attainment 0.0 % (ttft ≤ 5 ms); missed ttft 12"));
}

#[test]
fn a_bad_slo_or_preset_exits_1_naming_the_flag() {
    for (args, flag) in [
        (&["--slo", "ttft=soon"][..], "--slo: "),
        (&["--slo", "latency=1s"][..], "--slo: "),
        (&["--metrics-preset", "tgi"][..], "--metrics-preset: "),
    ] {
        let mut all = vec!["--endpoint", "http://127.0.0.1:9", "--model", "m"];
        all.extend_from_slice(args);
        let run = bench(&all, Duration::from_secs(10));
        assert_eq!(run.status.code(), Some(1), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(flag), "{args:?}: {}", run.stderr);
    }
}
