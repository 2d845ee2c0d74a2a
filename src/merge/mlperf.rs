//! MLPerf mode's inputs for a merged run: when the shards wrote
//! `performance/result_summary.json`, the merged run writes MLPerf's files
//! too. Its `run_config` is the first shard's with the whole run's load
//! pattern; `sample_idx_map.json` is every shard's performance map
//! together (uuids are unique across shards: conversation ids are).

use std::path::Path;

use serde_json::Value;

use crate::metrics::run::RunResult;
use crate::plan::{ArrivalKind, Load};
use crate::report::events::SampleRow;
use crate::report::mlperf::{LoadPattern, MlperfInfo, RunConfig, WarmupConfig};

const RESULT_SUMMARY: &str = "performance/result_summary.json";

fn read(path: &Path) -> Result<Value, String> {
    let text = crate::capped_read::text(path, crate::capped_read::CONFIG)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

/// `None` when no shard ran in MLPerf mode.
pub(crate) fn info(dirs: &[&Path], run: &RunResult) -> Result<Option<MlperfInfo>, String> {
    let Some(first) = dirs.iter().find(|d| d.join(RESULT_SUMMARY).is_file()) else {
        return Ok(None);
    };
    let path = first.join(RESULT_SUMMARY);
    let doc = read(&path)?;
    let rc = &doc["run_config"];
    let w = &rc["warmup"];
    let seed = |v: &Value, name: &str| {
        v.as_u64()
            .ok_or_else(|| format!("{}: run_config: no {name}", path.display()))
    };
    let run_config = RunConfig {
        load_pattern: run
            .stages
            .first()
            .map(|s| LoadPattern::of(&s.load))
            .unwrap_or_default()
            .with_legacy_qps(rc["load_pattern"]["use_legacy_loadgen_qps_metrics"].as_bool()),
        warmup: WarmupConfig {
            enabled: w["enabled"].as_bool().unwrap_or(false),
            n_requests: w["n_requests"].as_u64(),
            salt: w["salt"].as_bool().unwrap_or(false),
            drain: w["drain"].as_bool().unwrap_or(false),
            warmup_random_seed: w["warmup_random_seed"].as_u64().unwrap_or(0),
        },
        scheduler_random_seed: seed(&rc["scheduler_random_seed"], "scheduler_random_seed")?,
        dataloader_random_seed: seed(&rc["dataloader_random_seed"], "dataloader_random_seed")?,
    };
    let mut sample_rows = Vec::new();
    for d in dirs {
        let map = d.join("sample_idx_map.json");
        if map.is_file() {
            rows(&read(&map)?["performance"], &map, &mut sample_rows)?;
        }
    }
    Ok(Some(MlperfInfo {
        run_config,
        legacy_window: rc["load_pattern"]["use_legacy_loadgen_qps_metrics"].as_bool()
            != Some(false)
            && !run.stages.is_empty()
            && run.stages.iter().all(|s| {
                matches!(
                    s.load,
                    Load::Open {
                        kind: ArrivalKind::Poisson,
                        ..
                    }
                )
            }),
        early_stopping: doc["latency"].get("early_stopping_percentiles").is_some(),
        test_started_at: run.run_start_ns,
        // What the shards recorded: a series MLPerf leaves out is `{}`.
        streaming: !is_empty(&doc["ttft"]),
        tokenizer: !is_empty(&doc["output_sequence_lengths"]),
        sample_rows,
        performance: true,
        accuracy_rows: Vec::new(),
    }))
}

fn is_empty(v: &Value) -> bool {
    v.as_object().is_none_or(|o| o.is_empty())
}

/// A `{uuid hex: row}` map's entries into `out`.
fn rows(map: &Value, path: &Path, out: &mut Vec<SampleRow>) -> Result<(), String> {
    let Some(map) = map.as_object() else {
        return Ok(());
    };
    for (hex, row) in map {
        let bad = || format!("{}: {hex:?} is not a sample uuid", path.display());
        if hex.len() != 32 {
            return Err(bad());
        }
        let mut id = [0u8; 16];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16)
                .map_err(|_| bad())?;
        }
        let row = row.as_u64().and_then(|r| u32::try_from(r).ok());
        out.push((id, row));
    }
    Ok(())
}
