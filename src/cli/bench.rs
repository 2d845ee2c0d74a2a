//! `llmload bench`: parse flags into a validated `BenchConfig`, start the
//! built-in endpoint when no `--endpoint` is given, serialize every request,
//! run the engine, write and print the report, and map the outcome to an
//! exit status (0 ran, 1 could not run or nothing succeeded, 130 interrupted).

use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use crate::clock::{now_ns, wall_ns};
use crate::config::duration::{duration_flag, format_duration};
use crate::config::endpoint::Endpoint;
use crate::config::{BenchConfig, Mode};
use crate::dataset::{self, DatasetSpec, Order, SyntheticSpec};
use crate::engine::requests::{RequestSet, RequestTemplate};
use crate::engine::{Load, Plan, StagePlan, arrival::ArrivalKind, supervisor};
use crate::protocol;
use crate::protocol::Sampling;
use crate::report::{self, RunInfo};
use crate::server::{self, ServerConfig};
use crate::tokens::Tokenizer;

/// Benchmark an endpoint (with no --endpoint: the built-in one).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "bench")]
pub struct BenchArgs {
    /// endpoint URL, http://host:port[/path] (default path from --api); without
    /// it, a built-in endpoint (ttft 20ms, tpot 2ms) is started and measured
    #[argh(option)]
    pub endpoint: Option<String>,

    /// wire format: openai-chat (default), openai-completions, sglang, anthropic
    #[argh(option, default = "String::from(\"openai-chat\")")]
    pub api: String,

    /// load shape: offline, poisson, uniform or concurrency (default:
    /// poisson when --rate is given, else concurrency)
    #[argh(option)]
    pub mode: Option<String>,

    /// arrivals per second for poisson and uniform modes
    #[argh(option)]
    pub rate: Option<f64>,

    /// requests kept in flight in concurrency mode (default 64)
    #[argh(option)]
    pub concurrency: Option<usize>,

    /// connections across all workers: the in-flight bound in offline and
    /// open-loop modes (default 1024; concurrency mode uses --concurrency)
    #[argh(option)]
    pub connections: Option<usize>,

    /// measured run length, e.g. 30s (default 10s unless --requests is given)
    #[argh(option, from_str_fn(duration_flag))]
    pub duration: Option<Duration>,

    /// measured requests to issue (offline default 1000)
    #[argh(option)]
    pub requests: Option<u64>,

    /// run this long before measuring; excluded from statistics (default 0s)
    #[argh(option, from_str_fn(duration_flag), default = "Duration::ZERO")]
    pub warmup: Duration,

    /// seed for arrival times, sample order and synthetic prompts (default
    /// 0): same seed, same schedule; when given, also sent as the sampling seed
    #[argh(option)]
    pub seed: Option<u64>,

    /// model name (default: the first model the endpoint lists at /v1/models)
    #[argh(option)]
    pub model: Option<String>,

    /// output tokens to request per response (default 128)
    #[argh(option, default = "128")]
    pub max_tokens: u32,

    /// stream responses (the default)
    #[argh(switch)]
    pub stream: bool,

    /// ask for whole, non-streamed responses
    #[argh(switch)]
    pub no_stream: bool,

    /// dataset PATH[,key=value...]: JSONL, JSON array or CSV (by extension or
    /// format=); columns prompt=, system=, messages=, input_tokens=,
    /// max_tokens=, expected=; skip_invalid=true (default: built-in prompts)
    #[argh(option)]
    pub dataset: Option<String>,

    /// synthetic prompts: isl=N,osl=M[,isl_std=S,osl_std=T,dist=fixed|normal|uniform|lognormal,count=K]
    #[argh(option)]
    pub synthetic: Option<String>,

    /// sample order: sequential (default), shuffle (each pass), random
    #[argh(option, default = "String::from(\"sequential\")")]
    pub order: String,

    /// a HuggingFace tokenizer.json (file or directory) for exact token counts
    #[argh(option)]
    pub tokenizer: Option<PathBuf>,

    /// sampling temperature
    #[argh(option)]
    pub temperature: Option<f64>,

    /// nucleus sampling top_p
    #[argh(option)]
    pub top_p: Option<f64>,

    /// stop sequence (repeatable)
    #[argh(option)]
    pub stop: Vec<String>,

    /// ask the server to ignore end-of-sequence, so outputs have the
    /// requested length (vLLM, SGLang, TensorRT-LLM)
    #[argh(switch)]
    pub ignore_eos: bool,

    /// minimum output tokens, where the API has it
    #[argh(option)]
    pub min_tokens: Option<u32>,

    /// JSON object merged into every request body, e.g. '{"top_k": 20}'
    #[argh(option)]
    pub extra_body: Option<String>,

    /// system prompt sent with every request
    #[argh(option)]
    pub system: Option<String>,

    /// extra request header 'Name: value' (repeatable)
    #[argh(option)]
    pub header: Vec<String>,

    /// API key sent as a Bearer token (default: $OPENAI_API_KEY); never
    /// written to any output
    #[argh(option)]
    pub api_key: Option<String>,

    /// per-request timeout from dispatch to the end of the response (default 300s)
    #[argh(
        option,
        from_str_fn(duration_flag),
        default = "Duration::from_secs(300)"
    )]
    pub timeout: Duration,

    /// TCP connect timeout (default 10s)
    #[argh(
        option,
        from_str_fn(duration_flag),
        default = "Duration::from_secs(10)"
    )]
    pub connect_timeout: Duration,

    /// after Ctrl-C or SIGTERM, how long in-flight requests may finish (default 10s)
    #[argh(
        option,
        from_str_fn(duration_flag),
        default = "Duration::from_secs(10)"
    )]
    pub drain_timeout: Duration,

    /// worker processes (default: CPUs − 1, at least 1)
    #[argh(option)]
    pub workers: Option<usize>,

    /// pin the parent and each worker to distinct CPUs
    #[argh(switch)]
    pub pin: bool,

    /// output directory (default results/<UTC timestamp>)
    #[argh(option)]
    pub out: Option<PathBuf>,

    /// do not print the report at the end (it is still written)
    #[argh(switch)]
    pub quiet: bool,
}

/// Runs a benchmark; returns the exit status.
pub fn run(args: BenchArgs) -> i32 {
    let started_ns = now_ns();
    let started_wall = wall_ns();
    let cfg = match resolve(args, started_wall) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("llmload bench: {e}");
            return 1;
        }
    };
    match execute(&cfg, started_ns, started_wall) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("llmload bench: {e}");
            1
        }
    }
}

/// Validates flags into a config. Everything a user can get wrong is caught
/// here, with the flag named.
pub fn resolve(a: BenchArgs, started_wall: u64) -> Result<BenchConfig, String> {
    let protocol = protocol::find(&a.api)?;
    if a.stream && a.no_stream {
        return Err("--stream and --no-stream contradict each other".into());
    }
    let mode_name = match (&a.mode, a.rate) {
        (Some(m), _) => m.clone(),
        (None, Some(_)) => "poisson".to_string(),
        (None, None) => "concurrency".to_string(),
    };
    let rate = |m: &str| -> Result<f64, String> {
        match a.rate {
            Some(r) if r.is_finite() && r > 0.0 => Ok(r),
            Some(r) => Err(format!("--rate {r}: must be a positive number")),
            None => Err(format!("--mode {m} needs --rate R (requests per second)")),
        }
    };
    let mode = match mode_name.as_str() {
        "offline" => Mode::Offline,
        "poisson" => Mode::Poisson {
            rate: rate("poisson")?,
        },
        "uniform" => Mode::Uniform {
            rate: rate("uniform")?,
        },
        "concurrency" => {
            let n = a.concurrency.unwrap_or(64);
            if n == 0 {
                return Err("--concurrency must be at least 1".into());
            }
            Mode::Concurrency { n }
        }
        other => {
            return Err(format!(
                "--mode '{other}': expected offline, poisson, uniform or concurrency"
            ));
        }
    };
    if a.rate.is_some() && matches!(mode, Mode::Offline | Mode::Concurrency { .. }) {
        return Err(format!(
            "--rate applies to poisson and uniform modes, not {mode_name}"
        ));
    }
    if a.concurrency.is_some() && !matches!(mode, Mode::Concurrency { .. }) {
        return Err(format!(
            "--concurrency applies to concurrency mode, not {mode_name}"
        ));
    }
    let connections = match mode {
        Mode::Concurrency { n } => {
            if let Some(c) = a.connections
                && c < n
            {
                return Err(format!(
                    "--connections {c} is below --concurrency {n}: every in-flight request needs a connection"
                ));
            }
            a.connections.unwrap_or(n)
        }
        _ => a.connections.unwrap_or(1024),
    };
    if connections == 0 {
        return Err("--connections must be at least 1".into());
    }
    let workers = a
        .workers
        .unwrap_or_else(|| supervisor::available_cpus().saturating_sub(1).max(1));
    if workers == 0 || workers > 64 {
        return Err(format!("--workers {workers}: expected 1 to 64"));
    }
    if connections.div_ceil(workers) > 19_000 {
        return Err(format!(
            "--connections {connections} over {workers} worker(s) needs more than 19000 sockets per worker process; add --workers"
        ));
    }
    if let Some(d) = a.duration
        && d.is_zero()
    {
        return Err("--duration must be longer than 0".into());
    }
    if a.requests == Some(0) {
        return Err("--requests must be at least 1".into());
    }
    let (duration, requests) = match (a.duration, a.requests, mode) {
        (None, None, Mode::Offline) => (None, Some(1000)),
        (None, None, _) => (Some(Duration::from_secs(10)), None),
        (d, r, _) => (d, r),
    };
    if a.max_tokens == 0 {
        return Err("--max-tokens must be at least 1".into());
    }
    let mut headers = Vec::new();
    for h in &a.header {
        let (k, v) = h
            .split_once(':')
            .ok_or_else(|| format!("--header '{h}': expected 'Name: value'"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || k.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err(format!("--header '{h}': bad header name"));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(format!("--header '{k}': the value contains a line break"));
        }
        headers.push((k.to_string(), v.to_string()));
    }
    let api_key = a
        .api_key
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
        .filter(|k| !k.is_empty());
    if let Some(k) = &api_key
        && k.bytes().any(|b| b == b'\r' || b == b'\n')
    {
        return Err("--api-key contains a line break".into());
    }
    let endpoint = match &a.endpoint {
        Some(url) => Some(Endpoint::parse(url, protocol.default_path())?),
        None => None,
    };
    let out = a.out.unwrap_or_else(|| default_out_dir(started_wall));
    if a.dataset.is_some() && a.synthetic.is_some() {
        return Err("--dataset and --synthetic are alternatives; give one".into());
    }
    let dataset = a.dataset.as_deref().map(DatasetSpec::parse).transpose()?;
    let synthetic = a
        .synthetic
        .as_deref()
        .map(SyntheticSpec::parse)
        .transpose()?;
    let order = Order::parse(&a.order)?;
    if let Some(t) = a.temperature
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(format!("--temperature {t}: expected a number ≥ 0"));
    }
    if let Some(p) = a.top_p
        && !(p > 0.0 && p <= 1.0)
    {
        return Err(format!("--top-p {p}: expected a number in (0, 1]"));
    }
    let extra_body = match &a.extra_body {
        None => None,
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            Ok(_) => return Err(format!("--extra-body '{text}': expected a JSON object")),
            Err(e) => return Err(format!("--extra-body '{text}': not valid JSON: {e}")),
        },
    };
    let sampling = Sampling {
        temperature: a.temperature,
        top_p: a.top_p,
        seed: a.seed,
        stop: a.stop,
        ignore_eos: a.ignore_eos,
        min_tokens: a.min_tokens,
    };
    Ok(BenchConfig {
        endpoint,
        protocol,
        model: a.model,
        max_tokens: a.max_tokens,
        stream: !a.no_stream,
        dataset_arg: a.dataset,
        dataset,
        synthetic_arg: a.synthetic,
        synthetic,
        order,
        tokenizer: a.tokenizer,
        sampling,
        extra_body,
        system: a.system,
        headers,
        api_key,
        timeout: a.timeout,
        connect_timeout: a.connect_timeout,
        drain_timeout: a.drain_timeout,
        mode,
        connections,
        duration,
        requests,
        warmup: a.warmup,
        seed: a.seed.unwrap_or(0),
        workers,
        pin: a.pin,
        out,
        quiet: a.quiet,
    })
}

fn default_out_dir(wall: u64) -> PathBuf {
    let stamp: String = crate::clock::format_utc(wall)
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let base = PathBuf::from("results").join(&stamp);
    let mut dir = base.clone();
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from("results").join(format!("{stamp}-{n}"));
        n += 1;
    }
    dir
}

/// The built-in endpoint's settings when bench starts it.
fn builtin_server() -> ServerConfig {
    // One worker on an ephemeral loopback port, no faults (the default).
    ServerConfig {
        ttft: Duration::from_millis(20),
        tpot: Duration::from_millis(2),
        ..ServerConfig::default()
    }
}

fn execute(cfg: &BenchConfig, started_ns: u64, started_wall: u64) -> Result<i32, String> {
    let tokenizer = cfg.tokenizer.as_deref().map(Tokenizer::load).transpose()?;
    let (server, endpoint) = match &cfg.endpoint {
        Some(e) => (None, e.clone()),
        None => {
            let handle = server::spawn(&builtin_server())
                .map_err(|e| format!("starting the built-in endpoint: {e}"))?;
            let e = Endpoint::local(handle.addr, cfg.protocol.default_path());
            (Some(handle), e)
        }
    };
    let model = match (&cfg.model, &server) {
        (Some(m), _) => m.clone(),
        (None, Some(_)) => "llmload-mock".to_string(),
        (None, None) => match crate::cli::models::first_model(&endpoint, cfg.connect_timeout) {
            Ok(m) => m,
            Err(e) => {
                eprintln!(
                    "llmload bench: could not list models at {} ({e}); sending model 'default' (pass --model)",
                    endpoint.addr
                );
                "default".to_string()
            }
        },
    };
    let mut headers = cfg.headers.clone();
    if let Some(key) = &cfg.api_key {
        headers.extend(cfg.protocol.auth_headers(key));
    }
    let template = RequestTemplate {
        protocol: cfg.protocol,
        endpoint: &endpoint,
        model: &model,
        system: cfg.system.as_deref(),
        max_tokens: Some(cfg.max_tokens),
        stream: cfg.stream,
        headers: &headers,
        sampling: &cfg.sampling,
        extra_body: cfg.extra_body.as_ref(),
    };
    let (requests, dataset_info) = build_requests(cfg, &template, tokenizer.as_ref())?;
    drop(headers);
    let fd_limit = supervisor::raise_fd_limit();
    supervisor::install_signal_handlers().map_err(|e| format!("signal handlers: {e}"))?;
    let load = match cfg.mode {
        Mode::Offline => Load::Offline,
        Mode::Concurrency { n } => Load::Closed { concurrency: n },
        Mode::Poisson { rate } => Load::Open {
            kind: ArrivalKind::Poisson,
            rate_from: rate,
            rate_to: rate,
        },
        Mode::Uniform { rate } => Load::Open {
            kind: ArrivalKind::Uniform,
            rate_from: rate,
            rate_to: rate,
        },
    };
    let plan = Plan {
        addr: endpoint.addr,
        requests: &requests,
        protocol: cfg.protocol,
        stages: vec![StagePlan {
            name: "main".to_string(),
            load,
            duration_ns: cfg.duration.map(|d| d.as_nanos() as u64),
            requests: cfg.requests,
        }],
        warmup_ns: cfg.warmup.as_nanos() as u64,
        workers: cfg.workers,
        pin: cfg.pin,
        connections: cfg.connections,
        timeout_ns: cfg.timeout.as_nanos() as u64,
        connect_timeout_ns: cfg.connect_timeout.as_nanos() as u64,
        drain_timeout_ns: cfg.drain_timeout.as_nanos() as u64,
        max_gaps: (cfg.max_tokens as usize * 2).clamp(1024, crate::engine::shared::MAX_GAPS),
        seed: cfg.seed,
        order: cfg.order,
        keep_text: tokenizer.is_some(),
        tokenizer: tokenizer.as_ref(),
    };
    eprintln!(
        "llmload: {} {} against {} for {} (Ctrl-C stops and reports)",
        mode_label(cfg),
        if cfg.stream {
            "streaming"
        } else {
            "non-streaming"
        },
        endpoint.url,
        match (cfg.duration, cfg.requests) {
            (Some(d), Some(r)) => format!("{} or {r} requests", format_duration(d)),
            (Some(d), None) => format_duration(d),
            (None, Some(r)) => format!("{r} requests"),
            (None, None) => "ever".to_string(),
        }
    );
    let result = supervisor::run(&plan, started_ns);
    let server_stats = server.map(|h| h.stop());
    let mut result = result?;
    result.started_wall_ns = started_wall;
    let info = RunInfo {
        config: cfg.to_json(&endpoint, &model),
        target: format!("{} ({}, model {model})", endpoint.url, cfg.protocol.name()),
        started_wall_ns: started_wall,
        fd_limit,
        builtin_endpoint: server_stats.map(|s| serde_json::to_value(s).expect("stats serialize")),
        dataset: dataset_info,
    };
    let text = report::write_all(&cfg.out, &result, &info)?;
    if !cfg.quiet {
        print!("{text}");
    }
    println!("results: {}", cfg.out.display());
    Ok(if result.interrupted {
        130
    } else if result.total.completed == 0 && result.total.issued > 0 {
        eprintln!("llmload bench: no request succeeded");
        1
    } else {
        0
    })
}

/// Serializes every request of the run from the dataset, the synthetic
/// spec, or the built-in prompts; returns them with a description for the
/// report.
fn build_requests(
    cfg: &BenchConfig,
    template: &RequestTemplate<'_>,
    tokenizer: Option<&Tokenizer>,
) -> Result<(RequestSet, serde_json::Value), String> {
    let mut set = RequestSet::default();
    let mut scratch = Vec::new();
    let info = if let Some(spec) = &cfg.dataset {
        let stats = dataset::load(spec, &mut |s| {
            set.push(&s, template, tokenizer, &mut scratch);
            Ok(())
        })?;
        serde_json::json!({
            "source": "file",
            "path": spec.path.display().to_string(),
            "samples": stats.loaded,
            "skipped": stats.skipped,
            "skip_examples": stats.skip_examples,
        })
    } else if let Some(spec) = &cfg.synthetic {
        for s in dataset::synthetic::generate(spec, cfg.seed, tokenizer) {
            set.push(&s, template, tokenizer, &mut scratch);
        }
        serde_json::json!({
            "source": "synthetic",
            "samples": set.len(),
            "isl": spec.isl,
            "osl": spec.osl,
            "exact_input_lengths": tokenizer.is_some(),
        })
    } else {
        for s in dataset::builtin() {
            set.push(&s, template, tokenizer, &mut scratch);
        }
        serde_json::json!({"source": "builtin", "samples": set.len()})
    };
    Ok((set, info))
}

fn mode_label(cfg: &BenchConfig) -> String {
    match cfg.mode {
        Mode::Offline => format!("offline, {} connections,", cfg.connections),
        Mode::Concurrency { n } => format!("concurrency {n},"),
        Mode::Poisson { rate } => format!("poisson {rate} req/s,"),
        Mode::Uniform { rate } => format!("uniform {rate} req/s,"),
    }
}
