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

use super::formats::Format;
use super::formats::text::token;
use super::{ApiKey, ServerConfig, ServerHandle, ServerStats, spawn};
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
    /// When the head was complete at the client.
    head_at: u64,
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

    /// The SSE events as (event name, data), one per chunk, in any format.
    fn named_events(&self) -> Vec<(Option<String>, String)> {
        self.chunks
            .iter()
            .map(|(c, _)| {
                let text = std::str::from_utf8(c).unwrap();
                let body = text.strip_suffix("\n\n").expect("event end");
                assert!(!body.contains("\n\n"), "one event per chunk: {text:?}");
                let (name, data) = match body.strip_prefix("event: ") {
                    Some(rest) => {
                        let (name, data) = rest.split_once('\n').expect("data line");
                        (Some(name.to_string()), data)
                    }
                    None => (None, body),
                };
                let data = data.strip_prefix("data: ").expect("data line");
                (name, data.to_string())
            })
            .collect()
    }

    /// Every event's data as JSON, with `[DONE]` as the string "[DONE]".
    fn json_events(&self) -> Vec<(Option<String>, Value)> {
        self.named_events()
            .into_iter()
            .map(|(n, d)| {
                let v = if d == "[DONE]" {
                    Value::String(d)
                } else {
                    serde_json::from_str(&d).unwrap_or_else(|e| panic!("{e}: {d}"))
                };
                (n, v)
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
            head_at: self.stamp,
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

/// Tokens `a..b` as text.
fn text_of(a: u32, b: u32) -> String {
    (a..b).map(token).collect()
}

/// A request body in `format` with a three-word prompt, model `m-test`
/// where the format names one.
fn gen_body(format: Format, stream: bool, max_tokens: u32, usage: bool) -> String {
    match format {
        Format::Chat => chat_body(stream, max_tokens, usage),
        Format::Completions => format!(
            r#"{{"model":"m-test","prompt":"one two three","max_tokens":{max_tokens},"stream":{stream},"stream_options":{{"include_usage":{usage}}}}}"#
        ),
        Format::Generate => format!(
            r#"{{"text":"one two three","sampling_params":{{"max_new_tokens":{max_tokens},"temperature":0}},"stream":{stream}}}"#
        ),
        Format::Messages => format!(
            r#"{{"model":"m-test","max_tokens":{max_tokens},"stream":{stream},"messages":[{{"role":"user","content":"one two three"}}]}}"#
        ),
    }
}

fn gen_req(format: Format, stream: bool, max_tokens: u32, usage: bool) -> Vec<u8> {
    post(
        format.path(),
        &gen_body(format, stream, max_tokens, usage),
        "",
    )
}

/// Events a stream without usage or reasoning sends before its first token
/// and after its last.
fn stream_frame(format: Format) -> (usize, usize) {
    match format {
        // role | finish, [DONE]
        Format::Chat => (1, 2),
        // - | finish, [DONE]
        Format::Completions => (0, 2),
        // - | [DONE] (the last token's event says it finished)
        Format::Generate => (0, 1),
        // message_start, content_block_start, ping |
        // content_block_stop, message_delta, message_stop
        Format::Messages => (3, 3),
    }
}

/// The text of output token event `e` (data JSON) in `format`.
fn event_text(format: Format, e: &Value) -> &str {
    let v = match format {
        Format::Chat => &e["choices"][0]["delta"]["content"],
        Format::Completions => &e["choices"][0]["text"],
        Format::Generate => &e["text"],
        Format::Messages => &e["delta"]["text"],
    };
    v.as_str().unwrap_or_else(|| panic!("no text in {e}"))
}

/// All the text of a non-streamed body in `format`.
fn body_text(format: Format, v: &Value) -> &str {
    let t = match format {
        Format::Chat => &v["choices"][0]["message"]["content"],
        Format::Completions => &v["choices"][0]["text"],
        Format::Generate => &v["text"],
        Format::Messages => &v["content"][0]["text"],
    };
    t.as_str().unwrap_or_else(|| panic!("no text in {v}"))
}

/// The output tokens a non-streamed body reports.
fn body_usage(format: Format, v: &Value) -> u64 {
    let u = match format {
        Format::Chat | Format::Completions => &v["usage"]["completion_tokens"],
        Format::Generate => &v["meta_info"]["completion_tokens"],
        Format::Messages => &v["usage"]["output_tokens"],
    };
    u.as_u64().unwrap_or_else(|| panic!("no usage in {v}"))
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

/// One timed exchange: when the response head (and any arrival events)
/// came, per output token its lateness against the schedule
/// `sent + ttft + k*tpot` (`sent`: the client wrote its last byte), whether
/// anything came before its time counted from before the write (which no
/// load can cause), and the non-streamed response's lateness.
struct Timing {
    head: u64,
    late: Vec<i64>,
    gaps: Vec<u64>,
    body_late: i64,
    early: bool,
}

fn timed_attempt(c: &mut Client, format: Format, tokens: u32) -> Timing {
    let schedule = |k: u64| 50_000_000 + 5_000_000 * k;
    let (lead, trail) = stream_frame(format);
    let before = now_ns();
    let sent = c.send(&gen_req(format, true, tokens, false));
    let r = c.response();
    let times: Vec<u64> = r.chunks.iter().map(|(_, t)| *t).collect();
    assert_eq!(times.len(), lead + tokens as usize + trail, "{format:?}");
    let content = &times[lead..lead + tokens as usize];
    let mut early = (0..content.len()).any(|k| content[k] < before + schedule(k as u64));
    let late = (0..content.len())
        .map(|k| content[k] as i64 - (sent + schedule(k as u64)) as i64)
        .collect();
    let gaps = content.windows(2).map(|w| w[1] - w[0]).collect();
    let head = times[..lead].last().copied().unwrap_or(r.head_at) - sent;

    let before_body = now_ns();
    let sent_body = c.send(&gen_req(format, false, tokens, false));
    assert_eq!(c.response().status, 200);
    let due = schedule(u64::from(tokens) - 1);
    early |= c.stamp < before_body + due;
    Timing {
        head,
        late,
        gaps,
        body_late: c.stamp as i64 - (sent_body + due) as i64,
        early,
    }
}

#[test]
fn token_timing_is_exact_in_every_format() {
    // --ttft 50ms --tpot 5ms: token k leaves at arrival + 50 + 5k ms in
    // every format. The client's clock starts when it has written the last
    // request byte, a few microseconds before the server's arrival.
    const TOKENS: u32 = 8;
    const ATTEMPTS: usize = 8;
    let f = Fixture::new(ServerConfig {
        ttft: Duration::from_millis(50),
        tpot: Duration::from_millis(5),
        ..cfg()
    });
    let mut c = f.client();
    c.roundtrip(&chat(&chat_body(true, 1, false)));
    'formats: for format in Format::ALL {
        let mut log = Vec::new();
        for attempt in 1..=ATTEMPTS {
            let t = timed_attempt(&mut c, format, TOKENS);
            let line = format!(
                "{format:?} attempt {attempt}: head after {:.3} ms; token lateness (ms) {:?}; \
                 gaps (ms) {:?}; body lateness {:.3} ms",
                ms(t.head),
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
            // Head and arrival events at once; first token at 50 ms (+2 for
            // the client's side); each gap 5 ± 1 ms; no token or body more
            // than 2 ms late, so nothing drifts.
            let strict = t.head < 2_000_000
                && t.late[0] <= 2_000_000
                && t.gaps.iter().all(|g| (4_000_000..=6_000_000).contains(g))
                && t.late.iter().all(|&l| l <= 2_000_000)
                && t.body_late <= 2_000_000;
            if strict {
                continue 'formats;
            }
            // On a busy machine a descheduled client or worker delays single
            // tokens (the next one is on time again); try again.
        }
        panic!("no attempt met the timing tolerances:\n{}", log.join("\n"));
    }
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
        ServerConfig {
            inband_error_rate: 1.01,
            ..cfg()
        },
        ServerConfig {
            output_tokens: Some(4),
            reasoning_tokens: 5,
            ..cfg()
        },
        ServerConfig {
            reasoning_tokens: u32::MAX,
            ..cfg()
        },
        ServerConfig {
            served_models: vec![String::new()],
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

#[test]
fn completions_stream_and_body() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&gen_req(Format::Completions, true, 5, true));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-llmload-messages"), Some("1"));
    let events = r.json_events();
    assert_eq!(events.len(), 5 + 1 + 1 + 1, "{events:#?}");
    assert!(events.iter().all(|(name, _)| name.is_none()));
    let id = events[0].1["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("cmpl-"), "{id}");
    for (k, (_, e)) in events[..5].iter().enumerate() {
        assert_eq!(e["id"], id.as_str());
        assert_eq!(e["object"], "text_completion");
        assert_eq!(e["model"], "m-test");
        assert!(e["created"].as_u64().unwrap() > 1_600_000_000);
        assert_eq!(
            e["choices"],
            serde_json::json!([{"index": 0, "text": token(k as u32),
                                "logprobs": null, "finish_reason": null}])
        );
    }
    assert_eq!(events[5].1["choices"][0]["text"], "");
    assert_eq!(events[5].1["choices"][0]["finish_reason"], "length");
    assert_eq!(events[6].1["choices"], serde_json::json!([]));
    assert_eq!(
        events[6].1["usage"],
        serde_json::json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8})
    );
    assert_eq!(events[7].1, "[DONE]");

    // Without include_usage there is no usage chunk.
    let r = c.roundtrip(&gen_req(Format::Completions, true, 2, false));
    assert_eq!(r.events().len(), 2 + 1 + 1);
    assert!(!r.events().iter().any(|e| e.contains("usage")));

    let r = c.roundtrip(&gen_req(Format::Completions, false, 7, false));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["model"], "m-test");
    assert!(v["id"].as_str().unwrap().starts_with("cmpl-"));
    assert_eq!(
        v["choices"],
        serde_json::json!([{"index": 0, "text": expected_content(7),
                            "logprobs": null, "finish_reason": "length"}])
    );
    assert_eq!(
        v["usage"],
        serde_json::json!({"prompt_tokens": 3, "completion_tokens": 7, "total_tokens": 10})
    );

    // Prompts as a batch of strings (the first counts) and as token ids;
    // no max_tokens means 128.
    let r = c.roundtrip(&post(
        "/v1/completions",
        r#"{"prompt":["a b c d e","f"],"max_tokens":1}"#,
        "",
    ));
    assert_eq!(r.json()["usage"]["prompt_tokens"], 5);
    assert_eq!(r.json()["model"], "llmload-mock");
    let r = c.roundtrip(&post(
        "/v1/completions",
        r#"{"prompt":[101,102,103,104]}"#,
        "",
    ));
    assert_eq!(r.json()["usage"]["prompt_tokens"], 4);
    assert_eq!(r.json()["usage"]["completion_tokens"], 128);

    let r = c.roundtrip(&post("/v1/completions", r#"{"model":"m"}"#, ""));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"error": {"message": "'prompt' is required",
                                     "type": "invalid_request_error", "code": 400}})
    );
    let s = f.stop();
    assert_eq!((s.requests, s.requests_completions, s.completed), (6, 6, 5));
    assert_eq!(s.streams, 2);
    assert_eq!(s.output_tokens, 5 + 2 + 7 + 1 + 128);
    assert_eq!(s.prompt_tokens, 3 + 3 + 3 + 5 + 4);
}

#[test]
fn sglang_stream_is_cumulative_and_body_is_one_object() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let r = c.roundtrip(&gen_req(Format::Generate, true, 6, false));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-llmload-messages"), Some("1"));
    let events = r.json_events();
    assert_eq!(events.len(), 6 + 1, "{events:#?}");
    let id = events[0].1["meta_info"]["id"].as_str().unwrap().to_string();
    for (k, (name, e)) in events[..6].iter().enumerate() {
        assert!(name.is_none());
        let k = k as u32;
        let finish = if k == 5 {
            serde_json::json!({"type": "length", "length": 6})
        } else {
            Value::Null
        };
        assert_eq!(
            *e,
            serde_json::json!({"text": text_of(0, k + 1),
                               "meta_info": {"id": id, "prompt_tokens": 3,
                                             "completion_tokens": k + 1,
                                             "finish_reason": finish, "cached_tokens": 0},
                               "index": 0})
        );
    }
    assert_eq!(events[6].1, "[DONE]");

    let r = c.roundtrip(&gen_req(Format::Generate, false, 9, false));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["text"], expected_content(9).as_str());
    assert_eq!(v["meta_info"]["prompt_tokens"], 3);
    assert_eq!(v["meta_info"]["completion_tokens"], 9);
    assert_eq!(
        v["meta_info"]["finish_reason"],
        serde_json::json!({"type": "length", "length": 9})
    );

    // Token ids as the prompt; no sampling_params means 128 tokens.
    let r = c.roundtrip(&post("/generate", r#"{"input_ids":[1,2,3,4,5]}"#, ""));
    assert_eq!(r.json()["meta_info"]["prompt_tokens"], 5);
    assert_eq!(r.json()["meta_info"]["completion_tokens"], 128);

    // No output tokens: one finishing event with empty text.
    let r = c.roundtrip(&gen_req(Format::Generate, true, 0, false));
    let events = r.json_events();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].1["text"], "");
    assert_eq!(events[0].1["meta_info"]["finish_reason"]["length"], 0);

    let r = c.roundtrip(&post("/generate", r#"{"sampling_params":{}}"#, ""));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"error": {"message": "'text' or 'input_ids' is required"}})
    );
    let s = f.stop();
    assert_eq!((s.requests, s.requests_generate, s.completed), (5, 5, 4));
    assert_eq!(s.output_tokens, 6 + 9 + 128);
}

#[test]
fn anthropic_stream_event_sequence_and_body() {
    let f = Fixture::new(cfg());
    let mut c = f.client();
    let body = r#"{"model":"claude-test","max_tokens":4,"stream":true,
        "system":[{"type":"text","text":"be very brief"}],
        "messages":[{"role":"user","content":"count to four"},
                    {"role":"assistant","content":[{"type":"text","text":"one"}]},
                    {"role":"user","content":"go on"}]}"#;
    let r = c.roundtrip(&post(
        "/v1/messages",
        body,
        "anthropic-version: 2023-06-01\r\n",
    ));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("x-llmload-messages"), Some("3"));
    let events = r.json_events();
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_deref().expect("every event is named"))
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    for (name, e) in &events {
        assert_eq!(e["type"], name.as_deref().unwrap());
    }
    let start = &events[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(start["model"], "claude-test");
    assert_eq!(start["role"], "assistant");
    // 3 system words + 3 + 1 + 2.
    assert_eq!(
        start["usage"],
        serde_json::json!({"input_tokens": 9, "output_tokens": 1})
    );
    assert_eq!(
        events[1].1,
        serde_json::json!({"type": "content_block_start", "index": 0,
                           "content_block": {"type": "text", "text": ""}})
    );
    for k in 0..4 {
        assert_eq!(
            events[3 + k].1,
            serde_json::json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": token(k as u32)}})
        );
    }
    assert_eq!(
        events[7].1,
        serde_json::json!({"type": "content_block_stop", "index": 0})
    );
    assert_eq!(
        events[8].1,
        serde_json::json!({"type": "message_delta",
                           "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                           "usage": {"output_tokens": 4}})
    );

    let r = c.roundtrip(&gen_req(Format::Messages, false, 6, false));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert!(v["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "m-test");
    assert_eq!(
        v["content"],
        serde_json::json!([{"type": "text", "text": expected_content(6)}])
    );
    assert_eq!(v["stop_reason"], "max_tokens");
    assert_eq!(v["stop_sequence"], Value::Null);
    assert_eq!(
        v["usage"],
        serde_json::json!({"input_tokens": 3, "output_tokens": 6})
    );

    let r = c.roundtrip(&post("/v1/messages", r#"{"model":"x","max_tokens":1}"#, ""));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"type": "error", "error": {"type": "invalid_request_error",
                                                      "message": "'messages' is required"}})
    );
    let r = c.roundtrip(&get("/v1/messages"));
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["type"], "error");
    let s = f.stop();
    assert_eq!((s.requests, s.requests_messages, s.completed), (3, 3, 2));
    assert_eq!((s.output_tokens, s.prompt_tokens), (10, 12));
}

#[test]
fn inband_errors_are_exact_in_every_format() {
    let f = Fixture::new(ServerConfig {
        inband_error_rate: 0.25,
        tpot: Duration::from_micros(200),
        ..cfg()
    });
    let mut c = f.client();
    for format in Format::ALL {
        let mut hits = Vec::new();
        for i in 0..40u32 {
            // Request i takes the fault when i % 4 == 3; this alternates
            // those between streams and bodies.
            let stream = (i / 4) % 2 == 0;
            let r = c.roundtrip(&gen_req(format, stream, 4, false));
            assert_eq!(r.status, 200, "{format:?} {i}");
            let failed = if stream {
                let events = r.json_events();
                let (lead, trail) = stream_frame(format);
                let error = events
                    .iter()
                    .position(|(n, e)| e.get("error").is_some() || n.as_deref() == Some("error"));
                if let Some(at) = error {
                    // Half the tokens, the error, and a proper end: [DONE],
                    // or nothing more for Anthropic.
                    assert_eq!(at, lead + 2, "{format:?} {events:#?}");
                    for (_, e) in &events[lead..at] {
                        assert!(!event_text(format, e).is_empty());
                    }
                    let e = &events[at].1;
                    assert_eq!(e["error"]["message"], "injected in-band error");
                    match format {
                        Format::Messages => {
                            assert_eq!(events.len(), at + 1);
                            assert_eq!(e["type"], "error");
                            assert_eq!(e["error"]["type"], "overloaded_error");
                        }
                        _ => {
                            assert_eq!(events.len(), at + 2);
                            assert_eq!(events[at + 1].1, "[DONE]");
                        }
                    }
                    true
                } else {
                    assert_eq!(events.len(), lead + 4 + trail, "{format:?} {events:#?}");
                    false
                }
            } else {
                let v = r.json();
                match v.get("error") {
                    Some(e) => {
                        assert_eq!(e["message"], "injected in-band error");
                        true
                    }
                    None => {
                        assert_eq!(body_usage(format, &v), 4);
                        false
                    }
                }
            };
            if failed {
                hits.push(i);
            }
        }
        assert_eq!(
            hits,
            (0..10).map(|k| 4 * k + 3).collect::<Vec<_>>(),
            "{format:?}"
        );
    }
    let non_stream =
        |format| serde_json::from_slice::<Value>(super::formats::inband_body(format)).unwrap();
    assert_eq!(
        non_stream(Format::Chat),
        serde_json::json!({"error": {"message": "injected in-band error",
                                     "type": "server_error", "code": 500}})
    );
    assert_eq!(
        non_stream(Format::Generate),
        serde_json::json!({"error": {"message": "injected in-band error"}})
    );
    let s = f.stop();
    assert_eq!(s.requests, 160);
    assert_eq!(s.inband_errors_injected, 40);
    assert_eq!(s.completed, 120);
    assert_eq!(s.output_tokens, 120 * 4);
}

#[test]
fn reasoning_tokens_in_chat_and_anthropic() {
    let f = Fixture::new(ServerConfig {
        reasoning_tokens: 3,
        ..cfg()
    });
    let mut c = f.client();

    // Chat: reasoning_content deltas first, then content; usage counts all.
    let r = c.roundtrip(&chat(&chat_body(true, 5, true)));
    let events = r.json_events();
    assert_eq!(events.len(), 1 + 5 + 1 + 1 + 1);
    for k in 0..5u32 {
        let delta = &events[1 + k as usize].1["choices"][0]["delta"];
        if k < 3 {
            assert_eq!(*delta, serde_json::json!({"reasoning_content": token(k)}));
        } else {
            assert_eq!(*delta, serde_json::json!({"content": token(k)}));
        }
    }
    let usage = &events[7].1["usage"];
    assert_eq!(usage["completion_tokens"], 5);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 3);

    let v = c.roundtrip(&chat(&chat_body(false, 5, false))).json();
    let message = &v["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], text_of(0, 3).as_str());
    assert_eq!(message["content"], text_of(3, 5).as_str());
    assert_eq!(v["usage"]["completion_tokens"], 5);

    // Anthropic: a thinking block at index 0, the text block at index 1.
    let r = c.roundtrip(&gen_req(Format::Messages, true, 5, false));
    let events = r.json_events();
    let shape: Vec<String> = events
        .iter()
        .map(|(n, e)| {
            let n = n.as_deref().unwrap();
            match n {
                "content_block_start" => {
                    format!("{n} {} {}", e["index"], e["content_block"]["type"])
                }
                "content_block_delta" => format!("{n} {} {}", e["index"], e["delta"]["type"]),
                "content_block_stop" => format!("{n} {}", e["index"]),
                _ => n.to_string(),
            }
        })
        .collect();
    assert_eq!(
        shape,
        [
            "message_start",
            "content_block_start 0 \"thinking\"",
            "ping",
            "content_block_delta 0 \"thinking_delta\"",
            "content_block_delta 0 \"thinking_delta\"",
            "content_block_delta 0 \"thinking_delta\"",
            "content_block_stop 0",
            "content_block_start 1 \"text\"",
            "content_block_delta 1 \"text_delta\"",
            "content_block_delta 1 \"text_delta\"",
            "content_block_stop 1",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[3].1["delta"]["thinking"], token(0));
    assert_eq!(events[8].1["delta"]["text"], token(3));
    assert_eq!(events[11].1["usage"]["output_tokens"], 5);

    let v = c
        .roundtrip(&gen_req(Format::Messages, false, 5, false))
        .json();
    assert_eq!(v["content"][0]["type"], "thinking");
    assert_eq!(v["content"][0]["thinking"], text_of(0, 3).as_str());
    assert_eq!(
        v["content"][1],
        serde_json::json!({"type": "text", "text": text_of(3, 5)})
    );
    assert_eq!(v["usage"]["output_tokens"], 5);

    // Fewer tokens than the reasoning budget: all of them are reasoning.
    let v = c.roundtrip(&chat(&chat_body(false, 2, false))).json();
    assert_eq!(v["choices"][0]["message"]["content"], "");
    assert_eq!(
        v["choices"][0]["message"]["reasoning_content"],
        text_of(0, 2).as_str()
    );

    // Completions and SGLang have no reasoning: every token is text.
    for format in [Format::Completions, Format::Generate] {
        let v = c.roundtrip(&gen_req(format, false, 5, false)).json();
        assert_eq!(body_text(format, &v), expected_content(5), "{format:?}");
        let r = c.roundtrip(&gen_req(format, true, 5, false));
        let events = r.json_events();
        let last = &events[4].1;
        assert_eq!(event_text(format, &events[0].1), token(0));
        assert!(event_text(format, last).ends_with(token(4)));
    }
    let s = f.stop();
    assert_eq!(s.output_tokens, 5 * 4 + 2 + 5 * 4);
}

#[test]
fn ignore_stream_answers_with_one_body() {
    let f = Fixture::new(ServerConfig {
        ignore_stream: true,
        ..cfg()
    });
    let mut c = f.client();
    for format in Format::ALL {
        let r = c.roundtrip(&gen_req(format, true, 3, true));
        assert_eq!(r.status, 200);
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{format:?}"
        );
        assert!(r.chunks.is_empty());
        let v = r.json();
        assert_eq!(body_text(format, &v), expected_content(3), "{format:?}");
        assert_eq!(body_usage(format, &v), 3);
    }
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.streams), (4, 4, 4));
}

#[test]
fn served_models_are_listed_and_others_refused() {
    let f = Fixture::new(ServerConfig {
        served_models: vec!["alpha".to_string(), "m-test".to_string()],
        ..cfg()
    });
    let mut c = f.client();
    let v = c.roundtrip(&get("/v1/models")).json();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha", "m-test"]);

    // A served model is answered in every format.
    for format in Format::ALL {
        let r = c.roundtrip(&gen_req(format, false, 2, false));
        assert_eq!(r.status, 200, "{format:?}");
    }
    // A request naming no model gets the first served one.
    let r = c.roundtrip(&chat(r#"{"messages":[],"max_tokens":1}"#));
    assert_eq!(r.json()["model"], "alpha");

    let r = c.roundtrip(&chat(r#"{"model":"gpt-x","messages":[]}"#));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        serde_json::json!({"error": {"message": "The model `gpt-x` does not exist.",
                                     "type": "NotFoundError", "code": 404}})
    );
    let r = c.roundtrip(&post(
        "/v1/completions",
        r#"{"model":"gpt-x","prompt":"a"}"#,
        "",
    ));
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["type"], "NotFoundError");
    let r = c.roundtrip(&post(
        "/v1/messages",
        r#"{"model":"claude-x","max_tokens":1,"messages":[]}"#,
        "",
    ));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json(),
        serde_json::json!({"type": "error", "error": {"type": "not_found_error",
                                     "message": "The model `claude-x` does not exist."}})
    );
    let r = c.roundtrip(&post("/generate", r#"{"model":"nope","text":"a"}"#, ""));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["message"],
        "The model `nope` does not exist."
    );
    // The connection survives every refusal.
    assert_eq!(
        c.roundtrip(&gen_req(Format::Chat, true, 1, false)).status,
        200
    );
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.unknown_model), (10, 6, 4));
}

#[test]
fn api_key_is_required_in_either_header() {
    const KEY: &str = "sk-llmload-test-key";
    let f = Fixture::new(ServerConfig {
        api_key: Some(ApiKey::new(KEY.to_string()).unwrap()),
        ..cfg()
    });
    let mut c = f.client();
    let bearer = format!("Authorization: Bearer {KEY}\r\n");
    let x_api_key = format!("x-api-key: {KEY}\r\n");
    for format in Format::ALL {
        let body = gen_body(format, false, 2, false);
        for extra in [
            "",
            "Authorization: Bearer wrong\r\n",
            "x-api-key: sk-llmload-test-ke\r\n",
        ] {
            let r = c.roundtrip(&post(format.path(), &body, extra));
            assert_eq!(r.status, 401, "{format:?} {extra:?}");
            let text = String::from_utf8(r.body.clone()).unwrap();
            assert!(!text.contains(KEY), "the key leaked: {text}");
            let v = r.json();
            match format {
                Format::Messages => {
                    assert_eq!(v["type"], "error");
                    assert_eq!(v["error"]["type"], "authentication_error");
                }
                Format::Generate => assert!(v["error"]["message"].is_string()),
                _ => {
                    assert_eq!(v["error"]["type"], "authentication_error");
                    assert_eq!(v["error"]["code"], 401);
                }
            }
        }
        for extra in [&bearer, &x_api_key] {
            let r = c.roundtrip(&post(format.path(), &body, extra));
            assert_eq!(r.status, 200, "{format:?} {extra:?}");
            assert_eq!(body_usage(format, &r.json()), 2);
        }
    }
    assert_eq!(c.roundtrip(&get("/v1/models")).status, 401);
    let r = c.roundtrip(format!("GET /v1/models HTTP/1.1\r\nHost: t\r\n{bearer}\r\n").as_bytes());
    assert_eq!(r.status, 200);
    let s = f.stop();
    assert_eq!((s.requests, s.completed, s.unauthorized), (20, 8, 13));
}

#[test]
fn faults_apply_to_every_format() {
    // Error statuses come in the format's error shape; every format takes
    // its turn in the one schedule.
    let f = Fixture::new(ServerConfig {
        error_rate: 0.5,
        ..cfg()
    });
    let mut c = f.client();
    for format in Format::ALL {
        assert_eq!(c.roundtrip(&gen_req(format, true, 2, false)).status, 200);
        let r = c.roundtrip(&gen_req(format, true, 2, false));
        assert_eq!(r.status, 503, "{format:?}");
        let v = r.json();
        assert_eq!(v["error"]["message"], "injected error");
        if format == Format::Messages {
            assert_eq!(v["type"], "error");
        }
    }
    let s = f.stop();
    assert_eq!((s.requests, s.errors_injected, s.completed), (8, 4, 4));
    assert_eq!(
        (
            s.requests_chat,
            s.requests_completions,
            s.requests_generate,
            s.requests_messages
        ),
        (2, 2, 2, 2)
    );

    // Resets cut every format's stream halfway.
    let f = Fixture::new(ServerConfig {
        reset_rate: 1.0,
        tpot: Duration::from_millis(1),
        ..cfg()
    });
    for format in Format::ALL {
        let mut c = f.client();
        c.send(&gen_req(format, true, 10, false));
        let (status, _) = c.head();
        assert_eq!(status, 200);
        assert!(!c.closed_cleanly(), "expected RST");
        let text = String::from_utf8_lossy(&c.buf).into_owned();
        let (lead, _) = stream_frame(format);
        assert_eq!(
            text.matches("data: ").count(),
            lead + 5,
            "{format:?}: {text}"
        );
    }
    let s = f.stop();
    assert_eq!(s.resets_injected, 4);
}
