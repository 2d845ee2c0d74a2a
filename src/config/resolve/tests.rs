use std::env::VarError;

use serde_json::{Value, json};

use super::*;
use crate::config::profile::CacheMode;
use crate::plan::ArrivalKind;

const S: u64 = 1_000_000_000;

fn resolved(text: &str) -> BenchConfig {
    let no_env = |_: &str| Err(VarError::NotPresent);
    let p = Profile::parse(text, "run.json", &no_env).unwrap();
    resolve(p).unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn scenarios_inherit_and_override_the_top_level() {
    let cfg = resolved(
        r#"{"endpoint": "http://127.0.0.1:9/v1/chat/completions", "model": "m",
            "max_tokens": 50, "system": "top", "cache_mode": "natural",
            "headers": {"Authorization": "Bearer a", "X-A": "1"},
            "scenarios": [
              {"name": "a"},
              {"name": "b", "api": "anthropic", "headers": {"authorization": "b"},
               "max_tokens": 7, "stream": false, "system": "own", "model": "n",
               "cache_mode": "bust", "think_time": "250ms", "turns": {"min": 2, "max": 3},
               "checks": {"contains": ["x"], "max_completion_tokens": 9}},
              {"name": "c", "endpoint": "http://127.0.0.1:10/x"}
            ]}"#,
    );
    let [a, b, c] = &cfg.scenarios[..] else {
        panic!("three scenarios");
    };
    let top = a.endpoint.as_ref().unwrap();
    assert_eq!(a.protocol.name(), "openai-chat");
    assert_eq!(top.url, "http://127.0.0.1:9/v1/chat/completions");
    assert_eq!(top.path, "/v1/chat/completions");
    assert_eq!(
        (a.model.as_deref(), a.max_tokens, a.stream),
        (Some("m"), 50, true)
    );
    assert_eq!(a.system.as_deref(), Some("top"));
    assert_eq!(a.cache_mode, CacheMode::Natural);
    assert_eq!(
        a.headers,
        [("Authorization", "Bearer a"), ("X-A", "1")].map(|(k, v)| (k.into(), v.into()))
    );

    // Another API on the top-level server: same host, its own path.
    let other = b.endpoint.as_ref().unwrap();
    assert_eq!(b.protocol.name(), "anthropic");
    assert_eq!(other.url, "http://127.0.0.1:9");
    assert_eq!(other.path, b.protocol.default_path());
    assert_eq!((other.addr, &other.host), (top.addr, &top.host));
    assert_eq!(
        b.headers,
        [("X-A", "1"), ("authorization", "b")].map(|(k, v)| (k.into(), v.into()))
    );
    assert_eq!(
        (b.model.as_deref(), b.max_tokens, b.stream),
        (Some("n"), 7, false)
    );
    assert_eq!(b.system.as_deref(), Some("own"));
    assert_eq!(b.cache_mode, CacheMode::Bust);
    assert_eq!(b.think_time_ns, 250_000_000);
    assert_eq!(b.turns, TurnRange { min: 2, max: 3 });
    assert_eq!(b.checks.contains, ["x"]);
    assert_eq!(b.checks.max_completion_tokens, Some(9));
    assert!(b.checks.needs_text());

    let own = c.endpoint.as_ref().unwrap();
    assert_eq!((own.addr.port(), own.path.as_str()), (10, "/x"));
    assert_eq!(cfg.protocol.name(), "openai-chat");

    // No endpoint anywhere: every scenario goes to the built-in one.
    let cfg = resolved(r#"{"scenarios": [{"name": "a"}, {"name": "b", "api": "sglang"}]}"#);
    assert!(cfg.scenarios.iter().all(|s| s.endpoint.is_none()));
    assert_eq!(cfg.scenarios[1].protocol.name(), "sglang");
}

/// A CA certificate, a client certificate and its key, and a file
/// that is neither, under a fresh directory.
fn errors(text: &str) -> Vec<String> {
    let no_env = |_: &str| Err(VarError::NotPresent);
    let p = Profile::parse(text, "run.json", &no_env).unwrap();
    resolve(p).err().expect("the profile is refused")
}

#[test]
fn a_list_of_endpoints_reaches_every_scenario_without_its_own() {
    let urls = |s: &Scenario| -> Vec<String> {
        s.endpoint
            .iter()
            .chain(&s.more_endpoints)
            .map(|e| format!("{}{}", e.host, e.path))
            .collect()
    };
    let cfg = resolved(
        r#"{"endpoints": ["http://127.0.0.1:9/v1/chat/completions", "http://127.0.0.1:10?key=Q"],
            "scenarios": [{"name": "a"}, {"name": "b", "api": "sglang"},
                          {"name": "c", "endpoint": "http://127.0.0.1:11/x"}]}"#,
    );
    let [a, b, c] = &cfg.scenarios[..] else {
        panic!("three scenarios");
    };
    assert_eq!(
        urls(a),
        [
            "127.0.0.1:9/v1/chat/completions",
            "127.0.0.1:10/v1/chat/completions?key=Q"
        ]
    );
    // Another API on the same servers: each with that API's path.
    assert_eq!(urls(b), ["127.0.0.1:9/generate", "127.0.0.1:10/generate"]);
    assert_eq!(urls(c), ["127.0.0.1:11/x"]);

    // A comma list in `endpoint` says the same; a comma in a query
    // stays in its URL.
    let cfg = resolved(
        r#"{"endpoint": "http://127.0.0.1:9/v1/chat/completions?a=1,2, http://127.0.0.1:10"}"#,
    );
    assert_eq!(
        urls(&cfg.scenarios[0]),
        [
            "127.0.0.1:9/v1/chat/completions?a=1,2",
            "127.0.0.1:10/v1/chat/completions"
        ]
    );
}

#[test]
fn endpoint_lists_are_checked_by_path() {
    let e = errors(r#"{"endpoint": "http://127.0.0.1:9", "endpoints": ["http://127.0.0.1:10"]}"#);
    assert!(
        e[0].starts_with("endpoints: endpoint and endpoints are alternatives"),
        "{e:?}"
    );
    let e = errors(r#"{"endpoints": []}"#);
    assert_eq!(e, ["endpoints: empty list: give at least one URL"]);
    let e = errors(r#"{"endpoints": ["http://127.0.0.1:9", "ftp://x", "http://127.0.0.1:9"]}"#);
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e[0].starts_with("endpoints[1]: "), "{e:?}");
    assert!(e[1].starts_with("endpoints[2]: "), "{e:?}");
    assert!(e[1].contains("listed twice"), "{e:?}");
    let e = errors(r#"{"endpoint": "http://127.0.0.1:9,http://:1"}"#);
    assert!(e[0].starts_with("endpoint (URL 2): "), "{e:?}");
}

fn tls_files(tag: &str) -> (std::path::PathBuf, [String; 4]) {
    let dir = std::env::temp_dir().join(format!("llmload-tlscfg-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = crate::tls::self_signed_localhost();
    let mut paths = Vec::new();
    for (name, text) in [
        ("ca.pem", cert.clone()),
        ("client.pem", cert),
        ("client.key", key),
        ("junk.pem", "SECRET-NOT-PEM\n".to_string()),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        paths.push(p.display().to_string());
    }
    (dir, paths.try_into().unwrap())
}

#[test]
fn tls_settings_inherit_field_by_field_and_scenarios_reach_their_own_https() {
    let (dir, [ca, cert, key, _]) = tls_files("inherit");
    let cfg = resolved(&format!(
        r#"{{"endpoint": "https://127.0.0.1:9/v1/chat/completions", "model": "m",
            "ca_cert": "{ca}", "client_cert": "{cert}", "client_key": "{key}",
            "tls_server_name": "gw.example", "keep_alive": false,
            "scenarios": [
              {{"name": "a"}},
              {{"name": "b", "api": "anthropic", "insecure": true, "keep_alive": true,
                "tls_server_name": "other.example"}},
              {{"name": "c", "endpoint": "https://127.0.0.1:10/x", "ca_cert": "{cert}",
                "client_cert": "{ca}", "client_key": "{key}"}}
            ]}}"#
    ));
    let [a, b, c] = &cfg.scenarios[..] else {
        panic!("three scenarios");
    };
    let path = |p: &str| Some(std::path::PathBuf::from(p));
    let top = TlsSettings {
        ca_cert: path(&ca),
        insecure: false,
        server_name: Some("gw.example".into()),
        client_cert: path(&cert),
        client_key: path(&key),
    };
    assert_eq!((&a.tls, a.keep_alive), (&top, false));
    assert!(a.endpoint.as_ref().unwrap().tls);
    // Another API at the same https server keeps the scheme.
    let eb = b.endpoint.as_ref().unwrap();
    assert_eq!(
        (eb.url.as_str(), eb.tls, eb.path.as_str()),
        ("https://127.0.0.1:9", true, "/v1/messages")
    );
    assert_eq!(
        (&b.tls, b.keep_alive),
        (
            &TlsSettings {
                insecure: true,
                server_name: Some("other.example".into()),
                ..top.clone()
            },
            true
        )
    );
    assert_eq!(c.endpoint.as_ref().unwrap().addr.port(), 10);
    assert_eq!(
        c.tls,
        TlsSettings {
            ca_cert: path(&cert),
            client_cert: path(&ca),
            ..top.clone()
        }
    );
    assert!(cfg.warnings.is_empty(), "{:?}", cfg.warnings);
    // Defaults: verified, reused, nothing set.
    let plain = resolved("{}");
    assert_eq!(
        (&plain.scenarios[0].tls, plain.scenarios[0].keep_alive),
        (&TlsSettings::default(), true)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tls_errors_name_the_field_and_the_file_never_its_contents() {
    let (dir, [ca, cert, key, junk]) = tls_files("errors");
    let errors = |text: &str| {
        let no_env = |_: &str| Err(VarError::NotPresent);
        let p = Profile::parse(text, "run.json", &no_env).unwrap();
        resolve(p).err().unwrap_or_default()
    };
    let missing = dir.join("nope.pem").display().to_string();
    let e = errors(&format!(
        r#"{{"endpoint": "https://127.0.0.1:9", "ca_cert": "{missing}",
            "client_cert": "{cert}", "tls_server_name": "not a name",
            "scenarios": [{{"name": "a", "client_key": "{junk}"}},
                          {{"name": "b", "client_cert": "{junk}", "client_key": "{key}"}}]}}"#
    ));
    // Scenario a's key pairs with the certificate it inherits.
    assert_eq!(e.len(), 5, "{e:#?}");
    assert!(
        e[0].starts_with(&format!("ca_cert: '{missing}': cannot read: ")),
        "{e:#?}"
    );
    assert_eq!(
        e[1],
        "tls_server_name: 'not a name' is not a valid TLS server name (a DNS name or an IP address)"
    );
    assert_eq!(
        e[2],
        "client_cert: a client certificate needs its private key (client_key, --client-key)"
    );
    assert!(
        e[3].starts_with(&format!(
            "scenarios[0].client_key: key file '{junk}': no private key"
        )),
        "{e:#?}"
    );
    assert!(
        e[4].starts_with(&format!(
            "scenarios[1].client_cert: '{junk}': no certificate in it"
        )),
        "{e:#?}"
    );
    assert!(e.iter().all(|m| !m.contains("SECRET")), "{e:#?}");
    // Skipping verification beside a CA file is allowed.
    assert!(errors(&format!(r#"{{"insecure": true, "ca_cert": "{ca}"}}"#)).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn tls_settings_on_a_plain_endpoint_are_a_warning() {
    let (dir, [ca, ..]) = tls_files("unused");
    let cfg = resolved(&format!(
        r#"{{"endpoint": "http://127.0.0.1:9", "insecure": true, "ca_cert": "{ca}"}}"#
    ));
    assert_eq!(
        cfg.warnings,
        ["ca_cert, insecure set but not used: its endpoint is plain http://"]
    );
    let cfg = resolved(
        r#"{"tls_server_name": "h.example", "scenarios": [{"name": "a"},
            {"name": "b", "endpoint": "https://127.0.0.1:9"}]}"#,
    );
    assert_eq!(
        cfg.warnings,
        ["scenario 'a': tls_server_name set but not used: the built-in endpoint is plain http"]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn limits_come_from_the_profile() {
    let cfg = resolved("{}");
    assert_eq!(
        cfg.limits,
        Limits {
            timeout_ns: 300 * S,
            ttft_ns: None,
            connect_ns: 10 * S,
            drain_ns: 10 * S,
            max_gaps: MIN_GAPS,
            max_output_text: 4 << 20,
        }
    );
    assert_eq!(cfg.live_interval_ns, 10 * S);
    assert_eq!(cfg.warmup_ns, 0);
    let cfg = resolved(
        r#"{"timeout": "20s", "ttft_timeout": "5s", "connect_timeout": "2s",
            "drain_timeout": "250ms", "live_interval": "0", "warmup": 1,
            "max_tokens": 2000, "scenarios": [{"name": "a", "max_tokens": 100}],
            "max_output_text": "512KiB"}"#,
    );
    assert_eq!(
        cfg.limits,
        Limits {
            timeout_ns: 20 * S,
            ttft_ns: Some(5 * S),
            connect_ns: 2 * S,
            drain_ns: S / 4,
            // The top level's max_tokens counts even when every scenario
            // asks for fewer.
            max_gaps: 4000,
            max_output_text: 512 << 10,
        }
    );
    assert_eq!((cfg.live_interval_ns, cfg.warmup_ns), (0, S));
}

#[test]
fn token_source_defaults_to_auto_and_tokenizer_needs_one() {
    let no_env = |_: &str| Err(VarError::NotPresent);
    let errors = |text: &str| {
        let p = Profile::parse(text, "run.json", &no_env).unwrap();
        resolve(p).err().unwrap_or_default()
    };
    assert_eq!(resolved("{}").token_source, TokenPolicy::Auto);
    assert_eq!(
        resolved(r#"{"token_source": "usage"}"#).token_source,
        TokenPolicy::Usage
    );
    assert_eq!(
        resolved(r#"{"token_source": "tokenizer", "tokenizer": "t.json"}"#).token_source,
        TokenPolicy::Tokenizer
    );
    assert_eq!(
        errors(r#"{"token_source": "tokenizer"}"#),
        ["token_source: tokenizer needs a tokenizer.json (tokenizer, --tokenizer)"]
    );
    assert_eq!(
        errors(r#"{"token_source": "server"}"#),
        ["token_source: 'server': expected auto, tokenizer or usage"]
    );
    for p in [
        TokenPolicy::Auto,
        TokenPolicy::Tokenizer,
        TokenPolicy::Usage,
    ] {
        assert_eq!(TokenPolicy::parse(p.name()), Ok(p));
    }
}

#[test]
fn max_output_text_is_a_size_within_bounds() {
    let no_env = |_: &str| Err(VarError::NotPresent);
    let errors = |text: &str| {
        let p = Profile::parse(text, "run.json", &no_env).unwrap();
        resolve(p).err().unwrap_or_default()
    };
    assert_eq!(
        resolved(r#"{"max_output_text": 1024}"#)
            .limits
            .max_output_text,
        1024
    );
    assert_eq!(
        errors(r#"{"max_output_text": 0}"#),
        ["max_output_text: 0: expected 1 to 1GiB"]
    );
    assert_eq!(
        errors(r#"{"max_output_text": "2GiB"}"#),
        ["max_output_text: 2GiB: expected 1 to 1GiB"]
    );
    let bad = Profile::parse(r#"{"max_output_text": "4MB"}"#, "run.json", &no_env);
    assert!(bad.unwrap_err().contains("unknown unit 'MB'"));
}

#[test]
fn connections_follow_the_load_shape() {
    assert_eq!(resolved(r#"{"concurrency": 8}"#).connections, 8);
    assert_eq!(resolved(r#"{"rate": 5}"#).connections, 1024);
    assert_eq!(resolved(r#"{"mode": "offline"}"#).connections, 1024);
    let mixed = r#"{"stages": [{"concurrency": 2000, "duration": 1},
                               {"rate": 5, "duration": 1}]}"#;
    assert_eq!(resolved(mixed).connections, 2000);
    assert_eq!(
        resolved(r#"{"concurrency": 8, "connections": 9}"#).connections,
        9
    );
}

#[test]
fn stages_arrive_by_the_profiles_law() {
    let cfg = resolved(
        r#"{"arrival": "uniform", "stages": [{"rate": 5, "duration": 1},
            {"rate_from": 1, "rate_to": 3, "duration": 2, "requests": 9}]}"#,
    );
    let want = |rate_from, rate_to| Load::Open {
        kind: ArrivalKind::Uniform,
        rate_from,
        rate_to,
    };
    assert_eq!(cfg.stages[0].load, want(5.0, 5.0));
    assert_eq!(cfg.stages[1].load, want(1.0, 3.0));
    assert_eq!(
        (cfg.stages[1].duration_ns, cfg.stages[1].requests),
        (Some(2 * S), Some(9))
    );
}

#[test]
fn thresholds_of_zero_are_unset_except_the_error_rate() {
    let cfg = resolved(
        r#"{"thresholds": {"p95_ms": 0, "p99_ms": 250, "ttft_p95_ms": 0,
            "ttft_p99_ms": 0, "tpot_p99_ms": 12.5,
            "error_rate": 0, "min_rps": 0, "abort_on_fail": true}}"#,
    );
    assert_eq!(
        cfg.thresholds,
        Thresholds {
            ttft_p95_ms: None,
            ttft_p99_ms: None,
            tpot_p99_ms: Some(12.5),
            p95_ms: None,
            p99_ms: Some(250.0),
            error_rate: Some(0.0),
            min_rps: None,
            abort_on_fail: true,
        }
    );
    assert!(resolved("{}").thresholds.is_empty());
}

#[test]
fn fewer_virtual_users_than_scenarios_is_a_warning() {
    let cfg = resolved(
        r#"{"concurrency": 2, "scenarios": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}"#,
    );
    assert_eq!(
        cfg.warnings,
        ["stage 'main' has 2 virtual user(s) for 3 scenarios; some scenarios get none"]
    );
    assert!(resolved(r#"{"concurrency": 3}"#).warnings.is_empty());
}

#[test]
fn host_checks_use_the_descriptor_limit() {
    let mut cfg = resolved(r#"{"connections": 40000, "workers": 2}"#);
    let e = check_host(&cfg, 20_000).unwrap_err();
    assert_eq!(
        e,
        "40000 connections over 2 worker(s) need more than 19000 sockets per worker process; add --workers"
    );
    assert_eq!(check_host(&cfg, 25_000), Ok(()));
    assert_eq!(
        check_host(&cfg, 0),
        Ok(()),
        "an unknown limit is not checked"
    );
    cfg.workers = 65;
    assert_eq!(
        check_host(&cfg, 0),
        Err("workers 65: expected 1 to 64".to_string())
    );
    cfg.workers = 8;
    cfg.api_key = Some("sk\n1".to_string());
    assert_eq!(
        check_host(&cfg, 0),
        Err("the API key contains a line break".to_string())
    );
}

#[test]
fn the_key_comes_from_its_file_and_is_never_shown() {
    let dir = std::env::temp_dir().join(format!("llmload-keyfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("key");
    std::fs::write(&path, "sk-file-SECRET-1\n").unwrap();
    let cfg = resolved(&format!(
        r#"{{"api_key_file": "{}", "endpoint": "http://127.0.0.1:9/v1?key=Q-SECRET",
            "scenarios": [{{"name": "a", "endpoint": "http://127.0.0.1:9/x?key=Q-SECRET"}}]}}"#,
        path.display()
    ));
    assert_eq!(cfg.api_key.as_deref(), Some("sk-file-SECRET-1"));
    assert!(!cfg.api_key_from_env);
    let v = cfg.to_json(
        std::path::Path::new("o"),
        "http://127.0.0.1:9/v1?key=Q-SECRET",
        "m",
        false,
    );
    assert!(!v.to_string().contains("SECRET"), "{v}");
    assert_eq!(v["api_key"], "<redacted>");
    assert_eq!(v["api_key_file"], path.display().to_string());
    assert_eq!(v["endpoint"], "http://127.0.0.1:9/v1?key=<redacted>");
    assert_eq!(
        v["scenarios"][0]["endpoint"],
        "http://127.0.0.1:9/x?key=<redacted>"
    );
    // An empty key is no key (and does not fall through to the environment's).
    assert_eq!(resolved(r#"{"api_key": ""}"#).api_key, None);
    let no_env = |_: &str| Err(VarError::NotPresent);
    let both = Profile::parse(
        r#"{"api_key": "k", "api_key_file": "/x"}"#,
        "run.json",
        &no_env,
    )
    .unwrap();
    assert_eq!(
        resolve(both).err().unwrap(),
        ["api_key_file: api_key and api_key_file are alternatives; give one"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn config_block_has_every_setting_and_no_secret() {
    let mut cfg = resolved(
        r#"{"api_key": "sk-1", "headers": {"Authorization": "Bearer x", "X-A": "1"},
            "rate": 5, "scenarios": [{"name": "a", "headers": {"Cookie": "c"}}]}"#,
    );
    let out = std::path::Path::new("results/x");
    let v = cfg.to_json(out, "http://h:1/v1", "m", false);
    let o = v.as_object().unwrap();
    for s in crate::config::settings::SETTINGS {
        if let Some(field) = s.field.filter(|f| *f != "endpoints") {
            assert!(o.contains_key(field), "{field} missing: {v}");
        }
    }
    assert_eq!(o["api_key"], "<redacted>");
    assert_eq!(
        o["headers"],
        json!({"Authorization": "<redacted>", "X-A": "1"})
    );
    assert_eq!(
        o["scenarios"][0]["headers"],
        json!({"Cookie": "<redacted>"})
    );
    assert_eq!(o["mode"], "poisson");
    assert_eq!(o["rate"], 5);
    assert_eq!(o["connections"], 1024);
    assert_eq!(o["out"], "results/x");
    assert_eq!(
        (&o["endpoint"], &o["model"]),
        (&json!("http://h:1/v1"), &json!("m"))
    );
    // Unset, a setting shows its default, or null when it has none.
    assert_eq!(o["timeout"], "300s");
    assert_eq!(o["system"], Value::Null);
    assert_eq!(o["stop"], json!([]));
    assert!(!o.contains_key("endpoints"), "endpoint lists them");
    // A key from the environment is redacted too, though the profile has none.
    cfg.profile.api_key = None;
    cfg.api_key = Some("env".to_string());
    assert_eq!(cfg.to_json(out, "", "", true)["api_key"], "<redacted>");
}

#[test]
fn shard_and_start_at_resolve_and_their_errors_name_the_field() {
    let cfg = resolved(r#"{"shard": "2/3", "shards": 3, "start_at": "2026-12-02T12:00:00+01:00"}"#);
    assert_eq!(
        cfg.shard_spec,
        Some(crate::shard::ShardSpec::Fixed { index: 2, count: 3 })
    );
    assert_eq!(cfg.start_at_ns, Some(1_796_209_200 * S));
    let errors = |text: &str| {
        let no_env = |_: &str| Err(VarError::NotPresent);
        resolve(Profile::parse(text, "run.json", &no_env).unwrap())
            .err()
            .unwrap_or_default()
            .join("\n")
    };
    let e = errors(r#"{"shard": "0/3"}"#);
    assert!(e.starts_with("shard: '0/3'"), "{e}");
    let e = errors(r#"{"shard": "1/3", "shards": 2}"#);
    assert!(e.contains("shards: 2 disagrees"), "{e}");
    assert!(errors(r#"{"shards": 2}"#).contains("without shard"));
    assert!(errors(r#"{"start_at": "noon"}"#).starts_with("start_at: 'noon'"));
    let numeric = resolved(r#"{"start_at": 1796209200.5}"#);
    assert_eq!(numeric.start_at_ns, Some(1_796_209_200 * S + S / 2));
}

#[test]
fn a_sharded_accuracy_phase_is_refused_and_auto_reads_the_env() {
    let dir = std::env::temp_dir().join(format!("llmload-shard-acc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("acc.jsonl");
    std::fs::write(&path, "{\"prompt\": \"q\", \"answer\": \"a\"}\n").unwrap();
    let text = json!({"shard": "1/2", "phase": "both",
                      "accuracy_datasets": [path.display().to_string()]})
    .to_string();
    let mut cfg = resolved(&text);
    let e = cfg.place_shard("flag", &|_| None).unwrap_err();
    assert!(e.contains("--phase both") && e.contains("2 shards"), "{e}");
    let mut one = resolved(&text.replace("1/2", "1/1"));
    assert!(one.place_shard("flag", &|_| None).is_ok());
    let mut auto = resolved(r#"{"shard": "auto"}"#);
    let env = |k: &str| match k {
        "PMI_RANK" => Some("1".to_string()),
        "PMI_SIZE" => Some("4".to_string()),
        _ => None,
    };
    auto.place_shard("profile", &env).unwrap();
    let shard = auto.shard.unwrap();
    assert_eq!(
        (shard.index, shard.count, shard.source.as_str()),
        (2, 4, "PMI_RANK")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_shard_needs_descriptors_for_its_part_only() {
    let mut cfg = resolved(r#"{"shard": "1/4", "connections": 4000, "workers": 1}"#);
    assert!(check_host(&cfg, 3_000).is_err());
    cfg.place_shard("flag", &|_| None).unwrap();
    assert_eq!(cfg.own_connections(), 1_000);
    assert!(check_host(&cfg, 3_000).is_ok());
}
