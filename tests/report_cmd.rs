//! `llmload report DIR` re-renders a real run's report.html and report.txt
//! from its summary.json alone, and `compare --html` writes the two runs'
//! page; bad directories and files exit 2 naming them.

use std::path::Path;
use std::time::Duration;

use crate::util::*;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn report_redraws_a_run_from_its_summary_and_compare_writes_html() {
    let server = Server::start(&[]);
    let run = bench_at(
        &server,
        &[
            "--concurrency",
            "2",
            "--requests",
            "12",
            "--max-tokens",
            "4",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let dir = &run.out;
    let html = read(&dir.join("report.html"));
    let txt = read(&dir.join("report.txt"));
    std::fs::remove_file(dir.join("report.html")).unwrap();
    std::fs::remove_file(dir.join("report.txt")).unwrap();

    // In place: the same pages the run wrote, and report.txt printed.
    let out = llmload(&["report", &s(dir)]).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(read(&dir.join("report.html")), html);
    assert_eq!(read(&dir.join("report.txt")), txt);
    assert_eq!(text(&out.stdout), txt);

    // Elsewhere, quietly, from the summary's own path.
    let other = temp_dir("report-out");
    let out = llmload(&[
        "report",
        &s(&dir.join("summary.json")),
        "--out",
        &s(&other),
        "--quiet",
    ])
    .output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(read(&other.join("report.html")), html);
    assert_eq!(read(&other.join("report.txt")), txt);

    // compare --html: the page is written and the verdict is unchanged.
    let page = other.join("compare.html");
    let out = llmload(&["compare", &s(dir), &s(dir), "--html", &s(&page)]).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written = read(&page);
    assert!(
        written.to_ascii_lowercase().starts_with("<!doctype html"),
        "{written}"
    );
    assert!(text(&out.stdout).contains("== stage main =="));
    let nowhere = other.join("no/such/dir/c.html");
    let out = llmload(&["compare", &s(dir), &s(dir), "--html", &s(&nowhere)]).output();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("--html") && err.contains("c.html"), "{err}");
}

#[test]
fn report_names_a_missing_directory_or_a_file_that_is_not_a_summary() {
    let dir = temp_dir("report-bad");
    let missing = dir.join("nope");
    let out = llmload(&["report", &s(&missing)]).output();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&s(&missing)), "{err}");

    // A directory without a summary names the file it looked for.
    let out = llmload(&["report", &s(&dir)]).output();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains(&s(&dir.join("summary.json"))), "{err}");

    for (body, why) in [
        ("not json", "not JSON"),
        (r#"{"tool": "other", "stages": []}"#, "\"tool\""),
    ] {
        std::fs::write(dir.join("summary.json"), body).unwrap();
        let out = llmload(&["report", &s(&dir)]).output();
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(
            err.contains("summary.json: not an llmload summary.json") && err.contains(why),
            "{err}"
        );
        assert!(!dir.join("report.html").exists());
    }
}
