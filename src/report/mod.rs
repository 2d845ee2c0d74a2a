//! Turning a finished run into what people and programs read: `summary.json`
//! (the typed `Summary`, the machine contract validated against
//! `docs/summary.schema.json`), and the renderings of that one value:
//! `report.txt` (also printed at the end), `report.csv`, `metrics.prom` and
//! `compare`. Also the per-request `events.jsonl` and live progress
//! (`events`), and the atomic file writes they all go through. `report`
//! reads the engine's results (`metrics`) and the plan, never the engine.

pub(crate) mod atomic;
pub(crate) mod compare;
pub(crate) mod csv;
pub(crate) mod events;
pub(crate) mod fmt;
pub(crate) mod prom;
pub(crate) mod slices;
pub(crate) mod summary;
pub(crate) mod text;

#[cfg(test)]
mod fixture;

use serde_json::Value;

use crate::metrics::run::RunResult;
use summary::Summary;

/// What the report says about a run beyond the engine's result.
pub(crate) struct RunInfo {
    /// The resolved configuration, secrets already redacted.
    pub config: Value,
    /// One line naming what was measured, e.g. the endpoint URL and API.
    pub target: String,
    /// Wall-clock start, Unix ns.
    pub started_wall_ns: u64,
    /// The soft descriptor limit in force.
    pub fd_limit: u64,
    /// Counters of the built-in endpoint, when the run started one.
    pub builtin_endpoint: Option<Value>,
    /// Where the prompts came from and how many were loaded or skipped.
    pub dataset: Value,
    /// The per-request log.
    pub events: events::EventsStats,
    /// What a reader must know to read the numbers right.
    pub notes: Vec<String>,
}

/// Writes `summary.json`, `report.txt`, `report.csv` and `metrics.prom` into
/// `dir` atomically and returns the text report. Every file is a rendering
/// of one `Summary`, so none can disagree with another.
pub(crate) fn write_all(
    dir: &std::path::Path,
    run: &RunResult,
    info: &RunInfo,
) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let summary = Summary::build(run, info);
    let mut json = serde_json::to_vec_pretty(&summary).expect("a summary always serializes");
    json.push(b'\n');
    atomic::write(&dir.join("summary.json"), &json)?;
    let text = text::render(&summary);
    atomic::write(&dir.join("report.txt"), text.as_bytes())?;
    atomic::write(&dir.join("report.csv"), csv::render(&summary).as_bytes())?;
    atomic::write(&dir.join("metrics.prom"), prom::render(&summary).as_bytes())?;
    Ok(text)
}
