//! Every accuracy extractor alone on arbitrary model output, up to the
//! 1 MiB a reply may carry: no panic, the promises of `accuracy_text`
//! (identity returns the text, ABCD always answers `""` or a choice,
//! python_code's block is trimmed, function_call's answer is JSON), and no
//! input slower than libFuzzer's `-timeout`: the extractors are linear in
//! the reply, and ROUGE (quadratic in its two texts by definition) stays
//! out of this target so a slow input here is an extractor's.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::accuracy::fuzzing::extract_all;

fuzz_target!(|data: &[u8]| {
    let Ok(reply) = std::str::from_utf8(data) else {
        return;
    };
    let [identity, abcd, _boxed, code, call] = extract_all(reply);
    assert_eq!(identity.as_deref(), Some(reply));
    let abcd = abcd.expect("ABCD always answers");
    assert!(
        ["", "choice1", "choice2", "choice3", "choice4"].contains(&abcd.as_str()),
        "{abcd}"
    );
    if let Some(c) = code {
        assert_eq!(c.trim(), c, "a code block comes out stripped");
    }
    if let Some(j) = call {
        serde_json::from_str::<serde_json::Value>(&j).expect("function calls come out as JSON");
    }
});
