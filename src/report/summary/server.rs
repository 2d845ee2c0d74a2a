//! The endpoint's own metrics (`--server-metrics`): what the server said
//! about itself during the run, scraped from its Prometheus endpoint.

use serde::{Deserialize, Serialize};

/// Absent when nothing was scraped (off, or auto found no `/metrics`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct ServerMetricsSummary {
    /// As echoed: query values masked.
    pub url: String,
    /// Which server's names matched: `vllm`, `sglang`, `tgi`, `llmload`,
    /// or `unknown`.
    #[cfg_attr(test, schemars(extend("enum" = ["vllm", "sglang", "tgi", "llmload", "unknown"])))]
    pub server: String,
    /// Seconds between scrapes.
    #[cfg_attr(test, schemars(extend("exclusiveMinimum" = 0)))]
    pub interval_s: f64,
    pub scrapes: u64,
    /// Scrapes that failed (unreachable, non-200, unparsable).
    pub failures: u64,
    /// The first failure's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub series: Vec<ServerSeries>,
}

/// One kept metric over time (summed over its label sets).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct ServerSeries {
    /// The server's metric name, e.g. `vllm:num_requests_running`.
    pub name: String,
    /// What it means, in our words: `running`, `waiting`, `kv_cache_usage`,
    /// `prefix_cache_hit_rate`, `preemptions`, `prompt_tokens`,
    /// `generation_tokens`, ….
    pub key: String,
    /// `gauge` (points are values), `counter` (points are the rate per
    /// second between scrapes) or `ratio` (points are one counter's
    /// increase over another's between scrapes: a hit rate; `name` is
    /// `hits / queries`).
    #[cfg_attr(test, schemars(extend("enum" = ["gauge", "counter", "ratio"])))]
    pub kind: String,
    /// `[t_s since the run started, value]`.
    pub points: Vec<[f64; 2]>,
    pub mean: Option<f64>,
    pub max: Option<f64>,
}
