//! MLPerf mode's result files from a real run: `performance/result_summary.json`
//! with MLPerf's grid, early stopping and LoadGen QPS, `sample_idx_map.json`
//! joined to `events.jsonl` by `sample_uuid`, and the MLPerf section of
//! `report.txt`.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

const GRID: [&str; 12] = [
    "99.9", "99.0", "97.0", "95.0", "90.0", "80.0", "75.0", "50.0", "25.0", "10.0", "5.0", "1.0",
];

/// The keys of the object at `key` inside `text`, in written order (a
/// `serde_json::Value` would sort them).
fn keys_in_order(text: &str, key: &str) -> Vec<String> {
    let start = text.find(&format!("\"{key}\": {{")).expect(key);
    let body = &text[start..];
    let end = body.find('}').unwrap();
    body[..end]
        .lines()
        .skip(1)
        .filter_map(|l| l.trim().split('"').nth(1).map(str::to_string))
        .collect()
}

#[test]
fn poisson_run_writes_mlperf_files() {
    let server = Server::start(&["--ttft", "20ms", "--tpot", "1ms"]);
    let dir = temp_dir("mlperf");
    let data = dir.join("rows.jsonl");
    let rows: String = (0..20)
        .map(|i| format!("{{\"prompt\": \"question number {i}\"}}\n"))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let profile = dir.join("mlperf.json");
    let p = serde_json::json!({
        "preset": "mlperf", "mode": "poisson", "rate": 200, "requests": 300,
        "max_tokens": 8, "dataset": data.display().to_string(), "order": "shuffle"
    });
    std::fs::write(&profile, p.to_string()).unwrap();
    let run = bench_at(
        &server,
        &["--profile", profile.to_str().unwrap()],
        Duration::from_secs(60),
    );
    run.assert_success();

    let text = read(&run.out.join("performance/result_summary.json"));
    let r: Value = serde_json::from_str(&text).expect("result_summary.json is JSON");
    assert_eq!(u(&r["n_samples_issued"]), 300);
    assert_eq!(u(&r["n_samples_completed"]), 300);
    assert_eq!(r["state"], "complete");
    for series in ["ttft", "tpot", "latency"] {
        let grid = &r[series]["percentiles"];
        assert_eq!(grid.as_object().unwrap().len(), 12, "{series}");
        for k in GRID {
            assert!(grid[k].is_f64(), "{series} {k}: {grid}");
        }
    }
    assert_eq!(keys_in_order(&text, "percentiles"), GRID);
    // TTFT from issue, in ns, around the server's 20 ms.
    let ttft50 = f(&r["ttft"]["percentiles"]["50.0"]);
    assert!((19e6..=26e6).contains(&ttft50), "ttft p50 {ttft50}");
    // LoadGen's QPS: (completed − 1) over its window.
    let window = u(&r["legacy_loadgen_window_duration_ns"]);
    let qps = f(&r["qps"]);
    let want = 299.0 / (window as f64 / 1e9);
    assert!((qps - want).abs() <= want * 1e-12, "{qps} vs {want}");
    // 300 samples: too few for a p99 estimate (662), enough for p90 (64).
    let es = &r["latency"]["early_stopping_percentiles"];
    assert_eq!(es["99.0"], Value::Null);
    assert!(f(&es["90.0"]) >= f(&r["latency"]["percentiles"]["90.0"]));
    assert_eq!(r["run_config"]["load_pattern"]["type"], "poisson");

    // Every measured request is in the map, under the id its events line has.
    let map: Value = serde_json::from_str(&read(&run.out.join("sample_idx_map.json"))).unwrap();
    let map = map["performance"].as_object().unwrap();
    assert_eq!(map.len(), 300);
    let events: Vec<Value> = read(&run.out.join("events.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seen: HashMap<String, u64> = HashMap::new();
    for e in events.iter().filter(|e| e["warmup"] == false) {
        let id = e["sample_uuid"].as_str().unwrap();
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        let row = u(&e["row"]);
        assert!(row < 20, "{e}");
        assert_eq!(map[id], e["row"], "{id}");
        assert!(seen.insert(id.to_string(), row).is_none(), "{id} twice");
    }
    assert_eq!(seen.len(), 300);

    let report = read(&run.out.join("report.txt"));
    assert!(report.contains("== MLPerf"), "{report}");
    assert!(report.contains("LoadGen window"), "{report}");
}
