//! Where connections come from and what happens when the generator runs out
//! of them: `--source-addrs` binds each connection to one of the addresses
//! given, and a worker out of descriptors reports it as its own limit, not
//! the endpoint's.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::{Server, children, have, spawn_bench, u, wait_run};

const REPLY: &str = r#"{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// Answers every request on `s` with `REPLY`, keeping the connection.
fn answer(mut s: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while buf.len() < end + 4 + len {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        buf.drain(..end + 4 + len);
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{REPLY}",
            REPLY.len()
        );
        if s.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn connections_come_from_the_source_addresses_given() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peers = Arc::new(Mutex::new(BTreeSet::<IpAddr>::new()));
    let seen = Arc::clone(&peers);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            seen.lock().unwrap().insert(s.peer_addr().unwrap().ip());
            std::thread::spawn(move || answer(s));
        }
    });
    let url = format!("http://127.0.0.1:{port}");
    let (child, out) = spawn_bench(&[
        "--endpoint",
        &url,
        "--model",
        "m",
        "--no-stream",
        "--concurrency",
        "4",
        "--requests",
        "40",
        "--workers",
        "1",
        "--server-metrics",
        "off",
        "--source-addrs",
        "127.0.0.2-127.0.0.3",
    ]);
    let run = wait_run(child, out, Duration::from_secs(20));
    run.assert_success();
    assert_eq!(u(&run.summary()["requests"]["completed"]), 40);
    let peers: Vec<String> = peers
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(peers, ["127.0.0.2", "127.0.0.3"]);
}

#[test]
fn a_source_address_the_host_does_not_have_is_refused_before_the_run() {
    if std::fs::read_to_string("/proc/sys/net/ipv4/ip_nonlocal_bind").is_ok_and(|v| v.trim() != "0")
    {
        eprintln!("skipped: ip_nonlocal_bind lets any address be bound here");
        return;
    }
    let run = crate::util::bench(
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--requests",
            "1",
            "--source-addrs",
            "203.0.113.7",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--source-addrs 203.0.113.7: cannot bind to it"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_worker_out_of_descriptors_is_a_generator_limit_not_an_endpoint_error() {
    if !have("prlimit") {
        eprintln!("skipped: the prlimit binary (util-linux) is not available");
        return;
    }
    let server = Server::start(&["--ttft", "0", "--tpot", "0", "--output-tokens", "4"]);
    // A connection per request, so every request after the limit needs a
    // new descriptor.
    let (child, out) = spawn_bench(&[
        "--endpoint",
        &server.url(),
        "--model",
        "m",
        "--rate",
        "200",
        "--duration",
        "2s",
        "--keep-alive",
        "false",
        "--workers",
        "1",
        "--server-metrics",
        "off",
    ]);
    let bench = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(10);
    let worker = loop {
        if let Some(&w) = children(bench).first() {
            break w;
        }
        assert!(Instant::now() < deadline, "no worker within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(500));
    // Only stdio's numbers are allowed now: every socket the worker opens
    // from here on fails with EMFILE (those it holds keep working).
    let lowered = Command::new("prlimit")
        .args(["--pid", &worker.to_string(), "--nofile=3:3"])
        .status()
        .expect("run prlimit");
    assert!(lowered.success(), "prlimit --pid {worker} failed");
    let run = wait_run(child, out, Duration::from_secs(30));
    let s = run.summary();
    let fds = u(&s["requests"]["errors"]["fd_exhausted"]);
    assert!(fds > 50, "fd_exhausted {fds}\n{}", run.stdout);
    assert!(u(&s["requests"]["completed"]) > 0);
    // Not the endpoint's failures: no failed connections, no other errors.
    assert_eq!(u(&s["connections"]["failed"]), 0);
    assert_eq!(
        s["requests"]["errors"].as_object().unwrap().len(),
        1,
        "{}",
        s["requests"]["errors"]
    );
    assert_eq!(s["generator"]["limited_by_generator"], true);
    let limits = s["generator"]["limits"].to_string();
    assert!(
        limits.contains(&format!(
            "the generator ran out of file descriptors: {fds} connect(s) failed"
        )),
        "{limits}"
    );
    let report = crate::util::read(&run.out.join("report.txt"));
    assert!(
        report.contains("the generator ran out of file descriptors"),
        "{report}"
    );
}
