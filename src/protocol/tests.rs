//! Properties every registered protocol must have: a distinct name, a usable
//! default path, and parsers that never panic and only return slices of
//! their input, whatever bytes arrive.

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
