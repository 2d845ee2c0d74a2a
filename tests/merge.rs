//! `llmload merge`: shards of one run, run for real against one `llmload
//! serve`, merged into one run whose percentiles are exactly those of one
//! histogram recording every shard's events' values (the `_ns` fields, as
//! the engine recorded them), whose counts add up, and which says when a
//! shard is missing or was interrupted; and what is not one run's shards,
//! refused with the files named.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(30);

/// Runs shards 1..=n of one run into `root/shard-I`; `interrupt`: the
/// index to interrupt (SIGINT) once it has run `after`.
fn fleet(
    server: &Server,
    root: &Path,
    n: u32,
    args: &[&str],
    interrupt: Option<(u32, Duration)>,
) -> Vec<(PathBuf, Run)> {
    let children = spawn_shards(server, n, root, args);
    if let Some((i, after)) = interrupt {
        std::thread::sleep(after);
        signal(&children[i as usize - 1].1, libc::SIGINT);
    }
    children
        .into_iter()
        .map(|(dir, child)| {
            let run = wait_run(child, dir.clone(), LIMIT);
            (dir, run)
        })
        .collect()
}

/// `llmload merge ARGS`.
fn merge(args: &[&Path]) -> Run {
    llmload(&["merge", "--quiet"]).args(args).limit(LIMIT).run()
}

fn json(p: &Path) -> Value {
    serde_json::from_str(&read(p)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Series::quantile_ns's rule on a histogram of every value, in ms.
fn rollup_of(values: &[u64]) -> Vec<(&'static str, f64)> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    for &v in values {
        h.saturating_record(v.max(1));
    }
    let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
    let at = |q: f64| h.value_at_quantile(q).clamp(min, max) as f64 / 1e6;
    let mut out = vec![("min", min as f64 / 1e6), ("max", max as f64 / 1e6)];
    for (name, q) in [
        ("p1", 0.01),
        ("p5", 0.05),
        ("p10", 0.10),
        ("p25", 0.25),
        ("p50", 0.50),
        ("p75", 0.75),
        ("p80", 0.80),
        ("p90", 0.90),
        ("p95", 0.95),
        ("p97", 0.97),
        ("p99", 0.99),
        ("p999", 0.999),
    ] {
        out.push((name, at(q)));
    }
    out
}

/// Every measured success's `field` over the shards' events.
fn values(dirs: &[PathBuf], field: &str) -> Vec<u64> {
    dirs.iter()
        .flat_map(|d| {
            read(&d.join("events.jsonl"))
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("an events line is JSON"))
                .collect::<Vec<_>>()
        })
        .filter(|e| e["warmup"] == false && e["error"].is_null())
        .filter_map(|e| e[field].as_u64())
        .collect()
}

#[test]
fn merged_percentiles_are_those_of_every_shard_s_events() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let root = temp_dir("merge-exact");
    let (at, _) = start_in(800);
    let args = [
        "--rate",
        "120",
        "--duration",
        "2s",
        "--max-tokens",
        "4",
        "--start-at",
        at.as_str(),
    ];
    let runs = fleet(&server, &root, 3, &args, None);
    for (_, r) in &runs {
        r.assert_success();
    }
    let dirs: Vec<PathBuf> = runs.iter().map(|(d, _)| d.clone()).collect();
    // A tree: the shards are subdirectories of the one directory given.
    let m = merge(&[&root]);
    assert!(m.status.success(), "{}\n{}", m.stdout, m.stderr);
    let out = root.join("merged");
    let s = json(&out.join("summary.json"));
    assert_eq!(s["complete"], true, "{}", s["incomplete_reasons"]);
    crate::report::assert_valid(&s);
    crate::report::assert_valid(&runs[0].1.summary());
    assert_eq!(u(&s["merged"]["shards"]), 3);
    assert_eq!(s["merged"]["aligned"], true);
    assert!(s.get("shard").is_none());
    let sum = |k: &str| -> u64 {
        runs.iter()
            .map(|(_, r)| u(&r.summary()["requests"][k]))
            .sum()
    };
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["issued"]), sum("issued"));
    assert_eq!(u(&s["requests"]["completed"]), sum("completed"));
    assert!(sum("completed") > 100, "{}", sum("completed"));
    for (field, series) in [("ttft_ns", "ttft"), ("latency_ns", "e2e")] {
        let v = values(&dirs, field);
        let merged = &s["latency_ms"][series];
        assert_eq!(u(&merged["count"]), v.len() as u64, "{series}");
        for (name, want) in rollup_of(&v) {
            assert_eq!(f(&merged[name]), want, "{series} {name}");
        }
    }
    for name in [
        "report.txt",
        "report.csv",
        "metrics.prom",
        "timeline.csv",
        "report.html",
    ] {
        assert!(out.join(name).is_file(), "{name}");
    }
    let events = read(&out.join("events.jsonl")).lines().count() as u64;
    assert_eq!(events, sum("issued"));
    let text = read(&out.join("report.txt"));
    assert!(text.contains("merged from 3 of 3 shards"), "{text}");
    assert!(text.contains("largest start skew"), "{text}");
    // Merging again passes over the merged output inside the tree.
    let again = merge(&[&root]);
    assert!(again.status.success(), "{}", again.stderr);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn an_interrupted_or_missing_shard_makes_the_merge_incomplete() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let root = temp_dir("merge-incomplete");
    let args = ["--rate", "60", "--duration", "3s", "--max-tokens", "2"];
    let runs = fleet(
        &server,
        &root,
        3,
        &args,
        Some((2, Duration::from_millis(1500))),
    );
    assert_eq!(runs[1].1.status.code(), Some(130), "{}", runs[1].1.stderr);
    let m = merge(&[&root]);
    assert_eq!(m.status.code(), Some(1), "{}\n{}", m.stdout, m.stderr);
    let s = json(&root.join("merged/summary.json"));
    assert_eq!(s["complete"], false);
    assert_eq!(s["merged"]["incomplete"], serde_json::json!([2]));
    assert_eq!(
        s["incomplete_reasons"][0],
        "shard 2 of 3 incomplete: interrupted by a signal"
    );
    std::fs::remove_dir_all(root.join("shard-3")).unwrap();
    let out = root.join("elsewhere");
    let m = merge(&[&root, Path::new("--out"), &out]);
    assert_eq!(m.status.code(), Some(1), "{}", m.stderr);
    let s = json(&out.join("summary.json"));
    assert_eq!(
        s["incomplete_reasons"],
        serde_json::json!([
            "shard 2 of 3 incomplete: interrupted by a signal",
            "shard 3 of 3 missing: no summary.json found",
        ])
    );
    assert_eq!(s["merged"]["missing"], serde_json::json!([3]));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn what_is_not_one_run_s_shards_is_refused() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let root = temp_dir("merge-errors");
    let one = |dir: &str, shard: u32, requests: &str| {
        let d = root.join(dir);
        let r = wait_run(
            spawn_shard(
                &server,
                shard,
                2,
                &d,
                &["--requests", requests, "--max-tokens", "1"],
            ),
            d.clone(),
            LIMIT,
        );
        r.assert_success();
        d
    };
    let a1 = one("a1", 1, "6");
    let b2 = one("b2", 2, "8");
    let m = merge(&[&a1, &b2]);
    assert_eq!(m.status.code(), Some(2), "{}", m.stderr);
    assert!(m.stderr.contains("not of one run"), "{}", m.stderr);
    assert!(
        m.stderr.contains("a1") && m.stderr.contains("b2"),
        "{}",
        m.stderr
    );
    let again = one("again", 1, "6");
    let m = merge(&[&a1, &again]);
    assert_eq!(m.status.code(), Some(2), "{}", m.stderr);
    assert!(
        m.stderr.contains("shard 1 of 2 appears twice"),
        "{}",
        m.stderr
    );
    // A plain run is not a shard.
    let plain = bench_at(&server, &["--requests", "2", "--max-tokens", "1"], LIMIT);
    let m = merge(&[&a1, &plain.out]);
    assert_eq!(m.status.code(), Some(2), "{}", m.stderr);
    assert!(m.stderr.contains("not a shard"), "{}", m.stderr);
    // A shard another llmload wrote: refused by file and version, not read.
    let file = a1.join("summary.json");
    let mut doc = json(&file);
    doc["version"] = "0.0.1".into();
    doc["state"]["version"] = 1.into();
    doc["state"]["total"] = serde_json::json!({"issued": "many"});
    std::fs::write(&file, doc.to_string()).unwrap();
    let m = merge(&[&a1]);
    assert_eq!(m.status.code(), Some(2), "{}", m.stderr);
    assert!(
        m.stderr.contains(&file.display().to_string())
            && m.stderr
                .contains("written by llmload 0.0.1 (state version 1)"),
        "{}",
        m.stderr
    );
    std::fs::remove_dir_all(&root).unwrap();
}
