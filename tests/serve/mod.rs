//! `llmload serve`'s built-in endpoint end to end, through the library's
//! public API: real worker processes on 127.0.0.1 port 0, driven by a small
//! blocking HTTP client (`client`) that timestamps every chunk it receives
//! (CLOCK_MONOTONIC, the clock the server paces with). The tests that fork
//! servers run one at a time, so the timing test is not measuring its
//! neighbours' load; every read has a timeout, so a bug fails a test
//! instead of hanging it.

mod access;
mod client;
mod echo;
mod faults;
mod formats;
mod http;
mod limits;
mod process;
mod timing;
mod tls;

use std::net::SocketAddr;

use serde_json::Value;

use llmload::server::formats::Format;
use llmload::server::formats::text::token;
use llmload::server::{ServerConfig, ServerHandle, ServerStats, spawn};

use client::Client;

/// A server for one test, which runs alone (`util::serial`).
struct Fixture {
    server: Option<ServerHandle>,
}

impl Fixture {
    fn new(cfg: ServerConfig) -> Self {
        crate::util::serial();
        let server = spawn(&cfg).expect("spawn");
        Fixture {
            server: Some(server),
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
