//! The live view: plain lines when stderr is a pipe, one block redrawn in
//! place on a terminal (a pty from util-linux `script`), nothing under
//! `--quiet`.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

/// A short closed-loop run against `server` with live intervals of 400 ms.
fn live_args(url: &str) -> Vec<String> {
    [
        "bench",
        "--endpoint",
        url,
        "--model",
        "m",
        "--duration",
        "1500ms",
        "--warmup",
        "0s",
        "--concurrency",
        "2",
        "--max-tokens",
        "8",
        "--live-interval",
        "400ms",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The number before `unit` on a live line.
fn before(line: &str, unit: &str) -> Option<f64> {
    line.split(unit)
        .next()?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

#[test]
fn piped_runs_print_plain_lines_with_tokens_per_second_and_quiet_silences_them() {
    let server = Server::start(&["--ttft", "5ms", "--tpot", "1ms"]);
    let url = server.url();
    for quiet in [false, true] {
        let out = temp_dir("live");
        let mut cmd = Command::new(bin());
        cmd.args(live_args(&url))
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if quiet {
            cmd.arg("--quiet");
        }
        let run = wait_run(cmd.spawn().unwrap(), out, Duration::from_secs(30));
        run.assert_success();
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains(" req/s ") && l.contains(" tok/s "))
            .collect();
        assert!(!run.stderr.contains('\x1b'), "{}", run.stderr);
        if quiet {
            assert!(lines.is_empty(), "{}", run.stderr);
            assert!(!run.stdout.contains("generator health"), "{}", run.stdout);
            continue;
        }
        assert!(lines.len() >= 2, "{}", run.stderr);
        assert!(run.stdout.contains("generator health"), "{}", run.stdout);
        let mut busy = 0;
        for l in &lines {
            assert!(l.starts_with('['), "{l}");
            let req = before(l, " req/s").unwrap_or_else(|| panic!("{l}"));
            let tok = before(l, " tok/s").unwrap_or_else(|| panic!("{l}"));
            // Every reply is 8 tokens: the interval's tokens/s is 8 × its
            // requests/s (each printed to 0.1).
            assert!((tok - 8.0 * req).abs() <= 0.5, "{l}");
            assert!(l.contains("errors 0"), "{l}");
            busy += usize::from(req > 0.0);
        }
        assert!(busy >= 1, "{}", run.stderr);
    }
}

#[test]
fn on_a_terminal_one_block_is_redrawn_in_place_and_erased_before_the_report() {
    if !have("script") {
        eprintln!("skipped: util-linux `script` is not installed, so no pty to draw on");
        return;
    }
    let server = Server::start(&["--ttft", "5ms", "--tpot", "1ms"]);
    let out = temp_dir("live-tty");
    let mut args = live_args(&server.url());
    args.extend(["--out".to_string(), out.display().to_string()]);
    let cmd = std::iter::once(bin().to_string())
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ");
    let child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = wait_run(child, out, Duration::from_secs(30));
    run.assert_success();
    let screen = &run.stdout;
    let blocks: Vec<usize> = screen.match_indices("llmload [").map(|(i, _)| i).collect();
    assert!(blocks.len() >= 2, "{screen:?}");
    // No plain lines on a terminal.
    assert!(!screen.contains(" req/s  in-flight"), "{screen:?}");
    for (k, &at) in blocks.iter().enumerate() {
        let head = &screen[..at];
        assert!(head.ends_with("\x1b[2K"), "{screen:?}");
        if k == 0 {
            continue;
        }
        // Every block after the first moves back up over the one before it
        // (all its lines) instead of scrolling on.
        let prev = &screen[blocks[k - 1]..at];
        let drawn = prev.matches('\n').count();
        assert!(
            head.ends_with(&format!("\r\x1b[{drawn}A\x1b[2K")),
            "block {k} does not redraw the {drawn} lines before it: {prev:?}"
        );
    }
    // The last block is taken off the screen before the report is printed.
    let last = blocks[blocks.len() - 1];
    let drawn = screen[last..]
        .split("\x1b[J")
        .next()
        .unwrap()
        .matches('\n')
        .count();
    let erase = format!("\r\x1b[{drawn}A\x1b[J");
    let erased = screen[last..].find(&erase).map(|i| i + last);
    let report = screen.find("generator health");
    assert!(
        matches!((erased, report), (Some(e), Some(r)) if e < r),
        "{screen:?}"
    );
    assert_eq!(screen.matches(&erase).count(), 1, "{screen:?}");
}
