//! Every accuracy extractor alone on arbitrary model output, up to the
//! 1 MiB a reply may carry: no panic, the promises of `accuracy_text`
//! (identity returns the text, ABCD always answers `""` or a choice,
//! python_code's block is trimmed, function_call's answer is JSON), and no
//! input slower than libFuzzer's `-timeout`: the extractors are linear in
//! the reply, and ROUGE (quadratic in its two texts by definition) stays
//! out of this target so a slow input here is an extractor's.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::accuracy::fuzzing::check_extractors;

fuzz_target!(|data: &[u8]| {
    let Ok(reply) = std::str::from_utf8(data) else {
        return;
    };
    check_extractors(reply);
});
