//! End-to-end tests of the built-in endpoint: real worker processes on
//! 127.0.0.1 port 0, driven by a small blocking HTTP client that timestamps
//! every chunk it receives (CLOCK_MONOTONIC, the clock the server paces
//! with). The tests that fork servers run one at a time, so the timing test
//! is not measuring its neighbours' load; every read has a timeout, so a bug
//! fails a test instead of hanging it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::openai::token;
use super::{ServerConfig, ServerHandle, ServerStats, spawn};
use crate::clock::now_ns;

static SERIAL: Mutex<()> = Mutex::new(());

/// A server for one test, and the lock that keeps the others waiting.
struct Fixture {
    server: Option<ServerHandle>,
    _serial: MutexGuard<'static, ()>,
}

impl Fixture {
    fn new(cfg: ServerConfig) -> Self {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let server = spawn(&cfg).expect("spawn");
        Fixture {
            server: Some(server),
            _serial: serial,
        }
    }

    fn addr(&self) -> SocketAddr {
        self.server.as_ref().unwrap().addr
    }

    fn client(&self) -> Client {
        Client::connect(self.addr())
    }

    fn stop(mut self) -> ServerStats {
        self.server.take().unwrap().stop()
    }
}

fn cfg() -> ServerConfig {
    ServerConfig::default()
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Chunk payloads with the time each was complete at the client.
    chunks: Vec<(Vec<u8>, u64)>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The SSE events, checking that each chunk holds exactly one.
    fn events(&self) -> Vec<String> {
        self.chunks
            .iter()
            .map(|(c, _)| {
                let text = std::str::from_utf8(c).unwrap();
                assert!(
                    text.starts_with("data: ") && text.ends_with("\n\n"),
                    "{text:?}"
                );
                assert_eq!(
                    text.matches("\n\n").count(),
                    1,
                    "one event per chunk: {text:?}"
                );
                text["data: ".len()..text.len() - 2].to_string()
            })
            .collect()
    }
}

struct Client {
    s: TcpStream,
    buf: Vec<u8>,
    /// When the latest read returned.
    stamp: u64,
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Client {
            s,
            buf: Vec::new(),
            stamp: 0,
        }
    }

    /// Writes `bytes`; returns when the last byte was handed to the kernel.
    fn send(&mut self, bytes: &[u8]) -> u64 {
        self.s.write_all(bytes).expect("send");
        now_ns()
    }

    fn fill(&mut self) -> io::Result<usize> {
        let mut tmp = [0u8; 65536];
        let n = self.s.read(&mut tmp)?;
        self.stamp = now_ns();
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(n)
    }

    fn fill_or_die(&mut self) {
        let n = self.fill().expect("read");
        assert!(
            n > 0,
            "connection closed early; have {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            self.fill_or_die();
        }
        self.buf.drain(..n).collect()
    }

    fn line(&mut self) -> Vec<u8> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return line;
            }
            self.fill_or_die();
        }
    }

    fn head(&mut self) -> (u16, Vec<(String, String)>) {
        loop {
            let mut hs = [httparse::EMPTY_HEADER; 32];
            let mut r = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(n) = r.parse(&self.buf).expect("HTTP response head") {
                let status = r.code.unwrap();
                let headers = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                self.buf.drain(..n);
                return (status, headers);
            }
            self.fill_or_die();
        }
    }

    fn response(&mut self) -> Resp {
        let (status, headers) = self.head();
        let mut r = Resp {
            status,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
        };
        if r.header("transfer-encoding") == Some("chunked") {
            loop {
                let size = usize::from_str_radix(std::str::from_utf8(&self.line()).unwrap(), 16)
                    .expect("chunk size");
                if size == 0 {
                    assert!(self.line().is_empty(), "no trailers expected");
                    break;
                }
                let data = self.take(size);
                assert!(self.line().is_empty(), "CRLF after chunk data");
                r.body.extend_from_slice(&data);
                r.chunks.push((data, self.stamp));
            }
        } else if let Some(n) = r.header("content-length") {
            r.body = self.take(n.parse().unwrap());
        } else {
            while self.fill().expect("read") > 0 {}
            r.body = std::mem::take(&mut self.buf);
        }
        r
    }

    fn roundtrip(&mut self, req: &[u8]) -> Resp {
        self.send(req);
        self.response()
    }

    /// Reads until the server closes; true for FIN, false for RST.
    fn closed_cleanly(&mut self) -> bool {
        loop {
            match self.fill() {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return false,
                Err(e) => panic!("waiting for close: {e}"),
            }
        }
    }
}

fn post(path: &str, body: &str, extra: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn chat(body: &str) -> Vec<u8> {
    post("/v1/chat/completions", body, "")
}

fn chat_body(stream: bool, max_tokens: u32, usage: bool) -> String {
    format!(
        r#"{{"model":"m-test","stream":{stream},"max_tokens":{max_tokens},"stream_options":{{"include_usage":{usage}}},"messages":[{{"role":"user","content":"one two three"}}]}}"#
    )
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").into_bytes()
}

fn expected_content(n: u32) -> String {
    (0..n).map(token).collect()
}

#[test]
fn stream_sends_the_exact_event_sequence() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let body = r#"{"model":"m-test","stream":true,"max_tokens":5,
        "stream_options":{"include_usage":true},
        "messages":[{"role":"system","content":"be brief"},
                    {"role":"user","content":[{"type":"text","text":"count to five please"}]}]}"#;
    let r = c.roundtrip(&chat(body));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("x-llmload-messages"), Some("2"));
    let events = r.events();
    assert_eq!(events.len(), 1 + 5 + 1 + 1 + 1, "{events:#?}");
    assert_eq!(events.last().unwrap(), "[DONE]");
    let json: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).expect("event JSON"))
        .collect();
    let id = json[0]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("chatcmpl-"));
    for e in &json {
        assert_eq!(e["id"], id.as_str());
        assert_eq!(e["object"], "chat.completion.chunk");
        assert_eq!(e["model"], "m-test");
        assert!(e["created"].as_u64().unwrap() > 1_600_000_000);
    }
    let choice = |i: usize| &json[i]["choices"][0];
    assert_eq!(
        choice(0)["delta"],
        serde_json::json!({"role": "assistant", "content": ""})
    );
    assert_eq!(choice(0)["finish_reason"], Value::Null);
    for k in 0..5 {
        assert_eq!(
            choice(1 + k)["delta"],
            serde_json::json!({"content": token(k as u32)})
        );
        assert_eq!(choice(1 + k)["finish_reason"], Value::Null);
    }
    assert_eq!(choice(6)["delta"], serde_json::json!({}));
    assert_eq!(choice(6)["finish_reason"], "length");
    assert_eq!(json[7]["choices"], serde_json::json!([]));
    assert_eq!(
        json[7]["usage"],
        serde_json::json!({"prompt_tokens": 6, "completion_tokens": 5, "total_tokens": 11})
    );
    // The connection is still good for another request.
    assert_eq!(c.roundtrip(&get("/v1/models")).status, 200);
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.streams), (1, 1, 1));
    assert_eq!((s.output_tokens, s.prompt_tokens), (5, 6));
}

#[test]
fn stream_without_usage_and_with_no_tokens() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&chat(&chat_body(true, 3, false)));
    let events = r.events();
    assert_eq!(events.len(), 1 + 3 + 1 + 1);
    assert!(!events.iter().any(|e| e.contains("usage")));

    let r = c.roundtrip(&chat(&chat_body(true, 0, true)));
    let events = r.events();
    assert_eq!(events.len(), 4, "role, finish, usage, done: {events:#?}");
    let finish: Value = serde_json::from_str(&events[1]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    let usage: Value = serde_json::from_str(&events[2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 0);
    assert_eq!(events[3], "[DONE]");
}

#[test]
fn non_stream_body_and_usage() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let body = r#"{"model":"any/model-name","max_tokens":7,"messages":[
        {"role":"system","content":"a b"},
        {"role":"user","content":"c\td\ne"},
        {"role":"assistant","content":null},
        {"role":"user","content":[{"type":"text","text":"f"},{"type":"image_url","image_url":{"url":"u"}}]}]}"#;
    let r = c.roundtrip(&chat(body));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-llmload-messages"), Some("4"));
    assert_eq!(
        r.header("content-length")
            .unwrap()
            .parse::<usize>()
            .unwrap(),
        r.body.len()
    );
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "any/model-name");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(
        v["choices"][0]["message"]["content"],
        expected_content(7).as_str()
    );
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(
        v["usage"],
        serde_json::json!({"prompt_tokens": 6, "completion_tokens": 7, "total_tokens": 13})
    );

    // No limit in the request: 128 tokens; max_completion_tokens beats max_tokens.
    let r = c.roundtrip(&chat(r#"{"messages":[]}"#));
    assert_eq!(r.json()["usage"]["completion_tokens"], 128);
    assert_eq!(r.json()["model"], "llmload-mock");
    let r = c.roundtrip(&chat(
        r#"{"messages":[],"max_tokens":9,"max_completion_tokens":2}"#,
    ));
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        expected_content(2).as_str()
    );
    f.stop();

    // --output-tokens overrides the request.
    let f = Fixture::new(ServerConfig {
        output_tokens: Some(3),
        ..cfg()
    });
    let r = f.client().roundtrip(&chat(&chat_body(false, 50, false)));
    assert_eq!(r.json()["usage"]["completion_tokens"], 3);
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    for i in 0..12u32 {
        let r = c.roundtrip(&chat(&chat_body(i % 2 == 0, i, true)));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), None);
        if i % 2 == 0 {
            assert_eq!(r.events().len(), 1 + i as usize + 3);
        } else {
            assert_eq!(r.json()["usage"]["completion_tokens"], i);
        }
    }
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.streams), (12, 12, 6));
    assert_eq!(s.output_tokens, (0..12).sum::<u64>());
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(10),
        tpot: Duration::from_millis(1),
        ..cfg()
    });
    let mut c = f.client();
    let mut all = Vec::new();
    all.extend(chat(&chat_body(true, 4, true)));
    all.extend(chat(&chat_body(false, 2, false)));
    all.extend(get("/v1/models"));
    all.extend(get("/missing"));
    all.extend(chat(&chat_body(true, 1, false)));
    c.send(&all);
    let r = c.response();
    assert_eq!(r.events().len(), 1 + 4 + 3);
    let r = c.response();
    assert_eq!(r.json()["usage"]["completion_tokens"], 2);
    let r = c.response();
    assert_eq!(r.json()["data"][0]["id"], "llmload-mock");
    assert_eq!(c.response().status, 404);
    assert_eq!(c.response().events().len(), 1 + 1 + 2);
    assert!(c.buf.is_empty());
}

#[test]
fn models_and_error_statuses() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&get("/v1/models"));
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["id"], "llmload-mock");
    assert_eq!(r.header("x-llmload-messages"), Some("0"));

    let r = c.roundtrip(&get("/v2/nothing"));
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"].is_string());

    let r = c.roundtrip(&get("/v1/chat/completions"));
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("POST"));
    let r = c.roundtrip(&post("/v1/models", "{}", ""));
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET"));

    let r = c.roundtrip(&chat("{\"messages\": [tru"));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("JSON")
    );

    let r = c.roundtrip(&chat(r#"{"model":"x"}"#));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "'messages' is required");

    let r = c.roundtrip(&chat(r#"{"messages":[],"max_tokens":99999999}"#));
    assert_eq!(r.status, 400);

    let r = c.roundtrip(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 411);

    // Every one of those left the connection usable.
    assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);

    // Not HTTP at all: 400, then close.
    let mut c = f.client();
    let r = c.roundtrip(b"HELLO WORLD\r\n\r\n");
    assert_eq!(r.status, 400);
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed_cleanly());

    // Chunked request bodies are refused with 411, then close.
    let mut c = f.client();
    let r = c.roundtrip(
        b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    );
    assert_eq!(r.status, 411);
    assert!(c.closed_cleanly());
}

#[test]
fn connection_close_and_http10() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&post(
        "/v1/chat/completions",
        &chat_body(false, 2, false),
        "Connection: close\r\n",
    ));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("connection"), Some("close"));
    assert!(c.closed_cleanly());

    let mut c = f.client();
    let r = c.roundtrip(b"GET /v1/models HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 200);
    assert!(c.closed_cleanly());

    let mut c = f.client();
    for _ in 0..2 {
        let r = c.roundtrip(b"GET /v1/models HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(r.header("connection"), Some("keep-alive"));
    }

    // A stream to an HTTP/1.0 client has no chunking and ends with the close.
    let mut c = f.client();
    let body = chat_body(true, 2, false);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let r = c.roundtrip(req.as_bytes());
    assert_eq!(r.header("transfer-encoding"), None);
    let text = String::from_utf8(r.body).unwrap();
    assert_eq!(text.matches("data: ").count(), 1 + 2 + 1 + 1);
    assert!(text.ends_with("data: [DONE]\n\n"));
}

#[test]
fn requests_split_across_writes_and_expect_continue() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let req = chat(&chat_body(false, 3, false));
    for b in &req {
        c.send(std::slice::from_ref(b));
    }
    assert_eq!(c.response().json()["usage"]["completion_tokens"], 3);

    // A body far larger than the read buffer, announced with Expect.
    let words = "lorem ipsum ".repeat(40_000);
    let body = format!(r#"{{"max_tokens":1,"messages":[{{"role":"user","content":"{words}"}}]}}"#);
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.send(head.as_bytes());
    let (status, _) = c.head();
    assert_eq!(status, 100);
    c.send(body.as_bytes());
    let r = c.response();
    assert_eq!(r.json()["usage"]["prompt_tokens"], 80_000);
}

/// One timed exchange: per content token, its lateness against the schedule
/// `sent + ttft + k*tpot` (`sent`: the client wrote its last byte), whether
/// anything came before its time counted from before the write (which no
/// load can cause), and the non-streamed response's lateness.
struct Timing {
    role: u64,
    late: Vec<i64>,
    gaps: Vec<u64>,
    body_late: i64,
    early: bool,
}

fn timed_attempt(c: &mut Client, tokens: u32) -> Timing {
    let schedule = |k: u64| 50_000_000 + 5_000_000 * k;
    let before = now_ns();
    let sent = c.send(&chat(&chat_body(true, tokens, false)));
    let r = c.response();
    let times: Vec<u64> = r.chunks.iter().map(|(_, t)| *t).collect();
    assert_eq!(times.len(), 1 + tokens as usize + 2);
    let content = &times[1..=tokens as usize];
    let mut early = (0..content.len()).any(|k| content[k] < before + schedule(k as u64));
    let late = (0..content.len())
        .map(|k| content[k] as i64 - (sent + schedule(k as u64)) as i64)
        .collect();
    let gaps = content.windows(2).map(|w| w[1] - w[0]).collect();

    let before_body = now_ns();
    let sent_body = c.send(&chat(&chat_body(false, tokens, false)));
    assert_eq!(c.response().status, 200);
    let due = schedule(u64::from(tokens) - 1);
    early |= c.stamp < before_body + due;
    Timing {
        role: times[0] - sent,
        late,
        gaps,
        body_late: c.stamp as i64 - (sent_body + due) as i64,
        early,
    }
}

#[test]
fn token_timing_is_exact() {
    // --ttft 50ms --tpot 5ms: token k leaves at arrival + 50 + 5k ms. The
    // client's clock starts when it has written the last request byte, a few
    // microseconds before the server's arrival.
    const TOKENS: u32 = 8;
    const ATTEMPTS: usize = 8;
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(50),
        tpot: Duration::from_millis(5),
        ..cfg()
    });
    let mut c = f.client();
    c.roundtrip(&chat(&chat_body(true, 1, false)));
    let mut log = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let t = timed_attempt(&mut c, TOKENS);
        let line = format!(
            "attempt {attempt}: role after {:.3} ms; token lateness (ms) {:?}; gaps (ms) {:?}; body lateness {:.3} ms",
            ms(t.role),
            t.late
                .iter()
                .map(|&l| format!("{:.3}", l as f64 / 1e6))
                .collect::<Vec<_>>(),
            t.gaps
                .iter()
                .map(|&g| format!("{:.3}", ms(g)))
                .collect::<Vec<_>>(),
            t.body_late as f64 / 1e6
        );
        eprintln!("{line}");
        assert!(!t.early, "something left before its time: {line}");
        log.push(line);
        // Role chunk at once; first token at 50 ms (+2 for the client's
        // side); each gap 5 ± 1 ms; no token or body more than 2 ms late,
        // so nothing drifts.
        let strict = t.role < 2_000_000
            && t.late[0] <= 2_000_000
            && t.gaps.iter().all(|g| (4_000_000..=6_000_000).contains(g))
            && t.late.iter().all(|&l| l <= 2_000_000)
            && t.body_late <= 2_000_000;
        if strict {
            return;
        }
        // On a busy machine a descheduled client or worker delays single
        // tokens (the next one is on time again); try again.
    }
    panic!("no attempt met the timing tolerances:\n{}", log.join("\n"));
}

#[test]
fn error_rate_is_exact() {
    let f = Fixture::new(ServerConfig {
        error_rate: 0.25,
        ..cfg()
    });
    let mut c = f.client();
    let mut errors = Vec::new();
    for i in 0..40u32 {
        let r = c.roundtrip(&chat(&chat_body(i % 2 == 0, 2, false)));
        match r.status {
            200 => {}
            503 => {
                assert_eq!(
                    r.json(),
                    serde_json::json!({"error": {"message": "injected error",
                                                 "type": "server_error", "code": 503}})
                );
                assert_eq!(r.header("x-llmload-messages"), Some("1"));
                errors.push(i);
            }
            s => panic!("status {s}"),
        }
    }
    assert_eq!(errors, (0..10).map(|k| 4 * k + 3).collect::<Vec<_>>());
    // Invalid requests take their turn too: the fourth of these is request
    // 43, whose injected 503 replaces its 400.
    let statuses: Vec<u16> = (0..4).map(|_| c.roundtrip(&chat("{oops")).status).collect();
    assert_eq!(statuses, [400, 400, 400, 503]);
    let s = f.stop();
    assert_eq!((s.requests, s.errors_injected, s.completed), (44, 11, 30));
}

#[test]
fn malformed_fault_sends_garbage_and_closes() {
    let f = Fixture::new(ServerConfig {
        malformed_rate: 0.5,
        ..cfg()
    });
    let mut c = f.client();
    assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);
    c.send(&chat(&chat_body(false, 1, false)));
    assert!(c.closed_cleanly());
    assert_eq!(c.buf, super::conn::MALFORMED);
    let mut c = f.client();
    assert_eq!(c.roundtrip(&chat(&chat_body(true, 1, false))).status, 200);
    c.send(&chat(&chat_body(true, 1, false)));
    assert!(c.closed_cleanly());
    assert!(c.buf.starts_with(b"HTXP/1.1"));
    let s = f.stop();
    assert_eq!((s.requests, s.malformed_injected, s.completed), (4, 2, 2));
}

#[test]
fn reset_fault_cuts_streams_halfway_and_replaces_bodies() {
    let f = Fixture::new(ServerConfig {
        reset_rate: 1.0,
        tpot: Duration::from_millis(1),
        ..cfg()
    });
    let mut c = f.client();
    c.send(&chat(&chat_body(true, 10, false)));
    let (status, _) = c.head();
    assert_eq!(status, 200);
    assert!(!c.closed_cleanly(), "expected RST");
    let text = String::from_utf8_lossy(&c.buf).into_owned();
    assert_eq!(text.matches("data: ").count(), 1 + 5, "{text}");
    assert!(!text.contains("[DONE]"));

    let mut c = f.client();
    c.send(&chat(&chat_body(false, 10, false)));
    assert!(!c.closed_cleanly(), "expected RST");
    assert!(c.buf.is_empty());
    let s = f.stop();
    assert_eq!((s.requests, s.resets_injected, s.completed), (2, 2, 0));
}

#[test]
fn two_workers_share_the_port() {
    let f = Fixture::new(ServerConfig {
        workers: 2,
        ..cfg()
    });
    let server = f.server.as_ref().unwrap();
    let pids = server.pids().to_vec();
    assert_eq!(pids.len(), 2);
    assert_ne!(pids[0], pids[1]);
    for _ in 0..64 {
        let mut c = f.client();
        assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);
    }
    let per = f.server.as_ref().unwrap().worker_stats();
    assert!(per.iter().all(|w| w.requests > 0), "{per:?}");
    assert_eq!(per.iter().map(|w| w.requests).sum::<u64>(), 64);
    let s = f.stop();
    assert_eq!(s.completed, 64);
    for pid in pids {
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
        assert_eq!(
            gone,
            Err(nix::errno::Errno::ESRCH),
            "worker {pid} still exists"
        );
    }
}

#[test]
fn one_worker_holds_two_thousand_streams() {
    use mio::net::TcpStream as MioStream;
    use mio::{Events, Interest, Poll, Token};
    const N: usize = 2000;
    const TOKENS: u32 = 16;

    if let Ok((soft, hard)) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
    {
        if soft < hard {
            let _ = nix::sys::resource::setrlimit(
                nix::sys::resource::Resource::RLIMIT_NOFILE,
                hard,
                hard,
            );
        }
    }
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(20),
        tpot: Duration::from_millis(2),
        ..cfg()
    });
    let req = chat(&chat_body(true, TOKENS, true));
    let mut poll = Poll::new().unwrap();
    let mut conns: Vec<(MioStream, Vec<u8>, bool)> = Vec::with_capacity(N);
    for i in 0..N {
        let mut s = MioStream::connect(f.addr()).unwrap();
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)
            .unwrap();
        conns.push((s, Vec::new(), false));
    }
    let start = now_ns();
    let mut done = 0;
    let mut events = Events::with_capacity(4096);
    let mut tmp = vec![0u8; 65536];
    while done < N {
        assert!(
            now_ns() - start < 20_000_000_000,
            "only {done} of {N} streams finished"
        );
        poll.poll(&mut events, Some(Duration::from_millis(100)))
            .unwrap();
        for ev in events.iter() {
            let (s, buf, sent) = &mut conns[ev.token().0];
            if ev.is_writable() && !*sent {
                match s.write(&req) {
                    Ok(n) => {
                        assert_eq!(n, req.len());
                        *sent = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                    Err(e) => panic!("write: {e}"),
                }
            }
            if ev.is_readable() {
                loop {
                    match s.read(&mut tmp) {
                        Ok(0) => panic!("server closed a stream"),
                        Ok(n) => {
                            buf.extend_from_slice(&tmp[..n]);
                            if buf.ends_with(b"data: [DONE]\n\n\r\n0\r\n\r\n") {
                                done += 1;
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) => panic!("read: {e}"),
                    }
                }
            }
        }
    }
    let elapsed = now_ns() - start;
    eprintln!("{N} streams of {TOKENS} tokens in {:.1} ms", ms(elapsed));
    for (_, buf, _) in &conns {
        let text = std::str::from_utf8(buf).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert_eq!(text.matches("data: ").count(), 1 + TOKENS as usize + 3);
    }
    let s = f.stop();
    assert_eq!((s.completed, s.streams), (N as u64, N as u64));
    assert_eq!(s.output_tokens, N as u64 * u64::from(TOKENS));
}

#[test]
fn bad_config_is_an_error_not_a_panic() {
    let bad = [
        ServerConfig {
            workers: 0,
            ..cfg()
        },
        ServerConfig {
            error_rate: 1.5,
            ..cfg()
        },
        ServerConfig {
            reset_rate: f64::NAN,
            ..cfg()
        },
        ServerConfig {
            malformed_rate: -0.1,
            ..cfg()
        },
        ServerConfig {
            pin: Some(100_000),
            ..cfg()
        },
        ServerConfig {
            output_tokens: Some(u32::MAX),
            ..cfg()
        },
    ];
    for c in bad {
        let e = spawn(&c).unwrap_err();
        assert!(e.starts_with("--"), "{e}");
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap();
    let e = spawn(&ServerConfig {
        listen: addr,
        ..cfg()
    })
    .unwrap_err();
    assert_eq!(
        e,
        format!("cannot listen on {addr}: address already in use")
    );
}

#[test]
fn dropping_the_handle_stops_the_workers() {
    let f = Fixture::new(ServerConfig {
        workers: 2,
        ..cfg()
    });
    let pids = f.server.as_ref().unwrap().pids().to_vec();
    drop(f);
    for pid in pids {
        let r = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None);
        assert_eq!(r, Err(nix::errno::Errno::ESRCH));
    }
}

#[test]
fn sigint_does_not_stop_a_worker() {
    let f = Fixture::new(cfg());
    let pid = f.server.as_ref().unwrap().pids()[0];
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(f.client().roundtrip(&get("/v1/models")).status, 200);
}

#[test]
fn large_responses_and_pipelined_floods_survive_backpressure() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    // ~25 MB of events with no delays: the socket fills long before the
    // stream ends, so it must pause and resume on the writable edge.
    const BIG: u32 = 120_000;
    let worker = f.server.as_ref().unwrap().pids()[0];
    let rss = || {
        let status = std::fs::read_to_string(format!("/proc/{worker}/status")).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .unwrap()
            .to_string();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 1024
    };
    let before = rss();
    c.send(&chat(&chat_body(true, BIG, true)));
    std::thread::sleep(Duration::from_millis(100));
    // While the client reads nothing, the worker holds about one socket's
    // worth of the stream, not all of it.
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 4 << 20,
        "worker grew by {grown} bytes for a stalled stream"
    );
    let r = c.response();
    let events = r.events();
    assert_eq!(events.len(), BIG as usize + 4);
    assert!(events[BIG as usize + 2].contains("\"completion_tokens\":120000"));

    let r = c.roundtrip(&chat(&chat_body(false, BIG, false)));
    assert_eq!(
        r.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .len(),
        expected_content(BIG).len()
    );

    // 600 pipelined requests in one write, well past the input limit.
    let one = chat(&chat_body(false, 1, false));
    let flood: Vec<u8> = one.iter().copied().cycle().take(one.len() * 600).collect();
    let writer = {
        let mut s = c.s.try_clone().unwrap();
        std::thread::spawn(move || s.write_all(&flood).unwrap())
    };
    for _ in 0..600 {
        assert_eq!(c.response().json()["usage"]["completion_tokens"], 1);
    }
    writer.join().unwrap();
    let s = f.stop();
    assert_eq!(s.completed, 602);
}

#[test]
fn half_closed_clients_get_their_answer_then_a_close() {
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(5),
        ..cfg()
    });
    for stream in [false, true] {
        let mut c = f.client();
        // Request and FIN arrive together.
        c.send(&chat(&chat_body(stream, 3, false)));
        c.s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(c.response().status, 200);
        assert!(
            c.closed_cleanly(),
            "server kept a half-closed connection open"
        );
    }
}
