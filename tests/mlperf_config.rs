//! MLPerf's configs and command lines (`llmload benchmark …`, `bench
//! --config`, `validate`, `init --mlperf`) against `llmload serve`.

use yaml_rust2::{Yaml, YamlLoader};

use crate::util::{Server, llmload, temp_dir, u};

const ONLINE_TEMPLATE: &str = include_str!("fixtures/mlperf/online_template.yaml");

/// A 20-row dataset in MLPerf's `text_input` column.
fn dataset(dir: &std::path::Path) -> String {
    let p = dir.join("prompts.jsonl");
    let rows: String = (0..20)
        .map(|i| format!("{{\"text_input\": \"question number {i}\"}}\n"))
        .collect();
    std::fs::write(&p, rows).unwrap();
    p.display().to_string()
}

fn yaml(path: &std::path::Path) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
        .remove(0)
}

#[test]
fn online_template_runs_from_config_with_dotted_overrides() {
    let server = Server::start(&["--ttft", "2ms", "--tpot", "1ms", "--output-tokens", "4"]);
    let dir = temp_dir("mlperf-online");
    let data = dataset(&dir);
    // The template as MLPerf ships it, its placeholders filled; the
    // endpoint through the environment, as MLPerf's configs take it.
    let config = ONLINE_TEMPLATE
        .replace("'<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'", "m")
        .replace(
            "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
            &format!("'{data}'"),
        )
        .replace(
            "http://localhost:8000",
            "${LLMLOAD_IT_ENDPOINT:-http://nowhere:1}",
        );
    let path = dir.join("online.yaml");
    std::fs::write(&path, config).unwrap();
    let out = dir.join("report");
    let url = server.url();
    let run = llmload(&[
        "benchmark",
        "from-config",
        "-c",
        path.to_str().unwrap(),
        "--runtime.n-samples-to-issue",
        "40",
        "--settings.load-pattern.target-qps",
        "50",
        "--report-dir",
        out.to_str().unwrap(),
    ])
    .env("LLMLOAD_IT_ENDPOINT", &url)
    .out(&out)
    .run();
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["issued"]), 40, "{s}");
    assert_eq!(u(&s["requests"]["completed"]), 40, "{s}");
    assert_eq!(s["config"]["preset"], "mlperf", "{}", s["config"]);
    assert_eq!(s["config"]["mode"], "poisson");
    let c = yaml(&out.join("config.yaml"));
    assert_eq!(c["type"].as_str(), Some("online"));
    let lp = &c["settings"]["load_pattern"];
    assert_eq!(lp["type"].as_str(), Some("poisson"));
    assert_eq!(lp["target_qps"].as_f64(), Some(50.0));
    let rt = &c["settings"]["runtime"];
    assert_eq!(rt["n_samples_to_issue"].as_i64(), Some(40));
    assert_eq!(rt["min_duration_ms"].as_i64(), Some(600_000));
    assert_eq!(c["model_params"]["name"].as_str(), Some("m"));
    assert!(
        matches!(c["model_params"]["streaming"].as_str(), Some("on" | "off")),
        "{c:?}"
    );
    assert_eq!(
        c["endpoint_config"]["endpoints"][0].as_str(),
        Some(url.as_str())
    );
    assert_eq!(
        c["datasets"][0]["parser"]["prompt"].as_str(),
        Some("text_input")
    );
}

#[test]
fn benchmark_offline_command_line_runs() {
    let server = Server::start(&["--output-tokens", "4"]);
    let dir = temp_dir("mlperf-offline");
    let data = dataset(&dir);
    let out = dir.join("report");
    let url = server.url();
    let key = "sk-mlperf-secret";
    let run = llmload(&[
        "benchmark",
        "offline",
        "--endpoints",
        &url,
        "--model",
        "m",
        "--api-key",
        key,
        "--dataset",
        &format!("perf:{data},parser.prompt=text_input"),
        "--num-samples",
        "12",
        "--max-output-tokens",
        "4",
        "--workers",
        "1",
        "--report-dir",
        out.to_str().unwrap(),
    ])
    .out(&out)
    .run();
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 12, "{s}");
    assert_eq!(s["config"]["mode"], "offline");
    assert_eq!(s["config"]["max_tokens"], 4);
    let text = std::fs::read_to_string(out.join("config.yaml")).unwrap();
    assert!(!text.contains(key), "{text}");
    let c = yaml(&out.join("config.yaml"));
    assert_eq!(c["type"].as_str(), Some("offline"));
    assert_eq!(
        c["settings"]["load_pattern"]["type"].as_str(),
        Some("max_throughput")
    );
    assert_eq!(
        c["settings"]["runtime"]["n_samples_to_issue"].as_i64(),
        Some(12)
    );
    assert_eq!(c["endpoint_config"]["api_key"].as_str(), Some("<redacted>"));
}

#[test]
fn unsupported_flags_and_fields_are_named_and_nothing_runs() {
    let dir = temp_dir("mlperf-refusals");
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "benchmark",
                "offline",
                "--endpoints",
                "http://127.0.0.1:9",
                "--frobnicate",
                "1",
            ],
            "--frobnicate: not a flag of MLPerf's benchmark command",
        ),
        (
            &[
                "benchmark",
                "online",
                "--endpoints",
                "http://127.0.0.1:9",
                "--load-pattern",
                "burst",
            ],
            "--load-pattern: 'burst' is not supported",
        ),
        (
            &[
                "benchmark",
                "offline",
                "--endpoints",
                "http://127.0.0.1:9",
                "--client.transport.io-threads",
                "8",
            ],
            "--client.transport.io-threads: '8' is not supported",
        ),
        (
            &[
                "benchmark",
                "offline",
                "--endpoints",
                "http://127.0.0.1:9",
                "--mode",
                "both",
            ],
            "both needs an accuracy dataset: give --accuracy-dataset PATH (--dataset acc:PATH",
        ),
        (
            &["benchmark", "offline", "--model", "m"],
            "--endpoints: required",
        ),
    ];
    for (args, says) in cases {
        let run = llmload(args).out(&dir).run();
        // MLPerf's statuses: its parser refuses flags (1); a run it cannot
        // set up from valid flags is bad input (2).
        let want = if says.starts_with("both needs") { 2 } else { 1 };
        assert_eq!(run.status.code(), Some(want), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
    }

    // validate and bench --config name the file and the YAML path.
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "type: online\nendpoint_config: {endpoints: ['http://127.0.0.1:9']}\n\
         settings:\n  load_pattern: {type: poisson, target_qps: 5}\n  client: {log_level: DEBUG}\n",
    )
    .unwrap();
    let want = format!(
        "{}: settings.client.log_level: 'DEBUG' is not supported",
        bad.display()
    );
    let run = llmload(&["validate", bad.to_str().unwrap()])
        .out(&dir)
        .run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains(&want), "{}", run.stderr);
    let run = llmload(&["bench", "--config", bad.to_str().unwrap()])
        .out(&dir)
        .run();
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains(&want), "{}", run.stderr);

    // init --mlperf writes a template the reader takes.
    let t = dir.join("c.yaml");
    let run = llmload(&["init", "--mlperf", "concurrency", t.to_str().unwrap()])
        .out(&dir)
        .run();
    run.assert_success();
    let c = yaml(&t);
    assert_eq!(
        c["settings"]["load_pattern"]["type"].as_str(),
        Some("concurrency")
    );
}

/// The offline and concurrency templates as MLPerf ships them, only their
/// placeholders filled, run with MLPerf's run rules: `--duration 1s` sizes
/// the count at ceil(10/s × 1 s × 1.1) = 11, rounded up to one pass of the
/// 20 rows; each writes MLPerf's result summary and config.yaml.
#[test]
fn offline_and_concurrency_templates_run_unchanged() {
    let server = Server::start(&["--ttft", "2ms", "--tpot", "1ms", "--output-tokens", "4"]);
    let dir = temp_dir("mlperf-templates");
    let data = dataset(&dir);
    for (name, text, kind) in [
        (
            "offline",
            include_str!("fixtures/mlperf/offline_template.yaml"),
            "max_throughput",
        ),
        (
            "concurrency",
            include_str!("fixtures/mlperf/concurrency_template.yaml"),
            "concurrency",
        ),
    ] {
        let config = text
            .replace("'<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'", "m")
            .replace(
                "'<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>'",
                &format!("'{data}'"),
            )
            .replace("http://localhost:8000", &server.url());
        let path = dir.join(format!("{name}.yaml"));
        std::fs::write(&path, config).unwrap();
        let out = dir.join(name);
        let run = llmload(&[
            "benchmark",
            "from-config",
            "-c",
            path.to_str().unwrap(),
            "--duration",
            "1s",
            "--report-dir",
            out.to_str().unwrap(),
        ])
        .out(&out)
        .run();
        run.assert_success();
        let r: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("performance/result_summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(u(&r["n_samples_issued"]), 20, "{name}: {r}");
        assert_eq!(u(&r["n_samples_completed"]), 20, "{name}");
        assert_eq!(r["run_config"]["load_pattern"]["type"], kind, "{name}");
        let c = yaml(&out.join("config.yaml"));
        assert_eq!(
            c["settings"]["load_pattern"]["type"].as_str(),
            Some(kind),
            "{name}"
        );
        assert_eq!(
            c["settings"]["runtime"]["min_duration_ms"].as_i64(),
            Some(1000)
        );
    }
}
