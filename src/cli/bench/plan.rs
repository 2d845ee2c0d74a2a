//! The engine's `Plan` for a resolved run, built in one place for every
//! bench run there is: the performance phase, each accuracy dataset's phase
//! (whose configuration forces one worker, one connection and kept text)
//! and each phase of an audit. What a phase must differ in lives in its
//! `BenchConfig`, so no phase can lose a setting the others honour.

use std::io::IsTerminal;

use super::build::Built;
use super::shard::Part;
use crate::config::BenchConfig;
use crate::engine::io::IoPlan;
use crate::engine::{Plan, PythonDraws};
use crate::plan::IoChosen;
use crate::plan::{Limits, StagePlan, TokenPolicy};
use crate::report::live::LiveView;
use crate::shm::run::MAX_GAPS;
use crate::tokens::Tokenizer;

/// A plan and what goes beside it: the live view the parent feeds, and the
/// I/O backend chosen (and why) for the report.
pub(super) struct Planned<'a> {
    pub plan: Plan<'a>,
    pub live: LiveView,
    pub io: IoChosen,
}

/// The plan of `cfg` over `built`'s endpoints and scenarios (taken from
/// it), running `stages`, this process's `part` of the run, with
/// `tokenizer` when there is one.
pub(super) fn plan<'a>(
    cfg: &BenchConfig,
    built: &mut Built<'a>,
    stages: Vec<StagePlan>,
    part: Part,
    tokenizer: Option<&'a Tokenizer>,
) -> Result<Planned<'a>, String> {
    let token_source = effective_token_source(cfg, tokenizer.is_some());
    let (live, live_interval_ns) = live_view(cfg);
    let (io_plan, io) = io_plan(cfg)?;
    let plan = Plan {
        endpoints: std::mem::take(&mut built.endpoints),
        scenarios: std::mem::take(&mut built.scenarios),
        stages,
        warmup_ns: cfg.warmup_ns,
        warmup_requests: part.warmup_requests,
        workers: cfg.workers,
        pin: cfg.pin,
        connections: part.connections,
        openloop_max_inflight: part.openloop_max_inflight,
        // A completion record carries at most the engine's MAX_GAPS gaps.
        limits: Limits {
            max_gaps: cfg.limits.max_gaps.min(MAX_GAPS),
            ..cfg.limits
        },
        scheduler_seed: part.scheduler_seed,
        dataloader_seed: part.dataloader_seed,
        // MLPerf's rules draw as MLPerf does, so its rows and arrival times
        // repeat for the same seeds.
        python_draws: cfg.mlperf.then_some(PythonDraws {
            warmup_seed: cfg.mlperf_warmup_seed(),
        }),
        // The tokenizer counts output only when usage may be set aside.
        keep_text: (tokenizer.is_some() && token_source != TokenPolicy::Usage) || cfg.record_output,
        tokenizer,
        token_source,
        thresholds: cfg.thresholds.clone(),
        live_interval_ns,
        fail_fast: cfg
            .fail_fast
            .then_some(crate::config::profile::defaults::FAIL_FAST_FIRST),
        slo: cfg.slo,
        io: io_plan,
        start_at_unix_ns: cfg.start_at_ns,
        uniform_phase: part.uniform_phase,
        partition: part.partition,
        secrets: built.secrets.clone(),
    };
    Ok(Planned { plan, live, io })
}

/// The I/O backend `--io` resolves to on this kernel, and why.
fn io_plan(cfg: &BenchConfig) -> Result<(IoPlan, IoChosen), String> {
    let chosen = crate::engine::io::choose(cfg.io, cfg.uring_sqpoll)?;
    // An address the host does not have would fail every connect as if the
    // ports had run out.
    for &a in &cfg.source_addrs {
        if let Err(e) = crate::sys::socket::check_source(a) {
            return Err(format!(
                "--source-addrs {a}: cannot bind to it ({e}); give addresses of this host"
            ));
        }
    }
    let plan = IoPlan {
        backend: chosen.backend,
        sqpoll: chosen.sqpoll,
        source_addrs: cfg.source_addrs.clone(),
    };
    Ok((plan, chosen))
}

/// The live view and how often the parent hands it an interval: a block
/// redrawn in place when stderr is a terminal, plain lines otherwise,
/// nothing under `--quiet`.
fn live_view(cfg: &BenchConfig) -> (LiveView, u64) {
    let terminal = std::io::stderr().is_terminal();
    LiveView::choose(cfg.quiet, cfg.live_interval_ns, terminal)
}

/// MLPerf counts every output with the tokenizer, usage or not: under
/// the preset, a tokenizer (given, or the model's own found in the local
/// cache) counts tokens unless `token_source` was set.
fn effective_token_source(cfg: &BenchConfig, has_tokenizer: bool) -> TokenPolicy {
    if cfg.mlperf && has_tokenizer && cfg.profile.token_source.is_none() {
        TokenPolicy::Tokenizer
    } else {
        cfg.token_source
    }
}
