//! Run configuration: a profile and flags merged (`profile`), resolved into
//! one validated value that the engine wiring and the report read. Secrets
//! stay in it only as long as needed to build request headers; the form
//! reports show has them redacted.

#![forbid(unsafe_code)]

pub mod duration;
pub mod profile;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::dataset::{DatasetSpec, Order, SyntheticSpec};
use crate::plan::Thresholds;
use crate::protocol::{Protocol, Sampling};
use profile::{Arrival, Profile, Scenario, Stage};

/// A validated `bench` configuration.
pub struct BenchConfig {
    /// The merged profile, as reports show it (before redaction).
    pub profile: Profile,
    /// Top-level endpoint URL; `None` starts the built-in endpoint.
    pub endpoint: Option<String>,
    pub protocol: &'static dyn Protocol,
    pub model: Option<String>,
    pub max_tokens: u32,
    pub stream: bool,
    pub system: Option<String>,
    pub dataset: Option<DatasetSpec>,
    pub synthetic: Option<SyntheticSpec>,
    pub order: Order,
    pub tokenizer: Option<PathBuf>,
    pub sampling: Sampling,
    pub extra_body: Option<Map<String, Value>>,
    pub headers: Vec<(String, String)>,
    /// Secret: never written anywhere.
    pub api_key: Option<String>,
    pub stages: Vec<Stage>,
    pub arrival: Arrival,
    pub warmup: Duration,
    pub connections: usize,
    pub openloop_max_inflight: Option<u64>,
    pub scenarios: Vec<Scenario>,
    pub thresholds: Thresholds,
    pub timeout: Duration,
    pub ttft_timeout: Option<Duration>,
    pub connect_timeout: Duration,
    pub drain_timeout: Duration,
    pub seed: u64,
    pub correlation_header: Option<String>,
    pub uuid_in_prompt: bool,
    pub live_interval: Duration,
    pub record_output: bool,
    pub workers: usize,
    pub pin: bool,
    pub out: PathBuf,
    pub quiet: bool,
}

/// Header names whose values are credentials.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
];

/// Whether a header's value must never be written out.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&n.as_str()) || n.contains("token") || n.contains("secret")
}

/// Replaces credentials in a header object with `"<redacted>"`.
fn redact_headers(v: &mut Value) {
    if let Some(h) = v.as_object_mut() {
        for (k, val) in h.iter_mut() {
            if is_secret_header(k) {
                *val = "<redacted>".into();
            }
        }
    }
}

impl BenchConfig {
    /// The resolved configuration as reports show it: the merged profile
    /// plus what was resolved at run time, credentials redacted.
    pub fn to_json(&self, endpoint_url: &str, model: &str, builtin: bool) -> Value {
        let mut v: Value = serde_json::from_str(&self.profile.to_json(false))
            .expect("a profile serializes to JSON");
        let first = self.stages.first();
        let mode = match first.map(|s| s.load) {
            Some(profile::StageLoad::Offline) => "offline",
            Some(profile::StageLoad::Closed { .. }) => "concurrency",
            _ => self.arrival.name(),
        };
        let o = v.as_object_mut().expect("a profile is an object");
        o.insert("endpoint".into(), endpoint_url.into());
        o.insert("builtin_endpoint".into(), builtin.into());
        o.insert("api".into(), self.protocol.name().into());
        o.insert("model".into(), model.into());
        o.insert("mode".into(), mode.into());
        o.insert("stream".into(), self.stream.into());
        o.insert("max_tokens".into(), self.max_tokens.into());
        o.insert("order".into(), self.order.name().into());
        o.insert("workers".into(), self.workers.into());
        o.insert("connections".into(), self.connections.into());
        o.insert("seed".into(), self.seed.into());
        o.insert("out".into(), self.out.display().to_string().into());
        if o.contains_key("api_key") || self.api_key.is_some() {
            o.insert("api_key".into(), "<redacted>".into());
        }
        if let Some(h) = o.get_mut("headers") {
            redact_headers(h);
        }
        if let Some(Value::Array(scenarios)) = o.get_mut("scenarios") {
            for s in scenarios {
                if let Some(h) = s.get_mut("headers") {
                    redact_headers(h);
                }
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_are_recognized() {
        for h in [
            "Authorization",
            "X-API-Key",
            "cookie",
            "X-Auth-Token",
            "my-secret",
        ] {
            assert!(is_secret_header(h), "{h}");
        }
        for h in ["x-request-id", "accept", "x-tenant"] {
            assert!(!is_secret_header(h), "{h}");
        }
    }
}
