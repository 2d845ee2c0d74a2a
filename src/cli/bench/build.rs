//! From a resolved configuration to the engine's scenarios: endpoints
//! listed once each (the built-in one when a scenario needs it), each
//! scenario's requests serialized — or, for multi-turn scenarios, the
//! template its worker builds turns from — and a description of where each
//! scenario's prompts came from, for the report.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::row_bound;
use crate::cli::errln;
use crate::cli::models::ModelsError;
use crate::config::BenchConfig;
use crate::config::profile::{CacheMode, Content, Scenario};
use crate::dataset::synthetic::Dist;
use crate::dataset::{self, DatasetSpec, LoadStats, Order, Sample, SyntheticSpec};
use crate::engine::conversation::{ConversationTemplate, TurnSource};
use crate::engine::requests::{RequestSet, RequestTemplate, Target};
use crate::engine::{EndpointPlan, ScenarioPlan};
use crate::http::endpoint::Endpoint;
use crate::http::headers::{is_auth_header, is_secret_header};
use crate::http::redact::{redact, secrets};
use crate::protocol::errors::one_line;
use crate::report::summary::{TlsEndpoint, TlsSummary};
use crate::server::{ServerConfig, ServerHandle};
use crate::tls::{TlsClient, TlsSettings};
use crate::tokens::Tokenizer;

/// Distinct prompts generated for a `sized` scenario.
const SIZED_PROMPTS: usize = 256;

/// What building found out, beside the plan's pieces.
pub(super) struct Built<'a> {
    pub endpoints: Vec<EndpointPlan>,
    pub scenarios: Vec<ScenarioPlan<'a>>,
    /// The first scenario's endpoint URL (as echoed: query values masked;
    /// several as a comma list) and model, for the report's title.
    pub url: String,
    pub model: String,
    /// Per scenario: where its prompts came from.
    pub datasets: Vec<DatasetInfo>,
    /// How the https endpoints were reached; `None` when none is https.
    pub tls: Option<TlsSummary>,
    /// What no server's message may show (`http::redact::secrets`): every
    /// scenario's credentials and URL query values.
    pub secrets: Vec<String>,
    /// How the first scenario asks its endpoint, for the cause of a run
    /// that failed fast.
    pub first: Option<FirstAsk>,
    /// What the report must say about how the datasets were read.
    pub notes: Vec<String>,
}

/// The first scenario's endpoint, what it sends beside the body, and how
/// it is reached.
pub(crate) struct FirstAsk {
    pub endpoint: Endpoint,
    pub headers: Vec<(String, String)>,
    pub tls: Option<TlsClient>,
    /// An API key or an auth header is sent.
    pub credentials: bool,
    pub api: &'static str,
}

/// What makes two scenarios' endpoints one entry of the engine's table:
/// the address (or the URL, for a host that did not resolve), and for
/// https the name verified and the TLS settings; then connection reuse.
type EndpointKey = (String, Option<(String, TlsSettings)>, bool);

/// Where one scenario's prompts came from, as the summary's `dataset`
/// block shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DatasetInfo {
    pub scenario: String,
    /// Distinct prompts (single turn) or conversations' first turns.
    pub samples: u64,
    #[serde(flatten)]
    pub source: Source,
}

/// A scenario's prompt source and what is worth knowing about it.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub(crate) enum Source {
    Builtin,
    Pool,
    Scripted,
    Sized {
        isl: u32,
        exact_input_lengths: bool,
    },
    Synthetic {
        isl: u32,
        osl: u32,
        exact_input_lengths: bool,
    },
    File {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
        /// Streamed files only: what loading skipped.
        #[serde(flatten)]
        skips: Option<Skips>,
    },
}

/// Invalid entries a dataset file had (with `skip_invalid=true`).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Skips {
    pub skipped: u64,
    pub skip_examples: Vec<String>,
}

impl Source {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::Pool => "pool",
            Source::Scripted => "scripted",
            Source::Sized { .. } => "sized",
            Source::Synthetic { .. } => "synthetic",
            Source::File { .. } => "file",
        }
    }

    fn file(spec: &DatasetSpec, conversation: Option<&str>) -> Source {
        Source::File {
            path: spec.path.display().to_string(),
            conversation: conversation.map(str::to_string),
            skips: None,
        }
    }
}

/// The summary's `dataset` block: the one scenario's description, or the
/// totals over several with each one's beside them.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Datasets {
    One(DatasetInfo),
    Many {
        /// The first scenario's.
        source: &'static str,
        samples: u64,
        skipped: u64,
        scenarios: Vec<DatasetInfo>,
    },
}

impl Datasets {
    pub(crate) fn of(mut list: Vec<DatasetInfo>) -> Datasets {
        if list.len() == 1 {
            return Datasets::One(list.remove(0));
        }
        let skipped = |d: &DatasetInfo| match &d.source {
            Source::File { skips: Some(s), .. } => s.skipped,
            _ => 0,
        };
        Datasets::Many {
            source: list.first().map_or("builtin", |d| d.source.name()),
            samples: list.iter().map(|d| d.samples).sum(),
            skipped: list.iter().map(skipped).sum(),
            scenarios: list,
        }
    }
}

/// The built-in endpoint's timing when bench starts it (`--help` shows it).
pub(crate) mod builtin {
    use std::time::Duration;

    use crate::config::settings::defaults;

    defaults! {
        BUILTIN_TTFT: Duration = Duration::from_millis(20);
        BUILTIN_TPOT: Duration = Duration::from_millis(2);
    }
}

/// The built-in endpoint's settings when bench starts it.
pub(super) fn builtin_server() -> ServerConfig {
    ServerConfig {
        listen: "127.0.0.1:0".parse().expect("literal address"),
        workers: 1,
        ttft: builtin::BUILTIN_TTFT,
        tpot: builtin::BUILTIN_TPOT,
        // The run's own connections may sit idle between stages or think
        // times; the built-in endpoint must not close them under it.
        idle_timeout: Duration::ZERO,
        ..ServerConfig::default()
    }
}

/// Whether some scenario sends to the built-in endpoint.
pub(super) fn needs_builtin(cfg: &BenchConfig) -> bool {
    cfg.scenarios.iter().any(|s| s.endpoint.is_none())
}

/// Builds every scenario. `server` is the built-in endpoint when one runs;
/// `bound_rows`: a dataset file is read only as far as the run can use.
pub(super) fn build<'a>(
    cfg: &'a BenchConfig,
    server: Option<&ServerHandle>,
    tokenizer: Option<&Tokenizer>,
    bound_rows: bool,
) -> Result<Built<'a>, String> {
    let mut table = Table::default();
    let mut models: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Built {
        endpoints: Vec::new(),
        scenarios: Vec::new(),
        url: String::new(),
        model: String::new(),
        datasets: Vec::new(),
        tls: None,
        secrets: Vec::new(),
        first: None,
        notes: Vec::new(),
    };
    let (mut sent_headers, mut urls) = (Vec::new(), Vec::new());
    if let Some(w) = cleartext_warning(cfg) {
        errln!("llmload bench: warning: {w}");
    }
    // Only the rows the run can use are read from a dataset file: the
    // bound is the run's, the same for every scenario.
    let bound = row_bound::rows_needed(cfg).filter(|_| bound_rows);
    for (i, sc) in cfg.scenarios.iter().enumerate() {
        let proto = sc.protocol;
        let endpoint = match (&sc.endpoint, server) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => Endpoint::local(s.addr, proto.default_path()),
            (None, None) => return Err(format!("scenario '{}' has no endpoint", sc.name)),
        };
        let (ep, tls) = table.add(&endpoint, sc, &mut out.tls)?;
        let mut group = vec![ep];
        for more in &sc.more_endpoints {
            group.push(table.add(more, sc, &mut out.tls)?.0);
        }
        let targets: Vec<Target> = std::iter::once(&endpoint)
            .chain(&sc.more_endpoints)
            .map(Target::of)
            .collect();
        let mut headers = sc.headers.clone();
        if let Some(key) = &cfg.api_key
            && !headers.iter().any(|(k, _)| is_auth_header(k))
        {
            headers.extend(proto.auth_headers(key));
        }
        sent_headers.extend(headers.iter().cloned());
        if out.first.is_none() {
            out.first = Some(FirstAsk {
                endpoint: endpoint.clone(),
                headers: headers.clone(),
                tls: tls.clone(),
                credentials: headers.iter().any(|(k, _)| is_secret_header(k)),
                api: proto.name(),
            });
        }
        urls.extend(
            std::iter::once(&endpoint)
                .chain(&sc.more_endpoints)
                .map(|e| e.url.clone()),
        );
        let model = match &sc.model {
            Some(m) => m.clone(),
            None if sc.endpoint.is_none() => "llmload-mock".to_string(),
            None => match models.get(&endpoint.url) {
                Some(m) => m.clone(),
                None => {
                    let m = discover_model(&endpoint, &headers, cfg, tls.as_ref())?;
                    models.insert(endpoint.url.clone(), m.clone());
                    m
                }
            },
        };
        // Without keep-alive the server is told each connection carries one
        // request, so it closes its side too (unless the user set the
        // header).
        if !sc.keep_alive
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
        {
            headers.push(("Connection".to_string(), "close".to_string()));
        }
        let (stream, max_tokens, system) = (sc.stream, sc.max_tokens, sc.system.as_deref());
        let bust = sc.cache_mode == CacheMode::Bust && cfg.uuid_in_prompt;
        let multi_turn = sc.turns.max > 1
            || matches!(
                &sc.content,
                Some(Content::Dataset {
                    conversation: Some(_),
                    ..
                })
            );
        let (samples, order, source) = content_samples(cfg, sc, tokenizer, i)?;
        // A dataset's samples (a file, or the built-in set) are its rows in
        // order; everything else is made up and has none.
        let rows = !multi_turn
            && (matches!(samples, SampleSource::File(_))
                || matches!(source, Some(Source::Builtin)));
        let mut plan = ScenarioPlan {
            name: sc.name.clone(),
            weight: sc.weight,
            protocol: proto,
            endpoints: group,
            requests: RequestSet::default(),
            rows,
            conversation: None,
            turns: (
                sc.turns.min.min(u16::MAX as u32) as u16,
                sc.turns.max.min(u16::MAX as u32) as u16,
            ),
            think_time_ns: sc.think_time_ns,
            order,
            keep_text: sc.checks.needs_text(),
            checks: sc.checks.clone(),
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
                targets,
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
                prompt_only_isl: cfg.mlperf,
            };
            let mut scratch = Vec::new();
            match samples {
                SampleSource::Samples(s) => {
                    for sample in &s {
                        plan.requests
                            .push(sample, &template, tokenizer, &mut scratch);
                    }
                }
                SampleSource::File(mut spec) => {
                    let bound = bound
                        .as_ref()
                        .filter(|b| spec.limit.is_none_or(|l| b.rows < l));
                    if let Some(b) = &bound {
                        spec.limit = Some(b.rows);
                    }
                    let stats = dataset::load(&spec, &mut |s| {
                        plan.requests.push(&s, &template, tokenizer, &mut scratch);
                        Ok(())
                    })?;
                    if let Some(b) = bound.filter(|b| stats.loaded == b.rows) {
                        out.notes.push(format!(
                            "scenario '{}': read the first {} row(s) of {}: {}",
                            sc.name,
                            b.rows,
                            spec.path.display(),
                            b.why
                        ));
                    }
                    out.datasets.push(streamed(&sc.name, &spec, stats));
                }
                SampleSource::Conversations(_) => unreachable!("conversations are multi-turn"),
            }
            plan.requests.add_targets(&targets[1..]);
            // A template past its budget on one prompt is one that a
            // hostile or broken file made unbounded: the run's input
            // counts would rest on a guess, so it does not start.
            if let Some(why) = tokenizer.and_then(|t| t.chat_template_refused()) {
                return Err(format!("--tokenizer: {why}"));
            }
            if let Some((n, first)) = plan.requests.chat_failures() {
                errln!(
                    "llmload bench: warning: scenario '{}': the chat template failed on {n} \
                     message prompt(s), counted as plain text instead (first: {first})",
                    sc.name
                );
            }
        }
        if let Order::Single(row) = plan.order
            && row as usize >= plan.samples()
        {
            let n = plan.samples();
            return Err(format!(
                "--order single:{row}: scenario '{}' has {n} samples (rows 0 to {})",
                sc.name,
                n - 1
            ));
        }
        if let Some(source) = source {
            out.datasets.push(DatasetInfo {
                scenario: sc.name.clone(),
                samples: plan.samples() as u64,
                source,
            });
        }
        if i == 0 {
            // Several endpoints read as the comma list that names them.
            out.url = std::iter::once(&endpoint)
                .chain(&sc.more_endpoints)
                .map(Endpoint::display)
                .collect::<Vec<_>>()
                .join(",");
            out.model = model.clone();
        }
        out.scenarios.push(plan);
    }
    out.endpoints = table.endpoints;
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    out.secrets = secrets(cfg.api_key.as_deref(), &sent_headers, &urls);
    Ok(out)
}

/// The engine's endpoint table as it is built: each distinct endpoint
/// once, and one TLS client per server and settings.
#[derive(Default)]
struct Table {
    endpoints: Vec<EndpointPlan>,
    index: BTreeMap<EndpointKey, usize>,
    /// Whatever the reuse: the scenarios that share a client share its
    /// sessions.
    tls_clients: BTreeMap<(String, String, TlsSettings), TlsClient>,
}

impl Table {
    /// The index of `endpoint` as scenario `sc` reaches it (added when
    /// new), and its TLS client for https; `tls` notes each new client.
    fn add(
        &mut self,
        endpoint: &Endpoint,
        sc: &Scenario,
        tls: &mut Option<TlsSummary>,
    ) -> Result<(usize, Option<TlsClient>), String> {
        let where_ = if endpoint.resolved() {
            endpoint.addr.to_string()
        } else {
            endpoint.url.clone()
        };
        let client = if endpoint.tls {
            let key = (where_.clone(), endpoint.hostname.clone(), sc.tls.clone());
            Some(match self.tls_clients.get(&key) {
                Some(c) => c.clone(),
                None => {
                    let c = TlsClient::new(&sc.tls, &endpoint.hostname)
                        .map_err(|e| format!("{}: {e}", endpoint.display()))?;
                    tls_note(tls, endpoint, &sc.tls, &c);
                    self.tls_clients.insert(key, c.clone());
                    c
                }
            })
        } else {
            None
        };
        let key: EndpointKey = (
            where_,
            endpoint
                .tls
                .then(|| (endpoint.hostname.clone(), sc.tls.clone())),
            sc.keep_alive,
        );
        if let Some(&ep) = self.index.get(&key) {
            return Ok((ep, client));
        }
        self.endpoints.push(EndpointPlan {
            url: endpoint.display(),
            addr: endpoint.resolved().then_some(endpoint.addr),
            tls: client.clone(),
            keep_alive: sc.keep_alive,
        });
        self.index.insert(key, self.endpoints.len() - 1);
        Ok((self.endpoints.len() - 1, client))
    }
}

impl Built<'_> {
    /// The rows of one pass over the run's dataset file, for rounding a
    /// count to whole passes; `None` when prompts are generated or built
    /// in, or several scenarios share the run (no one dataset to pass over).
    pub(super) fn dataset_rows(&self) -> Option<u64> {
        match &self.datasets[..] {
            [one] if self.scenarios.len() == 1 && matches!(one.source, Source::File { .. }) => {
                Some(one.samples)
            }
            _ => None,
        }
    }

    /// Distinct prompts of the first scenario.
    pub(super) fn samples(&self) -> u64 {
        self.scenarios.first().map_or(1, |s| s.samples() as u64)
    }
}

/// Where a scenario's prompts come from before they are serialized.
enum SampleSource {
    Samples(Vec<Sample>),
    /// A dataset file streamed straight into the request set.
    File(Box<DatasetSpec>),
    /// A dataset grouped into conversations: each one's user turns.
    Conversations(Vec<Vec<String>>),
}

/// A scenario's prompts, the order to send them in, and where they came from
/// (a streamed file describes itself once loaded).
fn content_samples(
    cfg: &BenchConfig,
    sc: &Scenario,
    tokenizer: Option<&Tokenizer>,
    index: usize,
) -> Result<(SampleSource, Order, Option<Source>), String> {
    let seed = cfg.dataloader_seed.wrapping_add(index as u64);
    let exact_input_lengths = tokenizer.is_some();
    Ok(match &sc.content {
        Some(Content::Pool { prompts }) => (
            SampleSource::Samples(prompts.iter().map(Sample::prompt).collect()),
            Order::Random,
            Some(Source::Pool),
        ),
        Some(Content::Scripted { script }) => (
            SampleSource::Samples(script.iter().take(1).map(Sample::prompt).collect()),
            Order::Sequential,
            Some(Source::Scripted),
        ),
        Some(Content::Sized {
            approx_input_tokens,
        }) => {
            let spec = SyntheticSpec {
                isl: *approx_input_tokens,
                osl: sc.max_tokens,
                isl_std: 0.0,
                osl_std: 0.0,
                dist: Dist::Fixed,
                count: SIZED_PROMPTS,
            };
            (
                SampleSource::Samples(dataset::synthetic::generate(&spec, seed, tokenizer)),
                Order::Shuffle,
                Some(Source::Sized {
                    isl: *approx_input_tokens,
                    exact_input_lengths,
                }),
            )
        }
        Some(Content::Dataset {
            spec,
            conversation: Some(col),
        }) => (
            SampleSource::Conversations(dataset::load_conversations(spec, col)?),
            cfg.order,
            Some(Source::file(spec, Some(col))),
        ),
        Some(Content::Dataset {
            spec,
            conversation: None,
        }) => file_samples(spec, sc, cfg.order)?,
        None => match (&cfg.dataset, &cfg.synthetic) {
            (Some(spec), _) => file_samples(spec, sc, cfg.order)?,
            (None, Some(spec)) => (
                SampleSource::Samples(dataset::synthetic::generate(spec, seed, tokenizer)),
                cfg.order,
                Some(Source::Synthetic {
                    isl: spec.isl,
                    osl: spec.osl,
                    exact_input_lengths,
                }),
            ),
            (None, None) => (
                SampleSource::Samples(dataset::builtin()),
                cfg.order,
                Some(Source::Builtin),
            ),
        },
    })
}

/// A dataset file's samples: loaded whole for a multi-turn scenario (its
/// turns draw from them), else streamed into the request set later.
fn file_samples(
    spec: &DatasetSpec,
    sc: &Scenario,
    order: Order,
) -> Result<(SampleSource, Order, Option<Source>), String> {
    if sc.turns.max <= 1 {
        return Ok((SampleSource::File(Box::new(spec.clone())), order, None));
    }
    let mut samples = Vec::new();
    dataset::load(spec, &mut |s| {
        samples.push(s);
        Ok(())
    })?;
    Ok((
        SampleSource::Samples(samples),
        order,
        Some(Source::file(spec, None)),
    ))
}

/// The description of a file streamed into a scenario's requests.
fn streamed(scenario: &str, spec: &DatasetSpec, stats: LoadStats) -> DatasetInfo {
    DatasetInfo {
        scenario: scenario.to_string(),
        samples: stats.loaded,
        source: Source::File {
            path: spec.path.display().to_string(),
            conversation: None,
            skips: Some(Skips {
                skipped: stats.skipped,
                skip_examples: stats.skip_examples,
            }),
        },
    }
}

/// The first model the endpoint lists, asked with the scenario's
/// `headers` (its extra headers and the API key): `default` with a warning
/// when there is no list, an error when the credentials are refused, since
/// every request of the run would be refused too.
fn discover_model(
    endpoint: &Endpoint,
    headers: &[(String, String)],
    cfg: &BenchConfig,
    tls: Option<&TlsClient>,
) -> Result<String, String> {
    let connect = Duration::from_nanos(cfg.limits.connect_ns);
    let hidden = secrets(None, headers, &[&endpoint.url]);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    match crate::cli::models::first_model(endpoint, &headers, connect, tls) {
        Ok(m) => Ok(m),
        Err(e @ ModelsError::Refused { .. }) => {
            let sent = if headers.iter().any(|(k, _)| is_secret_header(k)) {
                "check the API key (--api-key, --api-key-file, $OPENAI_API_KEY) and --header values"
            } else {
                "no API key was sent: give one with --api-key-file, --api-key or $OPENAI_API_KEY"
            };
            Err(format!(
                "the endpoint refused the credentials: GET /v1/models on {} answered {}; {sent} \
                 (or name the model with --model to skip this request)",
                endpoint.host,
                one_line(&redact(&e.to_string(), &hidden), 300)
            ))
        }
        Err(e) => {
            errln!(
                "llmload bench: could not list models at {} ({}); sending model 'default' (pass --model)",
                endpoint.display(),
                one_line(&redact(&e.to_string(), &hidden), 300)
            );
            Ok("default".to_string())
        }
    }
}

/// Notes how an https endpoint is reached, for the summary's `tls` block
/// (paths only: a key file's contents never leave it).
fn tls_note(tls: &mut Option<TlsSummary>, endpoint: &Endpoint, s: &TlsSettings, c: &TlsClient) {
    let t = tls.get_or_insert_with(TlsSummary::default);
    t.insecure |= c.insecure;
    t.endpoints.push(TlsEndpoint {
        url: endpoint.display(),
        server_name: s
            .server_name
            .clone()
            .unwrap_or_else(|| endpoint.hostname.clone()),
        verify: !c.insecure,
        ca_cert: s.ca_cert.as_ref().map(|p| p.display().to_string()),
        client_cert: s.client_cert.as_ref().map(|p| p.display().to_string()),
    });
}

/// The warning to give when credentials (the API key, or a header whose
/// name marks it secret) will travel in clear text to a host off this
/// machine: on every plain-http endpoint. Names the hosts and what is sent,
/// never a value. A key from `$OPENAI_API_KEY` is sent like one given, as
/// OpenAI's own clients do, but the warning says where it came from, since
/// the user may not have meant to send it.
fn cleartext_warning(cfg: &BenchConfig) -> Option<String> {
    let mut hosts = std::collections::BTreeSet::new();
    let mut what = std::collections::BTreeSet::new();
    for sc in &cfg.scenarios {
        // No endpoint: the built-in one, on loopback; https is not clear text.
        let Some(e) = sc.endpoint.as_ref().filter(|e| !e.is_loopback() && !e.tls) else {
            continue;
        };
        let secret: Vec<&str> = sc
            .headers
            .iter()
            .filter(|(k, _)| is_secret_header(k))
            .map(|(k, _)| k.as_str())
            .collect();
        let key_sent = cfg.api_key.is_some() && !sc.headers.iter().any(|(k, _)| is_auth_header(k));
        if key_sent {
            what.insert(if cfg.api_key_from_env {
                "the API key from $OPENAI_API_KEY".to_string()
            } else {
                "the API key".to_string()
            });
        }
        for k in &secret {
            what.insert(format!("header {k}"));
        }
        if key_sent || !secret.is_empty() {
            hosts.insert(e.host.clone());
        }
    }
    if hosts.is_empty() {
        return None;
    }
    Some(format!(
        "{} will be sent in clear text (plain http) to {}; anyone on the network path can read it",
        what.into_iter().collect::<Vec<_>>().join(", "),
        hosts.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn info(scenario: &str, samples: u64, source: Source) -> DatasetInfo {
        DatasetInfo {
            scenario: scenario.to_string(),
            samples,
            source,
        }
    }

    fn value(d: Datasets) -> Value {
        serde_json::to_value(d).unwrap()
    }

    #[test]
    fn one_scenario_describes_its_source() {
        let cases = [
            (
                Source::Builtin,
                json!({"scenario": "s", "samples": 3, "source": "builtin"}),
            ),
            (
                Source::Sized {
                    isl: 50,
                    exact_input_lengths: false,
                },
                json!({"scenario": "s", "samples": 3, "source": "sized", "isl": 50,
                       "exact_input_lengths": false}),
            ),
            (
                Source::Synthetic {
                    isl: 20,
                    osl: 4,
                    exact_input_lengths: true,
                },
                json!({"scenario": "s", "samples": 3, "source": "synthetic", "isl": 20,
                       "osl": 4, "exact_input_lengths": true}),
            ),
            (
                Source::File {
                    path: "ds.jsonl".to_string(),
                    conversation: Some("conv".to_string()),
                    skips: None,
                },
                json!({"scenario": "s", "samples": 3, "source": "file", "path": "ds.jsonl",
                       "conversation": "conv"}),
            ),
            (
                Source::File {
                    path: "bad.jsonl".to_string(),
                    conversation: None,
                    skips: Some(Skips {
                        skipped: 1,
                        skip_examples: vec!["bad.jsonl:2: invalid JSON".to_string()],
                    }),
                },
                json!({"scenario": "s", "samples": 3, "source": "file", "path": "bad.jsonl",
                       "skipped": 1, "skip_examples": ["bad.jsonl:2: invalid JSON"]}),
            ),
        ];
        for (source, want) in cases {
            assert_eq!(value(Datasets::of(vec![info("s", 3, source)])), want);
        }
    }

    #[test]
    fn credentials_to_an_https_endpoint_are_not_clear_text() {
        let cfg = |url: &str| {
            let no_env = |_: &str| Err(std::env::VarError::NotPresent);
            let text = format!(r#"{{"endpoint": "{url}", "api_key": "k"}}"#);
            let p = crate::config::profile::Profile::parse(&text, "run.json", &no_env).unwrap();
            crate::config::resolve::resolve(p).unwrap()
        };
        assert_eq!(cleartext_warning(&cfg("https://203.0.113.9/v1")), None);
        let w = cleartext_warning(&cfg("http://203.0.113.9/v1")).unwrap();
        assert!(w.contains("clear text") && w.contains("203.0.113.9"), "{w}");
    }

    #[test]
    fn several_scenarios_are_summed() {
        let skips = Some(Skips {
            skipped: 2,
            skip_examples: vec![],
        });
        let file = Source::File {
            path: "a.csv".to_string(),
            conversation: None,
            skips,
        };
        let v = value(Datasets::of(vec![
            info("a", 10, Source::Scripted),
            info("b", 5, file),
            info("c", 1, Source::Pool),
        ]));
        assert_eq!(v["source"], "scripted");
        assert_eq!(v["samples"], 16);
        assert_eq!(v["skipped"], 2);
        let names: Vec<&Value> = v["scenarios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["scenario"])
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(
            v["scenarios"][2],
            json!({"scenario": "c", "samples": 1, "source": "pool"})
        );
    }
}
