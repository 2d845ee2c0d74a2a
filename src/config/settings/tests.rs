//! The declarations' products: flags into a profile (the special cases each
//! pinned), flags over a profile, and the table against the structs it
//! generated.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use argh::FromArgs;
use serde_json::json;

use super::*;
use crate::config::profile::{Correlation, HumanBytes, HumanDuration};

fn flags(args: &[&str]) -> BenchFlags {
    BenchFlags::from_args(&["llmload", "bench"], args).unwrap_or_else(|e| panic!("{}", e.output))
}

fn profile(args: &[&str]) -> Result<Profile, String> {
    flags(args).to_profile()
}

#[test]
fn flags_not_given_leave_the_profile_unset() {
    assert_eq!(profile(&[]), Ok(Profile::default()));
}

#[test]
fn each_flag_kind_becomes_its_field() {
    let p = profile(&[
        "--rate",
        "5",
        "--duration",
        "1.5m",
        "--max-output-text",
        "1MiB",
        "--insecure",
        "--stop",
        "a",
        "--stop",
        "b",
        "--keep-alive",
        "false",
    ])
    .unwrap();
    assert_eq!(p.rate, Some(5.0));
    assert_eq!(p.duration, Some(HumanDuration(Duration::from_secs(90))));
    assert_eq!(p.max_output_text, Some(HumanBytes(1 << 20)));
    assert_eq!(p.insecure, Some(true));
    assert_eq!(p.stop, Some(vec!["a".to_string(), "b".to_string()]));
    assert_eq!(p.keep_alive, Some(false));
    assert_eq!(
        (p.quiet, p.pin),
        (None, None),
        "a switch not given is unset"
    );
}

#[test]
fn stream_and_no_stream_are_one_setting() {
    assert_eq!(profile(&["--stream"]).unwrap().stream, Some(true));
    assert_eq!(profile(&["--no-stream"]).unwrap().stream, Some(false));
    assert_eq!(
        profile(&["--stream", "--no-stream"]).unwrap_err(),
        "--stream and --no-stream contradict each other"
    );
}

#[test]
fn special_flags_convert_as_declared() {
    let p = profile(&[
        "--endpoints",
        "http://a:1, http://b:2",
        "--header",
        "X-A: 1",
        "--header",
        "Authorization: Bearer k",
        "--extra-body",
        r#"{"top_k": 20}"#,
        "--correlation-header",
        "x-id",
        "--dataset",
        "acc:q.jsonl",
        "--accuracy-dataset",
        "r.jsonl",
    ])
    .unwrap();
    assert_eq!(
        p.endpoints,
        Some(vec!["http://a:1".to_string(), "http://b:2".to_string()])
    );
    let h = p.headers.unwrap();
    assert_eq!(
        (h["X-A"].as_str(), h["Authorization"].as_str()),
        ("1", "Bearer k")
    );
    assert_eq!(p.extra_body.unwrap()["top_k"], 20);
    assert_eq!(
        p.correlation,
        Some(Correlation {
            header: Some("x-id".to_string()),
            uuid_in_prompt: None
        })
    );
    // MLPerf's `--dataset acc:PATH` is the first accuracy dataset.
    assert_eq!(p.dataset, None);
    assert_eq!(
        p.accuracy_datasets,
        Some(vec!["acc:q.jsonl".to_string(), "r.jsonl".to_string()])
    );
    assert_eq!(
        profile(&["--dataset", "d.jsonl"])
            .unwrap()
            .dataset
            .as_deref(),
        Some("d.jsonl")
    );
    let e = profile(&["--extra-body", "[1]"]).unwrap_err();
    assert_eq!(e, "--extra-body '[1]': expected a JSON object");
    let e = profile(&["--extra-body", "{"]).unwrap_err();
    assert!(e.starts_with("--extra-body '{': not valid JSON"), "{e}");
    assert!(profile(&["--header", "no colon"]).is_err());
}

#[test]
fn joint_settings_clear_each_other_and_maps_merge() {
    let mut p = Profile {
        mode: Some("offline".into()),
        concurrency: Some(3),
        stages: Some(vec![Default::default()]),
        endpoints: Some(vec!["http://a:1".into()]),
        api_key_file: Some("/k".into()),
        headers: Some(BTreeMap::from([("X-A".to_string(), "1".to_string())])),
        extra_body: Some(json!({"a": 1, "b": 2}).as_object().unwrap().clone()),
        model: Some("m".into()),
        ..Profile::default()
    };
    p.overlay(&Profile {
        rate: Some(2.0),
        endpoint: Some("http://c:3".into()),
        api_key: Some("k".into()),
        headers: Some(BTreeMap::from([("x-a".to_string(), "2".to_string())])),
        extra_body: Some(json!({"b": 3}).as_object().unwrap().clone()),
        ..Profile::default()
    });
    assert_eq!((p.mode, p.concurrency, p.stages), (None, None, None));
    assert_eq!(p.rate, Some(2.0));
    assert_eq!(
        (p.endpoint.as_deref(), p.endpoints),
        (Some("http://c:3"), None)
    );
    assert_eq!((p.api_key.as_deref(), p.api_key_file), (Some("k"), None));
    assert_eq!(
        p.headers,
        Some(BTreeMap::from([("x-a".to_string(), "2".to_string())]))
    );
    assert_eq!(
        p.extra_body.unwrap(),
        *json!({"a": 1, "b": 3}).as_object().unwrap()
    );
    assert_eq!(
        p.model.as_deref(),
        Some("m"),
        "a flag not given keeps the field"
    );
}

/// The table names every field the profile has, once, and every flag
/// argh parses, once; a flag given once is set in the profile.
#[test]
fn the_table_matches_the_structs() {
    let fields: Vec<&str> = SETTINGS.iter().filter_map(|s| s.field).collect();
    let declared: BTreeSet<String> = fields.iter().map(|f| f.to_string()).collect();
    assert_eq!(declared.len(), fields.len(), "a field declared twice");
    let every = showing_unset(true, || serde_json::to_value(Profile::default())).unwrap();
    let every: BTreeSet<String> = every.as_object().unwrap().keys().cloned().collect();
    assert_eq!(declared, every);
    let flags: Vec<&str> = SETTINGS.iter().filter_map(|s| s.flag).collect();
    assert_eq!(
        flags.iter().collect::<BTreeSet<_>>().len(),
        flags.len(),
        "a flag declared twice"
    );
    for s in SETTINGS.iter().filter(|s| s.flag.is_some()) {
        let name = s.flag_name();
        let parses = |value: &[&str]| {
            let args: Vec<&str> = [&name[..]]
                .into_iter()
                .chain(value.iter().copied())
                .collect();
            BenchFlags::from_args(&["llmload", "bench"], &args).is_ok()
        };
        let ok = if s.switch {
            parses(&[])
        } else {
            parses(&["1"]) || parses(&["true"])
        };
        assert!(ok, "{name} is not a flag argh parses");
    }
    for s in SETTINGS {
        assert!(s.help.ends_with('\n') && !s.help_line().is_empty());
        if let Some(after) = s.after {
            assert!(SETTINGS.iter().any(|o| o.flag == Some(after)), "{after}");
        }
    }
}

/// The settings `bench` and `probe` share are declared once: probe takes
/// each of them, spelled as bench spells it.
#[test]
fn probe_takes_the_shared_settings() {
    let shared: Vec<&Setting> = SETTINGS.iter().filter(|s| s.group == Group::Auth).collect();
    assert_eq!(shared.len(), 8);
    for s in shared {
        let name = s.flag_name();
        let mut args = vec!["--endpoint", "http://127.0.0.1:1", &name];
        if !s.switch {
            args.push("v");
        }
        let parsed = crate::cli::probe::ProbeArgs::from_args(&["llmload", "probe"], &args);
        assert!(parsed.is_ok(), "probe does not take {name}");
    }
}

#[test]
fn by_topic_keeps_every_setting_once_in_topic_order() {
    let shown = by_topic();
    assert_eq!(shown.len(), SETTINGS.len());
    assert!(shown.windows(2).all(|w| w[0].group <= w[1].group));
    let at = |f: &str| shown.iter().position(|s| s.flag == Some(f)).unwrap();
    assert_eq!(at("no_stream"), at("stream") + 1);
    assert_eq!(shown[0].flag, Some("profile"));
}
