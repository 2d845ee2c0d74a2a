//! Declarative run profiles (`llmload bench --profile run.json`): one JSON
//! file holding every `bench` flag under its snake_case name, plus what flags
//! cannot say well — stages, weighted scenarios, multi-turn content, response
//! checks and SLO thresholds. The top-level fields are declared with their
//! flags in `config::settings` (which writes [`Profile`]); this module holds
//! the defaults and the nested shapes (stages, scenarios, checks,
//! thresholds); `load` reads a file, `templates` writes one, and
//! `config::resolve` turns it into the typed run, with every error named by
//! its JSON path.
//!
//! The main trade-off: the serde shapes stay loose (every field optional,
//! stage and content kinds as flat records) so that a profile with several
//! mistakes reports all of them with their paths, instead of serde stopping
//! at the first one with "data did not match any variant".

mod load;
pub(crate) mod templates;
pub(crate) mod typed;
pub(crate) mod validate;
pub(crate) mod values;

#[cfg(test)]
mod tests;

/// The profile reader on text, for the `profile` fuzz target
/// (`llmload::profile_fuzzing`); nothing else uses it.
#[doc(hidden)]
pub mod fuzzing {
    /// Reads `text` as `--profile` does, with one variable set (`FUZZ`);
    /// `Ok` holds the profile as it would be recorded (serialized), `Err`
    /// the message.
    pub fn read(text: &str) -> Result<String, String> {
        let env = |k: &str| {
            if k == "FUZZ" {
                Ok("8000".to_string())
            } else {
                Err(std::env::VarError::NotPresent)
            }
        };
        let p = super::Profile::parse(text, "fuzz.json", &env)?;
        Ok(serde_json::to_string(&p).expect("a profile serializes"))
    }
}

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub(crate) use crate::config::settings::Profile;
pub(crate) use typed::{CacheMode, Content, Scenario, TurnRange};
use values::ser_num;
pub(crate) use values::{HumanBytes, HumanDuration, Turns};

/// The values a setting takes when it is not set, typed: `resolve` reads
/// them, help and the settings reference show them (`{NAME}` in help text),
/// `init --full` and the summary's `config` write them. A default that
/// depends on another setting or on the machine (workers, connections in
/// closed loop, ttft_timeout) is described at its setting instead.
pub(crate) mod defaults {
    use std::time::Duration;

    use super::{CacheMode, HumanBytes};
    use crate::config::settings::defaults;
    use crate::dataset::Order;
    use crate::plan::{
        ArrivalKind, EventsMode, IoChoice, MetricsPreset, ServerMetrics, TokenPolicy,
    };

    defaults! {
        API: &str = "openai-chat";
        CONCURRENCY: usize = 64;
        DURATION: Duration = Duration::from_secs(10);
        /// Offline mode's request count when neither duration nor requests
        /// is set.
        OFFLINE_REQUESTS: u64 = 1000;
        WARMUP: Duration = Duration::ZERO;
        MAX_TOKENS: u32 = 128;
        STREAM: bool = true;
        ORDER: Order = Order::Sequential;
        SEED: u64 = 0;
        TOKEN_SOURCE: TokenPolicy = TokenPolicy::Auto;
        /// The in-flight bound of offline and open-loop runs.
        CONNECTIONS: usize = 1024;
        TIMEOUT: Duration = Duration::from_secs(300);
        CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
        DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
        LIVE_INTERVAL: Duration = Duration::from_secs(10);
        METRICS_PRESET: MetricsPreset = MetricsPreset::Llmload;
        SERVER_METRICS: ServerMetrics = ServerMetrics::Auto;
        SERVER_METRICS_INTERVAL: Duration = Duration::from_secs(1);
        IO: IoChoice = IoChoice::Auto;
        EVENTS: EventsMode = EventsMode::All;
        /// Output text kept per response (for `--record-output`,
        /// `--tokenizer`, checks and conversation histories); the rest is
        /// counted, not kept.
        MAX_OUTPUT_TEXT: HumanBytes = HumanBytes(4 << 20);
        ARRIVAL: ArrivalKind = ArrivalKind::Poisson;
        CACHE_MODE: CacheMode = CacheMode::Bust;
        CORRELATION_HEADER: &str = "x-request-id";
        UUID_IN_PROMPT: bool = true;
        /// Connections carry one request after another; false opens a new
        /// one for every request.
        KEEP_ALIVE: bool = true;
        /// A run whose first requests all fail alike, for a reason load
        /// cannot change, stops.
        FAIL_FAST: bool = true;
        /// How many first completions `fail_fast` judges.
        FAIL_FAST_FIRST: u64 = 8;
        // Switches: off unless given.
        IGNORE_EOS: bool = false;
        INSECURE: bool = false;
        PIN: bool = false;
        QUIET: bool = false;
        VERBOSE: bool = false;
        RECORD_OUTPUT: bool = false;
        URING_SQPOLL: bool = false;
        WEIGHT: f64 = 1.0;
        TURNS: u32 = 1;
        /// The one stage of a run without `stages`.
        STAGE_NAME: &str = "main";
        /// MLPerf's early-stopping estimates are written unless turned off.
        EARLY_STOPPING: bool = true;

        // `preset: mlperf`: MLPerf's defaults where they differ from ours
        // (`config/schema.py`, `config/runtime_settings.py`).
        /// `max_new_tokens`.
        MLPERF_MAX_TOKENS: u32 = 1024;
        /// `scheduler_random_seed` and `dataloader_random_seed`.
        MLPERF_SEED: u64 = 42;
        /// `min_duration_ms`: it sizes the request count, it is not a clock.
        MLPERF_MIN_DURATION: Duration = Duration::from_secs(600);
        /// The requests per second a count is sized by when no rate is given.
        MLPERF_QPS: f64 = 10.0;
        MLPERF_ORDER: Order = Order::Shuffle;
        MLPERF_CACHE_MODE: CacheMode = CacheMode::Natural;
    }
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
