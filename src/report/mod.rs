//! Turning a finished run into what people and programs read: `summary.json`
//! (the machine contract, validated against `docs/summary.schema.json`),
//! `report.txt` (the same numbers for a person, also printed at the end),
//! `report.csv` and `metrics.prom` (renderings of the summary), the
//! per-request `events.jsonl` and live progress (`observer`), `compare`, and
//! the atomic file writes they all go through.

#![forbid(unsafe_code)]

pub mod atomic;
pub mod compare;
pub mod csv;
pub mod observer;
pub mod prom;
pub mod summary;
pub mod text;

use serde_json::Value;

use crate::metrics::run::RunResult;

/// What the report says about a run beyond the engine's result.
pub struct RunInfo {
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
    pub events: observer::EventsStats,
    /// What a reader must know to read the numbers right.
    pub notes: Vec<String>,
}

/// Writes `summary.json`, `report.txt`, `report.csv` and `metrics.prom` into
/// `dir` atomically and returns the text report. The CSV and Prometheus
/// files are renderings of the summary document, so they cannot disagree
/// with it.
pub fn write_all(dir: &std::path::Path, run: &RunResult, info: &RunInfo) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let summary = summary::build(run, info);
    let mut json = serde_json::to_vec_pretty(&summary).expect("a Value always serializes");
    json.push(b'\n');
    atomic::write(&dir.join("summary.json"), &json)?;
    let text = text::render(run, info);
    atomic::write(&dir.join("report.txt"), text.as_bytes())?;
    atomic::write(&dir.join("report.csv"), csv::render(&summary).as_bytes())?;
    atomic::write(&dir.join("metrics.prom"), prom::render(&summary).as_bytes())?;
    Ok(text)
}
