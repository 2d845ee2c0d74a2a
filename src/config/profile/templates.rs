//! The profiles `llmload init` writes: a short example, and the full
//! template with every top-level field (unset ones as `null`, so the file
//! lists the whole schema). Both go through the derived serializer in field
//! order; the only switch is whether unset top-level fields are written,
//! which the schema's `skip_serializing_if = "unset"` reads from a
//! thread-local flag for the length of one `to_json` call (serde gives a
//! skip predicate no other way to see how it was called).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Map;

use super::{
    ChecksSpec, ContentSpec, Correlation, HumanBytes, HumanDuration, Profile, ScenarioSpec,
    StageSpec, ThresholdsSpec, Turns, defaults,
};

thread_local! {
    /// Set while [`Profile::to_json`] writes unset fields as `null`.
    static SHOW_UNSET: Cell<bool> = const { Cell::new(false) };
}

/// The top-level fields' `skip_serializing_if`: an unset field is left out,
/// unless the full template is being written.
pub(super) fn unset<T>(v: &Option<T>) -> bool {
    v.is_none() && !SHOW_UNSET.get()
}

impl Profile {
    /// The profile `llmload init` writes: a three-stage run (closed loop,
    /// constant rate, rate sweep) over a multi-turn chat scenario and a
    /// checked Q&A scenario, with two thresholds.
    pub(crate) fn example() -> Profile {
        let secs = |s| Some(HumanDuration(Duration::from_secs(s)));
        Profile {
            endpoint: Some("http://127.0.0.1:8000/v1/chat/completions".to_string()),
            api: Some(defaults::API.to_string()),
            model: Some("demo".to_string()),
            max_tokens: Some(32),
            stream: Some(true),
            warmup: secs(1),
            arrival: Some("poisson".to_string()),
            stages: Some(vec![
                StageSpec {
                    name: Some("closed-8".to_string()),
                    concurrency: Some(8),
                    duration: secs(5),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("rate-50".to_string()),
                    rate: Some(50.0),
                    duration: secs(5),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("sweep-20-100".to_string()),
                    rate_from: Some(20.0),
                    rate_to: Some(100.0),
                    duration: secs(5),
                    ..StageSpec::default()
                },
            ]),
            scenarios: Some(vec![
                ScenarioSpec {
                    name: "chat".to_string(),
                    weight: Some(70.0),
                    turns: Some(Turns::Range { min: 2, max: 4 }),
                    content: Some(ContentSpec {
                        mode: "scripted".to_string(),
                        script: Some(strings(&["Hi", "tell me more", "and then?", "why?"])),
                        ..ContentSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
                ScenarioSpec {
                    name: "qa".to_string(),
                    weight: Some(30.0),
                    stream: Some(false),
                    max_tokens: Some(16),
                    content: Some(ContentSpec {
                        mode: "pool".to_string(),
                        prompts: Some(strings(&["What is 2+2?", "Name a color."])),
                        ..ContentSpec::default()
                    }),
                    checks: Some(ChecksSpec {
                        min_completion_tokens: Some(1),
                        ..ChecksSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
            ]),
            thresholds: Some(ThresholdsSpec {
                p99_ms: Some(5000.0),
                error_rate: Some(0.01),
                ..ThresholdsSpec::default()
            }),
            ..Profile::default()
        }
    }

    /// Every top-level field, each at its default; a field whose default is
    /// "absent" or derived (model, workers, ttft_timeout …) is `null`, and so
    /// are the single-stage fields, which `stages` replaces. Stages show
    /// each load kind, scenarios each self-contained content mode.
    pub(crate) fn full() -> Profile {
        let d = |d: Duration| Some(HumanDuration(d));
        let secs = |s| d(Duration::from_secs(s));
        Profile {
            endpoint: Some("http://127.0.0.1:8000/v1/chat/completions".to_string()),
            api: Some(defaults::API.to_string()),
            warmup: d(defaults::WARMUP),
            arrival: Some(defaults::ARRIVAL.name().to_string()),
            connections: Some(defaults::CONNECTIONS),
            max_tokens: Some(defaults::MAX_TOKENS),
            stream: Some(defaults::STREAM),
            order: Some(defaults::ORDER.name().to_string()),
            token_source: Some(defaults::TOKEN_SOURCE.name().to_string()),
            stop: Some(Vec::new()),
            ignore_eos: Some(false),
            extra_body: Some(Map::new()),
            headers: Some(BTreeMap::new()),
            insecure: Some(false),
            keep_alive: Some(defaults::KEEP_ALIVE),
            cache_mode: Some(defaults::CACHE_MODE.name().to_string()),
            correlation: Some(Correlation {
                header: Some(defaults::CORRELATION_HEADER.to_string()),
                uuid_in_prompt: Some(defaults::UUID_IN_PROMPT),
            }),
            timeout: d(defaults::TIMEOUT),
            connect_timeout: d(defaults::CONNECT_TIMEOUT),
            drain_timeout: d(defaults::DRAIN_TIMEOUT),
            seed: Some(defaults::SEED),
            early_stopping: Some(defaults::EARLY_STOPPING),
            pin: Some(false),
            quiet: Some(false),
            live_interval: d(defaults::LIVE_INTERVAL),
            metrics_preset: Some(defaults::METRICS_PRESET.name().to_string()),
            server_metrics: Some(defaults::SERVER_METRICS.to_string()),
            server_metrics_interval: d(defaults::SERVER_METRICS_INTERVAL),
            io: Some(defaults::IO.to_string()),
            uring_sqpoll: Some(false),
            events: Some(defaults::EVENTS.to_string()),
            record_output: Some(false),
            max_output_text: Some(HumanBytes(defaults::MAX_OUTPUT_TEXT)),
            stages: Some(vec![
                StageSpec {
                    name: Some("ceiling".to_string()),
                    concurrency: Some(defaults::CONCURRENCY),
                    duration: d(defaults::DURATION),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("steady".to_string()),
                    rate: Some(50.0),
                    duration: secs(30),
                    requests: Some(1500),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("sweep".to_string()),
                    rate_from: Some(10.0),
                    rate_to: Some(200.0),
                    duration: secs(60),
                    ..StageSpec::default()
                },
            ]),
            scenarios: Some(vec![
                ScenarioSpec {
                    name: "qa".to_string(),
                    weight: Some(60.0),
                    stream: Some(false),
                    max_tokens: Some(64),
                    turns: Some(Turns::Fixed(1)),
                    content: Some(ContentSpec {
                        mode: "pool".to_string(),
                        prompts: Some(strings(&[
                            "What is the capital of France?",
                            "Explain TCP slow start in two sentences.",
                            "Name three prime numbers.",
                        ])),
                        ..ContentSpec::default()
                    }),
                    checks: Some(ChecksSpec {
                        not_contains: Some(strings(&["error"])),
                        min_completion_tokens: Some(1),
                        status: Some(200),
                        ..ChecksSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
                ScenarioSpec {
                    name: "chat".to_string(),
                    weight: Some(30.0),
                    turns: Some(Turns::Range { min: 2, max: 4 }),
                    think_time: d(Duration::from_millis(500)),
                    content: Some(ContentSpec {
                        mode: "scripted".to_string(),
                        script: Some(strings(&[
                            "Hi, I need help planning a trip.",
                            "Tell me more.",
                            "And then?",
                            "Summarize the plan.",
                        ])),
                        ..ContentSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
                ScenarioSpec {
                    name: "long-context".to_string(),
                    weight: Some(10.0),
                    max_tokens: Some(256),
                    cache_mode: Some("natural".to_string()),
                    content: Some(ContentSpec {
                        mode: "sized".to_string(),
                        approx_input_tokens: Some(2000),
                        ..ContentSpec::default()
                    }),
                    checks: Some(ChecksSpec {
                        max_completion_tokens: Some(256),
                        ..ChecksSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
            ]),
            thresholds: Some(ThresholdsSpec {
                ttft_p95_ms: Some(2000.0),
                ttft_p99_ms: None,
                tpot_p99_ms: None,
                p95_ms: Some(15000.0),
                p99_ms: Some(30000.0),
                error_rate: Some(0.01),
                min_rps: Some(1.0),
                abort_on_fail: Some(false),
            }),
            ..Profile::default()
        }
    }

    /// Pretty JSON in field order. `show_unset` writes unset top-level
    /// fields as `null` (the full template lists every field); otherwise
    /// they are left out.
    pub(crate) fn to_json(&self, show_unset: bool) -> String {
        SHOW_UNSET.set(show_unset);
        let pretty = serde_json::to_string_pretty(self);
        SHOW_UNSET.set(false);
        pretty.expect("a profile serializes") + "\n"
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
