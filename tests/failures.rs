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
        // Every request sent, to see each accounted for.
        &[
            "--endpoint",
            &url,
            "--requests",
            "25",
            "--concurrency",
            "5",
            "--no-fail-fast",
        ],
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
            // The server answers one request per connection: no probe.
            "--server-metrics",
            "off",
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

/// One request as a `RawServer` received it.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    /// Connection number, from 0 in accept order.
    pub conn: usize,
    /// Request number on its connection, from 0.
    pub nth: usize,
    /// Head and body.
    pub text: String,
}

impl Received {
    pub(crate) fn body(&self) -> serde_json::Value {
        let at = self.text.find("\r\n\r\n").expect("a head") + 4;
        serde_json::from_str(&self.text[at..]).expect("a JSON body")
    }
}

/// What a `RawServer`'s handler does after a request.
pub(crate) enum Then {
    /// Read the next request on the connection.
    Next,
    /// Close the connection.
    Close,
}

/// A scripted HTTP/1.1 server on 127.0.0.1 for responses `llmload serve`
/// has no option for: each complete request (head and Content-Length body)
/// is kept and handed to `answer`, which writes whatever it likes.
pub(crate) struct RawServer {
    pub port: u16,
    pub received: std::sync::Arc<std::sync::Mutex<Vec<Received>>>,
}

type Answer = dyn Fn(&mut std::net::TcpStream, &Received) -> Then + Send + Sync;

impl RawServer {
    pub(crate) fn start(
        answer: impl Fn(&mut std::net::TcpStream, &Received) -> Then + Send + Sync + 'static,
    ) -> RawServer {
        use std::io::Read;
        use std::sync::{Arc, Mutex};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let answer: Arc<Answer> = Arc::new(answer);
        let kept = received.clone();
        std::thread::spawn(move || {
            for (conn, s) in l.incoming().enumerate() {
                let Ok(mut s) = s else { return };
                let (kept, answer) = (kept.clone(), answer.clone());
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                std::thread::spawn(move || {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    for nth in 0.. {
                        let len = loop {
                            if let Some(len) = request_len(&buf) {
                                break len;
                            }
                            match s.read(&mut chunk) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let req = Received {
                            conn,
                            nth,
                            text: String::from_utf8_lossy(&buf[..len]).into_owned(),
                        };
                        buf.drain(..len);
                        kept.lock().unwrap().push(req.clone());
                        if let Then::Close = answer(&mut s, &req) {
                            return;
                        }
                    }
                });
            }
        });
        RawServer { port, received }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

/// Length of the complete request at the front of `buf`, if it is all there.
pub(crate) fn request_len(buf: &[u8]) -> Option<usize> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let body: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    (buf.len() >= end + body).then_some(end + body)
}

/// A 200 JSON response carrying `body`, kept alive.
pub(crate) fn json_200(s: &mut std::net::TcpStream, body: &str) {
    use std::io::Write;
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
}

/// A chat completion body with one word of output.
pub(crate) const CHAT_BODY: &str = r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;

/// Runs bench against `server` with model `m` and `args`; no panic, and
/// every request accounted for.
fn bench_raw(server: &RawServer, args: &[&str]) -> (Run, serde_json::Value) {
    let url = server.url();
    // Its requests are the run's alone: no GET /metrics probe.
    let mut all = vec![
        "--endpoint",
        url.as_str(),
        "--model",
        "m",
        "--server-metrics",
        "off",
    ];
    all.extend_from_slice(args);
    let run = bench(&all, Duration::from_secs(60));
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let s = run.summary();
    assert_accounted(&s["requests"]);
    (run, s)
}

#[test]
fn a_success_without_the_apis_shape_is_no_output() {
    use std::io::Write;
    // Request k gets answer k % 4: an HTML page, an empty body, JSON
    // without choices, and (streamed) an event stream of foreign events.
    let n = std::sync::atomic::AtomicUsize::new(0);
    let server = RawServer::start(move |s, _| {
        let html = "<html><body>Sign in to continue</body></html>";
        let sse = "data: {\"status\":\"queued\"}\n\n";
        let _ = match n.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 4 {
            0 => write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{html}",
                html.len()
            ),
            1 => write!(s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
            2 => {
                json_200(s, r#"{"object":"list","data":[]}"#);
                Ok(())
            }
            _ => write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{sse}",
                sse.len()
            ),
        };
        Then::Next
    });
    let (_, s) = bench_raw(&server, &["--concurrency", "1", "--requests", "8"]);
    let r = &s["requests"];
    assert_eq!(u(&r["completed"]), 0, "{r}");
    assert_eq!(u(&r["errors"]["no_output"]), 8, "{r}");
    let messages = s["error_messages"]["no_output"].to_string();
    assert!(
        messages.contains("<html><body>Sign in to continue</body></html>")
            && messages.contains("empty body")
            && messages.contains("{\\\"object\\\":\\\"list\\\",\\\"data\\\":[]}"),
        "{messages}"
    );
}

#[test]
fn a_close_delimited_stream_cut_short_is_truncated() {
    use std::io::Write;
    // Every connection carries one stream and is then closed. Connection k
    // by k % 3: a close-delimited stream cut after two tokens, as by a
    // server that crashed; the same ended by `[DONE]`; a chunked stream cut
    // before its last chunk, which is a broken connection like any framed
    // body cut short.
    let server = RawServer::start(|s, req| {
        let chunked = req.conn % 3 == 2;
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{}\r\n",
            if chunked {
                "Transfer-Encoding: chunked\r\n"
            } else {
                "Connection: close\r\n"
            }
        );
        for word in ["one", "two"] {
            let event =
                format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{word} \"}}}}]}}\n\n");
            let _ = if chunked {
                write!(s, "{:x}\r\n{event}\r\n", event.len())
            } else {
                s.write_all(event.as_bytes())
            };
        }
        if req.conn % 3 == 1 {
            let _ = write!(s, "data: [DONE]\n\n");
        }
        Then::Close
    });
    let (_, s) = bench_raw(&server, &["--concurrency", "1", "--requests", "6"]);
    let r = &s["requests"];
    assert_eq!(u(&r["errors"]["truncated"]), 2, "{r}");
    assert_eq!(u(&r["errors"]["reset"]), 2, "{r}");
    assert_eq!(u(&r["completed"]), 2, "{r}");
    assert_eq!(server.received().len(), 6);
}

#[test]
fn switching_protocols_closes_the_connection() {
    use std::io::Write;
    // The server would go on reading HTTP on a switched connection; the
    // client must not send it any.
    let server = RawServer::start(|s, _| {
        let _ = write!(
            s,
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
        );
        Then::Next
    });
    let (_, s) = bench_raw(&server, &["--concurrency", "1", "--requests", "3"]);
    assert_eq!(
        u(&s["requests"]["errors"]["http_101"]),
        3,
        "{}",
        s["requests"]
    );
    let got = server.received();
    assert_eq!(got.len(), 3);
    assert!(
        got.iter().all(|r| r.nth == 0),
        "a switched connection was reused: {got:?}"
    );
}

#[test]
fn a_slow_error_body_is_its_status_not_a_ttft_timeout() {
    use std::io::Write;
    // The 503's head comes at once; its body after the TTFT limit.
    let server = RawServer::start(|s, _| {
        let body = r#"{"error":{"message":"overloaded"}}"#;
        let _ = write!(
            s,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let _ = s.flush();
        std::thread::sleep(Duration::from_millis(400));
        let _ = s.write_all(body.as_bytes());
        Then::Next
    });
    let (_, s) = bench_raw(
        &server,
        &[
            "--concurrency",
            "2",
            "--requests",
            "2",
            "--ttft-timeout",
            "150ms",
            "--timeout",
            "5s",
        ],
    );
    let r = &s["requests"];
    assert_eq!(u(&r["errors"]["http_503"]), 2, "{r}");
    assert_eq!(s["error_messages"]["http_503"][0], "overloaded");
}
