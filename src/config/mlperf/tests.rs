use std::time::Duration;

use serde_json::Value;

use super::tree::{parse, set};
use super::*;
use crate::config::profile::{HumanDuration, Profile};

const OFFLINE: &str = include_str!("../../../tests/fixtures/mlperf/offline_template.yaml");
const ONLINE: &str = include_str!("../../../tests/fixtures/mlperf/online_template.yaml");
const CONCURRENCY: &str = include_str!("../../../tests/fixtures/mlperf/concurrency_template.yaml");
const ONLINE_FULL: &str = include_str!("../../../tests/fixtures/mlperf/online_template_full.yaml");
const RESOLVED: &str = include_str!("../../../tests/fixtures/mlperf/resolved_run_config.yaml");

fn env(name: &str) -> Option<String> {
    (name == "PORT").then(|| "8123".to_string())
}

fn tree(text: &str) -> Tree {
    parse(text, &env).unwrap()
}

fn ok(text: &str) -> Read {
    read(tree(text)).unwrap_or_else(|e| panic!("{e:?}"))
}

fn errors(text: &str) -> Vec<(String, String)> {
    read(tree(text)).expect_err("expected errors")
}

fn ms(n: u64) -> Option<HumanDuration> {
    Some(HumanDuration(Duration::from_millis(n)))
}

const PLACEHOLDER_DATASET: &str =
    "<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>,prompt=text_input";

#[test]
fn offline_template_maps_to_an_offline_profile() {
    let r = ok(OFFLINE);
    assert!(!r.online);
    assert_eq!(
        r.profile,
        Profile {
            preset: Some("mlperf".into()),
            endpoint: Some("http://localhost:8000".into()),
            model: Some("<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>".into()),
            mode: Some("offline".into()),
            dataset: Some(PLACEHOLDER_DATASET.into()),
            min_duration: ms(600_000),
            mlperf: Extras {
                accuracy_drain: r.profile.mlperf.accuracy_drain,
                name: Some("offline_benchmark".into()),
                dataset_name: Some("perf".into()),
                ..Extras::default()
            },
            ..Profile::default()
        }
    );
    // MLPerf's accuracy phase waits for every response by default.
    let drain = r.profile.mlperf.accuracy_drain.unwrap().0;
    assert!(drain > Duration::from_secs(86_400 * 365), "{drain:?}");
    assert_eq!(r.audit, None);
}

#[test]
fn online_template_maps_to_poisson_at_its_qps() {
    let r = ok(ONLINE);
    assert!(r.online);
    let p = r.profile;
    assert_eq!(p.mode.as_deref(), Some("poisson"));
    assert_eq!(p.rate, Some(10.0));
    assert_eq!(p.min_duration, ms(600_000));
    assert_eq!(p.max_duration, None, "0 is no limit");
    assert_eq!(p.requests, None);
    assert_eq!(p.stream, None, "auto: the preset decides");
    assert_eq!(p.dataset.as_deref(), Some(PLACEHOLDER_DATASET));
}

#[test]
fn concurrency_template_maps_to_concurrency() {
    let p = ok(CONCURRENCY).profile;
    assert_eq!(p.mode.as_deref(), Some("concurrency"));
    assert_eq!(p.concurrency, Some(32));
    assert_eq!(p.rate, None);
}

#[test]
fn the_config_mlperf_writes_reads_back() {
    let p = ok(RESOLVED).profile;
    assert_eq!(p.mode.as_deref(), Some("concurrency"));
    assert_eq!(p.concurrency, Some(16));
    assert_eq!(p.requests, Some(400));
    assert_eq!(p.min_duration, ms(0));
    assert_eq!(p.workers, Some(1));
    assert_eq!(p.connections, None, "-1 is auto");
    assert_eq!(p.stream, Some(true));
    assert_eq!(p.pin, Some(false));
    assert_eq!(p.scheduler_seed, Some(42));
    assert_eq!(p.dataloader_seed, Some(42));
    assert_eq!(p.early_stopping, Some(true));
    assert_eq!(p.warmup_requests, None);
    assert_eq!(p.max_tokens, Some(1024));
    assert_eq!(p.min_tokens, None, "1 is the default and sends nothing");
    assert_eq!(p.api.as_deref(), Some("openai-chat"));
    assert_eq!(p.endpoint.as_deref(), Some("http://127.0.0.1:18100"));
    assert_eq!(
        p.tokenizer.as_deref(),
        Some(std::path::Path::new(
            "endpoints/tests/assets/tokenizers/char"
        ))
    );
    assert_eq!(p.out.as_deref(), Some(std::path::Path::new("reports/run1")));
    assert_eq!(p.drain_timeout.map(|d| d.0), Some(Duration::from_secs(240)));
}

#[test]
fn every_field_of_the_full_template_is_known() {
    let p = ok(ONLINE_FULL).profile;
    // Its accuracy dataset, with the scorer of accuracy_config over the
    // dataset's own eval_method.
    assert_eq!(
        p.accuracy_datasets,
        Some(vec![
            "acc:<DATASET_PATH eg: tests/assets/datasets/ds_samples.jsonl>,prompt=question,\
             system=system_prompt,name=accuracy,scorer=pass_at_1,expected=ground_truth,\
             extractor=boxed_math_extractor,repeats=1"
                .to_string()
        ])
    );
    assert_eq!(p.phase, None);
}

#[test]
fn environment_references_fill_values_before_typing() {
    let p = ok(r#"
type: online
endpoint_config: {endpoints: ['http://h:${PORT}']}
settings:
  load_pattern: {type: concurrency, target_concurrency: '${PORT}'}
  runtime: {n_samples_to_issue: '${N:-40}'}
model_params: {name: '${MODEL:-m}'}
"#)
    .profile;
    assert_eq!(p.endpoint.as_deref(), Some("http://h:8123"));
    assert_eq!(p.concurrency, Some(8123));
    assert_eq!(p.requests, Some(40));
    assert_eq!(p.model.as_deref(), Some("m"));
}

#[test]
fn model_params_without_a_field_of_ours_go_into_the_body() {
    let p = ok(r#"
type: offline
endpoint_config: {endpoints: ['http://h:1'], api_type: openai_completions, api_key: k}
model_params:
  temperature: 0
  top_k: 5
  top_p: 0.9
  seed: 7
  min_new_tokens: 3
  max_new_tokens: 64
  skip_special_tokens: false
  streaming: 'off'
  chat_template_kwargs: {thinking: false}
"#)
    .profile;
    assert_eq!(p.temperature, Some(0.0));
    assert_eq!(p.top_p, Some(0.9));
    assert_eq!(p.max_tokens, Some(64));
    assert_eq!(p.min_tokens, Some(3));
    assert_eq!(p.stream, Some(false));
    assert_eq!(p.api.as_deref(), Some("openai-completions"));
    assert_eq!(p.api_key.as_deref(), Some("k"));
    let body = Value::Object(p.extra_body.unwrap());
    assert_eq!(
        body,
        serde_json::json!({"top_k": 5, "seed": 7, "skip_special_tokens": false,
                           "chat_template_kwargs": {"thinking": false}})
    );
}

#[test]
fn runtime_durations_take_suffixes_and_max_is_a_cap() {
    let p = ok(r#"
type: offline
endpoint_config: {endpoints: ['http://h:1']}
settings:
  runtime: {min_duration_ms: 10m, max_duration_ms: '900s', scheduler_random_seed: 7, dataloader_random_seed: 8}
"#)
    .profile;
    assert_eq!(p.min_duration, ms(600_000));
    assert_eq!(p.max_duration, ms(900_000));
    assert_eq!(p.scheduler_seed, Some(7));
    assert_eq!(p.dataloader_seed, Some(8));
}

#[test]
fn several_endpoints_and_warmup_and_client() {
    let p = ok(r#"
type: offline
endpoint_config: {endpoints: ['http://a:1', 'http://b:2']}
settings:
  client: {num_workers: 4, max_connections: 64, insecure: true}
  warmup: {enabled: true, n_requests: 20}
  early_stopping: {enabled: false}
  drain: {performance_timeout_s: 30}
"#)
    .profile;
    assert_eq!(p.endpoint, None);
    assert_eq!(
        p.endpoints,
        Some(vec!["http://a:1".to_string(), "http://b:2".to_string()])
    );
    assert_eq!(p.workers, Some(4));
    assert_eq!(p.connections, Some(64));
    assert_eq!(p.insecure, Some(true));
    assert_eq!(p.warmup_requests, Some(20));
    assert_eq!(p.early_stopping, Some(false));
    assert_eq!(p.drain_timeout.map(|d| d.0), Some(Duration::from_secs(30)));
}

#[test]
fn the_audit_block_is_read_for_the_caller() {
    let r = ok(
        "type: offline\nendpoint_config: {endpoints: ['http://h:1']}\n\
         audit: {test: output_caching_test, samples: 500, audit_samples: 100, sample_index: 3}\n",
    );
    assert_eq!(
        r.audit,
        Some(AuditBlock {
            test: "output_caching_test".into(),
            only: false,
            params: crate::config::audit::AuditParams {
                samples: 500,
                audit_samples: Some(100),
                sample_index: 3,
                threshold: 0.10,
            },
        })
    );
    let e = errors(
        "type: offline\nendpoint_config: {endpoints: ['http://h:1']}\n\
         audit: {test: other, threshold: 1.5}\n",
    );
    let paths: Vec<&str> = e.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        ["audit.test", "audit.samples", "audit.threshold"],
        "{e:?}"
    );
}

/// Every error of `body` (a config whose other parts are fine), as
/// `path: message`.
fn problems(body: &str) -> Vec<String> {
    let mut t = tree(ONLINE);
    let patch = tree(body);
    for (path, value) in flatten(&patch.value, "") {
        set(&mut t.value, &path, value);
    }
    match read(t) {
        Ok(_) => Vec::new(),
        Err(e) => e.into_iter().map(|(p, m)| format!("{p}: {m}")).collect(),
    }
}

fn flatten(v: &Value, at: &str) -> Vec<(String, Value)> {
    match v {
        Value::Object(m) if !m.is_empty() => m
            .iter()
            .flat_map(|(k, v)| flatten(v, &tree::join(at, k)))
            .collect(),
        other => vec![(at.to_string(), other.clone())],
    }
}

fn one_problem(body: &str, path: &str, says: &str) {
    let e = problems(body);
    assert_eq!(e.len(), 1, "{body}: {e:?}");
    assert!(
        e[0].starts_with(&format!("{path}: ")) && e[0].contains(says),
        "{body}: {e:?}"
    );
}

#[test]
fn what_cannot_be_honoured_is_named_by_its_path() {
    one_problem(
        "settings: {load_pattern: {type: burst}}",
        "settings.load_pattern.type",
        "'burst' is not supported",
    );
    one_problem(
        "type: submission",
        "benchmark_mode",
        "required by type submission",
    );
    one_problem(
        "type: exam",
        "type",
        "expected offline, online, eval or submission",
    );
    one_problem(
        "settings: {runtime: {min_duration: 5}}",
        "settings.runtime.min_duration",
        "unknown key",
    );
    one_problem("colour: blue", "colour", "unknown key");
    one_problem(
        "endpoint_config: {api_type: videogen}",
        "endpoint_config.api_type",
        "'videogen' is not supported",
    );
    one_problem(
        "settings: {load_pattern: {target_qps: 0}}",
        "settings.load_pattern.target_qps",
        "must be > 0",
    );
    one_problem(
        "settings: {runtime: {max_duration_ms: 5, min_duration_ms: 10}}",
        "settings.runtime.max_duration_ms",
        "less than min_duration_ms",
    );
    one_problem(
        "settings: {client: {num_workers: 0}}",
        "settings.client.num_workers",
        "got 0",
    );
    one_problem(
        "model_params: {streaming: sometimes}",
        "model_params.streaming",
        "expected auto, on or off",
    );
    one_problem(
        "settings: {warmup: {enabled: true}}",
        "settings.warmup.n_requests",
        "required",
    );
    one_problem(
        "settings: {runtime: {min_duration_ms: soon}}",
        "settings.runtime.min_duration_ms",
        "expected milliseconds",
    );
    one_problem(
        "endpoint_config: {endpoints: ['localhost:8000']}",
        "endpoint_config.endpoints[0]",
        "scheme",
    );
}

#[test]
fn load_pattern_must_fit_the_type() {
    let e = errors(&OFFLINE.replace(
        "settings:\n",
        "settings:\n  load_pattern: {type: poisson, target_qps: 5}\n",
    ));
    assert!(
        e.iter()
            .any(|(p, m)| p == "settings.load_pattern.type" && m.contains("offline")),
        "{e:?}"
    );
    let e = errors(&ONLINE.replace("type: poisson", "type: max_throughput"));
    assert!(
        e.iter()
            .any(|(p, m)| p == "settings.load_pattern.type" && m.contains("online")),
        "{e:?}"
    );
    let e = errors(&ONLINE.replace("    target_qps: 10.0", ""));
    assert_eq!(e[0].0, "settings.load_pattern.target_qps", "{e:?}");
}

#[test]
fn datasets_accuracy_and_a_second_performance_set_are_refused() {
    let two = ONLINE.replace(
        "settings:\n",
        "- name: more\n  path: b.jsonl\n- name: acc\n  type: accuracy\n  path: c.jsonl\nsettings:\n",
    );
    let e = errors(&two);
    let paths: Vec<&str> = e.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["datasets[1]"], "{e:?}");
    assert!(e[0].1.contains("a second performance dataset"), "{e:?}");
    let p = ok(&ONLINE.replace("  parser:", "  format: .csv\n  parser:\n    system: sys")).profile;
    assert_eq!(
        p.dataset.as_deref(),
        Some(
            "<DATASET_PATH eg: tests/assets/datasets/dummy_1k.jsonl>,format=csv,prompt=text_input,system=sys"
        )
    );
}

#[test]
fn config_yaml_is_mlperfs_schema_and_reads_back() {
    use crate::config::resolve::resolve;
    let mut p = ok(ONLINE).profile;
    p.dataset = None;
    p.requests = Some(40);
    p.api_key = Some("sk-secret".into());
    p.min_duration = ms(1000);
    let cfg = resolve(p).unwrap_or_else(|e| panic!("{e:?}"));
    let text = render_config_yaml(
        &cfg,
        "http://localhost:8000/v1/chat/completions",
        "m",
        std::path::Path::new("out/dir"),
    );
    assert!(!text.contains("sk-secret"), "{text}");
    let v = tree(&text).value;
    assert_eq!(v["type"], "online", "{text}");
    assert_eq!(v["settings"]["load_pattern"]["type"], "poisson");
    assert_eq!(v["settings"]["load_pattern"]["target_qps"], 10.0);
    assert_eq!(v["settings"]["runtime"]["n_samples_to_issue"], 40);
    assert_eq!(v["settings"]["runtime"]["min_duration_ms"], 1000);
    assert_eq!(v["endpoint_config"]["api_key"], "<redacted>");
    assert_eq!(v["endpoint_config"]["api_type"], "openai");
    assert_eq!(v["report_dir"], "out/dir");
    assert_eq!(v["version"], "1.0", "{text}");
    assert!(
        v["model_params"]["streaming"] == "on" || v["model_params"]["streaming"] == "off",
        "{text}"
    );
    // What we write, MLPerf's schema (and so we) can read again.
    let mut again = v.clone();
    again["endpoint_config"]
        .as_object_mut()
        .unwrap()
        .remove("api_key");
    read(Tree::plain(again)).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
}

#[test]
fn our_templates_read_cleanly() {
    for kind in ["offline", "online", "concurrency"] {
        let r = ok(templates::template(kind).unwrap());
        assert_eq!(r.online, kind != "offline", "{kind}");
    }
    assert!(templates::template("offline.json").is_none());
}

#[test]
fn target_qps_sizes_an_offline_or_concurrency_run() {
    let data = std::env::temp_dir().join(format!("llmload-qps-{}.jsonl", std::process::id()));
    std::fs::write(&data, "{\"prompt\": \"a\"}\n").unwrap();
    let text = format!(
        "type: offline\nmodel_params: {{name: m}}\n\
         datasets: [{{name: p, type: performance, path: '{}'}}]\n\
         settings: {{load_pattern: {{type: max_throughput, target_qps: 50}}}}\n\
         endpoint_config: {{endpoints: ['http://h:1']}}\n",
        data.display()
    );
    let p = ok(&text).profile;
    assert_eq!(p.mode.as_deref(), Some("offline"));
    assert_eq!(p.rate, Some(50.0));
    let cfg = crate::config::resolve::resolve(p).unwrap_or_else(|e| panic!("{e:?}"));
    match cfg.run_length {
        Some(crate::config::run_length::RunLength::Mlperf {
            qps, qps_default, ..
        }) => {
            assert_eq!(qps, 50.0);
            assert!(!qps_default);
        }
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_file(&data);
}

/// The notes `body` (patched over the online template) reads with; it
/// must read without errors.
fn notes(body: &str) -> (Read, Vec<String>) {
    let mut t = tree(ONLINE);
    for (path, value) in flatten(&tree(body).value, "") {
        set(&mut t.value, &path, value);
    }
    let r = read(t).unwrap_or_else(|e| panic!("{body}: {e:?}"));
    let n = r.profile.mlperf.notes.clone();
    (r, n)
}

fn noted(notes: &[String], path: &str, says: &str) {
    let at: Vec<&String> = notes
        .iter()
        .filter(|n| n.starts_with(&format!("{path}: ")))
        .collect();
    assert_eq!(at.len(), 1, "{path}: {notes:?}");
    assert!(at[0].contains(says), "{path}: {notes:?}");
}

#[test]
fn inert_fields_are_accepted_at_any_value_with_one_note_each() {
    let (r, n) = notes(
        "timeout: 9000\nverbose: true\n\
         model_params: {osl_distribution: {type: fixed, mean: 10}}\n\
         settings:\n  service_ready_timeout_s: 60\n\
         \x20 drain: {metrics_tokenizer_workers: 0, warmup_timeout_s: 5}\n\
         \x20 client: {log_level: WARN, worker_gc_mode: disabled, worker_initialization_timeout: 300,\n\
         \x20   warmup_connections: 0, max_idle_time: 0.5, stream_all_chunks: true,\n\
         \x20   transport: {io_threads: 8}}\n",
    );
    for (path, says) in [
        ("timeout", "9000 has no effect"),
        ("verbose", "true has no effect"),
        ("model_params.osl_distribution", "no effect"),
        ("settings.service_ready_timeout_s", "60 has no effect"),
        (
            "settings.drain.metrics_tokenizer_workers",
            "0 has no effect",
        ),
        ("settings.drain.warmup_timeout_s", "5 has no effect"),
        ("settings.client.log_level", "'WARN' has no effect"),
        ("settings.client.worker_gc_mode", "'disabled' has no effect"),
        (
            "settings.client.worker_initialization_timeout",
            "300 has no effect",
        ),
        ("settings.client.warmup_connections", "0 has no effect"),
        ("settings.client.max_idle_time", "0.5 has no effect"),
        ("settings.client.stream_all_chunks", "true has no effect"),
        ("settings.client.transport.io_threads", "8 has no effect"),
    ] {
        noted(&n, path, says);
    }
    assert_eq!(n.len(), 13, "{n:?}");
    assert_eq!(r.profile.max_tokens, None);
    // At MLPerf's defaults there is nothing to say.
    let (_, n) =
        notes("timeout: null\nsettings: {client: {log_level: INFO, worker_gc_mode: relaxed}}\n");
    assert!(n.is_empty(), "{n:?}");
}

#[test]
fn samples_is_no_row_limit_and_parser_takes_any_key() {
    let (r, n) = notes(
        "datasets:\n\
         - {path: perf.jsonl, samples: 1000, parser: {input: question, input_tokens: ids, other: x}}\n\
         - {path: acc.jsonl, type: accuracy, samples: 13368, parser: {prompt: q, input: x},\n\
         \x20  accuracy_config: {eval_method: pass_at_1, ground_truth: a}}\n",
    );
    assert_eq!(
        r.profile.dataset.as_deref(),
        Some("perf.jsonl,prompt=question")
    );
    let acc = r.profile.accuracy_datasets.unwrap();
    assert_eq!(acc, ["acc:acc.jsonl,prompt=q,scorer=pass_at_1,expected=a"]);
    noted(&n, "datasets[0].samples", "every row");
    noted(&n, "datasets[1].samples", "every row");
    noted(&n, "datasets[0].parser.input_tokens", "never pre-tokenized");
    noted(&n, "datasets[0].parser.other", "no effect");
    noted(&n, "datasets[1].parser.input", "parser.prompt names");
    assert_eq!(n.len(), 5, "{n:?}");
}

#[test]
fn unknown_key_is_said_only_of_keys_mlperf_lacks() {
    // Every field of MLPerf's schema the old reader refused by name.
    let (_, _) = notes(
        "submission_ref: {model: m, ruleset: mlperf-inference-v6.0}\n\
         settings:\n  drain: {performance_timeout_s: null, accuracy_timeout_s: 30}\n\
         \x20 warmup: {salt: true, drain: true, warmup_random_seed: 7}\n\
         \x20 load_pattern: {use_legacy_loadgen_qps_metrics: false}\n\
         datasets:\n- {path: p.jsonl, generate_params: {a: 1},\n\
         \x20  generation_config_override: {max_new_tokens: 64, top_k: 5, osl_distribution: {max: 9}}}\n",
    );
    let e = problems("datasets:\n- {path: p.jsonl, generation_config_override: {colour: 1}}\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].contains("expected one of model_params' fields"),
        "{e:?}"
    );
    let e = problems("datasets:\n- {path: p.jsonl, generation_config_override: {streaming: on}}\n");
    assert!(e[0].contains("set it on model_params"), "{e:?}");
}

#[test]
fn what_has_a_meaning_is_carried_to_the_run() {
    let (r, n) = notes(
        "settings:\n  drain: {performance_timeout_s: null}\n\
         \x20 load_pattern: {use_legacy_loadgen_qps_metrics: false}\n\
         datasets:\n- {path: p.jsonl, generation_config_override: {max_new_tokens: 64, temperature: 0.5, top_k: 5}}\n\
         model_params: {name: '', max_new_tokens: 1000}\n\
         submission_ref: {model: llama-2-70b, ruleset: mlperf-inference-v5.1}\n",
    );
    let p = &r.profile;
    assert!(p.drain_timeout.unwrap().0 > Duration::from_secs(86_400 * 365));
    assert_eq!(p.mlperf.legacy_qps, Some(false));
    let (r, n2) = notes("settings: {warmup: {warmup_random_seed: -7}}");
    // Python's Random(-7) is Random(7).
    assert_eq!(r.profile.mlperf.warmup_seed, Some(7));
    assert!(n2.is_empty(), "{n2:?}");
    let (r, _) = notes("settings: {drain: {accuracy_timeout_s: 30}}");
    assert_eq!(
        r.profile.mlperf.accuracy_drain,
        Some(HumanDuration(Duration::from_secs(30)))
    );
    assert_eq!(p.max_tokens, Some(64));
    assert_eq!(p.temperature, Some(0.5));
    assert_eq!(p.extra_body.as_ref().unwrap()["top_k"], 5);
    assert_eq!(p.model.as_deref(), Some("llama-2-70b"));
    noted(
        &n,
        "settings.drain.performance_timeout_s",
        "waits for every response",
    );
    noted(&n, "submission_ref.ruleset", "no rulesets");
}

#[test]
fn completion_controls_need_the_completions_api_as_in_mlperf() {
    one_problem(
        "model_params: {min_new_tokens: 5}",
        "model_params.min_new_tokens",
        "requires endpoint_config.api_type=openai_completions",
    );
    one_problem(
        "model_params: {skip_special_tokens: false}",
        "model_params.skip_special_tokens",
        "requires endpoint_config.api_type=openai_completions",
    );
    one_problem(
        "datasets:\n- {path: p.jsonl, generation_config_override: {min_new_tokens: 5}}\n",
        "datasets[0].generation_config_override.min_new_tokens",
        "requires endpoint_config.api_type=openai_completions",
    );
    let (r, _) = notes(
        "endpoint_config: {api_type: openai_completions}\nmodel_params: {min_new_tokens: 5, skip_special_tokens: false}\n",
    );
    assert_eq!(r.profile.min_tokens, Some(5));
    assert_eq!(r.profile.extra_body.unwrap()["skip_special_tokens"], false);
}

#[test]
fn agentic_and_external_scorers_validate_and_are_refused_when_run() {
    let (r, n) = notes(
        "settings: {load_pattern: {type: agentic_inference, target_concurrency: 4}}\n\
         datasets:\n- {path: p.jsonl, agentic_inference: {turn_timeout_s: 60}}\n\
         - {name: swe, path: s.jsonl, type: accuracy,\n\
         \x20  accuracy_config: {eval_method: swe_bench_scorer, extras: {swebench_service_auth_token: tok-SECRET-1}}}\n",
    );
    let m = &r.profile.mlperf;
    assert_eq!(m.refuse_run.len(), 2, "{m:?}");
    assert!(m.refuse_run.iter().all(|w| w.contains("agentic")), "{m:?}");
    assert_eq!(m.refuse_accuracy.len(), 1);
    assert!(m.refuse_accuracy[0].contains("'swe_bench_scorer'"), "{m:?}");
    assert_eq!(r.profile.accuracy_datasets, None);
    assert!(!format!("{n:?}").contains("tok-SECRET-1"), "{n:?}");
}

#[test]
fn a_predefined_dataset_is_read_by_name_and_its_parser_noted() {
    let (r, n) = notes(
        "datasets:\n- {name: 'cnn_dailymail::llama3_8b', type: accuracy, samples: 13368,\n\
         \x20  parser: {input: prompt}, accuracy_config: {eval_method: rouge, ground_truth: highlights}}\n\
         - {name: 'open_orca::llama2_70b', type: performance}\n",
    );
    assert_eq!(
        r.profile.accuracy_datasets.unwrap(),
        [
            "acc:predefined:cnn_dailymail::llama3_8b,name=cnn_dailymail::llama3_8b,scorer=rouge,expected=highlights"
        ]
    );
    assert_eq!(
        r.profile.dataset.as_deref(),
        Some("predefined:open_orca::llama2_70b")
    );
    noted(&n, "datasets[0].parser", "its preset builds the prompt");
}

#[test]
fn a_predefined_name_llmload_cannot_read_is_named() {
    one_problem(
        "datasets:\n- {name: 'gpqa::llama'}\n",
        "datasets[0].name",
        "has no preset 'llama' (its presets: gptoss)",
    );
    one_problem(
        "datasets:\n- {name: 'shopify_product_catalogue::q3vl'}\n",
        "datasets[0].name",
        "multimodal content parts",
    );
    one_problem(
        "datasets:\n- {name: random, generate_params: {input_seq_length: 8}}\n",
        "datasets[0].name",
        "'random' dataset is not supported",
    );
    one_problem(
        "datasets:\n- {name: perf-test}\n",
        "datasets[0].path",
        "required: the dataset file, or the name of one of MLPerf's predefined datasets",
    );
}

#[test]
fn a_performance_override_leaves_the_accuracy_datasets_alone() {
    let (r, _) = notes(
        "model_params: {max_new_tokens: 500, top_p: 0.9}\n\
         datasets:\n- {path: p.jsonl, generation_config_override: {max_new_tokens: 64, top_p: 0.5}}\n\
         - {path: a.jsonl, type: accuracy}\n\
         - {path: b.jsonl, type: accuracy, generation_config_override: {max_new_tokens: 9}}\n",
    );
    assert_eq!(r.profile.max_tokens, Some(64));
    assert_eq!(
        r.profile.accuracy_datasets.unwrap(),
        [
            "acc:a.jsonl,max_output_tokens=500,top_p=0.9",
            "acc:b.jsonl,max_output_tokens=9,top_p=0.9",
        ]
    );
}
