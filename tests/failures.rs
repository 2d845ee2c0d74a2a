//! Failures are counted and classified exactly, and never stop the run:
//! injected 503s, malformed responses, resets, timeouts, a dead endpoint.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use crate::util::*;

fn run_against(server_args: &[&str], bench_args: &[&str]) -> serde_json::Value {
    let server = Server::start(server_args);
    let run = bench_at(&server, bench_args, Duration::from_secs(60));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    s
}

#[test]
fn error_rate_is_counted_exactly_as_503() {
    // One server worker and one request at a time: exactly a quarter fail.
    let s = run_against(
        &["--error-rate", "0.25"],
        &[
            "--concurrency",
            "1",
            "--requests",
            "40",
            "--max-tokens",
            "4",
        ],
    );
    assert_eq!(u(&s["requests"]["issued"]), 40);
    assert_eq!(u(&s["requests"]["failed"]), 10);
    assert_eq!(u(&s["requests"]["errors"]["http_503"]), 10);
    assert_eq!(u(&s["tokens"]["output_total"]), 30 * 4);
    assert_eq!(s["error_messages"]["http_503"][0], "injected error");
}

#[test]
fn error_rate_non_stream_under_concurrency() {
    let s = run_against(
        &["--error-rate", "0.5"],
        &[
            "--no-stream",
            "--concurrency",
            "8",
            "--requests",
            "100",
            "--max-tokens",
            "2",
        ],
    );
    assert_eq!(u(&s["requests"]["errors"]["http_503"]), 50);
    assert_eq!(u(&s["requests"]["completed"]), 50);
}

#[test]
fn malformed_responses_are_classified() {
    let s = run_against(
        &["--malformed-rate", "1"],
        &["--concurrency", "2", "--requests", "10"],
    );
    assert_eq!(u(&s["requests"]["errors"]["malformed_response"]), 10);
    assert_eq!(u(&s["requests"]["completed"]), 0);
}

#[test]
fn resets_mid_stream_are_classified() {
    let s = run_against(
        &["--reset-rate", "0.5", "--tpot", "1ms"],
        &[
            "--concurrency",
            "1",
            "--requests",
            "10",
            "--max-tokens",
            "10",
        ],
    );
    assert_eq!(u(&s["requests"]["errors"]["reset"]), 5);
    assert_eq!(u(&s["requests"]["completed"]), 5);
}

#[test]
fn slow_responses_time_out() {
    let s = run_against(
        &["--ttft", "3s"],
        &[
            "--concurrency",
            "3",
            "--requests",
            "3",
            "--timeout",
            "300ms",
        ],
    );
    assert_eq!(u(&s["requests"]["errors"]["request_timeout"]), 3);
}

#[test]
fn unreachable_endpoint_gives_a_clean_failure_report() {
    // A port that was just free: nothing listens there.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &["--endpoint", &url, "--requests", "25", "--concurrency", "5"],
        Duration::from_secs(30),
    );
    assert!(
        run.elapsed < Duration::from_secs(15),
        "took {:?}",
        run.elapsed
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["issued"]), 25);
    assert_eq!(u(&s["requests"]["errors"]["connect_refused"]), 25);
    assert_eq!(s["complete"], true);
    assert!(run.out.join("report.txt").exists());
}

#[test]
fn unreachable_endpoint_with_duration_ends_in_time() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &["--endpoint", &url, "--duration", "1s", "--model", "m"],
        Duration::from_secs(30),
    );
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert!(u(&s["requests"]["errors"]["connect_refused"]) > 0);
    assert_eq!(u(&s["requests"]["completed"]), 0);
}

/// A listener whose accept queue is full: further SYNs are dropped, so a
/// connect neither succeeds nor is refused.
fn blackhole() -> (OwnedFd, u16, Vec<std::net::TcpStream>) {
    use nix::sys::socket::{
        AddressFamily, Backlog, SockFlag, SockType, SockaddrIn, bind, getsockname, listen, socket,
    };
    // std's listeners take a backlog of 128; this one needs 0.
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::empty(),
        None,
    )
    .expect("socket");
    bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).expect("bind");
    listen(&fd, Backlog::new(0).expect("backlog")).expect("listen");
    let port = getsockname::<SockaddrIn>(fd.as_raw_fd())
        .expect("getsockname")
        .port();
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let fill = (0..4)
        .filter_map(|_| {
            std::net::TcpStream::connect_timeout(&target, Duration::from_millis(100)).ok()
        })
        .collect();
    (fd, port, fill)
}

#[test]
fn unanswered_connects_time_out() {
    let (fd, port, _fill) = blackhole();
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--requests",
            "3",
            "--concurrency",
            "3",
            "--connect-timeout",
            "300ms",
        ],
        Duration::from_secs(30),
    );
    drop(fd);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert_eq!(
        u(&s["requests"]["errors"]["connect_timeout"]),
        3,
        "{}",
        s["requests"]
    );
    assert!(
        run.elapsed < Duration::from_secs(10),
        "took {:?}",
        run.elapsed
    );
}

/// A server that answers the first request on each connection and closes
/// the connection, unanswered, on the second: what a server's idle timeout
/// looks like when it races a client's next request.
fn one_shot_server(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let body = r#"{"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((mut s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let reply = reply.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                let mut seen = Vec::new();
                // First request: answer once its body is in.
                loop {
                    let Ok(n) = s.read(&mut buf) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    if seen.ends_with(b"}") {
                        break;
                    }
                }
                let _ = s.write_all(reply.as_bytes());
                // Second request: read it, then close without answering.
                let _ = s.read(&mut buf);
            });
        }
    });
    port
}

#[test]
fn stale_keepalive_connections_are_retried_once() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let port = one_shot_server(stop.clone());
    let url = format!("http://127.0.0.1:{port}");
    let run = bench(
        &[
            "--endpoint",
            &url,
            "--model",
            "m",
            "--no-stream",
            "--requests",
            "20",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    run.assert_success();
    let s = run.summary();
    assert_eq!(u(&s["requests"]["completed"]), 20, "{}", s["requests"]);
    // Every request after the first met a connection that had served one.
    assert_eq!(u(&s["generator"]["stale_connection_retries"]), 19);
}
