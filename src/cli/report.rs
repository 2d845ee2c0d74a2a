//! `llmload report DIR`: re-render a results directory's `report.html` and
//! `report.txt` from its `summary.json` alone (after an upgrade of llmload,
//! or from a summary copied off a CI machine). No load is generated. The
//! MLPerf section of `report.txt` comes from the run's records, not the
//! summary: it is carried over from the old `report.txt` when that has it,
//! and a note says so when it cannot be.

use std::path::{Path, PathBuf};

use argh::FromArgs;

use crate::cli::{errln, out};
use crate::report::summary::Summary;
use crate::report::{atomic, html, text};

/// Where `report::mlperf::text` starts its section of report.txt.
const MLPERF_SECTION: &str = "\n== MLPerf (performance/result_summary.json) ==";

/// Re-render report.html and report.txt from a results directory's
/// summary.json (generates no load).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "report",
    error_code(0, "the reports were written"),
    error_code(1, "a report could not be written"),
    error_code(2, "DIR or its summary.json is missing or not a summary")
)]
pub(crate) struct ReportArgs {
    /// the results directory (or its summary.json)
    #[argh(positional, arg_name = "DIR")]
    pub dir: PathBuf,

    /// write the reports into this directory instead of DIR
    #[argh(option)]
    pub out: Option<PathBuf>,

    /// do not print report.txt
    #[argh(switch)]
    pub quiet: bool,
}

/// Renders the reports; returns 0, 1 (a file could not be written) or 2.
pub(crate) fn run(args: ReportArgs) -> i32 {
    let (dir, summary) = match read(&args.dir) {
        Ok(v) => v,
        Err(e) => {
            errln!("llmload report: {e}");
            return 2;
        }
    };
    let mut txt = text::render(&summary);
    txt.push_str(&mlperf_section(&dir));
    if !args.quiet {
        out!("{txt}");
    }
    let to = args.out.unwrap_or(dir);
    if let Err(e) = std::fs::create_dir_all(&to) {
        errln!("llmload report: --out {}: {e}", to.display());
        return 1;
    }
    let files = [("report.html", html::render(&summary)), ("report.txt", txt)];
    let mut status = 0;
    for (name, body) in files {
        if let Err(e) = atomic::write(&to.join(name), body.as_bytes()) {
            errln!("llmload report: could not write {e}");
            status = 1;
        }
    }
    status
}

/// The directory and its summary, read leniently (as `compare` does).
fn read(path: &Path) -> Result<(PathBuf, Summary), String> {
    let (dir, file) = if path.is_file() {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        (dir.to_path_buf(), path.to_path_buf())
    } else if path.is_dir() {
        (path.to_path_buf(), path.join("summary.json"))
    } else {
        return Err(format!("{}: no such results directory", path.display()));
    };
    let doc = crate::cli::compare::read_json(&file)?;
    let summary = Summary::from_value(doc)
        .map_err(|e| format!("{}: not an llmload summary.json: {e}", file.display()))?;
    Ok((dir, summary))
}

/// The MLPerf section for the new report.txt: the old one's, or a note when
/// the run wrote MLPerf results that the summary cannot redraw.
fn mlperf_section(dir: &Path) -> String {
    let old = std::fs::read_to_string(dir.join("report.txt")).unwrap_or_default();
    if let Some(at) = old.find(MLPERF_SECTION) {
        return old[at..].to_string();
    }
    if dir.join("performance/result_summary.json").is_file() {
        return format!(
            "{MLPERF_SECTION}\nnot regenerated: it is computed from the run's records, not from \
             summary.json; see performance/result_summary.json\n"
        );
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mlperf_section_is_carried_over_or_noted() {
        let dir = std::env::temp_dir().join(format!("llmload-report-cmd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("performance")).unwrap();
        assert_eq!(mlperf_section(&dir), "");
        std::fs::write(dir.join("performance/result_summary.json"), "{}").unwrap();
        let note = mlperf_section(&dir);
        assert!(note.starts_with(MLPERF_SECTION), "{note}");
        assert!(note.contains("not regenerated"), "{note}");
        let old = format!("head\n{MLPERF_SECTION}\nqps 1.0\n");
        std::fs::write(dir.join("report.txt"), &old).unwrap();
        assert_eq!(mlperf_section(&dir), format!("{MLPERF_SECTION}\nqps 1.0\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
