//! Run configuration: a profile and flags merged (`profile`), resolved once
//! (`resolve`) into one validated value that the engine wiring and the
//! report read. Secrets stay in it only as long as needed to build request
//! headers; the form reports show has them redacted.

pub(crate) mod bytes;
pub(crate) mod duration;
pub(crate) mod mlperf;
pub(crate) mod profile;
pub(crate) mod resolve;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::dataset::{DatasetSpec, Order, SyntheticSpec};
use crate::http::endpoint::redact_url;
use crate::http::headers::{REDACTED, is_secret_header};
use crate::plan::{Limits, Load, StagePlan, Thresholds, TokenPolicy};
use crate::protocol::{Protocol, Sampling};
use profile::{Profile, Scenario};

/// A validated `bench` configuration: `resolve::resolve`'s result.
pub(crate) struct BenchConfig {
    /// The merged profile, as reports show it (before redaction).
    pub profile: Profile,
    /// The top-level API (a scenario may have its own).
    pub protocol: &'static dyn Protocol,
    /// The top-level `max_tokens` (a scenario may have its own).
    pub max_tokens: u32,
    /// Whether the top level streams (a scenario may say otherwise).
    pub stream: bool,
    /// Top-level content, for scenarios without their own.
    pub dataset: Option<DatasetSpec>,
    pub synthetic: Option<SyntheticSpec>,
    pub order: Order,
    pub tokenizer: Option<PathBuf>,
    pub token_source: TokenPolicy,
    /// `preset: mlperf`: MLPerf's run rules and result files.
    pub mlperf: bool,
    pub sampling: Sampling,
    pub extra_body: Option<Map<String, Value>>,
    /// Secret: never written anywhere.
    pub api_key: Option<String>,
    /// The key is `$OPENAI_API_KEY`'s, taken because none was given.
    pub api_key_from_env: bool,
    pub stages: Vec<StagePlan>,
    pub warmup_ns: u64,
    pub connections: usize,
    pub openloop_max_inflight: Option<u64>,
    pub scenarios: Vec<Scenario>,
    pub thresholds: Thresholds,
    pub limits: Limits,
    pub seed: u64,
    pub correlation_header: Option<String>,
    pub uuid_in_prompt: bool,
    pub live_interval_ns: u64,
    pub record_output: bool,
    pub workers: usize,
    pub pin: bool,
    /// Unset: `results/<UTC timestamp>`, named when the run starts.
    pub out: Option<PathBuf>,
    pub quiet: bool,
    /// Said before the run starts; none stops it.
    pub warnings: Vec<String>,
}

/// Replaces credentials in a header object with [`REDACTED`].
fn redact_headers(v: &mut Value) {
    if let Some(h) = v.as_object_mut() {
        for (k, val) in h.iter_mut() {
            if is_secret_header(k) {
                *val = REDACTED.into();
            }
        }
    }
}

impl BenchConfig {
    /// The resolved configuration as reports show it: the merged profile
    /// plus what was resolved at run time, credentials redacted (header
    /// values by name, URL query values).
    pub(crate) fn to_json(
        &self,
        out: &Path,
        endpoint_url: &str,
        model: &str,
        builtin: bool,
    ) -> Value {
        let mut v = serde_json::to_value(&self.profile).expect("a profile serializes to JSON");
        let o = v.as_object_mut().expect("a profile is an object");
        let shown: Vec<String> = profile::validate::split_endpoints(endpoint_url)
            .into_iter()
            .map(redact_url)
            .collect();
        o.insert("endpoint".into(), shown.join(",").into());
        // The list, if one was given, says the same as the comma list above.
        o.remove("endpoints");
        o.insert("builtin_endpoint".into(), builtin.into());
        o.insert("api".into(), self.protocol.name().into());
        o.insert("model".into(), model.into());
        // The first stage's load; a resolved run has at least one stage.
        if let Some(first) = self.stages.first() {
            let mode = match first.load {
                Load::Offline => "offline",
                Load::Closed { .. } => "concurrency",
                Load::Open { kind, .. } => kind.name(),
            };
            o.insert("mode".into(), mode.into());
        }
        o.insert("stream".into(), self.stream.into());
        o.insert("max_tokens".into(), self.max_tokens.into());
        o.insert("order".into(), self.order.to_string().into());
        o.insert("workers".into(), self.workers.into());
        o.insert("connections".into(), self.connections.into());
        o.insert("seed".into(), self.seed.into());
        o.insert("out".into(), out.display().to_string().into());
        if o.contains_key("api_key") || self.api_key.is_some() {
            o.insert("api_key".into(), REDACTED.into());
        }
        if let Some(h) = o.get_mut("headers") {
            redact_headers(h);
        }
        if let Some(Value::Array(scenarios)) = o.get_mut("scenarios") {
            for s in scenarios {
                if let Some(h) = s.get_mut("headers") {
                    redact_headers(h);
                }
                if let Some(Value::String(url)) = s.get_mut("endpoint") {
                    *url = redact_url(url);
                }
            }
        }
        v
    }
}
