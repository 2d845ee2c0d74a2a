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

/// ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum F-measures (0–1) of one pair.
pub fn rouge_pair(prediction: &str, reference: &str) -> [f64; 4] {
    let r = rouge::score_pair(prediction, reference);
    [r.rouge1, r.rouge2, r.rouge_l, r.rouge_lsum]
}
