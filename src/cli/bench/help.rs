//! Defaults in `--help`, written once. A flag's doc comment names its
//! default by placeholder — `(default {TIMEOUT})` — and the help text argh
//! renders is filled from `config::profile::defaults` (and the built-in
//! endpoint's settings) before it is printed, so help cannot drift from
//! what a run does. Filled in place: argh wrapped each line counting the
//! placeholder (its braces doubled), so a filled line is no wider than argh
//! made it, at most a ragged edge shorter. (The exit statuses come from
//! `BenchArgs`'s `error_code`s and are checked here too.)

use super::build::builtin_server;
use crate::config::duration::format_duration;
use crate::config::profile::defaults;

/// The text a `{NAME}` placeholder stands for.
fn default_text(name: &str) -> Option<String> {
    match name {
        "BUILTIN_TTFT" => Some(format_duration(builtin_server().ttft)),
        "BUILTIN_TPOT" => Some(format_duration(builtin_server().tpot)),
        _ => defaults::shown(name),
    }
}

/// argh's help output with every known `{NAME}` placeholder filled in.
pub fn with_defaults(help: &str) -> String {
    fill(help)
}

/// `text` with each `{NAME}` that names a default replaced by it; other
/// braces (a JSON example) stay.
fn fill(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let known = after.find('}').and_then(|end| {
            let name = &after[..end];
            let is_name =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
            is_name
                .then(|| default_text(name))
                .flatten()
                .map(|v| (v, end))
        });
        match known {
            Some((value, end)) => {
                out.push_str(&value);
                rest = &after[end + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use argh::FromArgs;

    use super::*;
    use crate::cli::bench::BenchArgs;

    /// `bench --help` as argh renders it, placeholders unfilled.
    fn raw_help() -> String {
        match BenchArgs::from_args(&["llmload", "bench"], &["--help"]) {
            Err(early) if early.status.is_ok() => early.output,
            _ => panic!("--help is an early exit"),
        }
    }

    #[test]
    fn help_shows_every_default_from_one_place() {
        let raw = raw_help();
        let help = with_defaults(&raw);
        for want in [
            "(default 64)",
            "(default 1024;",
            "(default 10s unless",
            "(offline default 1000)",
            "(default 0s)",
            "(default 0):",
            "(default 128;",
            "with --preset mlperf 1024)",
            "(default true)",
            "(default 300s)",
            "the TLS handshake (default 10s)",
            "(default true); false opens",
            "before they are aborted (default 10s)",
            "(default 10s; 0 disables)",
            "(default openai-chat)",
            "(default poisson)",
            "(default sequential;",
            "(default x-request-id;",
            "(default on;",
            "(ttft 20ms, tpot 2ms)",
        ] {
            let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(want), "{want} not in:\n{help}");
        }
        assert_eq!(
            placeholders(&help),
            Vec::<&str>::new(),
            "unfilled in:\n{help}"
        );
        // A default written as a literal could drift: each "(default" is a
        // placeholder, or prose about a derived default ("(default: …").
        let flat = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        for (i, _) in flat.match_indices("default") {
            let after = &flat[i + "default".len()..];
            assert!(
                after.starts_with(" {") || after.starts_with(':') || after.starts_with(" path"),
                "a literal default at: {}",
                &flat[i.saturating_sub(40)..(i + 40).min(flat.len())]
            );
        }
        // Filling never widens a line past argh's 80 columns.
        for line in help.lines().filter(|l| l.starts_with("  ")) {
            let fits = line.chars().count() <= 80 || !line.trim().contains(' ');
            assert!(fits, "{line}");
        }
    }

    /// Every `{NAME}` (upper case and `_`) left in `text`.
    fn placeholders(text: &str) -> Vec<&str> {
        let mut found = Vec::new();
        for (i, _) in text.match_indices('{') {
            let rest = &text[i + 1..];
            if let Some(end) = rest.find('}') {
                let name = &rest[..end];
                if !name.is_empty() && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
                    found.push(&text[i..i + end + 2]);
                }
            }
        }
        found
    }

    #[test]
    fn placeholders_are_found() {
        assert_eq!(
            placeholders("a {B_C} {d} {} {\"x\": 1} {E}"),
            ["{B_C}", "{E}"]
        );
    }

    #[test]
    fn help_lists_every_exit_status() {
        let help = with_defaults(&raw_help());
        let codes = help
            .split("Error codes:")
            .nth(1)
            .expect("an exit status section");
        for want in [
            "0 the run is complete and every threshold passed",
            "1 bad usage or configuration",
            "2 a threshold failed",
            "3 the run is incomplete",
            "4 some results could not be written",
            "130 stopped by SIGINT, SIGTERM or SIGHUP",
        ] {
            assert!(codes.contains(want), "{want} not in:\n{codes}");
        }
        assert!(help.contains("the first of 130, 4, 3, 2, 1"), "{help}");
    }

    #[test]
    fn fill_leaves_other_braces() {
        assert_eq!(fill(r#"e.g. '{"top_k": 20}'"#), r#"e.g. '{"top_k": 20}'"#);
        assert_eq!(fill("{NOT_A_DEFAULT} {TIMEOUT}"), "{NOT_A_DEFAULT} 300s");
        assert_eq!(fill("{"), "{");
    }
}
