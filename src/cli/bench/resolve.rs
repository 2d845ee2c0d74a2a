//! A merged profile resolved into a `BenchConfig`: defaults applied, values
//! parsed, and the checks that need more than the profile (the machine's
//! CPU count, the environment's API key, socket limits per worker).

use std::path::PathBuf;
use std::time::Duration;

use crate::config::BenchConfig;
use crate::config::profile::{Profile, StageLoad, defaults};
use crate::dataset::{DatasetSpec, Order, SyntheticSpec};
use crate::plan::Thresholds;
use crate::protocol::{self, Sampling};

/// Sockets one worker process may hold (the machine caps descriptors at
/// 20,000 per process; a few are the worker's own).
const SOCKETS_PER_WORKER: usize = 19_000;

/// Resolves `p`, which has passed `Profile::validate`.
pub fn resolve(p: Profile, started_wall: u64) -> Result<BenchConfig, String> {
    let protocol = protocol::find(p.api.as_deref().unwrap_or(defaults::API))?;
    let stages = p.stages().map_err(|e| e.join("\n"))?;
    let scenarios = p.scenarios().map_err(|e| e.join("\n"))?;
    let arrival = p.arrival()?;
    let max_closed = stages
        .iter()
        .filter_map(|s| match s.load {
            StageLoad::Closed { concurrency } => Some(concurrency),
            _ => None,
        })
        .max();
    let only_closed = stages
        .iter()
        .all(|s| matches!(s.load, StageLoad::Closed { .. }));
    let connections = match (p.connections, max_closed) {
        (Some(c), Some(n)) if c < n && only_closed => {
            return Err(format!(
                "connections {c} is below concurrency {n}: every in-flight request needs a connection"
            ));
        }
        (Some(c), _) => c,
        (None, Some(n)) if only_closed => n,
        (None, Some(n)) => n.max(defaults::CONNECTIONS),
        (None, None) => defaults::CONNECTIONS,
    };
    for s in &stages {
        if let StageLoad::Closed { concurrency } = s.load
            && concurrency < scenarios.len()
        {
            eprintln!(
                "llmload bench: warning: stage '{}' has {concurrency} virtual user(s) for {} scenarios; some scenarios get none",
                s.name,
                scenarios.len()
            );
        }
    }
    if connections == 0 {
        return Err("connections must be at least 1".into());
    }
    let workers = p.workers.unwrap_or_else(|| {
        crate::sys::process::available_cpus()
            .saturating_sub(1)
            .max(1)
    });
    if workers == 0 || workers > 64 {
        return Err(format!("workers {workers}: expected 1 to 64"));
    }
    if connections.div_ceil(workers) > SOCKETS_PER_WORKER {
        return Err(format!(
            "{connections} connections over {workers} worker(s) need more than {SOCKETS_PER_WORKER} sockets per worker process; add --workers"
        ));
    }
    let dataset = p.dataset.as_deref().map(DatasetSpec::parse).transpose()?;
    let synthetic = p
        .synthetic
        .as_deref()
        .map(SyntheticSpec::parse)
        .transpose()?;
    let order = Order::parse(p.order.as_deref().unwrap_or(defaults::ORDER))?;
    let api_key = p
        .api_key
        .clone()
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
        .filter(|k| !k.is_empty());
    if let Some(k) = &api_key
        && k.bytes().any(|b| b == b'\r' || b == b'\n')
    {
        return Err("the API key contains a line break".into());
    }
    let correlation = p.correlation.clone().unwrap_or_default();
    let header = correlation
        .header
        .unwrap_or_else(|| defaults::CORRELATION_HEADER.to_string());
    let t = p.thresholds.clone().unwrap_or_default();
    // A latency or throughput limit of 0 means "not set", as in the gateway
    // tester's profiles; error_rate 0 is a real limit.
    let set = |v: Option<f64>| v.filter(|x| *x > 0.0);
    let secs = |v: Option<crate::config::profile::HumanDuration>, d: Duration| v.map_or(d, |h| h.0);
    Ok(BenchConfig {
        endpoint: p.endpoint.clone(),
        protocol,
        model: p.model.clone(),
        max_tokens: p.max_tokens.unwrap_or(defaults::MAX_TOKENS),
        stream: p.stream.unwrap_or(defaults::STREAM),
        system: p.system.clone(),
        dataset,
        synthetic,
        order,
        tokenizer: p.tokenizer.clone(),
        sampling: Sampling {
            temperature: p.temperature,
            top_p: p.top_p,
            seed: p.seed,
            stop: p.stop.clone().unwrap_or_default(),
            ignore_eos: p.ignore_eos.unwrap_or(false),
            min_tokens: p.min_tokens,
        },
        extra_body: p.extra_body.clone(),
        headers: p.headers.clone().unwrap_or_default().into_iter().collect(),
        api_key,
        stages,
        arrival,
        warmup: secs(p.warmup, defaults::WARMUP),
        connections,
        openloop_max_inflight: p.openloop_max_inflight,
        scenarios,
        thresholds: Thresholds {
            ttft_p95_ms: set(t.ttft_p95_ms),
            p95_ms: set(t.p95_ms),
            p99_ms: set(t.p99_ms),
            error_rate: t.error_rate,
            min_rps: set(t.min_rps),
            abort_on_fail: t.abort_on_fail.unwrap_or(false),
        },
        timeout: secs(p.timeout, defaults::TIMEOUT),
        ttft_timeout: p.ttft_timeout.map(|h| h.0),
        connect_timeout: secs(p.connect_timeout, defaults::CONNECT_TIMEOUT),
        drain_timeout: secs(p.drain_timeout, defaults::DRAIN_TIMEOUT),
        seed: p.seed.unwrap_or(defaults::SEED),
        correlation_header: (!header.is_empty()).then_some(header),
        uuid_in_prompt: correlation
            .uuid_in_prompt
            .unwrap_or(defaults::UUID_IN_PROMPT),
        live_interval: secs(p.live_interval, defaults::LIVE_INTERVAL),
        record_output: p.record_output.unwrap_or(false),
        workers,
        pin: p.pin.unwrap_or(false),
        out: p
            .out
            .clone()
            .unwrap_or_else(|| default_out_dir(started_wall)),
        quiet: p.quiet.unwrap_or(false),
        profile: p,
    })
}

/// `results/<UTC timestamp>`, made unique with a suffix when needed.
fn default_out_dir(wall: u64) -> PathBuf {
    let stamp: String = crate::clock::format_utc(wall)
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let mut dir = PathBuf::from("results").join(&stamp);
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from("results").join(format!("{stamp}-{n}"));
        n += 1;
    }
    dir
}
