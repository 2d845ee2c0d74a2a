//! `summary.json`'s `state`: the run's `RunResult` as serde writes it (the
//! types in `metrics` are their own written form), beside a `version`.
//! It holds what the rendered numbers lose — every block's exact counts and
//! sums, its histograms in HdrHistogram's V2 encoding, the measured windows
//! and the timeline's buckets — so `llmload merge` rebuilds each shard's
//! run exactly and merges those, never percentiles. The cost is size: a
//! few KiB per histogram.
//!
//! A summary keeps `state` as the JSON it read, so a summary of another
//! version still reads (`compare` reads any); only `to_run`, for a merge,
//! decodes it, and it refuses another version by name.

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::metrics::run::RunResult;

/// The format of `state`; a merge refuses others.
pub(crate) const VERSION: u64 = 2;

/// A summary's `state`, as written or read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct RunState(Value);

/// What `state` is written from.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
struct Written<'a> {
    /// The format of `state`: a merge reads only its own.
    #[cfg_attr(test, schemars(extend("const" = VERSION)))]
    version: u64,
    #[serde(flatten)]
    run: &'a RunResult,
}

impl RunState {
    pub(crate) fn of(run: &RunResult) -> RunState {
        let doc = Written {
            version: VERSION,
            run,
        };
        RunState(serde_json::to_value(doc).expect("a run always serializes"))
    }

    /// `state` as read from a summary, kept as it is: only `to_run`
    /// decodes it.
    pub(crate) fn from_value(state: Value) -> RunState {
        RunState(state)
    }

    /// The version the state says it is in, if it says.
    pub(crate) fn version(&self) -> Option<u64> {
        self.0.get("version").and_then(Value::as_u64)
    }

    /// The state as JSON.
    pub(crate) fn value(&self) -> &Value {
        &self.0
    }

    /// Refuses a state of another version, or of none: the types behind
    /// it may differ from this llmload's.
    pub(crate) fn readable(&self) -> Result<(), String> {
        match self.version() {
            Some(VERSION) => Ok(()),
            Some(v) => Err(format!("state version {v}; this llmload reads {VERSION}")),
            None => Err(format!(
                "state without a version; this llmload reads {VERSION}"
            )),
        }
    }

    /// The run this state was made of; an error names the part at fault.
    pub(crate) fn to_run(&self) -> Result<RunResult, String> {
        self.readable()?;
        serde_path_to_error::deserialize(&self.0).map_err(|e| {
            let path = e.path().to_string();
            format!("{path}: {}", e.into_inner())
        })
    }
}

#[cfg(test)]
impl schemars::JsonSchema for RunState {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunState".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Written::json_schema(g)
    }
}
