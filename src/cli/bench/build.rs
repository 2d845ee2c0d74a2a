//! From a resolved configuration to the engine's `Plan`: endpoints resolved
//! once (the built-in one started when a scenario needs it), each scenario's
//! requests serialized — or, for multi-turn scenarios, the template its
//! worker builds turns from — and stages in the engine's terms.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::config::BenchConfig;
use crate::config::profile::{Arrival, CacheMode, Content, Scenario, Stage, StageLoad};
use crate::dataset::{self, DatasetSpec, Order, Sample, SyntheticSpec};
use crate::engine::ScenarioPlan;
use crate::engine::conversation::{ConversationTemplate, TurnSource};
use crate::engine::requests::{RequestSet, RequestTemplate};
use crate::http::endpoint::Endpoint;
use crate::plan::{ArrivalKind, Checks, Load, StagePlan};
use crate::protocol::{self, Protocol};
use crate::server::{ServerConfig, ServerHandle};
use crate::tokens::Tokenizer;

/// Distinct prompts generated for a `sized` scenario.
const SIZED_PROMPTS: usize = 256;

/// What building found out, beside the plan's pieces.
pub struct Built<'a> {
    pub endpoints: Vec<Option<std::net::SocketAddr>>,
    pub scenarios: Vec<ScenarioPlan<'a>>,
    /// The first scenario's endpoint URL and model, for the report's title.
    pub url: String,
    pub model: String,
    /// Per scenario: where its prompts came from.
    pub datasets: Vec<Value>,
}

/// The built-in endpoint's settings when bench starts it.
pub fn builtin_server() -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().expect("literal address"),
        workers: 1,
        ttft: Duration::from_millis(20),
        tpot: Duration::from_millis(2),
        ..ServerConfig::default()
    }
}

/// Whether some scenario sends to no endpoint of its own and none is set.
pub fn needs_builtin(cfg: &BenchConfig) -> bool {
    cfg.endpoint.is_none() && cfg.scenarios.iter().any(|s| s.spec.endpoint.is_none())
}

/// Builds every scenario. `server` is the built-in endpoint when one runs.
pub fn build<'a>(
    cfg: &'a BenchConfig,
    server: Option<&ServerHandle>,
    tokenizer: Option<&Tokenizer>,
) -> Result<Built<'a>, String> {
    let mut endpoints: Vec<Option<std::net::SocketAddr>> = Vec::new();
    let mut endpoint_index = BTreeMap::new();
    let mut models: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Built {
        endpoints: Vec::new(),
        scenarios: Vec::new(),
        url: String::new(),
        model: String::new(),
        datasets: Vec::new(),
    };
    for (i, sc) in cfg.scenarios.iter().enumerate() {
        let proto = match &sc.spec.api {
            Some(a) => protocol::find(a)?,
            None => cfg.protocol,
        };
        let endpoint = scenario_endpoint(cfg, sc, proto, server)?;
        let key = if endpoint.resolved() {
            endpoint.addr.to_string()
        } else {
            endpoint.url.clone()
        };
        let ep = *endpoint_index.entry(key).or_insert_with(|| {
            endpoints.push(endpoint.resolved().then_some(endpoint.addr));
            endpoints.len() - 1
        });
        let model = match sc.spec.model.as_ref().or(cfg.model.as_ref()) {
            Some(m) => m.clone(),
            None if server.is_some() && sc.spec.endpoint.is_none() && cfg.endpoint.is_none() => {
                "llmload-mock".to_string()
            }
            None => models
                .entry(endpoint.url.clone())
                .or_insert_with(|| discover_model(&endpoint, cfg))
                .clone(),
        };
        let mut headers: Vec<(String, String)> = cfg.headers.clone();
        for (k, v) in sc.spec.headers.iter().flatten() {
            headers.retain(|(old, _)| !old.eq_ignore_ascii_case(k));
            headers.push((k.clone(), v.clone()));
        }
        if let Some(key) = &cfg.api_key
            && !headers.iter().any(|(k, _)| is_auth_header(k))
        {
            headers.extend(proto.auth_headers(key));
        }
        let stream = sc.spec.stream.unwrap_or(cfg.stream);
        let max_tokens = sc.spec.max_tokens.unwrap_or(cfg.max_tokens);
        let system = sc.spec.system.as_deref().or(cfg.system.as_deref());
        let bust = sc.cache_mode == CacheMode::Bust && cfg.uuid_in_prompt;
        let checks = checks_of(sc);
        let multi_turn = sc.turns.max > 1
            || matches!(
                &sc.content,
                Some(Content::Dataset {
                    conversation: Some(_),
                    ..
                })
            );
        let (samples, order, info) = content_samples(cfg, sc, max_tokens, tokenizer, i)?;
        let mut plan = ScenarioPlan {
            name: sc.name.clone(),
            weight: sc.weight,
            protocol: proto,
            endpoint: ep,
            requests: RequestSet::default(),
            conversation: None,
            turns: (
                sc.turns.min.min(u16::MAX as u32) as u16,
                sc.turns.max.min(u16::MAX as u32) as u16,
            ),
            think_time_ns: sc.think_time.as_nanos() as u64,
            order,
            keep_text: checks.needs_text(),
            checks,
        };
        if multi_turn {
            let mut all_headers: Vec<(String, String)> =
                vec![("User-Agent".into(), "llmload/0.1".into())];
            if stream {
                all_headers.push(("Accept".into(), "text/event-stream".into()));
            }
            all_headers.extend(
                proto
                    .fixed_headers()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
            all_headers.extend(headers.iter().cloned());
            let turns = match (&sc.content, samples) {
                (Some(Content::Scripted { script }), _) => TurnSource::Scripted(script.clone()),
                (_, SampleSource::Conversations(c)) => TurnSource::Conversations(c),
                (_, SampleSource::File(_)) => unreachable!("multi-turn content is loaded"),
                (_, SampleSource::Samples(s)) => TurnSource::Pool(
                    s.into_iter()
                        .filter_map(|s| s.messages.into_iter().rev().find(|m| m.role == "user"))
                        .map(|m| m.content)
                        .collect(),
                ),
            };
            if turns.is_empty() {
                return Err(format!("scenario '{}': no prompts to send", sc.name));
            }
            plan.conversation = Some(ConversationTemplate {
                host: endpoint.host.clone(),
                path: endpoint.path.clone(),
                model: model.clone(),
                system: system.map(str::to_string),
                max_tokens: Some(max_tokens),
                stream,
                sampling: cfg.sampling.clone(),
                extra_body: cfg.extra_body.clone(),
                headers: all_headers,
                correlation_header: cfg.correlation_header.clone(),
                bust,
                turns,
            });
        } else {
            let template = RequestTemplate {
                protocol: proto,
                endpoint: &endpoint,
                model: &model,
                system,
                max_tokens: Some(max_tokens),
                stream,
                headers: &headers,
                sampling: &cfg.sampling,
                extra_body: cfg.extra_body.as_ref(),
                correlation_header: cfg.correlation_header.as_deref(),
                bust,
            };
            let mut scratch = Vec::new();
            match samples {
                SampleSource::Samples(s) => {
                    for sample in &s {
                        plan.requests
                            .push(sample, &template, tokenizer, &mut scratch);
                    }
                }
                SampleSource::File(spec) => {
                    let stats = dataset::load(&spec, &mut |s| {
                        plan.requests.push(&s, &template, tokenizer, &mut scratch);
                        Ok(())
                    })?;
                    out.datasets.push(json!({
                        "scenario": sc.name,
                        "source": "file",
                        "path": spec.path.display().to_string(),
                        "samples": stats.loaded,
                        "skipped": stats.skipped,
                        "skip_examples": stats.skip_examples,
                    }));
                }
                SampleSource::Conversations(_) => unreachable!("conversations are multi-turn"),
            }
        }
        if let Some(info) = info {
            let mut info = info;
            info["scenario"] = sc.name.clone().into();
            info["samples"] = plan.samples().into();
            out.datasets.push(info);
        }
        if i == 0 {
            out.url = endpoint.url.clone();
            out.model = model.clone();
        }
        out.scenarios.push(plan);
    }
    out.endpoints = endpoints;
    Ok(out)
}

/// The engine's stages.
pub fn stages(cfg: &BenchConfig) -> Vec<StagePlan> {
    let kind = match cfg.arrival {
        Arrival::Uniform => ArrivalKind::Uniform,
        Arrival::Poisson => ArrivalKind::Poisson,
    };
    cfg.stages
        .iter()
        .map(|s: &Stage| StagePlan {
            name: s.name.clone(),
            load: match s.load {
                StageLoad::Offline => Load::Offline,
                StageLoad::Closed { concurrency } => Load::Closed { concurrency },
                StageLoad::Open { rate } => Load::Open {
                    kind,
                    rate_from: rate,
                    rate_to: rate,
                },
                StageLoad::Ramp { from, to } => Load::Open {
                    kind,
                    rate_from: from,
                    rate_to: to,
                },
            },
            duration_ns: s.duration.map(|d| d.as_nanos() as u64),
            requests: s.requests,
        })
        .collect()
}

/// Where a scenario's prompts come from before they are serialized.
enum SampleSource {
    Samples(Vec<Sample>),
    /// A dataset file streamed straight into the request set.
    File(DatasetSpec),
    /// A dataset grouped into conversations: each one's user turns.
    Conversations(Vec<Vec<String>>),
}

/// A scenario's prompts, the order to send them in, and a description for
/// the report (files describe themselves once loaded).
fn content_samples(
    cfg: &BenchConfig,
    sc: &Scenario,
    max_tokens: u32,
    tokenizer: Option<&Tokenizer>,
    index: usize,
) -> Result<(SampleSource, Order, Option<Value>), String> {
    let seed = cfg.seed.wrapping_add(index as u64);
    Ok(match &sc.content {
        Some(Content::Pool { prompts }) => (
            SampleSource::Samples(prompts.iter().map(Sample::prompt).collect()),
            Order::Random,
            Some(json!({"source": "pool"})),
        ),
        Some(Content::Scripted { script }) => (
            SampleSource::Samples(script.iter().take(1).map(Sample::prompt).collect()),
            Order::Sequential,
            Some(json!({"source": "scripted"})),
        ),
        Some(Content::Sized {
            approx_input_tokens,
        }) => {
            let spec = SyntheticSpec::parse(&format!(
                "isl={approx_input_tokens},osl={max_tokens},count={SIZED_PROMPTS}"
            ))?;
            (
                SampleSource::Samples(dataset::synthetic::generate(&spec, seed, tokenizer)),
                Order::Shuffle,
                Some(
                    json!({"source": "sized", "isl": approx_input_tokens, "exact_input_lengths": tokenizer.is_some()}),
                ),
            )
        }
        Some(Content::Dataset {
            dataset: spec,
            conversation,
        }) => {
            let spec = DatasetSpec::parse(spec)?;
            match conversation {
                Some(col) => (
                    SampleSource::Conversations(dataset::load_conversations(&spec, col)?),
                    cfg.order,
                    Some(
                        json!({"source": "file", "path": spec.path.display().to_string(), "conversation": col}),
                    ),
                ),
                None if sc.turns.max > 1 => {
                    let mut samples = Vec::new();
                    dataset::load(&spec, &mut |s| {
                        samples.push(s);
                        Ok(())
                    })?;
                    (
                        SampleSource::Samples(samples),
                        cfg.order,
                        Some(json!({"source": "file", "path": spec.path.display().to_string()})),
                    )
                }
                None => (SampleSource::File(spec), cfg.order, None),
            }
        }
        None => match (&cfg.dataset, &cfg.synthetic) {
            (Some(spec), _) if sc.turns.max > 1 => {
                let mut samples = Vec::new();
                dataset::load(spec, &mut |s| {
                    samples.push(s);
                    Ok(())
                })?;
                (
                    SampleSource::Samples(samples),
                    cfg.order,
                    Some(json!({"source": "file", "path": spec.path.display().to_string()})),
                )
            }
            (Some(spec), _) => (SampleSource::File(spec.clone()), cfg.order, None),
            (None, Some(spec)) => (
                SampleSource::Samples(dataset::synthetic::generate(spec, seed, tokenizer)),
                cfg.order,
                Some(json!({
                    "source": "synthetic",
                    "isl": spec.isl,
                    "osl": spec.osl,
                    "exact_input_lengths": tokenizer.is_some(),
                })),
            ),
            (None, None) => (
                SampleSource::Samples(dataset::builtin()),
                cfg.order,
                Some(json!({"source": "builtin"})),
            ),
        },
    })
}

/// The endpoint a scenario sends to: its own, else the top-level one (with
/// the scenario's API's default path when its API differs), else the
/// built-in endpoint.
fn scenario_endpoint(
    cfg: &BenchConfig,
    sc: &Scenario,
    proto: &dyn Protocol,
    server: Option<&ServerHandle>,
) -> Result<Endpoint, String> {
    if let Some(url) = &sc.spec.endpoint {
        return Endpoint::parse_lenient(url, proto.default_path());
    }
    match (&cfg.endpoint, server) {
        (Some(url), _) if proto.name() == cfg.protocol.name() => {
            Endpoint::parse_lenient(url, proto.default_path())
        }
        (Some(url), _) => Endpoint::parse_lenient(&origin(url), proto.default_path()),
        (None, Some(s)) => Ok(Endpoint::local(s.addr, proto.default_path())),
        (None, None) => Err(format!("scenario '{}' has no endpoint", sc.name)),
    }
}

/// `http://host:port` of a URL (its path dropped).
fn origin(url: &str) -> String {
    match url
        .strip_prefix("http://")
        .and_then(|r| r.find('/').map(|i| (r, i)))
    {
        Some((rest, i)) => format!("http://{}", &rest[..i]),
        None => url.to_string(),
    }
}

fn is_auth_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("x-api-key")
}

fn checks_of(sc: &Scenario) -> Checks {
    let c = &sc.checks;
    Checks {
        contains: c.contains.clone().unwrap_or_default(),
        not_contains: c.not_contains.clone().unwrap_or_default(),
        min_completion_tokens: c.min_completion_tokens.map(u64::from),
        max_completion_tokens: c.max_completion_tokens.map(u64::from),
        status: c.status,
    }
}

/// The first model the endpoint lists, or `default` with a warning.
fn discover_model(endpoint: &Endpoint, cfg: &BenchConfig) -> String {
    match crate::cli::models::first_model(endpoint, cfg.connect_timeout) {
        Ok(m) => m,
        Err(e) => {
            eprintln!(
                "llmload bench: could not list models at {} ({e}); sending model 'default' (pass --model)",
                endpoint.url
            );
            "default".to_string()
        }
    }
}
