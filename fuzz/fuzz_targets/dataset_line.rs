//! One JSONL line or one CSV record through the loader's own per-row
//! parsing (`jsonl::parse_line`, `csv::parse_record`) under a few column
//! mappings: never panics, and whatever it accepts keeps the loader's
//! promises (a non-blank prompt, a non-empty conversation or token list, a
//! positive max_tokens). A JSONL line must also be accepted or refused
//! alike, and read the same, through the first-line path (kept whole for
//! column detection, then mapped). The
//! first byte picks the format and the mapping.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::dataset::csv::{CsvColumns, parse_record};
use llmload::dataset::jsonl::{parse_first_line, parse_line};
use llmload::dataset::{ColumnMap, ResolvedColumns, Sample};

const HEADER: [&str; 10] = [
    "p", "s", "n", "e", "ids", "messages", "system", "t", "m", "prompt",
];

fn map(which: u8) -> ColumnMap {
    let c = |s: &str| Some(s.to_string());
    match which % 4 {
        0 => ColumnMap {
            prompt: c("prompt"),
            ..ColumnMap::default()
        },
        1 => ColumnMap {
            prompt: c("p"),
            system: c("s"),
            max_tokens: c("n"),
            expected: c("e"),
            input_tokens: c("ids"),
            ..ColumnMap::default()
        },
        2 => ColumnMap {
            messages: c("messages"),
            system: c("system"),
            ..ColumnMap::default()
        },
        _ => ColumnMap {
            input_tokens: c("t"),
            max_tokens: c("m"),
            ..ColumnMap::default()
        },
    }
}

fn check(sample: &Sample, map: &ColumnMap) {
    if map.prompt.is_some() {
        assert_eq!(sample.messages.len(), 1);
        assert!(!sample.messages[0].content.trim().is_empty());
    }
    if map.messages.is_some() {
        assert!(!sample.messages.is_empty());
    }
    if map.input_tokens.is_some() {
        assert!(sample.input_tokens.as_ref().is_some_and(|t| !t.is_empty()));
    }
    assert_ne!(sample.max_tokens, Some(0));
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, input)) = data.split_first() else {
        return;
    };
    let map = map(sel);
    let cols = ResolvedColumns::from_map(&map).expect("every mapping names a prompt source");
    let result = if sel & 4 == 0 {
        let result = parse_line(input, &cols);
        let first = parse_first_line(input, &cols);
        // Errors may differ in wording: serde_json reports some syntax
        // errors a column apart when skipping a value than when building it.
        match (&result, &first) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "first-line path reads differently"),
            (Err(_), Err(_)) => {}
            _ => panic!("first-line path disagrees: {result:?} vs {first:?}"),
        }
        result
    } else {
        let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
        let csv_cols = CsvColumns::new(cols, &header, "fuzz.csv").expect("header has every column");
        parse_record(input, &csv_cols)
    };
    if let Ok(sample) = result {
        check(&sample, &map);
    }
});
