//! `llmload validate FILE`: load and check a run profile without sending a
//! request, then say in one paragraph what the run would do — so a typo in a
//! CI profile fails in a second instead of after a ten-minute run. Every
//! problem is printed (`FILE: json.path: message`), not just the first; the
//! endpoint's host is resolved but never contacted.

use std::path::PathBuf;

use argh::FromArgs;

use crate::config::duration::format_duration;
use crate::config::profile::{Content, Profile, Stage, StageLoad, defaults};

/// Check a run profile and summarize the run it describes.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "validate")]
pub struct ValidateArgs {
    /// the profile, e.g. run.json
    #[argh(positional)]
    pub path: PathBuf,
}

/// Validates the profile; returns 0 when it can run, 1 otherwise.
pub fn run(args: ValidateArgs) -> i32 {
    let label = args.path.display().to_string();
    let profile = match Profile::load(&args.path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let errors = profile.validate();
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("{label}: {e}");
        }
        return 1;
    }
    println!("{}", wrap(&summary(&label, &profile), 78));
    0
}

/// The run a valid profile describes, as one paragraph.
pub fn summary(label: &str, p: &Profile) -> String {
    let mut s = format!(
        "{label} is valid: {} at {}, model {}, {}, max_tokens {}.",
        p.api.as_deref().unwrap_or(defaults::API),
        p.endpoint.as_deref().unwrap_or("the built-in endpoint"),
        p.model.as_deref().unwrap_or("from /v1/models"),
        if p.stream.unwrap_or(defaults::STREAM) {
            "streaming"
        } else {
            "non-streaming"
        },
        p.max_tokens.unwrap_or(defaults::MAX_TOKENS),
    );
    let stages = p.stages().unwrap_or_default();
    let open = stages
        .iter()
        .any(|st| matches!(st.load, StageLoad::Open { .. } | StageLoad::Ramp { .. }));
    let warmup = p.warmup.map_or(defaults::WARMUP, |w| w.0);
    if !warmup.is_zero() {
        s += &format!(" {} warmup, then", format_duration(warmup));
    }
    s += &format!(
        " {} stage{}",
        stages.len(),
        if stages.len() == 1 { "" } else { "s" }
    );
    if open {
        s += &format!(
            " ({} arrivals)",
            p.arrival().map(|a| a.name()).unwrap_or("poisson")
        );
    }
    let list: Vec<String> = stages.iter().map(describe_stage).collect();
    s += &format!(": {}.", list.join("; "));

    let scenarios = p.scenarios().unwrap_or_default();
    if p.scenarios.is_some() {
        let total: f64 = scenarios.iter().map(|sc| sc.weight).sum();
        let list: Vec<String> = scenarios
            .iter()
            .map(|sc| {
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
                let checked = if sc.spec.checks.is_some() {
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

    let mut limits = Vec::new();
    if let Some(t) = &p.thresholds {
        let ms = |name: &str, v: Option<f64>, limits: &mut Vec<String>| {
            if let Some(x) = v.filter(|x| *x > 0.0) {
                limits.push(format!("{name} ≤ {x} ms"));
            }
        };
        ms("TTFT p95", t.ttft_p95_ms, &mut limits);
        ms("p95", t.p95_ms, &mut limits);
        ms("p99", t.p99_ms, &mut limits);
        if let Some(e) = t.error_rate {
            limits.push(format!("error rate ≤ {}", percent(e)));
        }
        if let Some(r) = t.min_rps.filter(|r| *r > 0.0) {
            limits.push(format!("≥ {r} req/s"));
        }
        if !limits.is_empty() && t.abort_on_fail == Some(true) {
            limits.push("abort after the first stage that fails".to_string());
        }
    }
    if limits.is_empty() {
        s += " No thresholds.";
    } else {
        s += &format!(" Thresholds: {}.", limits.join(", "));
    }
    s
}

fn describe_stage(st: &Stage) -> String {
    let load = match st.load {
        StageLoad::Offline => "offline (every request due at the start)".to_string(),
        StageLoad::Closed { concurrency } => format!("{concurrency} in flight"),
        StageLoad::Open { rate } => format!("{rate} req/s"),
        StageLoad::Ramp { from, to } => format!("{from} → {to} req/s"),
    };
    let length = match (st.duration, st.requests) {
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
        let s = summary("run.json", &Profile::example());
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
