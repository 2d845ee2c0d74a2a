//! `llmload init`: write a run profile to start from — a short example, or
//! with `--full` every field at its default — to a file and to stdout, so
//! both `llmload init` and `llmload init > x.json` give a usable file. An
//! existing file is never replaced without `--force`; refusing is not a
//! failure (exit 0), since the profile still reaches stdout. PATH `-` means
//! stdout only; argh reads a lone `-` as an option, so it must follow `--`
//! (`llmload init -- -`), and `--stdout` says the same without that.
//!
//! `llmload init offline|online|concurrency|eval|submission` is MLPerf's
//! `init`: it writes that MLPerf YAML template to `KIND_template.yaml` in
//! the current directory, replacing one that is there (with a warning, as
//! MLPerf does), and exits with MLPerf's statuses (3: the file could not be
//! written). A JSON profile by one of those names is `./offline`.

use std::path::Path;

use argh::FromArgs;

use crate::cli::{errln, out};
use crate::config::profile::Profile;

/// Write a run profile to start from (then: llmload bench --profile FILE).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "init",
    example = "{command_name}",
    example = "{command_name} offline     (MLPerf's: writes offline_template.yaml)",
    error_code(0, "written (or left unchanged without --force, and printed)"),
    error_code(1, "the profile could not be written"),
    error_code(2, "a bad flag, or an unknown --mlperf name"),
    error_code(3, "MLPerf's init KIND: the template could not be written")
)]
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

    /// an MLPerf-schema YAML config instead: offline, online,
    /// concurrency, eval or submission (default path KIND_template.yaml)
    #[argh(option)]
    pub mlperf: Option<String>,

    /// where to write (default run.json); offline, online, concurrency,
    /// eval or submission: MLPerf's template KIND_template.yaml
    #[argh(positional)]
    pub path: Option<String>,
}

/// MLPerf's `init` template names.
const MLPERF_NAMES: &[&str] = &["offline", "online", "concurrency", "eval", "submission"];

/// Whether `word` is one of MLPerf's `init` template names, or the name of
/// one of its `*_template_full.yaml` files (which its `init` refuses, and
/// so does ours, rather than write a JSON profile by that name).
pub(crate) fn is_mlperf_name(word: &str) -> bool {
    let base = word.strip_suffix("_full").unwrap_or(word);
    MLPERF_NAMES.contains(&base)
}

/// Writes the profile; returns the exit status.
pub(crate) fn run(args: InitArgs) -> i32 {
    if args.mlperf.is_none()
        && let Some(kind) = args.path.as_deref().filter(|p| is_mlperf_name(p))
    {
        return mlperf_init(kind);
    }
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

/// MLPerf's `init KIND`: the template to `KIND_template.yaml`, replaced if
/// it exists. MLPerf's statuses: 0 written, 3 not written.
fn mlperf_init(kind: &str) -> i32 {
    let Some(text) = crate::config::mlperf::templates::template(kind) else {
        errln!(
            "llmload init: unknown template type: {kind}. Available: {}",
            crate::config::mlperf::templates::KINDS
        );
        return crate::cli::mlperf_status::INPUT;
    };
    let name = format!("{kind}_template.yaml");
    let path = Path::new(&name);
    if path.exists() {
        errln!("llmload init: file exists: {name} (will be overwritten)");
    }
    if let Err(e) = crate::report::atomic::write(path, text.as_bytes()) {
        errln!("llmload init: failed to create template: {e}");
        return crate::cli::mlperf_status::SETUP;
    }
    errln!(
        "Created: {name} — fill in its placeholders, then run it with: llmload benchmark from-config -c {name}"
    );
    0
}
