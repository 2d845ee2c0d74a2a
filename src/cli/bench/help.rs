//! `bench --help` and the settings reference (`docs/guide/settings.md`),
//! both rendered from the settings' declarations (`config::settings`):
//! grouped by topic, each default filled in from its typed constant
//! (`cli::help::fill`). argh still parses and decides what asks for help;
//! of its text only the description, the examples, the note and the exit
//! statuses are kept.

use crate::cli::help::{fill, option_line};
use crate::config::settings::{self, Setting};

/// `bench`'s help, from argh's (`argh_help`): its usage shortened, its
/// option list replaced by the declarations grouped by topic.
pub(super) fn render(argh_help: &str) -> String {
    let usage = argh_help.lines().next().unwrap_or("Usage: llmload bench");
    let command = usage.split(" [").next().unwrap_or(usage);
    let body = argh_help.split_once("\n\n").map_or("", |(_, b)| b);
    let (description, tail) = match body.split_once("\nOptions:\n") {
        Some((d, rest)) => (d, rest.split_once("\n\n").map_or("", |(_, t)| t)),
        None => (body, ""),
    };
    let mut out = format!("{command} [options]\n\n{}\n\n", description.trim_end());
    out.push_str(&options());
    out.push_str(&option_line("--help, help", "display usage information"));
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(tail);
    }
    out
}

/// Every setting's flag with its help, a section per topic, defaults
/// filled in (also the bench part of `audit output-caching --help`).
pub(crate) fn options() -> String {
    let mut out = String::new();
    let mut group = None;
    for s in settings::by_topic()
        .into_iter()
        .filter(|s| s.flag.is_some())
    {
        if group != Some(s.group) {
            if group.is_some() {
                out.push('\n');
            }
            out.push_str(s.group.heading());
            out.push_str(":\n");
            group = Some(s.group);
        }
        out.push_str(&option_line(&s.flag_name(), &help_text(s)));
    }
    out
}

/// A setting's help on one line, defaults filled in; a default the text
/// does not name is added at its end.
fn help_text(s: &Setting) -> String {
    let mut text = s.help_line();
    if let Some(d) = &s.default
        && !s.switch
        && !text.contains(&format!("{{{}}}", d.name))
    {
        text.push_str(&format!(" (default {})", d.text()));
    }
    fill(&text)
}

/// Where the settings reference lives, from the repository's root.
#[cfg(test)]
const REFERENCE: &str = "docs/guide/settings.md";

/// The settings reference: every setting's flag, profile field, default
/// and help, a table per topic.
#[cfg(test)]
fn reference() -> String {
    let mut out = String::from(
        "# Settings reference\n\n\
         Every `llmload bench` flag and every top-level field of a run profile\n\
         (`llmload bench --profile run.json`; `llmload init --full` writes one\n\
         with every field), by topic. A flag given on the command line overrides\n\
         the profile's field. Durations are written `250ms`, `30s`, `1.5m` (or a\n\
         number of seconds in a profile), sizes `4MiB`, `512KiB` or a number of bytes.\n\n\
         This page is generated from the settings' declarations\n\
         (`src/config/settings/table.rs`); `LLMLOAD_BLESS=1 cargo test settings_reference`\n\
         writes it again after a change.\n",
    );
    let mut group = None;
    for s in settings::by_topic() {
        if group != Some(s.group) {
            out.push_str(&format!(
                "\n## {}\n\n| flag | profile field | default | what it does |\n| --- | --- | --- | --- |\n",
                s.group.heading()
            ));
            group = Some(s.group);
        }
        let code = |t: &str| {
            if t.is_empty() {
                String::new()
            } else {
                format!("`{t}`")
            }
        };
        let default = s
            .default
            .as_ref()
            .map_or(String::new(), |d| code(&d.text()));
        let help = fill(&s.help_line())
            .replace('|', "\\|")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        out.push_str(&format!(
            "| {} | {} | {} | {help} |\n",
            code(&s.flag_name()),
            code(s.field.unwrap_or("")),
            default,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::cli::help::{WIDTH, placeholders};
    use crate::config::profile::Profile;
    use crate::config::settings::SETTINGS;

    /// `bench --help` as the binary prints it.
    fn help() -> String {
        let args = super::super::BenchArgs::from_args(&["llmload", "bench"], &["--help"]);
        match args {
            Err(early) if early.status.is_ok() => early.output,
            _ => panic!("--help is an early exit"),
        }
    }

    use argh::FromArgs;

    #[test]
    fn help_shows_every_default_from_one_place() {
        let help = help();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
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
            "(default true;",
            "(ttft 20ms, tpot 2ms)",
            "(default 4MiB)",
            "default auto, or $LLMLOAD_IO)",
        ] {
            assert!(flat.contains(want), "{want} not in:\n{help}");
        }
        assert_eq!(
            placeholders(&help),
            Vec::<&str>::new(),
            "unfilled in:\n{help}"
        );
        // Within the columns argh lays other commands' help out in (an
        // example is printed as written).
        let options = help.split("Examples:").next().unwrap();
        for line in options.lines().filter(|l| l.starts_with("  ")) {
            let fits = line.chars().count() <= WIDTH || !line.trim().contains(' ');
            assert!(fits, "{line}");
        }
    }

    /// Every flag is there once, under a topic, with its default where it
    /// has one; topics come in their order, each once.
    #[test]
    fn help_groups_every_flag_by_topic() {
        let help = help();
        for s in SETTINGS.iter().filter(|s| s.flag.is_some()) {
            let name = format!("\n  {}", s.flag_name());
            let at = help
                .find(&format!("{name} "))
                .or_else(|| help.find(&format!("{name}\n")));
            let at = at.unwrap_or_else(|| panic!("{} missing:\n{help}", s.flag_name()));
            let heading = format!("\n{}:\n", s.group.heading());
            let section = help.find(&heading).expect("its topic's heading");
            assert!(section < at, "{} before its topic", s.flag_name());
            assert_eq!(
                help.matches(&format!("{name} ")).count()
                    + help.matches(&format!("{name}\n")).count(),
                1
            );
            if let (Some(d), false) = (&s.default, s.switch) {
                let entry = &help[at..];
                let end = entry[1..].find("\n  --").map_or(entry.len(), |i| i + 1);
                let flat = entry[..end]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                let want = d.text();
                assert!(
                    flat.contains(&want),
                    "{}: no default {want} in {flat}",
                    s.flag_name()
                );
            }
        }
        let order: Vec<usize> = settings::Group::ALL
            .iter()
            .map(|g| {
                help.find(&format!("\n{}:\n", g.heading()))
                    .expect("every topic has a flag")
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{help}");
        let entries: Vec<&str> = help.lines().filter(|l| l.starts_with("  --")).collect();
        let stream = entries
            .iter()
            .position(|l| l.starts_with("  --stream "))
            .unwrap();
        assert!(entries[stream + 1].starts_with("  --no-stream "), "{help}");
    }

    #[test]
    fn help_ends_with_examples_and_every_exit_status() {
        let help = help();
        assert!(
            help.starts_with(
                "Usage: llmload bench [options]\n\nBenchmark an endpoint (with no --endpoint: the built-in one).\n\nProfiles:\n"
            ),
            "{help}"
        );
        let examples = help.find("Examples:\n  llmload bench\n").expect("examples");
        assert!(help.find("Profiles:") < Some(examples));
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
        assert_eq!(help.matches("--help").count(), 1);
    }

    /// A default written as a literal could drift: each "(default" in a
    /// declaration is a placeholder, or prose about a derived default
    /// ("(default: …"), or the flag's own default added by `help_text`.
    #[test]
    fn declared_help_writes_no_literal_default() {
        for s in SETTINGS {
            let flat = s.help_line();
            for (i, _) in flat.match_indices("default") {
                let after = &flat[i + "default".len()..];
                assert!(
                    after.starts_with(" {") || after.starts_with(':') || after.starts_with(" path"),
                    "{}: a literal default at: {}",
                    s.flag_name(),
                    &flat[i.saturating_sub(40)..(i + 40).min(flat.len())]
                );
            }
        }
    }

    /// `docs/guide/settings.md` is the generated reference; with
    /// `LLMLOAD_BLESS=1` this writes it instead of comparing.
    #[test]
    fn settings_reference_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(REFERENCE);
        let want = reference();
        if std::env::var_os("LLMLOAD_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{REFERENCE} differs from the settings' declarations; write it again with \
             LLMLOAD_BLESS=1 cargo test --lib settings_reference"
        );
    }

    /// Every setting is in the reference, with its default.
    #[test]
    fn the_reference_has_a_row_per_setting() {
        let text = reference();
        for s in SETTINGS {
            let key = match (s.flag, s.field) {
                (Some(_), _) => format!("| `{}` |", s.flag_name()),
                (None, Some(f)) => format!("|  | `{f}` |"),
                (None, None) => unreachable!("a setting is a flag or a field"),
            };
            let row = text
                .lines()
                .find(|l| l.starts_with(&key))
                .unwrap_or_else(|| panic!("no row {key}"));
            if let Some(d) = &s.default {
                assert!(row.contains(&format!("| `{}` |", d.text())), "{row}");
            }
        }
        assert_eq!(placeholders(&text), Vec::<&str>::new());
    }

    /// Every profile field is in `init --full` (at its default, where it
    /// has one and no example of its own) and in the summary's `config`
    /// (but `endpoints`, which `endpoint`'s comma list says).
    #[test]
    fn every_field_is_in_init_full_and_the_config_block() {
        let full: Value = serde_json::from_str(&Profile::full().to_json(true)).unwrap();
        let defaults = serde_json::to_value(Profile::with_defaults()).unwrap();
        let cfg =
            crate::config::resolve::resolve(Profile::default()).unwrap_or_else(|e| panic!("{e:?}"));
        let config = cfg.to_json(std::path::Path::new("out"), "http://h:1/v1", "m", true);
        for s in SETTINGS {
            let Some(field) = s.field else { continue };
            assert!(full.get(field).is_some(), "{field} not in init --full");
            if s.default.is_some() && !matches!(field, "endpoint" | "concurrency") {
                assert_eq!(
                    full[field], defaults[field],
                    "{field}: init --full is not its default"
                );
            }
            if field != "endpoints" {
                assert!(
                    config.get(field).is_some(),
                    "{field} not in the config block: {config}"
                );
            }
        }
    }
}
