//! A run profile (`--profile run.json`) from any text, through `${NAME}`
//! expansion and the typed reader: no panic; an accepted profile is
//! recorded as JSON that reads back as JSON, and an error names the file.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match llmload::profile_fuzzing::read(text) {
        Ok(json) => {
            serde_json::from_str::<serde_json::Value>(&json).expect("a recorded profile is JSON");
        }
        Err(e) => assert!(e.starts_with("fuzz.json"), "{e}"),
    }
});
