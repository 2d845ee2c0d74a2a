//! Injected faults: error statuses, malformed bytes, resets and in-band
//! errors, each on an exact deterministic schedule shared by every format.

use std::time::Duration;

use serde_json::Value;

use llmload::server::formats::Format;
use llmload::server::{MalformedKind, ServerConfig};

use super::{Fixture, body_usage, cfg, chat, chat_body, event_text, gen_req, stream_frame};

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
    assert_eq!(c.buf, llmload::server::MALFORMED);
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
    let non_stream = |format| {
        serde_json::from_slice::<Value>(llmload::server::formats::inband_body(format)).unwrap()
    };
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

#[test]
fn error_bursts_cycle_their_statuses() {
    let f = Fixture::new(ServerConfig {
        error_rate: 0.5,
        error_burst: 5,
        error_statuses: vec![500, 429],
        ..cfg()
    });
    let mut c = f.client();
    let mut codes = Vec::new();
    for _ in 0..40 {
        let r = c.roundtrip(&chat(&chat_body(false, 1, false)));
        if r.status == 429 {
            assert_eq!(r.header("retry-after"), Some("1"));
            assert_eq!(r.json()["error"]["type"], "rate_limit_exceeded");
        }
        codes.push(r.status);
    }
    let mut want = vec![200u16; 40];
    for (burst, code) in [(1, 500), (3, 429), (5, 500), (7, 429)] {
        want[burst * 5..burst * 5 + 5].fill(code);
    }
    assert_eq!(codes, want);
    let s = f.stop();
    assert_eq!((s.errors_injected, s.completed), (20, 20));
}

#[test]
fn stall_stops_after_fault_after_tokens_and_holds_the_connection() {
    let f = Fixture::new(ServerConfig {
        stall_rate: 1.0,
        fault_after: Some(3),
        ..cfg()
    });
    let mut c = f.client();
    c.send(&chat(&chat_body(true, 10, false)));
    let (status, _) = c.head();
    assert_eq!(status, 200);
    c.s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut tmp = [0u8; 4096];
    loop {
        match std::io::Read::read(&mut c.s, &mut tmp) {
            Ok(0) => panic!("the server closed a stalled stream"),
            Ok(n) => c.buf.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    let text = String::from_utf8_lossy(&c.buf).into_owned();
    // The role event and three tokens, then nothing.
    assert_eq!(text.matches("data: ").count(), 1 + 3, "{text}");
    // Once the client gives up, the server lets go.
    c.s.shutdown(std::net::Shutdown::Write).unwrap();
    c.s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(c.closed_cleanly());
    let s = f.stop();
    assert_eq!((s.stalls_injected, s.completed), (1, 0));
}

#[test]
fn endless_streams_go_past_any_max_tokens() {
    let f = Fixture::new(ServerConfig {
        endless_rate: 1.0,
        ..cfg()
    });
    let mut c = f.client();
    // Even a request for a body gets the stream.
    c.send(&chat(&chat_body(false, 2, false)));
    let (status, headers) = c.head();
    assert_eq!(status, 200);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "content-type" && v == "text/event-stream")
    );
    let mut tmp = vec![0u8; 65536];
    while c.buf.len() < 4 << 20 {
        let n = std::io::Read::read(&mut c.s, &mut tmp).unwrap();
        assert!(n > 0, "the endless stream ended");
        c.buf.extend_from_slice(&tmp[..n]);
    }
    // Each event after the first token carries about 4 KiB of whole
    // vocabulary cycles, so a client keeping text is fed it quickly.
    let text = String::from_utf8_lossy(&c.buf);
    assert!(text.matches("data: ").count() > 500);
    let cycle = llmload::server::formats::text::VOCAB.concat();
    assert!(text.contains(&format!("\"content\":\"{}", cycle.repeat(50))));
    assert!(!text.contains("[DONE]") && !text.contains("finish_reason\":\"length"));
    drop(c);
    let s = f.stop();
    assert_eq!((s.endless_injected, s.completed), (1, 0));
}

/// The bytes a malformed response of `kind` starts with, read until the
/// server closes or `limit` bytes have come.
fn malformed_bytes(kind: MalformedKind, limit: usize) -> (Vec<u8>, bool) {
    let f = Fixture::new(ServerConfig {
        malformed_rate: 1.0,
        malformed_kind: kind,
        ..cfg()
    });
    let mut c = f.client();
    c.send(&chat(&chat_body(true, 4, false)));
    let mut tmp = vec![0u8; 65536];
    let mut closed = false;
    while c.buf.len() < limit {
        match std::io::Read::read(&mut c.s, &mut tmp) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(n) => c.buf.extend_from_slice(&tmp[..n]),
            Err(e) => panic!("{kind:?}: {e}"),
        }
    }
    let got = std::mem::take(&mut c.buf);
    drop(c);
    assert_eq!(f.stop().malformed_injected, 1);
    (got, closed)
}

#[test]
fn malformed_kinds_send_what_they_say() {
    let (b, closed) = malformed_bytes(MalformedKind::StatusLine, 1 << 20);
    assert!(closed && b == llmload::server::MALFORMED);

    let (b, closed) = malformed_bytes(MalformedKind::Garbage, 1 << 20);
    assert!(closed && b.len() == 4096);
    assert!(b.iter().all(|&x| x >= 0x80), "not one ASCII byte");

    let (b, closed) = malformed_bytes(MalformedKind::ChunkSize, 1 << 20);
    let text = String::from_utf8_lossy(&b);
    assert!(closed && text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    let event = "data: {\"choices\":[]}\n\n";
    let want = format!(
        "\r\n\r\n{:x}\r\n{event}\r\nfffffffffffffffff\r\n",
        event.len()
    );
    assert!(text.contains(&want), "{text}");

    let (b, closed) = malformed_bytes(MalformedKind::HugeHead, 1 << 20);
    let head_end = b.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(closed && head_end >= llmload::server::HUGE_HEAD && head_end == b.len());
    let mut hs = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut hs);
    assert!(resp.parse(&b).unwrap().is_complete());
    assert_eq!(resp.code, Some(200));

    let (b, closed) = malformed_bytes(MalformedKind::EndlessLine, 3 << 20);
    let body = &b[b.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..];
    assert!(!closed && b.len() >= 3 << 20);
    // Without the chunk framing, one line that has not ended.
    let text = String::from_utf8_lossy(body);
    let (_, payload) = text.split_once("\r\n").unwrap();
    let payload = payload.replace("\r\n4000\r\n", "");
    assert!(payload.starts_with("data: {"), "{}", &payload[..100]);
    assert!(
        !payload[..payload.len() - 16].contains('\n'),
        "the line ended"
    );

    let (b, closed) = malformed_bytes(MalformedKind::HugeLength, 3 << 20);
    let text = String::from_utf8_lossy(&b[..300]);
    assert!(
        !closed && text.contains("content-length: 10737418240\r\n"),
        "{text}"
    );

    // A proxy's page: a whole, valid response on a connection kept alive.
    let f = Fixture::new(ServerConfig {
        malformed_rate: 0.5,
        malformed_kind: MalformedKind::Html,
        ..cfg()
    });
    let mut c = f.client();
    assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);
    let r = c.roundtrip(&chat(&chat_body(true, 1, false)));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(String::from_utf8_lossy(&r.body).contains("<html>"));
    assert_eq!(c.roundtrip(&chat(&chat_body(false, 1, false))).status, 200);
    let s = f.stop();
    assert_eq!((s.malformed_injected, s.completed), (1, 2));
}

#[test]
fn drip_sends_one_byte_per_interval() {
    let f = Fixture::new(ServerConfig {
        drip: Duration::from_millis(20),
        ..cfg()
    });
    let mut c = f.client();
    c.send(&chat(&chat_body(false, 1, false)));
    c.s.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let start = std::time::Instant::now();
    let mut tmp = [0u8; 4096];
    let mut reads = 0;
    while start.elapsed() < Duration::from_millis(300) {
        if let Ok(n) = std::io::Read::read(&mut c.s, &mut tmp) {
            assert!(n <= 2, "{n} bytes at once");
            c.buf.extend_from_slice(&tmp[..n]);
            reads += 1;
        }
    }
    // About 15 bytes in 300 ms; never the whole response.
    assert!((5..=20).contains(&c.buf.len()), "{} bytes", c.buf.len());
    assert!(reads >= 5);
    assert!(b"HTTP/1.1 200 OK\r\n".starts_with(&c.buf[..c.buf.len().min(17)]));
    drop(c);
    f.stop();
}

#[test]
fn resets_strike_after_fault_after_tokens() {
    let f = Fixture::new(ServerConfig {
        reset_rate: 1.0,
        fault_after: Some(2),
        ..cfg()
    });
    let mut c = f.client();
    c.send(&chat(&chat_body(true, 10, false)));
    let (status, _) = c.head();
    assert_eq!(status, 200);
    assert!(!c.closed_cleanly(), "expected RST");
    let text = String::from_utf8_lossy(&c.buf).into_owned();
    assert_eq!(text.matches("data: ").count(), 1 + 2, "{text}");
    assert_eq!(f.stop().resets_injected, 1);
}
