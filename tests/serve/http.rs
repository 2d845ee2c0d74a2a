//! HTTP/1.1 as the server speaks it: keep-alive, pipelining, routes and
//! error statuses, `Connection: close` and HTTP/1.0, requests split across
//! writes and `Expect: 100-continue`, backpressure, half-closed clients.

use std::io::Write;
use std::time::Duration;

use llmload::server::ServerConfig;

use super::{Fixture, cfg, chat, chat_body, expected_content, get, post};

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
