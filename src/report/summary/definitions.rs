//! Every tool's definitions side by side: the headline metrics of one run
//! computed the way llmload, vLLM's `bench serve`, guidellm, aiperf and
//! MLPerf each define them (DESIGN.md says exactly how, cell by cell).

use serde::{Deserialize, Serialize};

/// The table; columns are tools, in `tools` order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct Definitions {
    /// The preset the headline numbers use (`--metrics-preset`).
    pub preset: String,
    /// `llmload`, `vllm`, `guidellm`, `aiperf`, `mlperf`.
    pub tools: Vec<String>,
    pub rows: Vec<DefinitionRow>,
}

/// One metric under every tool's definition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct DefinitionRow {
    /// Stable key, e.g. `ttft_mean_ms`, `tpot_p99_ms`, `output_tokens_per_s`.
    pub metric: String,
    /// What a person reads, e.g. `TTFT mean (ms)`.
    pub label: String,
    /// One value per tool, `None` where that tool does not define it or the
    /// run lacks what it needs.
    pub values: Vec<Option<f64>>,
    /// One short phrase per tool saying how its cell was computed, e.g.
    /// `first token − send, successes`.
    pub how: Vec<String>,
}
