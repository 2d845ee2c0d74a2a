//! `llmload compare`: read two runs' `summary.json`, print them side by side
//! and exit 1 on a regression, so a CI job can gate on it. No load is
//! generated. The comparison and the regression rule live in
//! `report::compare`; this file reads the files and maps outcomes to exit
//! statuses, naming the file in every error.

use std::path::{Path, PathBuf};

use argh::FromArgs;
use serde_json::Value;

use crate::cli::{errln, out, outln};
use crate::report::compare::{self, Error, Side};
use crate::report::summary::Summary;
use crate::report::{atomic, html};

/// Compare two runs' summaries and flag regressions (generates no load).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "compare",
    note = "Stages pair by name, else by position; scenarios by name; the whole run always.
Each pair shows requests/s, output tok/s, e2e and ttft p50/p95/p99 and the error rate.
With P = --regress-pct, a metric regresses when:
  requests/s or output tok/s: new < old x (1 - P/100), old > 0
  e2e or ttft percentile: new > old x (1 + P/100) and new - old >= 1 ms
  error rate (failed / issued): new - old > P percentage points
A value missing on either side (e.g. ttft of a non-streaming run) is never a regression.",
    error_code(0, "no regression"),
    error_code(1, "at least one regression"),
    error_code(
        2,
        "a file is unreadable or not a summary, no stage is in common, or --html could not be written"
    )
)]
pub(crate) struct CompareArgs {
    /// the baseline run: its summary.json, or the directory holding it
    #[argh(positional, arg_name = "OLD")]
    pub old: PathBuf,

    /// the run to judge: its summary.json, or the directory holding it
    #[argh(positional, arg_name = "NEW")]
    pub new: PathBuf,

    /// the change, in percent (percentage points for the error rate), that
    /// counts as a regression (default 10)
    #[argh(option, default = "10.0")]
    pub regress_pct: f64,

    /// print the comparison as JSON instead of tables
    #[argh(switch)]
    pub json: bool,

    /// also write the two runs drawn over each other as one HTML page here
    #[argh(option)]
    pub html: Option<PathBuf>,
}

/// Runs a comparison; returns 0 (no regression), 1 (regression) or 2.
pub(crate) fn run(args: CompareArgs) -> i32 {
    match execute(&args) {
        Ok(regressed) => i32::from(regressed),
        Err(e) => {
            errln!("llmload compare: {e}");
            2
        }
    }
}

fn execute(args: &CompareArgs) -> Result<bool, String> {
    let (old_path, old) = read(&args.old)?;
    let (new_path, new) = read(&args.new)?;
    let (old_name, new_name) = (old_path.display(), new_path.display());
    let c = compare::compare(&old, &new, args.regress_pct).map_err(|e| match e {
        Error::NotASummary { side, reason } => {
            let path = if side == Side::Old {
                &old_path
            } else {
                &new_path
            };
            format!("{}: not an llmload summary.json: {reason}", path.display())
        }
        Error::NoStageInCommon => format!("{old_name} and {new_name} have no stage in common"),
        e @ Error::BadRegressPct(_) => e.to_string(),
    })?;
    if args.json {
        let doc = c.to_json(&old_name.to_string(), &new_name.to_string());
        let text = serde_json::to_string_pretty(&doc).expect("a Value always serializes");
        outln!("{text}");
    } else {
        out!(
            "{}",
            c.render_text(&old_name.to_string(), &new_name.to_string())
        );
    }
    if let Some(path) = &args.html {
        let summary = |doc: &Value, path: &Path| {
            Summary::from_value(doc.clone())
                .map_err(|e| format!("{}: not an llmload summary.json: {e}", path.display()))
        };
        let page = html::render_compare(
            &summary(&old, &old_path)?,
            &summary(&new, &new_path)?,
            &old_name.to_string(),
            &new_name.to_string(),
        );
        atomic::write(path, page.as_bytes()).map_err(|e| format!("--html {e}"))?;
    }
    Ok(c.regressions() > 0)
}

/// Reads a summary, accepting a run directory for its `summary.json`.
fn read(path: &Path) -> Result<(PathBuf, Value), String> {
    let file = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    };
    let doc = read_json(&file)?;
    Ok((file, doc))
}

/// A summary.json as JSON, with errors that name the file.
pub(crate) fn read_json(file: &Path) -> Result<Value, String> {
    let text = crate::capped_read::text(file, crate::capped_read::LARGE)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not an llmload summary.json: not JSON: {e}",
            file.display()
        )
    })
}
