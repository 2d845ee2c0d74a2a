//! Defaults in `--help`, written once. Help text names a default by
//! placeholder — `(default {TIMEOUT})` — and the text is filled from the
//! typed constants the code itself uses (`config::profile::defaults`,
//! serve's and probe's, the built-in endpoint's) before it is printed, so
//! help cannot drift from what a command does. `bench` fills its own help
//! as it renders it (grouped by topic); in every other command's argh help
//! an option whose text had a placeholder is wrapped again once filled, in
//! argh's columns.

use crate::cli::bench::builtin_shown;
use crate::cli::{audit, probe, serve};
use crate::config::profile::defaults;

/// Every lookup of `{NAME}`s; no name may be in two (a test checks).
const LOOKUPS: [fn(&str) -> Option<String>; 5] = [
    defaults::shown,
    serve::defaults::shown,
    probe::defaults::shown,
    audit::args::defaults::shown,
    builtin_shown,
];

/// The text a `{NAME}` placeholder stands for.
fn default_text(name: &str) -> Option<String> {
    LOOKUPS.iter().find_map(|f| f(name))
}

/// `text` with each `{NAME}` that names a default replaced by it; other
/// braces (a JSON example, `{command_name}`) stay.
pub fn fill(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let known = after.find('}').and_then(|end| {
            let name = &after[..end];
            is_name(name)
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

/// Columns of an option in help: its name from 2, its text from 20, up to
/// 80 (argh's layout).
const NAME_COLUMN: usize = 2;
pub(crate) const TEXT_COLUMN: usize = 20;
pub(crate) const WIDTH: usize = 80;

/// argh's help with every known placeholder filled, each option whose text
/// had one wrapped again.
pub fn fill_help(help: &str) -> String {
    let lines: Vec<&str> = help.lines().collect();
    let mut out = String::with_capacity(help.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let continues = |l: &str| {
            l.len() > TEXT_COLUMN && l.get(..TEXT_COLUMN).is_some_and(|h| h.trim().is_empty())
        };
        if !line.starts_with("  -") {
            out.push_str(&fill(line));
            out.push('\n');
            i += 1;
            continue;
        }
        let more = lines[i + 1..].iter().take_while(|l| continues(l)).count();
        let entry = &lines[i..=i + more];
        i += more + 1;
        if !entry.iter().any(|l| l.contains('{')) {
            for l in entry {
                out.push_str(l);
                out.push('\n');
            }
            continue;
        }
        // A name too long for its column has the text start on the next line.
        let (name, first) = match line.get(..TEXT_COLUMN) {
            Some(head) if head.ends_with(' ') => (head.trim(), &line[TEXT_COLUMN..]),
            _ => (line.trim(), ""),
        };
        let text: Vec<&str> = std::iter::once(first)
            .chain(entry[1..].iter().map(|l| l.trim()))
            .collect();
        out.push_str(&option_line(name, &fill(&text.join(" "))));
    }
    if !help.ends_with('\n') {
        out.pop();
    }
    out
}

/// `  --name          text…` wrapped to the help's width; a name too long
/// for its column puts the text on the next line.
pub(crate) fn option_line(name: &str, text: &str) -> String {
    let mut out = format!("{:indent$}{name}", "", indent = NAME_COLUMN);
    let mut width = out.chars().count();
    if width + 1 > TEXT_COLUMN {
        out.push('\n');
        width = 0;
    }
    let mut line_start = true;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if !line_start && width + 1 + w > WIDTH {
            out.push('\n');
            width = 0;
            line_start = true;
        }
        if line_start {
            out.push_str(&" ".repeat(TEXT_COLUMN - width));
            width = TEXT_COLUMN;
        } else {
            out.push(' ');
            width += 1;
        }
        out.push_str(word);
        width += w;
        line_start = false;
    }
    out.push('\n');
    out
}

/// Whether `name` has a placeholder's shape: upper case and `_`.
fn is_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
}

/// Every `{NAME}` left in `text`.
#[cfg(test)]
pub(crate) fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices('{') {
        let rest = &text[i + 1..];
        if let Some(end) = rest.find('}')
            && is_name(&rest[..end])
        {
            found.push(&text[i..i + end + 2]);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use argh::FromArgs;

    use super::*;
    use crate::cli::Top;

    /// `llmload ARGS`'s help as the binary prints it.
    pub(crate) fn help_of(args: &[&str]) -> String {
        match Top::from_args(&["llmload"], args) {
            Err(early) if early.status.is_ok() => fill_help(&early.output),
            _ => panic!("{args:?} is not an early exit"),
        }
    }

    /// Every command's help, as printed.
    fn every_help() -> Vec<(String, String)> {
        let commands: &[&[&str]] = &[
            &["--help"],
            &["bench", "--help"],
            &["audit", "output-caching", "--help"],
            &["benchmark", "--help"],
            &["compare", "--help"],
            &["report", "--help"],
            &["merge", "--help"],
            &["serve", "--help"],
            &["init", "--help"],
            &["validate", "--help"],
            &["validate-yaml", "--help"],
            &["probe", "--help"],
            &["info", "--help"],
            &["eval", "--help"],
            &["datasets", "--help"],
        ];
        commands.iter().map(|c| (c.join(" "), help_of(c))).collect()
    }

    #[test]
    fn placeholders_are_found() {
        assert_eq!(
            placeholders(r#"a {B_C} {d} {} {"x": 1} {E} {command_name}"#),
            ["{B_C}", "{E}"]
        );
    }

    #[test]
    fn no_help_leaves_a_placeholder() {
        for (cmd, help) in every_help() {
            assert_eq!(placeholders(&help), Vec::<&str>::new(), "{cmd}:\n{help}");
        }
    }

    #[test]
    fn filled_options_are_wrapped_again_and_others_left_alone() {
        let help = "Options:\n  --ttft            time to first token (default\n                    {TIMEOUT}) and more\n  --x               plain\n                    text\n\nNotes:\n  {TIMEOUT}\n";
        assert_eq!(
            fill_help(help),
            "Options:\n  --ttft            time to first token (default 300s) and more\n  --x               plain\n                    text\n\nNotes:\n  300s\n"
        );
        let long = "  --tls-no-resumption\n                    a {TIMEOUT}";
        assert_eq!(
            fill_help(long),
            "  --tls-no-resumption\n                    a 300s"
        );
    }

    #[test]
    fn options_wrap_at_the_text_column() {
        assert_eq!(option_line("--io", "a b"), "  --io              a b\n");
        assert_eq!(
            option_line("--server-metrics-interval", "x"),
            "  --server-metrics-interval\n                    x\n"
        );
        let long = option_line("--a", &"word ".repeat(30));
        assert!(long.lines().all(|l| l.chars().count() <= WIDTH), "{long}");
        assert!(
            long.lines()
                .skip(1)
                .all(|l| l.starts_with(&" ".repeat(TEXT_COLUMN)))
        );
    }

    #[test]
    fn fill_leaves_other_braces() {
        assert_eq!(fill(r#"e.g. '{"top_k": 20}'"#), r#"e.g. '{"top_k": 20}'"#);
        assert_eq!(fill("{NOT_A_DEFAULT} {TIMEOUT}"), "{NOT_A_DEFAULT} 300s");
        assert_eq!(fill("{"), "{");
    }

    /// A placeholder names one constant: no name is in two lookups.
    #[test]
    fn each_name_has_one_meaning() {
        let names = [
            defaults::NAMES,
            serve::defaults::NAMES,
            probe::defaults::NAMES,
            audit::args::defaults::NAMES,
            crate::cli::bench::BUILTIN_NAMES,
        ];
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                for n in *a {
                    assert!(!b.contains(n), "{n} names two defaults");
                }
            }
        }
    }

    /// A default written as a literal could drift: in the help of the
    /// commands with typed defaults, each "(default" is followed by a
    /// placeholder, or is prose about a derived default ("(default: …").
    #[test]
    fn defaults_in_help_are_placeholders() {
        for cmd in [&["serve"][..], &["probe"], &["audit", "output-caching"]] {
            let args: Vec<&str> = cmd.iter().copied().chain(["--help"]).collect();
            let raw = match Top::from_args(&["llmload"], &args) {
                Err(early) => early.output,
                Ok(_) => panic!("--help is an early exit"),
            };
            // The audit's help ends with bench's, rendered and filled.
            let own = raw.split("Bench options").next().unwrap_or(&raw);
            let flat = own.split_whitespace().collect::<Vec<_>>().join(" ");
            for (i, _) in flat.match_indices("default") {
                let after = &flat[i + "default".len()..];
                assert!(
                    after.starts_with(" {") || after.starts_with(':') || after.starts_with(" path"),
                    "{cmd:?}: a literal default at: {}",
                    &flat[i.saturating_sub(40)..(i + 40).min(flat.len())]
                );
            }
        }
    }
}
