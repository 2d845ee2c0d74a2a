//! The top of MLPerf's `BenchmarkConfig` schema and its sections other than
//! `settings`: each field read at its YAML path and written into our
//! `Profile` (what we honour), accepted only at MLPerf's default (what has
//! no meaning for us), or refused with the reason.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::audit::{AuditBlock, read_audit};
use super::settings::read_settings;
use super::tree::{Errors, Section, shown};
use crate::config::profile::Profile;

/// What a config says, read: the profile it maps to, plus what is not a
/// profile field.
#[derive(Debug)]
pub(crate) struct Read {
    pub profile: Profile,
    /// `type`: offline or online.
    #[cfg_attr(not(test), allow(dead_code))]
    pub online: bool,
    pub audit: Option<AuditBlock>,
}

/// Reads a whole config tree (`serde_json::Value` from YAML, with any
/// command-line overrides merged in).
pub(crate) fn read(tree: Value, errs: &Errors) -> Read {
    let mut top = Section::new(Some(tree), String::new(), errs);
    let mut p = Profile {
        preset: Some("mlperf".into()),
        ..Profile::default()
    };
    // Accepted whatever they say: labels only.
    let _ = top.string("name");
    let _ = top.string("version");
    // `eval` is MLPerf's accuracy-only config, `submission` performance
    // and accuracy (`benchmark_mode` says which benchmark).
    let kind = match top.string("type").as_deref() {
        Some("offline") => Some(false),
        Some("online") => Some(true),
        Some("eval") => {
            p.phase = Some("acc".into());
            let _ = top.string("benchmark_mode");
            Some(false)
        }
        Some("submission") => {
            p.phase = Some("both".into());
            match top.string("benchmark_mode").as_deref() {
                Some("online") => Some(true),
                Some("offline") => Some(false),
                Some(m) => {
                    errs.at(
                        "benchmark_mode",
                        format!("'{m}': expected offline or online"),
                    );
                    None
                }
                None => {
                    errs.at(
                        "benchmark_mode",
                        "required by type submission: offline or online",
                    );
                    None
                }
            }
        }
        Some(t) => {
            errs.at(
                "type",
                format!("'{t}': expected offline, online, eval or submission"),
            );
            None
        }
        None => {
            errs.at("type", "required: offline, online, eval or submission");
            None
        }
    };
    let online = kind == Some(true);
    top.only_default("submission_ref", Value::Null);
    // Read above for a submission; a label elsewhere.
    let _ = top.take("benchmark_mode");
    read_model_params(top.section("model_params"), &mut p);
    read_datasets(&mut top, &mut p);
    read_settings(top.section("settings"), kind, &mut p);
    read_endpoint(top.section("endpoint_config"), &mut p);
    if let Some(dir) = top.string("report_dir") {
        p.out = Some(PathBuf::from(dir));
    }
    top.only_default("timeout", Value::Null);
    top.only_default("verbose", false.into());
    if let Some(pin) = top.bool("enable_cpu_affinity") {
        p.pin = Some(pin);
    }
    let audit = top.take("audit").and_then(|v| read_audit(v, errs));
    top.finish();
    Read {
        profile: p,
        online,
        audit,
    }
}

fn read_model_params(mut s: Section<'_>, p: &mut Profile) {
    p.model = s.string("name").filter(|n| !n.is_empty());
    p.temperature = s.f64("temperature");
    p.top_p = s.f64("top_p");
    let mut extra = Map::new();
    // Sampling knobs without a field of ours travel in the request body
    // under their API names; MLPerf's sampling `seed` is one of them (our
    // own seeds order and schedule, they are never sent).
    if let Some(seed) = s.int("seed", i64::MIN) {
        extra.insert("seed".into(), seed.into());
    }
    if let Some(k) = s.int("top_k", -1) {
        extra.insert("top_k".into(), k.into());
    }
    for key in [
        "repetition_penalty",
        "presence_penalty",
        "frequency_penalty",
    ] {
        if let Some(x) = s.f64(key) {
            extra.insert(key.into(), x.into());
        }
    }
    match s.take("chat_template_kwargs") {
        None => {}
        Some(Value::Object(m)) => {
            extra.insert("chat_template_kwargs".into(), Value::Object(m));
        }
        Some(other) => s.errs.at(
            &s.path_of("chat_template_kwargs"),
            format!("expected a mapping, found {}", shown(&other)),
        ),
    }
    if s.bool("skip_special_tokens") == Some(false) {
        extra.insert("skip_special_tokens".into(), false.into());
    }
    if !extra.is_empty() {
        p.extra_body = Some(extra);
    }
    let max = s.int("max_new_tokens", 1);
    let min = s.int("min_new_tokens", 0);
    if let (Some(lo), Some(hi)) = (min, max)
        && lo > hi
    {
        s.errs.at(
            &s.path_of("min_new_tokens"),
            format!("{lo} is more than max_new_tokens ({hi})"),
        );
    }
    p.max_tokens = max.and_then(|n| u32::try_from(n).ok());
    // 1 is MLPerf's default, which sends nothing.
    p.min_tokens = min.filter(|n| *n != 1).and_then(|n| u32::try_from(n).ok());
    s.unsupported(
        "osl_distribution",
        "output lengths follow the dataset (max_new_tokens caps them)",
    );
    match s.string("streaming").as_deref() {
        None | Some("auto") => {}
        Some("on" | "true") => p.stream = Some(true),
        Some("off" | "false") => p.stream = Some(false),
        Some(other) => s.errs.at(
            &s.path_of("streaming"),
            format!("'{other}': expected auto, on or off"),
        ),
    }
    p.tokenizer = s.string("tokenizer_name").map(PathBuf::from);
    s.finish();
}

fn read_datasets(top: &mut Section<'_>, p: &mut Profile) {
    let items = match top.take("datasets") {
        None => return,
        Some(Value::Array(items)) => items,
        Some(other) => {
            top.errs.at(
                "datasets",
                format!("expected a list of datasets, found {}", shown(&other)),
            );
            return;
        }
    };
    let mut found: Option<String> = None;
    let mut accuracy = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("datasets[{i}]");
        match read_dataset(Section::new(Some(item), path.clone(), top.errs)) {
            Some(Dataset::Accuracy(spec)) => accuracy.push(spec),
            Some(Dataset::Performance(spec)) if found.is_some() => {
                let _ = spec;
                top.errs.at(
                    &path,
                    "a second performance dataset is not supported: llmload runs one per benchmark",
                );
            }
            Some(Dataset::Performance(spec)) => found = Some(spec),
            None => {}
        }
    }
    p.dataset = found;
    if !accuracy.is_empty() {
        p.accuracy_datasets = Some(accuracy);
    }
}

/// A dataset entry as our spec strings.
enum Dataset {
    /// `--dataset`'s.
    Performance(String),
    /// `--accuracy-dataset`'s.
    Accuracy(String),
}

/// One dataset as our `--dataset` (or `--accuracy-dataset`) spec string.
fn read_dataset(mut s: Section<'_>) -> Option<Dataset> {
    let name = s.string("name");
    let accuracy = match s.string("type").as_deref() {
        None | Some("performance") => false,
        Some("accuracy") => true,
        Some(t) => {
            s.errs.at(
                &s.path_of("type"),
                format!("'{t}': expected performance or accuracy"),
            );
            false
        }
    };
    let path = s.string("path");
    let format = s.string("format");
    let mut acc_keys: Vec<String> = Vec::new();
    if accuracy {
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            acc_keys.push(format!("name={n}"));
        }
        if let Some(n) = s.int("samples", 1) {
            acc_keys.push(format!("samples={n}"));
        }
        // The dataset's own `eval_method` (exact_match, contains, judge):
        // exact_match is pass@1; accuracy_config's, when given, wins.
        let method = s.string("eval_method");
        let mut cfg = s.section("accuracy_config");
        let scorer = cfg.string("eval_method").or(method);
        if let Some(m) = scorer {
            acc_keys.push(format!("scorer={m}"));
        }
        for (key, ours) in [("ground_truth", "expected"), ("extractor", "extractor")] {
            if let Some(v) = cfg.string(key) {
                acc_keys.push(format!("{ours}={v}"));
            }
        }
        if let Some(n) = cfg.int("num_repeats", 1) {
            acc_keys.push(format!("repeats={n}"));
        }
        cfg.only_default("extras", Value::Null);
        cfg.finish();
        let mut gen_cfg = s.section("generation_config_override");
        if let Some(n) = gen_cfg.int("max_new_tokens", 1) {
            acc_keys.push(format!("max_output_tokens={n}"));
        }
        for key in ["temperature", "top_p"] {
            if let Some(x) = gen_cfg.f64(key) {
                acc_keys.push(format!("{key}={x}"));
            }
        }
        gen_cfg.finish();
        s.only_default("generate_params", Value::Null);
        s.only_default("agentic_inference", Value::Null);
    } else {
        for key in [
            "samples",
            "eval_method",
            "generate_params",
            "accuracy_config",
            "agentic_inference",
            "generation_config_override",
        ] {
            s.only_default(key, Value::Null);
        }
    }
    let mut parser = s.section("parser");
    let prompt = parser.string("prompt");
    let system = parser.string("system");
    parser.finish();
    let Some(path) = path else {
        s.errs.at(
            &s.path_of("path"),
            "required: the dataset file (MLPerf's predefined datasets by name are not supported)",
        );
        s.finish();
        return None;
    };
    if path.contains(',') {
        s.errs.at(
            &s.path_of("path"),
            format!("'{path}': a path with a comma cannot be used"),
        );
    }
    let mut spec = path;
    if let Some(f) = format {
        let f = f.trim_start_matches('.').to_ascii_lowercase();
        match f.as_str() {
            "jsonl" | "json" | "csv" | "ndjson" | "parquet" | "huggingface" => {
                spec += &format!(",format={f}")
            }
            _ => s.errs.at(
                &s.path_of("format"),
                format!(
                    "'{f}' is not supported: expected jsonl, json, csv, parquet or huggingface"
                ),
            ),
        }
    }
    for (key, col) in [("prompt", prompt), ("system", system)] {
        if let Some(col) = col {
            spec += &format!(",{key}={col}");
        }
    }
    s.finish();
    if accuracy {
        for k in acc_keys {
            spec += &format!(",{k}");
        }
        return Some(Dataset::Accuracy(format!("acc:{spec}")));
    }
    Some(Dataset::Performance(spec))
}

fn read_endpoint(mut s: Section<'_>, p: &mut Profile) {
    let path = s.path_of("endpoints");
    let urls: Vec<String> = match s.take("endpoints") {
        None => {
            s.errs.at(&path, "required: at least one URL");
            Vec::new()
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v {
                Value::String(u) => Some(u.trim().to_string()),
                other => {
                    s.errs.at(
                        &format!("{path}[{i}]"),
                        format!("expected a URL, found {}", shown(other)),
                    );
                    None
                }
            })
            .collect(),
        Some(Value::String(u)) => u.split(',').map(|u| u.trim().to_string()).collect(),
        Some(other) => {
            s.errs.at(
                &path,
                format!("expected a list of URLs, found {}", shown(&other)),
            );
            Vec::new()
        }
    };
    for (i, u) in urls.iter().enumerate() {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            s.errs.at(
                &format!("{path}[{i}]"),
                format!("'{u}': a URL must include its scheme (http:// or https://)"),
            );
        }
    }
    match urls.len() {
        0 => {}
        1 => p.endpoint = urls.into_iter().next(),
        _ => p.endpoints = Some(urls),
    }
    p.api_key = s.string("api_key").filter(|k| !k.is_empty());
    match s.string("api_type").as_deref() {
        None => {}
        Some("openai") => p.api = Some("openai-chat".into()),
        Some("openai_completions") => p.api = Some("openai-completions".into()),
        Some("sglang") => p.api = Some("sglang".into()),
        Some("videogen") => s.errs.at(
            &s.path_of("api_type"),
            "'videogen' is not supported: expected openai, openai_completions or sglang",
        ),
        Some(other) => s.errs.at(
            &s.path_of("api_type"),
            format!("'{other}': expected openai, openai_completions or sglang"),
        ),
    }
    s.finish();
}
