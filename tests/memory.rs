//! Bounded memory against a server that streams text without end: the kept
//! text stops at `--max-output-text`, the request still times out at
//! `--timeout` (not `worker_lost`), and the worker's peak RSS stays small.
//! The server is a raw TCP thread in the test, writing one valid chunked
//! SSE chat stream per connection for as long as the client reads.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::util::{
    Server, assert_accounted, bench_at, read, spawn_bench, temp_dir, u, wait_run_watching,
};

/// Peak RSS a worker may reach here: its own few MiB, the kept text cap
/// (4 MiB by default), a record's copy and the completion ring it touches.
const WORKER_HWM_LIMIT_KIB: u64 = 150 * 1024;

/// A server that answers every request with an endless chat stream.
struct Endless {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Endless {
    fn start() -> Endless {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let flag = Arc::clone(&flag);
                        std::thread::spawn(move || serve(conn, &flag));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Endless {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/v1/chat/completions", self.addr)
    }
}

impl Drop for Endless {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request (head and `Content-Length` body), then streams text
/// events until the client goes away.
fn serve(mut conn: TcpStream, stop: &AtomicBool) {
    conn.set_nonblocking(false).unwrap();
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut req = Vec::new();
    let mut buf = [0u8; 4096];
    let body_end = loop {
        let Ok(n) = conn.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        req.extend_from_slice(&buf[..n]);
        if let Some(h) = req.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&req[..h]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap_or(0));
            break h + 4 + len;
        }
    };
    while req.len() < body_end {
        let Ok(n) = conn.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        req.extend_from_slice(&buf[..n]);
    }
    let head =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    if conn.write_all(head).is_err() {
        return;
    }
    // One chunk of many events, each a few hundred bytes of text.
    let text = "lorem ipsum dolor sit amet ".repeat(20);
    let event = format!(
        "data: {{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    );
    let events = event.repeat((64 << 10) / event.len());
    let mut chunk = format!("{:x}\r\n", events.len()).into_bytes();
    chunk.extend_from_slice(events.as_bytes());
    chunk.extend_from_slice(b"\r\n");
    while !stop.load(Ordering::Relaxed) {
        if conn.write_all(&chunk).is_err() {
            return;
        }
    }
}

/// Runs bench with `args` against `server`, sampling the peak RSS of its
/// children (the workers) while it runs. Returns the run and the largest
/// `VmHWM` seen, in KiB.
fn bench_watching_workers(
    server: &Endless,
    args: &[&str],
    limit: Duration,
) -> (crate::util::Run, u64) {
    let url = server.url();
    let mut all = vec!["--endpoint", &url, "--model", "m", "--workers", "1"];
    all.extend_from_slice(args);
    let (child, out) = spawn_bench(&all);
    let (run, peak) = wait_run_watching(child, out, limit);
    (run, peak.expect("no worker process was seen"))
}

#[test]
fn an_endless_stream_times_out_with_bounded_memory() {
    let server = Endless::start();
    let (run, peak_kib) = bench_watching_workers(
        &server,
        &[
            "--record-output",
            "--timeout",
            "3s",
            "--requests",
            "1",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    let took = run.elapsed;
    let s = run.summary();
    assert_accounted(&s["requests"]);
    assert_eq!(u(&s["requests"]["failed"]), 1, "{s}");
    assert_eq!(u(&s["requests"]["errors"]["request_timeout"]), 1, "{s}");
    assert_eq!(s["complete"], true, "{}", run.stderr);
    // The run ends at the request's timeout, not seconds later.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        peak_kib < WORKER_HWM_LIMIT_KIB,
        "worker peak RSS {peak_kib} KiB"
    );
    // The text went on being counted past the cap, and the request says
    // its output was cut.
    assert_eq!(u(&s["tokens"]["output_truncated"]), 1, "{s}");
    let events = read(&run.out.join("events.jsonl"));
    let line: serde_json::Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    assert_eq!(line["output_truncated"], true);
    assert_eq!(line["error"], "request_timeout");
    let output = line["output"].as_str().unwrap();
    assert!(output.starts_with("lorem ipsum") && output.len() <= 4 << 20);
    assert!(
        u(&line["content_length"]) > 4 << 20,
        "{}",
        line["content_length"]
    );
}

#[test]
fn an_endless_reply_fails_its_turn_without_growing_the_history() {
    let server = Endless::start();
    let dir = temp_dir("memory-profile");
    let profile = dir.join("two-turns.json");
    std::fs::write(
        &profile,
        r#"{"scenarios": [{"name": "chat", "turns": 2}], "max_output_text": "1MiB"}"#,
    )
    .unwrap();
    let (run, peak_kib) = bench_watching_workers(
        &server,
        &[
            "--profile",
            profile.to_str().unwrap(),
            "--timeout",
            "3s",
            "--requests",
            "3",
            "--concurrency",
            "1",
        ],
        Duration::from_secs(30),
    );
    let s = run.summary();
    assert_accounted(&s["requests"]);
    // Each conversation's first reply passes the cap and fails at once; the
    // conversation ends there.
    assert_eq!(u(&s["requests"]["issued"]), 3, "{s}");
    assert_eq!(u(&s["requests"]["errors"]["output_over_cap"]), 3, "{s}");
    assert_eq!(u(&s["tokens"]["output_truncated"]), 3, "{s}");
    assert!(run.elapsed < Duration::from_secs(8), "{:?}", run.elapsed);
    assert!(
        peak_kib < WORKER_HWM_LIMIT_KIB,
        "worker peak RSS {peak_kib} KiB"
    );
}

#[test]
fn a_cut_output_is_marked_and_not_tokenized() {
    let dir = temp_dir("memory-tok");
    let tok = dir.join("tokenizer.json");
    std::fs::write(&tok, llmload::tokens::word_level_json(&["a", "b"])).unwrap();
    let server = Server::start(&["--no-usage"]);
    let run = bench_at(
        &server,
        &[
            "--tokenizer",
            tok.to_str().unwrap(),
            "--record-output",
            "--max-output-text",
            "64",
            "--max-tokens",
            "40",
            "--requests",
            "6",
            "--concurrency",
            "2",
        ],
        Duration::from_secs(30),
    );
    run.assert_success();
    let s = run.summary();
    let t = &s["tokens"];
    // Every reply is longer than 64 bytes: each is cut, and a cut text
    // would be undercounted, so the events count it instead.
    assert_eq!(u(&t["output_truncated"]), 6, "{t}");
    assert_eq!(u(&t["output_untokenized"]), 6, "{t}");
    assert_eq!(t["output_source"], "events", "{t}");
    assert_eq!(u(&t["output_total"]), 6 * 40, "{t}");
    let events = read(&run.out.join("events.jsonl"));
    assert_eq!(events.lines().count(), 6);
    for l in events.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["output_truncated"], true, "{l}");
        assert!(v["output"].as_str().unwrap().len() <= 64, "{l}");
    }
    let report = read(&run.out.join("report.txt"));
    assert!(report.contains("6 output(s) not tokenized"), "{report}");
}
