//! Entry points for the fuzz targets (`fuzz/`) into the accuracy phase's
//! readers of model output — the extractors (regexes, a JSON reader, a
//! Python-literal reader) and ROUGE's tokenizer, stemmer and sentence
//! splitter — which are otherwise private to the crate. Not an API: hidden
//! from the docs.

use super::extract::ALL;
use super::rouge;

/// What each extractor (identity, abcd, boxed_math, python_code,
/// function_call) makes of `text`.
pub fn extract_all(text: &str) -> [Option<String>; 5] {
    ALL.map(|e| e.extract(text))
}

/// Every extractor on `text`, panicking where one breaks its promise:
/// identity returns the text, ABCD always answers (`""` or
/// `choice1`…`choice4`), python_code's block comes out stripped at its
/// end and function_call's answer is JSON.
pub fn check_extractors(text: &str) {
    let [identity, abcd, _boxed, code, call] = extract_all(text);
    assert_eq!(identity.as_deref(), Some(text));
    let abcd = abcd.expect("ABCD always answers");
    assert!(
        ["", "choice1", "choice2", "choice3", "choice4"].contains(&abcd.as_str()),
        "{abcd}"
    );
    if let Some(c) = code {
        // MLPerf strips a plain block before it drops a language tag, so
        // what followed the tag keeps its leading blanks (`py\n x`).
        assert_eq!(c.trim_end(), c, "a code block comes out stripped");
    }
    if let Some(j) = call {
        // Python's JSON, as json.dumps writes it: a float past f64's range
        // is `Infinity` (and NaN `NaN`), and an integer of any length is
        // copied whole, which serde_json's f64 cannot hold.
        let strict = j
            .replace("-Infinity", "0")
            .replace("Infinity", "0")
            .replace("NaN", "0");
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&strict) {
            assert!(
                e.to_string().starts_with("number out of range"),
                "function calls come out as JSON: {e}"
            );
        }
    }
}

/// ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F-measures (0–1) of one pair.
pub fn rouge_pair(prediction: &str, reference: &str) -> [f64; 4] {
    let r = rouge::score_pair(prediction, reference);
    [r.rouge1, r.rouge2, r.rouge_l, r.rouge_lsum]
}
