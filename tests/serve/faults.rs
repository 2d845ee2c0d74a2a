//! Injected faults: error statuses, malformed bytes, resets and in-band
//! errors, each on an exact deterministic schedule shared by every format.

use std::time::Duration;

use serde_json::Value;

use llmload::server::ServerConfig;
use llmload::server::formats::Format;

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
