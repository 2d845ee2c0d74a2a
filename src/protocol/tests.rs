//! Properties every registered protocol must have: a distinct name, a usable
//! default path, and parsers that never panic and only return slices of
//! their input, whatever bytes arrive.

use std::time::{Duration, Instant};

use super::*;

/// Whether `inner` is empty or lies within `outer`.
fn within(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    inner.is_empty() || (i >= o && i + inner.len() <= o + outer.len())
}

/// Parses `data` as an event under several names and as a body through every
/// protocol, checking that every returned slice is a slice of `data`.
fn parse_everywhere(data: &[u8], state: &mut [StreamState]) {
    const NAMES: [&[u8]; 6] = [
        b"",
        b"message_start",
        b"content_block_delta",
        b"message_delta",
        b"error",
        b"whatever",
    ];
    for (p, state) in ALL.iter().zip(state.iter_mut()) {
        for event in NAMES {
            let info = p.parse_event(&SseEvent { event, data }, state);
            for s in [info.text, info.reasoning, info.error.unwrap_or_default()] {
                assert!(within(data, s), "{}: event slice outside input", p.name());
            }
        }
        let body = p.parse_body(data);
        for s in [body.text, body.reasoning, body.error.unwrap_or_default()] {
            assert!(within(data, s), "{}: body slice outside input", p.name());
        }
    }
}

#[test]
fn names_are_distinct_and_paths_absolute() {
    let names = names();
    for (i, name) in names.iter().enumerate() {
        assert!(!names[..i].contains(name), "duplicate --api name {name}");
        assert!(!name.is_empty());
        let p = find(name).unwrap();
        assert_eq!(p.name(), *name);
        assert!(
            p.default_path().starts_with('/'),
            "{name}: {}",
            p.default_path()
        );
    }
    for expected in ["openai-chat", "openai-completions", "sglang", "anthropic"] {
        assert!(names.contains(&expected), "{expected} is not registered");
    }
    assert_eq!(names[0], "openai-chat", "the default --api comes first");
    let Err(unknown) = find("nope") else {
        panic!("an unknown --api was found");
    };
    assert!(unknown.contains("anthropic"), "{unknown}");
}

#[test]
fn every_protocol_sends_an_api_key() {
    for p in ALL {
        let headers = p.auth_headers("k3y");
        assert!(!headers.is_empty(), "{}", p.name());
        assert!(
            headers.iter().any(|(_, v)| v.contains("k3y")),
            "{}",
            p.name()
        );
    }
}

#[test]
fn every_body_is_json_with_the_prompt() {
    let sampling = Sampling::default();
    let messages = [Message::user("the prompt")];
    for stream in [false, true] {
        for p in ALL {
            let mut out = Vec::new();
            p.build_body(
                &BodySpec {
                    model: "m",
                    system: None,
                    messages: &messages,
                    input_tokens: None,
                    max_tokens: Some(5),
                    stream,
                    sampling: &sampling,
                    extra_body: None,
                },
                &mut out,
            );
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["stream"], stream, "{}", p.name());
            assert!(
                String::from_utf8(out).unwrap().contains("the prompt"),
                "{}",
                p.name()
            );
        }
    }
}

#[test]
fn garbage_and_truncated_input_never_panics() {
    let realistic: &[&[u8]] = &[
        br#"{"id":"c","choices":[{"index":0,"delta":{"content":" hello"},"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":34}}"#,
        br#"{"choices":[{"index":0,"text":" a","finish_reason":null}],"usage":null}"#,
        br#"{"text":" Paris. \"It\"","meta_info":{"finish_reason":{"type":"abort","message":"x"},"prompt_tokens":6,"completion_tokens":3}}"#,
        br#"{"type":"message_start","message":{"usage":{"input_tokens":25,"cache_read_input_tokens":4294967295}}}"#,
        br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello\\"}}"#,
        br#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}"#,
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        br#"{"object":"error","message":"bad"}"#,
    ];
    let garbage: &[&[u8]] = &[
        b"",
        b"[DONE]",
        b"\"",
        b"\\",
        b"{",
        b"}",
        b"\"text\":",
        b"\"text\":\"",
        b"\"text\":\"\\",
        b"\"delta\":{\"type\":\"text_delta\",\"text\":",
        b"\"meta_info\":{\"finish_reason\":{\"type\":",
        b"\"usage\":{\"input_tokens\":99999999999999}",
        b"\"error\":",
        b"\"error\":null,\"object\":\"error\"",
        b"\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"x",
        b"\xff\xfe\x00{\"content\":\"\xc3\x28\"}",
        b"{\"content\"  :  \"spaced\"  }",
        b"{{{{{{{{[[[[[[[[\"",
        b"}}}}]]]]",
    ];
    let mut states = [StreamState::default(); 8];
    assert!(states.len() >= ALL.len());
    for data in realistic.iter().chain(garbage) {
        for end in 0..=data.len() {
            parse_everywhere(&data[..end], &mut states);
            parse_everywhere(&data[end..], &mut states);
        }
    }
}

/// The names some parser looks up, each of which a hostile server can nest
/// inside itself.
const LOOKED_UP: [&str; 23] = [
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "completion_tokens",
    "content",
    "content_block",
    "delta",
    "error",
    "finish_reason",
    "input_tokens",
    "message",
    "meta_info",
    "object",
    "output_tokens",
    "partial_json",
    "prompt_tokens",
    "reasoning",
    "reasoning_content",
    "stop_reason",
    "text",
    "thinking",
    "tool_calls",
    "type",
    "usage",
];

/// Events of about `size` bytes shaped to make a key scan re-read the rest
/// of the event for every key: text for every format up front (so each
/// parser takes its text path), then one looked-up name nested in itself
/// to the end, closed or not; plus a run of quotes, of colons, of brackets
/// and of backslashes.
fn hostile_events(size: usize) -> Vec<Vec<u8>> {
    const TEXT: &[u8] = br#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"},"choices":[{"delta":{"content":"x"},"text":"x"}],"text":"x","#;
    let fill = |unit: &[u8], tail: &[u8]| {
        let mut e = TEXT.to_vec();
        while e.len() + unit.len() + tail.len() <= size {
            e.extend_from_slice(unit);
        }
        e.extend_from_slice(tail);
        e
    };
    let mut events = Vec::new();
    for name in LOOKED_UP {
        let unit = format!(r#""{name}":{{"#);
        let open = fill(unit.as_bytes(), b"");
        let depth = (open.len() - TEXT.len()) / unit.len();
        let mut closed = open[..open.len() - depth * unit.len() / 2].to_vec();
        closed.resize(closed.len() + depth / 2 + 1, b'}');
        events.push(open);
        events.push(closed);
        events.push(fill(format!(r#""{name}":"{name}","#).as_bytes(), b"}"));
        events.push(fill(format!(r#""{name}":["#).as_bytes(), b""));
    }
    for unit in [
        &b"\""[..],
        b":",
        b"\":\"",
        b"{",
        b"[",
        b"\\",
        b"\"\\\"",
        b"\"x\":{\"y\":",
    ] {
        events.push(fill(unit, b""));
    }
    events
}

/// F1: every parser reads a 1 MiB event of any of the worst shapes in time
/// linear in its size. A key scan that re-read the rest of the event for
/// each nested key took about a minute for one such event, during which the
/// worker's loop ran no timeouts. The bound, on the fastest of up to three
/// parses (a shared machine can stall one), is a sanity check far above the
/// linear cost (a few milliseconds) and far below the quadratic one; a
/// debug build gets smaller events.
#[test]
fn hostile_events_parse_in_linear_time() {
    let (size, bound) = if cfg!(debug_assertions) {
        (64 << 10, Duration::from_millis(250))
    } else {
        (1 << 20, Duration::from_millis(50))
    };
    let fastest = |parse: &dyn Fn()| {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            parse();
            best = best.min(start.elapsed());
            if best < bound {
                break;
            }
        }
        best
    };
    for data in hostile_events(size) {
        let shown = String::from_utf8_lossy(&data[..200.min(data.len())]).into_owned();
        for p in ALL {
            for event in [&b""[..], b"content_block_delta", b"message_delta", b"error"] {
                let t = fastest(&|| {
                    p.parse_event(
                        &SseEvent { event, data: &data },
                        &mut StreamState::default(),
                    );
                });
                assert!(t < bound, "{}: {t:?} on {shown}", p.name());
            }
            let t = fastest(&|| {
                p.parse_body(&data);
            });
            assert!(t < bound, "{} body: {t:?} on {shown}", p.name());
        }
    }
}
