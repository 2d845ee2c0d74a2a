//! `llmload init`: write a run profile to start from — a short example, or
//! with `--full` every field at its default — to a file and to stdout, so
//! both `llmload init` and `llmload init > x.json` give a usable file. An
//! existing file is never replaced without `--force`; refusing is not a
//! failure (exit 0), since the profile still reaches stdout. PATH `-` means
//! stdout only; argh reads a lone `-` as an option, so it must follow `--`
//! (`llmload init -- -`), and `--stdout` says the same without that.

use std::path::Path;

use argh::FromArgs;

use crate::cli::{errln, out};
use crate::config::profile::Profile;

/// Write a run profile to start from (then: llmload bench --profile FILE).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "init")]
pub(crate) struct InitArgs {
    /// every field with its default value, instead of a short example
    #[argh(switch)]
    pub full: bool,

    /// replace the file if it exists
    #[argh(switch)]
    pub force: bool,

    /// write to stdout only (the same as PATH -, which argh takes after --)
    #[argh(switch)]
    pub stdout: bool,

    /// an MLPerf-schema YAML config instead: offline, online or
    /// concurrency (default path KIND_template.yaml)
    #[argh(option)]
    pub mlperf: Option<String>,

    /// where to write (default run.json)
    #[argh(positional)]
    pub path: Option<String>,
}

/// Writes the profile; returns the exit status.
pub(crate) fn run(args: InitArgs) -> i32 {
    let default_name;
    let (json, name, runs_with) = match &args.mlperf {
        Some(kind) => {
            let Some(t) = crate::config::mlperf::templates::template(kind) else {
                errln!(
                    "llmload init: --mlperf '{kind}': expected {}",
                    crate::config::mlperf::templates::KINDS
                );
                return 2;
            };
            default_name = format!("{kind}_template.yaml");
            (
                t.to_string(),
                args.path.as_deref().unwrap_or(&default_name),
                "llmload benchmark from-config -c",
            )
        }
        None if args.full => (
            Profile::full().to_json(true),
            args.path.as_deref().unwrap_or("run.json"),
            "llmload bench --profile",
        ),
        None => (
            Profile::example().to_json(false),
            args.path.as_deref().unwrap_or("run.json"),
            "llmload bench --profile",
        ),
    };
    if args.stdout || name == "-" {
        out!("{json}");
        return 0;
    }
    let path = Path::new(name);
    if path.exists() && !args.force {
        errln!("llmload init: {name} exists, left unchanged (--force replaces it)");
        out!("{json}");
        return 0;
    }
    if let Err(e) = crate::report::atomic::write(path, json.as_bytes()) {
        errln!("llmload init: {e}");
        return 1;
    }
    out!("{json}");
    if args.mlperf.is_some() {
        errln!("wrote {name} — fill in its placeholders, then run it with: {runs_with} {name}");
    } else {
        errln!("wrote {name} — run it with: {runs_with} {name} --endpoint http://HOST:PORT");
    }
    0
}
