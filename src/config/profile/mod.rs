//! Declarative run profiles (`llmload bench --profile run.json`): one JSON
//! file holding every `bench` flag under its snake_case name, plus what flags
//! cannot say well — stages, weighted scenarios, multi-turn content, response
//! checks and SLO thresholds. This module is the file format (the serde
//! schema) and its defaults; `load` reads a file, `overlay` puts flags over
//! it, `templates` writes one, and `config::resolve` turns it into the typed
//! run, with every error named by its JSON path.
//!
//! The main trade-off: the serde shapes stay loose (every field optional,
//! stage and content kinds as flat records) so that a profile with several
//! mistakes reports all of them with their paths, instead of serde stopping
//! at the first one with "data did not match any variant".

mod load;
mod overlay;
mod templates;
pub(crate) mod typed;
pub(crate) mod validate;
mod values;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use templates::unset;
pub(crate) use typed::{CacheMode, Content, Scenario, TurnRange};
use values::ser_num;
pub(crate) use values::{HumanBytes, HumanDuration, Turns};

/// The values a profile field takes when it is not set. `bench` has the same
/// defaults for its flags (its help shows them through `defaults::shown`);
/// a default that depends on another setting or on the machine (workers,
/// connections in closed loop, ttft_timeout) is described at its field
/// instead.
pub(crate) mod defaults {
    use std::time::Duration;

    use super::CacheMode;
    use crate::config::bytes::format_bytes;
    use crate::config::duration::format_duration;
    use crate::dataset::Order;
    use crate::plan::{ArrivalKind, MetricsPreset, TokenPolicy};

    pub(crate) const API: &str = "openai-chat";
    pub(crate) const CONCURRENCY: usize = 64;
    pub(crate) const DURATION: Duration = Duration::from_secs(10);
    /// Offline mode's request count when neither duration nor requests is set.
    pub(crate) const OFFLINE_REQUESTS: u64 = 1000;
    pub(crate) const WARMUP: Duration = Duration::ZERO;
    pub(crate) const MAX_TOKENS: u32 = 128;
    pub(crate) const STREAM: bool = true;
    pub(crate) const ORDER: Order = Order::Sequential;
    pub(crate) const SEED: u64 = 0;
    pub(crate) const TOKEN_SOURCE: TokenPolicy = TokenPolicy::Auto;
    /// The in-flight bound of offline and open-loop runs.
    pub(crate) const CONNECTIONS: usize = 1024;
    pub(crate) const TIMEOUT: Duration = Duration::from_secs(300);
    pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    pub(crate) const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
    pub(crate) const LIVE_INTERVAL: Duration = Duration::from_secs(10);
    pub(crate) const METRICS_PRESET: MetricsPreset = MetricsPreset::Llmload;
    pub(crate) const SERVER_METRICS: &str = "auto";
    pub(crate) const SERVER_METRICS_INTERVAL: Duration = Duration::from_secs(1);
    pub(crate) const IO: &str = "auto";
    pub(crate) const EVENTS: &str = "all";
    /// Output text kept per response (for `--record-output`, `--tokenizer`,
    /// checks and conversation histories); the rest is counted, not kept.
    pub(crate) const MAX_OUTPUT_TEXT: u64 = 4 << 20;
    pub(crate) const ARRIVAL: ArrivalKind = ArrivalKind::Poisson;
    pub(crate) const CACHE_MODE: CacheMode = CacheMode::Bust;
    pub(crate) const CORRELATION_HEADER: &str = "x-request-id";
    pub(crate) const UUID_IN_PROMPT: bool = true;
    /// Connections carry one request after another; false opens a new one
    /// for every request.
    pub(crate) const KEEP_ALIVE: bool = true;
    pub(crate) const WEIGHT: f64 = 1.0;
    pub(crate) const TURNS: u32 = 1;
    /// The one stage of a run without `stages`.
    pub(crate) const STAGE_NAME: &str = "main";
    /// MLPerf's early-stopping estimates are written unless turned off.
    pub(crate) const EARLY_STOPPING: bool = true;

    // `preset: mlperf`: MLPerf's defaults where they differ from ours
    // (`config/schema.py`, `config/runtime_settings.py`).
    /// `max_new_tokens`.
    pub(crate) const MLPERF_MAX_TOKENS: u32 = 1024;
    /// `scheduler_random_seed` and `dataloader_random_seed`.
    pub(crate) const MLPERF_SEED: u64 = 42;
    /// `min_duration_ms`: it sizes the request count, it is not a clock.
    pub(crate) const MLPERF_MIN_DURATION: Duration = Duration::from_secs(600);
    /// The requests per second a count is sized by when no rate is given.
    pub(crate) const MLPERF_QPS: f64 = 10.0;
    pub(crate) const MLPERF_ORDER: Order = Order::Shuffle;
    pub(crate) const MLPERF_CACHE_MODE: CacheMode = CacheMode::Natural;

    /// The constant called `name` in this module, as help text shows it
    /// (`TIMEOUT` → `300s`); `None` for a name that is not one.
    pub(crate) fn shown(name: &str) -> Option<String> {
        let on = |b: bool| if b { "on" } else { "off" }.to_string();
        Some(match name {
            "API" => API.to_string(),
            "CONCURRENCY" => CONCURRENCY.to_string(),
            "DURATION" => format_duration(DURATION),
            "OFFLINE_REQUESTS" => OFFLINE_REQUESTS.to_string(),
            "WARMUP" => format_duration(WARMUP),
            "MAX_TOKENS" => MAX_TOKENS.to_string(),
            "STREAM" => on(STREAM),
            "ORDER" => ORDER.name().to_string(),
            "SEED" => SEED.to_string(),
            "TOKEN_SOURCE" => TOKEN_SOURCE.name().to_string(),
            "CONNECTIONS" => CONNECTIONS.to_string(),
            "TIMEOUT" => format_duration(TIMEOUT),
            "CONNECT_TIMEOUT" => format_duration(CONNECT_TIMEOUT),
            "DRAIN_TIMEOUT" => format_duration(DRAIN_TIMEOUT),
            "LIVE_INTERVAL" => format_duration(LIVE_INTERVAL),
            "METRICS_PRESET" => METRICS_PRESET.name().to_string(),
            "SERVER_METRICS" => SERVER_METRICS.to_string(),
            "SERVER_METRICS_INTERVAL" => format_duration(SERVER_METRICS_INTERVAL),
            "IO" => IO.to_string(),
            "EVENTS" => EVENTS.to_string(),
            "MAX_OUTPUT_TEXT" => format_bytes(MAX_OUTPUT_TEXT),
            "ARRIVAL" => ARRIVAL.name().to_string(),
            "CACHE_MODE" => CACHE_MODE.name().to_string(),
            "CORRELATION_HEADER" => CORRELATION_HEADER.to_string(),
            "KEEP_ALIVE" => KEEP_ALIVE.to_string(),
            "EARLY_STOPPING" => EARLY_STOPPING.to_string(),
            "MLPERF_MAX_TOKENS" => MLPERF_MAX_TOKENS.to_string(),
            "MLPERF_SEED" => MLPERF_SEED.to_string(),
            "MLPERF_MIN_DURATION" => format_duration(MLPERF_MIN_DURATION),
            "MLPERF_QPS" => MLPERF_QPS.to_string(),
            _ => return None,
        })
    }
}

/// A run profile, as written in the file. `None` everywhere means "not set":
/// the default applies, and [`Profile::overlay`] can tell a flag that was
/// given from one that was not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Profile {
    /// `http[s]://host[:port][/path]`; unset: the built-in endpoint.
    #[serde(skip_serializing_if = "unset")]
    pub endpoint: Option<String>,
    /// Several endpoints sharing one workload; replaces `endpoint`.
    #[serde(skip_serializing_if = "unset")]
    pub endpoints: Option<Vec<String>>,
    /// `mlperf`: MLPerf's defaults, run rules, metric contract and result
    /// files (`docs/DESIGN.md`, "MLPerf mode").
    #[serde(skip_serializing_if = "unset")]
    pub preset: Option<String>,
    #[serde(skip_serializing_if = "unset")]
    pub api: Option<String>,
    /// Unset: the first model listed at `/v1/models`.
    #[serde(skip_serializing_if = "unset")]
    pub model: Option<String>,

    // Load shape of a single-stage run; `stages` replaces all five.
    #[serde(skip_serializing_if = "unset")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "unset", serialize_with = "ser_num")]
    pub rate: Option<f64>,
    #[serde(skip_serializing_if = "unset")]
    pub concurrency: Option<usize>,
    /// The measured length; under `preset: mlperf` a minimum that only
    /// sizes the request count (as `min_duration`).
    #[serde(skip_serializing_if = "unset")]
    pub duration: Option<HumanDuration>,
    /// Measured requests; under `preset: mlperf` the exact count (MLPerf's
    /// `n_samples_to_issue`).
    #[serde(skip_serializing_if = "unset")]
    pub requests: Option<u64>,

    #[serde(skip_serializing_if = "unset")]
    pub warmup: Option<HumanDuration>,
    /// Warm-up by count: this many requests, with the first stage's load,
    /// before measuring (after `warmup`'s time too when both are set).
    #[serde(skip_serializing_if = "unset")]
    pub warmup_requests: Option<u64>,
    /// Issue until at least this long is measured; under `preset: mlperf`
    /// (where `duration` means the same) it only sizes the request count
    /// (MLPerf's `min_duration_ms`, default 600s), it is not a clock.
    #[serde(skip_serializing_if = "unset")]
    pub min_duration: Option<HumanDuration>,
    /// Issue at least this many requests (rounded up to whole dataset
    /// passes under `preset: mlperf`).
    #[serde(skip_serializing_if = "unset")]
    pub min_requests: Option<u64>,
    /// Wall-clock cap on the measured run; `"0"` is none (MLPerf's
    /// `max_duration_ms`, the only clock of an MLPerf run).
    #[serde(skip_serializing_if = "unset")]
    pub max_duration: Option<HumanDuration>,
    /// Open-loop inter-arrival law: `uniform` or `poisson`.
    #[serde(skip_serializing_if = "unset")]
    pub arrival: Option<String>,
    /// Unset: `concurrency` in closed loop, 1024 otherwise.
    #[serde(skip_serializing_if = "unset")]
    pub connections: Option<usize>,
    /// Open-loop in-flight bound; unset: `connections`.
    #[serde(skip_serializing_if = "unset")]
    pub openloop_max_inflight: Option<u64>,

    #[serde(skip_serializing_if = "unset")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "unset")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "unset")]
    pub system: Option<String>,
    /// `PATH[,key=value...]`, as `--dataset`.
    #[serde(skip_serializing_if = "unset")]
    pub dataset: Option<String>,
    /// `isl=N,osl=M[,...]`, as `--synthetic`.
    #[serde(skip_serializing_if = "unset")]
    pub synthetic: Option<String>,
    #[serde(skip_serializing_if = "unset")]
    pub order: Option<String>,
    #[serde(skip_serializing_if = "unset")]
    pub tokenizer: Option<PathBuf>,
    /// `auto`, `tokenizer` or `usage`, as `--token-source`.
    #[serde(skip_serializing_if = "unset")]
    pub token_source: Option<String>,

    // Sampling: sent only when set.
    #[serde(skip_serializing_if = "unset", serialize_with = "ser_num")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "unset", serialize_with = "ser_num")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "unset")]
    pub stop: Option<Vec<String>>,
    #[serde(skip_serializing_if = "unset")]
    pub ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "unset")]
    pub min_tokens: Option<u32>,
    #[serde(skip_serializing_if = "unset")]
    pub extra_body: Option<Map<String, Value>>,

    /// Extra request headers, name → value.
    #[serde(skip_serializing_if = "unset")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Sent as a Bearer token; unset: `$OPENAI_API_KEY`. Write
    /// `"${OPENAI_API_KEY}"` rather than the key itself.
    #[serde(skip_serializing_if = "unset")]
    pub api_key: Option<String>,
    /// A file holding the key (a trailing newline is dropped): keeps it out
    /// of the command line, where `ps` shows it. An alternative to `api_key`.
    #[serde(skip_serializing_if = "unset")]
    pub api_key_file: Option<PathBuf>,

    // TLS, for https endpoints; scenarios inherit each field they do not set.
    /// PEM file of CA certificates trusted beside the system store.
    #[serde(skip_serializing_if = "unset")]
    pub ca_cert: Option<PathBuf>,
    /// Skip certificate verification (the report says so).
    #[serde(skip_serializing_if = "unset")]
    pub insecure: Option<bool>,
    /// The name verified and sent as SNI instead of the URL's host.
    #[serde(skip_serializing_if = "unset")]
    pub tls_server_name: Option<String>,
    /// Client certificate chain (PEM) for gateways that require one (mTLS).
    #[serde(skip_serializing_if = "unset")]
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM); its contents are never
    /// shown.
    #[serde(skip_serializing_if = "unset")]
    pub client_key: Option<PathBuf>,
    /// false: a new connection for every request (`Connection: close`), to
    /// measure connection and handshake capacity.
    #[serde(skip_serializing_if = "unset")]
    pub keep_alive: Option<bool>,

    /// `bust` (a per-conversation UUID defeats prompt caches) or `natural`.
    #[serde(skip_serializing_if = "unset")]
    pub cache_mode: Option<String>,
    #[serde(skip_serializing_if = "unset")]
    pub correlation: Option<Correlation>,

    #[serde(skip_serializing_if = "unset")]
    pub timeout: Option<HumanDuration>,
    /// No first token by then fails the request as `ttft_timeout`; unset:
    /// only `timeout` applies.
    #[serde(skip_serializing_if = "unset")]
    pub ttft_timeout: Option<HumanDuration>,
    #[serde(skip_serializing_if = "unset")]
    pub connect_timeout: Option<HumanDuration>,
    #[serde(skip_serializing_if = "unset")]
    pub drain_timeout: Option<HumanDuration>,

    #[serde(skip_serializing_if = "unset")]
    pub seed: Option<u64>,
    /// Seed of the arrival schedule alone; unset: `seed` (42 under
    /// `preset: mlperf`, where `seed` is the sampling seed only).
    #[serde(skip_serializing_if = "unset")]
    pub scheduler_seed: Option<u64>,
    /// Seed of the dataset order and synthetic prompts alone; unset: `seed`
    /// (42 under `preset: mlperf`).
    #[serde(skip_serializing_if = "unset")]
    pub dataloader_seed: Option<u64>,
    /// MLPerf's early-stopping estimates in the MLPerf files (default on).
    #[serde(skip_serializing_if = "unset")]
    pub early_stopping: Option<bool>,
    /// Unset: CPUs − 1, at least 1.
    #[serde(skip_serializing_if = "unset")]
    pub workers: Option<usize>,
    #[serde(skip_serializing_if = "unset")]
    pub pin: Option<bool>,
    /// Unset: `results/<UTC timestamp>`.
    #[serde(skip_serializing_if = "unset")]
    pub out: Option<PathBuf>,
    #[serde(skip_serializing_if = "unset")]
    pub quiet: Option<bool>,
    /// Progress line period; `"0"` disables it.
    #[serde(skip_serializing_if = "unset")]
    pub live_interval: Option<HumanDuration>,
    /// Keep each response's text in the events file.
    #[serde(skip_serializing_if = "unset")]
    pub record_output: Option<bool>,
    /// Output text kept per response, `"4MiB"` or bytes; a longer response
    /// is marked `output_truncated` (a conversation's turn fails).
    #[serde(skip_serializing_if = "unset")]
    pub max_output_text: Option<HumanBytes>,
    /// `perf`, `acc` or `both` (unset: `both` when there are accuracy
    /// datasets, else `perf`).
    #[serde(skip_serializing_if = "unset")]
    pub phase: Option<String>,
    /// Accuracy datasets, each `[acc:]PATH[,key=value...]`
    /// (`--accuracy-dataset`).
    #[serde(skip_serializing_if = "unset")]
    pub accuracy_datasets: Option<Vec<String>>,
    /// Builds each prompt from a dataset row's columns (`{column}`), for the
    /// datasets without a `template=` of their own.
    #[serde(skip_serializing_if = "unset")]
    pub prompt_template: Option<String>,
    /// Goodput's bounds: `ttft=200ms,tpot=40ms,e2e=10s`, any subset.
    #[serde(skip_serializing_if = "unset")]
    pub slo: Option<String>,
    /// Whose definitions the headline numbers use (`llmload`, `vllm`,
    /// `guidellm`, `aiperf`, `mlperf`).
    #[serde(skip_serializing_if = "unset")]
    pub metrics_preset: Option<String>,
    /// The endpoint's Prometheus metrics: a URL, `auto` or `off`.
    #[serde(skip_serializing_if = "unset")]
    pub server_metrics: Option<String>,
    #[serde(skip_serializing_if = "unset")]
    pub server_metrics_interval: Option<HumanDuration>,
    /// How the workers move bytes: `epoll`, `uring` or `auto`.
    #[serde(skip_serializing_if = "unset")]
    pub io: Option<String>,
    /// io_uring's kernel submission thread (`--io uring` only).
    #[serde(skip_serializing_if = "unset")]
    pub uring_sqpoll: Option<bool>,
    /// Which requests events.jsonl records: `all`, `errors` or `none`.
    #[serde(skip_serializing_if = "unset")]
    pub events: Option<String>,
    /// Local addresses connections are bound to, round-robin:
    /// `127.0.0.1-127.0.0.4`, `a,b`, or one.
    #[serde(skip_serializing_if = "unset")]
    pub source_addrs: Option<String>,
    /// This process's shard of the run: `I/N` (I from 1) or `auto` (the
    /// scheduler's variables), as `--shard`.
    #[serde(skip_serializing_if = "unset")]
    pub shard: Option<String>,
    /// Shards in the run, for `shard: auto` under a Kubernetes Indexed Job
    /// (unset: `$LLMLOAD_SHARDS`).
    #[serde(skip_serializing_if = "unset")]
    pub shards: Option<u32>,
    /// The instant the schedule starts, RFC 3339 or Unix seconds, as
    /// `--start-at`.
    #[serde(
        default,
        skip_serializing_if = "unset",
        deserialize_with = "values::text_or_number"
    )]
    pub start_at: Option<String>,

    #[serde(skip_serializing_if = "unset")]
    pub stages: Option<Vec<StageSpec>>,
    #[serde(skip_serializing_if = "unset")]
    pub scenarios: Option<Vec<ScenarioSpec>>,
    #[serde(skip_serializing_if = "unset")]
    pub thresholds: Option<ThresholdsSpec>,
}

/// One stage as written: exactly one of `concurrency`, `rate` or
/// `rate_from` + `rate_to`; resolving turns it into a `plan::StagePlan`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StageSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub rate_from: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub rate_to: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<HumanDuration>,
    /// A request cap: the stage ends at `duration` or after this many
    /// requests, whichever comes first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
}

/// One weighted scenario as written. Unset overrides inherit the top level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScenarioSpec {
    pub name: String,
    /// Share of the load (closed loop: of the in-flight slots), relative to
    /// the other scenarios' weights; default 1.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    // TLS and connection reuse, as at the top level (each unset field
    // inherits the top level's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_cert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_alive: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Turns>,
    /// Pause between a reply and the conversation's next turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_time: Option<HumanDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksSpec>,
}

/// What a scenario sends, as written: `mode` picks which other field is
/// read; [`Content`] is the typed form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContentSpec {
    /// `pool`, `scripted`, `sized` or `dataset`.
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approx_input_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Group the dataset's rows into multi-turn conversations by this column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

/// Assertions on each successful response; a response that fails one is
/// counted as `check_failed`, not as a success.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChecksSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_contains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// The expected HTTP status (default: any 2xx).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// SLO thresholds checked per stage. A latency or `min_rps` of 0 means "not
/// set" (as in the gateway tester's profiles); `error_rate` 0 means no
/// failure is tolerated, and an absent field is not checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThresholdsSpec {
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub ttft_p95_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub ttft_p99_ms: Option<f64>,
    /// The p99 of the requests' time per output token.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub tpot_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub p95_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub p99_ms: Option<f64>,
    /// Failed / issued, 0..=1.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub error_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub min_rps: Option<f64>,
    /// Stop after the first stage that breaks a threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort_on_fail: Option<bool>,
}

/// How a conversation's UUID is attached to its requests, the join key to
/// server-side records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Correlation {
    /// Header carrying the UUID; `""` sends none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Put the UUID at the front of the first user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid_in_prompt: Option<bool>,
}
