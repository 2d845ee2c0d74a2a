//! A prompt template (`--prompt-template`, `template=`): parsing never
//! panics, and a parsed template renders every column it names, in order of
//! first use, with the literal text between them (`{{`/`}}` as braces).

#![no_main]

use libfuzzer_sys::fuzz_target;
use llmload::dataset::Template;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(t) = Template::parse(text) else {
        return;
    };
    let values: Vec<Option<String>> = (0..t.names().len()).map(|i| Some(format!("<{i}>"))).collect();
    let out = t.render(&values).expect("every column has a value");
    for i in 0..values.len() {
        assert!(out.contains(&format!("<{i}>")), "{text:?} → {out:?}");
    }
    // Without its values, the first column is the one missing.
    if !values.is_empty() {
        assert_eq!(t.render(&[]), Err(0));
    }
    // A template with no fields renders its text with the braces unescaped.
    if values.is_empty() {
        assert_eq!(out, text.replace("{{", "{").replace("}}", "}"));
    }
});
