//! The profiles `llmload init` writes: a short example, and the full
//! template with every top-level field (unset ones as `null`, so the file
//! lists the whole schema). Both go through the derived serializer in field
//! order; the only switch is whether unset top-level fields are written
//! (`settings::showing_unset`). The full template's top-level values are
//! declared with each setting (`Profile::full`); its stages, scenarios and
//! thresholds, examples of each shape, are here.

use std::time::Duration;

use super::{
    ChecksSpec, ContentSpec, HumanDuration, Profile, ScenarioSpec, StageSpec, ThresholdsSpec,
    Turns, defaults,
};
use crate::config::settings::showing_unset;

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

    /// Pretty JSON in field order. `show_unset` writes unset top-level
    /// fields as `null` (the full template lists every field); otherwise
    /// they are left out.
    pub(crate) fn to_json(&self, show_unset: bool) -> String {
        showing_unset(show_unset, || serde_json::to_string_pretty(self))
            .expect("a profile serializes")
            + "\n"
    }
}

/// `init --full`'s stages: one of each load kind.
pub(crate) fn full_stages() -> Vec<StageSpec> {
    let d = |d: Duration| Some(HumanDuration(d));
    let secs = |s| d(Duration::from_secs(s));
    vec![
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
    ]
}

/// `init --full`'s scenarios: each self-contained content mode.
pub(crate) fn full_scenarios() -> Vec<ScenarioSpec> {
    let d = |d: Duration| Some(HumanDuration(d));
    vec![
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
    ]
}

/// `init --full`'s thresholds.
pub(crate) fn full_thresholds() -> ThresholdsSpec {
    ThresholdsSpec {
        ttft_p95_ms: Some(2000.0),
        ttft_p99_ms: None,
        tpot_p99_ms: None,
        p95_ms: Some(15000.0),
        p99_ms: Some(30000.0),
        error_rate: Some(0.01),
        min_rps: Some(1.0),
        abort_on_fail: Some(false),
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}
