//! report.txt's goodput lines, the headline under `--metrics-preset` and
//! the table of every tool's definitions. Apart from `text.rs` so that the
//! report's layout and these additions, which read optional parts of the
//! summary, change independently.

use std::fmt::Write;

use super::fmt::{Whole, num};
use super::summary::Scenario;
use super::summary::definitions::{Definitions, Headline, Stat};
use super::summary::goodput::Goodput;

fn n(v: f64) -> String {
    num(v, 4, Whole::Bare)
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".to_string(), n)
}

/// `goodput     12.30 req/s, 4567.0 tok/s, SLO attainment 97.5 % (ttft ≤ 200 ms)`.
pub(crate) fn goodput_line(o: &mut String, label: &str, g: &Goodput) {
    let attainment = g
        .attainment_pct
        .map_or("-".to_string(), |p| format!("{p:.1} %"));
    let _ = writeln!(
        o,
        "{label:<12}{:.2} req/s, {:.1} tok/s, SLO attainment {attainment} ({}){}",
        g.requests_per_s,
        g.output_tokens_per_s,
        g.bounds(),
        missed(g)
    );
}

/// `; missed ttft 3, e2e 1` when any successful request missed a bound.
fn missed(g: &Goodput) -> String {
    let list: Vec<String> = [
        ("ttft", g.missed_ttft),
        ("tpot", g.missed_tpot),
        ("e2e", g.missed_e2e),
    ]
    .into_iter()
    .filter(|(_, k)| *k > 0)
    .map(|(name, k)| format!("{name} {k}"))
    .collect();
    if list.is_empty() {
        String::new()
    } else {
        format!("; missed {}", list.join(", "))
    }
}

/// One goodput line per scenario that has goodput (below a scenario table).
pub(crate) fn scenario_goodput(o: &mut String, scenarios: &[Scenario]) {
    for sc in scenarios {
        if let Some(g) = &sc.numbers.goodput {
            goodput_line(o, &format!("  {}", sc.name), g);
        }
    }
}

/// The run's headline under another tool's definitions, above our own
/// numbers; nothing for `llmload`, whose numbers follow anyway.
pub(crate) fn headline(o: &mut String, h: &Headline) {
    if h.preset == "llmload" {
        return;
    }
    let _ = writeln!(
        o,
        "headline: {} definitions (--metrics-preset; the tables below keep llmload's)",
        h.preset
    );
    let _ = writeln!(
        o,
        "throughput  {} req/s  {} output tok/s",
        opt(h.requests_per_s),
        opt(h.output_tokens_per_s)
    );
    let _ = writeln!(o, "{:<12}{:>10}{:>10}{:>10}", "ms", "mean", "p50", "p99");
    for (name, s) in [
        ("ttft", &h.ttft_ms),
        ("tpot", &h.tpot_ms),
        ("itl", &h.itl_ms),
        ("e2e", &h.e2e_ms),
    ] {
        stat_row(o, name, s);
    }
    o.push('\n');
}

fn stat_row(o: &mut String, name: &str, s: &Stat) {
    let _ = writeln!(
        o,
        "{name:<12}{:>10}{:>10}{:>10}",
        opt(s.mean),
        opt(s.p50),
        opt(s.p99)
    );
}

/// The table: a row per metric, a column per tool, then how each tool
/// counts, one line per tool and metric family.
pub(crate) fn table(o: &mut String, d: &Definitions) {
    let _ = writeln!(
        o,
        "\nDefinitions: the same run under each tool's rules (headline: {})",
        d.preset
    );
    let _ = write!(o, "{:<26}", "");
    for t in &d.tools {
        let _ = write!(o, "{t:>10}");
    }
    o.push('\n');
    for r in &d.rows {
        let _ = write!(o, "{:<26}", r.label);
        for v in &r.values {
            let _ = write!(o, "{:>10}", opt(*v));
        }
        o.push('\n');
    }
    let _ = writeln!(o, "how each tool counts (DESIGN.md has every cell):");
    for (col, tool) in d.tools.iter().enumerate() {
        for key in [
            "requests_counted",
            "ttft_p50_ms",
            "tpot_p50_ms",
            "itl_p99_ms",
            "e2e_p99_ms",
            "requests_per_s",
            "output_tokens_per_s",
        ] {
            let Some(r) = d.rows.iter().find(|r| r.metric == key) else {
                continue;
            };
            if let Some(how) = r.how.get(col) {
                let family = key.split('_').next().unwrap_or(key);
                let family = match key {
                    "requests_per_s" => "req/s",
                    "output_tokens_per_s" => "tok/s",
                    "requests_counted" => "requests",
                    _ => family,
                };
                let _ = writeln!(o, "  {tool:<9}{family:<9}{how}");
            }
        }
    }
}
