//! MLPerf Inference Endpoint's command-line spellings that argh cannot
//! express, turned into ours before argh reads the line: `-v`/`-vv`
//! (`--verbose`) anywhere, which its launcher takes before or after the
//! subcommand, and `-h` for `--help`. Rewriting the words keeps one parser
//! (argh) and one help text per command; the cost is that a rewrite must
//! never touch a word that is a flag's value, so the value-taking flags that
//! may hold free text are skipped over.

/// The commands MLPerf's CLI has, where a `-v` after the subcommand is its
/// launcher's verbosity, not a flag of the command.
const MLPERF_COMMANDS: &[&str] = &[
    "benchmark",
    "probe",
    "validate-yaml",
    "init",
    "info",
    "eval",
];

/// Flags whose next word is free text (a prompt, a key), never rewritten.
const FREE_TEXT: &[&str] = &["--prompt", "--api-key", "--header", "-H"];

/// Whether `word` is a verbosity flag of MLPerf's launcher: `-v`, `-vv`, …,
/// or `--verbose`.
pub(crate) fn is_verbosity(word: &str) -> bool {
    word == "--verbose"
        || word
            .strip_prefix('-')
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b == b'v'))
}

/// The command line with MLPerf's spellings made ours: verbosity flags
/// dropped (before the subcommand for every command; anywhere for
/// MLPerf's commands), `-h` read as `--help`. Words after `--` stay as
/// they are.
pub fn normalize(args: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut command: Option<&str> = None;
    let mut free_text_next = false;
    let mut ended = false;
    for &word in args {
        if ended || free_text_next {
            free_text_next = false;
            out.push(word.to_string());
            continue;
        }
        if word == "--" {
            ended = true;
            out.push(word.to_string());
            continue;
        }
        let verbosity_here = command.is_none_or(|c| MLPERF_COMMANDS.contains(&c));
        if verbosity_here && is_verbosity(word) {
            continue;
        }
        if word == "-h" {
            out.push("--help".to_string());
            continue;
        }
        if command.is_none() && !word.starts_with('-') {
            command = Some(word);
        }
        free_text_next = FREE_TEXT.contains(&word);
        out.push(word.to_string());
    }
    out
}

/// Whether a command line (already normalized) is an MLPerf-mode one:
/// `benchmark`, `validate-yaml`, `eval`, `probe` with one of MLPerf's probe
/// flags, or `init` with one of MLPerf's template names. These answer
/// with MLPerf's exit statuses.
pub fn is_mlperf(args: &[&str]) -> bool {
    match args.first() {
        Some(&("benchmark" | "validate-yaml" | "eval")) => true,
        Some(&"probe") => args[1..].iter().any(|a| {
            let flag = a.split('=').next().unwrap_or(a);
            crate::cli::probe::MLPERF_FLAGS.contains(&flag)
        }),
        Some(&"init") => args[1..]
            .iter()
            .any(|a| crate::cli::init::is_mlperf_name(a)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(line: &str) -> String {
        let words: Vec<&str> = line.split_whitespace().collect();
        normalize(&words).join(" ")
    }

    #[test]
    fn verbosity_is_dropped_before_and_after_mlperf_subcommands() {
        assert_eq!(
            norm("-v benchmark offline --model m"),
            "benchmark offline --model m"
        );
        assert_eq!(norm("-vv info"), "info");
        assert_eq!(norm("--verbose probe --endpoints u"), "probe --endpoints u");
        assert_eq!(
            norm("benchmark online --model m -v --report-dir r -vvv"),
            "benchmark online --model m --report-dir r"
        );
        // Not one of MLPerf's commands: a trailing -v is the command's own.
        assert_eq!(norm("-v bench -v"), "bench -v");
        // A prompt is text, and words after `--` are never touched.
        assert_eq!(
            norm("probe --endpoints u --prompt -v -v"),
            "probe --endpoints u --prompt -v"
        );
        assert_eq!(norm("init -- -v"), "init -- -v");
        assert_eq!(norm("-vx info"), "-vx info");
    }

    #[test]
    fn short_help_is_long_help() {
        assert_eq!(norm("-h"), "--help");
        assert_eq!(norm("benchmark offline -h"), "benchmark offline --help");
        assert_eq!(norm("bench -h"), "bench --help");
    }

    #[test]
    fn mlperf_mode_is_told_by_command_and_flags() {
        let yes = |l: &str| is_mlperf(&l.split_whitespace().collect::<Vec<_>>());
        assert!(yes("benchmark offline"));
        assert!(yes("validate-yaml -c x.yaml"));
        assert!(yes("eval --endpoints u"));
        assert!(yes("probe --endpoints u --model m"));
        assert!(yes("probe --endpoint u --requests 3"));
        assert!(!yes("probe --endpoint u --model m"));
        assert!(yes("init offline"));
        assert!(yes("init submission"));
        assert!(yes("init online_full"));
        assert!(!yes("init run.json"));
        assert!(!yes("bench --endpoint u"));
    }
}
