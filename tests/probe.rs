//! `llmload probe` against `llmload serve` and against small fake servers
//! (std `TcpListener` threads answering fixed responses) that imitate what
//! `serve` cannot: a server that ignores `stream`, one that wants a key,
//! one that does not know the model, one that never answers. Over https,
//! against `serve --tls-*` with the test PKI: what the handshake
//! negotiated, and each way it fails, with its reason.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::pki::Pki;
use crate::util::*;

/// Runs `llmload probe ARGS`, killed after 60 s.
pub(crate) fn probe(args: &[&str]) -> Run {
    probe_env(args, &[])
}

/// Runs `llmload probe ARGS` with `env` set, killed after 60 s.
pub(crate) fn probe_env(args: &[&str], env: &[(&str, PathBuf)]) -> Run {
    let child = Command::new(bin())
        .arg("probe")
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload probe");
    let run = wait_run(child, PathBuf::new(), Duration::from_secs(60));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

fn code(run: &Run) -> Option<i32> {
    run.status.code()
}

fn json_of(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("--json output is JSON ({e}):\n{}", run.stdout))
}

/// The check named `name` in a `--json` document.
fn check<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {doc}"))
}

/// A request as a fake server saw it.
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) head: String,
    pub(crate) body: String,
}

/// A fake HTTP server: one thread, one connection at a time, each answered
/// with whatever `answer` returns (the complete response bytes; `None` keeps
/// the connection open unanswered until the client gives up). Stops on drop.
pub(crate) struct Fake {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Fake {
    pub(crate) fn start(answer: impl Fn(&Seen) -> Option<Vec<u8>> + Send + 'static) -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(mut s) = conn else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let Some(seen) = read_request(&mut s) else {
                    continue;
                };
                match answer(&seen) {
                    Some(bytes) => {
                        let _ = s.write_all(&bytes);
                    }
                    // Hold the connection until the client closes it.
                    None => {
                        let _ = s.read(&mut [0u8; 1]);
                    }
                }
            }
        });
        Fake { addr, stop }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept so the thread sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

fn read_request(s: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let mut first = head.split_whitespace();
    Some(Seen {
        method: first.next()?.to_string(),
        path: first.next()?.to_string(),
        body: String::from_utf8_lossy(&buf[head_end..head_end + len]).into_owned(),
        head,
    })
}

fn respond(status: &str, content_type: &str, body: &str) -> Option<Vec<u8>> {
    Some(
        format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

fn models(ids: &[&str]) -> Option<Vec<u8>> {
    let data: Vec<String> = ids
        .iter()
        .map(|id| format!(r#"{{"id":"{id}","object":"model"}}"#))
        .collect();
    respond(
        "200 OK",
        "application/json",
        &format!(r#"{{"object":"list","data":[{}]}}"#, data.join(",")),
    )
}

#[test]
fn builtin_server_is_ready() {
    let server = Server::start(&["--ttft", "30ms", "--tpot", "1ms"]);
    let run = probe(&["--endpoint", &server.url()]);
    assert_eq!(code(&run), Some(0), "{}\n{}", run.stdout, run.stderr);
    let out = &run.stdout;
    assert!(
        out.contains("ok: GET /v1/models lists 1 model: llmload-mock"),
        "{out}"
    );
    assert!(
        out.contains("using model 'llmload-mock', the first listed"),
        "{out}"
    );
    assert!(
        out.contains("ok: non-streamed: 200") && out.contains("16 output tokens (usage)"),
        "{out}"
    );
    assert!(
        out.contains("ok: streamed: 200") && out.contains("TTFT "),
        "{out}"
    );
    assert!(
        out.contains("ok: ready to benchmark: llmload bench"),
        "{out}"
    );
    assert!(
        !out.contains("warning:") && !out.contains("error:"),
        "{out}"
    );
    let findings = out.rsplit("\n\n").next().unwrap();
    for line in findings.lines() {
        assert!(
            ["ok: ", "warning: ", "error: "]
                .iter()
                .any(|p| line.starts_with(p)),
            "each finding is one line starting with its level: {line}"
        );
    }
}

#[test]
fn json_has_the_checks() {
    let server = Server::start(&["--ttft", "30ms", "--tpot", "1ms"]);
    let run = probe(&["--endpoint", &server.url(), "--json"]);
    assert_eq!(code(&run), Some(0), "{}\n{}", run.stdout, run.stderr);
    let doc = json_of(&run);
    assert_eq!(doc["result"], "ready");
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["model"], "llmload-mock");
    assert_eq!(doc["model_source"], "listed");
    assert_eq!(check(&doc, "models")["models"][0], "llmload-mock");
    for c in doc["checks"].as_array().unwrap() {
        for key in [
            "path",
            "status",
            "latency_ms",
            "ttft_ms",
            "usage",
            "verdicts",
        ] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
    }
    let stream = check(&doc, "stream");
    assert_eq!(stream["status"], 200);
    assert_eq!(stream["path"], "/v1/chat/completions");
    let ttft = f(&stream["ttft_ms"]);
    assert!((29.0..1000.0).contains(&ttft), "ttft {ttft}");
    assert!(f(&stream["latency_ms"]) >= ttft);
    assert_eq!(stream["events"], 16);
    assert_eq!(stream["usage"]["completion_tokens"], 16);
    assert_eq!(stream["finish"], "length");
    assert_eq!(stream["verdicts"][0]["level"], "ok");
    let non_stream = check(&doc, "non_stream");
    assert_eq!(non_stream["status"], 200);
    assert!(non_stream["ttft_ms"].is_null());
    assert_eq!(non_stream["usage"]["completion_tokens"], 16);
    let path = check(&doc, "path");
    assert_eq!(path["max_tokens"], 8);
    assert_eq!(path["usage"]["completion_tokens"], 8);
    let levels: Vec<&str> = doc["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["level"].as_str().unwrap())
        .collect();
    assert!(levels.iter().all(|l| *l == "ok"), "{levels:?}");
}

#[test]
fn closed_port_is_refused() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let run = probe(&["--endpoint", &url]);
    assert_eq!(code(&run), Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "error: connection refused at 127.0.0.1:{port}: nothing is listening"
        )),
        "{}",
        run.stdout
    );
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
}

#[test]
fn wrong_path_is_a_404_with_the_path_that_works() {
    let server = Server::start(&[]);
    let url = format!("{}/nope", server.url());
    let run = probe(&["--endpoint", &url]);
    assert_eq!(code(&run), Some(1), "{}", run.stdout);
    let want = format!(
        "error: POST /nope → 404: this server does not serve openai-chat at that path; \
         it answered at /v1/chat/completions (try --endpoint {}/v1/chat/completions)",
        server.url()
    );
    assert!(run.stdout.contains(&want), "{}", run.stdout);
}

#[test]
fn a_server_that_does_not_stream_exits_2() {
    let fake = Fake::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v1/models") => models(&["fake-model"]),
        // Whether or not "stream": true was asked, a whole JSON body.
        ("POST", "/v1/chat/completions") => respond(
            "200 OK",
            "application/json",
            r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":6,"completion_tokens":2,"total_tokens":8}}"#,
        ),
        _ => respond(
            "404 Not Found",
            "application/json",
            r#"{"detail":"Not Found"}"#,
        ),
    });
    let run = probe(&["--endpoint", &fake.url()]);
    assert_eq!(code(&run), Some(2), "{}", run.stdout);
    let out = &run.stdout;
    assert!(
        out.contains(
            "warning: asked for a stream, got application/json: TTFT cannot be measured; benchmark with --no-stream"
        ),
        "{out}"
    );
    assert!(out.contains("ok: non-streamed: 200"), "{out}");
    assert!(
        out.contains("warning: only non-streamed requests work:") && out.contains("--no-stream"),
        "{out}"
    );

    let doc = json_of(&probe(&["--endpoint", &fake.url(), "--json"]));
    assert_eq!(doc["exit_code"], 2);
    assert_eq!(doc["result"], "non_stream_only");
    let stream = check(&doc, "stream");
    assert_eq!(stream["content_type"], "application/json");
    assert!(stream["ttft_ms"].is_null());
}

#[test]
fn a_server_that_wants_a_key_says_so_and_no_secret_is_printed() {
    const KEY: &str = "sk-probe-SECRET-4242";
    const HEADER_SECRET: &str = "hdr-SECRET-7777";
    // The server echoes the credentials it was sent, as some do.
    let fake = Fake::start(|r| {
        let sent: Vec<&str> = r
            .head
            .lines()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                l.starts_with("authorization:") || l.starts_with("x-team-token:")
            })
            .collect();
        respond(
            "401 Unauthorized",
            "application/json",
            &format!(
                r#"{{"error":{{"message":"Incorrect API key provided: {}","type":"invalid_request_error"}}}}"#,
                sent.join(" ")
            ),
        )
    });
    let run = probe(&["--endpoint", &fake.url(), "--model", "m"]);
    assert_eq!(code(&run), Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "error: POST /v1/chat/completions → 401: authentication failed: pass --api-key or --header"
        ),
        "{}",
        run.stdout
    );

    let header = format!("X-Team-Token: {HEADER_SECRET}");
    let url = fake.url();
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["--endpoint", &url, "--api-key", KEY, "--header", &header];
        args.extend_from_slice(extra);
        let run = probe(&args);
        assert_eq!(code(&run), Some(1), "{}", run.stdout);
        assert!(
            run.stdout
                .contains("authentication failed with the credentials given"),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains("<redacted>"), "{}", run.stdout);
        for secret in [KEY, HEADER_SECRET, "SECRET"] {
            assert!(!run.stdout.contains(secret), "{secret} in {}", run.stdout);
            assert!(!run.stderr.contains(secret), "{secret} in {}", run.stderr);
        }
    }
}

#[test]
fn the_key_is_not_printed_when_everything_works() {
    let server = Server::start(&[]);
    const KEY: &str = "sk-never-printed-1234";
    let url = server.url();
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["--endpoint", &url, "--api-key", KEY];
        args.extend_from_slice(extra);
        let run = probe(&args);
        assert_eq!(code(&run), Some(0), "{}", run.stdout);
        assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
        assert!(!run.stdout.contains("never-printed"));
    }
}

#[test]
fn an_unknown_model_is_named_with_the_served_ones() {
    let fake = Fake::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/v1/models") => models(&["served-a", "served-b"]),
        ("POST", _) => {
            let model = serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["model"]
                .as_str()
                .unwrap_or("")
                .to_string();
            respond(
                "404 Not Found",
                "application/json",
                &format!(
                    r#"{{"error":{{"message":"The model `{model}` does not exist.","type":"NotFoundError","code":404}}}}"#
                ),
            )
        }
        _ => respond("404 Not Found", "text/plain", "no"),
    });
    let run = probe(&["--endpoint", &fake.url(), "--model", "x"]);
    assert_eq!(code(&run), Some(1), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("model 'x' is not served; served: served-a, served-b"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("The model `x` does not exist."),
        "the server's words are shown: {}",
        run.stdout
    );
    assert!(
        !run.stdout
            .contains("does not serve openai-chat at that path"),
        "a model 404 is not a path 404: {}",
        run.stdout
    );
}

#[test]
fn a_silent_server_times_out_within_the_bound() {
    let fake = Fake::start(|_| None);
    let run = probe(&[
        "--endpoint",
        &fake.url(),
        "--model",
        "m",
        "--timeout",
        "200ms",
    ]);
    assert_eq!(code(&run), Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains("no response within 200ms (--timeout)"),
        "{}",
        run.stdout
    );
    // Connect, models, a handful of paths and two requests, 200 ms each at most.
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

#[test]
fn bytes_that_are_not_http_are_malformed() {
    let fake = Fake::start(|_| Some(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()));
    let run = probe(&["--endpoint", &fake.url(), "--model", "m"]);
    assert_eq!(code(&run), Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains("malformed HTTP response"),
        "{}",
        run.stdout
    );
}

/// No trust store of this machine takes part: the "system" store is a CA
/// that signed none of the servers' certificates, and an empty directory.
fn no_system_trust(pki: &Pki, empty: &Path) -> [(&'static str, PathBuf); 2] {
    std::fs::create_dir_all(empty).unwrap();
    [
        ("SSL_CERT_FILE", pki.other_ca.clone()),
        ("SSL_CERT_DIR", empty.to_path_buf()),
    ]
}

fn assert_failed(run: &Run, want: &[&str]) {
    assert_eq!(code(run), Some(1), "{}\n{}", run.stdout, run.stderr);
    for w in want {
        assert!(run.stdout.contains(w), "{w:?} in:\n{}", run.stdout);
    }
}

#[test]
fn https_with_ca_cert_reports_the_handshake_and_the_certificate() {
    let dir = temp_dir("probe-tls");
    let pki = Pki::new(&dir);
    let server = tls_server(&pki.cert, &pki.key, &[]);
    let url = server.url();
    let ca = pki.ca.to_str().unwrap();
    let env = no_system_trust(&pki, &dir.join("empty"));
    let run = probe_env(&["--endpoint", &url, "--ca-cert", ca], &env);
    assert_eq!(code(&run), Some(0), "{}\n{}", run.stdout, run.stderr);
    let out = &run.stdout;
    for want in [
        "ok: TLS handshake in ",
        ": TLSv1.3, TLS_",
        ", ALPN http/1.1",
        "ok: certificate verified: subject CN=localhost; issuer CN=llmload test CA; expires ",
        " days left)",
        "ok: TLS session resumption works: ",
        "ok: ready to benchmark: llmload bench --endpoint https://127.0.0.1:",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }
    let tls_row = out.lines().find(|l| l.starts_with("tls ")).unwrap();
    assert!(
        tls_row.contains("TLSv1.3") && tls_row.ends_with("server certificate verified"),
        "{tls_row}"
    );
    assert!(
        !out.contains("warning:") && !out.contains("error:"),
        "{out}"
    );
    assert!(!run.stderr.contains("clear text"), "{}", run.stderr);

    let doc = json_of(&probe_env(
        &["--endpoint", &url, "--ca-cert", ca, "--json"],
        &env,
    ));
    assert_eq!(doc["exit_code"], 0);
    let tls = &doc["tls"];
    assert_eq!(tls["protocol_version"], "TLSv1.3", "{tls}");
    assert_eq!(tls["alpn"], "http/1.1");
    assert_eq!(tls["insecure"], false);
    assert_eq!(tls["verified"], true);
    assert_eq!(tls["certificate"]["subject"], "CN=localhost");
    assert_eq!(tls["certificate"]["issuer"], "CN=llmload test CA");
    // The test leaf runs out a year from today (a day or three less when
    // today is past the 28th).
    let days = tls["certificate"]["days_left"].as_i64().unwrap();
    assert!((360..=366).contains(&days), "{days}");
    assert!(
        tls["certificate"]["not_after"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert!(tls["cipher_suite"].as_str().unwrap().starts_with("TLS_"));
    assert!(f(&tls["tls_handshake_ms"]) > 0.0 && f(&tls["tcp_connect_ms"]) > 0.0);
    // The connect's handshake is full; the model list's connection reads
    // the server's tickets, and the requests after it resume.
    let later = u(&tls["later_connections"]);
    assert!(later >= 4 && u(&tls["later_resumed"]) > 0, "{tls}");
    let connect = check(&doc, "connect");
    assert_eq!(connect["tls_resumed"], false);
    assert!(f(&connect["tls_handshake_ms"]) > 0.0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn https_verification_failures_say_why_and_what_to_try() {
    let dir = temp_dir("probe-tls-fail");
    let pki = Pki::new(&dir);
    let env = no_system_trust(&pki, &dir.join("empty"));
    let ca = pki.ca.to_str().unwrap();
    let server = tls_server(&pki.cert, &pki.key, &[]);
    let url = server.url();
    let addr = url.trim_start_matches("https://");

    let run = probe_env(&["--endpoint", &url], &env);
    assert_failed(
        &run,
        &[
            &format!("error: TLS handshake with {addr} failed: unknown issuer: "),
            "--ca-cert",
        ],
    );
    let run = probe_env(
        &[
            "--endpoint",
            &url,
            "--ca-cert",
            ca,
            "--tls-server-name",
            "other.example",
        ],
        &env,
    );
    assert_failed(
        &run,
        &[
            &format!("error: TLS handshake with {addr} failed: name mismatch: "),
            "other.example",
            "--tls-server-name",
        ],
    );

    // --insecure probes past an unknown issuer and says so.
    let run = probe_env(&["--endpoint", &url, "--insecure"], &env);
    assert_eq!(code(&run), Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "warning: certificate verification is OFF (--insecure): the server's identity was not checked"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("server certificate NOT verified (--insecure)"),
        "{}",
        run.stdout
    );
    let doc = json_of(&probe_env(
        &["--endpoint", &url, "--insecure", "--json"],
        &env,
    ));
    assert_eq!(
        (&doc["tls"]["insecure"], &doc["tls"]["verified"]),
        (&true.into(), &false.into())
    );

    let expired = tls_server(&pki.expired_cert, &pki.expired_key, &[]);
    let expired_url = expired.url();
    let run = probe_env(&["--endpoint", &expired_url, "--ca-cert", ca], &env);
    assert_failed(
        &run,
        &["failed: expired: ", "renew the server's certificate"],
    );
    let doc = json_of(&probe_env(
        &["--endpoint", &expired_url, "--ca-cert", ca, "--json"],
        &env,
    ));
    assert_eq!(doc["result"], "not_ready");
    assert!(
        doc["tls"]["failure"].as_str().unwrap().contains("expired"),
        "{}",
        doc["tls"]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_wrong_scheme_is_named_both_ways() {
    let dir = temp_dir("probe-tls-scheme");
    let pki = Pki::new(&dir);
    let tls = tls_server(&pki.cert, &pki.key, &[]);
    let run = probe(&["--endpoint", &format!("http://{}", tls.addr)]);
    assert_failed(
        &run,
        &[
            "error: GET /v1/models: the server answered in TLS, not plain HTTP: use https:// for this endpoint",
        ],
    );
    assert!(
        !run.stdout.contains("POST "),
        "the probe stops: {}",
        run.stdout
    );

    let plain = Server::start(&[]);
    let url = format!("https://{}", plain.addr);
    let run = probe_env(
        &["--endpoint", &url, "--ca-cert", pki.ca.to_str().unwrap()],
        &no_system_trust(&pki, &dir.join("empty")),
    );
    assert_failed(
        &run,
        &["the server answered in plain HTTP, not TLS: use http:// for this endpoint"],
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn mtls_needs_the_client_certificate_and_never_prints_its_key() {
    let dir = temp_dir("probe-mtls");
    let pki = Pki::new(&dir);
    let env = no_system_trust(&pki, &dir.join("empty"));
    let ca = pki.ca.to_str().unwrap();
    let server = tls_server(&pki.cert, &pki.key, &["--tls-client-ca", ca]);
    let url = server.url();

    let run = probe_env(&["--endpoint", &url, "--ca-cert", ca], &env);
    assert_failed(
        &run,
        &["alert received: CertificateRequired", "--client-cert"],
    );

    let key_text = std::fs::read_to_string(&pki.client_key).unwrap();
    let key_body: Vec<&str> = key_text
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .collect();
    assert!(!key_body.is_empty());
    let (cert, key) = (
        pki.client_cert.to_str().unwrap(),
        pki.client_key.to_str().unwrap(),
    );
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec![
            "--endpoint",
            &url,
            "--ca-cert",
            ca,
            "--client-cert",
            cert,
            "--client-key",
            key,
        ];
        args.extend_from_slice(extra);
        let run = probe_env(&args, &env);
        assert_eq!(code(&run), Some(0), "{}\n{}", run.stdout, run.stderr);
        for out in [&run.stdout, &run.stderr] {
            assert!(!out.contains("PRIVATE KEY"), "{out}");
            for line in &key_body {
                assert!(!out.contains(line), "key material in:\n{out}");
            }
        }
    }
    // A key that does not go with the certificate: named, never shown.
    let run = probe_env(
        &[
            "--endpoint",
            &url,
            "--client-cert",
            pki.cert.to_str().unwrap(),
            "--client-key",
            key,
        ],
        &env,
    );
    assert_eq!(code(&run), Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("--client-key"), "{}", run.stderr);
    for line in &key_body {
        assert!(!run.stderr.contains(line) && !run.stdout.contains(line));
    }
    let _ = std::fs::remove_dir_all(dir);
}
