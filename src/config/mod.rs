//! Run configuration: flags resolved into one validated value that the
//! engine and the report read, and its redacted JSON form for reports.

pub mod duration;
pub mod endpoint;
pub mod profile;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::dataset::{DatasetSpec, Order, SyntheticSpec};
use crate::protocol::{Protocol, Sampling};
use duration::format_duration;
use endpoint::Endpoint;

/// The load shape of a single-stage run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Offline,
    Poisson { rate: f64 },
    Uniform { rate: f64 },
    Concurrency { n: usize },
}

/// A validated `bench` configuration.
pub struct BenchConfig {
    /// `None`: start and measure the built-in endpoint.
    pub endpoint: Option<Endpoint>,
    pub protocol: &'static dyn Protocol,
    pub model: Option<String>,
    pub max_tokens: u32,
    pub stream: bool,
    /// `--dataset` as given, and parsed.
    pub dataset_arg: Option<String>,
    pub dataset: Option<DatasetSpec>,
    pub synthetic_arg: Option<String>,
    pub synthetic: Option<SyntheticSpec>,
    pub order: Order,
    pub tokenizer: Option<PathBuf>,
    pub sampling: Sampling,
    pub extra_body: Option<serde_json::Map<String, Value>>,
    pub system: Option<String>,
    pub headers: Vec<(String, String)>,
    /// Secret: never written anywhere.
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub drain_timeout: Duration,
    pub mode: Mode,
    pub connections: usize,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Duration,
    pub seed: u64,
    /// Conversation ids in front of the first user message.
    pub bust: bool,
    pub correlation_header: Option<String>,
    pub ttft_timeout: Option<Duration>,
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

impl BenchConfig {
    /// The resolved configuration as reports show it: every setting, with
    /// credentials replaced by `"<redacted>"`.
    pub fn to_json(&self, endpoint: &Endpoint, model: &str) -> Value {
        let (mode, rate, concurrency) = match self.mode {
            Mode::Offline => ("offline", None, None),
            Mode::Poisson { rate } => ("poisson", Some(rate), None),
            Mode::Uniform { rate } => ("uniform", Some(rate), None),
            Mode::Concurrency { n } => ("concurrency", None, Some(n)),
        };
        let headers: serde_json::Map<String, Value> = self
            .headers
            .iter()
            .map(|(k, v)| {
                let v = if is_secret_header(k) {
                    "<redacted>"
                } else {
                    v.as_str()
                };
                (k.clone(), Value::from(v))
            })
            .collect();
        json!({
            "endpoint": endpoint.url,
            "builtin_endpoint": self.endpoint.is_none(),
            "api": self.protocol.name(),
            "model": model,
            "mode": mode,
            "rate": rate,
            "concurrency": concurrency,
            "connections": self.connections,
            "duration": self.duration.map(format_duration),
            "requests": self.requests,
            "warmup": format_duration(self.warmup),
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "stream": self.stream,
            "dataset": self.dataset_arg,
            "synthetic": self.synthetic_arg,
            "order": self.order.name(),
            "tokenizer": self.tokenizer.as_ref().map(|p| p.display().to_string()),
            "temperature": self.sampling.temperature,
            "top_p": self.sampling.top_p,
            "sampling_seed": self.sampling.seed,
            "stop": self.sampling.stop,
            "ignore_eos": self.sampling.ignore_eos,
            "min_tokens": self.sampling.min_tokens,
            "extra_body": self.extra_body,
            "system": self.system,
            "headers": headers,
            "api_key": self.api_key.as_ref().map(|_| "<redacted>"),
            "timeout": format_duration(self.timeout),
            "connect_timeout": format_duration(self.connect_timeout),
            "drain_timeout": format_duration(self.drain_timeout),
            "cache_mode": if self.bust { "bust" } else { "natural" },
            "correlation_header": self.correlation_header,
            "ttft_timeout": self.ttft_timeout.map(format_duration),
            "live_interval": format_duration(self.live_interval),
            "record_output": self.record_output,
            "workers": self.workers,
            "pin": self.pin,
            "out": self.out.display().to_string(),
        })
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
