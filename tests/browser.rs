//! report.html in a real browser: headless Chromium loads the page of a real
//! run (two stages, two scenarios, `--slo`) from disk, runs its script,
//! and dumps the DOM; the test holds the DOM to the page's contract (the
//! sections, one slice per stage × scenario, every plot with a series, the
//! headline table's numbers equal to summary.json's) and the console to
//! silence. The harness itself is tested on a small hand-written page that
//! keeps the contract and on copies that break it.
//!
//! Chromium's `--enable-logging=stderr` prints every console message at
//! INFO, `console.error` included, so the level cannot be read there: the
//! page is loaded through a copy with a probe script put first in its head
//! that records `console.error` calls, uncaught errors and unhandled
//! rejections on the root element, where the dumped DOM shows them. Uncaught
//! errors are read from stderr as well.
//!
//! No browser: the tests print why and pass, unless LLMLOAD_REQUIRE_BROWSER=1
//! (CI installs one), where they fail.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Browsers tried, by name on PATH, then where Debian puts them.
const BROWSERS: [&str; 5] = [
    "chromium-headless-shell",
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];
const BROWSER_PATHS: [&str; 2] = [
    "/usr/lib/chromium/chromium-headless-shell",
    "/usr/lib/chromium/chromium",
];
/// The longest a browser may take to load and dump one page.
const BROWSER_LIMIT: Duration = Duration::from_secs(60);

/// Plots every run page has; `stages` only when the run has several.
const PLOTS: [&str; 8] = [
    "throughput",
    "latency",
    "inflight",
    "errors",
    "cdf-ttft",
    "cdf-e2e",
    "hist-osl",
    "stages",
];

/// Records console errors on the root element; put first in the page.
const PROBE: &str = r#"<script>(function(){var d=document.documentElement,n=[];function note(m){n.push(String(m));d.setAttribute("data-console-errors",n.join(" | "));}var e=console.error;console.error=function(){note(Array.prototype.join.call(arguments," "));return e.apply(console,arguments);};window.addEventListener("error",function(ev){note("uncaught: "+ev.message);});window.addEventListener("unhandledrejection",function(ev){note("unhandled rejection: "+ev.reason);});d.setAttribute("data-llmload-probe","1");})();</script>"#;

fn find_browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in BROWSERS {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    BROWSER_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// The browser, or `None` after saying why the test is skipped; panics
/// when LLMLOAD_REQUIRE_BROWSER=1 asks for one.
fn browser() -> Option<PathBuf> {
    let found = find_browser();
    if found.is_none() {
        let tried = BROWSERS.join(", ");
        if std::env::var("LLMLOAD_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("LLMLOAD_REQUIRE_BROWSER=1 but no browser found (tried {tried} on PATH)");
        }
        eprintln!(
            "skipped: no headless browser ({tried}); `apt-get install chromium-headless-shell` runs this test"
        );
    }
    found
}

/// A page as the browser left it.
struct Loaded {
    dom: String,
    /// Console errors and uncaught exceptions, from the probe and stderr.
    console: Vec<String>,
}

/// `html` with the probe first in its head.
fn with_probe(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    let at = ["<head", "<html"].iter().find_map(|t| {
        lower
            .find(t)
            .and_then(|i| lower[i..].find('>').map(|j| i + j + 1))
    });
    match at {
        Some(i) => format!("{}{PROBE}{}", &html[..i], &html[i..]),
        None => format!("{PROBE}{html}"),
    }
}

/// Loads `page` (through a probed copy beside it) and dumps its DOM.
fn load(browser: &Path, page: &Path) -> Loaded {
    let html = read(page);
    let probed = page.with_file_name(format!(
        ".probed-{}",
        page.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&probed, with_probe(&html)).unwrap();
    let profile = temp_dir("chromium-profile");
    let url = format!("file://{}", probed.canonicalize().unwrap().display());
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", browser.display()));
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > BROWSER_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} did not dump {url} within {BROWSER_LIMIT:?}",
                browser.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (dom, stderr) = (out.join().unwrap(), err.join().unwrap());
    let _ = std::fs::remove_dir_all(&profile);
    let _ = std::fs::remove_file(&probed);
    assert!(
        status.success(),
        "{}: {status}\n{stderr}",
        browser.display()
    );
    let root = tags(&dom, "html");
    let root = root
        .first()
        .unwrap_or_else(|| panic!("no <html> in\n{dom}"));
    assert_eq!(
        root.attr("data-llmload-probe"),
        Some("1"),
        "the console probe did not run (a Content-Security-Policy?)\n{stderr}"
    );
    let mut console: Vec<String> = root
        .attr("data-console-errors")
        .map(|e| e.split(" | ").map(str::to_string).collect())
        .unwrap_or_default();
    console.extend(
        stderr
            .lines()
            .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains(":ERROR:")))
            .map(str::to_string),
    );
    Loaded { dom, console }
}

/// One opening tag of the dumped DOM.
struct Tag {
    attrs: Vec<(String, String)>,
    /// Byte offset just past the tag's `>`.
    end: usize,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split_whitespace().any(|c| c == class))
    }
}

fn unescape(v: &str) -> String {
    v.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Every opening `<name …>` tag in `dom`, its attributes read with quoted
/// values (which may hold `>`).
fn tags(dom: &str, name: &str) -> Vec<Tag> {
    let b = dom.as_bytes();
    let open = format!("<{name}");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = dom[from..].find(&open).map(|i| i + from) {
        let mut p = i + open.len();
        from = p;
        if !b
            .get(p)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b'>' || *c == b'/')
        {
            continue;
        }
        let mut attrs = Vec::new();
        loop {
            while b
                .get(p)
                .is_some_and(|c| c.is_ascii_whitespace() || *c == b'/')
            {
                p += 1;
            }
            match b.get(p) {
                None => return out,
                Some(b'>') => break,
                _ => {}
            }
            let k0 = p;
            while b
                .get(p)
                .is_some_and(|c| !c.is_ascii_whitespace() && !b"=>/".contains(c))
            {
                p += 1;
            }
            let key = dom[k0..p].to_ascii_lowercase();
            let mut value = String::new();
            if b.get(p) == Some(&b'=') {
                p += 1;
                match b.get(p) {
                    Some(&q) if q == b'"' || q == b'\'' => {
                        let v0 = p + 1;
                        let v1 = dom[v0..].find(q as char).map_or(dom.len(), |j| v0 + j);
                        value = unescape(&dom[v0..v1]);
                        p = (v1 + 1).min(dom.len());
                    }
                    _ => {
                        let v0 = p;
                        while b
                            .get(p)
                            .is_some_and(|c| !c.is_ascii_whitespace() && *c != b'>')
                        {
                            p += 1;
                        }
                        value = unescape(&dom[v0..p]);
                    }
                }
            }
            attrs.push((key, value));
        }
        out.push(Tag { attrs, end: p + 1 });
        from = p + 1;
    }
    out
}

/// What a tag holds: up to its first closing tag (plots and tables do not
/// nest in their own kind).
fn inner<'a>(dom: &'a str, tag: &Tag, name: &str) -> &'a str {
    let rest = &dom[tag.end..];
    &rest[..rest.find(&format!("</{name}>")).unwrap_or(rest.len())]
}

/// A number as Rust's `{}` prints it: the contract's `data-value`.
fn rust_display(v: &Value) -> String {
    match (v.as_u64(), v.as_i64(), v.as_f64()) {
        (Some(u), _, _) => u.to_string(),
        (_, Some(i), _) => i.to_string(),
        (_, _, Some(f)) => f.to_string(),
        _ => panic!("not a number: {v}"),
    }
}

/// Where a run page breaks its contract (empty: it keeps it), given the
/// run's summary and its stage and scenario names.
fn run_page_problems(
    dom: &str,
    summary: &Value,
    stages: &[&str],
    scenarios: &[&str],
) -> Vec<String> {
    let mut bad = Vec::new();
    let root = tags(dom, "html");
    let Some(root) = root.first() else {
        return vec!["no <html>".into()];
    };
    if root.attr("data-llmload-report") != Some("run") {
        bad.push(format!(
            "<html> data-llmload-report is {:?}, not \"run\"",
            root.attr("data-llmload-report")
        ));
    }
    if root.attr("data-ready") != Some("1") {
        bad.push("<html> has no data-ready=\"1\": the script did not finish".into());
    }
    if let Some(e) = root.attr("data-js-error") {
        bad.push(format!("data-js-error: {e}"));
    }
    let sections = tags(dom, "section");
    for id in ["identity", "status", "headline", "generator"] {
        if !sections.iter().any(|s| s.attr("id") == Some(id)) {
            bad.push(format!("no <section id=\"{id}\">"));
        }
    }
    let slices: Vec<(&str, &str)> = sections
        .iter()
        .filter(|s| s.has_class("slice"))
        .filter_map(|s| Some((s.attr("data-stage")?, s.attr("data-scenario")?)))
        .collect();
    for st in stages {
        for sc in scenarios {
            if !slices.contains(&(*st, *sc)) {
                bad.push(format!("no slice for stage {st} × scenario {sc}"));
            }
        }
    }
    if !slices.iter().any(|(st, sc)| *st == "all" || *sc == "all") {
        bad.push("no slice for all".into());
    }
    let plots: Vec<Tag> = tags(dom, "svg")
        .into_iter()
        .filter(|t| t.has_class("plot"))
        .collect();
    let kinds = if stages.len() > 1 {
        &PLOTS[..]
    } else {
        &PLOTS[..7]
    };
    for kind in kinds {
        if !plots.iter().any(|p| p.attr("data-plot") == Some(kind)) {
            bad.push(format!("no <svg class=\"plot\" data-plot=\"{kind}\">"));
        }
    }
    for p in &plots {
        if !inner(dom, p, "svg").contains("data-series") {
            bad.push(format!(
                "plot {:?} has no data-series",
                p.attr("data-plot").unwrap_or("?")
            ));
        }
    }
    match tags(dom, "table")
        .iter()
        .find(|t| t.attr("id") == Some("headline-table"))
    {
        None => bad.push("no <table id=\"headline-table\">".into()),
        Some(t) => {
            let cells = tags(inner(dom, t, "table"), "td");
            let expect = [
                ("requests_completed", &summary["requests"]["completed"]),
                ("requests_per_s", &summary["throughput"]["requests_per_s"]),
                ("ttft_p50_ms", &summary["latency_ms"]["ttft"]["p50"]),
            ];
            for (key, want) in expect {
                let want = rust_display(want);
                match cells.iter().find(|c| c.attr("data-key") == Some(key)) {
                    None => bad.push(format!("headline-table has no data-key={key}")),
                    Some(c) if c.attr("data-value") != Some(want.as_str()) => bad.push(format!(
                        "headline {key} is {:?}, summary.json says {want}",
                        c.attr("data-value")
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    if !tags(dom, "table")
        .iter()
        .any(|t| t.has_class("percentiles"))
    {
        bad.push("no <table class=\"percentiles\">".into());
    }
    bad
}

/// Where a compare page breaks its contract.
fn compare_page_problems(dom: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let root = tags(dom, "html");
    let Some(root) = root.first() else {
        return vec!["no <html>".into()];
    };
    if root.attr("data-llmload-report") != Some("compare") {
        bad.push(format!(
            "<html> data-llmload-report is {:?}, not \"compare\"",
            root.attr("data-llmload-report")
        ));
    }
    if root.attr("data-ready") != Some("1") {
        bad.push("<html> has no data-ready=\"1\"".into());
    }
    if let Some(e) = root.attr("data-js-error") {
        bad.push(format!("data-js-error: {e}"));
    }
    let plot = tags(dom, "svg")
        .into_iter()
        .find(|t| t.has_class("plot") && t.attr("data-plot") == Some("compare-throughput"));
    match plot {
        None => bad.push("no compare-throughput plot".into()),
        Some(p) if !inner(dom, &p, "svg").contains("data-series") => {
            bad.push("compare-throughput has no data-series".into())
        }
        Some(_) => {}
    }
    bad
}

/// A small page that keeps the run-page contract for `contract_summary`
/// (stages low and high, scenarios chat and qa), with the given `plots` in
/// every slice and a script that runs `extra_script`, then marks it ready.
fn contract_page(extra_script: &str, plots: &[&str]) -> String {
    let svg = |k: &str| {
        format!(
            r#"<svg class="plot" data-plot="{k}" viewBox="0 0 10 10"><path data-series="a" d="M0 0L10 10"/></svg>"#
        )
    };
    let mut slices = String::new();
    for st in ["low", "high", "all"] {
        for sc in ["chat", "qa", "all"] {
            slices.push_str(&format!(
                r#"<section class="slice" data-stage="{st}" data-scenario="{sc}">{}</section>"#,
                plots.iter().map(|k| svg(k)).collect::<String>()
            ));
        }
    }
    format!(
        r#"<!doctype html>
<html lang="en" data-llmload-report="run"><head><meta charset="utf-8"><title>t</title></head><body>
<section id="identity"><h1>llmload</h1></section><section id="status">complete</section>
<section id="headline"><table id="headline-table"><tr><th>completed</th><td data-key="requests_completed" data-value="40">40</td>
<td data-key="requests_per_s" data-value="19.98">19.98</td><td data-key="ttft_p50_ms" data-value="2.5">2.5</td></tr></table></section>
<section id="generator">ok</section>{slices}<table class="percentiles"><tr><td>1</td></tr></table>
<script>{extra_script}document.documentElement.setAttribute("data-ready","1");</script></body></html>"#
    )
}

fn contract_summary() -> Value {
    serde_json::json!({
        "requests": {"completed": 40},
        "throughput": {"requests_per_s": 19.98},
        "latency_ms": {"ttft": {"p50": 2.5}},
    })
}

#[test]
fn the_harness_passes_a_page_that_keeps_the_contract_and_names_what_breaks_it() {
    let Some(browser) = browser() else { return };
    let dir = temp_dir("browser-harness");
    let summary = contract_summary();
    let (stages, scenarios) = (["low", "high"], ["chat", "qa"]);

    let page = dir.join("good.html");
    std::fs::write(&page, contract_page("", &PLOTS)).unwrap();
    let good = load(&browser, &page);
    assert_eq!(good.console, Vec::<String>::new());
    let bad = run_page_problems(&good.dom, &summary, &stages, &scenarios);
    assert!(bad.is_empty(), "{bad:?}\n{}", good.dom);

    // A console.error and a throw before the page is ready: both are heard,
    // and the page is not ready.
    let page = dir.join("noisy.html");
    let noisy = r#"console.error("bad thing"); throw new Error("boom");"#;
    std::fs::write(&page, contract_page(noisy, &PLOTS)).unwrap();
    let loaded = load(&browser, &page);
    let console = loaded.console.join("\n");
    assert!(console.contains("bad thing"), "{console}");
    assert!(console.contains("Uncaught Error: boom"), "{console}");
    let bad = run_page_problems(&loaded.dom, &summary, &stages, &scenarios);
    assert!(bad.iter().any(|b| b.contains("data-ready")), "{bad:?}");

    // A missing plot and a headline number that is not the summary's.
    let page = dir.join("short.html");
    std::fs::write(&page, contract_page("", &PLOTS[..7])).unwrap();
    let loaded = load(&browser, &page);
    let mut other = summary.clone();
    other["requests"]["completed"] = 41.into();
    let bad = run_page_problems(&loaded.dom, &other, &stages, &scenarios);
    assert_eq!(
        bad,
        [
            "no <svg class=\"plot\" data-plot=\"stages\">",
            "headline requests_completed is Some(\"40\"), summary.json says 41",
        ]
    );
    // One stage needs no curve across stages.
    assert!(run_page_problems(&loaded.dom, &summary, &["low"], &scenarios).is_empty());

    let page = dir.join("compare.html");
    let compare = r#"<!doctype html><html data-llmload-report="compare"><body>
<svg class="plot" data-plot="compare-throughput"><path data-series="old"/></svg>
<script>document.documentElement.setAttribute("data-ready","1");</script></body></html>"#;
    std::fs::write(&page, compare).unwrap();
    let loaded = load(&browser, &page);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    assert_eq!(compare_page_problems(&loaded.dom), Vec::<String>::new());
    assert_eq!(
        compare_page_problems(&contract_page("", &PLOTS)),
        [
            "<html> data-llmload-report is Some(\"run\"), not \"compare\"",
            "<html> has no data-ready=\"1\"",
            "no compare-throughput plot",
        ]
    );
}

#[test]
fn a_real_runs_report_renders_in_a_browser_with_its_numbers() {
    let Some(browser) = browser() else { return };
    let server = Server::start(&["--ttft", "2ms", "--tpot", "1ms"]);
    let dir = temp_dir("browser-run");
    let profile = dir.join("run.json");
    let doc = serde_json::json!({
        "model": "m",
        "max_tokens": 8,
        "warmup": "0s",
        "live_interval": "0",
        "stages": [
            {"name": "low", "concurrency": 2, "duration": "1s"},
            {"name": "high", "concurrency": 4, "duration": "1s"}
        ],
        "scenarios": [
            {"name": "chat", "weight": 1},
            {"name": "qa", "weight": 1, "stream": false, "max_tokens": 4}
        ]
    });
    std::fs::write(&profile, doc.to_string()).unwrap();
    let run = bench_at(
        &server,
        &[
            "--profile",
            &profile.display().to_string(),
            "--slo",
            "ttft=200ms,e2e=5s",
        ],
        Duration::from_secs(60),
    );
    run.assert_success();
    let summary = run.summary();
    let loaded = load(&browser, &run.out.join("report.html"));
    assert!(loaded.console.is_empty(), "console: {:?}", loaded.console);
    let bad = run_page_problems(&loaded.dom, &summary, &["low", "high"], &["chat", "qa"]);
    assert!(bad.is_empty(), "report.html breaks its contract: {bad:#?}");

    // The same run compared with itself.
    let page = dir.join("compare.html");
    let out = Command::new(bin())
        .arg("compare")
        .arg(&run.out)
        .arg(&run.out)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let loaded = load(&browser, &page);
    assert!(loaded.console.is_empty(), "console: {:?}", loaded.console);
    let bad = compare_page_problems(&loaded.dom);
    assert!(
        bad.is_empty(),
        "compare --html breaks its contract: {bad:#?}"
    );
}
