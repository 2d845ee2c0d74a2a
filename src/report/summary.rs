//! `summary.json`: every number of a run, machine-readable, as one typed
//! `Summary` that every other rendering (`report.txt`, `report.csv`,
//! `metrics.prom`, `compare`) reads, so a field one of them needs and the
//! summary lacks is a compile error. Field names and units follow DESIGN.md
//! (times in milliseconds as floats, lateness in microseconds, rates per
//! second); `docs/summary.schema.json`, generated from these types and
//! their doc comments (`schema.rs`), is the contract, and the integration
//! tests validate real output against it. The engine's reasons (limits,
//! incomplete runs, a threshold abort) become English here and nowhere
//! else.
//!
//! Reading is lenient so `compare` can read any llmload's summary: beyond
//! `tool` and `stages`, a field a document lacks (one added after it was
//! written) reads as zero, empty, or — for `complete` and
//! `thresholds_passed` — true, so that absence never reads as a failure.

pub(crate) mod definitions;
pub(crate) mod distributions;
pub(crate) mod goodput;
#[cfg(test)]
mod schema;
pub(crate) mod server;
pub(crate) mod shard;
pub(crate) mod timeline;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::RunInfo;
use super::events::EventsStats;
use crate::clock::format_utc;
use crate::metrics::block::{Block, INPUT_SOURCES, OUTPUT_SOURCES};
use crate::metrics::endpoints::EndpointStats;
use crate::metrics::run::{
    BUSY_SHARE, ConnectionStats, FailedFast, Incomplete, LATE_P99_NS, Limit, QUEUED_SHARE,
    RunResult, ThresholdAbort,
};
use crate::metrics::series::Rollup;
use crate::metrics::thresholds::Verdict;
pub(crate) use crate::plan::LoadMode as Load;
use crate::plan::{self, IoChosen};
use crate::protocol::Finish;
use crate::sys::info::HostInfo;

const MS: f64 = 1e6;
const US: f64 = 1e3;

/// The machine-readable result of one `llmload bench` run (or of `llmload
/// merge`). Times are milliseconds (floats) unless a field name says
/// otherwise (`_us`, `_s`, `_ns`); rates are per second. Fields may be
/// added; none is removed or renamed without a version change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[cfg_attr(test, schemars(transform = schema::require("info")))]
#[serde(default)]
pub(crate) struct Summary {
    /// Always `llmload`.
    #[cfg_attr(test, schemars(extend("const" = "llmload")))]
    pub tool: String,
    pub version: String,
    /// Every issued request was accounted for, no worker was lost and the
    /// run was not interrupted.
    #[serde(default = "yes")]
    pub complete: bool,
    /// Stopped by SIGINT, SIGTERM or SIGHUP.
    pub interrupted: bool,
    /// Stopped by `--fail-fast`: the first requests all failed alike for a
    /// reason load cannot change (the reason is the first of
    /// `incomplete_reasons`).
    pub stopped_early: bool,
    pub incomplete_reasons: Vec<String>,
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    #[cfg_attr(
        test,
        schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"))
    )]
    pub started_at: String,
    /// What was measured: URL, API and model.
    pub target: String,
    /// The resolved configuration, secrets redacted: free-form, its shape is
    /// the profile's.
    #[cfg_attr(test, schemars(schema_with = "schema::config"))]
    pub config: Value,
    /// Where the prompts came from (`source`, `samples`, `skipped`,
    /// `skip_examples`, per scenario when several): free-form, its shape is
    /// the dataset loader's.
    #[cfg_attr(test, schemars(schema_with = "schema::dataset"))]
    pub dataset: Value,
    /// The whole run's numbers (warmup excluded).
    #[serde(flatten)]
    pub run: Numbers,
    pub warmup: Warmup,
    pub generator: Generator,
    /// The machine the run ran on (what `llmload info --json` prints), read
    /// once at the start; absent from summaries older than it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, schemars(required))]
    pub info: Option<HostInfo>,
    /// How connections were opened and what opening them cost.
    pub connections: Connections,
    /// How the https endpoints were reached; absent when none was https.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSummary>,
    #[cfg_attr(test, schemars(length(min = 1)))]
    pub stages: Vec<Stage>,
    /// Each scenario over the whole run.
    pub scenarios: Vec<Scenario>,
    /// Each endpoint's share of the measured requests, in the order the
    /// endpoints were listed (one entry for a single endpoint).
    pub endpoints: Vec<EndpointSummary>,
    #[serde(default = "yes")]
    pub thresholds_passed: bool,
    /// Why later stages were skipped, if a threshold stopped the run.
    pub aborted_on_threshold: Option<String>,
    pub events: EventsStats,
    /// What a reader must know to read the numbers right.
    pub notes: Vec<String>,
    /// Counters of the built-in endpoint, when the run started one:
    /// free-form, its shape is the server's.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, schemars(schema_with = "schema::object"))]
    pub builtin_endpoint: Option<Value>,
    /// The accuracy phase: each dataset's score, samples and failures
    /// (`accuracy::AccuracyReport::summary_json`); absent when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, schemars(schema_with = "schema::object"))]
    pub accuracy: Option<Value>,
    /// The run second by second; absent from older summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<timeline::Timeline>,
    /// The endpoint's own metrics over the run, when scraped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<server::ServerMetricsSummary>,
    /// The headline metrics under every tool's definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definitions: Option<definitions::Definitions>,
    /// The headline numbers under `--metrics-preset`'s definitions (the
    /// preset's column of `definitions`); `latency_ms` and `throughput`
    /// stay ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<definitions::Headline>,
    /// This run was one shard of a larger one (`--shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shard::ShardSummary>,
    /// This run was merged from its shards (`llmload merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<shard::MergedSummary>,
    /// What a merge needs beyond the rendered numbers; absent from
    /// summaries older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<super::state::RunState>,
}

fn yes() -> bool {
    true
}

/// The numbers every slice of a run has: the whole run, a stage, a scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Numbers {
    pub requests: Requests,
    /// Up to three distinct messages per failure key (`http_503`,
    /// `inband_error`, …): what the endpoint said when it failed.
    #[cfg_attr(test, schemars(schema_with = "schema::error_messages"))]
    pub error_messages: BTreeMap<String, Vec<String>>,
    /// The measured window, s.
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub window_s: f64,
    pub throughput: Throughput,
    pub tokens: Tokens,
    pub latency_ms: Latency,
    /// Requests that met every `--slo` bound; absent without `--slo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput: Option<goodput::Goodput>,
    /// CDFs and length histograms for plots; absent from older summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributions: Option<distributions::Distributions>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Requests {
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    /// Failures by key (`reset`, `http_503`, …); only keys that occurred.
    #[cfg_attr(test, schemars(schema_with = "schema::errors"))]
    pub errors: BTreeMap<String, u64>,
}

impl Requests {
    /// failed / issued, when anything was issued.
    pub(crate) fn error_rate(&self) -> Option<f64> {
        (self.issued > 0).then(|| self.failed as f64 / self.issued as f64)
    }
}

/// Per second over the slice's window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Throughput {
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub requests_per_s: f64,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub output_tokens_per_s: f64,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub input_tokens_per_s: f64,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub total_tokens_per_s: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Tokens {
    pub output_total: u64,
    pub input_total: u64,
    /// Where output counts came from: usage, tokenizer, events, mixed,
    /// unknown or none.
    #[cfg_attr(test, schemars(extend("enum" = ["usage", "tokenizer", "events", "mixed", "unknown", "none"])))]
    pub output_source: String,
    /// Where input counts came from: input_ids, tokenizer, chat_template,
    /// usage, mixed, unknown or none.
    #[cfg_attr(test, schemars(extend("enum" = ["input_ids", "tokenizer", "chat_template", "usage", "mixed", "unknown", "none"])))]
    pub input_source: String,
    /// Successful requests per output count source.
    pub output_source_requests: BTreeMap<String, u64>,
    /// Successful requests per input count source.
    pub input_source_requests: BTreeMap<String, u64>,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub output_per_request_mean: f64,
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub input_per_request_mean: f64,
    /// Input tokens per successful request.
    pub isl: Rollup,
    /// Output tokens per successful request.
    pub osl: Rollup,
    pub text_bytes: u64,
    /// Requests whose kept output text was cut short (the text cap, the
    /// worker's budget, the record's room).
    pub output_truncated: u64,
    /// Successful requests the tokenizer should have counted and did not;
    /// counted by their events (streams) or unknown instead.
    pub output_untokenized: u64,
    /// Successful requests by finish reason; only reasons that occurred.
    pub finish_reasons: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Latency {
    pub e2e: Rollup,
    pub service: Rollup,
    pub ttft: Rollup,
    pub ttft_sched: Rollup,
    /// Request-weighted TPOT (vLLM).
    pub tpot: Rollup,
    /// MLPerf's TPOT: (t_end − t_first_token) / tokenizer tokens after
    /// the first event's text, per streamed request the tokenizer counted.
    pub tpot_mlperf: Rollup,
    /// Token-weighted TPOT (guidellm): decode time over decode tokens, ms.
    pub tpot_token_weighted: Option<f64>,
    pub itl: Rollup,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Warmup {
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
}

/// How the load generator itself coped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Generator {
    pub send_lateness_us: Rollup,
    pub ring_full: u64,
    pub held_back: u64,
    pub waited_for_connection: u64,
    pub completion_ring_full: u64,
    pub itl_truncated: u64,
    pub connections_opened: u64,
    pub stale_connection_retries: u64,
    #[cfg_attr(test, schemars(range(min = 1)))]
    pub workers: usize,
    /// The busiest worker's share of wall time spent handling events.
    #[cfg_attr(test, schemars(range(min = 0, max = 1)))]
    pub worker_busy_max: f64,
    /// Completion records that could not be read; each stopped its worker
    /// and made the run incomplete.
    pub corrupt_records: u64,
    /// Most conversations in flight at once (warmup included).
    pub max_inflight: u64,
    /// Each worker's peak resident set, KiB, in worker order (0: unknown).
    pub worker_max_rss_kib: Vec<u64>,
    pub fd_limit: u64,
    /// Start of the run to the first request on the wire (a `--start-at`
    /// wait left out).
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub startup_ms: f64,
    pub limited_by_generator: bool,
    /// Why the generator, not the endpoint, limited the run.
    pub limits: Vec<String>,
    /// The I/O backend the workers ran (`--io`), and why; absent from
    /// older summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub io: Option<IoChosen>,
}

/// The run's connections: how many were opened, resumed a TLS session or
/// failed, and how long the TCP connect and the TLS handshake took, each
/// measured per connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Connections {
    /// Ready for requests (TCP connected and, for https, the TLS handshake
    /// done), warm-up connections included.
    pub opened: u64,
    /// TLS handshakes that resumed a session.
    pub resumed: u64,
    /// Attempts that ended without a usable connection.
    pub failed: u64,
    /// Connections opened during the measured window, per second of it.
    #[cfg_attr(test, schemars(range(min = 0)))]
    pub connects_per_s: f64,
    /// Connections were reused; false when some endpoint's carried one
    /// request each (`--keep-alive false`).
    pub keep_alive: bool,
    /// Connect start to TCP connected.
    pub tcp_connect_ms: Rollup,
    /// TCP connected to TLS handshake done; only when an endpoint was https.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshake_ms: Option<Rollup>,
}

/// What a document without the block reads as: nothing measured, and
/// connections reused (the only behaviour before the setting existed).
impl Default for Connections {
    fn default() -> Connections {
        Connections {
            opened: 0,
            resumed: 0,
            failed: 0,
            connects_per_s: 0.0,
            keep_alive: true,
            tcp_connect_ms: Rollup::default(),
            tls_handshake_ms: None,
        }
    }
}

impl Connections {
    /// Whether any connection was tried (an older document has none).
    pub(crate) fn any(&self) -> bool {
        self.opened + self.failed > 0 || self.tcp_connect_ms.count > 0
    }

    fn of(c: &ConnectionStats, window_ns: u64) -> Connections {
        let secs = window_ns as f64 / 1e9;
        Connections {
            opened: c.opened,
            resumed: c.resumed,
            failed: c.failed,
            connects_per_s: if secs > 0.0 {
                c.opened_in_window as f64 / secs
            } else {
                0.0
            },
            keep_alive: c.keep_alive,
            tcp_connect_ms: c.tcp_connect.rollup(MS),
            tls_handshake_ms: c.tls.then(|| c.tls_handshake.rollup(MS)),
        }
    }
}

/// How the run's https endpoints were reached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct TlsSummary {
    /// Some endpoint's certificate was not verified (`--insecure`).
    pub insecure: bool,
    pub endpoints: Vec<TlsEndpoint>,
}

/// One https endpoint and its settings (file paths only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct TlsEndpoint {
    /// As echoed: query values masked.
    pub url: String,
    /// The name verified and sent as SNI.
    pub server_name: String,
    /// The certificate was verified (false with `--insecure`).
    pub verify: bool,
    /// The `--ca-cert` file trusted beside the system store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_cert: Option<String>,
    /// The `--client-cert` file presented (mTLS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cert: Option<String>,
}

/// The line the report and summary show when verification was off.
pub(crate) const INSECURE_LINE: &str = "TLS verification OFF (--insecure): the server's certificate was not checked, so the endpoint's identity is unproven";

/// One stage: its load, its numbers, its scenarios and thresholds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[cfg_attr(test, schemars(transform = schema::require("load")))]
#[serde(default)]
pub(crate) struct Stage {
    pub name: String,
    /// How the stage released its requests: `mode` and its parameters.
    /// Always written (absent only from a document read that lacks it).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, schemars(required))]
    pub load: Option<Load>,
    #[serde(flatten)]
    pub numbers: Numbers,
    pub send_lateness_us: Rollup,
    /// The stage split by scenario, in profile order.
    pub scenarios: Vec<Scenario>,
    pub thresholds: Vec<Threshold>,
    #[serde(default = "yes")]
    pub thresholds_passed: bool,
}

/// One scenario of a stage or of the whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Scenario {
    pub name: String,
    #[serde(flatten)]
    pub numbers: Numbers,
    pub send_lateness_us: Rollup,
}

/// One endpoint's share of a run (warmup excluded): the requests that
/// reached it or tried to; a request that never got a connection (aborted,
/// lost with its worker) is on none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema), schemars(deny_unknown_fields))]
#[serde(default)]
pub(crate) struct EndpointSummary {
    /// As echoed: query values masked.
    pub url: String,
    /// Requests that reached the endpoint or tried to: completed + failed.
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    /// Failures by key, as `requests.errors`.
    #[cfg_attr(test, schemars(schema_with = "schema::errors"))]
    pub errors: BTreeMap<String, u64>,
    /// As `latency_ms.ttft` and `latency_ms.e2e`, for this endpoint.
    pub ttft_ms: Rollup,
    pub e2e_ms: Rollup,
}

impl EndpointSummary {
    fn of(e: &EndpointStats) -> EndpointSummary {
        EndpointSummary {
            url: e.url.clone(),
            issued: e.issued(),
            completed: e.completed,
            failed: e.failed,
            errors: e.errors.named().into_iter().collect(),
            ttft_ms: e.ttft.rollup(MS),
            e2e_ms: e.e2e.rollup(MS),
        }
    }
}

/// One threshold's outcome. The name stays a string so a summary naming a
/// threshold this version does not know still reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Threshold {
    /// `ttft_p95_ms`, `ttft_p99_ms`, `tpot_p99_ms`, `p95_ms`, `p99_ms`,
    /// `error_rate` or `min_rps`.
    #[cfg_attr(test, schemars(with = "crate::metrics::thresholds::ThresholdName"))]
    pub name: String,
    pub limit: f64,
    /// `None` when the stage had no data for it.
    pub value: Option<f64>,
    pub pass: bool,
}

impl From<&Verdict> for Threshold {
    fn from(v: &Verdict) -> Threshold {
        Threshold {
            name: v.name.name().to_string(),
            limit: v.limit,
            value: v.value,
            pass: v.pass,
        }
    }
}

impl Summary {
    /// Requests were sent (measured or warm-up) and not one succeeded: the
    /// first thing a reader must be told, before whether the run is
    /// complete.
    pub(crate) fn every_request_failed(&self) -> bool {
        let (r, w) = (&self.run.requests, &self.warmup);
        r.issued + w.issued > 0 && r.completed + w.completed == 0
    }

    /// `every request failed (64 issued, none succeeded)`.
    pub(crate) fn all_failed_line(&self) -> String {
        format!(
            "every request failed ({} issued, none succeeded)",
            self.run.requests.issued + self.warmup.issued
        )
    }

    /// The summary of `run`.
    pub(crate) fn build(run: &RunResult, info: &RunInfo) -> Summary {
        let g = &run.generator;
        let definitions = (run.total.issued > 0).then(|| {
            definitions::Definitions::of(&run.total, run.total_window_ns, info.metrics_preset)
        });
        Summary {
            tool: "llmload".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            complete: run.complete,
            interrupted: run.interrupted,
            stopped_early: run
                .incomplete_reasons
                .iter()
                .any(|r| matches!(r, Incomplete::FailedFast(_))),
            incomplete_reasons: run.incomplete_reasons.iter().map(incomplete).collect(),
            started_at: format_utc(info.started_wall_ns),
            target: info.target.clone(),
            config: info.config.clone(),
            dataset: info.dataset.clone(),
            run: Numbers::of(&run.total, run.total_window_ns, &run.slo),
            warmup: Warmup {
                issued: run.warmup.issued,
                completed: run.warmup.completed,
                failed: run.warmup.failed,
            },
            generator: Generator {
                send_lateness_us: run.total.send_lateness.rollup(US),
                ring_full: g.ring_full,
                held_back: g.held_back,
                waited_for_connection: g.waited_for_connection,
                completion_ring_full: g.completion_ring_full,
                itl_truncated: g.itl_truncated,
                connections_opened: g.connections_opened,
                stale_connection_retries: g.stale_retries,
                workers: g.workers,
                worker_busy_max: g.worker_busy_max,
                corrupt_records: g.corrupt_records,
                max_inflight: g.max_inflight,
                worker_max_rss_kib: g.worker_max_rss_kib.clone(),
                fd_limit: info.fd_limit,
                startup_ms: run.startup_ns as f64 / MS,
                limited_by_generator: !g.limits.is_empty(),
                limits: g.limits.iter().map(limit).collect(),
                io: info.io.clone(),
            },
            info: Some(info.host.clone()),
            connections: Connections::of(&run.connections, run.total_window_ns),
            tls: info.tls.clone(),
            stages: run
                .stages
                .iter()
                .map(|s| Stage {
                    name: s.name.clone(),
                    load: Some(s.load.into()),
                    numbers: Numbers::of(&s.block, s.window_ns, &run.slo),
                    send_lateness_us: s.block.send_lateness.rollup(US),
                    scenarios: s
                        .scenarios
                        .iter()
                        .map(|sc| Scenario::of(&sc.name, &sc.block, s.window_ns, &run.slo))
                        .collect(),
                    thresholds: s.thresholds.iter().map(Threshold::from).collect(),
                    thresholds_passed: s.thresholds.iter().all(|t| t.pass),
                })
                .collect(),
            scenarios: run
                .scenarios
                .iter()
                .map(|sc| Scenario::of(&sc.name, &sc.block, run.total_window_ns, &run.slo))
                .collect(),
            endpoints: run.endpoints.iter().map(EndpointSummary::of).collect(),
            thresholds_passed: run.thresholds_passed,
            aborted_on_threshold: run.aborted_on_threshold.as_ref().map(threshold_abort),
            events: info.events.clone(),
            notes: notes(info, &run.endpoints),
            builtin_endpoint: info.builtin_endpoint.clone(),
            accuracy: info.accuracy.as_ref().map(|a| a.summary_json()),
            timeline: timeline::Timeline::of(&run.timeline),
            server_metrics: info.server_metrics.clone(),
            definitions: definitions.clone(),
            headline: definitions.map(|d| d.headline()),
            shard: info.shard.clone(),
            merged: info.merged.clone(),
            state: Some(super::state::RunState::of(run)),
        }
    }

    /// Reads a summary document, or says why it is not one: the structure
    /// `compare` relies on (an object, `"tool": "llmload"`, a `stages` array
    /// of objects) first, then every field present must have its type.
    pub(crate) fn from_value(doc: Value) -> Result<Summary, String> {
        if !doc.is_object() {
            return Err("not a JSON object".into());
        }
        if doc["tool"] != "llmload" {
            return Err("no \"tool\": \"llmload\"".into());
        }
        let Some(stages) = doc["stages"].as_array() else {
            return Err("no \"stages\" array".into());
        };
        if let Some(i) = stages.iter().position(|s| !s.is_object()) {
            return Err(format!("stages[{i}] is not an object"));
        }
        serde_path_to_error::deserialize(doc).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                e.into_inner().to_string()
            } else {
                format!("{path}: {}", e.into_inner())
            }
        })
    }
}

impl Numbers {
    fn of(b: &Block, window_ns: u64, slo: &plan::Slo) -> Numbers {
        let secs = window_ns as f64 / 1e9;
        let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let mean = |n: u64| {
            if b.completed > 0 {
                n as f64 / b.completed as f64
            } else {
                0.0
            }
        };
        let by_source = |counts: &[u64], names: &[&str]| {
            names
                .iter()
                .zip(counts)
                .map(|(k, n)| (k.to_string(), *n))
                .collect()
        };
        Numbers {
            requests: Requests {
                issued: b.issued,
                completed: b.completed,
                failed: b.failed,
                errors: b.errors.named().into_iter().collect(),
            },
            error_messages: b.error_messages.clone(),
            window_s: secs,
            throughput: Throughput {
                requests_per_s: rate(b.completed),
                output_tokens_per_s: rate(b.output_tokens),
                input_tokens_per_s: rate(b.input_tokens),
                total_tokens_per_s: rate(b.output_tokens + b.input_tokens),
            },
            tokens: Tokens {
                output_total: b.output_tokens,
                input_total: b.input_tokens,
                output_source: b.output_source().into(),
                input_source: b.input_source().into(),
                output_source_requests: by_source(&b.output_sources, &OUTPUT_SOURCES),
                input_source_requests: by_source(&b.input_sources, &INPUT_SOURCES),
                output_per_request_mean: mean(b.output_tokens),
                input_per_request_mean: mean(b.input_tokens),
                isl: b.isl.rollup(1.0),
                osl: b.osl.rollup(1.0),
                text_bytes: b.text_bytes,
                output_truncated: b.output_truncated,
                output_untokenized: b.output_untokenized,
                finish_reasons: Finish::ALL
                    .iter()
                    .zip(b.finish)
                    .filter(|(_, n)| *n > 0)
                    .map(|(f, n)| (f.name().to_string(), n))
                    .collect(),
            },
            latency_ms: Latency {
                e2e: b.e2e.rollup(MS),
                service: b.service.rollup(MS),
                ttft: b.ttft.rollup(MS),
                ttft_sched: b.ttft_sched.rollup(MS),
                tpot: b.tpot.rollup(MS),
                tpot_mlperf: b.tpot_mlperf.rollup(MS),
                tpot_token_weighted: b.tpot_token_weighted_ns().map(|ns| ns / MS),
                itl: b.itl.rollup(MS),
            },
            goodput: goodput::Goodput::of(b, slo, window_ns),
            distributions: Some(distributions::Distributions::of(b)),
        }
    }
}

impl Scenario {
    fn of(name: &str, b: &Block, window_ns: u64, slo: &plan::Slo) -> Scenario {
        Scenario {
            name: name.to_string(),
            numbers: Numbers::of(b, window_ns, slo),
            send_lateness_us: b.send_lateness.rollup(US),
        }
    }
}

/// The run's notes, the insecure line first when verification was off,
/// then one per endpoint of several that took no measured request.
fn notes(info: &RunInfo, endpoints: &[EndpointStats]) -> Vec<String> {
    let insecure = info.tls.as_ref().is_some_and(|t| t.insecure);
    let idle = endpoints
        .iter()
        .filter(|e| endpoints.len() > 1 && e.issued() == 0)
        .map(|e| {
            format!(
                "endpoint {} took no measured request: its connections failed (see connections.failed) \
                 and new ones passed over it, or the run ended before it was needed",
                e.url
            )
        });
    insecure
        .then(|| INSECURE_LINE.to_string())
        .into_iter()
        .chain(info.notes.iter().cloned())
        .chain(idle)
        .collect()
}

/// `n of M requests (P%)`, or `n requests` when M is not known.
fn share(n: u64, of: u64, what: &str) -> String {
    if of == 0 {
        format!("{n} {what}(s)")
    } else {
        format!(
            "{n} of {of} {what}(s) ({:.1}%)",
            n as f64 * 100.0 / of as f64
        )
    }
}

/// Why the generator limited the run, for a person: the evidence, and the
/// threshold it passed.
fn limit(l: &Limit) -> String {
    let from = format!("threshold {}% of requests", QUEUED_SHARE * 100.0);
    match *l {
        Limit::RingFull { n, of } => format!(
            "{} found their worker's issue ring full ({from}): the workers could not keep up",
            share(n, of, "request")
        ),
        Limit::WaitedForConnection { n, of } => format!(
            "{} waited for a free connection ({from}): raise --connections",
            share(n, of, "request")
        ),
        Limit::HeldBack { n, of } => format!(
            "{} were held back by openloop_max_inflight ({from}; charged from their scheduled time)",
            share(n, of, "arrival")
        ),
        Limit::CompletionRingFull { n } => {
            format!(
                "completion records waited {n} time(s) for the parent to read them (threshold: any)"
            )
        }
        Limit::WorkerBusy { share } => format!(
            "a worker was busy {:.0}% of the time (threshold {:.0}%): add --workers or cores",
            share * 100.0,
            BUSY_SHARE * 100.0
        ),
        Limit::SendLateness { p99_ns, late, of } => format!(
            "send lateness p99 was {:.2} ms (threshold {} ms), {} later than {} ms ({from}): requests left later than scheduled",
            p99_ns as f64 / 1e6,
            LATE_P99_NS as f64 / 1e6,
            share(late, of, "send"),
            LATE_P99_NS as f64 / 1e6
        ),
        Limit::Descriptors { fds, ports } => {
            let fds = (fds > 0).then(|| {
                format!(
                    "the generator ran out of file descriptors: {fds} connect(s) failed (add --workers, or raise the limit: ulimit -n)"
                )
            });
            let ports = (ports > 0).then(|| {
                format!(
                    "the generator ran out of local ports: {ports} connect(s) failed (each source address has one ephemeral range per destination; add addresses with --source-addrs)"
                )
            });
            fds.into_iter().chain(ports).collect::<Vec<_>>().join("; ")
        }
    }
}

/// Why the run is incomplete, for a person.
pub(crate) fn incomplete(i: &Incomplete) -> String {
    match i {
        Incomplete::Interrupted => "interrupted by a signal".into(),
        Incomplete::InterruptedBeforeStart => {
            "interrupted by a signal while waiting for --start-at: the run never began, nothing was sent"
                .into()
        }
        Incomplete::FailedFast(f) => failed_fast(f),
        Incomplete::WorkerDied {
            worker,
            pid,
            how,
            lost,
        } => format!(
            "worker {worker} (pid {pid}) {how}; {lost} conversation(s) in flight on it were lost"
        ),
        Incomplete::CorruptRecord { worker, pid, lost } => format!(
            "worker {worker} (pid {pid}) wrote a completion record that could not be read and was stopped; {lost} conversation(s) in flight on it were lost"
        ),
        Incomplete::AccuracyPhase { why } => format!("the accuracy phase could not run: {why}"),
        Incomplete::NeverReported { lost } => {
            format!("{lost} conversation(s) were never reported by a worker after the abort")
        }
        Incomplete::ThresholdAbort(abort) => threshold_abort(abort),
        Incomplete::ShardMissing { index, count } => {
            format!("shard {index} of {count} missing: no summary.json found")
        }
        Incomplete::ShardPartial {
            index,
            count,
            reasons,
        } => format!(
            "shard {index} of {count} incomplete: {}",
            reasons.join("; ")
        ),
        Incomplete::ShardInconsistent { index, count, why } => {
            format!("shard {index} of {count} left out: its state is inconsistent: {why}")
        }
    }
}

/// The line a run stopped by `--fail-fast` is marked with.
pub(crate) fn failed_fast(f: &FailedFast) -> String {
    let mut s = format!(
        "stopped early (--fail-fast): the first {} requests all failed with {}",
        f.first, f.error
    );
    match (&f.cause, &f.message) {
        (Some(c), _) => {
            let _ = write!(s, ": {c}");
        }
        (None, Some(m)) => {
            let _ = write!(s, " ({m})");
        }
        (None, None) => {}
    }
    s.push_str(" (--no-fail-fast runs on)");
    s
}

fn threshold_abort(a: &ThresholdAbort) -> String {
    format!(
        "stage '{}' broke {}; later stages were skipped (abort_on_fail)",
        a.stage,
        a.broken
            .iter()
            .map(|b| b.name())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
pub(crate) mod tests;
