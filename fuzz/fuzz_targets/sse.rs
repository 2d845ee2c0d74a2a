//! `SseSplitter` on arbitrary bytes: never panics, respects its size limit,
//! and dispatches the same events with the same outcome whether the stream
//! arrives whole, in pseudo-random pieces, or one byte at a time. The first
//! byte picks the limit and seeds the cuts, so small limits get exercised too.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::http::sse::{SseError, SseSplitter};

type Events = Vec<(Vec<u8>, Vec<u8>)>;

fn run<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    max_event: usize,
) -> (Events, Result<(), SseError>) {
    let mut splitter = SseSplitter::with_capacity(max_event);
    let mut events = Vec::new();
    for piece in pieces {
        let result = splitter.feed(piece, |e| {
            assert!(e.data.len() <= max_event && e.event.len() <= max_event);
            events.push((e.event.to_vec(), e.data.to_vec()));
        });
        if result.is_err() {
            return (events, result);
        }
    }
    (events, Ok(()))
}

/// Cuts `input` into pieces of 0 to 31 bytes chosen by a tiny LCG.
fn pieces(input: &[u8], seed: u8) -> Vec<&[u8]> {
    let mut state = u32::from(seed) | 1;
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let n = ((state >> 27) as usize).min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, input)) = data.split_first() else {
        return;
    };
    let max_event = [1, 3, 8, 16, 64, 256, 1024, 8192][usize::from(sel & 7)];
    let whole = run([input], max_event);
    assert_eq!(run(pieces(input, sel), max_event), whole, "pieces");
    assert_eq!(run(input.chunks(1), max_event), whole, "byte by byte");
});
