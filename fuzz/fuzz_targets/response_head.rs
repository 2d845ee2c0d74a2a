//! `parse_head` on arbitrary bytes: never panics, a complete head is
//! consistent with itself, and the answer is stable as bytes arrive — once a
//! prefix gives a definite answer (a head or an error), the whole input gives
//! the same one, which is what the worker loop relies on when it re-parses a
//! growing buffer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::http::response::{BodyKind, MAX_HEAD_LEN, parse_head};

fuzz_target!(|data: &[u8]| {
    let Some((sel, input)) = data.split_first_chunk::<2>() else {
        return;
    };
    let whole = parse_head(input);
    if let Ok(Some(head)) = whole {
        assert!(head.len <= input.len() && head.len <= MAX_HEAD_LEN);
        assert!(head.body != BodyKind::UntilClose || !head.keep_alive);
        // The head alone is the same head; the body after it is not read.
        assert_eq!(parse_head(&input[..head.len]), whole);
    }
    let cut = usize::from(u16::from_le_bytes(*sel)) % (input.len() + 1);
    match parse_head(&input[..cut]) {
        Ok(None) => {}
        prefix => assert_eq!(prefix, whole, "prefix of {cut} bytes decided differently"),
    }
});
