//! Run configuration: a profile and flags merged (`profile`), resolved once
//! (`resolve`) into one validated value that the engine wiring and the
//! report read. Secrets stay in it only as long as needed to build request
//! headers; the form reports show has them redacted.

pub(crate) mod audit;
pub(crate) mod bytes;
pub(crate) mod duration;
pub(crate) mod mlperf;
pub(crate) mod profile;
pub(crate) mod resolve;
pub(crate) mod run_length;
pub(crate) mod settings;
pub(crate) mod slo;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::accuracy::{AccuracySpec, Phase};
use crate::dataset::{DatasetSpec, Order, SyntheticSpec};
use crate::http::endpoint::redact_url;
use crate::http::headers::{REDACTED, is_secret_header};
use crate::plan::{Limits, StagePlan, Thresholds, TokenPolicy};
use crate::protocol::{Protocol, Sampling};
use profile::{CacheMode, Profile, Scenario};
use run_length::RunLength;

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
    /// Sizes the first stage once the dataset is loaded (`sized_stages`):
    /// MLPerf's rule, or `min_requests`/`min_duration`.
    pub run_length: Option<RunLength>,
    pub warmup_ns: u64,
    /// Warm-up requests issued before measuring (0: none).
    pub warmup_requests: u64,
    pub connections: usize,
    pub openloop_max_inflight: Option<u64>,
    pub scenarios: Vec<Scenario>,
    pub thresholds: Thresholds,
    pub limits: Limits,
    /// Seeds the arrival schedule (and the scenario each arrival is of).
    pub scheduler_seed: u64,
    /// Seeds the sample order and synthetic prompts.
    pub dataloader_seed: u64,
    /// The top level's cache mode (a scenario may have its own).
    pub cache_mode: CacheMode,
    /// MLPerf's early-stopping estimates in the MLPerf files.
    pub early_stopping: bool,
    pub correlation_header: Option<String>,
    pub uuid_in_prompt: bool,
    pub live_interval_ns: u64,
    /// Goodput's bounds; empty: no goodput.
    pub slo: crate::plan::Slo,
    /// Whose definitions the headline numbers use.
    pub metrics_preset: crate::plan::MetricsPreset,
    /// Where the endpoint's own metrics are scraped, and how often.
    pub server_metrics: crate::plan::ServerMetrics,
    pub server_metrics_interval_ns: u64,
    /// `--io` as asked; the backend is chosen against the kernel at start.
    pub io: crate::plan::IoChoice,
    pub uring_sqpoll: bool,
    pub events: crate::plan::EventsMode,
    /// Local addresses to connect from, round-robin; empty: the kernel's
    /// choice.
    pub source_addrs: Vec<std::net::IpAddr>,
    pub record_output: bool,
    pub workers: usize,
    pub pin: bool,
    /// Stop when the first requests all fail alike (`--fail-fast`).
    pub fail_fast: bool,
    /// Unset: `results/<UTC timestamp>`, named when the run starts.
    pub out: Option<PathBuf>,
    pub quiet: bool,
    /// Print report.txt whole at the end (`--verbose`).
    pub verbose: bool,
    /// Which phases run: performance, accuracy or both.
    pub phase: Phase,
    /// The accuracy datasets, run after the performance phase.
    pub accuracy: Vec<AccuracySpec>,
    /// Said before the run starts; none stops it.
    pub warnings: Vec<String>,
    /// `shard` as written; `auto` is read from the environment by
    /// [`BenchConfig::place_shard`], which fills `shard`.
    pub shard_spec: Option<crate::shard::ShardSpec>,
    /// `shards`: the count `auto` needs under an Indexed Job.
    pub shards: Option<u32>,
    /// This process's shard; `None`: the run is not sharded.
    pub shard: Option<crate::shard::Shard>,
    /// `start_at`, Unix ns: the schedule starts at this instant.
    pub start_at_ns: Option<u64>,
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
    /// Settles which shard this process is (`auto` reads `env`); `given`
    /// says where a fixed `I/N` came from (`flag` or `profile`). Refuses
    /// what a shard cannot do: an accuracy phase over part of a dataset.
    pub(crate) fn place_shard(
        &mut self,
        given: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        let Some(spec) = self.shard_spec else {
            return Ok(());
        };
        let shard = crate::shard::resolve(spec, self.shards, given, env)?;
        if shard.count > 1 && self.phase.runs_accuracy() {
            return Err(format!(
                "--phase {} scores the whole accuracy dataset, which {} shards would each see only part of: run the accuracy phase unsharded (--phase perf for the shards)",
                self.phase.name(),
                shard.count
            ));
        }
        self.shard = Some(shard);
        Ok(())
    }

    /// The seed MLPerf's warm-up draws its order and schedule from.
    pub(crate) fn mlperf_warmup_seed(&self) -> u64 {
        self.profile
            .mlperf
            .warmup_seed
            .unwrap_or(mlperf::WARMUP_RANDOM_SEED)
    }

    /// The connections this process opens: its shard's part of the run's.
    pub(crate) fn own_connections(&self) -> usize {
        match &self.shard {
            Some(s) => s.share_at_least_1(self.connections as u64) as usize,
            None => self.connections,
        }
    }

    /// The stages as they run: the first one sized by the run-length rule
    /// for content of `samples` distinct prompts, `rows` of which make one
    /// dataset pass (`None`: generated prompts, no passes); and why, for
    /// the report.
    pub(crate) fn sized_stages(
        &self,
        rows: Option<u64>,
        samples: u64,
    ) -> (Vec<StagePlan>, Option<String>) {
        let mut stages = self.stages.clone();
        let (Some(rule), Some(first)) = (&self.run_length, stages.first_mut()) else {
            return (stages, None);
        };
        let sized = rule.size(rows, samples);
        first.requests = sized.requests;
        first.min_ns = sized.min_ns;
        (stages, Some(sized.why))
    }

    /// The resolved configuration as reports show it: every setting (the
    /// summary's `config` block) with its effective value — as given, its
    /// default, or what resolving derived (workers, connections, mode,
    /// seeds …), each by its declaration (`settings::config_entries`) —
    /// credentials redacted (the key, secret header values by name, URL
    /// query values).
    pub(crate) fn to_json(
        &self,
        out: &Path,
        endpoint_url: &str,
        model: &str,
        builtin: bool,
    ) -> Value {
        let mut v = serde_json::to_value(&self.profile).expect("a profile serializes to JSON");
        let o = v.as_object_mut().expect("a profile is an object");
        let ctx = settings::ConfigContext {
            out,
            endpoint_url,
            model,
        };
        settings::config_entries(self, &ctx, o);
        o.insert("builtin_endpoint".into(), builtin.into());
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
