//! https end to end: `llmload bench` against `llmload serve --tls-cert
//! --tls-key` with certificates made at test time (`pki`). Every bench here
//! runs with `SSL_CERT_FILE` pointing at a CA that signed nothing it meets,
//! so no outcome depends on this machine's trust store: trust comes from
//! `--ca-cert` or nowhere.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::pki::Pki;
use crate::report::assert_valid;
use crate::util::*;

const APIS: [&str; 4] = ["openai-chat", "openai-completions", "sglang", "anthropic"];
const LIMIT: Duration = Duration::from_secs(60);

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// The server's https URL by the name its certificate carries.
fn https(server: &Server) -> String {
    format!("https://localhost:{}", server.addr.port())
}

/// `llmload bench ARGS --out <fresh> --quiet` with a system trust store
/// that trusts nothing of ours.
/// `bench ARGS` trusting only `pki`'s other CA; every request of a run
/// that fails is sent (`--no-fail-fast`), so the counts below are the
/// run's whole.
fn run(pki: &Pki, args: &[&str]) -> Run {
    llmload(&["bench"])
        .args(args)
        .args(["--no-fail-fast"])
        .fresh_out("tls-bench")
        .args(["--quiet"])
        .env("SSL_CERT_FILE", &pki.other_ca)
        .env_remove("SSL_CERT_DIR")
        .env_remove("OPENAI_API_KEY")
        .limit(LIMIT)
        .run()
}

fn test_pki() -> Pki {
    Pki::new(&temp_dir("pki"))
}

/// A run where nothing succeeded, all for one reason: every request failed
/// as `class` with a message containing `reason`, and the run still ended
/// with a clean, complete report and exit status 1.
fn assert_all_failed(r: &Run, class: &str, reason: &str) -> serde_json::Value {
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("no request succeeded"), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let sm = r.summary();
    assert_valid(&sm);
    assert_eq!(sm["complete"], true, "{}", sm["incomplete_reasons"]);
    assert_accounted(&sm["requests"]);
    let issued = u(&sm["requests"]["issued"]);
    assert!(issued > 0);
    assert_eq!(
        sm["requests"]["errors"],
        serde_json::json!({ class: issued }),
        "{}",
        sm["error_messages"]
    );
    let msgs = sm["error_messages"][class].as_array().unwrap();
    assert!(
        msgs.iter().any(|m| m.as_str().unwrap().contains(reason)),
        "{class}: {msgs:?}"
    );
    let report = read(&r.out.join("report.txt"));
    assert!(report.contains(reason), "{report}");
    assert_eq!(u(&sm["connections"]["opened"]), 0, "{}", sm["connections"]);
    assert!(u(&sm["connections"]["failed"]) > 0, "{}", sm["connections"]);
    sm
}

#[test]
fn every_api_over_https_streamed_and_not_counts_tokens_exactly() {
    let pki = test_pki();
    let server = tls_server(&pki.cert, &pki.key, &["--tpot", "0s"]);
    let url = https(&server);
    for api in APIS {
        for stream in [true, false] {
            let r = run(
                &pki,
                &[
                    "--endpoint",
                    &url,
                    "--ca-cert",
                    s(&pki.ca),
                    "--api",
                    api,
                    "--model",
                    "m",
                    "--workers",
                    "1",
                    "--concurrency",
                    "4",
                    "--requests",
                    "24",
                    "--max-tokens",
                    "9",
                    if stream { "--stream" } else { "--no-stream" },
                ],
            );
            r.assert_success();
            let sm = r.summary();
            let what = format!("{api} stream={stream}: {}", sm["requests"]);
            assert_accounted(&sm["requests"]);
            assert_eq!(u(&sm["requests"]["completed"]), 24, "{what}");
            assert_eq!(u(&sm["tokens"]["output_total"]), 24 * 9, "{what}");
            assert_eq!(sm["tokens"]["output_source"], "usage", "{what}");
            assert!(u(&sm["tokens"]["input_total"]) > 0, "{what}");
            if stream {
                assert_eq!(u(&sm["latency_ms"]["itl"]["count"]), 24 * 8, "{what}");
            }
            let c = &sm["connections"];
            assert_eq!(u(&c["opened"]), 4, "{what}: {c}");
            assert_eq!(u(&c["tls_handshake_ms"]["count"]), 4, "{what}: {c}");
            assert_eq!(u(&c["tcp_connect_ms"]["count"]), 4, "{what}: {c}");
            assert!(f(&c["tls_handshake_ms"]["p50"]) > 0.0, "{c}");
            assert_eq!(sm["tls"]["insecure"], false);
            assert_eq!(sm["tls"]["endpoints"][0]["server_name"], "localhost");
            assert_valid(&sm);
        }
    }
}

#[test]
fn https_and_http_carry_the_same_tokens() {
    let pki = test_pki();
    let secure = tls_server(&pki.cert, &pki.key, &[]);
    let plain = Server::start(&["--ttft", "1ms"]);
    let args = |url: &str| {
        vec![
            "--endpoint".to_string(),
            url.to_string(),
            "--model".into(),
            "m".into(),
            "--concurrency".into(),
            "3".into(),
            "--requests".into(),
            "30".into(),
            "--max-tokens".into(),
            "5".into(),
            "--ca-cert".into(),
            s(&pki.ca).into(),
        ]
    };
    let totals = |url: &str| {
        let a = args(url);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let r = run(&pki, &a);
        r.assert_success();
        let sm = r.summary();
        (
            u(&sm["tokens"]["output_total"]),
            u(&sm["tokens"]["input_total"]),
            sm["tokens"]["osl"]["count"].clone(),
        )
    };
    let over_tls = totals(&https(&secure));
    assert_eq!(over_tls, totals(&plain.url()));
    assert_eq!(over_tls.0, 150);
}

#[test]
fn an_unknown_ca_fails_every_handshake_with_its_reason_and_a_clean_report() {
    let pki = test_pki();
    let server = tls_server(&pki.cert, &pki.key, &[]);
    // No --ca-cert: the system store (SSL_CERT_FILE) trusts another CA.
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&server),
            "--model",
            "m",
            "--concurrency",
            "2",
            "--requests",
            "8",
        ],
    );
    let sm = assert_all_failed(&r, "tls_handshake", "unknown issuer");
    assert_eq!(sm["tls"]["endpoints"][0]["verify"], true);
    // Verification is on by default against the system store: a server
    // whose CA is there (SSL_CERT_FILE) passes without --ca-cert.
    let system = tls_server(&pki.untrusted_cert, &pki.untrusted_key, &[]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&system),
            "--model",
            "m",
            "--requests",
            "4",
            "--concurrency",
            "1",
        ],
    );
    r.assert_success();
}

#[test]
fn a_wrong_name_and_an_expired_certificate_are_named() {
    let pki = test_pki();
    for (cert, key, reason) in [
        (&pki.wrong_name_cert, &pki.wrong_name_key, "name mismatch"),
        (&pki.expired_cert, &pki.expired_key, "expired"),
    ] {
        let server = tls_server(cert, key, &[]);
        let r = run(
            &pki,
            &[
                "--endpoint",
                &https(&server),
                "--ca-cert",
                s(&pki.ca),
                "--model",
                "m",
                "--concurrency",
                "2",
                "--requests",
                "6",
            ],
        );
        assert_all_failed(&r, "tls_handshake", reason);
    }
    // The wrong-name server passes when told the name its certificate has.
    let server = tls_server(&pki.wrong_name_cert, &pki.wrong_name_key, &[]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &format!("https://127.0.0.1:{}", server.addr.port()),
            "--ca-cert",
            s(&pki.ca),
            "--tls-server-name",
            "other.example",
            "--model",
            "m",
            "--requests",
            "6",
            "--concurrency",
            "2",
        ],
    );
    r.assert_success();
    assert_eq!(
        r.summary()["tls"]["endpoints"][0]["server_name"],
        "other.example"
    );
}

#[test]
fn insecure_succeeds_and_says_so_everywhere() {
    let pki = test_pki();
    // Signed by a CA this run is not told about.
    let server = tls_server(&pki.cert, &pki.key, &[]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&server),
            "--insecure",
            "--model",
            "m",
            "--concurrency",
            "2",
            "--requests",
            "10",
        ],
    );
    r.assert_success();
    let sm = r.summary();
    assert_valid(&sm);
    assert_eq!(u(&sm["requests"]["completed"]), 10);
    assert_eq!(sm["tls"]["insecure"], true);
    assert_eq!(sm["tls"]["endpoints"][0]["verify"], false);
    let line = "TLS verification OFF (--insecure)";
    assert!(
        sm["notes"][0].as_str().unwrap().starts_with(line),
        "{}",
        sm["notes"]
    );
    let report = read(&r.out.join("report.txt"));
    assert!(
        report
            .lines()
            .any(|l| l.starts_with(&format!("WARNING: {line}"))),
        "{report}"
    );
    let prom = read(&r.out.join("metrics.prom"));
    assert!(prom.contains("\nllmload_tls_insecure 1\n"), "{prom}");
}

#[test]
fn a_server_requiring_a_client_certificate_refuses_without_one() {
    let pki = test_pki();
    let server = tls_server(&pki.cert, &pki.key, &["--tls-client-ca", s(&pki.ca)]);
    let url = https(&server);
    let base = [
        "--endpoint",
        url.as_str(),
        "--ca-cert",
        s(&pki.ca),
        "--model",
        "m",
        "--concurrency",
        "2",
        "--requests",
        "8",
    ];
    // Refused: a TLS 1.3 server says so after the client's last handshake
    // message, and the refusal still counts as the handshake's failure.
    let r = run(&pki, &base);
    assert_all_failed(&r, "tls_handshake", "client certificate");
    let mut with_cert = base.to_vec();
    with_cert.extend_from_slice(&[
        "--client-cert",
        s(&pki.client_cert),
        "--client-key",
        s(&pki.client_key),
    ]);
    let r = run(&pki, &with_cert);
    r.assert_success();
    let sm = r.summary();
    assert_eq!(u(&sm["requests"]["completed"]), 8);
    assert_eq!(
        sm["tls"]["endpoints"][0]["client_cert"],
        s(&pki.client_cert)
    );
}

#[test]
fn a_pool_of_connections_resumes_sessions() {
    let pki = test_pki();
    let server = tls_server(&pki.cert, &pki.key, &[]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&server),
            "--ca-cert",
            s(&pki.ca),
            "--model",
            "m",
            "--workers",
            "1",
            "--concurrency",
            "40",
            "--requests",
            "80",
            "--max-tokens",
            "4",
        ],
    );
    r.assert_success();
    let c = &r.summary()["connections"];
    assert_eq!(u(&c["opened"]), 40, "{c}");
    assert_eq!(u(&c["failed"]), 0, "{c}");
    // One full handshake, then waves that resume from the tickets of the
    // wave before (more than the 8 a plain session cache keeps).
    let resumed = u(&c["resumed"]);
    assert!(resumed > 8, "{c}");
    assert!(resumed <= 39, "{c}");
    assert_eq!(u(&c["tls_handshake_ms"]["count"]), 40, "{c}");
}

#[test]
fn without_keep_alive_every_request_opens_its_own_connection() {
    let pki = test_pki();
    let secure = tls_server(&pki.cert, &pki.key, &[]);
    let plain = Server::start(&["--ttft", "1ms"]);
    for (url, tls) in [(https(&secure), true), (plain.url(), false)] {
        let r = run(
            &pki,
            &[
                "--endpoint",
                &url,
                "--ca-cert",
                s(&pki.ca),
                "--model",
                "m",
                "--keep-alive",
                "false",
                "--workers",
                "1",
                "--concurrency",
                "4",
                "--requests",
                "60",
                "--max-tokens",
                "4",
            ],
        );
        r.assert_success();
        let sm = r.summary();
        assert_valid(&sm);
        let c = &sm["connections"];
        assert_eq!(u(&sm["requests"]["completed"]), 60, "{}", sm["requests"]);
        assert_eq!(u(&c["opened"]), 60, "{url}: {c}");
        assert_eq!(c["keep_alive"], false);
        assert!(f(&c["connects_per_s"]) > 0.0, "{c}");
        assert_eq!(u(&c["tcp_connect_ms"]["count"]), 60, "{c}");
        assert_eq!(c.get("tls_handshake_ms").is_some(), tls, "{c}");
        if tls {
            assert!(u(&c["resumed"]) > 0, "{c}");
        }
        let report = read(&r.out.join("report.txt"));
        assert!(report.contains("connects/s"), "{report}");
        assert!(report.contains("--keep-alive false"), "{report}");
        assert_eq!(report.contains("tls handshake"), tls, "{url}\n{report}");
    }
}

#[test]
fn idle_connections_the_server_closes_are_replaced_without_failures() {
    let pki = test_pki();
    // The server closes a connection idle for 30 ms; arrivals come every
    // 100 ms or so, so most find their connection closed (close_notify,
    // then FIN) while it sat idle.
    let server = tls_server(&pki.cert, &pki.key, &["--idle-timeout", "30ms"]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&server),
            "--ca-cert",
            s(&pki.ca),
            "--model",
            "m",
            "--workers",
            "1",
            "--mode",
            "uniform",
            "--rate",
            "10",
            "--duration",
            "2s",
            "--max-tokens",
            "4",
        ],
    );
    r.assert_success();
    let sm = r.summary();
    assert_eq!(u(&sm["requests"]["failed"]), 0, "{}", sm["error_messages"]);
    let c = &sm["connections"];
    assert!(u(&c["opened"]) >= 10, "{c}");
    assert!(u(&c["resumed"]) >= u(&c["opened"]) - 1, "{c}");
}

#[test]
fn the_wrong_scheme_either_way_is_named() {
    let pki = test_pki();
    let secure = tls_server(&pki.cert, &pki.key, &[]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &format!("http://127.0.0.1:{}", secure.addr.port()),
            "--model",
            "m",
            "--concurrency",
            "2",
            "--requests",
            "6",
        ],
    );
    assert_eq!(r.status.code(), Some(1), "{}", r.stderr);
    let sm = r.summary();
    assert_eq!(
        sm["requests"]["errors"],
        serde_json::json!({"malformed_response": 6})
    );
    assert!(
        sm["error_messages"]["malformed_response"][0]
            .as_str()
            .unwrap()
            .contains("use https://"),
        "{}",
        sm["error_messages"]
    );
    let plain = Server::start(&["--ttft", "1ms"]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &format!("https://127.0.0.1:{}", plain.addr.port()),
            "--ca-cert",
            s(&pki.ca),
            "--model",
            "m",
            "--concurrency",
            "2",
            "--requests",
            "6",
        ],
    );
    assert_all_failed(&r, "tls_handshake", "plain HTTP");
}

#[test]
fn profile_fields_and_scenarios_with_their_own_https_endpoints() {
    let pki = test_pki();
    let plain = Server::start(&["--ttft", "1ms"]);
    let mtls = tls_server(&pki.cert, &pki.key, &["--tls-client-ca", s(&pki.ca)]);
    // Trusted (the top level's ca_cert), but for another name.
    let lab = tls_server(&pki.wrong_name_cert, &pki.wrong_name_key, &[]);
    let dir = temp_dir("tls-profile");
    let profile = serde_json::json!({
        "endpoint": plain.url(),
        "model": "m",
        "max_tokens": 4,
        "live_interval": "0",
        "ca_cert": s(&pki.ca),
        "stages": [{"concurrency": 6, "duration": "10s", "requests": 60}],
        "scenarios": [
            {"name": "plain"},
            {"name": "mtls", "endpoint": https(&mtls),
             "client_cert": s(&pki.client_cert), "client_key": s(&pki.client_key)},
            {"name": "lab", "endpoint": https(&lab), "insecure": true,
             "keep_alive": false, "api": "anthropic"}
        ]
    });
    let path = dir.join("run.json");
    std::fs::write(&path, serde_json::to_string_pretty(&profile).unwrap()).unwrap();
    let r = run(&pki, &["--profile", s(&path)]);
    r.assert_success();
    // The top level's ca_cert is set beside a plain endpoint: said, once.
    assert!(
        r.stderr
            .contains("scenario 'plain': ca_cert set but not used"),
        "{}",
        r.stderr
    );
    let sm = r.summary();
    assert_valid(&sm);
    for sc in sm["scenarios"].as_array().unwrap() {
        assert!(u(&sc["requests"]["completed"]) > 0, "{sc}");
        assert_eq!(u(&sc["requests"]["failed"]), 0, "{sc}");
    }
    let eps = sm["tls"]["endpoints"].as_array().unwrap();
    assert_eq!(eps.len(), 2, "{eps:?}");
    assert_eq!(sm["tls"]["insecure"], true);
    assert_eq!(eps[0]["verify"], true);
    assert_eq!(eps[0]["client_cert"], s(&pki.client_cert));
    assert_eq!(eps[1]["verify"], false);
    assert_eq!(sm["connections"]["keep_alive"], false);
    assert_eq!(
        sm["config"]["scenarios"][1]["client_key"],
        s(&pki.client_key)
    );
    // `validate` names a bad file by its JSON path.
    let mut bad = profile.clone();
    bad["scenarios"][1]["client_key"] = dir.join("missing.key").to_str().unwrap().into();
    std::fs::write(&path, serde_json::to_string(&bad).unwrap()).unwrap();
    let out = Command::new(bin())
        .args(["validate", s(&path)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run.json: scenarios[1].client_key: key file '")
            && err.contains("missing.key': cannot read"),
        "{err}"
    );
}

#[test]
fn key_contents_and_api_keys_appear_in_no_output() {
    let pki = test_pki();
    let server = tls_server(&pki.cert, &pki.key, &["--tls-client-ca", s(&pki.ca)]);
    let api_key = "sk-TLS-SECRET-0123456789";
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&server),
            "--ca-cert",
            s(&pki.ca),
            "--client-cert",
            s(&pki.client_cert),
            "--client-key",
            s(&pki.client_key),
            "--api-key",
            api_key,
            "--model",
            "m",
            "--requests",
            "6",
            "--concurrency",
            "2",
            "--record-output",
        ],
    );
    r.assert_success();
    // Every line of the key's base64 body, and the key itself.
    let key_text = std::fs::read_to_string(&pki.client_key).unwrap();
    let mut secrets: Vec<&str> = key_text
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .collect();
    assert!(!secrets.is_empty());
    secrets.push(api_key);
    let mut outputs = vec![("stdout".to_string(), r.stdout.clone())];
    outputs.push(("stderr".to_string(), r.stderr.clone()));
    for e in std::fs::read_dir(&r.out).unwrap().flatten() {
        outputs.push((
            e.path().display().to_string(),
            String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned(),
        ));
    }
    assert!(outputs.len() >= 6, "{outputs:?}");
    for (name, text) in &outputs {
        for secret in &secrets {
            assert!(!text.contains(secret), "{name} holds a secret");
        }
    }
    // A key file that is not one: named, never echoed.
    let junk = temp_dir("tls-junk").join("junk.key");
    std::fs::write(&junk, "MY-PRIVATE-SECRET-LINE\n").unwrap();
    let r = run(
        &pki,
        &[
            "--endpoint",
            &https(&server),
            "--client-cert",
            s(&pki.client_cert),
            "--client-key",
            s(&junk),
        ],
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(r.stderr.contains("--client-key"), "{}", r.stderr);
    assert!(r.stderr.contains("junk.key"), "{}", r.stderr);
    assert!(!r.stderr.contains("MY-PRIVATE-SECRET"), "{}", r.stderr);
}

#[test]
fn tls_flags_are_checked_before_anything_is_contacted() {
    let pki = test_pki();
    // Port 9 on loopback: nothing would answer, and nothing is asked.
    let url = "https://127.0.0.1:9";
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["--client-cert", s(&pki.client_cert)],
            &["--client-cert", "--client-key"],
        ),
        (
            &["--client-key", s(&pki.client_key)],
            &["--client-key", "--client-cert"],
        ),
        (
            &["--ca-cert", "/nonexistent/ca.pem"],
            &["--ca-cert", "/nonexistent/ca.pem"],
        ),
        (&["--keep-alive", "maybe"], &["--keep-alive"]),
    ];
    for (flags, want) in cases {
        let mut args = vec!["--endpoint", url, "--model", "m"];
        args.extend_from_slice(flags);
        let r = run(&pki, &args);
        assert_eq!(r.status.code(), Some(1), "{flags:?}: {}", r.stderr);
        for w in want {
            assert!(r.stderr.contains(w), "{flags:?}: {}", r.stderr);
        }
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    // TLS settings beside a plain endpoint: a warning, and the run goes on.
    let plain = Server::start(&["--ttft", "1ms"]);
    let r = run(
        &pki,
        &[
            "--endpoint",
            &plain.url(),
            "--insecure",
            "--model",
            "m",
            "--requests",
            "4",
            "--concurrency",
            "1",
        ],
    );
    r.assert_success();
    assert!(
        r.stderr
            .contains("warning: insecure set but not used: its endpoint is plain http://"),
        "{}",
        r.stderr
    );
    assert!(r.summary().get("tls").is_none());
}
