//! `llmload benchmark offline|online|from-config`: MLPerf Inference
//! Endpoint's command lines and configs, run as `bench` runs a profile.
//! The command line becomes overrides at YAML paths (`args`), set over the
//! config (`from-config`) or over an empty one of the subcommand's type;
//! `config::mlperf` reads the result into a `Profile` with `preset:
//! mlperf`, and `bench::run_profile` runs it.

mod args;

use std::path::Path;

use argh::FromArgs;
use serde_json::{Value, json};

use crate::cli::bench;
use crate::cli::{errln, out};
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
            lists its flags."
)]
pub(crate) struct BenchmarkArgs {
    /// offline, online or from-config, then MLPerf's flags
    #[argh(positional, greedy)]
    pub rest: Vec<String>,
}

/// Runs the benchmark the command line describes; returns the exit status
/// (1 for a command line or config that cannot run, as `bench`).
pub(crate) fn run(args: BenchmarkArgs) -> i32 {
    let parsed = match args::parse(&args.rest) {
        Ok(p) => p,
        Err(e) => {
            errln!("llmload benchmark: {e}");
            return 1;
        }
    };
    if parsed.help {
        out!("{}", args::HELP);
        return 0;
    }
    if let Some(dir) = &parsed.datasets_dir {
        crate::dataset::predefined::set_dir(dir.into());
    }
    match profile_of(&parsed) {
        Ok((profile, origin, None)) => bench::run_profile(profile, &origin),
        Ok((profile, origin, Some(audit))) => bench::run_audited(profile, &origin, &audit),
        Err(e) => {
            errln!("{e}");
            1
        }
    }
}

/// The profile a parsed command line describes, and what to call its
/// origin in later errors.
fn profile_of(
    p: &Parsed,
) -> Result<(crate::config::profile::Profile, String, Option<AuditBlock>), String> {
    let (mut tree, file) = match p.sub {
        Sub::FromConfig => {
            let Some(path) = &p.config else {
                return Err("llmload benchmark from-config: -c/--config FILE is required".into());
            };
            (mlperf::load_tree(Path::new(path))?, Some(path.clone()))
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
            return Err(
                "llmload benchmark: --dataset: the config has datasets; give them in one place"
                    .into(),
            );
        }
        let entries = p
            .datasets
            .iter()
            .map(|d| args::dataset_entry(d))
            .collect::<Result<Vec<Value>, String>>()
            .map_err(|e| format!("llmload benchmark: {e}"))?;
        tree::set(&mut tree.value, "datasets", Value::Array(entries));
    }
    for Override { path, value, .. } in &p.overrides {
        tree::set(&mut tree.value, path, value.clone());
    }
    let read = mlperf::read(tree).map_err(|errs| {
        errs.iter()
            .map(|(path, msg)| describe(path, msg, p, file.as_deref()))
            .collect::<Vec<_>>()
            .join("\n")
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
