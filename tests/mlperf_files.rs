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

fn yaml(path: &std::path::Path) -> yaml_rust2::Yaml {
    let text = read(path);
    yaml_rust2::YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
        .remove(0)
}

/// A config's own name, dataset name, warm-up seed and QPS definition
/// reach config.yaml and result_summary.json; without a stream and a
/// tokenizer the series MLPerf cannot measure are `{}` and `tps` null,
/// while our summary keeps the endpoint's usage counts.
#[test]
fn from_config_files_carry_the_configs_settings() {
    let server = Server::start(&["--ttft", "1ms", "--output-tokens", "4"]);
    let dir = temp_dir("mlperf-names");
    let data = dir.join("rows.jsonl");
    let rows: String = (0..10)
        .map(|i| format!("{{\"prompt\": \"question number {i}\"}}\n"))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let out = dir.join("report");
    let config = format!(
        "name: my-run\ntype: online\n\
         model_params: {{name: m, streaming: 'off', max_new_tokens: 4}}\n\
         datasets:\n- {{name: perf-set, type: performance, path: '{}'}}\n\
         settings:\n  runtime: {{n_samples_to_issue: 20}}\n  \
         load_pattern: {{type: poisson, target_qps: 200, use_legacy_loadgen_qps_metrics: false}}\n  \
         warmup: {{enabled: true, n_requests: 2, warmup_random_seed: 7}}\n\
         endpoint_config:\n  endpoints: ['{}']\nreport_dir: '{}'\n",
        data.display(),
        server.url(),
        out.display(),
    );
    let path = dir.join("run.yaml");
    std::fs::write(&path, config).unwrap();
    let run = llmload(&["benchmark", "from-config", "-c", path.to_str().unwrap()])
        .out(&out)
        .limit(Duration::from_secs(30))
        .run();
    run.assert_success();

    let c = yaml(&out.join("config.yaml"));
    assert_eq!(c["name"].as_str(), Some("my-run"));
    assert_eq!(c["datasets"][0]["name"].as_str(), Some("perf-set"));
    let lp = &c["settings"]["load_pattern"];
    assert_eq!(lp["use_legacy_loadgen_qps_metrics"].as_bool(), Some(false));
    let w = &c["settings"]["warmup"];
    assert_eq!(w["warmup_random_seed"].as_i64(), Some(7));
    assert_eq!(w["salt"].as_bool(), Some(false));
    assert_eq!(w["drain"].as_bool(), Some(false));

    let r: Value =
        serde_json::from_str(&read(&out.join("performance/result_summary.json"))).unwrap();
    assert_eq!(u(&r["n_samples_issued"]), 20, "{r}");
    for series in [
        "ttft",
        "tpot",
        "output_sequence_lengths",
        "input_sequence_lengths",
    ] {
        assert_eq!(r[series], serde_json::json!({}), "{series}");
    }
    assert_eq!(r["tps"], Value::Null);
    assert!(f(&r["qps"]) > 0.0);
    assert!(r["latency"]["percentiles"]["50.0"].is_f64());
    assert_eq!(r["legacy_loadgen_window_duration_ns"], Value::Null);
    let rc = &r["run_config"];
    assert_eq!(rc["warmup"]["warmup_random_seed"], 7);
    assert_eq!(rc["load_pattern"]["use_legacy_loadgen_qps_metrics"], false);
    // build.rs sets it for every target of the package, tests included.
    let sha = option_env!("LLMLOAD_GIT_SHA").filter(|s| !s.is_empty());
    assert_eq!(r["git_sha"].as_str(), sha, "{r}");
    // Our own summary keeps the server's usage counts.
    let s = run.summary();
    assert_eq!(s["tokens"]["output_source"], "usage", "{}", s["tokens"]);
    assert_eq!(u(&s["tokens"]["output_total"]), 80, "{}", s["tokens"]);
}

/// `--mode acc` runs the accuracy phase one request at a time on one
/// connection: config.yaml says so, as MLPerf's compliance check
/// (`single_stream`: num_workers == 1 and max_connections == 1) reads it.
#[test]
fn accuracy_only_config_yaml_is_single_stream() {
    let server = Server::start(&["--echo", "--ttft", "1ms"]);
    let dir = temp_dir("mlperf-acc-single");
    let data = dir.join("qa.jsonl");
    let rows: String = (0..4)
        .map(|i| format!("{{\"question\": \"q{i}\", \"answer\": \"q{i}\"}}\n"))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let out = dir.join("report");
    let run = llmload(&[
        "benchmark",
        "offline",
        "--endpoints",
        &server.url(),
        "--model",
        "m",
        "--dataset",
        &format!(
            "acc:{},parser.prompt=question,accuracy_config.eval_method=string_match,accuracy_config.ground_truth=answer",
            data.display()
        ),
        "--mode",
        "acc",
        "--workers",
        "2",
        "--report-dir",
        out.to_str().unwrap(),
    ])
    .out(&out)
    .limit(Duration::from_secs(30))
    .run();
    run.assert_success();
    let c = yaml(&out.join("config.yaml"));
    let client = &c["settings"]["client"];
    assert_eq!(client["num_workers"].as_i64(), Some(1), "{c:?}");
    assert_eq!(client["max_connections"].as_i64(), Some(1), "{c:?}");
}
