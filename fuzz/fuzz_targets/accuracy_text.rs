//! Model output through the accuracy phase's readers: every extractor and
//! ROUGE on arbitrary text never panic, and keep their promises — identity
//! returns the text, ABCD always answers (`""` or `choice1`…`choice4`),
//! python_code's block is trimmed, function_call's answer is JSON, and
//! ROUGE's F-measures lie in [0, 1] and are symmetric in ROUGE-1 (F1 is).
//! A 0 byte splits the input into a reply and a reference.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::accuracy::fuzzing::{check_extractors, rouge_pair};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (reply, reference) = text.split_once('\0').unwrap_or((text, ""));
    check_extractors(reply);
    let forward = rouge_pair(reply, reference);
    for f in forward {
        assert!((0.0..=1.0).contains(&f), "{forward:?}");
    }
    let backward = rouge_pair(reference, reply);
    assert!((forward[0] - backward[0]).abs() < 1e-12, "{forward:?} {backward:?}");
});
