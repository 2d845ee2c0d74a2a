//! `llmload merge`: a run's shards (`--shard I/N`) made one run again. Each
//! shard's summary.json carries its `RunResult` in `state`; the merge finds
//! the shards (`find`), rebuilds their runs, puts them on one clock and adds
//! them up (`run`, `timeline`), and renders the result exactly as a single
//! run renders (`report::render`), with `merged` saying how it was made.
//! Counts, sums and histograms are exact; what describes the run rather
//! than measures it (configuration, target, host, dataset, notes) is the
//! lowest-index shard's.

mod find;
mod mlperf;
mod run;
#[cfg(test)]
mod tests;
mod timeline;

use std::path::{Path, PathBuf};

use crate::metrics::run::{Incomplete, RunResult};
use crate::plan::MetricsPreset;
use crate::report::RunInfo;
use crate::report::events::EventsStats;
use crate::report::summary::shard::{MergedSource, MergedSummary};
use crate::report::summary::{INSECURE_LINE, Summary};
use find::Found;
use run::Part;

/// The merged run and what the report says about it.
pub(crate) struct Merged {
    pub run: RunResult,
    pub info: RunInfo,
    /// Each merged shard's directory, by index (for its events.jsonl).
    pub dirs: Vec<PathBuf>,
}

/// Finds the shards under `dirs` (passing over `out`) and merges them;
/// an error says why the input is not one run's shards.
pub(crate) fn load(dirs: &[PathBuf], out: Option<&Path>) -> Result<Merged, String> {
    let found = find::find(dirs, out)?;
    let mut merged = merge(&found);
    let dirs: Vec<&Path> = merged.dirs.iter().map(PathBuf::as_path).collect();
    merged.info.mlperf = mlperf::info(&dirs, &merged.run)?;
    Ok(merged)
}

/// Whole seconds between `start` and `earliest` (wall ns), rounded.
fn shift_s(start: u64, earliest: u64, interval_ns: u64) -> u32 {
    let d = start.saturating_sub(earliest);
    let i = interval_ns.max(1);
    ((d + i / 2) / i) as u32
}

fn merge(found: &Found) -> Merged {
    let earliest = found
        .shards
        .iter()
        .min_by_key(|s| s.run.started_wall_ns)
        .expect("find returns at least one shard");
    let base = run::mono_to_wall(&earliest.run);
    let parts: Vec<Part<'_>> = found
        .shards
        .iter()
        .map(|s| Part {
            run: &s.run,
            delta_ns: run::mono_to_wall(&s.run) - base,
            shift: shift_s(
                s.run.started_wall_ns,
                earliest.run.started_wall_ns,
                s.run.timeline.interval_ns,
            ),
        })
        .collect();
    let count = found.count;
    let mut reasons: Vec<Incomplete> = found
        .missing
        .iter()
        .map(|&index| Incomplete::ShardMissing { index, count })
        .collect();
    reasons.extend(
        found
            .shards
            .iter()
            .filter(|s| !s.summary.complete)
            .map(|s| Incomplete::ShardPartial {
                index: s.shard.index,
                count,
                reasons: s.summary.incomplete_reasons.clone(),
            }),
    );
    reasons.sort_by_key(|r| match r {
        Incomplete::ShardMissing { index, .. } | Incomplete::ShardPartial { index, .. } => *index,
        _ => 0,
    });
    let mut merged_run = run::merge(&parts, reasons);
    merged_run.started_wall_ns = earliest.run.started_wall_ns;
    let info = info(found, &merged_run);
    Merged {
        run: merged_run,
        info,
        dirs: found.shards.iter().map(|s| s.dir.clone()).collect(),
    }
}

/// How the merged run was put together.
fn merged_summary(found: &Found) -> MergedSummary {
    let shards = &found.shards;
    let starts = shards.iter().map(|s| s.shard.started_unix_ns);
    let first_at = &shards[0].shard.start_at;
    let aligned = first_at.is_some() && shards.iter().all(|s| s.shard.start_at == *first_at);
    MergedSummary {
        run_id: found.run_id.clone(),
        shards: found.count,
        merged: shards.iter().map(|s| s.shard.index).collect(),
        missing: found.missing.clone(),
        incomplete: shards
            .iter()
            .filter(|s| !s.summary.complete)
            .map(|s| s.shard.index)
            .collect(),
        aligned,
        start_at: if aligned { first_at.clone() } else { None },
        start_skew_ns: starts.clone().max().unwrap_or(0) - starts.min().unwrap_or(0),
        max_clock_error_ns: shards.iter().filter_map(|s| s.shard.clock_error_ns).max(),
        sources: shards
            .iter()
            .map(|s| MergedSource {
                index: s.shard.index,
                dir: s.dir.display().to_string(),
                started_unix_ns: s.shard.started_unix_ns,
                complete: s.summary.complete,
            })
            .collect(),
    }
}

/// The report's account of the run: the lowest-index shard's description,
/// the shards' events counted together.
fn info(found: &Found, run: &RunResult) -> RunInfo {
    let s: &Summary = &found.shards[0].summary;
    let events = found.shards.iter().fold(
        EventsStats {
            written: 0,
            ..s.events.clone()
        },
        |mut e, sh| {
            e.written += sh.summary.events.written;
            e.dropped += sh.summary.events.dropped;
            if e.error.is_none() {
                e.error = sh.summary.events.error.clone();
            }
            e
        },
    );
    RunInfo {
        config: s.config.clone(),
        target: s.target.clone(),
        started_wall_ns: run.started_wall_ns,
        fd_limit: s.generator.fd_limit,
        host: s.info.clone().unwrap_or_default(),
        builtin_endpoint: s.builtin_endpoint.clone(),
        dataset: s.dataset.clone(),
        events,
        // `Summary::build` adds these itself.
        notes: s
            .notes
            .iter()
            .filter(|n| *n != INSECURE_LINE && !n.contains("took no measured request"))
            .cloned()
            .collect(),
        tls: s.tls.clone(),
        mlperf: None,
        accuracy: None,
        server_metrics: s.server_metrics.clone(),
        metrics_preset: s
            .definitions
            .as_ref()
            .and_then(|d| MetricsPreset::parse(&d.preset).ok())
            .unwrap_or_default(),
        io: s.generator.io.clone(),
        shard: None,
        merged: Some(merged_summary(found)),
    }
}

/// Writes the shards' events.jsonl one after the other into `out`'s, when
/// any shard has one; the path written, or why it could not be.
pub(crate) fn concat_events(dirs: &[PathBuf], out: &Path) -> Result<Option<PathBuf>, String> {
    let logs: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join("events.jsonl"))
        .filter(|p| p.is_file())
        .collect();
    if logs.is_empty() {
        return Ok(None);
    }
    let path = out.join("events.jsonl");
    let tmp = out.join(".events.jsonl.tmp");
    let mut file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    for log in &logs {
        let mut from = std::fs::File::open(log).map_err(|e| format!("{}: {e}", log.display()))?;
        std::io::copy(&mut from, &mut file).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    file.sync_all()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(path))
}
