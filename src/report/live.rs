//! The live view, rendered from one `Interval`: on a terminal, a status
//! block that is redrawn in place (cursor up over the last block, each line
//! cleared before it is written, the rest of the screen below cleared);
//! elsewhere (CI logs, pipes), one plain line per interval that a log keeps
//! and a script can parse. Rendering happens once per interval, off the
//! request path; the events sink does the writing, so a slow terminal never
//! holds up the parent. The block is kept under 80 columns: a line that
//! wrapped would throw off the count of lines to move back over.

use std::fmt::Write as _;

use crate::metrics::observe::Interval;
use crate::metrics::run::LATE_P99_NS;

/// How often the block is redrawn when `--live-interval` is longer.
pub(crate) const BLOCK_REFRESH_NS: u64 = 1_000_000_000;
/// Width of the progress bar, in characters.
const BAR: usize = 30;
/// Failure classes named in the block and on a line; the rest are summed.
const TOP_FAILURES: usize = 3;
/// Longest stage name shown before it is cut.
const STAGE_CHARS: usize = 24;

/// Which live view a run draws.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LiveView {
    /// `--quiet` or `--live-interval 0`: nothing.
    Off,
    /// A plain line every `--live-interval`.
    #[default]
    Lines,
    /// A block redrawn in place, on a terminal.
    Block,
}

impl LiveView {
    /// The view for a run and how often the parent hands it an interval
    /// (0: never). On a terminal the block is redrawn every second, or
    /// every `--live-interval` when that is shorter.
    pub(crate) fn choose(quiet: bool, interval_ns: u64, terminal: bool) -> (LiveView, u64) {
        match (quiet || interval_ns == 0, terminal) {
            (true, _) => (LiveView::Off, 0),
            (false, true) => (LiveView::Block, interval_ns.min(BLOCK_REFRESH_NS)),
            (false, false) => (LiveView::Lines, interval_ns),
        }
    }
}

/// Milliseconds of a percentile, `-` when nothing was recorded.
fn ms(ns: Option<u64>) -> String {
    ns.map_or("-".to_string(), |v| format!("{:.1}", v as f64 / 1e6))
}

fn per_s(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

/// The interval's failures, most frequent first: `http_503 2, reset 1`,
/// with the classes past the first few summed as `other`.
fn failures(i: &Interval<'_>) -> String {
    let mut named = i.failures.to_vec();
    named.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let mut out = String::new();
    for (k, (key, n)) in named.iter().enumerate().take(TOP_FAILURES) {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{key} {n}");
    }
    let rest: u64 = named.iter().skip(TOP_FAILURES).map(|(_, n)| n).sum();
    if rest > 0 {
        let _ = write!(out, ", other {rest}");
    }
    out
}

/// What held the generator back in the interval, if anything: the same
/// signs the report's generator health names for the whole run.
fn limiting(i: &Interval<'_>) -> Option<String> {
    let g = &i.generator;
    let mut why = Vec::new();
    for (name, n) in [
        ("ring_full", g.ring_full),
        ("held_back", g.held_back),
        ("waited_for_connection", g.waited_for_connection),
    ] {
        if n > 0 {
            why.push(format!("{name} +{n}"));
        }
    }
    if let Some(p99) = g.lateness_p99_ns.filter(|&p| p > LATE_P99_NS) {
        why.push(format!("send late p99 {:.1} ms", p99 as f64 / 1e6));
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// One plain progress line (no newline).
pub(crate) fn line(i: &Interval<'_>) -> String {
    let mut out = format!(
        "[{:>7.1}s] stage {:<10} {:>8.1} req/s {:>9.1} tok/s  in-flight {:>5}  p50 {:>7} ms  p99 {:>7} ms  ttft p50 {:>7} ms  p99 {:>7} ms  errors {}",
        i.elapsed_ns as f64 / 1e9,
        i.stage,
        per_s(i.completed, i.interval_ns),
        per_s(i.output_tokens, i.interval_ns),
        i.inflight,
        ms(i.e2e.p50),
        ms(i.e2e.p99),
        ms(i.ttft.p50),
        ms(i.ttft.p99),
        i.failed,
    );
    if i.failed > 0 {
        let _ = write!(out, " ({})", failures(i));
    }
    if let Some(why) = limiting(i) {
        let _ = write!(out, "  generator-limited ({why})");
    }
    out
}

/// `[#######-------]` for a share 0..=1.
fn bar(done: f64) -> String {
    let filled = ((done.clamp(0.0, 1.0) * BAR as f64).round() as usize).min(BAR);
    format!("[{}{}]", "#".repeat(filled), "-".repeat(BAR - filled))
}

fn secs(ns: u64) -> String {
    let s = ns as f64 / 1e9;
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02}s", (s / 60.0) as u64, (s as u64) % 60)
    }
}

/// The status block's lines (no newlines), each under 80 columns.
pub(crate) fn block(i: &Interval<'_>) -> Vec<String> {
    let p = &i.progress;
    let mut head = format!(
        "llmload {} {:>3.0}%  {}",
        bar(p.done),
        p.done * 100.0,
        secs(i.elapsed_ns)
    );
    if let Some(planned) = p.planned_ns {
        let _ = write!(head, " / {}", secs(planned));
    }
    if let Some((issued, planned)) = p.requests {
        let _ = write!(head, "  {issued}/{planned} req");
    }
    let name: String = i.stage.chars().take(STAGE_CHARS).collect();
    let stage = match i.stage_index {
        Some(k) => format!("stage {name} ({}/{})", k + 1, i.stages),
        None => format!("stage {name}"),
    };
    let mut lines = vec![
        head,
        format!(
            "{stage}  in flight {}  completed {}  failed {}",
            i.inflight, i.total_completed, i.total_failed
        ),
        format!(
            "last {}: {:.1} req/s  {:.1} tok/s  {} ok  {} failed",
            secs(i.interval_ns),
            per_s(i.completed, i.interval_ns),
            per_s(i.output_tokens, i.interval_ns),
            i.completed,
            i.failed
        ),
        format!(
            "  ttft p50 {} p99 {} ms   e2e p50 {} p99 {} ms",
            ms(i.ttft.p50),
            ms(i.ttft.p99),
            ms(i.e2e.p50),
            ms(i.e2e.p99)
        ),
    ];
    if i.failed > 0 {
        lines.push(format!("  failed: {}", failures(i)));
    }
    let g = &i.generator;
    let late = g
        .lateness_p99_ns
        .map_or("-".to_string(), |v| format!("{:.0}", v as f64 / 1e3));
    lines.push(format!(
        "generator: ring_full +{}  held_back +{}  waited +{}  late p99 {late} us",
        g.ring_full, g.held_back, g.waited_for_connection
    ));
    if let Some(why) = limiting(i) {
        lines.push(format!("  WARNING generator-limited: {why}"));
    }
    for l in &mut lines {
        if l.chars().count() > 79 {
            *l = l.chars().take(79).collect();
        }
    }
    lines
}

/// Writes `lines` over the `drawn` lines of the last block: back to the
/// start of its first line, each line cleared before it is written, and
/// what is below the new block cleared (the old one may have been longer).
pub(crate) fn redraw(drawn: usize, lines: &[String]) -> String {
    let mut out = String::new();
    if drawn > 0 {
        let _ = write!(out, "\r\x1b[{drawn}A");
    }
    for l in lines {
        out.push_str("\x1b[2K");
        out.push_str(l);
        out.push('\n');
    }
    out.push_str("\x1b[J");
    out
}

/// Takes the last block of `drawn` lines off the screen, leaving the
/// cursor where it began (before the final report is printed).
pub(crate) fn erase(drawn: usize) -> String {
    if drawn == 0 {
        return String::new();
    }
    format!("\r\x1b[{drawn}A\x1b[J")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::observe::{GeneratorDelta, Latency, Progress};

    const MS: u64 = 1_000_000;

    fn failures() -> Vec<(String, u64)> {
        vec![("http_503".to_string(), 3), ("reset".to_string(), 1)]
    }

    fn interval(failures: &[(String, u64)]) -> Interval<'_> {
        Interval {
            elapsed_ns: 15_000 * MS,
            interval_ns: 2_000 * MS,
            stage: "ramp",
            stage_index: Some(1),
            stages: 3,
            completed: 50,
            failed: 4,
            output_tokens: 1000,
            failures,
            total_completed: 400,
            total_failed: 9,
            inflight: 7,
            e2e: Latency {
                p50: Some(100 * MS),
                p99: Some(100 * MS),
            },
            ttft: Latency {
                p50: Some(20 * MS),
                p99: Some(20 * MS),
            },
            progress: Progress {
                done: 0.25,
                planned_ns: Some(60_000 * MS),
                requests: None,
            },
            generator: GeneratorDelta {
                ring_full: 0,
                held_back: 0,
                waited_for_connection: 0,
                lateness_p99_ns: Some(5_000),
            },
        }
    }

    #[test]
    fn the_view_follows_quiet_the_interval_and_the_terminal() {
        let s = 1_000_000_000;
        assert_eq!(LiveView::choose(true, 10 * s, true), (LiveView::Off, 0));
        assert_eq!(LiveView::choose(false, 0, true), (LiveView::Off, 0));
        assert_eq!(LiveView::choose(false, 10 * s, true), (LiveView::Block, s));
        assert_eq!(
            LiveView::choose(false, s / 4, true),
            (LiveView::Block, s / 4)
        );
        assert_eq!(
            LiveView::choose(false, 10 * s, false),
            (LiveView::Lines, 10 * s)
        );
    }

    #[test]
    fn a_line_has_rates_latencies_and_failures_by_class() {
        let f = failures();
        let l = line(&interval(&f));
        assert!(l.starts_with("[   15.0s] stage ramp "), "{l}");
        assert!(l.contains("    25.0 req/s"), "{l}");
        assert!(l.contains("    500.0 tok/s"), "{l}");
        assert!(l.contains("in-flight     7"), "{l}");
        assert!(l.contains("p50   100.0 ms"), "{l}");
        assert!(l.contains("ttft p50    20.0 ms"), "{l}");
        assert!(l.ends_with("errors 4 (http_503 3, reset 1)"), "{l}");
        assert!(!l.contains("generator-limited"), "{l}");
    }

    #[test]
    fn a_limiting_generator_is_named_on_the_line_and_in_the_block() {
        let f = failures();
        let mut i = interval(&f);
        i.generator.lateness_p99_ns = Some(30 * MS);
        i.generator.ring_full = 3;
        let l = line(&i);
        assert!(
            l.ends_with("generator-limited (ring_full +3, send late p99 30.0 ms)"),
            "{l}"
        );
        let b = block(&i);
        assert_eq!(
            b.last().unwrap(),
            "  WARNING generator-limited: ring_full +3, send late p99 30.0 ms"
        );
    }

    #[test]
    fn the_block_shows_progress_stage_rates_latencies_and_health() {
        let f = failures();
        let b = block(&interval(&f));
        assert_eq!(
            b,
            [
                "llmload [########----------------------]  25%  15.0s / 1m00s",
                "stage ramp (2/3)  in flight 7  completed 400  failed 9",
                "last 2.0s: 25.0 req/s  500.0 tok/s  50 ok  4 failed",
                "  ttft p50 20.0 p99 20.0 ms   e2e p50 100.0 p99 100.0 ms",
                "  failed: http_503 3, reset 1",
                "generator: ring_full +0  held_back +0  waited +0  late p99 5 us",
            ]
        );
        assert!(b.iter().all(|l| l.chars().count() < 80));
    }

    #[test]
    fn a_counted_plan_shows_requests_and_warmup_has_no_stage_number() {
        let f = failures();
        let mut i = interval(&f);
        i.stage = "warmup";
        i.stage_index = None;
        i.failed = 0;
        i.progress = Progress {
            done: 1.0,
            planned_ns: None,
            requests: Some((100, 100)),
        };
        let b = block(&i);
        assert_eq!(
            b[0],
            format!("llmload [{}] 100%  15.0s  100/100 req", "#".repeat(30))
        );
        assert!(b[1].starts_with("stage warmup  in flight"), "{}", b[1]);
        assert!(!b.iter().any(|l| l.contains("failed:")), "{b:?}");
    }

    #[test]
    fn long_stage_names_keep_the_block_narrow() {
        let f = failures();
        let name = "x".repeat(200);
        let mut i = interval(&f);
        i.stage = &name;
        assert!(block(&i).iter().all(|l| l.chars().count() < 80));
    }

    #[test]
    fn a_redraw_moves_up_over_the_last_block_and_clears_each_line() {
        let lines = ["a".to_string(), "b".to_string()];
        assert_eq!(redraw(0, &lines), "\x1b[2Ka\n\x1b[2Kb\n\x1b[J");
        assert_eq!(redraw(3, &lines), "\r\x1b[3A\x1b[2Ka\n\x1b[2Kb\n\x1b[J");
        assert_eq!(erase(2), "\r\x1b[2A\x1b[J");
        assert_eq!(erase(0), "");
    }
}
