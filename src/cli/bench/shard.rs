//! What bench does for a shard and a common start beyond running the
//! plan: refusing a start instant that must be a typo, and saying in the
//! summary (`shard`) and the notes how the run's time zero related to the
//! instant asked for, with the kernel's estimate of the clock's error.

use crate::cli::errln;
use crate::clock::format_rfc3339;
use crate::config::BenchConfig;
use crate::dataset::Order;
use crate::engine::Plan;
use crate::metrics::run::{Incomplete, RunResult};
use crate::plan::StagePlan;
use crate::report::summary::shard::ShardSummary;

/// The furthest ahead `--start-at` may be: further is taken for a typo
/// (a wrong day or year) rather than waited out.
const MAX_AHEAD_NS: u64 = 24 * 3600 * 1_000_000_000;

/// A start this much after the instant is called late in the notes and on
/// stderr (below it is the wake-up's ordinary jitter).
const LATE_NS: i64 = 10_000_000;

/// What of the run this process generates: everything the plan counts,
/// split for a shard (as given for a run that is not one).
pub(super) struct Part {
    pub connections: usize,
    pub openloop_max_inflight: Option<u64>,
    pub warmup_requests: u64,
    pub scheduler_seed: u64,
    pub dataloader_seed: u64,
    pub uniform_phase: f64,
    pub partition: Option<(u32, u32)>,
}

/// This process's part of the run: `stages` (sized for the whole run)
/// split in place, and the run-wide counts and seeds. `samples` is each
/// scenario's sample count and whether those are dataset rows or
/// conversations, which every shard must have one of.
pub(super) fn part(
    cfg: &BenchConfig,
    stages: &mut [StagePlan],
    samples: &[(String, usize, bool)],
) -> Result<Part, String> {
    let Some(shard) = cfg.shard.as_ref().filter(|s| s.count > 1) else {
        return Ok(Part {
            connections: cfg.connections,
            openloop_max_inflight: cfg.openloop_max_inflight,
            warmup_requests: cfg.warmup_requests,
            scheduler_seed: cfg.scheduler_seed,
            dataloader_seed: cfg.dataloader_seed,
            uniform_phase: 0.0,
            partition: None,
        });
    };
    shard.split_stages(stages)?;
    for (name, n, rows) in samples {
        if *rows && *n < shard.count as usize && !matches!(cfg.order, Order::Single(_)) {
            return Err(format!(
                "scenario '{name}': {n} dataset row(s) or conversation(s) for {} shards: each shard takes rows r with r % {} == its index − 1, so some would have none (--shard)",
                shard.count, shard.count
            ));
        }
    }
    Ok(Part {
        connections: cfg.own_connections(),
        openloop_max_inflight: cfg.openloop_max_inflight.map(|m| shard.share_at_least_1(m)),
        warmup_requests: shard.share(cfg.warmup_requests),
        scheduler_seed: shard.seed(cfg.scheduler_seed),
        dataloader_seed: shard.seed(cfg.dataloader_seed),
        uniform_phase: shard.uniform_phase(),
        partition: Some((shard.index - 1, shard.count)),
    })
}

/// Refuses a `--start-at` more than a day after `now_wall` (Unix ns).
pub(super) fn check_start(cfg: &BenchConfig, now_wall: u64) -> Result<(), String> {
    match cfg.start_at_ns {
        Some(at) if at > now_wall.saturating_add(MAX_AHEAD_NS) => Err(format!(
            "--start-at {}: {:.1} h from now; at most 24 h ahead (a typo in the date?)",
            format_rfc3339(at),
            (at - now_wall) as f64 / 3.6e12
        )),
        _ => Ok(()),
    }
}

/// How late the run's time zero was after `--start-at` (negative: early);
/// `None` without one, or for a run interrupted before it (which never
/// began).
fn late_ns(cfg: &BenchConfig, result: &RunResult) -> Option<i64> {
    let at = cfg.start_at_ns?;
    if result
        .incomplete_reasons
        .contains(&Incomplete::InterruptedBeforeStart)
    {
        return None;
    }
    Some(result.started_wall_ns as i64 - at as i64)
}

/// The note a start at an instant gets: one saying the instant for a run
/// that is not a shard (a shard's summary has it in `shard`), and one for
/// a late start, which is also said on stderr.
pub(super) fn start_note(cfg: &BenchConfig, result: &RunResult) -> Vec<String> {
    let (Some(at), Some(late)) = (cfg.start_at_ns, late_ns(cfg, result)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if late > LATE_NS {
        let text = format!(
            "started {:.3} s after --start-at {}: late (the instant had passed when the workers were ready, or the host was too busy to start on time)",
            late as f64 / 1e9,
            format_rfc3339(at)
        );
        errln!("llmload bench: warning: {text}");
        out.push(text);
    } else if cfg.shard.is_none() {
        out.push(format!(
            "started at --start-at {} ({:.2} ms after it)",
            format_rfc3339(at),
            late as f64 / 1e6
        ));
    }
    out
}

/// The summary's `shard` block; `None` for a run that is not a shard.
/// `config` is the summary's `config` block, which the run id hashes.
pub(super) fn summary(
    cfg: &BenchConfig,
    plan: &Plan<'_>,
    result: &RunResult,
    config: &serde_json::Value,
) -> Option<ShardSummary> {
    let shard = cfg.shard.as_ref()?;
    let clock = crate::sys::clock_sync::read();
    Some(ShardSummary {
        index: shard.index,
        count: shard.count,
        source: shard.source.clone(),
        run_id: crate::shard::run_id(config, cfg.start_at_ns),
        start_at: cfg.start_at_ns.map(format_rfc3339),
        start_at_unix_ns: cfg.start_at_ns,
        started_unix_ns: result.started_wall_ns,
        start_late_ns: late_ns(cfg, result),
        clock_error_ns: clock.error_ns,
        clock_synced: clock.synced,
        scheduler_seed: plan.scheduler_seed,
        dataloader_seed: plan.dataloader_seed,
    })
}
