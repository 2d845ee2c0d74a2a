//! Credentials and what servers send back: URL userinfo refused, a header
//! typo that does not echo its value, the key from a file, model discovery
//! with the run's credentials, the clear-text warning, and control
//! characters from a server kept off the terminal.

use std::time::Duration;

use crate::probe::{Fake, probe};
use crate::util::*;

/// Runs `llmload ARGS` (any subcommand), killed after 30 s.
fn cli(args: &[&str], env: &[(&str, &str)]) -> Run {
    keyless(llmload(args), env)
}

/// `llmload bench ARGS --out <fresh dir>`, report printed.
fn bench_loud(args: &[&str], env: &[(&str, &str)]) -> Run {
    let cmd = llmload(&["bench"]).args(args).fresh_out("secrets");
    keyless(cmd.limit(Duration::from_secs(60)), env)
}

/// Runs `cmd` with no `$OPENAI_API_KEY` unless `env` gives one; a panic
/// fails the test.
fn keyless(cmd: Llmload, env: &[(&str, &str)]) -> Run {
    let run = cmd.env_remove("OPENAI_API_KEY").envs(env).run();
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

#[test]
fn url_credentials_are_refused_and_never_echoed() {
    let url = "http://user:PW-SECRET@127.0.0.1:9/v1/chat/completions?key=Q-SECRET";
    let run = bench_loud(&["--endpoint", url, "--model", "m", "--requests", "1"], &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("credentials in the URL (user:password@host) are not supported"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("http://<redacted>@127.0.0.1:9/"));
    let p = probe(&["--endpoint", url]);
    assert_eq!(p.status.code(), Some(1), "{}", p.stdout);
    assert!(p.stdout.contains("credentials in the URL"), "{}", p.stdout);

    // validate: the error and, for a valid profile, its summary.
    let dir = temp_dir("validate");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, format!(r#"{{"endpoint": "{url}"}}"#)).unwrap();
    let good = dir.join("good.json");
    std::fs::write(
        &good,
        r#"{"endpoint": "http://127.0.0.1:9/v1/chat/completions?key=Q-SECRET",
            "scenarios": [{"name": "a", "endpoint": "http://127.0.0.1:9/x?key=Q-SECRET"}]}"#,
    )
    .unwrap();
    let v_bad = cli(&["validate", bad.to_str().unwrap()], &[]);
    assert_eq!(v_bad.status.code(), Some(1));
    assert!(v_bad.stderr.contains("endpoint: '"), "{}", v_bad.stderr);
    let v_good = cli(&["validate", good.to_str().unwrap()], &[]);
    assert_eq!(v_good.status.code(), Some(0), "{}", v_good.stderr);
    assert!(
        v_good.stdout.contains("?key=<redacted>"),
        "{}",
        v_good.stdout
    );
    // A query key reaches the server (it ignores queries) but is never shown.
    let server = Server::start(&[]);
    let with_query = format!("{}/v1/chat/completions?key=Q-SECRET-9", server.url());
    let ok = probe(&["--endpoint", &with_query]);
    let ok_json = probe(&["--endpoint", &with_query, "--json"]);
    for r in [&ok, &ok_json] {
        assert_eq!(r.status.code(), Some(0), "{}", r.stdout);
        assert!(r.stdout.contains("?key=<redacted>"), "{}", r.stdout);
    }
    for r in [&run, &p, &v_bad, &v_good, &ok, &ok_json] {
        let all = r.stdout.clone() + &r.stderr;
        assert!(!all.contains("SECRET"), "{all}");
    }
}

#[test]
fn a_header_typo_never_echoes_the_value() {
    for args in [
        &["bench", "--requests", "1"][..],
        &["probe", "--endpoint", "http://127.0.0.1:9"][..],
    ] {
        for typo in ["Authorization Bearer sk-SECRET", "sk-SECRET"] {
            let mut a = args.to_vec();
            a.extend(["--header", typo]);
            let run = cli(&a, &[]);
            assert_eq!(run.status.code(), Some(1), "{a:?}: {}", run.stderr);
            assert!(
                run.stderr.contains("expected 'Name: value'"),
                "{a:?}: {}",
                run.stderr
            );
            assert!(!run.stderr.contains("SECRET"), "{a:?}: {}", run.stderr);
            assert!(!run.stdout.contains("SECRET"), "{a:?}: {}", run.stdout);
        }
    }
}

#[test]
fn model_discovery_sends_the_credentials() {
    const KEY: &str = "sk-discovery-SECRET-31";
    let server = ServeProcess::start(&[], &["--api-key", KEY]);
    let url = server.url();
    let key_file = temp_dir("key").join("key");
    // The editor's trailing newline is dropped.
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let base = [
        "--endpoint",
        url.as_str(),
        "--requests",
        "3",
        "--concurrency",
        "1",
    ];
    let with_key = [&base[..], &["--api-key", KEY]].concat();
    let from_file = [&base[..], &["--api-key-file", key_file.to_str().unwrap()]].concat();
    let mut runs = Vec::new();
    for (args, env) in [
        (&with_key[..], &[][..]),
        (&from_file[..], &[][..]),
        (&base[..], &[("OPENAI_API_KEY", KEY)][..]),
    ] {
        let run = bench_loud(args, env);
        run.assert_success();
        let s = run.summary();
        assert_eq!(s["config"]["model"], "llmload-mock", "discovered");
        assert_eq!(s["requests"]["completed"], 3);
        runs.push(run);
    }
    // A wrong key: model discovery is refused and the run does not start.
    let wrong = bench_loud(
        &[&base[..], &["--api-key", "sk-wrong-SECRET"]].concat(),
        &[],
    );
    let none = bench_loud(&base, &[]);
    let stats = server.stop();
    // Discovery and requests of the three good runs: all authorized; one
    // refusal per bad run, at discovery, and no generation request after it.
    assert_eq!(stats["unauthorized"], 2, "{stats}");
    assert_eq!(stats["requests"], 9, "{stats}");
    assert_eq!(stats["completed"], 9, "{stats}");
    for (run, hint) in [
        (&wrong, "check the API key"),
        (&none, "no API key was sent"),
    ] {
        assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
        assert!(
            run.stderr
                .contains("the endpoint refused the credentials: GET /v1/models on 127.0.0.1:"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("answered HTTP 401"), "{}", run.stderr);
        assert!(run.stderr.contains(hint), "{}", run.stderr);
        assert!(!run.out.join("summary.json").exists());
    }
    for run in runs.iter().chain([&wrong, &none]) {
        let all = run.stdout.clone() + &run.stderr;
        assert!(!all.contains("SECRET"), "{all}");
    }
}

#[test]
fn a_key_file_is_read_or_named_in_the_error() {
    let dir = temp_dir("keyfile");
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let two = dir.join("two");
    std::fs::write(&two, "sk-a-SECRET\nsk-b-SECRET\n").unwrap();
    let missing = dir.join("missing");
    for (path, why) in [
        (&empty, "empty"),
        (&two, "more than one line"),
        (&missing, "No such file"),
    ] {
        let p = path.to_str().unwrap();
        let run = cli(&["bench", "--model", "m", "--api-key-file", p], &[]);
        assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
        let want = format!("--api-key-file: {p}: ");
        assert!(run.stderr.contains(&want), "{want} in {}", run.stderr);
        assert!(run.stderr.contains(why), "{}", run.stderr);
        assert!(!run.stderr.contains("SECRET"), "{}", run.stderr);
    }
    let run = cli(&["bench", "--api-key", "k", "--api-key-file", "/x"], &[]);
    assert_eq!(run.status.code(), Some(1));
    assert!(run.stderr.contains("alternatives"), "{}", run.stderr);
}

#[test]
fn credentials_to_another_host_are_warned_about_once() {
    // A host that does not resolve: not loopback, and requests fail at once.
    let url = "http://no-such-host.invalid:8000/v1/chat/completions";
    let args = [
        "--endpoint",
        url,
        "--model",
        "m",
        "--requests",
        "2",
        "--header",
        "X-Goog-Api-Key: goog-SECRET",
    ];
    let warned = |run: &Run| {
        run.stderr
            .lines()
            .filter(|l| l.contains("clear text"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let run = bench_loud(&args, &[("OPENAI_API_KEY", "sk-env-SECRET")]);
    assert_eq!(
        warned(&run),
        [
            "llmload bench: warning: header X-Goog-Api-Key, the API key from $OPENAI_API_KEY \
          will be sent in clear text (plain http) to no-such-host.invalid:8000; anyone on \
          the network path can read it"
        ],
        "{}",
        run.stderr
    );
    // probe sends nothing to a host that does not resolve: an address that
    // does, off this machine (TEST-NET-1, unrouted).
    let p = cli(
        &[
            "probe",
            "--endpoint",
            "http://192.0.2.1:8000",
            "--api-key",
            "sk-flag-SECRET",
            "--timeout",
            "300ms",
        ],
        &[],
    );
    assert_eq!(
        warned(&p),
        [
            "llmload probe: warning: the API key will be sent in clear text (plain http) to \
          192.0.2.1:8000; anyone on the network path can read it"
        ],
        "{}",
        p.stderr
    );
    // No credentials: nothing to warn about.
    let quiet = bench_loud(&args[..6], &[]);
    assert!(warned(&quiet).is_empty(), "{}", quiet.stderr);
    for r in [&run, &p, &quiet] {
        assert!(!(r.stdout.clone() + &r.stderr).contains("SECRET"));
    }
}

/// A response that closes its connection, so a client never reuses it.
fn respond(status: &str, body: &str) -> Option<Vec<u8>> {
    Some(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

#[test]
fn control_characters_from_a_server_never_reach_the_terminal() {
    // JSON escapes: the id and message hold ESC, BEL, CR and a C1 CSI.
    let id = r#"m\u001b[31mred\u0007\r\u009b2J"#;
    let fake = Fake::start(move |r| {
        if r.path.starts_with("/v1/models") {
            respond(
                "200 OK",
                &format!(r#"{{"object":"list","data":[{{"id":"{id}"}}]}}"#),
            )
        } else {
            respond(
                "500 Internal Server Error",
                r#"{"error":{"message":"boom \u001b[2J\u001b]0;owned\u0007 done"}}"#,
            )
        }
    });
    let url = fake.url();
    let run = bench_loud(
        &["--endpoint", &url, "--requests", "2", "--concurrency", "1"],
        &[],
    );
    assert_eq!(
        run.status.code(),
        Some(1),
        "nothing succeeded: {}",
        run.stderr
    );
    let s = run.summary();
    // The id is kept as sent (JSON escapes it); the terminal sees it cleaned.
    assert_eq!(s["config"]["model"], "m\u{1b}[31mred\u{7}\r\u{9b}2J");
    // The title's one line: each run of control characters is a space.
    assert!(run.stdout.contains("model m [31mred 2J)"), "{}", run.stdout);
    assert!(
        run.stdout.contains("boom [2J ]0;owned done"),
        "{}",
        run.stdout
    );
    let p = probe(&["--endpoint", &url]);
    let report = read(&run.out.join("report.txt"));
    for text in [&run.stdout, &run.stderr, &report, &p.stdout, &p.stderr] {
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{text:?}"
        );
    }
    assert!(p.stdout.contains("m[31mred2J"), "{}", p.stdout);
}
