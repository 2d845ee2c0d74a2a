//! Run profiles through the real binary: `init` writes a file `validate`
//! accepts, `validate` names the file and JSON path of every problem and
//! exits 1, and `init` never replaces a file without `--force`.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::{bin, read, temp_dir};

/// `llmload ARGS` in `cwd`, without `$PROFILE_TEST_KEY` (which some of
/// the profiles here name).
fn llmload(args: &[&str], cwd: &Path) -> Output {
    crate::util::llmload(args)
        .current_dir(cwd)
        .env_remove("PROFILE_TEST_KEY")
        .output()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn init_then_validate() {
    let dir = temp_dir("profile-init");
    let out = llmload(&["init"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = read(&dir.join("run.json"));
    assert_eq!(text(&out.stdout), written, "stdout carries the same JSON");
    let err = text(&out.stderr);
    assert!(
        err.contains("wrote run.json — run it with: llmload bench --profile run.json"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(v["stages"].as_array().unwrap().len(), 3);

    let out = llmload(&["validate", "run.json"], &dir);
    let so = text(&out.stdout);
    assert!(out.status.success(), "{so}{}", text(&out.stderr));
    assert!(so.starts_with("run.json is valid"), "{so}");
    assert!(so.contains("3 stages"), "{so}");
    assert!(so.contains("chat 70%"), "{so}");
}

#[test]
fn init_full_validates_and_lists_every_field() {
    let dir = temp_dir("profile-full");
    let out = llmload(&["init", "--full", "full.json"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&read(&dir.join("full.json"))).unwrap();
    for key in [
        "endpoint",
        "ttft_timeout",
        "live_interval",
        "openloop_max_inflight",
        "correlation",
        "thresholds",
        "api_key",
    ] {
        assert!(v.get(key).is_some(), "{key} missing from --full");
    }
    let out = llmload(&["validate", "full.json"], &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));

    for args in [
        &["init", "--full", "--", "-"][..],
        &["init", "--full", "--stdout"],
    ] {
        let out = llmload(args, &dir);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), read(&dir.join("full.json")), "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {}", text(&out.stderr));
    }
    assert!(!dir.join("-").exists());
    assert!(!dir.join("run.json").exists());
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let dir = temp_dir("profile-force");
    std::fs::write(dir.join("run.json"), "mine").unwrap();
    let out = llmload(&["init"], &dir);
    assert!(out.status.success());
    assert_eq!(read(&dir.join("run.json")), "mine");
    assert!(
        text(&out.stderr).contains("run.json exists"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("\"stages\""),
        "the JSON still reaches stdout"
    );

    let out = llmload(&["init", "--force"], &dir);
    assert!(out.status.success());
    assert_eq!(read(&dir.join("run.json")), text(&out.stdout));
}

#[test]
fn validate_names_file_and_path() {
    let dir = temp_dir("profile-broken");
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "unknown.json",
            r#"{"stages": [{"rate": 5, "duration": "5s", "ramp": true}]}"#,
            &["unknown.json: stages[0].ramp: unknown field, expected one of"],
        ),
        (
            "type.json",
            r#"{"stages": [{"rate": 5, "duration": "5s"}, {"rate": "fast", "duration": "5s"}]}"#,
            &[r#"type.json: stages[1].rate: invalid type: string "fast", expected a number"#],
        ),
        (
            "syntax.json",
            "{\n  \"rate\": 5\n  \"mode\": \"poisson\"\n}",
            &["syntax.json:3:3: not valid JSON"],
        ),
        (
            "env.json",
            r#"{"headers": {"Authorization": "Bearer ${PROFILE_TEST_KEY}"}}"#,
            &["env.json: headers.Authorization: environment variable PROFILE_TEST_KEY is not set"],
        ),
        (
            "values.json",
            r#"{"stages": [{"rate_from": 5, "duration": "5s"}],
                "scenarios": [{"name": "a", "weight": 0, "content": {"mode": "pool"}}],
                "thresholds": {"error_rate": 2}}"#,
            &[
                "values.json: stages[0].rate_from: needs rate_to",
                "values.json: scenarios[0].weight: 0: weight must be a number > 0",
                "values.json: scenarios[0].content: mode pool needs prompts",
                "values.json: thresholds.error_rate: 2: expected a fraction",
            ],
        ),
    ];
    for (name, body, expected) in cases {
        std::fs::write(dir.join(name), body).unwrap();
        let out = llmload(&["validate", name], &dir);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}");
        for e in *expected {
            assert!(err.contains(e), "{name}: expected {e:?} in:\n{err}");
        }
        assert_eq!(
            err.lines().count(),
            expected.len(),
            "{name}: one line per error:\n{err}"
        );
    }

    let out = llmload(&["validate", "missing.json"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("missing.json: cannot read"));
}

#[test]
fn validate_expands_environment() {
    let dir = temp_dir("profile-env");
    std::fs::write(
        dir.join("run.json"),
        r#"{"headers": {"Authorization": "Bearer ${PROFILE_TEST_KEY}"}, "system": "$$5"}"#,
    )
    .unwrap();
    let out = Command::new(bin())
        .args(["validate", "run.json"])
        .current_dir(&dir)
        .env("PROFILE_TEST_KEY", "sk-test")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("sk-test"),
        "the summary never shows a secret"
    );
}
