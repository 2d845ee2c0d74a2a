//! MLPerf's YAML configs (`inference-endpoint`'s `BenchmarkConfig` schema):
//! read into our `Profile`, so that `benchmark from-config`, `bench
//! --config` and `validate` run MLPerf's files, and written back out as the
//! resolved `config.yaml` its submission checker reads.
//!
//! The rule that shapes every file here: a field we honour maps to a
//! profile field; a field with no meaning for us (the Python client's
//! transport, logging, GC, and the fields MLPerf itself never reads) is
//! accepted at any value and, off MLPerf's default, becomes a note in the
//! report saying so; any other refusal, and any key MLPerf's schema lacks,
//! is an error naming its YAML path. A config is never run as something
//! other than what it says without the report saying it.

mod audit;
mod bounds;
pub(crate) mod env;
mod render;
mod schema;
mod settings;
pub(crate) mod templates;
pub(crate) mod tree;

#[cfg(test)]
mod tests;

use std::path::Path;

// The audit runner takes it from `Read::audit`.
#[cfg_attr(not(test), allow(unused_imports))]
pub(crate) use audit::AuditBlock;
pub(crate) use render::render_config_yaml;
pub(crate) use schema::Read;
pub(crate) use settings::WARMUP_RANDOM_SEED;
use tree::Errors;
pub(crate) use tree::Tree;

/// What a config says that is no profile setting, carried with the
/// profile to the run: the report's notes on fields accepted without (or
/// with a different) effect, and what only running refuses.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Extras {
    /// For the report's notes, one per field.
    pub notes: Vec<String>,
    /// The config's `name` and its performance dataset's, written back
    /// into config.yaml.
    pub name: Option<String>,
    pub dataset_name: Option<String>,
    /// `use_legacy_loadgen_qps_metrics` (MLPerf's default: true).
    pub legacy_qps: Option<bool>,
    /// `settings.warmup.warmup_random_seed` (MLPerf's default:
    /// `WARMUP_RANDOM_SEED`): the warm-up's order and schedule draw from it.
    pub warmup_seed: Option<u64>,
    /// `drain.accuracy_timeout_s`: the accuracy phase's drain limit
    /// (MLPerf's default, none, is a limit no response reaches).
    pub accuracy_drain: Option<crate::config::profile::HumanDuration>,
    /// Why the config cannot run at all (agentic inference); it still
    /// validates.
    pub refuse_run: Vec<String>,
    /// Why the accuracy phase cannot run (a scorer MLPerf runs in an
    /// external service); the performance phase still runs.
    pub refuse_accuracy: Vec<String>,
}

/// MLPerf's `endpoint_config.api_type` names beside ours (`--api`), for
/// the ones both have.
const API_TYPES: [(&str, &str); 3] = [
    ("openai", "openai-chat"),
    ("openai_completions", "openai-completions"),
    ("sglang", "sglang"),
];

/// Our `--api` for MLPerf's `api_type`, if we speak it.
pub(crate) fn api_of(api_type: &str) -> Option<&'static str> {
    API_TYPES
        .iter()
        .find(|(theirs, _)| *theirs == api_type)
        .map(|&(_, ours)| ours)
}

/// MLPerf's `api_type` for our `--api` (ours where MLPerf has no name).
pub(crate) fn api_type_of(api: &str) -> &str {
    API_TYPES
        .iter()
        .find(|(_, ours)| *ours == api)
        .map_or(api, |&(theirs, _)| theirs)
}

/// Whether `path` names a YAML file (by extension).
pub(crate) fn is_yaml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// Reads the YAML file at `path`; errors are lines `FILE: yaml.path:
/// message`.
pub(crate) fn load_tree(path: &Path) -> Result<Tree, String> {
    let text = crate::capped_read::text(path, crate::capped_read::CONFIG)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    tree::parse(&text, &env::process_env).map_err(|errs| {
        errs.into_iter()
            .map(|(p, m)| located(&path.display().to_string(), &p, &m))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Reads a config tree; `Err` holds every problem at its YAML path, none
/// of them showing what the tree hides.
pub(crate) fn read(tree: Tree) -> Result<Read, Vec<(String, String)>> {
    let errs = Errors::hiding(tree.hidden);
    let mut read = schema::read(tree.value, &errs);
    let (found, notes, hidden) = errs.into_parts();
    if found.is_empty() {
        read.profile.mlperf.notes = notes;
        read.hidden = hidden;
        Ok(read)
    } else {
        Err(found)
    }
}

/// Reads the file at `path` into a profile (for `bench --config` and
/// `validate`); errors are lines `FILE: yaml.path: message`.
pub(crate) fn load(path: &Path) -> Result<Read, String> {
    let tree = load_tree(path)?;
    let file = path.display().to_string();
    read(tree).map_err(|errs| {
        errs.iter()
            .map(|(p, m)| located(&file, p, m))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// `FILE: path: message` (no path for a whole-file problem).
pub(crate) fn located(file: &str, path: &str, msg: &str) -> String {
    if path.is_empty() {
        format!("{file}: {msg}")
    } else {
        format!("{file}: {path}: {msg}")
    }
}

/// The YAML config reader on text, for the `mlperf_config` fuzz target
/// (`llmload::mlperf_config_fuzzing`); nothing else uses it.
#[doc(hidden)]
pub mod fuzzing {
    /// Deepest nesting a tree read from YAML may have.
    pub const MAX_DEPTH: usize = super::bounds::MAX_DEPTH;

    /// Reads `text` as the `--config` reader does, with one variable set
    /// (`FUZZ`); `Ok` holds the tree as JSON once the schema took it,
    /// `Err` every message. Whether the limits passed is `bounded`.
    pub fn read(text: &str) -> (bool, Result<serde_json::Value, Vec<String>>) {
        let env = |k: &str| (k == "FUZZ").then(|| "8000".to_string());
        let bounded = super::bounds::check(text).is_ok();
        let tree = match super::tree::parse(text, &env) {
            Ok(t) => t,
            Err(e) => return (bounded, Err(e.into_iter().map(|(_, m)| m).collect())),
        };
        let kept = tree.value.clone();
        let read = super::read(tree)
            .map(|_| kept)
            .map_err(|e| e.into_iter().map(|(p, m)| format!("{p}: {m}")).collect());
        (bounded, read)
    }
}
