//! Turning a finished run into what people and programs read: `summary.json`
//! (the typed `Summary`, the machine contract validated against
//! `docs/summary.schema.json`), and the renderings of that one value:
//! `report.txt` (also printed, before any file is written), `report.csv`,
//! `metrics.prom` and `compare`. Also the per-request `events.jsonl` and
//! live progress (`events`), and the atomic file writes they all go through.
//! `report` reads the engine's results (`metrics`) and the plan, never the
//! engine.

pub(crate) mod atomic;
pub(crate) mod compare;
pub(crate) mod csv;
mod definitions_text;
pub(crate) mod events;
pub(crate) mod fmt;
pub(crate) mod html;
pub(crate) mod live;
pub(crate) mod mlperf;
pub(crate) mod prom;
pub(crate) mod slices;
pub(crate) mod state;
pub(crate) mod summary;
pub(crate) mod text;
pub(crate) mod timeline_csv;

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
    /// The machine the run ran on, read at its start.
    pub host: crate::sys::info::HostInfo,
    /// Counters of the built-in endpoint, when the run started one.
    pub builtin_endpoint: Option<Value>,
    /// Where the prompts came from and how many were loaded or skipped.
    pub dataset: Value,
    /// The per-request log.
    pub events: events::EventsStats,
    /// What a reader must know to read the numbers right.
    pub notes: Vec<String>,
    /// How the https endpoints were reached; `None` when none was https.
    pub tls: Option<summary::TlsSummary>,
    /// MLPerf mode: its result files are written too.
    pub mlperf: Option<mlperf::MlperfInfo>,
    /// The accuracy phase's results, when it ran.
    pub accuracy: Option<crate::accuracy::AccuracyReport>,
    /// The endpoint's own metrics, when they were scraped.
    pub server_metrics: Option<summary::server::ServerMetricsSummary>,
    /// `--metrics-preset`: whose definitions the headline numbers use.
    pub metrics_preset: crate::plan::MetricsPreset,
    /// The I/O backend the workers ran, and why.
    pub io: Option<crate::plan::IoChosen>,
    /// This run is one shard of a larger one.
    pub shard: Option<summary::shard::ShardSummary>,
    /// This run was merged from shards.
    pub merged: Option<summary::shard::MergedSummary>,
}

/// A finished run rendered: its summary and every file made from it, ready
/// to print and to write. Rendering comes first and cannot fail, so the
/// numbers of a run survive a disk that cannot take them.
pub(crate) struct Rendered {
    /// `report.txt`.
    pub text: String,
    /// What the terminal shows of it without `--verbose`: everything but
    /// the reference that is the same on every run.
    pub terminal: String,
    /// The few lines the terminal shows last.
    pub headline: String,
    /// (path in the output directory, bytes).
    files: Vec<(&'static str, Vec<u8>)>,
}

/// Renders `run`: every file is a rendering of one `Summary`, so none can
/// disagree with another.
pub(crate) fn render(run: &RunResult, info: &RunInfo) -> Rendered {
    let summary = Summary::build(run, info);
    let mut json = serde_json::to_vec_pretty(&summary).expect("a summary always serializes");
    json.push(b'\n');
    let (mut terminal, tail) = text::render_parts(&summary);
    let mut text = terminal.clone() + &tail;
    let mut mlperf_files = Vec::new();
    if let Some(m) = &info.mlperf {
        let (files, section) = mlperf::render(run, m);
        mlperf_files = files;
        text.push_str(&section);
        terminal.push_str(&section);
    }
    let headline = text::headline(&summary);
    let mut files = vec![
        ("summary.json", json),
        ("report.txt", text.clone().into_bytes()),
        ("report.csv", csv::render(&summary).into_bytes()),
        ("metrics.prom", prom::render(&summary).into_bytes()),
        ("timeline.csv", timeline_csv::render(&summary).into_bytes()),
        ("report.html", html::render(&summary).into_bytes()),
    ];
    files.extend(mlperf_files);
    if let Some(a) = &info.accuracy {
        let mut json =
            serde_json::to_vec_pretty(&a.mlperf_json()).expect("accuracy results serialize");
        json.push(b'\n');
        files.push(("accuracy/accuracy_results.json", json));
    }
    Rendered {
        files,
        text,
        terminal,
        headline,
    }
}

impl Rendered {
    /// Writes `summary.json`, `report.txt`, `report.csv`, `metrics.prom`
    /// (and in MLPerf mode its files) into `dir`, each atomically. A file
    /// that cannot be written does not stop the others; returns one error
    /// per file that failed, naming it.
    pub(crate) fn write(&self, dir: &std::path::Path) -> Vec<String> {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return vec![format!("{}: {e}", dir.display())];
        }
        self.files
            .iter()
            .filter_map(|(name, bytes)| {
                let path = dir.join(name);
                if let Some(parent) = path.parent()
                    && let Err(e) = std::fs::create_dir_all(parent)
                {
                    return Some(format!("{}: {e}", parent.display()));
                }
                atomic::write(&path, bytes).err()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> RunInfo {
        RunInfo {
            config: serde_json::json!({}),
            target: "t".into(),
            started_wall_ns: 0,
            fd_limit: 0,
            host: Default::default(),
            builtin_endpoint: None,
            dataset: Value::Null,
            events: events::EventsStats::default(),
            notes: Vec::new(),
            tls: None,
            mlperf: None,
            accuracy: None,
            server_metrics: None,
            metrics_preset: Default::default(),
            io: Default::default(),
            shard: None,
            merged: None,
        }
    }

    #[test]
    fn a_file_that_cannot_be_written_does_not_stop_the_others() {
        let dir = std::env::temp_dir().join(format!("llmload-render-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        // A directory where summary.json should go: the rename over it fails.
        std::fs::create_dir_all(dir.join("summary.json").join("x")).unwrap();
        let rendered = render(&RunResult::default(), &info());
        assert!(rendered.text.contains("llmload"), "{}", rendered.text);
        let errors = rendered.write(&dir);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("summary.json"), "{errors:?}");
        for name in ["report.txt", "report.csv", "metrics.prom"] {
            assert!(dir.join(name).is_file(), "{name}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("report.txt")).unwrap(),
            rendered.text
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
