//! An MLPerf YAML config (`--config`, `validate`, `benchmark from-config`)
//! read from any text: no panic and no stack overflow; a text over the
//! nesting or alias-expansion limits is refused; a tree that loads is no
//! deeper than the limit.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::mlperf_config_fuzzing::{MAX_DEPTH, read};
use serde_json::Value;

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (bounded, result) = read(text);
    match result {
        Ok(tree) => {
            assert!(bounded, "loaded past the limits: {text:?}");
            assert!(depth(&tree) <= MAX_DEPTH, "{text:?}");
        }
        Err(errors) => assert!(!errors.is_empty(), "{text:?}"),
    }
});
