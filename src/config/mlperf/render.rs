//! The resolved run as MLPerf's `config.yaml` (its `BenchmarkConfig`
//! schema, unset fields left out as MLPerf leaves them), written beside the
//! results of every MLPerf-mode run. MLPerf's submission checker reads
//! `type`, `model_params.streaming`, `settings.runtime.*` and
//! `settings.load_pattern.*` from it. The API key is written as the
//! `${NAME}` it was read from, or else `<redacted>`; endpoint URLs go
//! through `redact_url`.

use std::path::Path;

use serde_json::Value;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter};

use crate::config::BenchConfig;
use crate::http::endpoint::redact_url;
use crate::http::headers::REDACTED;
use crate::plan::Load;

/// `config.yaml` for the run `cfg` describes, against `endpoint_url` with
/// `model` (both as resolved at run time), reporting into `out`.
pub(crate) fn render_config_yaml(
    cfg: &BenchConfig,
    endpoint_url: &str,
    model: &str,
    out: &Path,
) -> String {
    let p = &cfg.profile;
    let load = cfg.stages.first().map(|s| (s.load, s.requests));
    let online = !matches!(load, Some((Load::Offline, _)) | None);
    let kind = if online { "online" } else { "offline" };

    let mut doc = Map::default();
    let default_name = format!("{kind}_benchmark");
    doc.put("name", s(p.mlperf.name.as_deref().unwrap_or(&default_name)));
    doc.put("version", s("1.0"));
    doc.put("type", s(kind));

    let mut mp = Map::default();
    mp.put("name", s(model));
    mp.opt("temperature", p.temperature.map(f));
    mp.opt("top_p", p.top_p.map(f));
    if let Some(extra) = &p.extra_body {
        for key in [
            "seed",
            "top_k",
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
        ] {
            mp.opt(key, extra.get(key).map(json));
        }
    }
    mp.put("max_new_tokens", Yaml::Integer(cfg.max_tokens.into()));
    mp.put(
        "min_new_tokens",
        Yaml::Integer(p.min_tokens.unwrap_or(1).into()),
    );
    mp.put("streaming", s(if cfg.stream { "on" } else { "off" }));
    mp.opt(
        "tokenizer_name",
        cfg.tokenizer.as_ref().map(|t| s(&t.display().to_string())),
    );
    doc.put("model_params", mp.done());

    let mut datasets = Vec::new();
    if let Some(d) = cfg.dataset.as_ref().filter(|_| cfg.phase.runs_perf()) {
        let mut ds = Map::default();
        let name = p.mlperf.dataset_name.clone().unwrap_or_else(|| {
            d.path
                .file_stem()
                .map_or("dataset".to_string(), |s| s.to_string_lossy().into_owned())
        });
        ds.put("name", s(&name));
        ds.put("type", s("performance"));
        ds.put("path", s(&d.path.display().to_string()));
        let mut parser = Map::default();
        parser.opt("prompt", d.columns.prompt.as_deref().map(s));
        parser.opt("system", d.columns.system.as_deref().map(s));
        if !parser.0.is_empty() {
            ds.put("parser", parser.done());
        }
        datasets.push(ds.done());
    }
    if cfg.phase.runs_accuracy() {
        for a in &cfg.accuracy {
            let mut ds = Map::default();
            ds.put("name", s(&a.name));
            ds.put("type", s("accuracy"));
            ds.put("path", s(&a.dataset.path.display().to_string()));
            ds.opt("samples", a.dataset.limit.map(|n| Yaml::Integer(n as i64)));
            let mut parser = Map::default();
            parser.opt("prompt", a.dataset.columns.prompt.as_deref().map(s));
            parser.opt("system", a.dataset.columns.system.as_deref().map(s));
            if !parser.0.is_empty() {
                ds.put("parser", parser.done());
            }
            let mut ac = Map::default();
            ac.put("eval_method", s(a.scorer.name()));
            ac.opt("ground_truth", a.dataset.columns.expected.as_deref().map(s));
            ac.put("extractor", s(a.extractor.mlperf_id()));
            ac.put("num_repeats", Yaml::Integer(a.repeats.into()));
            ds.put("accuracy_config", ac.done());
            let mut gen_cfg = Map::default();
            gen_cfg.opt(
                "max_new_tokens",
                a.max_tokens.map(|n| Yaml::Integer(n.into())),
            );
            gen_cfg.opt("temperature", a.temperature.map(f));
            gen_cfg.opt("top_p", a.top_p.map(f));
            if !gen_cfg.0.is_empty() {
                ds.put("generation_config_override", gen_cfg.done());
            }
            datasets.push(ds.done());
        }
    }
    if !datasets.is_empty() {
        doc.put("datasets", Yaml::Array(datasets));
    }

    let mut settings = Map::default();
    let mut runtime = Map::default();
    let ms = |d: Option<crate::config::profile::HumanDuration>| {
        Yaml::Integer(d.map_or(0, |d| d.0.as_millis() as i64))
    };
    // What the run length rule used, MLPerf's defaults included, and the
    // exact count only when one was asked for (as MLPerf writes it).
    match &cfg.run_length {
        Some(crate::config::run_length::RunLength::Mlperf {
            min_duration_ms,
            exact,
            ..
        }) => {
            runtime.put("min_duration_ms", Yaml::Integer(*min_duration_ms as i64));
            runtime.put("max_duration_ms", ms(p.max_duration));
            runtime.opt("n_samples_to_issue", exact.map(|r| Yaml::Integer(r as i64)));
        }
        _ => {
            runtime.put("min_duration_ms", ms(p.min_duration));
            runtime.put("max_duration_ms", ms(p.max_duration));
            runtime.opt(
                "n_samples_to_issue",
                load.and_then(|(_, r)| r).map(|r| Yaml::Integer(r as i64)),
            );
        }
    }
    runtime.put(
        "scheduler_random_seed",
        Yaml::Integer(cfg.scheduler_seed as i64),
    );
    runtime.put(
        "dataloader_random_seed",
        Yaml::Integer(cfg.dataloader_seed as i64),
    );
    settings.put("runtime", runtime.done());

    let mut lp = Map::default();
    match load {
        Some((Load::Offline, _)) | None => lp.put("type", s("max_throughput")),
        Some((Load::Closed { concurrency }, _)) => {
            lp.put("type", s("concurrency"));
            lp.put("target_concurrency", Yaml::Integer(concurrency as i64));
        }
        Some((
            Load::Open {
                kind, rate_from, ..
            },
            _,
        )) => {
            lp.put("type", s(kind.name()));
            lp.put("target_qps", f(rate_from));
            // MLPerf writes it for poisson only.
            if kind == crate::plan::ArrivalKind::Poisson {
                let legacy = p.mlperf.legacy_qps.unwrap_or(true);
                lp.put("use_legacy_loadgen_qps_metrics", Yaml::Boolean(legacy));
            }
        }
    }
    settings.put("load_pattern", lp.done());

    let mut client = Map::default();
    // An accuracy-only run issues one request at a time on one connection
    // of one worker: MLPerf's single stream, which its compliance check
    // reads from these two fields.
    let single = !cfg.phase.runs_perf();
    let (workers, conns) = if single {
        (1, 1)
    } else {
        (cfg.workers as i64, cfg.connections as i64)
    };
    client.put("num_workers", Yaml::Integer(workers));
    client.put("max_connections", Yaml::Integer(conns));
    client.put("insecure", Yaml::Boolean(p.insecure.unwrap_or(false)));
    settings.put("client", client.done());

    let mut warmup = Map::default();
    warmup.put("enabled", Yaml::Boolean(p.warmup_requests.is_some()));
    warmup.opt(
        "n_requests",
        p.warmup_requests.map(|n| Yaml::Integer(n as i64)),
    );
    warmup.put("salt", Yaml::Boolean(false));
    warmup.put("drain", Yaml::Boolean(false));
    warmup.put(
        "warmup_random_seed",
        Yaml::Integer(cfg.mlperf_warmup_seed() as i64),
    );
    settings.put("warmup", warmup.done());

    let mut es = Map::default();
    es.put("enabled", Yaml::Boolean(p.early_stopping.unwrap_or(true)));
    settings.put("early_stopping", es.done());
    doc.put("settings", settings.done());

    let mut ep = Map::default();
    let urls: Vec<Yaml> = match (&p.endpoints, &p.endpoint) {
        (Some(list), _) => list.iter().map(|u| s(&redact_url(u))).collect(),
        (None, Some(u)) => vec![s(&redact_url(u))],
        (None, None) => vec![s(&redact_url(endpoint_url))],
    };
    ep.put("endpoints", Yaml::Array(urls));
    match p.api_key.as_deref() {
        Some(k) if super::env::whole_reference(k).is_some() => ep.put("api_key", s(k)),
        _ if cfg.api_key.is_some() || p.api_key.is_some() || p.api_key_file.is_some() => {
            ep.put("api_key", s(REDACTED))
        }
        _ => {}
    }
    ep.put("api_type", s(super::api_type_of(cfg.protocol.name())));
    doc.put("endpoint_config", ep.done());
    doc.put("report_dir", s(&out.display().to_string()));

    let mut text = String::new();
    let mut emitter = YamlEmitter::new(&mut text);
    emitter
        .dump(&doc.done())
        .expect("a YAML tree of scalars, lists and maps emits");
    let body = text.strip_prefix("---\n").unwrap_or(&text);
    format!("{body}\n")
}

/// An ordered YAML mapping under construction.
#[derive(Default)]
struct Map(Hash);

impl Map {
    fn put(&mut self, key: &str, v: Yaml) {
        self.0.insert(Yaml::String(key.to_string()), v);
    }

    fn opt(&mut self, key: &str, v: Option<Yaml>) {
        if let Some(v) = v {
            self.put(key, v);
        }
    }

    fn done(self) -> Yaml {
        Yaml::Hash(self.0)
    }
}

fn s(v: &str) -> Yaml {
    Yaml::String(v.to_string())
}

/// A float as YAML writes one (`50.0`, never `50`).
fn f(x: f64) -> Yaml {
    Yaml::Real(format!("{x:?}"))
}

fn json(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => f(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(t) => s(t),
        Value::Array(a) => Yaml::Array(a.iter().map(json).collect()),
        Value::Object(o) => {
            let mut m = Map::default();
            for (k, v) in o {
                m.put(k, json(v));
            }
            m.done()
        }
    }
}
