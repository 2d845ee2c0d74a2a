//! MLPerf's configs and command lines (`llmload benchmark …`, `bench
//! --config`, `validate`, `init --mlperf`) against `llmload serve`.

use yaml_rust2::{Yaml, YamlLoader};

use crate::util::{Server, llmload, mlperf_src_or_skip, temp_dir, u};

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
                "--profiling.engine",
                "vllm",
            ],
            "--profiling.engine: 'vllm' is not supported",
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
         settings:\n  load_pattern: {type: poisson, target_qps: 5}\n  profiling: {engine: vllm}\n",
    )
    .unwrap();
    let want = format!(
        "{}: settings.profiling.engine: 'vllm' is not supported",
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

/// `text` with every dataset `path:` pointed at `fixture` and every URL at
/// a local port: what is left to judge is the schema.
fn localized(text: &str, fixture: &str) -> String {
    let url = regex::Regex::new(r#"https?://[^\s"',\]]+"#).unwrap();
    text.lines()
        .map(|line| {
            let t = line.trim_start();
            let t = t.strip_prefix("- ").unwrap_or(t);
            if let Some(v) = t.strip_prefix("path:")
                && !v.trim().is_empty()
            {
                let indent = &line[..line.len() - t.len()];
                return format!("{indent}path: \"{fixture}\"");
            }
            url.replace_all(line, "http://127.0.0.1:9").into_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every example and template YAML of MLPerf's, copied with only its dataset
/// paths and URLs made local, through `llmload validate`: each either
/// validates or is refused for exactly the reason listed (videogen and
/// multimodal datasets belong to other work). No predefined dataset is
/// cached here: validate notes that, as MLPerf's validate-yaml loads no data.
#[test]
fn mlperfs_example_configs_validate() {
    let Some(root) = mlperf_src_or_skip() else {
        return;
    };
    let dir = temp_dir("mlperf-examples");
    let fixture = dir.join("rows.jsonl");
    let row = r#"{"text_input": "q", "article": "a", "prompt": "p", "question": "q", "input_tokens": "1 2", "system_prompt": "s", "ground_truth": "g", "highlights": "h", "answer": "x"}"#;
    std::fs::write(&fixture, format!("{row}\n{row}\n")).unwrap();
    let multimodal = "its q3vl preset sends a product image as multimodal content parts";
    let videogen = "'videogen' is not supported";
    let expect: &[(&str, Option<&str>)] = &[
        (
            "examples/02_ServerBenchmarking/offline_llama3_8b_cnn.yaml",
            None,
        ),
        (
            "examples/02_ServerBenchmarking/online_llama2_70b_cnn.yaml",
            None,
        ),
        (
            "examples/04_GPTOSS120B_Example/gptoss_120b_example.yaml",
            None,
        ),
        (
            "examples/04_GPTOSS120B_Example/sglang_gptoss_120b_example.yaml",
            None,
        ),
        (
            "examples/04_GPTOSS120B_Example/vllm_gptoss_120b_example.yaml",
            None,
        ),
        (
            "examples/04_GPTOSS120B_Example/vllm_gptoss_120b_per_dataset_osl_example.yaml",
            None,
        ),
        (
            "examples/05_Llama_Examples/offline_llama3_8b_cnn.yaml",
            None,
        ),
        (
            "examples/05_Llama_Examples/online_llama2_70b_orca.yaml",
            None,
        ),
        ("examples/05_Llama_Examples/online_llama3_8b_cnn.yaml", None),
        (
            "examples/08_Qwen3-VL-235B-A22B_Example/interactive_qwen3_vl_235b_a22b_shopify_8k.yaml",
            Some(multimodal),
        ),
        (
            "examples/08_Qwen3-VL-235B-A22B_Example/offline_qwen3_vl_235b_a22b_shopify.yaml",
            Some(multimodal),
        ),
        (
            "examples/08_Qwen3-VL-235B-A22B_Example/server_qwen3_vl_235b_a22b_shopify.yaml",
            Some(multimodal),
        ),
        (
            "examples/09_Wan22_VideoGen_Example/offline_wan22.yaml",
            Some(videogen),
        ),
        (
            "examples/09_Wan22_VideoGen_Example/offline_wan22_accuracy.yaml",
            Some(videogen),
        ),
        (
            "examples/09_Wan22_VideoGen_Example/offline_wan22_submission.yaml",
            Some(videogen),
        ),
        (
            "examples/09_Wan22_VideoGen_Example/single_stream_wan22_submission.yaml",
            Some(videogen),
        ),
        (
            "examples/10_Agentic_Inference/kimi_agentic_benchmark.yaml",
            None,
        ),
        (
            "examples/10_Agentic_Inference/qwen_agentic_benchmark.yaml",
            None,
        ),
        (
            "examples/11_Edge_Agentic_Example/online_edge_full_run.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/offline_template.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/online_template.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/concurrency_template.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/offline_template_full.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/online_template_full.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/concurrency_template_full.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/eval_template.yaml",
            None,
        ),
        (
            "src/inference_endpoint/config/templates/submission_template.yaml",
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (rel, refused) in expect {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        let copy = dir.join(rel.rsplit('/').next().unwrap());
        std::fs::write(&copy, localized(&text, fixture.to_str().unwrap())).unwrap();
        let run = llmload(&["validate", copy.to_str().unwrap()])
            .envs(&[
                ("MODEL_DIR", "/models/m"),
                ("SWEBENCH_SERVICE_AUTH_TOKEN", "tok-SECRET-example"),
            ])
            .out(&dir)
            .run();
        let all = format!("{}{}", run.stdout, run.stderr);
        let ok = match refused {
            None => run.status.code() == Some(0),
            // Refused for that reason and no other.
            Some(why) => {
                run.status.code() == Some(1) && run.stderr.lines().all(|l| l.contains(why))
            }
        };
        if !ok || all.contains("tok-SECRET-example") {
            failures.push(format!("{rel} ({:?}):\n{all}", run.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!(
        "{} MLPerf configs checked from {}",
        expect.len(),
        root.display()
    );
}

/// Agentic configs validate and are refused when run, naming the feature;
/// an external scorer is refused only for its phase, after the
/// performance phase ran.
#[test]
fn agentic_runs_are_refused_and_external_scorers_only_for_their_phase() {
    let server = Server::start(&["--output-tokens", "4"]);
    let dir = temp_dir("mlperf-deferred");
    let data = dataset(&dir);
    let agentic = dir.join("agentic.yaml");
    std::fs::write(
        &agentic,
        format!(
            "type: online\nmodel_params: {{name: m}}\n\
             endpoint_config: {{endpoints: ['{}']}}\n\
             settings: {{load_pattern: {{type: agentic_inference, target_concurrency: 2}}}}\n\
             datasets:\n- {{path: '{data}', parser: {{prompt: text_input}}, agentic_inference: {{turn_timeout_s: 60}}}}\n",
            server.url()
        ),
    )
    .unwrap();
    let run = llmload(&["validate", agentic.to_str().unwrap()])
        .out(&dir)
        .run();
    run.assert_success();
    assert!(run.stdout.contains("a run is refused"), "{}", run.stdout);
    let run = llmload(&["benchmark", "from-config", "-c", agentic.to_str().unwrap()])
        .out(&dir)
        .run();
    assert_ne!(run.status.code(), Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("agentic_inference (multi-turn trajectory replay) is not supported"),
        "{}",
        run.stderr
    );

    let out = dir.join("report");
    let scored = dir.join("scored.yaml");
    std::fs::write(
        &scored,
        format!(
            "type: offline\nmodel_params: {{name: m}}\nreport_dir: '{}'\n\
             endpoint_config: {{endpoints: ['{}']}}\n\
             settings: {{runtime: {{n_samples_to_issue: 5}}, client: {{log_level: WARN}}}}\n\
             datasets:\n- {{path: '{data}', samples: 3}}\n\
             - {{name: swe, type: accuracy, path: '{data}', accuracy_config: {{eval_method: swe_bench_scorer}}}}\n",
            out.display(),
            server.url()
        ),
    )
    .unwrap();
    let run = llmload(&["benchmark", "from-config", "-c", scored.to_str().unwrap()])
        .out(&out)
        .run();
    assert!(
        run.stderr.contains("scorer 'swe_bench_scorer'"),
        "{}",
        run.stderr
    );
    let s = run.summary();
    assert_eq!(s["complete"], false, "{s}");
    assert!(
        s["incomplete_reasons"]
            .to_string()
            .contains("swe_bench_scorer"),
        "{s}"
    );
    // The performance phase ran in full; the inert knob is noted.
    assert_eq!(u(&s["requests"]["completed"]), 5, "{s}");
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("settings.client.log_level: 'WARN' has no effect"),
        "{notes}"
    );
    assert!(
        notes.contains("datasets[0].samples: 3 has no effect"),
        "{notes}"
    );
}
