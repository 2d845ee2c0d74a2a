//! What a refused command line is told: argh's message with the command
//! named (`llmload bench: …`), a pointer to `--help`, and for an unknown
//! flag the nearest flag the command has ("did you mean --concurrency?"),
//! read from the command's own help so the list is never kept twice.

use argh::FromArgs;

use super::Top;
use crate::typo::nearest;

/// The message for a command line argh refused with `output`.
pub fn message(cmd: &str, rest: &[&str], output: &str) -> String {
    let words: Vec<&str> = rest
        .iter()
        .copied()
        .take_while(|a| !a.starts_with('-'))
        .collect();
    // The deepest subcommand whose help argh gives: a positional argument
    // after it is not a subcommand.
    let (named, help) = (0..=words.len())
        .rev()
        .find_map(|k| {
            let mut ask = words[..k].to_vec();
            ask.push("--help");
            match Top::from_args(&[cmd], &ask) {
                Err(e) if e.status.is_ok() => Some((words[..k].join(" "), e.output)),
                _ => None,
            }
        })
        .unwrap_or_default();
    let who = if named.is_empty() {
        "llmload".to_string()
    } else {
        format!("llmload {named}")
    };
    let output = output.trim();
    let help_hint = format!("{who} --help lists every flag");
    if let Some(arg) = output.strip_prefix("Unrecognized argument: ")
        && arg.starts_with("--")
    {
        let flag = arg.split('=').next().unwrap_or(arg);
        return match nearest(flag, &flags(&help)) {
            Some(best) => format!("{who}: unknown flag {arg}: did you mean {best}? ({help_hint})"),
            None => format!("{who}: unknown flag {arg} ({help_hint})"),
        };
    }
    format!("{who}: {output} ({help_hint})")
}

/// The `--flags` a help text lists.
fn flags(help: &str) -> Vec<&str> {
    help.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| w.trim_end_matches(','))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_the_nearest_flag() {
        let m = message(
            "llmload",
            &["bench", "--concurency", "3"],
            "Unrecognized argument: --concurency\n",
        );
        assert_eq!(
            m,
            "llmload bench: unknown flag --concurency: did you mean --concurrency? \
             (llmload bench --help lists every flag)"
        );
        for (typed, meant) in [
            ("--duraton", "--duration"),
            ("--max-token", "--max-tokens"),
            ("--endpiont", "--endpoint"),
        ] {
            let m = message(
                "llmload",
                &["bench", typed],
                &format!("Unrecognized argument: {typed}"),
            );
            assert!(m.contains(&format!("did you mean {meant}?")), "{m}");
        }
        let far = message(
            "llmload",
            &["bench", "--zzzzzzzz"],
            "Unrecognized argument: --zzzzzzzz",
        );
        assert!(!far.contains("did you mean"), "{far}");
        let other = message(
            "llmload",
            &["probe", "--timeout", "x"],
            "Error parsing option '--timeout' with value 'x': bad",
        );
        assert!(
            other.starts_with("llmload probe: Error parsing option"),
            "{other}"
        );
        assert!(
            other.ends_with("(llmload probe --help lists every flag)"),
            "{other}"
        );
    }
}
