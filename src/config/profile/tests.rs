//! The profile's loading, checking and templates, pinned by message: every
//! error names its JSON path, and a profile that checks resolves.

use std::collections::BTreeMap;
use std::env::VarError;
use std::time::Duration;

use serde_json::Value;

use super::load::humanize;
use super::*;
use crate::config::resolve::resolve;
use crate::plan::{ArrivalKind, Load, StagePlan};

const S: u64 = 1_000_000_000;

const EXAMPLE: &str = r#"{
  "endpoint": "http://127.0.0.1:8000/v1/chat/completions",
  "api": "openai-chat",
  "model": "demo",
  "max_tokens": 32,
  "stream": true,
  "warmup": "1s",
  "arrival": "poisson",
  "stages": [
{"concurrency": 8, "duration": "5s"},
{"rate": 50, "duration": "5s"},
{"rate_from": 20, "rate_to": 100, "duration": "5s"}
  ],
  "scenarios": [
{"name": "chat", "weight": 70, "turns": {"min": 2, "max": 4},
 "content": {"mode": "scripted", "script": ["Hi", "tell me more", "and then?", "why?"]}},
{"name": "qa", "weight": 30, "stream": false, "max_tokens": 16,
 "content": {"mode": "pool", "prompts": ["What is 2+2?", "Name a color."]},
 "checks": {"min_completion_tokens": 1}}
  ],
  "thresholds": {"p99_ms": 5000, "error_rate": 0.01}
}"#;

fn no_env(_: &str) -> Result<String, VarError> {
    Err(VarError::NotPresent)
}

fn parse(text: &str) -> Result<Profile, String> {
    Profile::parse(text, "run.json", &no_env)
}

/// Parses `text` and returns its single load error.
fn load_err(text: &str) -> String {
    parse(text).expect_err("should not load")
}

/// Parses `text` and returns its validation errors.
fn invalid(text: &str) -> Vec<String> {
    parse(text).expect("loads").validate()
}

fn has(errs: &[String], needle: &str) -> bool {
    errs.iter().any(|e| e.contains(needle))
}

/// The single stage `text` resolves to.
fn stage(text: &str) -> StagePlan {
    let cfg = resolve(parse(text).unwrap()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(cfg.stages.len(), 1);
    cfg.stages[0].clone()
}

fn open(kind: ArrivalKind, rate_from: f64, rate_to: f64) -> Load {
    Load::Open {
        kind,
        rate_from,
        rate_to,
    }
}

#[test]
fn brief_example_loads_and_validates() {
    let p = parse(EXAMPLE).unwrap();
    assert_eq!(p.validate(), Vec::<String>::new());
    let cfg = resolve(p).unwrap_or_else(|e| panic!("{e:?}"));
    let stages = &cfg.stages;
    assert_eq!(stages.len(), 3);
    assert_eq!(stages[0].load, Load::Closed { concurrency: 8 });
    assert_eq!(stages[1].load, open(ArrivalKind::Poisson, 50.0, 50.0));
    assert_eq!(stages[2].load, open(ArrivalKind::Poisson, 20.0, 100.0));
    assert_eq!(stages[2].name, "stage-3");
    assert_eq!(stages[0].duration_ns, Some(5 * S));
    let sc = &cfg.scenarios;
    assert_eq!(sc[0].turns, TurnRange { min: 2, max: 4 });
    assert_eq!(sc[1].turns, TurnRange { min: 1, max: 1 });
    assert_eq!(sc[1].cache_mode, CacheMode::Bust);
    assert!(matches!(&sc[1].content, Some(Content::Pool { prompts }) if prompts.len() == 2));
    assert_eq!(sc[1].checks.min_completion_tokens, Some(1));
    assert_eq!(cfg.thresholds.p99_ms, Some(5000.0));
    assert_eq!(cfg.thresholds.error_rate, Some(0.01));
}

#[test]
fn templates_validate_and_round_trip() {
    for (p, unset) in [(Profile::example(), false), (Profile::full(), true)] {
        assert_eq!(p.validate(), Vec::<String>::new(), "{p:?}");
        let text = p.to_json(unset);
        assert_eq!(parse(&text).unwrap(), p, "{text}");
    }
    let full = Profile::full().to_json(true);
    let v: Value = serde_json::from_str(&full).unwrap();
    // Every field of the schema is present in the full template.
    let keys = v.as_object().unwrap();
    for k in [
        "ttft_timeout",
        "workers",
        "model",
        "rate",
        "api_key",
        "thresholds",
    ] {
        assert!(keys.contains_key(k), "{k} missing");
    }
    assert!(full.contains("\"rate\": 50,"), "{full}");
    let example = Profile::example().to_json(false);
    assert!(!example.contains("null"), "{example}");
    assert!(
        example.starts_with("{\n  \"endpoint\": "),
        "derive order: {example}"
    );
    let order: Vec<usize> = ["\"api\"", "\"max_tokens\"", "\"stages\"", "\"thresholds\""]
        .iter()
        .map(|k| full.find(k).unwrap())
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "derive order: {full}"
    );
    // A last member that was unset leaves no dangling comma.
    let tail = Profile {
        model: Some("m".to_string()),
        ..Profile::default()
    };
    assert_eq!(tail.to_json(false), "{\n  \"model\": \"m\"\n}\n");
    assert_eq!(Profile::default().to_json(false), "{}\n");
}

#[test]
fn unknown_fields_name_their_path() {
    let e = load_err(r#"{"max_token": 5}"#);
    assert!(e.starts_with("run.json: max_token: unknown field"), "{e}");
    assert!(e.contains("did you mean max_tokens?"), "{e}");
    let e = load_err(r#"{"stages": [{"rate": 1, "duration": 1}, {"rat": 5}]}"#);
    assert!(
        e.starts_with(
            "run.json: stages[1].rat: unknown field, expected one of name, concurrency, rate"
        ),
        "{e}"
    );
    let e =
        load_err(r#"{"scenarios": [{"name": "a", "content": {"mode": "pool", "prompt": ["x"]}}]}"#);
    assert!(
        e.starts_with(
            "run.json: scenarios[0].content.prompt: unknown field, expected one of mode, prompts"
        ),
        "{e}"
    );
    let e = load_err(r#"{"scenarios": [{"name": "a", "turns": {"mni": 1, "max": 2}}]}"#);
    assert_eq!(
        e,
        "run.json: scenarios[0].turns.mni: unknown field, expected one of min, max"
    );
    let e = load_err(r#"{"thresholds": {"p99": 5}}"#);
    assert!(
        e.starts_with("run.json: thresholds.p99: unknown field"),
        "{e}"
    );
}

#[test]
fn wrong_types_and_missing_fields_name_their_path() {
    let e = load_err(r#"{"stages": [{"rate": 1, "duration": 1}, {"rate": "fast"}]}"#);
    assert_eq!(
        e,
        r#"run.json: stages[1].rate: invalid type: string "fast", expected a number"#
    );
    let e = load_err(r#"{"max_tokens": -1}"#);
    assert_eq!(
        e,
        "run.json: max_tokens: invalid value: integer -1, expected a whole number ≥ 0"
    );
    let e = load_err(r#"{"stream": "yes"}"#);
    assert_eq!(
        e,
        r#"run.json: stream: invalid type: string "yes", expected a boolean"#
    );
    let e = load_err(r#"{"stages": {"rate": 1}}"#);
    assert_eq!(e, "run.json: stages: invalid type: map, expected an array");
    let e = load_err(r#"{"scenarios": [{"weight": 2}]}"#);
    assert_eq!(e, "run.json: scenarios[0]: missing field name");
    let e = load_err(r#"{"scenarios": [{"name": "a", "content": {"prompts": []}}]}"#);
    assert_eq!(e, "run.json: scenarios[0].content: missing field mode");
    let e = load_err(r#"{"warmup": "soon"}"#);
    assert!(
        e.starts_with("run.json: warmup: 'soon': expected a duration"),
        "{e}"
    );
    let e = load_err(r#"{"scenarios": [{"name": "a", "turns": "many"}]}"#);
    assert!(
        e.contains("scenarios[0].turns: invalid type: string \"many\", expected a number of turns"),
        "{e}"
    );
    let e = load_err(r#"{"headers": {"X-A": 5}}"#);
    assert_eq!(
        e,
        "run.json: headers.X-A: invalid type: integer 5, expected a string"
    );
    let e = load_err("[1]");
    assert_eq!(e, "run.json: invalid type: array, expected an object");
    let e = load_err(r#"{"thresholds": [100, 200]}"#);
    assert_eq!(
        e,
        "run.json: thresholds: invalid type: array, expected an object"
    );
    let e = load_err(r#"{"scenarios": [{"name": "a", "checks": [1]}]}"#);
    assert_eq!(
        e,
        "run.json: scenarios[0].checks: invalid type: array, expected an object"
    );
    let e = load_err(r#"{"stages": [[5, 1]]}"#);
    assert_eq!(
        e,
        "run.json: stages[0]: invalid type: array, expected an object"
    );
}

#[test]
fn bad_json_names_line_and_column() {
    let e = load_err("{\n  \"rate\": 5,\n}");
    assert!(
        e.starts_with("run.json:3:1: not valid JSON: trailing comma"),
        "{e}"
    );
}

#[test]
fn durations_take_strings_and_seconds() {
    let p =
        parse(r#"{"warmup": 2, "timeout": 1.5, "drain_timeout": "250ms", "live_interval": "0"}"#)
            .unwrap();
    assert_eq!(p.warmup.unwrap().0, Duration::from_secs(2));
    assert_eq!(p.timeout.unwrap().0, Duration::from_millis(1500));
    assert_eq!(p.drain_timeout.unwrap().0, Duration::from_millis(250));
    assert_eq!(p.live_interval.unwrap().0, Duration::ZERO);
    assert!(load_err(r#"{"warmup": -2}"#).contains("cannot be negative"));
}

#[test]
fn environment_expansion() {
    let env = |k: &str| match k {
        "KEY" => Ok("sk-123".to_string()),
        "HOST" => Ok("127.0.0.1:9".to_string()),
        _ => Err(VarError::NotPresent),
    };
    let text = r#"{"endpoint": "http://${HOST}/v1", "headers": {"Authorization": "Bearer ${KEY}"},
        "system": "costs $$5, or $6; ${KEY}$$", "stop": ["${KEY}"]}"#;
    let p = Profile::parse(text, "run.json", &env).unwrap();
    assert_eq!(p.endpoint.as_deref(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(p.headers.unwrap()["Authorization"], "Bearer sk-123");
    assert_eq!(p.system.as_deref(), Some("costs $5, or $6; sk-123$"));
    assert_eq!(p.stop.unwrap(), vec!["sk-123".to_string()]);
    // The key as exactly `${NAME}` stays the reference, read when resolved.
    let p = Profile::parse(r#"{"api_key": "${KEY}"}"#, "run.json", &env).unwrap();
    assert_eq!(p.api_key.as_deref(), Some("${KEY}"));
    let p = Profile::parse(r#"{"api_key": "k-${KEY}"}"#, "run.json", &env).unwrap();
    assert_eq!(p.api_key.as_deref(), Some("k-sk-123"));

    let text = r#"{"headers": {"Authorization": "Bearer ${OPENAI_KEY}"},
        "scenarios": [{"name": "a", "system": "${ALSO_UNSET}"}]}"#;
    let e = Profile::parse(text, "run.json", &env).unwrap_err();
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "run.json: headers.Authorization: environment variable OPENAI_KEY is not set",
            "run.json: scenarios[0].system: environment variable ALSO_UNSET is not set",
        ]
    );
    let e = Profile::parse(r#"{"model": "${KEY"}"#, "run.json", &env).unwrap_err();
    assert!(e.starts_with("run.json: model: unterminated '${'"), "{e}");
    let e = Profile::parse(r#"{"model": "${1X}"}"#, "run.json", &env).unwrap_err();
    assert!(e.contains("not a variable name"), "{e}");
}

#[test]
fn stage_errors_name_the_stage() {
    let errs = invalid(
        r#"{"stages": [
            {"duration": "5s"},
            {"rate": 5, "concurrency": 2, "duration": "5s"},
            {"rate": 0, "duration": "5s"},
            {"rate_from": 5, "duration": "5s"},
            {"concurrency": 0, "duration": "5s"},
            {"concurrency": 4},
            {"rate": 5, "duration": 0},
            {"rate_from": 1, "rate_to": 9, "requests": 10}
        ]}"#,
    );
    for needle in [
        "stages[0]: no load",
        "stages[1]: set only one of",
        "stages[2].rate: 0: rate must be a number > 0",
        "stages[3].rate_from: needs rate_to",
        "stages[4].concurrency: must be at least 1",
        "stages[5].duration: missing",
        "stages[6].duration: must be longer than 0",
        "stages[7].duration: a ramp needs a duration",
    ] {
        assert!(has(&errs, needle), "{needle} not in {errs:#?}");
    }
    assert_eq!(errs.len(), 8, "{errs:#?}");
    // A request cap stands in for a duration.
    assert!(invalid(r#"{"stages": [{"concurrency": 4, "requests": 100}]}"#).is_empty());
}

#[test]
fn stages_beside_a_single_stage_shape_are_ambiguous() {
    let errs =
        invalid(r#"{"rate": 5, "duration": "5s", "stages": [{"rate": 5, "duration": "5s"}]}"#);
    assert!(has(&errs, "rate: ambiguous beside stages"), "{errs:?}");
    assert!(has(&errs, "duration: ambiguous beside stages"), "{errs:?}");
    assert!(has(&invalid(r#"{"stages": []}"#), "stages: empty"));
}

#[test]
fn single_stage_resolves_like_bench() {
    let s = &stage("{}");
    assert_eq!(s.load, Load::Closed { concurrency: 64 });
    assert_eq!(s.duration_ns, Some(10 * S));
    let s = &stage(r#"{"rate": 20, "requests": 100}"#);
    assert_eq!(s.load, open(ArrivalKind::Poisson, 20.0, 20.0));
    assert_eq!((s.duration_ns, s.requests), (None, Some(100)));
    let s = &stage(r#"{"mode": "offline"}"#);
    assert_eq!((s.load, s.requests), (Load::Offline, Some(1000)));
    assert_eq!(
        stage(r#"{"mode": "uniform", "rate": 3}"#).load,
        open(ArrivalKind::Uniform, 3.0, 3.0)
    );
    let errs = invalid(r#"{"mode": "uniform", "arrival": "poisson", "rate": 3}"#);
    assert_eq!(errs, ["arrival: poisson contradicts mode uniform"]);
    assert!(has(
        &invalid(r#"{"mode": "poisson"}"#),
        "rate: mode poisson needs a rate"
    ));
    assert!(has(
        &invalid(r#"{"mode": "fast"}"#),
        "mode: 'fast': expected one of offline"
    ));
    assert!(has(
        &invalid(r#"{"mode": "offline", "concurrency": 3}"#),
        "concurrency: applies to mode concurrency"
    ));
    assert!(has(
        &invalid(r#"{"concurrency": 8, "connections": 4}"#),
        "connections: 4 is below the concurrency 8"
    ));
}

#[test]
fn scenario_errors_name_the_scenario() {
    let errs = invalid(
        r#"{"scenarios": [
            {"name": "a", "weight": 0, "turns": {"min": 3, "max": 2}},
            {"name": "a", "turns": 0, "content": {"mode": "pool"}},
            {"name": "c", "content": {"mode": "scripted", "script": []}},
            {"name": "d", "content": {"mode": "sized", "approx_input_tokens": 0, "prompts": ["x"]}},
            {"name": "e", "content": {"mode": "poem"}},
            {"name": "f", "api": "grpc", "cache_mode": "warm", "max_tokens": 0,
             "checks": {"min_completion_tokens": 9, "max_completion_tokens": 2, "status": 42}},
            {"name": "g", "content": {"mode": "dataset"}, "headers": {"Bad Name": "x"}}
        ]}"#,
    );
    for needle in [
        "scenarios[0].weight: 0: weight must be a number > 0",
        "scenarios[0].turns: min 3 is above max 2",
        "scenarios[1].name: 'a' names two scenarios",
        "scenarios[1].turns: a conversation has at least 1 turn",
        "scenarios[1].content: mode pool needs prompts",
        "scenarios[2].content.script: empty",
        "scenarios[3].content.approx_input_tokens: must be at least 1",
        "scenarios[3].content.prompts: not used by mode sized",
        "scenarios[4].content.mode: 'poem': expected pool, scripted, sized or dataset",
        "scenarios[5].api: unknown API 'grpc'; expected one of openai-chat",
        "scenarios[5].cache_mode: 'warm': expected bust or natural",
        "scenarios[5].max_tokens: must be at least 1",
        "scenarios[5].checks: min_completion_tokens 9 is above max_completion_tokens 2",
        "scenarios[5].checks.status: 42: not an HTTP status",
        "scenarios[6].content: mode dataset needs dataset",
        "scenarios[6].headers.Bad Name: not a valid header name",
    ] {
        assert!(has(&errs, needle), "{needle} not in {errs:#?}");
    }
    assert_eq!(errs.len(), 16, "{errs:#?}");
}

#[test]
fn top_level_errors_name_the_field() {
    let errs = invalid(
        r#"{"api": "soap", "endpoint": "ftp://x", "order": "sorted", "arrival": "bursty",
            "cache_mode": "warm", "temperature": -1, "top_p": 0, "max_tokens": 0,
            "dataset": "a.jsonl", "synthetic": "isl=1,osl=1", "connections": 0,
            "thresholds": {"p95_ms": -1, "error_rate": 1.5}, "timeout": "0s",
            "ttft_timeout": "10m", "correlation": {"header": "x y"}, "workers": 0}"#,
    );
    for needle in [
        "api: unknown API 'soap'",
        "endpoint: 'ftp://x': expected http://host:port[/path]",
        "order: 'sorted': expected sequential, shuffle, random or single:INDEX",
        "arrival: 'bursty': expected uniform or poisson",
        "cache_mode: 'warm': expected bust or natural",
        "temperature: -1: expected a number ≥ 0",
        "top_p: 0: expected a number in (0, 1]",
        "max_tokens: must be at least 1",
        "synthetic: dataset and synthetic are alternatives",
        "connections: must be at least 1",
        "thresholds.p95_ms: -1: expected a number ≥ 0",
        "thresholds.error_rate: 1.5: expected a fraction from 0 to 1",
        "timeout: must be longer than 0",
        "ttft_timeout: 600s is longer than timeout",
        "correlation.header: not a valid header name",
        "workers: 0: expected 1 to 64",
    ] {
        assert!(has(&errs, needle), "{needle} not in {errs:#?}");
    }
    assert!(has(
        &invalid(r#"{"endpoint": "localhost:8000"}"#),
        "endpoint: 'localhost:8000': expected http://"
    ));
}

#[test]
fn overlay_flags_win() {
    let mut p = parse(EXAMPLE).unwrap();
    p.headers = Some(BTreeMap::from([
        ("Authorization".to_string(), "Bearer file".to_string()),
        ("X-Tenant".to_string(), "a".to_string()),
    ]));
    let flags = Profile {
        endpoint: Some("http://127.0.0.1:9".to_string()),
        max_tokens: Some(7),
        headers: Some(BTreeMap::from([(
            "authorization".to_string(),
            "Bearer flag".to_string(),
        )])),
        ..Profile::default()
    };
    p.overlay(&flags);
    assert_eq!(p.endpoint.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(p.max_tokens, Some(7));
    assert_eq!(
        p.model.as_deref(),
        Some("demo"),
        "unset flags keep the profile's"
    );
    assert_eq!(p.stages.as_ref().map(Vec::len), Some(3));
    let h = p.headers.as_ref().unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h["authorization"], "Bearer flag");
    assert_eq!(h["X-Tenant"], "a");

    // A load-shape flag replaces the profile's stages.
    p.overlay(&Profile {
        rate: Some(100.0),
        ..Profile::default()
    });
    assert!(p.stages.is_none());
    assert_eq!(p.validate(), Vec::<String>::new());
    let cfg = resolve(p).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(cfg.stages[0].load, open(ArrivalKind::Poisson, 100.0, 100.0));
}

#[test]
fn a_key_flag_replaces_the_profiles_key_file_and_the_other_way() {
    let file = || Profile {
        api_key_file: Some("/run/secrets/key".into()),
        ..Profile::default()
    };
    let key = || Profile {
        api_key: Some("k".to_string()),
        ..Profile::default()
    };
    let mut p = file();
    p.overlay(&key());
    assert_eq!((p.api_key.as_deref(), p.api_key_file), (Some("k"), None));
    let mut p = key();
    p.overlay(&file());
    assert_eq!(p.api_key, None);
    assert_eq!(p.api_key_file, file().api_key_file);
}

#[test]
fn humanize_keeps_unknown_messages() {
    assert_eq!(humanize("something `odd`"), "something odd");
}
