//! MLPerf's predefined datasets by name: read from a local cache (the
//! fixture at tests/fixtures/datasets-cache), never downloaded; `llmload
//! datasets list|show` says what each needs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{Server, llmload, mlperf_src_or_skip, read, temp_dir, u};

fn cache() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/datasets-cache")
}

/// MLPerf's example naming `open_orca::llama2_70b` for both phases, with
/// only its endpoint and model changed, run from the fixture cache: the
/// preset's prompt column reaches the server and the accuracy phase
/// scores every row.
#[test]
fn mlperfs_open_orca_example_runs_from_the_cache() {
    let Some(root) = mlperf_src_or_skip() else {
        return;
    };
    let text = std::fs::read_to_string(
        root.join("examples/05_Llama_Examples/online_llama2_70b_orca.yaml"),
    )
    .unwrap();
    let server = Server::start(&["--echo", "--ttft", "1ms", "--tpot", "1ms"]);
    let dir = temp_dir("predefined-orca");
    let config = text
        .replace("http://localhost:8000", &server.url())
        .replace("meta-llama/Llama-2-70b-chat-hf", "m");
    let path = dir.join("online_llama2_70b_orca.yaml");
    std::fs::write(&path, config).unwrap();
    let out = dir.join("report");
    let run = llmload(&[
        "benchmark",
        "from-config",
        "-c",
        path.to_str().unwrap(),
        "--datasets-dir",
        cache().to_str().unwrap(),
        "--runtime.n-samples-to-issue",
        "16",
        "--runtime.min-duration-ms",
        "0",
        "--settings.load-pattern.target-qps",
        "200",
        "--model-params.max-new-tokens",
        "8",
        "--report-dir",
        out.to_str().unwrap(),
    ])
    .out(&out)
    .run();
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 16, "{s}");
    let results: Value =
        serde_json::from_str(&read(&out.join("accuracy/accuracy_results.json"))).unwrap();
    let e = &results["accuracy_scores"][0];
    assert_eq!(e["dataset_name"], "open_orca::llama2_70b", "{results}");
    assert_eq!(u(&e["total_samples"]), 8, "{results}");
    let events = read(&out.join("events.jsonl"));
    // The echo server answers with the user message: the preset's prompt
    // column, not MLPerf's parser entry, which it ignores.
    assert!(
        events.contains("What is 5 plus 5?"),
        "the question is the prompt"
    );
}

/// An uncached predefined dataset validates with a note (MLPerf's
/// validate-yaml loads no data) and fails at run start naming the
/// dataset, the file and every place looked.
#[test]
fn an_uncached_predefined_dataset_validates_and_fails_to_run_naming_it() {
    let server = Server::start(&["--output-tokens", "4"]);
    let dir = temp_dir("predefined-missing");
    let empty = dir.join("empty-cache");
    std::fs::create_dir_all(&empty).unwrap();
    let path = dir.join("gpqa.yaml");
    std::fs::write(
        &path,
        format!(
            "type: offline\nmodel_params: {{name: m}}\n\
             endpoint_config: {{endpoints: ['{}']}}\n\
             settings: {{runtime: {{n_samples_to_issue: 4}}}}\n\
             datasets:\n- {{name: 'gpqa::gptoss', type: performance}}\n",
            server.url()
        ),
    )
    .unwrap();
    let env = [
        ("LLMLOAD_DATASETS_DIR", empty.to_str().unwrap()),
        ("HF_HOME", "/nonexistent-hf-home"),
    ];
    let run = llmload(&["validate", path.to_str().unwrap()])
        .envs(&env)
        .current_dir(&dir)
        .out(&dir)
        .run();
    run.assert_success();
    assert!(
        run.stdout.contains("not in the local dataset cache"),
        "{}",
        run.stdout
    );
    let run = llmload(&["benchmark", "from-config", "-c", path.to_str().unwrap()])
        .envs(&env)
        .current_dir(&dir)
        .out(&dir.join("report"))
        .run();
    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    for want in [
        "predefined dataset 'gpqa::gptoss'",
        "gpqa/diamond/gpqa_diamond.parquet",
        &format!("{}/gpqa/diamond/gpqa_diamond.parquet", empty.display()),
        "dataset_cache/gpqa/diamond/gpqa_diamond.parquet",
        "/nonexistent-hf-home/llmload-datasets/gpqa/diamond/gpqa_diamond.parquet",
    ] {
        assert!(run.stderr.contains(want), "{want} not in:\n{}", run.stderr);
    }
}

#[test]
fn datasets_list_and_show_say_what_each_needs() {
    let run = llmload(&[
        "datasets",
        "--datasets-dir",
        cache().to_str().unwrap(),
        "list",
    ])
    .run();
    run.assert_success();
    let line = |id: &str| {
        run.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("{id} not listed:\n{}", run.stdout))
            .to_string()
    };
    assert!(line("open_orca").contains("cached at "), "{}", run.stdout);
    assert!(line("open_orca").contains("llama2_70b"));
    assert!(line("cnn_dailymail").contains("llama3_8b"));
    assert!(line("shopify_product_catalogue").contains("not supported"));
    assert!(line("random").contains("not supported"));
    for id in ["aime25", "gpqa", "livecodebench", "swe_bench", "bfcl_v4"] {
        line(id);
    }
    let run = llmload(&["datasets", "show", "cnn_dailymail::llama3_8b"])
        .env("HF_HOME", "/nonexistent-hf-home")
        .run();
    run.assert_success();
    for want in [
        "file: cnn_dailymail/cnn_dailymail.parquet (parquet)",
        "columns: article, highlights",
        "abisee/cnn_dailymail",
        "Summarize the following news article in 128 tokens.",
        "/nonexistent-hf-home/llmload-datasets/cnn_dailymail/cnn_dailymail.parquet (absent)",
    ] {
        assert!(run.stdout.contains(want), "{want} not in:\n{}", run.stdout);
    }
    let run = llmload(&["datasets", "show", "nope"]).run();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        run.stderr
            .contains("'nope' is not one of MLPerf's predefined datasets")
    );
}
