//! The top of MLPerf's `BenchmarkConfig` schema and its sections other than
//! `settings`: each field read at its YAML path and written into our
//! `Profile` (what we honour), accepted only at MLPerf's default (what has
//! no meaning for us), or refused with the reason.

use crate::dataset::predefined;
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
    /// Values substituted from the environment or under a credential's
    /// key: whatever is printed about the config must not show them.
    pub hidden: Vec<String>,
}

/// Reads a whole config tree (`serde_json::Value` from YAML, with any
/// command-line overrides merged in).
pub(crate) fn read(tree: Value, errs: &Errors) -> Read {
    // MLPerf gates its text-completions controls on the API type, which
    // is read after them.
    let completions = tree
        .pointer("/endpoint_config/api_type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.trim() == "openai_completions");
    let mut top = Section::new(Some(tree), String::new(), errs);
    let mut p = Profile {
        preset: Some("mlperf".into()),
        ..Profile::default()
    };
    // Labels only, the name written back into config.yaml.
    p.mlperf.name = top.string("name");
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
    let reference_model = read_submission_ref(top.section("submission_ref"));
    // Read above for a submission; a label elsewhere.
    let _ = top.take("benchmark_mode");
    read_model_params(top.section("model_params"), completions, &mut p);
    if p.model.is_none() {
        // MLPerf's rule: the reference names the model when the config
        // does not.
        p.model = reference_model;
    }
    read_datasets(&mut top, completions, &mut p);
    read_settings(top.section("settings"), kind, &mut p);
    read_endpoint(top.section("endpoint_config"), &mut p);
    if let Some(dir) = top.string("report_dir") {
        p.out = Some(PathBuf::from(dir));
    }
    top.inert(
        "timeout",
        Value::Null,
        "MLPerf reads it nowhere; the run's length is settings.runtime's",
    );
    top.inert(
        "verbose",
        false.into(),
        "MLPerf's logging switch; llmload's is -v",
    );
    if let Some(pin) = top.bool("enable_cpu_affinity") {
        p.pin = Some(pin);
    }
    let audit = top.take("audit").and_then(|v| read_audit(v, errs));
    top.finish();
    Read {
        profile: p,
        online,
        audit,
        hidden: Vec::new(),
    }
}

/// `submission_ref`: the model it names (the config's model when
/// `model_params.name` is not given), the ruleset noted.
fn read_submission_ref(mut s: Section<'_>) -> Option<String> {
    let model = s.string("model").filter(|m| !m.is_empty());
    if let Some(rules) = s.string("ruleset") {
        s.errs.note(
            &s.path_of("ruleset"),
            format!(
                "'{rules}': llmload has no rulesets; the run follows the config's own settings and seeds"
            ),
        );
    }
    s.finish();
    model
}

/// MLPerf's rule for its text-completions controls: `min_new_tokens` and
/// `skip_special_tokens` at anything but their defaults (1 and true) need
/// `api_type: openai_completions`, wherever they are given.
fn completion_control(s: &Section<'_>, key: &str, completions: bool) -> bool {
    if !completions {
        s.errs.at(
            &s.path_of(key),
            format!(
                "{} requires endpoint_config.api_type=openai_completions",
                s.path_of(key)
            ),
        );
    }
    completions
}

/// The sampling knobs of `model_params` (or of a dataset's
/// `generation_config_override`) that have no field of ours: they travel in
/// the request body under their API names. MLPerf's sampling `seed` is one
/// of them (our own seeds order and schedule, they are never sent).
fn read_sampling(s: &mut Section<'_>, completions: bool) -> Map<String, Value> {
    let mut extra = Map::new();
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
    if s.bool("skip_special_tokens") == Some(false)
        && completion_control(s, "skip_special_tokens", completions)
    {
        extra.insert("skip_special_tokens".into(), false.into());
    }
    extra
}

fn read_model_params(mut s: Section<'_>, completions: bool, p: &mut Profile) {
    p.model = s.string("name").filter(|n| !n.is_empty());
    p.temperature = s.f64("temperature");
    p.top_p = s.f64("top_p");
    let extra = read_sampling(&mut s, completions);
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
    let min = min.filter(|n| *n != 1);
    if min.is_some() && completion_control(&s, "min_new_tokens", completions) {
        p.min_tokens = min.and_then(|n| u32::try_from(n).ok());
    }
    s.inert(
        "osl_distribution",
        Value::Null,
        "MLPerf reads it nowhere; output lengths follow the server, capped by max_new_tokens",
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

fn read_datasets(top: &mut Section<'_>, completions: bool, p: &mut Profile) {
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
    let mut accuracy: Vec<String> = Vec::new();
    let base = (p.max_tokens, p.temperature, p.top_p);
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("datasets[{i}]");
        let section = Section::new(Some(item), path.clone(), top.errs);
        match read_dataset(section, completions, p) {
            Some(Dataset::Accuracy(spec)) => accuracy.push(spec),
            Some(Dataset::Performance(_)) if found.is_some() => {
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
    // A performance dataset's override is its own: the accuracy datasets
    // keep model_params' values unless they override them themselves.
    let max = base
        .0
        .unwrap_or(crate::config::profile::defaults::MLPERF_MAX_TOKENS);
    for spec in &mut accuracy {
        if p.max_tokens != base.0 && !spec.contains(",max_output_tokens=") {
            *spec += &format!(",max_output_tokens={max}");
        }
        for (key, was, now) in [
            ("temperature", base.1, p.temperature),
            ("top_p", base.2, p.top_p),
        ] {
            if let Some(x) = was.filter(|_| was != now)
                && !spec.contains(&format!(",{key}="))
            {
                *spec += &format!(",{key}={x}");
            }
        }
    }
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

/// Scorers MLPerf runs in a service or with a package llmload does not
/// ship: accepted, refused only when the accuracy phase would run.
const EXTERNAL_SCORERS: [&str; 7] = [
    "code_bench_scorer",
    "shopify_category_f1",
    "agentic_inference_inline",
    "vbench",
    "bfcl_v4",
    "legacy_mlperf_deepseek_r1",
    "swe_bench_scorer",
];

/// `ModelParams`' fields: the keys a dataset's `generation_config_override`
/// may name.
const MODEL_PARAMS: [&str; 15] = [
    "name",
    "temperature",
    "seed",
    "top_k",
    "top_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "chat_template_kwargs",
    "max_new_tokens",
    "min_new_tokens",
    "skip_special_tokens",
    "osl_distribution",
    "streaming",
    "tokenizer_name",
];

/// One dataset as our `--dataset` (or `--accuracy-dataset`) spec string;
/// a performance dataset's generation override is written into `p`.
fn read_dataset(mut s: Section<'_>, completions: bool, p: &mut Profile) -> Option<Dataset> {
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
    s.inert(
        "samples",
        Value::Null,
        "MLPerf reads it nowhere: every row of the file is used",
    );
    if let Some(v) = s.take("generate_params") {
        s.errs.note(
            &s.path_of("generate_params"),
            format!(
                "{} has no effect in llmload (MLPerf passes it to a predefined dataset's generator)",
                shown(&v)
            ),
        );
    }
    let agentic = s.path_of("agentic_inference");
    if s.take("agentic_inference").is_some() {
        p.mlperf.refuse_run.push(format!(
            "{agentic}: agentic inference (multi-turn trajectory replay) is not supported yet"
        ));
    }
    let mut acc_keys: Vec<String> = Vec::new();
    let mut external = None;
    // The dataset's own `eval_method` (exact_match, contains, judge):
    // exact_match is pass@1; accuracy_config's, when given, wins.
    let method = s.string("eval_method");
    let mut cfg = s.section("accuracy_config");
    let scorer = cfg.string("eval_method").or(method);
    let extras = cfg.path_of("extras");
    if let Some(v) = cfg.take("extras") {
        if !v.is_object() {
            cfg.errs
                .at(&extras, format!("expected a mapping, found {}", shown(&v)));
        }
        cfg.errs.note(
            &extras,
            "passed to MLPerf's scorer; llmload's scorers take no extras",
        );
    }
    match scorer {
        Some(m) if !accuracy => cfg.errs.note(
            &cfg.path_of("eval_method"),
            format!("'{m}' has no effect on a performance dataset"),
        ),
        Some(m) if EXTERNAL_SCORERS.contains(&m.as_str()) => external = Some(m),
        Some(m) => acc_keys.push(format!("scorer={m}")),
        None => {}
    }
    for (key, ours) in [("ground_truth", "expected"), ("extractor", "extractor")] {
        if let Some(v) = cfg.string(key) {
            acc_keys.push(format!("{ours}={v}"));
        }
    }
    if let Some(n) = cfg.int("num_repeats", 1) {
        acc_keys.push(format!("repeats={n}"));
    }
    cfg.finish();
    read_generation_override(&mut s, accuracy, completions, p, &mut acc_keys);
    let mut parser = s.section("parser");
    let mut columns = read_parser(&mut parser);
    parser.finish();
    let predefined = match (&path, &name) {
        (None, Some(n)) if predefined::is_predefined(n) => Some(n.clone()),
        _ => None,
    };
    let path = match (path, predefined) {
        (Some(path), _) => path,
        (None, Some(n)) => {
            // A scorer MLPerf runs elsewhere refuses the phase whatever
            // the data: its dataset need not be one llmload can send.
            if external.is_none() && !predefined_ok(&s, &n, !columns.is_empty() || format.is_some())
            {
                s.finish();
                return None;
            }
            columns.clear();
            format!("{}{n}", crate::dataset::spec::PREDEFINED)
        }
        (None, None) => {
            s.errs.at(
                &s.path_of("path"),
                format!(
                    "required: the dataset file, or the name of one of MLPerf's predefined datasets ({})",
                    predefined::ALL.iter().map(|d| d.id).collect::<Vec<_>>().join(", ")
                ),
            );
            s.finish();
            return None;
        }
    };
    let format = if path.starts_with(crate::dataset::spec::PREDEFINED) {
        None
    } else {
        format
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
    for (key, col) in columns {
        spec += &format!(",{key}={col}");
    }
    s.finish();
    if let Some(m) = external {
        let label = name.as_deref().filter(|n| !n.is_empty()).unwrap_or(&spec);
        p.mlperf.refuse_accuracy.push(format!(
            "accuracy dataset '{label}': scorer '{m}' runs in MLPerf's external services (sandboxes, containers, packages llmload does not ship); llmload scores string_match, pass_at_1 and rouge"
        ));
        return None;
    }
    if accuracy {
        if let Some(n) = name.filter(|n| !n.is_empty()) {
            spec += &format!(",name={n}");
        }
        for k in acc_keys {
            spec += &format!(",{k}");
        }
        return Some(Dataset::Accuracy(format!("acc:{spec}")));
    }
    p.mlperf.dataset_name = name.filter(|n| !n.is_empty());
    Some(Dataset::Performance(spec))
}

/// Whether the predefined dataset `name` can be read: an unknown preset
/// or a dataset llmload cannot send is an error at `name`; one not in the
/// local cache is a note (MLPerf's validate-yaml loads no data), and the
/// run fails when it loads it. MLPerf applies a predefined dataset's preset
/// and ignores `parser` and `format`, so do we (`ignored` says whether the
/// entry gives them).
fn predefined_ok(s: &Section<'_>, name: &str, ignored: bool) -> bool {
    if name.split_once("::").map_or(name, |(id, _)| id) == predefined::RANDOM {
        s.errs.at(
            &s.path_of("name"),
            "MLPerf's predefined 'random' dataset is not supported: it decodes random token ids with the model's tokenizer; use llmload's synthetic prompts (--synthetic) instead",
        );
        return false;
    }
    match predefined::resolve(name) {
        Err(e) => {
            s.errs.at(&s.path_of("name"), e);
            return false;
        }
        Ok(r) if r.path.is_none() => s.errs.note(&s.path_of("name"), predefined::missing(name)),
        Ok(_) => {}
    }
    if ignored {
        s.errs.note(
            &s.path_of("parser"),
            format!("has no effect on the predefined dataset '{name}': its preset builds the prompt, as in MLPerf"),
        );
    }
    true
}

/// `parser`, MLPerf's free map from the column a sample field takes to
/// the file's column: `prompt` (or MLPerf's `input`) and `system` are
/// ours; any other key is noted.
fn read_parser(parser: &mut Section<'_>) -> Vec<(&'static str, String)> {
    let prompt = parser.string("prompt");
    let input = parser.string("input");
    let system = parser.string("system");
    let mut columns = Vec::new();
    match (prompt, input) {
        (Some(p), Some(_)) => {
            parser.errs.note(
                &parser.path_of("input"),
                "has no effect in llmload: parser.prompt names the prompt column",
            );
            columns.push(("prompt", p));
        }
        (Some(p), None) | (None, Some(p)) => columns.push(("prompt", p)),
        (None, None) => {}
    }
    if let Some(sys) = system {
        columns.push(("system", sys));
    }
    for key in parser.keys() {
        let path = parser.path_of(&key);
        let why = if key == "input_tokens" {
            "llmload sends the text prompt, never pre-tokenized input"
        } else {
            "llmload reads only prompt (or input) and system"
        };
        if let Some(v) = parser.take(&key) {
            parser
                .errs
                .note(&path, format!("{} has no effect ({why})", shown(&v)));
        }
    }
    columns
}

/// `generation_config_override`: MLPerf's `ModelParams` keys over the
/// top-level ones, for this dataset only. A performance dataset's are the
/// run's; an accuracy dataset's become its spec keys.
fn read_generation_override(
    s: &mut Section<'_>,
    accuracy: bool,
    completions: bool,
    p: &mut Profile,
    acc_keys: &mut Vec<String>,
) {
    let mut g = s.section("generation_config_override");
    for key in g.keys() {
        let path = g.path_of(&key);
        if !MODEL_PARAMS.contains(&key.as_str()) {
            g.errs.at(
                &path,
                format!(
                    "unknown key: expected one of model_params' fields ({})",
                    MODEL_PARAMS.join(", ")
                ),
            );
            let _ = g.take(&key);
        } else if matches!(key.as_str(), "name" | "streaming" | "tokenizer_name") {
            g.errs.at(
                &path,
                "not honoured per dataset (MLPerf refuses it too): set it on model_params",
            );
            let _ = g.take(&key);
        }
    }
    let max = g.int("max_new_tokens", 1);
    let temperature = g.f64("temperature");
    let top_p = g.f64("top_p");
    if accuracy {
        if let Some(n) = max {
            acc_keys.push(format!("max_output_tokens={n}"));
        }
        for (key, x) in [("temperature", temperature), ("top_p", top_p)] {
            if let Some(x) = x {
                acc_keys.push(format!("{key}={x}"));
            }
        }
    } else {
        if let Some(n) = max.and_then(|n| u32::try_from(n).ok()) {
            p.max_tokens = Some(n);
        }
        if temperature.is_some() {
            p.temperature = temperature;
        }
        if top_p.is_some() {
            p.top_p = top_p;
        }
        let min = g.int("min_new_tokens", 0).filter(|n| *n != 1);
        if min.is_some() && completion_control(&g, "min_new_tokens", completions) {
            p.min_tokens = min.and_then(|n| u32::try_from(n).ok());
        }
        let extra = read_sampling(&mut g, completions);
        if !extra.is_empty() {
            p.extra_body.get_or_insert_with(Map::new).extend(extra);
        }
    }
    // What is left has no per-dataset meaning here.
    for key in g.keys() {
        let path = g.path_of(&key);
        if let Some(v) = g.take(&key) {
            let why = if accuracy {
                "an accuracy dataset takes max_new_tokens, temperature and top_p"
            } else {
                "output lengths follow the server, capped by max_new_tokens"
            };
            g.errs.note(
                &path,
                format!("{} has no effect in llmload ({why})", shown(&v)),
            );
        }
    }
    g.finish();
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
    let api_type = s.string("api_type");
    match api_type.as_deref().map(|t| (t, super::api_of(t))) {
        None => {}
        Some((_, Some(api))) => p.api = Some(api.into()),
        Some(("videogen", None)) => s.errs.at(
            &s.path_of("api_type"),
            "'videogen' is not supported: expected openai, openai_completions or sglang",
        ),
        Some((other, None)) => s.errs.at(
            &s.path_of("api_type"),
            format!("'{other}': expected openai, openai_completions or sglang"),
        ),
    }
    s.finish();
}
