//! The client and server configurations against each other through `io`,
//! on loopback: verification, resumption and the failure reasons.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

use super::io::{FirstBytes, Handshake, handshake, read, write};
use super::{TlsClient, TlsSettings, reason, server};

struct Files {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn files(dir: &Path) -> Files {
    std::fs::create_dir_all(dir).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let w = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    Files {
        ca: w("ca.pem", ca_cert.pem()),
        cert: w("cert.pem", leaf.pem()),
        key: w("key.pem", key.serialize_pem()),
    }
}

fn temp(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("llmload-tls-{}-{tag}", std::process::id()))
}

/// A server that answers each connection's first read with `reply`, over
/// TLS with `config`, for `conns` connections.
fn serve(
    config: Arc<rustls::ServerConfig>,
    conns: usize,
    reply: &'static [u8],
) -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        for _ in 0..conns {
            let (sock, _) = l.accept().unwrap();
            let tls = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut s = rustls::StreamOwned::new(tls, sock);
            let mut buf = [0u8; 64];
            if s.read(&mut buf).is_ok() {
                let _ = s.write_all(reply);
                let _ = s.flush();
            }
        }
    });
    (port, h)
}

/// One exchange through the non-blocking helpers; the handshake's kind, or
/// the reason it failed.
fn exchange(client: &TlsClient, port: u16) -> Result<(Vec<u8>, rustls::HandshakeKind), String> {
    let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut tls = client.connect().unwrap();
    let mut first = FirstBytes::default();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match handshake(&mut tls, &mut sock, &mut first) {
            Ok(Handshake::Done) => break,
            Ok(Handshake::Blocked) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(reason::handshake(&e, &first).into_owned()),
        }
        assert!(Instant::now() < deadline, "handshake timed out");
    }
    let kind = tls.handshake_kind().unwrap();
    let req = b"ping";
    let mut sent = 0;
    while sent < req.len() || super::io::pending(&tls) {
        sent += write(&mut tls, &mut sock, &req[sent..]).unwrap();
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 16];
    loop {
        match read(&mut tls, &mut sock, &mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => return Err(reason::after_handshake(&e).into_owned()),
        }
        assert!(Instant::now() < deadline, "read timed out");
    }
    Ok((got, kind))
}

#[test]
fn a_verified_exchange_resumes_on_the_next_connection() {
    let dir = temp("ok");
    let f = files(&dir);
    let config = server::config(&f.cert, &f.key, None, true).unwrap();
    let (port, h) = serve(config, 2, b"pong");
    let settings = TlsSettings {
        ca_cert: Some(f.ca.clone()),
        ..TlsSettings::default()
    };
    let client = TlsClient::new(&settings, "localhost").unwrap();
    let (got, kind) = exchange(&client, port).unwrap();
    assert_eq!(
        (got.as_slice(), kind),
        (&b"pong"[..], rustls::HandshakeKind::Full)
    );
    let (got, kind) = exchange(&client, port).unwrap();
    assert_eq!(
        (got.as_slice(), kind),
        (&b"pong"[..], rustls::HandshakeKind::Resumed)
    );
    h.join().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_unknown_issuer_and_a_wrong_name_are_told_apart() {
    let dir = temp("bad");
    let f = files(&dir);
    let config = server::config(&f.cert, &f.key, None, true).unwrap();
    let (port, h) = serve(config, 3, b"pong");
    // No --ca-cert: the test CA is in no store. (Needs a system store; a
    // machine without one fails earlier, at TlsClient::new, and says so.)
    if let Ok(client) = TlsClient::new(&TlsSettings::default(), "localhost") {
        let e = exchange(&client, port).unwrap_err();
        assert!(e.starts_with("unknown issuer"), "{e}");
    } else {
        let _ = TcpStream::connect(("127.0.0.1", port));
    }
    let with_ca = TlsSettings {
        ca_cert: Some(f.ca.clone()),
        server_name: Some("other.example".into()),
        ..TlsSettings::default()
    };
    let e = exchange(&TlsClient::new(&with_ca, "localhost").unwrap(), port).unwrap_err();
    assert!(e.starts_with("name mismatch"), "{e}");
    let insecure = TlsSettings {
        insecure: true,
        server_name: Some("other.example".into()),
        ..TlsSettings::default()
    };
    let (got, _) = exchange(&TlsClient::new(&insecure, "localhost").unwrap(), port).unwrap();
    assert_eq!(got, b"pong");
    h.join().unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_plain_http_server_is_named() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 512];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let client = TlsClient::new(
        &TlsSettings {
            insecure: true,
            ..TlsSettings::default()
        },
        "localhost",
    )
    .unwrap();
    let e = exchange(&client, port).unwrap_err();
    assert!(e.contains("plain HTTP"), "{e}");
    h.join().unwrap();
}

#[test]
fn bad_files_are_named_and_keys_never_echoed() {
    let dir = temp("files");
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "SECRET-KEY-MATERIAL\n").unwrap();
    let e = TlsClient::new(
        &TlsSettings {
            ca_cert: Some(junk.clone()),
            ..TlsSettings::default()
        },
        "h",
    )
    .unwrap_err();
    assert!(e.contains("--ca-cert") && e.contains("junk.pem"), "{e}");
    let e = server::config(&junk, &junk, None, true).unwrap_err();
    assert!(e.contains("junk.pem") && !e.contains("SECRET"), "{e}");
    let f = files(&dir);
    let e = server::config(&f.cert, &junk, None, true).unwrap_err();
    assert!(e.contains("key file") && !e.contains("SECRET"), "{e}");
    let e = TlsClient::new(
        &TlsSettings {
            client_cert: Some(f.cert.clone()),
            ..TlsSettings::default()
        },
        "h",
    )
    .unwrap_err();
    assert!(e.contains("--client-key"), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}
