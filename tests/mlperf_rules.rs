//! `--preset mlperf`'s run rules against `llmload serve`: the request count
//! derived from a minimum duration and rounded up to whole dataset passes,
//! prompts sent as written, warm-up by count kept out of the numbers, and
//! the scheduler and dataloader seeds apart.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

/// 100 rows; row i is i + 1 words, so the built-in server's prompt count
/// (words) names the row.
fn dataset(dir: &Path) -> String {
    let text: String = (0..100)
        .map(|i| {
            let words: Vec<String> = (0..=i).map(|j| format!("w{j}")).collect();
            format!("{{\"prompt\": \"{}\"}}\n", words.join(" "))
        })
        .collect();
    let p = dir.join("rows.jsonl");
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// The events lines, in issue order.
fn events(run: &Run) -> Vec<Value> {
    let text = read(&run.out.join("events.jsonl"));
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("an events line is JSON"))
        .collect();
    lines.sort_by_key(|v| u(&v["seq"]));
    lines
}

/// (warmup, prompt_tokens) of each events line, in issue order.
fn prompts(run: &Run) -> Vec<(bool, u64)> {
    events(run)
        .iter()
        .map(|v| (v["warmup"] == true, u(&v["prompt_tokens"])))
        .collect()
}

fn measured(run: &Run) -> Vec<u64> {
    prompts(run)
        .into_iter()
        .filter(|(w, _)| !w)
        .map(|(_, n)| n)
        .collect()
}

const QUICK: &[&str] = &["--max-tokens", "2", "--workers", "1"];

fn run(server: &Server, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.extend_from_slice(QUICK);
    let run = bench_at(server, &all, Duration::from_secs(30));
    run.assert_success();
    run
}

#[test]
fn the_count_fills_whole_passes_prompts_are_untouched_and_warmup_is_apart() {
    let dir = temp_dir("mlperf-rules");
    let ds = dataset(&dir);
    let server = Server::start(&["--ttft", "1ms"]);
    let r = run(
        &server,
        &[
            "--preset",
            "mlperf",
            "--mode",
            "poisson",
            "--rate",
            "100",
            "--min-duration",
            "2s",
            "--min-requests",
            "250",
            "--warmup-requests",
            "20",
            "--dataset",
            &ds,
        ],
    );
    let s = r.summary();
    let issued = u(&s["requests"]["issued"]);
    // max(ceil(100/s × 2 s × 1.1) = 221, 250) rounded up to 3 passes.
    assert_eq!(issued, 300, "{}", s["notes"]);
    assert!(issued.is_multiple_of(100) && issued >= 250 && issued >= 220);
    assert_eq!(u(&s["requests"]["completed"]), 300);
    assert_eq!(u(&s["warmup"]["issued"]), 20);
    assert_eq!(u(&s["warmup"]["completed"]), 20);
    let c = &s["config"];
    assert_eq!(c["preset"], "mlperf");
    assert_eq!(c["cache_mode"], "natural");
    assert_eq!(c["order"], "shuffle");
    assert_eq!(
        (u(&c["scheduler_seed"]), u(&c["dataloader_seed"])),
        (42, 42)
    );
    assert_eq!(c["stream"], true);
    assert_eq!(c["min_duration"], "2s");
    assert_eq!(u(&c["run_length"]["requests"]), 300);
    let rule = c["run_length"]["rule"].as_str().unwrap();
    assert!(rule.contains("3 passes of 100 rows"), "{rule}");
    assert!(
        s["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str() == Some(rule)),
        "{}",
        s["notes"]
    );
    assert!(read(&r.out.join("report.txt")).contains(rule));
    // The run ends when its count is drained, not after a duration: 300 at
    // 100/s is about 3 s.
    assert!(f(&s["window_s"]) >= 2.5, "{}", s["window_s"]);

    // A plain run with prompts as written, in file order: rows 1..=100
    // words. The preset sent the same prompts, each row once per pass
    // (its measured part starts a fresh pass), and the cache-busting
    // default would have sent longer ones.
    let natural = run(
        &server,
        &[
            "--mode",
            "offline",
            "--requests",
            "100",
            "--cache-mode",
            "natural",
            "--dataset",
            &ds,
        ],
    );
    let rows = measured(&natural);
    assert_eq!(rows, (1..=100).collect::<Vec<u64>>());
    let mut sent = measured(&r);
    sent.sort_unstable();
    let mut want: Vec<u64> = rows.iter().flat_map(|&n| [n, n, n]).collect();
    want.sort_unstable();
    assert_eq!(sent, want);
    let busted = run(
        &server,
        &["--mode", "offline", "--requests", "100", "--dataset", &ds],
    );
    let busted = measured(&busted);
    assert!(busted.iter().zip(&rows).all(|(b, n)| b > n), "{busted:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_dataloader_seed_alone_orders_the_samples() {
    let dir = temp_dir("mlperf-seeds");
    let ds = dataset(&dir);
    let server = Server::start(&[]);
    let order = |extra: &[&str]| {
        let mut args = vec![
            "--preset",
            "mlperf",
            "--mode",
            "offline",
            "--requests",
            "100",
            "--dataset",
            &ds,
        ];
        args.extend_from_slice(extra);
        let r = run(&server, &args);
        assert_eq!(r.summary()["config"]["stream"], false, "offline: no stream");
        measured(&r)
    };
    let base = order(&[]);
    let mut sorted = base.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=100).collect::<Vec<u64>>(), "one whole pass");
    assert_ne!(base, sorted, "shuffled");
    assert_eq!(order(&["--scheduler-seed", "7"]), base);
    assert_eq!(order(&["--dataloader-seed", "42", "--seed", "9"]), base);
    assert_ne!(order(&["--dataloader-seed", "7"]), base);
    let _ = std::fs::remove_dir_all(dir);
}

/// (warmup, row, scheduled_ms) of each events line, in issue order.
fn rows_and_times(run: &Run) -> Vec<(bool, u64, f64)> {
    events(run)
        .iter()
        .map(|v| (v["warmup"] == true, u(&v["row"]), f(&v["scheduled_ms"])))
        .collect()
}

/// `offsets_ns` (from a phase's start) against `scheduled_ms` (Unix ms to
/// the µs, each truncated): equal gaps from the first, to under 1 µs. The
/// stamps are compared as whole microseconds: as f64 milliseconds near
/// 1.8e12 they carry a quarter-µs error each, enough to pass 1 µs.
fn assert_schedule(what: &str, scheduled_ms: &[f64], offsets_ns: &[u64]) {
    assert_eq!(scheduled_ms.len(), offsets_ns.len(), "{what}");
    let us = |ms: f64| (ms * 1e3).round() as i64;
    for (k, (t, o)) in scheduled_ms.iter().zip(offsets_ns).enumerate() {
        let got_ns = (us(*t) - us(scheduled_ms[0])) * 1000;
        let want_ns = (o - offsets_ns[0]) as i64;
        assert!(
            (got_ns - want_ns).abs() < 1000,
            "{what}: arrival {k} at +{got_ns} ns, MLPerf's at +{want_ns} ns\n{scheduled_ms:?}\n{offsets_ns:?}"
        );
    }
}

#[test]
fn benchmark_sends_mlperfs_rows_at_mlperfs_times_for_the_same_seeds() {
    // What CPython's random.Random gives when drawn as MLPerf draws
    // (tests/fixtures/pyrandom/generate.py).
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/pyrandom/mlperf.json")).unwrap();
    let cases = fixture["integration"].as_array().unwrap();
    // The third draws its warm-up from a seed other than MLPerf's default.
    assert_eq!(cases.len(), 3);
    let server = Server::start(&["--ttft", "1ms", "--output-tokens", "2"]);
    let dir = temp_dir("mlperf-draws");
    let list = |v: &Value| -> Vec<u64> { v.as_array().unwrap().iter().map(u).collect() };
    for (i, c) in cases.iter().enumerate() {
        let rows = u(&c["rows"]);
        let data = dir.join(format!("rows{i}.jsonl"));
        let text: String = (0..rows)
            .map(|r| format!("{{\"prompt\": \"row {r}\"}}\n"))
            .collect();
        std::fs::write(&data, text).unwrap();
        let warmup = u(&c["warmup_requests"]);
        let config = format!(
            "name: draws\ntype: online\nmodel_params: {{name: m}}\n\
             datasets:\n- {{name: perf, type: performance, path: '{}'}}\n\
             settings:\n  runtime: {{n_samples_to_issue: {}, scheduler_random_seed: {}, dataloader_random_seed: {}}}\n  \
             load_pattern: {{type: poisson, target_qps: {}}}\n  \
             warmup: {{enabled: {}, n_requests: {}, warmup_random_seed: {}}}\n\
             endpoint_config:\n  endpoints: ['{}']\n",
            data.display(),
            u(&c["count"]),
            u(&c["scheduler_seed"]),
            u(&c["dataloader_seed"]),
            f(&c["qps"]),
            warmup > 0,
            warmup.max(1),
            u(&c["warmup_seed"]),
            server.url(),
        );
        let path = dir.join(format!("draws{i}.yaml"));
        std::fs::write(&path, &config).unwrap();
        let out = dir.join(format!("report{i}"));
        let run = llmload(&[
            "benchmark",
            "from-config",
            "-c",
            path.to_str().unwrap(),
            "--report-dir",
            out.to_str().unwrap(),
        ])
        .out(&out)
        .limit(Duration::from_secs(30))
        .run();
        run.assert_success();
        let events = rows_and_times(&run);
        let (warm, measured): (Vec<_>, Vec<_>) = events.iter().partition(|e| e.0);
        let sent = |es: &[&(bool, u64, f64)]| es.iter().map(|e| e.1).collect::<Vec<u64>>();
        let times = |es: &[&(bool, u64, f64)]| es.iter().map(|e| e.2).collect::<Vec<f64>>();
        assert_eq!(
            sent(&warm),
            list(&c["warmup_order"]),
            "case {i}: warm-up rows\n{config}"
        );
        assert_eq!(
            sent(&measured),
            list(&c["order"]),
            "case {i}: rows\n{config}"
        );
        assert_schedule(
            &format!("case {i}: warm-up"),
            &times(&warm),
            &list(&c["warmup_offsets_ns"]),
        );
        assert_schedule(
            &format!("case {i}"),
            &times(&measured),
            &list(&c["offsets_ns"]),
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
