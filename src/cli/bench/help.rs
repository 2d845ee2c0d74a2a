//! Defaults in `--help`, written once. A flag's doc comment names its
//! default by placeholder — `(default {TIMEOUT})` — and the help text argh
//! renders is filled from `config::profile::defaults` (and the built-in
//! endpoint's settings) before it is printed, so help cannot drift from
//! what a run does. argh wraps each description at compile time, so an
//! option whose text changed is re-wrapped here the way argh wraps; options
//! without a placeholder are left byte for byte as argh wrote them.

use super::build::builtin_server;
use crate::config::duration::format_duration;
use crate::config::profile::defaults;

/// argh's layout: two spaces, the flag names, descriptions from column 20,
/// lines up to 80 columns.
const INDENT: &str = "  ";
const DESCRIPTION_COLUMN: usize = 20;
const WIDTH: usize = 80;

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
    let mut out = String::with_capacity(help.len());
    let mut lines = help.split('\n').peekable();
    let mut first = true;
    while let Some(line) = lines.next() {
        let mut entry = vec![line];
        if is_entry_start(line) {
            while let Some(next) = lines.next_if(|l| is_continuation(l)) {
                entry.push(next);
            }
        }
        let text = entry.join("\n");
        let filled = fill(&text);
        if !first {
            out.push('\n');
        }
        first = false;
        if filled == text {
            out.push_str(&text);
        } else {
            let (name, description) = split_entry(&entry);
            out.push_str(&wrap(&name, &fill(&description)));
        }
    }
    out
}

fn is_entry_start(line: &str) -> bool {
    line.strip_prefix(INDENT)
        .is_some_and(|rest| rest.starts_with(|c: char| !c.is_whitespace()))
}

fn is_continuation(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > DESCRIPTION_COLUMN
        && b[..DESCRIPTION_COLUMN].iter().all(|c| *c == b' ')
        && b[DESCRIPTION_COLUMN] != b' '
}

/// An entry's flag names and its description as one line.
fn split_entry(entry: &[&str]) -> (String, String) {
    let first = entry[0];
    let (name, head) = match first.char_indices().nth(DESCRIPTION_COLUMN) {
        Some((i, _)) if first[..i].ends_with(' ') => (first[..i].trim(), &first[i..]),
        _ => (first.trim(), ""),
    };
    let words: Vec<&str> = std::iter::once(head)
        .chain(entry[1..].iter().map(|l| &l[DESCRIPTION_COLUMN..]))
        .filter(|s| !s.is_empty())
        .collect();
    (name.to_string(), words.join(" "))
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

/// One option entry laid out as argh lays it out (argh_shared's
/// `write_description`): names, then the description from column 20,
/// greedy word wrap at 80 columns.
fn wrap(name: &str, description: &str) -> String {
    let indent = " ".repeat(DESCRIPTION_COLUMN);
    let mut lines = Vec::new();
    let mut line = format!("{INDENT}{name}");
    if line.chars().count() < DESCRIPTION_COLUMN {
        let pad = DESCRIPTION_COLUMN - line.chars().count();
        line.push_str(&" ".repeat(pad));
    } else {
        lines.push(std::mem::replace(&mut line, indent.clone()));
    }
    let mut at_start = true;
    for word in description.split(' ') {
        if !at_start && line.chars().count() + word.chars().count() + 1 > WIDTH {
            lines.push(std::mem::replace(&mut line, indent.clone()));
            at_start = true;
        }
        if !at_start {
            line.push(' ');
        }
        line.push_str(word);
        at_start = false;
    }
    lines.push(line);
    lines.join("\n")
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

    /// Every option entry of `help`, as its lines.
    fn entries(help: &str) -> Vec<Vec<&str>> {
        let mut out: Vec<Vec<&str>> = Vec::new();
        for line in help.split('\n') {
            if is_entry_start(line) {
                out.push(vec![line]);
            } else if is_continuation(line)
                && let Some(e) = out.last_mut()
            {
                e.push(line);
            }
        }
        out
    }

    #[test]
    fn rewrapping_reproduces_argh_layout() {
        let raw = raw_help();
        let all = entries(&raw);
        assert!(all.len() > 40, "{raw}");
        // argh wraps its format string, where each brace is doubled, so
        // lines with braces break early; those are re-wrapped once filled.
        let plain: Vec<_> = all
            .into_iter()
            .filter(|e| !e.join("").contains('{'))
            .collect();
        assert!(plain.len() > 15);
        for e in plain {
            let (name, description) = split_entry(&e);
            assert_eq!(wrap(&name, &description), e.join("\n"));
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
            "(default 128)",
            "(default 300s)",
            "TCP connect timeout (default 10s)",
            "may finish (default 10s)",
            "(default 10s; 0 disables)",
            "(default openai-chat)",
            "(default poisson)",
            "(default sequential)",
            "(default x-request-id;",
            "(default on)",
            "(ttft 20ms, tpot 2ms)",
        ] {
            let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(want), "{want} not in:\n{help}");
        }
        assert_eq!(fill(&help), help, "every placeholder is filled");
        assert!(!help.contains("{CONNECT"), "{help}");
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
        for line in entries(&help).concat() {
            let fits = line.chars().count() <= WIDTH || !line.trim().contains(' ');
            assert!(fits, "{line}");
        }
    }

    #[test]
    fn fill_leaves_other_braces() {
        assert_eq!(fill(r#"e.g. '{"top_k": 20}'"#), r#"e.g. '{"top_k": 20}'"#);
        assert_eq!(fill("{NOT_A_DEFAULT} {TIMEOUT}"), "{NOT_A_DEFAULT} 300s");
        assert_eq!(fill("{"), "{");
    }
}
