//! `llmload validate FILE`: load and check a run profile without sending a
//! request, then say in one paragraph what the run would do — so a typo in a
//! CI profile fails in a second instead of after a ten-minute run. Every
//! problem is printed (`FILE: json.path: message`), not just the first; the
//! endpoint's host is resolved but never contacted.

use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use crate::cli::{errln, outln};
use crate::config::BenchConfig;
use crate::config::duration::format_duration;
use crate::config::mlperf;
use crate::config::profile::{Content, Profile};
use crate::config::resolve::resolve;
use crate::http::endpoint::redact_url;
use crate::http::redact::{redact, spellings};
use crate::plan::{Load, StagePlan};
use crate::printable::printable;

/// Check a run profile (or MLPerf YAML config) and summarize the run it describes.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "validate")]
pub(crate) struct ValidateArgs {
    /// the profile, e.g. run.json, or an MLPerf config (.yaml/.yml)
    #[argh(positional)]
    pub path: PathBuf,
}

/// Validate an MLPerf YAML config against MLPerf's schema (MLPerf's validate-yaml).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "validate-yaml",
    note = "MLPerf's validate-yaml: the config's schema and values, as MLPerf checks them; \
            dataset files need not exist yet (what the run would still refuse is printed as \
            warnings). `llmload validate FILE` checks everything a run needs.",
    error_code(0, "the config is valid"),
    error_code(1, "a refused command line"),
    error_code(
        2,
        "the config does not validate (each problem named by its YAML path)"
    )
)]
pub(crate) struct ValidateYamlArgs {
    /// the MLPerf config (.yaml)
    #[argh(option, short = 'c')]
    pub config: Option<PathBuf>,

    /// the MLPerf config, given without -c
    #[argh(positional)]
    pub path: Option<PathBuf>,
}

/// MLPerf's `validate-yaml`: 0 valid, 2 not (MLPerf's input error).
pub(crate) fn run_yaml(args: ValidateYamlArgs) -> i32 {
    use crate::cli::mlperf_status;
    let path = match (args.config, args.path) {
        (Some(p), None) | (None, Some(p)) => p,
        (Some(_), Some(_)) => {
            errln!("llmload validate-yaml: give the config once (-c FILE or FILE)");
            return mlperf_status::FAILED;
        }
        (None, None) => {
            errln!("llmload validate-yaml: Required: --config [-c]");
            return mlperf_status::FAILED;
        }
    };
    let label = path.display().to_string();
    outln!("Validating: {label}");
    let tree = match mlperf::load_tree(&path) {
        Ok(t) => t,
        Err(e) => {
            errln!("Validation failed\n{e}");
            return mlperf_status::INPUT;
        }
    };
    let field = |k: &str| {
        tree.value
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    // As `validate`: nothing taken from the environment is printed.
    let hidden = spellings(tree.hidden.clone());
    let shown = |t: &str| printable(&redact(t, &hidden));
    let (name, kind) = (field("name"), field("type"));
    let datasets = tree
        .value
        .get("datasets")
        .and_then(|d| d.as_array())
        .map_or(0, Vec::len);
    let read = match mlperf::read(tree) {
        Ok(r) => r,
        Err(errs) => {
            errln!("Validation failed");
            for (p, m) in &errs {
                errln!("{}", mlperf::located(&label, p, m));
            }
            return mlperf_status::INPUT;
        }
    };
    outln!("Config valid: {}", shown(&name));
    outln!("  Type: {}", shown(&kind));
    outln!("  Datasets: {datasets}");
    // MLPerf's check stops at the schema; what the run itself would refuse
    // (a dataset file not there yet) is told, not failed.
    if let Err(errors) = resolve(read.profile) {
        for e in &errors {
            errln!("{label}: warning: the run would refuse: {}", shown(e));
        }
    }
    mlperf_status::OK
}

/// Validates the profile; returns 0 when it can run, 1 otherwise.
pub(crate) fn run(args: ValidateArgs) -> i32 {
    let label = args.path.display().to_string();
    // What an MLPerf config took from the environment (or under a
    // credential's key) is never printed.
    let mut hidden = Vec::new();
    let loaded = if mlperf::is_yaml(&args.path) {
        mlperf::load(&args.path).map(|r| {
            hidden = spellings(r.hidden.clone());
            if let Some(a) = &r.audit {
                let p = &a.params;
                outln!(
                    "{label}: audit: {} of {} reference and {} audit samples (row {}, threshold {})",
                    a.test,
                    p.samples,
                    p.audit_samples(),
                    p.sample_index,
                    p.threshold
                );
            }
            r.profile
        })
    } else {
        Profile::load(&args.path)
    };
    let profile = match loaded {
        Ok(p) => p,
        Err(e) => {
            errln!("{e}");
            return 1;
        }
    };
    match resolve(profile) {
        Ok(cfg) => {
            let shown = |t: &str| printable(&redact(t, &hidden));
            outln!("{}", wrap(&shown(&summary(&label, &cfg)), 78));
            let extras = &cfg.profile.mlperf;
            for n in &extras.notes {
                outln!("{label}: note: {}", shown(n));
            }
            for r in &extras.refuse_run {
                outln!("{label}: valid, but a run is refused: {}", shown(r));
            }
            for r in &extras.refuse_accuracy {
                outln!(
                    "{label}: valid, but its accuracy phase is refused when run: {}",
                    shown(r)
                );
            }
            0
        }
        Err(errors) => {
            for e in &errors {
                errln!("{label}: {}", redact(e, &hidden));
            }
            1
        }
    }
}

/// The run a valid profile describes, as one paragraph.
pub(crate) fn summary(label: &str, cfg: &BenchConfig) -> String {
    let p = &cfg.profile;
    let mut s = format!(
        "{label} is valid: {} at {}, model {}, {}, max_tokens {}.",
        cfg.protocol.name(),
        match (&p.endpoint, &p.endpoints) {
            (Some(url), _) => crate::config::profile::validate::split_endpoints(url)
                .into_iter()
                .map(redact_url)
                .collect::<Vec<_>>()
                .join(","),
            (None, Some(list)) => list
                .iter()
                .map(|u| redact_url(u))
                .collect::<Vec<_>>()
                .join(","),
            (None, None) => "the built-in endpoint".to_string(),
        },
        p.model.as_deref().unwrap_or("from /v1/models"),
        if cfg.stream {
            "streaming"
        } else {
            "non-streaming"
        },
        cfg.max_tokens,
    );
    let stages = &cfg.stages;
    let arrival = stages.iter().find_map(|st| match st.load {
        Load::Open { kind, .. } => Some(kind),
        _ => None,
    });
    if cfg.warmup_ns > 0 {
        s += &format!(
            " {} warmup, then",
            format_duration(Duration::from_nanos(cfg.warmup_ns))
        );
    }
    s += &format!(
        " {} stage{}",
        stages.len(),
        if stages.len() == 1 { "" } else { "s" }
    );
    if let Some(kind) = arrival {
        s += &format!(" ({} arrivals)", kind.name());
    }
    let list: Vec<String> = stages.iter().map(describe_stage).collect();
    s += &format!(": {}.", list.join("; "));
    if cfg.warmup_requests > 0 {
        s += &format!(" Warm-up: {} requests.", cfg.warmup_requests);
    }
    if let Some(rule) = &cfg.run_length {
        s += &format!(" Length: {}.", rule.plan());
    }

    if let Some(specs) = &p.scenarios {
        let scenarios = &cfg.scenarios;
        let total: f64 = scenarios.iter().map(|sc| sc.weight).sum();
        let list: Vec<String> = scenarios
            .iter()
            .zip(specs)
            .map(|(sc, spec)| {
                let turns = if sc.turns.min == sc.turns.max {
                    format!(
                        "{} turn{}",
                        sc.turns.min,
                        if sc.turns.min == 1 { "" } else { "s" }
                    )
                } else {
                    format!("{}–{} turns", sc.turns.min, sc.turns.max)
                };
                let content = match &sc.content {
                    None => "top-level prompts",
                    Some(Content::Pool { .. }) => "pool",
                    Some(Content::Scripted { .. }) => "scripted",
                    Some(Content::Sized { .. }) => "sized",
                    Some(Content::Dataset { .. }) => "dataset",
                };
                let checked = if spec.checks.is_some() {
                    ", checked"
                } else {
                    ""
                };
                format!(
                    "{} {} ({turns}, {content}{checked})",
                    sc.name,
                    percent(sc.weight / total)
                )
            })
            .collect();
        s += &format!(
            " {} scenario{}: {}.",
            scenarios.len(),
            if scenarios.len() == 1 { "" } else { "s" },
            list.join("; ")
        );
    }

    let t = &cfg.thresholds;
    let mut limits = Vec::new();
    for (name, v) in [
        ("TTFT p95", t.ttft_p95_ms),
        ("TTFT p99", t.ttft_p99_ms),
        ("TPOT p99", t.tpot_p99_ms),
        ("p95", t.p95_ms),
        ("p99", t.p99_ms),
    ] {
        if let Some(x) = v {
            limits.push(format!("{name} ≤ {x} ms"));
        }
    }
    if let Some(e) = t.error_rate {
        limits.push(format!("error rate ≤ {}", percent(e)));
    }
    if let Some(r) = t.min_rps {
        limits.push(format!("≥ {r} req/s"));
    }
    if !limits.is_empty() && t.abort_on_fail {
        limits.push("abort after the first stage that fails".to_string());
    }
    if limits.is_empty() {
        s += " No thresholds.";
    } else {
        s += &format!(" Thresholds: {}.", limits.join(", "));
    }
    if cfg.phase.runs_accuracy() {
        let sets: Vec<String> = cfg
            .accuracy
            .iter()
            .map(|a| {
                format!(
                    "{} ({}, {}, {} repeat{})",
                    a.name,
                    a.scorer.name(),
                    a.extractor.name(),
                    a.repeats,
                    if a.repeats == 1 { "" } else { "s" }
                )
            })
            .collect();
        s += &format!(
            " Phase {}: accuracy on {}, one request at a time.",
            cfg.phase.name(),
            sets.join(", ")
        );
    }
    s
}

fn describe_stage(st: &StagePlan) -> String {
    let load = match st.load {
        Load::Offline => "offline (every request due at the start)".to_string(),
        Load::Closed { concurrency } => format!("{concurrency} in flight"),
        Load::Open {
            rate_from, rate_to, ..
        } if rate_from == rate_to => format!("{rate_from} req/s"),
        Load::Open {
            rate_from, rate_to, ..
        } => format!("{rate_from} → {rate_to} req/s"),
    };
    let length = match (st.duration_ns.map(Duration::from_nanos), st.requests) {
        (Some(d), Some(r)) => format!(", {} or {r} requests", format_duration(d)),
        (Some(d), None) => format!(", {}", format_duration(d)),
        (None, Some(r)) => format!(", {r} requests"),
        (None, None) => String::new(),
    };
    format!("{} ({load}{length})", st.name)
}

fn percent(fraction: f64) -> String {
    let p = format!("{:.1}", fraction * 100.0);
    format!("{}%", p.strip_suffix(".0").unwrap_or(&p))
}

/// Greedy word wrap, for a terminal.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width);
    let mut line = 0;
    for word in text.split(' ') {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarizes_the_example() {
        let cfg = resolve(Profile::example()).unwrap_or_else(|e| panic!("{e:?}"));
        let s = summary("run.json", &cfg);
        assert!(
            s.starts_with("run.json is valid: openai-chat at http://127.0.0.1:8000"),
            "{s}"
        );
        assert!(
            s.contains("1s warmup, then 3 stages (poisson arrivals)"),
            "{s}"
        );
        assert!(
            s.contains("closed-8 (8 in flight, 5s); rate-50 (50 req/s, 5s)"),
            "{s}"
        );
        assert!(s.contains("sweep-20-100 (20 → 100 req/s, 5s)"), "{s}");
        assert!(
            s.contains("chat 70% (2–4 turns, scripted); qa 30% (1 turn, pool, checked)"),
            "{s}"
        );
        assert!(
            s.contains("Thresholds: p99 ≤ 5000 ms, error rate ≤ 1%."),
            "{s}"
        );
        assert!(wrap(&s, 78).lines().all(|l| l.chars().count() <= 78));
    }
}
