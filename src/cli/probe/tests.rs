//! Every diagnosis the probe can make, as a table: made-up exchanges
//! (responses and failures), recorded by the same functions that record
//! real ones, and the exact findings and exit status they must produce.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use super::diagnose::{Asked, ModelSource, diagnose};
use super::exchange::{Check, Failure, Kind, connect_check, models_check, request_check};
use super::targets;
use crate::http::blocking::{CertInfo, ConnectError, FetchError, Response, Setup, TlsInfo};
use crate::protocol;

const URL: &str = "http://127.0.0.1:8000";
const CHAT: &str = "/v1/chat/completions";
const TIMEOUT: Duration = Duration::from_secs(10);

fn addr() -> SocketAddr {
    "127.0.0.1:8000".parse().unwrap()
}

/// What one exchange got.
type Got = Result<Response, Failure>;

fn fail(e: FetchError) -> Got {
    Err(Failure::of(&e, addr(), TIMEOUT))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A plain TCP connection made in `took`.
fn tcp(took: Duration) -> Setup {
    Setup {
        tcp_connect: took,
        ..Setup::default()
    }
}

/// A full TLS 1.3 handshake to a server whose certificate has `days_left`.
fn tls_info(days_left: i64, insecure: bool) -> TlsInfo {
    TlsInfo {
        version: "TLSv1.3".into(),
        cipher_suite: "TLS_AES_256_GCM_SHA384".into(),
        alpn: Some("http/1.1".into()),
        resumed: false,
        insecure,
        cert: Some(CertInfo {
            subject: "CN=localhost".into(),
            issuer: "CN=llmload test CA".into(),
            not_after: "2030-01-01T00:00:00Z".into(),
            days_left,
        }),
    }
}

/// A TCP connect in 1 ms and a TLS handshake in 2 ms that negotiated `tls`.
fn https(tls: TlsInfo) -> Result<Setup, Failure> {
    Ok(Setup {
        tcp_connect: ms(1),
        tls_handshake: Some(ms(2)),
        tls: Some(tls),
    })
}

/// A response that arrived whole, 10 ms after the send.
fn resp(status: u16, content_type: &str, body: &str) -> Got {
    let body = body.as_bytes().to_vec();
    Ok(Response {
        status,
        content_type: Some(content_type.to_string()),
        event_stream: content_type == "text/event-stream",
        pieces: if body.is_empty() {
            Vec::new()
        } else {
            vec![(body.len(), ms(10))]
        },
        body,
        latency: ms(10),
        ..Response::default()
    })
}

fn json(status: u16, body: &str) -> Got {
    resp(status, "application/json", body)
}

fn not_found() -> Got {
    json(404, r#"{"detail":"Not Found"}"#)
}

/// An event stream whose events arrive one per read, the first at 5 ms.
fn sse(events: &[&str]) -> Got {
    let mut body = Vec::new();
    let mut pieces = Vec::new();
    for (i, e) in events.iter().enumerate() {
        body.extend_from_slice(format!("data: {e}\n\n").as_bytes());
        pieces.push((body.len(), ms(5 + i as u64)));
    }
    Ok(Response {
        status: 200,
        content_type: Some("text/event-stream".to_string()),
        event_stream: true,
        body,
        pieces,
        latency: ms(10),
        ..Response::default()
    })
}

/// A whole chat completion of 16 tokens.
fn chat_body(usage: bool) -> Got {
    let usage = if usage {
        r#","usage":{"prompt_tokens":6,"completion_tokens":16,"total_tokens":22}"#
    } else {
        ""
    };
    json(
        200,
        &format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"hello"}},"finish_reason":"length"}}]{usage}}}"#
        ),
    )
}

/// A streamed chat completion: a role event, two tokens, the finish (with
/// usage when asked) and `[DONE]`.
fn chat_stream(usage: bool) -> Got {
    let finish = if usage {
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":6,"completion_tokens":16}}"#
    } else {
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#
    };
    sse(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"he"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"llo"}}]}"#,
        finish,
        "[DONE]",
    ])
}

fn anthropic_body() -> Got {
    json(
        200,
        r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"hello"}],"stop_reason":"max_tokens","usage":{"input_tokens":6,"output_tokens":8}}"#,
    )
}

fn models(ids: &[&str]) -> Got {
    let data: Vec<String> = ids.iter().map(|id| format!(r#"{{"id":"{id}"}}"#)).collect();
    json(
        200,
        &format!(r#"{{"object":"list","data":[{}]}}"#, data.join(",")),
    )
}

/// One probe run's observations and what was asked. The default is a
/// server that serves openai-chat well at the default path, model `m`
/// named with `--model` and listed, and no other API anywhere.
struct Run {
    api: &'static str,
    url: &'static str,
    path: &'static str,
    model: &'static str,
    source: ModelSource,
    credentials: bool,
    connect: Result<Setup, Failure>,
    /// Over TLS: whether the later checks' connections resumed the session.
    resumed: Option<bool>,
    models: Got,
    /// Discovery answers by (API, path); any other is a 404.
    paths: Vec<(&'static str, &'static str, Got)>,
    non_stream: Got,
    stream: Got,
}

impl Default for Run {
    fn default() -> Run {
        Run {
            api: "openai-chat",
            url: URL,
            path: CHAT,
            model: "m",
            source: ModelSource::Flag,
            credentials: false,
            connect: Ok(tcp(ms(1))),
            resumed: None,
            models: models(&["m"]),
            paths: vec![("openai-chat", CHAT, chat_body(true))],
            non_stream: chat_body(true),
            stream: chat_stream(true),
        }
    }
}

impl Run {
    /// The checks as `probe` records them, in its order.
    fn checks(self) -> (Asked<'static>, Vec<Check>) {
        let chosen = protocol::find(self.api).unwrap();
        let asked = Asked {
            api: self.api,
            url: self.url,
            path: self.path,
            addr: addr(),
            model: self.model,
            model_source: Some(self.source),
            credentials: self.credentials,
            tls_flags: String::new(),
        };
        let mut checks = vec![connect_check(self.connect)];
        if checks[0].failure.is_some() {
            let asked = Asked {
                model: "",
                model_source: None,
                tls_flags: String::new(),
                ..asked
            };
            return (asked, checks);
        }
        checks.push(models_check(self.models, chosen));
        let mut paths = self.paths;
        for (p, path) in targets(chosen, self.path) {
            let at = paths
                .iter()
                .position(|(api, at, _)| *api == p.name() && *at == path);
            let got = at.map_or_else(not_found, |i| paths.swap_remove(i).2);
            checks.push(request_check(Kind::Path, p, &path, false, got));
        }
        assert!(paths.is_empty(), "a discovery answer for a path not probed");
        let chosen_check = |kind, stream, got| request_check(kind, chosen, self.path, stream, got);
        checks.push(chosen_check(Kind::NonStream, false, self.non_stream));
        checks.push(chosen_check(Kind::Stream, true, self.stream));
        if let Some(resumed) = self.resumed {
            for c in &mut checks[1..] {
                c.setup = Some(Setup {
                    tls: Some(TlsInfo {
                        resumed,
                        ..tls_info(365, false)
                    }),
                    ..tcp(ms(1))
                });
            }
        }
        (asked, checks)
    }

    /// The findings as printed, and the exit status.
    fn diagnose(self) -> (Vec<String>, i32) {
        let (asked, checks) = self.checks();
        let f = diagnose(&asked, &checks);
        let lines = f
            .verdicts
            .iter()
            .map(|v| format!("{}: {}", v.level.name(), v.text))
            .collect();
        (lines, f.exit_code)
    }
}

const CONNECTED: &str = "ok: connected to 127.0.0.1:8000 in 1.00 ms";
const LISTED: &str = "ok: GET /v1/models lists 1 model: m";
const NON_STREAM_OK: &str = "ok: non-streamed: 200 in 10.0 ms, 16 output tokens (usage)";
const STREAM_OK: &str =
    "ok: streamed: 200 in 10.0 ms, TTFT 6.00 ms, 2 output events, 16 output tokens (usage)";
const COMMAND: &str = "llmload bench --endpoint http://127.0.0.1:8000 --api openai-chat --model m";
const NOT_READY: &str = "error: not ready: openai-chat at http://127.0.0.1:8000 does not work";

fn ready() -> String {
    format!("ok: ready to benchmark: {COMMAND}")
}

fn stream_only() -> String {
    format!(
        "warning: only streamed requests work: benchmark streamed (the default), not with --no-stream: {COMMAND}"
    )
}

fn non_stream_only() -> String {
    format!("warning: only non-streamed requests work: {COMMAND} --no-stream")
}

/// Asserts the findings of `run` line by line.
fn check(name: &str, run: Run, lines: &[&str], exit_code: i32) {
    let (got, code) = run.diagnose();
    assert_eq!(got, lines, "{name}: the findings");
    assert_eq!(code, exit_code, "{name}: the exit status");
}

#[test]
fn connection_failures_end_the_probe() {
    let unreachable = io::Error::from(io::ErrorKind::HostUnreachable);
    let table = [
        (
            ConnectError::Refused,
            "error: connection refused at 127.0.0.1:8000: nothing is listening; is the server running and the port right?",
        ),
        (
            ConnectError::TimedOut,
            "error: connecting to 127.0.0.1:8000 timed out after 10s: the host is down or a firewall drops the packets; check the host and port",
        ),
        (
            ConnectError::Unreachable(unreachable),
            "error: 127.0.0.1:8000 is unreachable (host unreachable): check the host name and the network route",
        ),
    ];
    for (e, line) in table {
        let run = Run {
            connect: Err(Failure::of(&FetchError::Connect(e), addr(), TIMEOUT)),
            ..Run::default()
        };
        check(line, run, &[line], 1);
    }
}

#[test]
fn ready_servers_and_the_model_list() {
    check(
        "ready",
        Run::default(),
        &[CONNECTED, LISTED, NON_STREAM_OK, STREAM_OK, &ready()],
        0,
    );
    check(
        "the first listed model",
        Run {
            source: ModelSource::Listed,
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "ok: using model 'm', the first listed (pass --model to choose)",
            NON_STREAM_OK,
            STREAM_OK,
            &ready(),
        ],
        0,
    );
    check(
        "no model list and no model",
        Run {
            model: "default",
            source: ModelSource::Default,
            models: not_found(),
            ..Run::default()
        },
        &[
            CONNECTED,
            "warning: GET /v1/models → 404: no model list (Not Found)",
            "warning: no model named and none listed: sending 'default'; pass --model",
            NON_STREAM_OK,
            STREAM_OK,
            "ok: ready to benchmark: llmload bench --endpoint http://127.0.0.1:8000 --api openai-chat --model default",
        ],
        0,
    );
    let models_line = |models: Got, line: &str| {
        check(
            line,
            Run {
                models,
                ..Run::default()
            },
            &[CONNECTED, line, NON_STREAM_OK, STREAM_OK, &ready()],
            0,
        );
    };
    models_line(
        json(401, r#"{"error":{"message":"no key"}}"#),
        "warning: GET /v1/models → 401: authentication failed",
    );
    models_line(
        json(200, r#"{"models":[]}"#),
        r#"warning: GET /v1/models → 200, but the body is not a model list (no "data" array of models)"#,
    );
    models_line(
        models(&[]),
        "warning: GET /v1/models → 200, but it lists no model",
    );
    models_line(
        fail(FetchError::Timeout { head: false }),
        "warning: GET /v1/models: no response within 10s (--timeout): the server accepted the connection but did not answer",
    );
    let many: Vec<String> = (0..12)
        .map(|i| format!("m{i}").replace("m0", "m"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    models_line(
        models(&many),
        "ok: GET /v1/models lists 12 models: m, m1, m2, m3, m4, m5, m6, m7, m8, m9, … (12 in all)",
    );
    check(
        "credentials and a model to quote",
        Run {
            model: "my model",
            credentials: true,
            models: models(&["my model"]),
            ..Run::default()
        },
        &[
            CONNECTED,
            "ok: GET /v1/models lists 1 model: my model",
            NON_STREAM_OK,
            STREAM_OK,
            "ok: ready to benchmark: llmload bench --endpoint http://127.0.0.1:8000 --api openai-chat --model 'my model' (with your --api-key / --header)",
        ],
        0,
    );
}

#[test]
fn wrong_paths_name_the_path_or_api_that_answered() {
    check(
        "the chosen API at another path",
        Run {
            url: "http://127.0.0.1:8000/nope",
            path: "/nope",
            non_stream: not_found(),
            stream: not_found(),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /nope → 404: this server does not serve openai-chat at that path; \
             it answered at /v1/chat/completions (try --endpoint http://127.0.0.1:8000/v1/chat/completions)",
            "error: not ready: openai-chat at http://127.0.0.1:8000/nope does not work",
        ],
        1,
    );
    check(
        "another API at its own path",
        Run {
            paths: vec![
                ("openai-chat", CHAT, not_found()),
                ("anthropic", "/v1/messages", anthropic_body()),
            ],
            non_stream: not_found(),
            stream: not_found(),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 404: this server does not serve openai-chat at that path; \
             it answered at /v1/messages (try --api anthropic)",
            NOT_READY,
        ],
        1,
    );
    check(
        "another API at the URL's own path",
        Run {
            url: "http://127.0.0.1:8000/api",
            path: "/api",
            paths: vec![("anthropic", "/v1/messages", anthropic_body())],
            non_stream: not_found(),
            stream: not_found(),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /api → 404: this server does not serve openai-chat at that path; \
             it answered at /v1/messages (try --api anthropic --endpoint http://127.0.0.1:8000/v1/messages)",
            "error: not ready: openai-chat at http://127.0.0.1:8000/api does not work",
        ],
        1,
    );
    check(
        "nothing anywhere",
        Run {
            paths: vec![("openai-chat", CHAT, not_found())],
            non_stream: not_found(),
            stream: json(405, r#"{"detail":"Method Not Allowed"}"#),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 404: this server does not serve openai-chat at that path; \
             no other known API path answered (/v1/completions, /generate, /v1/messages)",
            "error: POST /v1/chat/completions (stream) → 405: this server does not serve openai-chat at that path; \
             no other known API path answered (/v1/completions, /generate, /v1/messages)",
            NOT_READY,
        ],
        1,
    );
}

#[test]
fn authentication_and_unknown_models() {
    let refused = || json(401, r#"{"error":{"message":"Incorrect API key provided"}}"#);
    check(
        "no credentials",
        Run {
            non_stream: refused(),
            stream: refused(),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 401: authentication failed: pass --api-key or --header \
             (server: Incorrect API key provided)",
            NOT_READY,
        ],
        1,
    );
    check(
        "wrong credentials",
        Run {
            credentials: true,
            non_stream: refused(),
            stream: refused(),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 401: authentication failed with the credentials given: \
             check --api-key or --header (server: Incorrect API key provided)",
            NOT_READY,
        ],
        1,
    );

    let unknown = || {
        json(
            404,
            r#"{"error":{"message":"The model `x` does not exist.","code":404}}"#,
        )
    };
    check(
        "a model the server says it does not know",
        Run {
            model: "x",
            models: models(&["a", "b"]),
            non_stream: unknown(),
            stream: unknown(),
            ..Run::default()
        },
        &[
            CONNECTED,
            "ok: GET /v1/models lists 2 models: a, b",
            "error: POST /v1/chat/completions → 404: model 'x' is not served; served: a, b \
             (server: The model `x` does not exist.)",
            NOT_READY,
        ],
        1,
    );
    let x = "llmload bench --endpoint http://127.0.0.1:8000 --api openai-chat --model x";
    check(
        "an unlisted model that is answered",
        Run {
            model: "x",
            models: models(&["a"]),
            ..Run::default()
        },
        &[
            CONNECTED,
            "ok: GET /v1/models lists 1 model: a",
            NON_STREAM_OK,
            STREAM_OK,
            "warning: model 'x' is not listed at /v1/models (served: a), but the server answered for it",
            &format!("ok: ready to benchmark: {x}"),
        ],
        0,
    );
    let failed = || json(500, r#"{"error":{"message":"boom"}}"#);
    check(
        "an unlisted model and a failing server",
        Run {
            model: "x",
            models: models(&["a"]),
            paths: Vec::new(),
            non_stream: failed(),
            stream: failed(),
            ..Run::default()
        },
        &[
            CONNECTED,
            "ok: GET /v1/models lists 1 model: a",
            "error: POST /v1/chat/completions → 500: the server failed: boom",
            "error: model 'x' is not served; served: a",
            NOT_READY,
        ],
        1,
    );
}

#[test]
fn responses_that_work_but_count_badly() {
    check(
        "a server that ignores \"stream\": true",
        Run {
            stream: chat_body(true),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            "warning: asked for a stream, got application/json: TTFT cannot be measured; benchmark with --no-stream",
            &non_stream_only(),
        ],
        2,
    );
    check(
        "a server that always streams",
        Run {
            non_stream: chat_stream(true),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            STREAM_OK,
            "warning: asked for a whole response, got an event stream: the server streams even with \"stream\": false",
            &ready(),
        ],
        0,
    );
    check(
        "no usage",
        Run {
            non_stream: chat_body(false),
            stream: chat_stream(false),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "ok: non-streamed: 200 in 10.0 ms, output found, no usage",
            "ok: streamed: 200 in 10.0 ms, TTFT 6.00 ms, 2 output events, output found, no usage",
            "warning: no usage in non-streamed responses: output tokens are not counted unless you pass --tokenizer",
            "warning: no usage in streamed responses: output tokens will be counted from events; pass --tokenizer for exact counts",
            &ready(),
        ],
        0,
    );
    let mut truncated = chat_body(true).unwrap();
    truncated.truncated = true;
    check(
        "max_tokens ignored",
        Run {
            non_stream: Ok(truncated),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            STREAM_OK,
            "warning: the response passed 1024 KiB for max_tokens 16: does the server ignore max_tokens?",
            &ready(),
        ],
        0,
    );
}

#[test]
fn answers_without_output() {
    check(
        "in-band errors",
        Run {
            non_stream: json(200, r#"{"error":{"message":"over\nloaded"}}"#),
            stream: sse(&[r#"{"error":{"message":"overloaded","type":"server_error"}}"#]),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 200 with an in-band error: over loaded",
            "error: POST /v1/chat/completions (stream) → 200 with an in-band error: overloaded",
            NOT_READY,
        ],
        1,
    );
    let endless = "x".repeat((1 << 20) + 16);
    check(
        "a malformed event stream",
        Run {
            stream: sse(&[&endless]).map(|mut r| {
                r.body.truncate(r.body.len() - 2);
                r.pieces = vec![(r.body.len(), ms(5))];
                r
            }),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            "error: POST /v1/chat/completions (stream) → 200, but the event stream is malformed (EventTooLarge)",
            &non_stream_only(),
        ],
        2,
    );
    check(
        "an event stream without output",
        Run {
            stream: sse(&["[DONE]"]),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            "warning: POST /v1/chat/completions (stream) → 200: the event stream carried no output (1 event): \
             TTFT cannot be measured; is --api right?",
            &non_stream_only(),
        ],
        2,
    );
    check(
        "a stream asked, text without output",
        Run {
            stream: resp(200, "text/plain; charset=utf-8", "hello"),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            "warning: asked for a stream, got text/plain with no openai-chat output: TTFT cannot be measured",
            &non_stream_only(),
        ],
        2,
    );
    check(
        "a body of another API",
        Run {
            paths: vec![
                ("openai-chat", CHAT, json(200, r#"{"id":"x"}"#)),
                ("anthropic", "/v1/messages", anthropic_body()),
            ],
            non_stream: json(200, r#"{"id":"x"}"#),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 200, but the body is not an openai-chat response (no output found): \
             is --api right? it answered at /v1/messages (try --api anthropic)",
            STREAM_OK,
            &stream_only(),
        ],
        0,
    );
}

#[test]
fn error_statuses_and_redirects() {
    let mut moved = resp(301, "text/html", "").unwrap();
    moved.location = Some("https://127.0.0.1:8443/v1/chat/completions".to_string());
    check(
        "a redirect",
        Run {
            non_stream: Ok(moved),
            stream: resp(302, "text/html", ""),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 301: redirected to https://127.0.0.1:8443/v1/chat/completions: \
             llmload does not follow redirects; probe the final URL",
            "error: POST /v1/chat/completions (stream) → 302: redirected to nowhere (no Location): \
             llmload does not follow redirects; probe the final URL",
            NOT_READY,
        ],
        1,
    );
    check(
        "a rejected request, and a server error as HTML",
        Run {
            non_stream: json(
                400,
                r#"{"object":"error","message":"max_tokens is too large","code":400}"#,
            ),
            stream: resp(
                503,
                "text/html",
                "<html><head><title>503 Service Unavailable</title></head></html>",
            ),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 400: the server rejected the request: max_tokens is too large",
            "error: POST /v1/chat/completions (stream) → 503: the server failed: 503 Service Unavailable",
            NOT_READY,
        ],
        1,
    );
    check(
        "only streaming works",
        Run {
            non_stream: json(422, r#"{"detail":[{"msg":"field required"}]}"#),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            "error: POST /v1/chat/completions → 422: the server rejected the request: field required",
            STREAM_OK,
            &stream_only(),
        ],
        0,
    );
}

#[test]
fn exchanges_that_fail() {
    let failing = |e: fn() -> FetchError, line: &str| {
        check(
            line,
            Run {
                non_stream: fail(e()),
                stream: fail(e()),
                ..Run::default()
            },
            &[CONNECTED, LISTED, line, NOT_READY],
            1,
        );
    };
    failing(
        || FetchError::Timeout { head: false },
        "error: POST /v1/chat/completions: no response within 10s (--timeout): \
         the server accepted the connection but did not answer",
    );
    failing(
        || FetchError::Timeout { head: true },
        "error: POST /v1/chat/completions: the response started but did not finish within 10s (--timeout)",
    );
    failing(
        || FetchError::Closed { head: false },
        "error: POST /v1/chat/completions: the server closed the connection without answering: \
         does it speak HTTP/1.1 on this port?",
    );
    failing(
        || FetchError::Reset { head: true },
        "error: POST /v1/chat/completions: connection reset before the response body ended",
    );
    failing(
        || FetchError::Malformed {
            what: "not an HTTP response".into(),
            start: b"SSH-2.0-OpenSSH_9.6\r\n".to_vec(),
        },
        r#"error: POST /v1/chat/completions: malformed HTTP response (not an HTTP response); it began b"SSH-2.0-OpenSSH_9.6\r\n""#,
    );
    failing(
        || FetchError::Tls("a TLS record did not decrypt (corrupted in transit?)".into()),
        "error: POST /v1/chat/completions: TLS failed after the response started: \
         a TLS record did not decrypt (corrupted in transit?)",
    );
    failing(
        || FetchError::Malformed {
            what: "not an HTTP response".into(),
            start: vec![0, 0, 0x12, 4, 0, 0, 0, 0, 0],
        },
        r#"error: POST /v1/chat/completions: malformed HTTP response (not an HTTP response); it began b"\x00\x00\x12\x04\x00\x00\x00\x00\x00"; the server speaks HTTP/2 only: llmload needs HTTP/1.1"#,
    );
    check(
        "the stream alone times out",
        Run {
            stream: fail(FetchError::Timeout { head: true }),
            ..Run::default()
        },
        &[
            CONNECTED,
            LISTED,
            NON_STREAM_OK,
            "error: POST /v1/chat/completions (stream): the response started but did not finish within 10s (--timeout)",
            &non_stream_only(),
        ],
        2,
    );
}

#[test]
fn findings_are_attached_to_their_checks() {
    let (asked, checks) = Run {
        source: ModelSource::Listed,
        ..Run::default()
    }
    .checks();
    let f = diagnose(&asked, &checks);
    let kinds: Vec<Option<&str>> = f
        .verdicts
        .iter()
        .map(|v| v.check.map(|i| checks[i].kind.name()))
        .collect();
    assert_eq!(
        kinds,
        [
            Some("connect"),
            Some("models"),
            Some("models"),
            Some("non_stream"),
            Some("stream"),
            None
        ]
    );
}

const HANDSHAKE_OK: &str =
    "ok: TLS handshake in 2.00 ms: TLSv1.3, TLS_AES_256_GCM_SHA384, ALPN http/1.1";
const CERT: &str = "subject CN=localhost; issuer CN=llmload test CA; expires 2030-01-01T00:00:00Z";

#[test]
fn https_reports_the_handshake_the_certificate_and_resumption() {
    check(
        "verified, a year left, sessions resumed",
        Run {
            connect: https(tls_info(365, false)),
            resumed: Some(true),
            ..Run::default()
        },
        &[
            CONNECTED,
            HANDSHAKE_OK,
            &format!("ok: certificate verified: {CERT} (365 days left)"),
            "ok: TLS session resumption works: 7 of 7 later connections resumed",
            LISTED,
            NON_STREAM_OK,
            STREAM_OK,
            &ready(),
        ],
        0,
    );
    let no_alpn = TlsInfo {
        alpn: None,
        ..tls_info(29, true)
    };
    check(
        "unverified, expiring within 30 days, no ALPN, no resumption",
        Run {
            connect: https(no_alpn),
            resumed: Some(false),
            ..Run::default()
        },
        &[
            CONNECTED,
            "ok: TLS handshake in 2.00 ms: TLSv1.3, TLS_AES_256_GCM_SHA384, ALPN none",
            &format!(
                "warning: certificate verification is OFF (--insecure): the server's identity was not checked; \
                 certificate: {CERT} (29 days left)"
            ),
            "warning: the server's certificate expires in 29 days on 2030-01-01T00:00:00Z: \
             renew it before clients start failing",
            "warning: no later connection resumed the TLS session (0 of 7): every new connection pays a full handshake",
            LISTED,
            NON_STREAM_OK,
            STREAM_OK,
            &ready(),
        ],
        0,
    );
    check(
        "expired, seen only because verification is off",
        Run {
            connect: https(tls_info(-3, true)),
            ..Run::default()
        },
        &[
            CONNECTED,
            HANDSHAKE_OK,
            &format!(
                "warning: certificate verification is OFF (--insecure): the server's identity was not checked; \
                 certificate: {CERT} (expired 3 days ago)"
            ),
            "warning: the server's certificate expired on 2030-01-01T00:00:00Z (3 days ago)",
            LISTED,
            NON_STREAM_OK,
            STREAM_OK,
            &ready(),
        ],
        0,
    );
}

#[test]
fn handshake_failures_end_the_probe_with_the_reason_and_a_way_out() {
    use rustls::{AlertDescription, CertificateError, Error};
    let reason = |e: Error| crate::tls::reason::describe(&e).into_owned();
    let table = [
        (
            FetchError::Handshake(reason(Error::InvalidCertificate(
                CertificateError::UnknownIssuer,
            ))),
            "error: TLS handshake with 127.0.0.1:8000 failed: unknown issuer: the server's certificate \
             is not signed by a trusted CA (add the CA with --ca-cert PATH, or skip verification with --insecure)",
        ),
        (
            FetchError::Handshake(reason(Error::InvalidCertificate(CertificateError::Expired))),
            "error: TLS handshake with 127.0.0.1:8000 failed: expired: the server's certificate has expired; \
             renew the server's certificate (or pass --insecure to probe past it)",
        ),
        (
            FetchError::Handshake(reason(Error::AlertReceived(
                AlertDescription::CertificateRequired,
            ))),
            "error: TLS handshake with 127.0.0.1:8000 failed: alert received: CertificateRequired: \
             the server requires a client certificate (--client-cert, --client-key)",
        ),
        (
            FetchError::HandshakeTimeout,
            "error: the TLS handshake with 127.0.0.1:8000 did not finish within 10s (--timeout): \
             does the server speak TLS on this port?",
        ),
    ];
    for (e, line) in table {
        let run = Run {
            connect: Err(Failure::of(&e, addr(), TIMEOUT)),
            ..Run::default()
        };
        check(line, run, &[line], 1);
    }
}

#[test]
fn tls_on_an_http_url_ends_the_probe_at_the_model_list() {
    let chosen = protocol::find("openai-chat").unwrap();
    let checks = vec![
        connect_check(Ok(tcp(ms(1)))),
        models_check(fail(FetchError::TlsOnHttp), chosen),
    ];
    let asked = Asked {
        api: "openai-chat",
        url: URL,
        path: CHAT,
        addr: addr(),
        model: "",
        model_source: None,
        credentials: false,
        tls_flags: String::new(),
    };
    let f = diagnose(&asked, &checks);
    let lines: Vec<String> = f
        .verdicts
        .iter()
        .map(|v| format!("{}: {}", v.level.name(), v.text))
        .collect();
    assert_eq!(
        lines,
        [
            CONNECTED,
            "error: GET /v1/models: the server answered in TLS, not plain HTTP: use https:// for this endpoint",
        ]
    );
    assert_eq!(f.exit_code, 1);
}
