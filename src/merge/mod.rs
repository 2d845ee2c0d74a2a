//! `llmload merge`: a run's shards (`--shard I/N`) made one run again. Each
//! shard's summary.json carries its `RunResult` in `state`; the merge finds
//! the shards (`find`), rebuilds their runs, puts them on one clock and adds
//! them up (`run`, `timeline`), and renders the result exactly as a single
//! run renders (`report::render`), with `merged` saying how it was made.
//! Counts, sums and histograms are exact; what describes the run rather
//! than measures it (configuration, target, host, dataset, notes) is the
//! lowest-index shard's.

mod check;
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
/// an error says why the input is not one run's shards, or names the
/// shard and field that cannot be merged.
pub(crate) fn load(dirs: &[PathBuf], out: Option<&Path>) -> Result<Merged, String> {
    let found = find::find(dirs, out)?;
    let mut merged = merge(&found)?;
    let dirs: Vec<&Path> = merged.dirs.iter().map(PathBuf::as_path).collect();
    merged.info.mlperf = mlperf::info(&dirs, &merged.run)?;
    Ok(merged)
}

/// Reads each shard's run in index order and adds it to the merge, so only
/// one shard's run is decoded at a time. A shard whose counts contradict
/// themselves is left out, and the merged run says so.
fn merge(found: &Found) -> Result<Merged, String> {
    let earliest = found
        .shards
        .iter()
        .map(|s| s.clock)
        .min_by_key(|c| c.started_wall_ns)
        .expect("find returns at least one shard");
    let base = run::mono_to_wall(&earliest);
    let count = found.count;
    let mut reasons: Vec<Incomplete> = found
        .missing
        .iter()
        .map(|&index| Incomplete::ShardMissing { index, count })
        .collect();
    let mut merger = run::Merger::new(
        earliest.started_wall_ns,
        earliest.run_start_ns,
        found.span_s,
    );
    let mut added: Vec<&find::Shard> = Vec::new();
    for s in &found.shards {
        let run = s.run()?;
        let index = s.shard.index;
        if let Err(why) = check::consistent(&run) {
            reasons.push(Incomplete::ShardInconsistent { index, count, why });
            continue;
        }
        merger
            .add(&Part {
                run: &run,
                delta_ns: run::mono_to_wall(&s.clock) - base,
                shift: check::shift_s(s.clock.started_wall_ns, earliest.started_wall_ns),
            })
            .map_err(|e| format!("{}: state: {e}", s.file.display()))?;
        if !s.complete {
            reasons.push(Incomplete::ShardPartial {
                index,
                count,
                reasons: s.incomplete_reasons.clone(),
            });
        }
        added.push(s);
    }
    reasons.sort_by_key(|r| match r {
        Incomplete::ShardMissing { index, .. }
        | Incomplete::ShardPartial { index, .. }
        | Incomplete::ShardInconsistent { index, .. } => *index,
        _ => 0,
    });
    let merged_run = merger.finish(reasons);
    let info = info(found, &added, &merged_run);
    Ok(Merged {
        run: merged_run,
        info,
        dirs: added.iter().map(|s| s.dir.clone()).collect(),
    })
}

/// How the merged run was put together: `added` the shards merged, the
/// rest of `found` left out as inconsistent.
fn merged_summary(found: &Found, added: &[&find::Shard]) -> MergedSummary {
    let shards = &found.shards;
    let starts = shards.iter().map(|s| s.shard.started_unix_ns);
    let first_at = &shards[0].shard.start_at;
    let aligned = first_at.is_some() && shards.iter().all(|s| s.shard.start_at == *first_at);
    let merged: Vec<u32> = added.iter().map(|s| s.shard.index).collect();
    MergedSummary {
        run_id: found.run_id.clone(),
        shards: found.count,
        missing: found.missing.clone(),
        incomplete: added
            .iter()
            .filter(|s| !s.complete)
            .map(|s| s.shard.index)
            .collect(),
        // Both ascending by index.
        inconsistent: shards
            .iter()
            .map(|s| s.shard.index)
            .filter(|i| merged.binary_search(i).is_err())
            .collect(),
        merged,
        aligned,
        start_at: if aligned { first_at.clone() } else { None },
        start_skew_ns: starts.clone().max().unwrap_or(0) - starts.min().unwrap_or(0),
        max_clock_error_ns: shards.iter().filter_map(|s| s.shard.clock_error_ns).max(),
        sources: added
            .iter()
            .map(|s| MergedSource {
                index: s.shard.index,
                dir: s.dir.display().to_string(),
                started_unix_ns: s.shard.started_unix_ns,
                complete: s.complete,
            })
            .collect(),
    }
}

/// The report's account of the run: the lowest-index shard's description,
/// the `added` shards' events counted together.
fn info(found: &Found, added: &[&find::Shard], run: &RunResult) -> RunInfo {
    let s: &Summary = &found.first;
    let events = added.iter().fold(
        EventsStats {
            written: 0,
            ..s.events.clone()
        },
        |mut e, sh| {
            e.written += sh.events.written;
            e.dropped += sh.events.dropped;
            if e.error.is_none() {
                e.error = sh.events.error.clone();
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
        merged: Some(merged_summary(found, added)),
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

/// The shard-state reader and checks, for the fuzz target only.
#[doc(hidden)]
pub mod fuzzing {
    use super::{Part, check, find, run};

    /// What a shard summary read as: its run's totals, and the totals of
    /// the run merged with itself.
    #[derive(Debug)]
    pub struct Read {
        pub completed: u64,
        pub failed: u64,
        pub merged_completed: u64,
        pub merged_failed: u64,
        pub consistent: bool,
    }

    /// Reads `text` as `merge` reads a shard's summary.json (its state's
    /// clocks, then the state decoded and checked) and merges the shard
    /// with itself as two shards would be; `Err` is the refusal's message.
    pub fn read(text: &str) -> Result<Read, String> {
        let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        find::other_version(&doc)?;
        let Some(state) = crate::report::summary::Summary::from_value(doc)?.state else {
            return Err("no state".into());
        };
        let clock = check::clock(state.value())?;
        let run = state.to_run()?;
        let consistent = check::consistent(&run).is_ok();
        let mut read = Read {
            completed: run.total.completed,
            failed: run.total.failed,
            merged_completed: 0,
            merged_failed: 0,
            consistent,
        };
        if !consistent {
            return Ok(read);
        }
        let span = check::merged_span(&[clock, clock]).map_err(|(_, e)| e)?;
        let mut m = run::Merger::new(clock.started_wall_ns, clock.run_start_ns, span);
        for _ in 0..2 {
            m.add(&Part {
                run: &run,
                delta_ns: 0,
                shift: 0,
            })?;
        }
        let merged = m.finish(Vec::new());
        read.merged_completed = merged.total.completed;
        read.merged_failed = merged.total.failed;
        Ok(read)
    }
}
