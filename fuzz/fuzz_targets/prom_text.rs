//! The Prometheus text parser (`--server-metrics`) on any text: no panic;
//! every sample's name and label set are slices of its line that
//! re-parse alone to the same sample; an error names a line that exists;
//! and parsing line by line agrees with parsing the whole.

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::scrape::fuzzing::samples;

fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines: Vec<&str> = text.split('\n').collect();
    match samples(text) {
        Ok(all) => {
            let mut k = 0;
            for line in &lines {
                let one = samples(line).expect("a line of a valid text is valid alone");
                for s in one {
                    let (name, labels, value) = all[k];
                    assert_eq!((s.0, s.1), (name, labels));
                    assert!(same(s.2, value));
                    assert!(line.contains(name) && line.contains(labels));
                    k += 1;
                }
            }
            assert_eq!(k, all.len());
        }
        Err((line, words)) => {
            assert!(line >= 1 && line <= lines.len(), "{line} {words}");
            assert!(words.starts_with(&format!("line {line}: ")), "{words}");
            // The lines before it are fine on their own.
            let before = lines[..line - 1].join("\n");
            assert!(samples(&before).is_ok());
        }
    }
});
