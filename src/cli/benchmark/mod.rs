//! `llmload benchmark offline|online|from-config`: MLPerf Inference
//! Endpoint's command lines and configs, run as `bench` runs a profile.
//! The command line becomes overrides at YAML paths (`args`), set over the
//! config (`from-config`) or over an empty one of the subcommand's type;
//! `config::mlperf` reads the result into a `Profile` with `preset:
//! mlperf`, and `bench::run_profile_ended` runs it; how it ended becomes
//! MLPerf's exit status (`status`).

mod args;

use std::path::Path;

use argh::FromArgs;
use serde_json::{Value, json};

use crate::cli::bench::{self, Ended, Outcome};
use crate::cli::{errln, mlperf_status, out};
use crate::config::mlperf::AuditBlock;
use crate::config::mlperf::{self, Tree, located, tree};
use args::{Override, Parsed, Sub};

/// Run an MLPerf benchmark with its command line: offline, online or from-config.
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "benchmark",
    note = "MLPerf Inference Endpoint's command lines (inference-endpoint benchmark ...) and \
            YAML configs, with its run rules and result files. `llmload benchmark offline --help` \
            lists its flags.",
    error_code(0, "finished"),
    error_code(1, "a refused command line, or a failed audit"),
    error_code(2, "bad input: the config, a --dataset string, a missing dataset file"),
    error_code(
        3,
        "setup failed: the dataset's rows, the tokenizer, the workers, the output directory"
    ),
    error_code(
        4,
        "execution failed: an incomplete run, unwritten results, no request succeeded"
    ),
    error_code(130, "stopped by SIGINT, SIGTERM or SIGHUP")
)]
pub(crate) struct BenchmarkArgs {
    /// offline, online or from-config, then MLPerf's flags
    #[argh(positional, greedy)]
    pub rest: Vec<String>,
}

/// Runs the benchmark the command line describes; returns MLPerf's exit
/// status for how it ended (`mlperf_status`).
pub(crate) fn run(args: BenchmarkArgs) -> i32 {
    let parsed = match args::parse(&args.rest) {
        Ok(p) => p,
        Err(e) => {
            errln!("llmload benchmark: {e}");
            return mlperf_status::FAILED;
        }
    };
    if parsed.help {
        out!("{}\n{}", args::HELP, mlperf_status::HELP);
        return mlperf_status::OK;
    }
    if let Some(dir) = &parsed.datasets_dir {
        crate::dataset::predefined::set_dir(dir.into());
    }
    match profile_of(&parsed) {
        Ok((profile, origin, None)) => status(bench::run_profile_ended(profile, &origin)),
        Ok((profile, origin, Some(audit))) => {
            bench::run_audited_as(profile, &origin, &audit, status, verdict_status)
        }
        Err((code, e)) => {
            errln!("{e}");
            code
        }
    }
}

/// MLPerf's exit status for how a run ended: a refused config is bad
/// input, a run that could not start a failed setup, a run that did not
/// produce its result a failed execution.
fn status(ended: Ended) -> i32 {
    match ended {
        Ended::Refused => mlperf_status::INPUT,
        Ended::NotStarted => mlperf_status::SETUP,
        Ended::Ran(Outcome::Passed) => mlperf_status::OK,
        Ended::Ran(Outcome::Interrupted) => mlperf_status::INTERRUPTED,
        // Only `bench` flags set thresholds; failing one is a failed check.
        Ended::Ran(Outcome::ThresholdFailed) => mlperf_status::FAILED,
        Ended::Ran(Outcome::Failed | Outcome::Incomplete | Outcome::Unwritten) => {
            mlperf_status::EXECUTION
        }
    }
}

/// MLPerf's exit status for `llmload audit`'s: a failed audit is 1, as
/// MLPerf's; no verdict or unwritten files a failed execution.
fn verdict_status(verdict: i32) -> i32 {
    match verdict {
        0 => mlperf_status::OK,
        1 => mlperf_status::FAILED,
        2 => mlperf_status::INPUT,
        130 => mlperf_status::INTERRUPTED,
        _ => mlperf_status::EXECUTION,
    }
}

/// The profile a parsed command line describes, and what to call its
/// origin in later errors; an error carries MLPerf's status for it (a
/// config file's or a `--dataset` string's problem is bad input; the
/// command line's own flags are refused as MLPerf's parser refuses them).
fn profile_of(
    p: &Parsed,
) -> Result<(crate::config::profile::Profile, String, Option<AuditBlock>), (i32, String)> {
    let (mut tree, file) = match p.sub {
        Sub::FromConfig => {
            let Some(path) = &p.config else {
                return Err((
                    mlperf_status::FAILED,
                    "llmload benchmark from-config: Required: --config [-c] FILE".into(),
                ));
            };
            let tree = mlperf::load_tree(Path::new(path)).map_err(|e| (mlperf_status::INPUT, e))?;
            (tree, Some(path.clone()))
        }
        Sub::Offline => (Tree::plain(json!({"type": "offline"})), None),
        Sub::Online => (Tree::plain(json!({"type": "online"})), None),
    };
    if !p.datasets.is_empty() {
        let has = tree
            .value
            .get("datasets")
            .is_some_and(|d| d.as_array().is_some_and(|a| !a.is_empty()));
        if has {
            return Err((
                mlperf_status::INPUT,
                "llmload benchmark: --dataset: the config has datasets; give them in one place"
                    .into(),
            ));
        }
        let entries = p
            .datasets
            .iter()
            .map(|d| args::dataset_entry(d))
            .collect::<Result<Vec<Value>, String>>()
            .map_err(|e| (mlperf_status::INPUT, format!("llmload benchmark: {e}")))?;
        tree::set(&mut tree.value, "datasets", Value::Array(entries));
    }
    for Override { path, value, .. } in &p.overrides {
        tree::set(&mut tree.value, path, value.clone());
    }
    let read = mlperf::read(tree).map_err(|errs| {
        // The config file's problems, and the datasets', are bad input;
        // the flags' are the command line's.
        let input = file.is_some()
            || errs
                .iter()
                .any(|(path, _)| path.starts_with("datasets") && !p.datasets.is_empty());
        let code = if input {
            mlperf_status::INPUT
        } else {
            mlperf_status::FAILED
        };
        let text = errs
            .iter()
            .map(|(path, msg)| describe(path, msg, p, file.as_deref()))
            .collect::<Vec<_>>()
            .join("\n");
        (code, text)
    })?;
    let origin = file.unwrap_or_else(|| "the resolved run".into());
    let mut profile = read.profile;
    // MLPerf's `perf` still runs the accuracy datasets it is given: left
    // unset, the phase says the same.
    if let Some(m @ ("acc" | "both")) = p.mode.as_deref() {
        profile.phase = Some(m.to_string());
    }
    Ok((profile, origin, read.audit))
}

/// One error, named by the flag that set its path when a flag did (or
/// could have), else by the file and path.
fn describe(path: &str, msg: &str, p: &Parsed, file: Option<&str>) -> String {
    let from_cli = p.overrides.iter().any(|o| path.starts_with(&o.path));
    // A dotted flag naming no field of MLPerf's schema.
    let msg = if from_cli && msg.starts_with("unknown key") {
        "not a flag of MLPerf's benchmark command (no such field in its schema)"
    } else {
        msg
    };
    if path.starts_with("datasets") && !p.datasets.is_empty() {
        return format!("llmload benchmark: --dataset ({path}): {msg}");
    }
    match (args::flag_for(path, &p.overrides), file) {
        (Some(flag), Some(_)) if from_cli => format!("llmload benchmark: {flag}: {msg}"),
        (Some(flag), None) => format!("llmload benchmark: {flag}: {msg}"),
        (_, Some(f)) => located(f, path, msg),
        (None, None) => format!("llmload benchmark: {path}: {msg}"),
    }
}
