//! `ChunkedDecoder` on arbitrary bytes: never panics, always makes progress,
//! lends data from its input, and decodes the same body and outcome whether
//! the input arrives whole, in pseudo-random pieces seeded by the first byte,
//! or one byte at a time.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::http::chunked::{ChunkedDecoder, ChunkedError};

#[derive(Debug, PartialEq)]
enum Outcome {
    Done(usize),
    More,
    Err(ChunkedError),
}

fn run<'a>(pieces: impl IntoIterator<Item = &'a [u8]>) -> (Vec<u8>, Outcome) {
    let mut dec = ChunkedDecoder::default();
    let mut out = Vec::new();
    let mut total = 0;
    for piece in pieces {
        let mut rest = piece;
        while !rest.is_empty() {
            match dec.decode(rest) {
                Ok(step) => {
                    assert!(step.consumed > 0 || step.done, "no progress");
                    assert!(step.consumed <= rest.len());
                    if !step.data.is_empty() {
                        let lent = rest[..step.consumed].as_ptr_range();
                        assert!(lent.contains(&step.data.as_ptr()));
                        assert!(step.data.as_ptr_range().end <= lent.end);
                    }
                    out.extend_from_slice(step.data);
                    total += step.consumed;
                    rest = &rest[step.consumed..];
                    if step.done {
                        return (out, Outcome::Done(total));
                    }
                }
                Err(e) => return (out, Outcome::Err(e)),
            }
        }
    }
    (out, Outcome::More)
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
    let whole = run([input]);
    assert_eq!(run(pieces(input, sel)), whole, "pieces");
    assert_eq!(run(input.chunks(1)), whole, "byte by byte");
});
