//! Every registered protocol's parsers on arbitrary bytes: never panic, and
//! only return slices of their input. The input goes through one stream
//! state per protocol as a whole event (with no event name and with one the
//! first byte picks, so typed formats take each branch), then line by line,
//! then whole again, so cumulative formats see texts that grow, repeat and
//! shrink; finally it is parsed as a whole body.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::http::sse::SseEvent;
use llmload::protocol::{ALL, EventInfo, StreamState};

/// Event names the formats dispatch on, plus ones they do not know.
const NAMES: [&[u8]; 8] = [
    b"message_start",
    b"content_block_start",
    b"content_block_delta",
    b"message_delta",
    b"message_stop",
    b"error",
    b"ping",
    b"completion",
];

/// Whether `inner` is empty or lies within `outer`.
fn within(outer: &[u8], inner: &[u8]) -> bool {
    let outer = outer.as_ptr_range();
    let inner_range = inner.as_ptr_range();
    inner.is_empty() || (outer.start <= inner_range.start && inner_range.end <= outer.end)
}

fn check_event(name: &str, data: &[u8], info: &EventInfo<'_>) {
    assert!(within(data, info.text), "{name}: text outside the event");
    assert!(
        within(data, info.reasoning),
        "{name}: reasoning outside the event"
    );
    if let Some(e) = info.error {
        assert!(within(data, e), "{name}: error outside the event");
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&sel, rest)) = input.split_first() else {
        return;
    };
    let name = NAMES[usize::from(sel) % NAMES.len()];
    for p in ALL {
        let mut state = StreamState::default();
        let mut feed = |event: &[u8], data: &[u8]| {
            let info = p.parse_event(&SseEvent { event, data }, &mut state);
            check_event(p.name(), data, &info);
            // Every event is a slice of the input, so is all text seen.
            assert!(
                state.text_seen <= rest.len(),
                "{}: text_seen past the input",
                p.name()
            );
        };
        feed(b"", rest);
        feed(name, rest);
        for line in rest.split(|&b| b == b'\n') {
            feed(b"", line);
            feed(name, line);
        }
        feed(b"", rest);

        let body = p.parse_body(rest);
        assert!(
            within(rest, body.text),
            "{}: body text outside the input",
            p.name()
        );
        assert!(
            within(rest, body.reasoning),
            "{}: body reasoning outside the input",
            p.name()
        );
        if let Some(e) = body.error {
            assert!(
                within(rest, e),
                "{}: body error outside the input",
                p.name()
            );
        }
    }
});
