//! A merged profile resolved into the run it describes: each string parsed
//! once into its typed form (the engine's `plan` types wherever the engine
//! reads the value), defaults applied, every impossible value reported by its
//! JSON path. `llmload validate` prints the errors and `bench` runs the value;
//! one function serves both, so they cannot disagree. What depends on this
//! machine rather than the profile (the descriptor limit, a CPU-derived worker
//! count, a key from the environment) is [`check_host`]'s, so a profile that
//! validates on a laptop is not called invalid for the laptop's limits.

use std::time::Duration;

use super::BenchConfig;
use super::profile::typed::{self, Mode, TlsFields, nanos, tls_fields_set};
use super::profile::validate::{
    Errors, check_api, check_dataset, check_endpoints, check_headers, unflag, valid_header_name,
};
use super::profile::{HumanDuration, Profile, Scenario, TurnRange, defaults};
use super::run_length;
use super::slo::parse_slo;
use crate::accuracy::{AccuracySpec, Phase};
use crate::choice::Choice;
use crate::config::bytes::format_bytes;
use crate::config::duration::format_duration;
use crate::dataset::{DatasetSpec, Order, SyntheticSpec};
use crate::plan::{Checks, EventsMode, Limits, Load, ServerMetrics, Slo, Thresholds, TokenPolicy};
use crate::protocol::{self, Protocol, Sampling};
use crate::tls::TlsSettings;

/// Worker processes a run may have.
const MAX_WORKERS: usize = 64;

/// Inter-token gaps a request keeps at least, however few tokens it asks for
/// (a response may run past `max_tokens`).
const MIN_GAPS: usize = 1024;

/// The largest `max_output_text`: a record's counts are 32-bit, and a worker
/// keeping more text than this per response would be a memory hazard, not a
/// measurement.
const MAX_OUTPUT_TEXT: u64 = 1 << 30;

/// Resolves a merged profile into a run, or says everything that is wrong
/// with it, each error as `json.path: message` in the order of the fields.
pub(crate) fn resolve(profile: Profile) -> Result<BenchConfig, Vec<String>> {
    let mut errs = Errors::default();
    let p = &profile;
    let protocol = p
        .api
        .as_ref()
        .and_then(|a| check_api(&mut errs, "api", a))
        .unwrap_or_else(default_protocol);
    let mut endpoints = check_endpoints(
        &mut errs,
        "",
        p.endpoint.as_deref(),
        p.endpoints.as_deref(),
        protocol.default_path(),
    );
    let endpoint = (!endpoints.is_empty()).then(|| endpoints.remove(0));
    if p.model.as_deref() == Some("") {
        errs.at("model", "empty model name (leave it out to ask /v1/models)");
    }
    let mlperf = match p.preset.as_deref() {
        None => false,
        Some("mlperf") => true,
        Some(other) => {
            errs.at("preset", format!("'{other}': expected mlperf"));
            false
        }
    };
    // Parsed once; an unknown mode is reported with the stage it shapes.
    let mode = p.mode.as_deref().map(Mode::parse);
    let arrival = typed::arrival(p, mode.as_ref(), &mut errs);
    let default_cache = if mlperf {
        defaults::MLPERF_CACHE_MODE
    } else {
        defaults::CACHE_MODE
    };
    let cache_mode = choice(
        &mut errs,
        "cache_mode",
        p.cache_mode.as_deref(),
        default_cache,
    );
    let default_order = if mlperf {
        defaults::MLPERF_ORDER
    } else {
        defaults::ORDER
    };
    let order = parsed(&mut errs, "order", p.order.as_deref(), default_order, |o| {
        Order::parse(o).map_err(|e| unflag(e, "--order"))
    });
    if p.connections == Some(0) {
        errs.at("connections", "must be at least 1");
    }
    if p.openloop_max_inflight == Some(0) {
        errs.at("openloop_max_inflight", "must be at least 1");
    }
    if let Some(w) = p.workers
        && !(1..=MAX_WORKERS).contains(&w)
    {
        errs.at("workers", format!("{w}: expected 1 to {MAX_WORKERS}"));
    }
    if p.max_tokens == Some(0) {
        errs.at("max_tokens", "must be at least 1");
    }
    if let (Some(min), Some(max)) = (p.min_tokens, p.max_tokens)
        && min > max
    {
        errs.at(
            "min_tokens",
            format!("{min} is above max_tokens {max}: no response can satisfy both"),
        );
    }
    if p.dataset.is_some() && p.synthetic.is_some() {
        errs.at(
            "synthetic",
            "dataset and synthetic are alternatives; give one",
        );
    }
    let dataset = p
        .dataset
        .as_ref()
        .and_then(|d| check_dataset(&mut errs, "dataset", d));
    let synthetic = p.synthetic.as_ref().and_then(|s| {
        SyntheticSpec::parse(s)
            .map_err(|e| errs.at("synthetic", unflag(e, "--synthetic")))
            .ok()
    });
    if p.tokenizer
        .as_ref()
        .is_some_and(|t| t.as_os_str().is_empty())
    {
        errs.at("tokenizer", "empty path");
    }
    let token_source = choice(
        &mut errs,
        "token_source",
        p.token_source.as_deref(),
        defaults::TOKEN_SOURCE,
    );
    let slo = parsed(
        &mut errs,
        "slo",
        p.slo.as_deref(),
        Slo::default(),
        parse_slo,
    );
    let metrics_preset = choice(
        &mut errs,
        "metrics_preset",
        p.metrics_preset.as_deref(),
        defaults::METRICS_PRESET,
    );
    let server_metrics = parsed(
        &mut errs,
        "server_metrics",
        p.server_metrics.as_deref(),
        defaults::SERVER_METRICS,
        ServerMetrics::parse,
    );
    // The flag or profile field, else $LLMLOAD_IO, else the default: the
    // environment lets a whole test suite run under one backend.
    let io = match p.io.as_deref() {
        Some(t) => choice(&mut errs, "io", Some(t), defaults::IO),
        None => {
            let env = std::env::var("LLMLOAD_IO").ok().filter(|v| !v.is_empty());
            choice(&mut errs, "io ($LLMLOAD_IO)", env.as_deref(), defaults::IO)
        }
    };
    let events = choice(&mut errs, "events", p.events.as_deref(), defaults::EVENTS);
    let source_addrs = parsed(
        &mut errs,
        "source_addrs",
        p.source_addrs.as_deref(),
        Vec::new(),
        crate::plan::parse_source_addrs,
    );
    let shard_spec = p.shard.as_deref().and_then(|s| {
        crate::shard::ShardSpec::parse(s)
            .map_err(|e| errs.at("shard", e))
            .ok()
    });
    if let Some(n) = p.shards
        && !(1..=crate::shard::MAX_SHARDS).contains(&n)
    {
        errs.at(
            "shards",
            format!("{n}: expected 1 to {}", crate::shard::MAX_SHARDS),
        );
    }
    if let (Some(crate::shard::ShardSpec::Fixed { index, count }), Some(n)) = (shard_spec, p.shards)
        && n != count
    {
        errs.at(
            "shards",
            format!("{n} disagrees with shard {index}/{count}"),
        );
    }
    if p.shards.is_some() && p.shard.is_none() {
        errs.at(
            "shards",
            "without shard it means nothing: give shard auto or I/N",
        );
    }
    let start_at_ns = p.start_at.as_deref().and_then(|s| {
        crate::clock::parse_instant(s)
            .map_err(|e| errs.at("start_at", e))
            .ok()
    });
    if p.server_metrics_interval.is_some_and(|d| d.0.is_zero()) {
        errs.at("server_metrics_interval", "0: expected a positive duration");
    }
    if token_source == TokenPolicy::Tokenizer && p.tokenizer.is_none() {
        errs.at(
            "token_source",
            "tokenizer needs a tokenizer.json (tokenizer, --tokenizer)",
        );
    }
    if let Some(t) = p.temperature
        && !(t.is_finite() && t >= 0.0)
    {
        errs.at("temperature", format!("{t}: expected a number ≥ 0"));
    }
    if let Some(tp) = p.top_p
        && !(tp > 0.0 && tp <= 1.0)
    {
        errs.at("top_p", format!("{tp}: expected a number in (0, 1]"));
    }
    for (i, s) in p.stop.iter().flatten().enumerate() {
        if s.is_empty() {
            errs.at(format!("stop[{i}]"), "empty stop sequence");
        }
    }
    check_headers(&mut errs, "headers", p.headers.as_ref());
    if let Some(k) = &p.api_key
        && k.bytes().any(|b| b == b'\r' || b == b'\n')
    {
        errs.at("api_key", "contains a line break");
    }
    // A key given as `${NAME}` is read here, so the profile (and all a run
    // records of it) keeps the variable's name.
    let given_key = match p.api_key.as_deref() {
        Some(k) => match crate::config::mlperf::env::whole_reference(k) {
            Some(name) => match std::env::var(name) {
                Ok(v) => Some(v),
                Err(_) => {
                    errs.at(
                        "api_key",
                        format!("environment variable ${{{name}}} is not set"),
                    );
                    None
                }
            },
            None => Some(k.to_string()),
        },
        None => None,
    };
    let key_file = match (&p.api_key, &p.api_key_file) {
        (Some(_), Some(_)) => {
            errs.at(
                "api_key_file",
                "api_key and api_key_file are alternatives; give one",
            );
            None
        }
        (None, Some(path)) => read_key_file(path)
            .map_err(|e| errs.at("api_key_file", e))
            .ok(),
        _ => None,
    };
    let correlation = p.correlation.clone().unwrap_or_default();
    if let Some(h) = &correlation.header
        && !h.is_empty()
        && !valid_header_name(h)
    {
        errs.at("correlation.header", "not a valid header name");
    }
    let max_output_text = p.max_output_text.unwrap_or(defaults::MAX_OUTPUT_TEXT).0;
    if !(1..=MAX_OUTPUT_TEXT).contains(&max_output_text) {
        errs.at(
            "max_output_text",
            format!(
                "{}: expected 1 to {}",
                format_bytes(max_output_text),
                format_bytes(MAX_OUTPUT_TEXT)
            ),
        );
    }
    let timeout = longer_than_0(&mut errs, "timeout", p.timeout).unwrap_or(defaults::TIMEOUT);
    let connect = longer_than_0(&mut errs, "connect_timeout", p.connect_timeout)
        .unwrap_or(defaults::CONNECT_TIMEOUT);
    let ttft = longer_than_0(&mut errs, "ttft_timeout", p.ttft_timeout);
    if let Some(t) = ttft
        && t > timeout
    {
        errs.at(
            "ttft_timeout",
            format!(
                "{} is longer than timeout {}: it could never fire",
                format_duration(t),
                format_duration(timeout)
            ),
        );
    }
    let before = errs.len();
    let stages = typed::stages(p, mode.as_ref(), arrival, mlperf, &mut errs);
    let run_length = run_length::rule(
        p,
        mlperf,
        stages.first().filter(|_| p.stages.is_none()),
        &mut errs,
    );
    let warmup_requests = p.warmup_requests.unwrap_or(0);
    if warmup_requests > 0
        && let Some(Load::Open {
            rate_from, rate_to, ..
        }) = stages.first().map(|s| s.load)
        && rate_from != rate_to
    {
        errs.at(
            "warmup_requests",
            "the first stage is a ramp, whose length would depend on when the warm-up ends: use warmup (a time)",
        );
    }
    let max_closed = stages
        .iter()
        .filter_map(|s| match s.load {
            Load::Closed { concurrency } => Some(concurrency),
            _ => None,
        })
        .max();
    if errs.len() == before
        && let (Some(c), Some(n)) = (p.connections, max_closed)
        && c < n
    {
        errs.at(
            "connections",
            format!("{c} is below the concurrency {n}: every in-flight request needs a connection"),
        );
    }
    let max_tokens = p.max_tokens.unwrap_or(if mlperf {
        defaults::MLPERF_MAX_TOKENS
    } else {
        defaults::MAX_TOKENS
    });
    // MLPerf's streaming `auto`: off offline, on online.
    let offline = stages.first().is_some_and(|s| s.load == Load::Offline);
    let stream = p
        .stream
        .unwrap_or(if mlperf { !offline } else { defaults::STREAM });
    // Outside the preset `seed` seeds schedule and order, as it always
    // has; under it MLPerf keeps them apart from the sampling seed.
    let shared_seed = if mlperf {
        defaults::MLPERF_SEED
    } else {
        p.seed.unwrap_or(defaults::SEED)
    };
    let tls = typed::tls_settings(
        &mut errs,
        "",
        TlsFields {
            ca_cert: p.ca_cert.as_ref(),
            insecure: p.insecure,
            server_name: p.tls_server_name.as_deref(),
            client_cert: p.client_cert.as_ref(),
            client_key: p.client_key.as_ref(),
        },
        &TlsSettings::default(),
    );
    let top = Scenario {
        name: "default".to_string(),
        weight: defaults::WEIGHT,
        protocol,
        endpoint,
        more_endpoints: endpoints,
        headers: p.headers.clone().unwrap_or_default().into_iter().collect(),
        tls,
        keep_alive: p.keep_alive.unwrap_or(defaults::KEEP_ALIVE),
        model: p.model.clone(),
        max_tokens,
        stream,
        system: p.system.clone(),
        turns: TurnRange {
            min: defaults::TURNS,
            max: defaults::TURNS,
        },
        think_time_ns: 0,
        cache_mode,
        content: None,
        checks: Checks::default(),
    };
    let stream = top.stream;
    let scenarios = typed::scenarios(p, top, &mut errs);
    let thresholds = thresholds(p, &mut errs);

    let only_closed = stages.iter().all(|s| matches!(s.load, Load::Closed { .. }));
    let connections = match (p.connections, max_closed) {
        (Some(c), _) => c,
        (None, Some(n)) if only_closed => n,
        (None, Some(n)) => n.max(defaults::CONNECTIONS),
        (None, None) => defaults::CONNECTIONS,
    };
    let mut warnings: Vec<String> = stages
        .iter()
        .filter_map(|s| match s.load {
            Load::Closed { concurrency } if concurrency < scenarios.len() => Some(format!(
                "stage '{}' has {concurrency} virtual user(s) for {} scenarios; some scenarios get none",
                s.name,
                scenarios.len()
            )),
            _ => None,
        })
        .collect();
    for w in unused_tls(&scenarios, p.scenarios.is_some()) {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    // Gaps a request keeps: two per token the largest request asks for.
    let most_tokens = p
        .scenarios
        .iter()
        .flatten()
        .filter_map(|s| s.max_tokens)
        .chain([max_tokens])
        .max()
        .unwrap_or(max_tokens);
    // Used only when neither the profile nor a flag gives a key.
    let env_key = std::env::var("OPENAI_API_KEY")
        .ok()
        .filter(|k| !k.is_empty());
    let (phase, mut accuracy) = accuracy_phase(p, dataset.as_ref(), &mut errs, &mut warnings);
    check_events(events, (mlperf, phase), p.record_output, &mut errs);
    let mut dataset = dataset.and_then(|d| {
        with_prompt_template(d, p.prompt_template.as_ref())
            .map_err(|e| errs.at("prompt_template", unflag(e, "--prompt-template")))
            .ok()
    });
    // MLPerf reads its datasets through pandas, which hands a number cell
    // on as a number and sends it as its text; our own runs refuse one as
    // a column mapped by mistake.
    for d in dataset
        .iter_mut()
        .chain(accuracy.iter_mut().map(|a| &mut a.dataset))
    {
        d.columns.number_prompts = mlperf;
    }
    let header = correlation
        .header
        .unwrap_or_else(|| defaults::CORRELATION_HEADER.to_string());
    errs.result(BenchConfig {
        protocol,
        max_tokens,
        stream,
        dataset,
        synthetic,
        order,
        tokenizer: p.tokenizer.clone(),
        token_source,
        mlperf,
        sampling: Sampling {
            temperature: p.temperature,
            top_p: p.top_p,
            seed: p.seed,
            stop: p.stop.clone().unwrap_or_default(),
            ignore_eos: p.ignore_eos.unwrap_or(defaults::IGNORE_EOS),
            min_tokens: p.min_tokens,
        },
        extra_body: p.extra_body.clone(),
        api_key_from_env: p.api_key.is_none() && p.api_key_file.is_none() && env_key.is_some(),
        api_key: given_key.or(key_file).or(env_key).filter(|k| !k.is_empty()),
        stages,
        run_length,
        warmup_ns: nanos(or_default(p.warmup, defaults::WARMUP)),
        warmup_requests,
        connections,
        openloop_max_inflight: p.openloop_max_inflight,
        scenarios,
        thresholds,
        limits: Limits {
            timeout_ns: nanos(timeout),
            ttft_ns: ttft.map(nanos),
            connect_ns: nanos(connect),
            drain_ns: nanos(or_default(p.drain_timeout, defaults::DRAIN_TIMEOUT)),
            max_gaps: (most_tokens as usize).saturating_mul(2).max(MIN_GAPS),
            max_output_text: max_output_text as usize,
        },
        scheduler_seed: p.scheduler_seed.unwrap_or(shared_seed),
        dataloader_seed: p.dataloader_seed.unwrap_or(shared_seed),
        cache_mode,
        early_stopping: p.early_stopping.unwrap_or(defaults::EARLY_STOPPING),
        correlation_header: (!header.is_empty()).then_some(header),
        uuid_in_prompt: correlation
            .uuid_in_prompt
            .unwrap_or(defaults::UUID_IN_PROMPT),
        live_interval_ns: nanos(or_default(p.live_interval, defaults::LIVE_INTERVAL)),
        slo,
        metrics_preset,
        server_metrics,
        server_metrics_interval_ns: nanos(or_default(
            p.server_metrics_interval,
            defaults::SERVER_METRICS_INTERVAL,
        )),
        io,
        uring_sqpoll: p.uring_sqpoll.unwrap_or(defaults::URING_SQPOLL),
        events,
        source_addrs,
        record_output: p.record_output.unwrap_or(defaults::RECORD_OUTPUT),
        workers: p.workers.unwrap_or_else(|| {
            crate::sys::process::available_cpus()
                .saturating_sub(1)
                .max(1)
        }),
        pin: p.pin.unwrap_or(defaults::PIN),
        fail_fast: p.fail_fast.unwrap_or(defaults::FAIL_FAST),
        out: p.out.clone(),
        quiet: p.quiet.unwrap_or(defaults::QUIET),
        verbose: p.verbose.unwrap_or(defaults::VERBOSE),
        phase,
        accuracy,
        warnings,
        shard_spec,
        shards: p.shards,
        shard: None,
        start_at_ns,
        profile,
    })
}

/// `d` with the run's prompt template, unless it builds its prompts
/// otherwise: a template of its own, or a mapped prompt or messages column.
fn with_prompt_template(d: DatasetSpec, template: Option<&String>) -> Result<DatasetSpec, String> {
    let own = d.template.is_some() || d.columns.prompt.is_some() || d.columns.messages.is_some();
    match template {
        Some(t) if !own => d.with_template(Some(t.clone())),
        _ => Ok(d),
    }
}

/// `--events` leaves requests out of events.jsonl; what reads every
/// request's line must not run without it.
fn check_events(
    events: EventsMode,
    (mlperf, phase): (bool, Phase),
    record_output: Option<bool>,
    errs: &mut Errors,
) {
    if events == EventsMode::All {
        return;
    }
    if mlperf || phase.runs_accuracy() {
        errs.at(
            "events",
            format!(
                "{}: MLPerf mode and accuracy phases need every request's line in events.jsonl (sample_idx_map.json and the verdicts join on it): use --events all",
                events.name()
            ),
        );
    } else if events == EventsMode::None && record_output == Some(true) {
        errs.at(
            "events",
            "none: --record-output keeps each response's text in events.jsonl, which --events none does not write (--events errors keeps the failed requests')",
        );
    }
}

/// The phases to run and the accuracy datasets, parsed. Unset, the phase
/// is `both` when there is an accuracy dataset (MLPerf runs the ones it is
/// given), else `perf`. An accuracy phase without an accuracy dataset
/// scores the `--dataset` when it maps `expected=`.
fn accuracy_phase(
    p: &Profile,
    dataset: Option<&DatasetSpec>,
    errs: &mut Errors,
    warnings: &mut Vec<String>,
) -> (Phase, Vec<AccuracySpec>) {
    let mut accuracy = Vec::new();
    for (i, arg) in p.accuracy_datasets.iter().flatten().enumerate() {
        match AccuracySpec::parse(arg) {
            Ok(mut spec) => {
                match with_prompt_template(spec.dataset.clone(), p.prompt_template.as_ref()) {
                    Ok(d) => {
                        spec.dataset = d;
                        accuracy.push(spec);
                    }
                    Err(e) => errs.at("prompt_template", unflag(e, "--prompt-template")),
                }
            }
            Err(e) => errs.at(
                format!("accuracy_datasets[{i}]"),
                unflag(e, "--accuracy-dataset"),
            ),
        }
    }
    for (i, a) in accuracy.iter().enumerate() {
        if accuracy[..i].iter().any(|b| b.name == a.name) {
            errs.at(
                format!("accuracy_datasets[{i}]"),
                format!(
                    "'{}' names two accuracy datasets: give one of them name=",
                    a.name
                ),
            );
        }
    }
    let phase = match p.phase.as_deref().map(Phase::parse) {
        Some(Ok(phase)) => phase,
        Some(Err(e)) => {
            errs.at("phase", unflag(e, "--phase"));
            return (Phase::Perf, accuracy);
        }
        None if accuracy.is_empty() => Phase::Perf,
        None => Phase::Both,
    };
    if phase == Phase::Perf && !accuracy.is_empty() {
        warnings.push(format!(
            "phase perf: the {} accuracy dataset(s) given are not run (--phase both runs them)",
            accuracy.len()
        ));
    }
    if phase.runs_accuracy() && accuracy.is_empty() {
        match dataset.filter(|d| d.columns.expected.is_some()) {
            Some(d) => match AccuracySpec::of_dataset(d) {
                Ok(spec) => accuracy.push(spec),
                Err(e) => errs.at("dataset", e),
            },
            None => errs.at(
                "phase",
                format!(
                    "{} needs an accuracy dataset: give --accuracy-dataset PATH (--dataset acc:PATH in MLPerf's syntax), or a --dataset that maps expected=",
                    phase.name()
                ),
            ),
        }
    }
    (phase, accuracy)
}

/// A warning per scenario whose TLS settings go unused because its endpoint
/// is plain http (the built-in endpoint is too); `named` says whether the
/// profile has scenarios to name.
fn unused_tls(scenarios: &[Scenario], named: bool) -> Vec<String> {
    scenarios
        .iter()
        .filter(|s| !s.endpoint.as_ref().is_some_and(|e| e.tls))
        .filter_map(|s| {
            let set = tls_fields_set(&s.tls);
            if set.is_empty() {
                return None;
            }
            let whose = if named {
                format!("scenario '{}': ", s.name)
            } else {
                String::new()
            };
            let endpoint = match &s.endpoint {
                Some(_) => "its endpoint is plain http://",
                None => "the built-in endpoint is plain http",
            };
            Some(format!(
                "{whose}{} set but not used: {endpoint}",
                set.join(", ")
            ))
        })
        .collect()
}

/// Bytes an API key file may have: a key is short, and a path pointing at
/// something else (a log, `/dev/zero`) must not be read whole.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// The key `path` holds, surrounding white space (the editor's trailing
/// newline) dropped. Errors name the file, never its contents.
pub(crate) fn read_key_file(path: &std::path::Path) -> Result<String, String> {
    let shown = path.display();
    let bytes = crate::capped_read::bytes(path, MAX_KEY_FILE).map_err(|e| {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            format!("{shown}: {e}; expected a file holding only the key")
        } else {
            format!("{shown}: {e}")
        }
    })?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("{shown}: not UTF-8 text; expected a file holding only the key"))?;
    let key = text.trim();
    if key.is_empty() {
        return Err(format!(
            "{shown}: empty; expected a file holding only the key"
        ));
    }
    if key.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!(
            "{shown}: more than one line; expected a file holding only the key"
        ));
    }
    Ok(key.to_string())
}

/// What the profile cannot know: whether this machine can run it.
/// `fd_limit` is the descriptor limit each worker will have (the soft limit
/// once raised to the hard one; 0 when it could not be read).
pub(crate) fn check_host(cfg: &BenchConfig, fd_limit: u64) -> Result<(), String> {
    // Reached only by the CPU-derived default: a written count is validated.
    if !(1..=MAX_WORKERS).contains(&cfg.workers) {
        return Err(format!(
            "workers {}: expected 1 to {MAX_WORKERS}",
            cfg.workers
        ));
    }
    if fd_limit > 0 {
        let sockets = fd_limit.saturating_sub(crate::sys::process::WORKER_OWN_FDS);
        let connections = cfg.own_connections();
        if connections.div_ceil(cfg.workers) as u64 > sockets {
            return Err(format!(
                "{connections} connections over {} worker(s) need more than {sockets} sockets per worker process; add --workers{}",
                cfg.workers,
                if cfg.shard.is_some() {
                    " or shards"
                } else {
                    ""
                }
            ));
        }
    }
    // A key from the profile was checked with it; this one is the environment's.
    if let Some(k) = &cfg.api_key
        && k.bytes().any(|b| b == b'\r' || b == b'\n')
    {
        return Err("the API key contains a line break".into());
    }
    Ok(())
}

/// The SLO thresholds; a latency or throughput limit of 0 means "not set",
/// as in the gateway tester's profiles, while an error rate of 0 is a limit.
fn thresholds(p: &Profile, errs: &mut Errors) -> Thresholds {
    let Some(t) = &p.thresholds else {
        return Thresholds::default();
    };
    for (name, v) in [
        ("ttft_p95_ms", t.ttft_p95_ms),
        ("ttft_p99_ms", t.ttft_p99_ms),
        ("tpot_p99_ms", t.tpot_p99_ms),
        ("p95_ms", t.p95_ms),
        ("p99_ms", t.p99_ms),
        ("min_rps", t.min_rps),
    ] {
        if let Some(x) = v
            && !(x.is_finite() && x >= 0.0)
        {
            errs.at(
                format!("thresholds.{name}"),
                format!("{x}: expected a number ≥ 0 (0: not checked)"),
            );
        }
    }
    if let Some(x) = t.error_rate
        && !(0.0..=1.0).contains(&x)
    {
        errs.at(
            "thresholds.error_rate",
            format!("{x}: expected a fraction from 0 to 1 (0.01 is 1%)"),
        );
    }
    let set = |v: Option<f64>| v.filter(|x| *x > 0.0);
    Thresholds {
        ttft_p95_ms: set(t.ttft_p95_ms),
        ttft_p99_ms: set(t.ttft_p99_ms),
        tpot_p99_ms: set(t.tpot_p99_ms),
        p95_ms: set(t.p95_ms),
        p99_ms: set(t.p99_ms),
        error_rate: t.error_rate,
        min_rps: set(t.min_rps),
        abort_on_fail: t.abort_on_fail.unwrap_or(false),
    }
}

/// A timeout as written; it must be longer than 0.
fn longer_than_0(errs: &mut Errors, path: &str, v: Option<HumanDuration>) -> Option<Duration> {
    if v.is_some_and(|d| d.0.is_zero()) {
        errs.at(path, "must be longer than 0");
    }
    v.map(|d| d.0)
}

fn or_default(v: Option<HumanDuration>, default: Duration) -> Duration {
    v.map_or(default, |d| d.0)
}

/// A written value parsed, else `default`; a bad one is reported at `path`
/// (and `default` stands in for it, so the other fields are still checked).
fn parsed<T>(
    errs: &mut Errors,
    path: &str,
    text: Option<&str>,
    default: T,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> T {
    match text.map(parse) {
        None => default,
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            errs.at(path, e);
            default
        }
    }
}

/// A closed set's value as written, else `default` ([`parsed`]).
fn choice<C: Choice>(errs: &mut Errors, path: &str, text: Option<&str>, default: C) -> C {
    parsed(errs, path, text, default, C::parse)
}

fn default_protocol() -> &'static dyn Protocol {
    protocol::find(defaults::API).expect("the default API is registered")
}

#[cfg(test)]
mod tests;
