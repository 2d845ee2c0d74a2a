use super::*;
use std::net::TcpListener;

/// Serves `parts` to one connection after reading the request head,
/// pausing 30 ms between parts.
fn serve_parts(parts: Vec<&'static [u8]>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 4096];
        let mut got = Vec::new();
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                return;
            }
            got.extend_from_slice(&buf[..n]);
        }
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(30));
            }
            let _ = s.write_all(part);
        }
    });
    addr
}

fn serve_once(answer: &'static [u8]) -> SocketAddr {
    serve_parts(vec![answer])
}

fn get_from(addr: SocketAddr) -> Result<Response, FetchError> {
    let e = Endpoint::local(addr, "/");
    get(&e, "/x", &[], Duration::from_secs(5), None)
}

#[test]
fn chunked_body_is_decoded_with_arrival_times() {
    let addr = serve_parts(vec![
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n\
          6\r\ndata: \r\n",
        b"5\r\nhello\r\n2\r\n\n\n\r\n0\r\n\r\n",
    ]);
    let r = get_from(addr).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.event_stream);
    assert_eq!(r.content_type.as_deref(), Some("text/event-stream"));
    assert_eq!(r.body, b"data: hello\n\n");
    assert_eq!(r.pieces.len(), 2, "{:?}", r.pieces);
    assert!(r.pieces[1].1 >= r.pieces[0].1 + Duration::from_millis(20));
    assert!(r.latency >= r.first_byte);
}

#[test]
fn interim_heads_are_skipped_and_close_ends_a_body() {
    let addr = serve_once(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 301 Moved\r\nLocation: https://x/\r\n\r\nbye",
    );
    let r = get_from(addr).unwrap();
    assert_eq!(r.status, 301);
    assert_eq!(r.location.as_deref(), Some("https://x/"));
    assert_eq!(r.body, b"bye");
}

#[test]
fn failures_are_named() {
    let addr = serve_once(b"\x15\x03\x01\x00\x02\x02\x46");
    assert!(
        matches!(get_from(addr), Err(FetchError::TlsOnHttp)),
        "a TLS alert to a plain request"
    );
    let addr = serve_once(b"SSH-2.0-OpenSSH_9.6\r\n\r\n");
    match get_from(addr) {
        Err(FetchError::Malformed { start, .. }) => assert_eq!(&start[..4], b"SSH-"),
        other => panic!("{other:?}"),
    }
    let addr = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    assert!(matches!(
        get_from(addr),
        Err(FetchError::Closed { head: true })
    ));
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = SocketAddr::from(([127, 0, 0, 1], port));
    assert!(matches!(
        get_from(closed),
        Err(FetchError::Connect(ConnectError::Refused))
    ));
}

#[test]
fn a_silent_server_times_out() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let e = Endpoint::local(l.local_addr().unwrap(), "/");
    let start = Instant::now();
    let r = get(&e, "/x", &[], Duration::from_millis(200), None);
    assert!(
        matches!(r, Err(FetchError::Timeout { head: false })),
        "{r:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(2));
    drop(l);
}

/// A test PKI: a CA, a `localhost` leaf it signs, a client leaf it
/// signs, and a CA that signs nothing. Other modules' TLS tests use it.
pub(crate) struct Pki {
    dir: std::path::PathBuf,
    pub(crate) ca: std::path::PathBuf,
    pub(crate) other_ca: std::path::PathBuf,
    pub(crate) cert: std::path::PathBuf,
    pub(crate) key: std::path::PathBuf,
    pub(crate) client_cert: std::path::PathBuf,
    pub(crate) client_key: std::path::PathBuf,
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn pki(tag: &str) -> Pki {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, date_time_ymd,
    };
    let dir = std::env::temp_dir().join(format!("llmload-blocking-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, name);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = p.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(p, key))
    };
    let (ca_pem, issuer) = ca("blocking test CA");
    let (other_pem, _) = ca("nobody's CA");
    let leaf = |names: Vec<String>, cn: &str, client: bool| {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(names).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        p.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        p.not_before = date_time_ymd(2020, 1, 1);
        p.not_after = date_time_ymd(2999, 12, 31);
        (
            p.signed_by(&key, &issuer).unwrap().pem(),
            key.serialize_pem(),
        )
    };
    let (cert, key) = leaf(vec!["localhost".into()], "localhost", false);
    let (client_cert, client_key) = leaf(Vec::new(), "blocking test client", true);
    let w = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    Pki {
        ca: w("ca.pem", &ca_pem),
        other_ca: w("other-ca.pem", &other_pem),
        cert: w("server.pem", &cert),
        key: w("server.key", &key),
        client_cert: w("client.pem", &client_cert),
        client_key: w("client.key", &client_key),
        dir,
    }
}

/// A TLS server for `conns` connections: each request head is answered
/// with `answer`. Errors end a connection quietly (the client reports).
pub(crate) fn serve_tls(
    config: std::sync::Arc<rustls::ServerConfig>,
    conns: usize,
    answer: &'static [u8],
) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..conns {
            let Ok((sock, _)) = l.accept() else { return };
            let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
            let tls = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut s = rustls::StreamOwned::new(tls, sock);
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            if got.ends_with(b"\r\n\r\n") {
                let _ = s.write_all(answer);
                let _ = s.flush();
            }
        }
    });
    addr
}

pub(crate) fn client(settings: crate::tls::TlsSettings) -> TlsClient {
    TlsClient::new(&settings, "localhost").unwrap()
}

pub(crate) fn trusting(p: &Pki) -> crate::tls::TlsSettings {
    crate::tls::TlsSettings {
        ca_cert: Some(p.ca.clone()),
        ..Default::default()
    }
}

fn get_tls(addr: SocketAddr, tls: &TlsClient) -> Result<Response, FetchError> {
    let e = Endpoint::local(addr, "/");
    get(&e, "/x", &[], Duration::from_secs(5), Some(tls))
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

#[test]
fn https_responses_say_what_tls_negotiated_and_resume() {
    let p = pki("ok");
    let config = crate::tls::server::config(&p.cert, &p.key, None, true).unwrap();
    let addr = serve_tls(config, 2, OK);
    let tls = client(trusting(&p));
    let r = get_tls(addr, &tls).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    let info = r.setup.tls.clone().unwrap();
    assert_eq!(info.version, "TLSv1.3");
    assert!(
        info.cipher_suite.starts_with("TLS_"),
        "{}",
        info.cipher_suite
    );
    assert_eq!(info.alpn.as_deref(), Some("http/1.1"));
    assert!(!info.resumed && !info.insecure);
    let cert = info.cert.unwrap();
    assert_eq!(cert.subject, "CN=localhost");
    assert_eq!(cert.issuer, "CN=blocking test CA");
    assert_eq!(cert.not_after, "2999-12-31T00:00:00Z");
    assert!(cert.days_left > 300_000, "{}", cert.days_left);
    assert!(r.setup.tls_handshake.is_some());
    // The first exchange read the server's tickets.
    let r = get_tls(addr, &tls).unwrap();
    assert_eq!(r.body, b"hello");
    assert!(
        r.setup.tls.unwrap().resumed,
        "the second connection resumes"
    );
}

#[test]
fn handshake_failures_carry_their_reason() {
    let p = pki("bad");
    let config = crate::tls::server::config(&p.cert, &p.key, None, true).unwrap();
    let addr = serve_tls(config, 3, OK);
    let stranger = client(crate::tls::TlsSettings {
        ca_cert: Some(p.other_ca.clone()),
        ..Default::default()
    });
    match get_tls(addr, &stranger) {
        Err(FetchError::Handshake(why)) => assert!(why.starts_with("unknown issuer"), "{why}"),
        other => panic!("{other:?}"),
    }
    let misnamed = TlsClient::new(&trusting(&p), "other.example").unwrap();
    match get_tls(addr, &misnamed) {
        Err(FetchError::Handshake(why)) => assert!(why.starts_with("name mismatch"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Unverified, the same server answers; the report says so.
    let r = get_tls(
        addr,
        &client(crate::tls::TlsSettings {
            insecure: true,
            ..Default::default()
        }),
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert!(r.setup.tls.unwrap().insecure);
}

#[test]
fn the_wrong_scheme_is_named_both_ways() {
    // https:// at a plain-HTTP server, which answers the ClientHello
    // as a bad request.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let p = pki("scheme");
    match get_tls(plain, &client(trusting(&p))) {
        Err(FetchError::Handshake(why)) => {
            assert!(
                why.contains("plain HTTP") && why.contains("http://"),
                "{why}"
            )
        }
        other => panic!("{other:?}"),
    }
    // http:// at a TLS server.
    let config = crate::tls::server::config(&p.cert, &p.key, None, true).unwrap();
    let tls_addr = serve_tls(config, 1, OK);
    let r = get_from(tls_addr);
    assert!(matches!(r, Err(FetchError::TlsOnHttp)), "{r:?}");
    assert!(
        FetchError::TlsOnHttp.to_string().contains("use https://"),
        "{}",
        FetchError::TlsOnHttp
    );
}

#[test]
fn a_server_that_wants_a_client_certificate_refuses_the_handshake_without_one() {
    let p = pki("mtls");
    let config = crate::tls::server::config(&p.cert, &p.key, Some(&p.ca), true).unwrap();
    let addr = serve_tls(config, 2, OK);
    match get_tls(addr, &client(trusting(&p))) {
        Err(FetchError::Handshake(why)) => {
            assert!(why.starts_with("alert received"), "{why}");
            assert!(why.contains("--client-cert"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let with_cert = client(crate::tls::TlsSettings {
        client_cert: Some(p.client_cert.clone()),
        client_key: Some(p.client_key.clone()),
        ..trusting(&p)
    });
    assert_eq!(get_tls(addr, &with_cert).unwrap().body, b"hello");
}

#[test]
fn open_times_the_connect_and_the_handshake_apart() {
    let p = pki("open");
    let config = crate::tls::server::config(&p.cert, &p.key, None, true).unwrap();
    let addr = serve_tls(config, 1, OK);
    let setup = open(addr, Duration::from_secs(5), Some(&client(trusting(&p)))).unwrap();
    assert!(setup.tls_handshake.unwrap() > Duration::ZERO);
    assert_eq!(setup.tls.unwrap().version, "TLSv1.3");
    let plain = serve_once(OK);
    let setup = open(plain, Duration::from_secs(5), None).unwrap();
    assert!(setup.tls.is_none() && setup.tls_handshake.is_none());
}

#[test]
fn a_silent_server_times_the_handshake_out() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = pki("silent");
    let start = Instant::now();
    let r = open(
        l.local_addr().unwrap(),
        Duration::from_millis(200),
        Some(&client(trusting(&p))),
    );
    assert!(matches!(r, Err(FetchError::HandshakeTimeout)), "{r:?}");
    assert!(start.elapsed() < Duration::from_secs(2));
    drop(l);
}

#[test]
fn expiry_is_counted_in_whole_days_from_now() {
    use rcgen::{CertificateParams, KeyPair, date_time_ymd};
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["x".to_string()]).unwrap();
    params.not_after = date_time_ymd(2030, 1, 1);
    let cert = params.self_signed(&key).unwrap();
    // 2029-12-02T00:00:00Z, then half a day later, then past the end.
    let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
    let dec2 = 1_890_864_000;
    let info = cert_info(cert.der(), at(dec2)).unwrap();
    assert_eq!(info.not_after, "2030-01-01T00:00:00Z");
    assert_eq!(info.days_left, 30);
    assert_eq!(
        cert_info(cert.der(), at(dec2 + 43_200)).unwrap().days_left,
        29
    );
    assert_eq!(
        cert_info(cert.der(), at(dec2 + 31 * 86_400))
            .unwrap()
            .days_left,
        -1
    );
    assert!(cert_info(b"not a certificate", at(dec2)).is_none());
}
