//! `serve --tls-cert --tls-key [--tls-client-ca]`: every API over TLS with
//! the same exact bytes and counts as in the clear, keep-alive, session
//! resumption whichever worker accepts, client certificates, a plain-HTTP
//! client answered with a TLS alert, a handshake that never finishes, faults
//! through TLS, and bad files named without their contents. The client is
//! rustls's blocking stream over a std socket, trusting the test PKI's CA.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{AlertDescription, ClientConfig, ClientConnection, HandshakeKind, StreamOwned};

use llmload::server::ServerConfig;
use llmload::server::formats::Format;

use super::client::Client;
use super::{
    Fixture, body_text, body_usage, cfg, chat, chat_body, event_text, expected_content, gen_req,
    get, post, stream_frame,
};
use crate::pki::Pki;
use crate::util::{ServeProcess, read_to_close, temp_dir, wait_run};

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A fresh PKI in a fresh directory, removed when the test ends.
struct TestPki(Pki);

impl std::ops::Deref for TestPki {
    type Target = Pki;
    fn deref(&self) -> &Pki {
        &self.0
    }
}

impl Drop for TestPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0.dir);
    }
}

fn pki() -> TestPki {
    TestPki(Pki::new(&temp_dir("tls-serve")))
}

/// Serve's TLS flags for `pki`'s server certificate.
fn tls_args(pki: &Pki) -> Vec<String> {
    vec![
        "--tls-cert".into(),
        pki.cert.display().to_string(),
        "--tls-key".into(),
        pki.key.display().to_string(),
    ]
}

fn start(pki: &Pki, more: &[&str]) -> ServeProcess {
    let mut args = tls_args(pki);
    args.extend(more.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = ServeProcess::start(&[], &args);
    assert!(s.tls, "serve --tls-cert prints an https:// address");
    assert!(s.url().starts_with("https://127.0.0.1:"), "{}", s.url());
    s
}

fn certs(path: &Path) -> Vec<CertificateDer<'static>> {
    let pem = std::fs::read(path).unwrap();
    CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A client trusting the test CA (and only it), with the test client
/// certificate when `client_cert`. One configuration keeps one session
/// cache: connections made with it resume.
fn client_config(pki: &Pki, client_cert: bool) -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in certs(&pki.ca) {
        roots.add(c).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = if client_cert {
        let key = PrivateKeyDer::from_pem_file(&pki.client_key).unwrap();
        builder
            .with_client_auth_cert(certs(&pki.client_cert), key)
            .unwrap()
    } else {
        builder.with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Connects to `addr` as `localhost` and completes the handshake.
fn connect(addr: SocketAddr, config: &Arc<ClientConfig>) -> io::Result<Tls> {
    let sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    sock.set_nodelay(true)?;
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(config.clone(), name).unwrap();
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

fn client(addr: SocketAddr, config: &Arc<ClientConfig>) -> Client<Tls> {
    Client::over(connect(addr, config).expect("TLS handshake"))
}

/// The rustls error inside an I/O error, if that is what it is.
fn tls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

#[test]
fn every_api_answers_over_tls_streamed_and_not_with_exact_tokens() {
    let pki = pki();
    let server = start(&pki, &[]);
    let config = client_config(&pki, false);
    let mut c = client(server.addr, &config);
    assert_eq!(c.s.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    assert_eq!(c.s.conn.handshake_kind(), Some(HandshakeKind::Full));
    let mut tokens = 0;
    for format in Format::ALL {
        for (stream, n) in [(true, 7u32), (false, 5u32)] {
            let r = c.roundtrip(&gen_req(format, stream, n, false));
            assert_eq!(r.status, 200, "{format:?} stream {stream}");
            tokens += u64::from(n);
            if !stream {
                let v = r.json();
                assert_eq!(body_text(format, &v), expected_content(n), "{format:?}");
                assert_eq!(body_usage(format, &v), u64::from(n), "{format:?}");
                continue;
            }
            let events = r.json_events();
            let (lead, trail) = stream_frame(format);
            assert_eq!(events.len(), lead + n as usize + trail, "{format:?}");
            let texts: Vec<&str> = events[lead..lead + n as usize]
                .iter()
                .map(|(_, e)| event_text(format, e))
                .collect();
            let text = match format {
                // Each SGLang event carries the whole text so far.
                Format::Generate => texts.last().unwrap().to_string(),
                _ => texts.concat(),
            };
            assert_eq!(text, expected_content(n), "{format:?}");
        }
    }
    // Chat with usage in the stream, as the plain tests count it.
    let r = c.roundtrip(&chat(&chat_body(true, 9, true)));
    let events = r.events();
    assert_eq!(events.len(), 1 + 9 + 3, "{events:#?}");
    let usage: serde_json::Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 9);
    let r = c.roundtrip(&get("/v1/models"));
    assert_eq!(r.json()["data"][0]["id"], "llmload-mock");
    drop(c);
    let s = server.stop();
    assert_eq!(s["requests"], 9);
    assert_eq!(s["completed"], 9);
    assert_eq!(s["streams"], 5);
    assert_eq!(s["output_tokens"], tokens + 9);
    assert_eq!(s["tls_handshakes"], 1, "{s}");
    assert_eq!(s["tls_handshake_failures"], 0, "{s}");
}

#[test]
fn keep_alive_over_tls_serves_many_requests_on_one_handshake() {
    let pki = pki();
    let server = start(&pki, &["--tpot", "1ms"]);
    let config = client_config(&pki, false);
    let mut c = client(server.addr, &config);
    for i in 0..10u32 {
        let r = c.roundtrip(&chat(&chat_body(i % 2 == 0, i, true)));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), None);
        if i % 2 == 0 {
            assert_eq!(r.events().len(), 1 + i as usize + 3);
        } else {
            assert_eq!(r.json()["usage"]["completion_tokens"], i);
        }
    }
    // Pipelined, in one TLS record: answered in order.
    let mut all = chat(&chat_body(true, 3, false));
    all.extend(chat(&chat_body(false, 2, false)));
    all.extend(get("/v1/models"));
    c.send(&all);
    assert_eq!(c.response().events().len(), 1 + 3 + 2);
    assert_eq!(c.response().json()["usage"]["completion_tokens"], 2);
    assert_eq!(c.response().status, 200);
    // A large request body spans several records.
    let big = format!(
        r#"{{"model":"m","max_tokens":4,"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "word ".repeat(40_000)
    );
    let r = c.roundtrip(&chat(&big));
    assert_eq!(r.json()["usage"]["prompt_tokens"], 40_000);
    drop(c);
    let s = server.stop();
    assert_eq!(
        (s["requests"].as_u64(), s["completed"].as_u64()),
        (Some(13), Some(13))
    );
    assert_eq!(s["output_tokens"], (0..10).sum::<u64>() + 3 + 2 + 4);
    assert_eq!(s["tls_handshakes"], 1, "{s}");
}

#[test]
fn sessions_resume_whichever_worker_accepts() {
    let pki = pki();
    let f = Fixture::new(ServerConfig {
        workers: 2,
        tls_cert: Some(pki.cert.clone()),
        tls_key: Some(pki.key.clone()),
        ..cfg()
    });
    let config = client_config(&pki, false);
    let kind = |config: &Arc<ClientConfig>| {
        let mut c = client(f.addr(), config);
        let kind = c.s.conn.handshake_kind();
        // The response is read, and with it the tickets sent after the
        // handshake.
        assert_eq!(c.roundtrip(&chat(&chat_body(false, 2, false))).status, 200);
        kind
    };
    assert_eq!(kind(&config), Some(HandshakeKind::Full));
    // Connections land on either worker (SO_REUSEPORT hashes the port);
    // go on until both have resumed a session, which 64 connections all
    // but guarantee.
    let mut n = 1;
    loop {
        assert_eq!(
            kind(&config),
            Some(HandshakeKind::Resumed),
            "connection {n}"
        );
        n += 1;
        let per = f.server.as_ref().unwrap().worker_stats();
        if per.iter().all(|w| w.tls_resumed > 0) && n >= 4 {
            break;
        }
        assert!(n < 64, "every resumption landed on one worker: {per:?}");
    }
    // A client with its own, empty cache starts in full.
    assert_eq!(kind(&client_config(&pki, false)), Some(HandshakeKind::Full));
    let s = f.stop();
    assert_eq!((s.tls_handshakes, s.tls_resumed), (n + 1, n - 1));
    assert_eq!(s.completed, n + 1);
}

#[test]
fn no_resumption_makes_every_handshake_full() {
    let pki = pki();
    let f = Fixture::new(ServerConfig {
        tls_cert: Some(pki.cert.clone()),
        tls_key: Some(pki.key.clone()),
        tls_no_resumption: true,
        ..cfg()
    });
    let config = client_config(&pki, false);
    for n in 0..3 {
        let mut c = client(f.addr(), &config);
        assert_eq!(c.s.conn.handshake_kind(), Some(HandshakeKind::Full), "{n}");
        assert_eq!(c.roundtrip(&chat(&chat_body(false, 2, false))).status, 200);
    }
    let s = f.stop();
    assert_eq!((s.tls_handshakes, s.tls_resumed), (3, 0));
}

#[test]
fn a_client_certificate_is_required_with_tls_client_ca() {
    let pki = pki();
    let ca = pki.ca.display().to_string();
    let server = start(&pki, &["--tls-client-ca", &ca]);
    // Without a certificate: TLS 1.3 finishes the client's side of the
    // handshake first, so the refusal may come with the first read.
    let refused = connect(server.addr, &client_config(&pki, false)).and_then(|mut s| {
        s.write_all(&get("/v1/models"))?;
        let mut buf = [0u8; 256];
        s.read(&mut buf)
    });
    let e = refused.expect_err("a client without a certificate is refused");
    assert_eq!(
        tls_error(&e),
        Some(&rustls::Error::AlertReceived(
            AlertDescription::CertificateRequired
        )),
        "{e}"
    );
    // With the CA's client certificate: served.
    let mut c = client(server.addr, &client_config(&pki, true));
    let r = c.roundtrip(&chat(&chat_body(true, 4, false)));
    assert_eq!(r.events().len(), 1 + 4 + 2);
    drop(c);
    let s = server.stop();
    assert_eq!(s["tls_handshakes"], 1, "{s}");
    assert_eq!(s["tls_handshake_failures"], 1, "{s}");
    assert_eq!(s["completed"], 1);
}

#[test]
fn a_plain_http_request_gets_a_tls_alert() {
    let pki = pki();
    let server = start(&pki, &[]);
    // A GET, and a POST larger than one read of the handshake, so the
    // alert must survive unread input (a lingering close, not a reset).
    let body = "x".repeat(100_000);
    let post = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    for req in [get("/v1/models"), post.into_bytes()] {
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&req).unwrap();
        let (_, got) = read_to_close(&mut s);
        // A TLS record of content type alert (21), version 3.x, fatal.
        assert!(got.len() >= 7, "{got:?}");
        assert_eq!(got[..2], [0x15, 0x03], "{got:?}");
        assert_eq!(got[5], 2, "a fatal alert: {got:?}");
    }
    let s = server.stop();
    assert_eq!(s["tls_handshake_failures"], 2, "{s}");
    assert_eq!(s["requests"], 0);
}

#[test]
fn a_handshake_that_never_finishes_meets_the_idle_timeout() {
    let pki = pki();
    let server = start(&pki, &["--idle-timeout", "200ms"]);
    let t0 = Instant::now();
    // One client says nothing, one stops in the middle of its hello.
    let mut silent = TcpStream::connect(server.addr).unwrap();
    let mut partial = TcpStream::connect(server.addr).unwrap();
    partial
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    for s in [&mut silent, &mut partial] {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        read_to_close(s);
    }
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(190) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    // The server still serves.
    let config = client_config(&pki, false);
    let mut c = client(server.addr, &config);
    assert_eq!(c.roundtrip(&get("/v1/models")).status, 200);
    drop(c);
    let s = server.stop();
    assert_eq!(s["timed_out"], 2, "{s}");
    assert_eq!(s["tls_handshakes"], 1, "{s}");
}

#[test]
fn faults_go_through_tls() {
    let pki = pki();
    let config = client_config(&pki, false);

    // Error statuses and malformed bytes, decrypted as sent.
    let server = start(
        &pki,
        &[
            "--error-rate",
            "0.5",
            "--error-status",
            "429",
            "--malformed-rate",
            "0.25",
            "--malformed-kind",
            "status-line",
        ],
    );
    let mut statuses = Vec::new();
    let mut malformed = 0;
    for _ in 0..8 {
        let mut s = connect(server.addr, &config).unwrap();
        let body = chat_body(false, 3, false);
        s.write_all(&post(
            "/v1/chat/completions",
            &body,
            "Connection: close\r\n",
        ))
        .unwrap();
        let (closed, got) = read_to_close(&mut s);
        assert!(closed, "reset, not closed, after {got:?}");
        if got.starts_with(llmload::server::MALFORMED) {
            malformed += 1;
        } else {
            let head = String::from_utf8_lossy(&got[..12]).into_owned();
            statuses.push(head);
        }
    }
    let errors = statuses
        .iter()
        .filter(|h| h.as_str() == "HTTP/1.1 429")
        .count() as u64;
    let ok = statuses
        .iter()
        .filter(|h| h.as_str() == "HTTP/1.1 200")
        .count() as u64;
    assert!(malformed > 0 && errors > 0 && ok > 0, "{statuses:?}");
    assert_eq!(malformed + errors + ok, 8, "{statuses:?}");
    let s = server.stop();
    assert_eq!(s["errors_injected"], errors, "{s}");
    assert_eq!(s["malformed_injected"], malformed, "{s}");
    assert_eq!(s["completed"], ok, "{s}");

    // A dripped response arrives whole, a record per byte; an endless one
    // is paced by its reader.
    let server = start(&pki, &["--drip", "1ms", "--endless-rate", "0.5"]);
    let mut c = client(server.addr, &config);
    let r = c.roundtrip(&get("/v1/models"));
    assert_eq!(r.json()["data"][0]["id"], "llmload-mock");
    let r = c.roundtrip(&chat(&chat_body(false, 2, false)));
    assert_eq!(r.json()["usage"]["completion_tokens"], 2);
    drop(c);
    let server2 = start(&pki, &["--endless-rate", "1"]);
    let mut s = connect(server2.addr, &config).unwrap();
    s.write_all(&chat(&chat_body(true, 3, false))).unwrap();
    let mut got = 0usize;
    let mut buf = vec![0u8; 65536];
    while got < 4 << 20 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "an endless stream ended");
        got += n;
    }
    // The reader stops: the server holds, then serves others.
    std::thread::sleep(Duration::from_millis(200));
    let mut other = client(server2.addr, &config);
    assert_eq!(other.roundtrip(&get("/v1/models")).status, 200);
    drop(s);
    drop(other);
    assert_eq!(server2.stop()["endless_injected"], 1);
    assert_eq!(server.stop()["completed"], 1);
}

#[test]
fn the_connection_cap_is_answered_over_tls() {
    let pki = pki();
    let server = start(&pki, &["--max-connections", "1"]);
    let config = client_config(&pki, false);
    let mut first = client(server.addr, &config);
    assert_eq!(first.roundtrip(&get("/v1/models")).status, 200);
    let mut second = client(server.addr, &config);
    let (closed, got) = read_to_close(&mut second.s);
    assert!(closed, "reset, not closed, after {got:?}");
    assert!(
        got.starts_with(b"HTTP/1.1 503"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    drop(first);
    drop(second);
    assert_eq!(server.stop()["over_capacity"], 1);
}

/// Runs `serve ARGS` expecting it to refuse them: its exit status and
/// stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let child = Command::new(crate::util::bin())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = wait_run(child, temp_dir("tls-refused"), Duration::from_secs(10));
    let _ = std::fs::remove_dir(&run.out);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    (run.status.code(), run.stderr)
}

#[test]
fn bad_tls_flags_and_files_are_named_and_keys_never_printed() {
    let pki = pki();
    let p = |p: &Path| p.display().to_string();
    let (cert, key, ca) = (p(&pki.cert), p(&pki.key), p(&pki.ca));
    let client_key = p(&pki.client_key);
    let junk = pki.dir.join("junk.pem");
    std::fs::write(&junk, "SECRET-NOT-PEM\n").unwrap();
    let junk = p(&junk);
    let missing = p(&pki.dir.join("missing.pem"));
    // Key material that must never be echoed: the body lines of each key.
    let secrets: Vec<String> = [&pki.key, &pki.client_key]
        .iter()
        .flat_map(|k| {
            std::fs::read_to_string(k)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--tls-cert", &cert],
            vec!["--tls-cert needs --tls-key"],
        ),
        (vec!["--tls-key", &key], vec!["--tls-key needs --tls-cert"]),
        (
            vec!["--tls-client-ca", &ca],
            vec!["--tls-client-ca needs --tls-cert and --tls-key"],
        ),
        (
            vec!["--tls-cert", &missing, "--tls-key", &key],
            vec!["--tls-cert", "missing.pem", "cannot read"],
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &missing],
            vec!["--tls-key", "missing.pem", "cannot read"],
        ),
        // A key given as the certificate: named, not printed.
        (
            vec!["--tls-cert", &key, "--tls-key", &key],
            vec!["--tls-cert", "server.key", "no certificate"],
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &junk],
            vec!["--tls-key", "junk.pem", "no private key"],
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &client_key],
            vec![
                "--tls-cert",
                "--tls-key",
                "client.key",
                "do not go together",
            ],
        ),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-client-ca",
                &key,
            ],
            vec!["--tls-client-ca", "server.key"],
        ),
    ];
    for (args, wanted) in cases {
        let (code, stderr) = refused(&args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("llmload serve: "), "{stderr}");
        for w in wanted {
            assert!(stderr.contains(w), "{args:?}: {w:?} not in {stderr}");
        }
        assert!(!stderr.contains("SECRET"), "{stderr}");
        for line in &secrets {
            assert!(!stderr.contains(line.as_str()), "key bytes in {stderr}");
        }
    }
}

#[test]
fn the_first_line_and_the_banner_say_whether_tls_is_on() {
    let pki = pki();
    let ca = pki.ca.display().to_string();
    let mut with_ca = tls_args(&pki);
    with_ca.extend(["--tls-client-ca".to_string(), ca]);
    let cases = [
        (
            tls_args(&pki),
            "https://",
            "no client certificate asked for",
        ),
        (
            with_ca,
            "https://",
            "client certificates required, signed by a CA in",
        ),
        (Vec::new(), "127.0.0.1:", ""),
    ];
    for (args, first, banner) in cases {
        let mut child = Command::new(crate::util::bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = io::BufRead::read_line(&mut io::BufReader::new(stdout), &mut line);
            let _ = tx.send(line);
        });
        let mut stderr = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let line = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        crate::util::signal(&child, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "serve outlived SIGTERM");
            std::thread::sleep(Duration::from_millis(5));
        }
        let stderr = err.join().unwrap();
        assert!(line.starts_with(first), "{line:?}");
        let (addr, tls) = crate::util::parse_first_line(&line);
        assert_eq!(
            (addr.ip().to_string(), tls),
            ("127.0.0.1".to_string(), !banner.is_empty())
        );
        if banner.is_empty() {
            assert!(!stderr.contains("TLS"), "{stderr}");
        } else {
            assert!(
                stderr.contains("TLS on") && stderr.contains(banner),
                "{stderr}"
            );
        }
    }
}

#[test]
fn tls_flags_come_in_pairs() {
    let config = |cert: bool, key: bool, ca: bool| ServerConfig {
        tls_cert: cert.then(|| "c.pem".into()),
        tls_key: key.then(|| "k.pem".into()),
        tls_client_ca: ca.then(|| "ca.pem".into()),
        ..cfg()
    };
    let e = |c: ServerConfig| c.validate().unwrap_err();
    assert_eq!(e(config(true, false, false)), "--tls-cert needs --tls-key");
    assert_eq!(e(config(false, true, true)), "--tls-key needs --tls-cert");
    assert_eq!(
        e(config(false, false, true)),
        "--tls-client-ca needs --tls-cert and --tls-key"
    );
    let no_resumption = ServerConfig {
        tls_no_resumption: true,
        ..config(false, false, false)
    };
    assert_eq!(
        e(no_resumption),
        "--tls-no-resumption needs --tls-cert and --tls-key"
    );
    assert!(config(true, true, true).validate().is_ok());
    assert!(!config(false, false, false).tls());
}
