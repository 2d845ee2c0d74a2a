//! `audit output-caching`'s command line: its own four flags, and every
//! other argument handed to `BenchArgs`, so the audit takes exactly the
//! flags `bench` takes (new ones included) without a copy of them. argh
//! cannot flatten one flag struct into another, hence the split by hand;
//! `--help` shows both lists, bench's by topic.

use argh::{EarlyExit, FromArgs, SubCommand};

use super::output_caching::AuditParams;
use crate::cli::bench::{self, BenchArgs};

/// What the audit does when a flag of its own is not given; its help shows
/// them.
pub(crate) mod defaults {
    use crate::config::settings::defaults;

    defaults! {
        SAMPLE_INDEX: u64 = 0;
        THRESHOLD: f64 = super::super::output_caching::DEFAULT_THRESHOLD;
    }
}

/// MLPerf TEST04: is a repeated prompt answered faster than distinct ones?
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "output-caching",
    note = "A reference phase sends --samples distinct dataset rows, then an audit phase
sends --audit-samples copies of row --sample-index. The audit passes when both
phases complete at least (1 - threshold) of their requests and the audit
phase's QPS stays below the reference's x (1 + threshold). Offline or
concurrency mode only; prompts are sent untouched (no cache busting).
Writes audit/audit_output_caching_test.json and
audit/verify_OUTPUT_CACHING_TEST.txt under --out, and each phase's results
in audit/reference/ and audit/output_caching/.",
    error_code(0, "the audit passed"),
    error_code(1, "the audit failed: a phase incomplete, or the repeats were faster"),
    error_code(2, "bad usage or a setting the audit cannot run with"),
    error_code(3, "no verdict: a phase could not run or did not finish cleanly"),
    error_code(4, "the verdict's files could not be written"),
    error_code(130, "stopped by SIGINT, SIGTERM or SIGHUP")
)]
pub(super) struct CachingFlags {
    /// reference-phase requests, each a distinct dataset row (at most the
    /// dataset's rows)
    #[argh(option)]
    samples: u64,

    /// audit-phase requests, each a copy of the --sample-index row (default:
    /// --samples)
    #[argh(option)]
    audit_samples: Option<u64>,

    /// the dataset row the audit phase repeats, from 0 (default
    /// {SAMPLE_INDEX})
    #[argh(option, default = "defaults::SAMPLE_INDEX")]
    sample_index: u64,

    /// tolerance of both checks, more than 0 and less than 1 (default
    /// {THRESHOLD})
    #[argh(option, default = "defaults::THRESHOLD")]
    threshold: f64,
}

/// The audit's flags, and the rest as `bench` reads them.
#[derive(Debug)]
pub(crate) struct OutputCachingArgs {
    own: CachingFlags,
    pub bench: BenchArgs,
}

impl OutputCachingArgs {
    pub(super) fn params(&self) -> AuditParams {
        AuditParams {
            samples: self.own.samples,
            audit_samples: self.own.audit_samples,
            sample_index: self.own.sample_index,
            threshold: self.own.threshold,
        }
    }
}

/// The audit's own options; each takes a value.
const OWN: [&str; 4] = [
    "--samples",
    "--audit-samples",
    "--sample-index",
    "--threshold",
];

impl SubCommand for OutputCachingArgs {
    const COMMAND: &'static argh::CommandInfo = CachingFlags::COMMAND;
}

impl FromArgs for OutputCachingArgs {
    fn from_args(command_name: &[&str], args: &[&str]) -> Result<Self, EarlyExit> {
        if args.first() == Some(&"help") || args.contains(&"--help") {
            return Err(EarlyExit {
                output: help(command_name),
                status: Ok(()),
            });
        }
        let (own, rest) = split(args);
        Ok(OutputCachingArgs {
            own: CachingFlags::from_args(command_name, &own)?,
            bench: BenchArgs::from_args(command_name, &rest)?,
        })
    }
}

/// `args` split into the audit's options (with their values) and the rest.
fn split<'a>(args: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let (mut own, mut rest) = (Vec::new(), Vec::new());
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        if OWN.contains(&a) {
            own.push(a);
            own.extend(it.next());
        } else {
            rest.push(a);
        }
    }
    (own, rest)
}

/// The audit's help with bench's options (grouped as `bench --help` has
/// them) after its own.
fn help(command_name: &[&str]) -> String {
    let own = match CachingFlags::from_args(command_name, &["--help"]) {
        Err(e) => e.output,
        Ok(_) => String::new(),
    };
    let (usage, body) = own.split_once('\n').unwrap_or((&own, ""));
    let options = section(body, "Options:");
    let at = body.find(options).map_or(body.len(), |i| i + options.len());
    format!(
        "{usage} [bench options]\n{}\n\nBench options (as llmload bench; each phase sets its own --requests):\n\n{}{}",
        &body[..at],
        bench::help_options().trim_end(),
        &body[at..]
    )
}
/// The lines of `text`'s section headed `title`, up to the blank line that
/// ends it (empty when there is none).
fn section<'a>(text: &'a str, title: &str) -> &'a str {
    let Some(start) = text.find(&format!("{title}\n")) else {
        return "";
    };
    let body = &text[start + title.len() + 1..];
    let end = body.find("\n\n").unwrap_or(body.len());
    &body[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<OutputCachingArgs, EarlyExit> {
        OutputCachingArgs::from_args(&["llmload", "audit", "output-caching"], args)
    }

    #[test]
    fn own_flags_and_bench_flags_are_told_apart() {
        let a = parse(&[
            "--endpoint",
            "http://127.0.0.1:1",
            "--samples",
            "20",
            "--mode",
            "offline",
            "--sample-index",
            "3",
            "--threshold",
            "0.2",
            "--audit-samples",
            "7",
            "--dataset",
            "d.jsonl",
        ])
        .unwrap();
        assert_eq!(
            a.params(),
            AuditParams {
                samples: 20,
                audit_samples: Some(7),
                sample_index: 3,
                threshold: 0.2,
            }
        );
        assert_eq!(a.bench.endpoint.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(a.bench.mode.as_deref(), Some("offline"));
        assert_eq!(a.bench.dataset.as_deref(), Some("d.jsonl"));
        let d = parse(&["--samples", "5"]).unwrap().params();
        assert_eq!((d.audit_samples, d.sample_index), (None, 0));
        assert_eq!(d.threshold, super::super::output_caching::DEFAULT_THRESHOLD);
    }

    #[test]
    fn usage_errors_name_the_flag() {
        let err = |args: &[&str]| match parse(args) {
            Err(e) => {
                assert!(e.status.is_err());
                e.output
            }
            Ok(_) => panic!("{args:?} parsed"),
        };
        assert!(err(&[]).contains("--samples"));
        assert!(err(&["--samples", "x"]).contains("--samples"));
        assert!(err(&["--samples", "3", "--bogus", "1"]).contains("--bogus"));
        assert!(err(&["--samples"]).contains("--samples"));
    }

    #[test]
    fn help_lists_both_flag_sets_once() {
        let e = match parse(&["--help"]) {
            Err(e) => e,
            Ok(_) => panic!("--help parsed"),
        };
        assert!(e.status.is_ok());
        let h = e.output;
        assert!(
            h.starts_with("Usage: llmload audit output-caching --samples"),
            "{h}"
        );
        for want in [
            "--audit-samples",
            "--threshold",
            "--endpoint",
            "--dataset",
            "--insecure",
            "--mode",
            "Error codes:",
        ] {
            assert!(h.contains(want), "{want} missing:\n{h}");
        }
        assert_eq!(h.matches("--help").count(), 1, "{h}");
        assert!(h.find("--threshold") < h.find("Bench options"));
        assert!(h.find("--endpoint") < h.find("Error codes:"));
    }
}
