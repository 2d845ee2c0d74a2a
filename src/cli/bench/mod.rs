//! `llmload bench`: flags (and a `--profile`) merged into one validated
//! configuration, the built-in endpoint started when no endpoint is given,
//! every request serialized, the engine run, the report written and printed,
//! and the outcome mapped to an exit status: 0 ran, 1 could not run or
//! nothing succeeded, 2 a threshold failed, 130 interrupted.

mod build;
mod flags;
mod resolve;

pub use flags::BenchArgs;

use crate::clock::{now_ns, wall_ns};
use crate::config::BenchConfig;
use crate::config::duration::format_duration;
use crate::config::profile::{Profile, StageLoad};
use crate::engine::{Plan, supervisor};
use crate::plan::Limits;
use crate::report::observer::RunObserver;
use crate::report::{self, RunInfo};
use crate::server;
use crate::tokens::Tokenizer;

/// Runs a benchmark; returns the exit status.
pub fn run(args: BenchArgs) -> i32 {
    let started_ns = now_ns();
    let started_wall = wall_ns();
    let cfg = match configure(&args, started_wall) {
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

/// The profile (if any) with the flags over it, validated and resolved.
pub fn configure(args: &BenchArgs, started_wall: u64) -> Result<BenchConfig, String> {
    let flags = args.to_profile()?;
    let (mut profile, origin) = match &args.profile {
        Some(path) => (Profile::load(path)?, path.display().to_string()),
        None => (Profile::default(), String::new()),
    };
    profile.overlay(&flags);
    let errors = profile.validate();
    if !errors.is_empty() {
        let lines: Vec<String> = errors
            .iter()
            .map(|e| {
                if origin.is_empty() {
                    flag_error(e)
                } else {
                    format!("{origin}: {e}")
                }
            })
            .collect();
        return Err(lines.join("\n"));
    }
    resolve::resolve(profile, started_wall)
}

/// Profile paths read as flags when no profile file was given
/// (`rate: …` → `--rate: …`).
fn flag_error(e: &str) -> String {
    match e.split_once(':') {
        Some((path, rest)) if !path.contains(' ') && !path.contains('[') => {
            format!("--{}:{rest}", path.replace('_', "-"))
        }
        _ => e.to_string(),
    }
}

fn execute(cfg: &BenchConfig, started_ns: u64, started_wall: u64) -> Result<i32, String> {
    let tokenizer = cfg.tokenizer.as_deref().map(Tokenizer::load).transpose()?;
    let server = if build::needs_builtin(cfg) {
        Some(
            server::spawn(&build::builtin_server())
                .map_err(|e| format!("starting the built-in endpoint: {e}"))?,
        )
    } else {
        None
    };
    let built = build::build(cfg, server.as_ref(), tokenizer.as_ref())?;
    let fd_limit = crate::sys::process::raise_fd_limit();
    supervisor::install_signal_handlers().map_err(|e| format!("signal handlers: {e}"))?;
    let max_tokens = cfg
        .scenarios
        .iter()
        .filter_map(|s| s.spec.max_tokens)
        .chain([cfg.max_tokens])
        .max()
        .unwrap_or(cfg.max_tokens);
    let plan = Plan {
        endpoints: built.endpoints,
        scenarios: built.scenarios,
        stages: build::stages(cfg),
        warmup_ns: cfg.warmup.as_nanos() as u64,
        workers: cfg.workers,
        pin: cfg.pin,
        connections: cfg.connections,
        openloop_max_inflight: cfg.openloop_max_inflight,
        limits: Limits {
            timeout_ns: cfg.timeout.as_nanos() as u64,
            ttft_ns: cfg.ttft_timeout.map(|d| d.as_nanos() as u64),
            connect_ns: cfg.connect_timeout.as_nanos() as u64,
            drain_ns: cfg.drain_timeout.as_nanos() as u64,
            max_gaps: (max_tokens as usize * 2).clamp(1024, crate::engine::shared::MAX_GAPS),
        },
        seed: cfg.seed,
        keep_text: tokenizer.is_some() || cfg.record_output,
        tokenizer: tokenizer.as_ref(),
        thresholds: cfg.thresholds.clone(),
        live_interval_ns: cfg.live_interval.as_nanos() as u64,
    };
    eprintln!(
        "llmload: {} against {} (Ctrl-C stops and reports)",
        describe(cfg),
        built.url
    );
    std::fs::create_dir_all(&cfg.out).map_err(|e| format!("--out {}: {e}", cfg.out.display()))?;
    // Forked before the events sink's thread starts: each worker is a copy
    // of a single-threaded process.
    let workers = supervisor::spawn(&plan)?;
    let mut observer = RunObserver::start(
        &cfg.out,
        &plan
            .scenarios
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>(),
        &plan
            .stages
            .iter()
            .map(|s| s.name.clone())
            .collect::<Vec<_>>(),
        cfg.record_output,
        started_wall,
        started_ns,
    )?;
    let mut result = workers.run(&plan, started_ns, Some(&mut observer));
    let events = observer.finish();
    let server_stats = server.map(|h| h.stop());
    result.started_wall_ns = started_wall;
    let dataset = match built.datasets.as_slice() {
        [one] => one.clone(),
        many => serde_json::json!({
            "source": many.first().and_then(|d| d["source"].as_str()).unwrap_or("builtin"),
            "samples": many.iter().filter_map(|d| d["samples"].as_u64()).sum::<u64>(),
            "skipped": many.iter().filter_map(|d| d["skipped"].as_u64()).sum::<u64>(),
            "scenarios": many,
        }),
    };
    let info = RunInfo {
        config: cfg.to_json(&built.url, &built.model, server_stats.is_some()),
        target: format!(
            "{} ({}, model {})",
            built.url,
            cfg.protocol.name(),
            built.model
        ),
        started_wall_ns: started_wall,
        fd_limit,
        builtin_endpoint: server_stats.map(|s| serde_json::to_value(s).expect("stats serialize")),
        dataset,
        events,
        notes: notes(cfg),
    };
    let text = report::write_all(&cfg.out, &result, &info)?;
    if !cfg.quiet {
        print!("{text}");
    }
    println!("results: {}", cfg.out.display());
    Ok(if result.interrupted {
        130
    } else if !result.thresholds_passed {
        eprintln!("llmload bench: a threshold failed");
        2
    } else if result.total.completed == 0 && result.total.issued > 0 {
        eprintln!("llmload bench: no request succeeded");
        1
    } else {
        0
    })
}

/// What the report must say for its numbers to be read right.
fn notes(cfg: &BenchConfig) -> Vec<String> {
    let mut out = Vec::new();
    let open = cfg
        .stages
        .iter()
        .any(|s| matches!(s.load, StageLoad::Open { .. } | StageLoad::Ramp { .. }));
    let multi: Vec<&str> = cfg
        .scenarios
        .iter()
        .filter(|s| s.turns.max > 1)
        .map(|s| s.name.as_str())
        .collect();
    if open && !multi.is_empty() {
        out.push(format!(
            "open-loop rates count conversation starts; the turns of {} follow their conversation, so requests/s exceed the rate",
            multi.join(", ")
        ));
    }
    if !multi.is_empty() {
        out.push(
            "latency of a later turn is counted from when it was due: its conversation's previous reply plus the think time".to_string(),
        );
    }
    out
}

/// One line saying what the run will do.
fn describe(cfg: &BenchConfig) -> String {
    let stages: Vec<String> = cfg
        .stages
        .iter()
        .map(|s| {
            let load = match s.load {
                StageLoad::Offline => "offline".to_string(),
                StageLoad::Closed { concurrency } => format!("concurrency {concurrency}"),
                StageLoad::Open { rate } => format!("{} {rate} req/s", cfg.arrival.name()),
                StageLoad::Ramp { from, to } => {
                    format!("{} {from}→{to} req/s", cfg.arrival.name())
                }
            };
            let length = match (s.duration, s.requests) {
                (Some(d), Some(r)) => format!("{} or {r} requests", format_duration(d)),
                (Some(d), None) => format_duration(d),
                (None, Some(r)) => format!("{r} requests"),
                (None, None) => "ever".to_string(),
            };
            format!("{load} for {length}")
        })
        .collect();
    format!(
        "{}{}, {}",
        stages.join(", then "),
        if cfg.scenarios.len() > 1 {
            format!(" over {} scenarios", cfg.scenarios.len())
        } else {
            String::new()
        },
        if cfg.stream {
            "streaming"
        } else {
            "non-streaming"
        }
    )
}
