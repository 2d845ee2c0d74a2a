//! `rouge_score`'s default tokenizer: lower-case the text, cut it at every
//! character outside `[a-z0-9]`, and Porter-stem the tokens longer than three
//! characters. Lower-casing is Unicode's, as Python's `str.lower()`, so a
//! few non-ASCII letters (the Kelvin sign, dotted capital I) still yield an
//! ASCII letter; every other non-ASCII character separates tokens.

use super::porter;

/// Appends the tokens of `text` to `out`.
pub(crate) fn tokenize(text: &str, out: &mut Vec<String>) {
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(if word.len() > 3 {
                porter::stem(word)
            } else {
                word.clone()
            });
            word.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii() {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                word.push(c);
            } else {
                flush(&mut word, out);
            }
        } else {
            for l in c.to_lowercase() {
                if l.is_ascii_lowercase() || l.is_ascii_digit() {
                    word.push(l);
                } else {
                    flush(&mut word, out);
                }
            }
        }
    }
    flush(&mut word, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_rouge_score_cases() {
        let cases: serde_json::Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/accuracy/rouge-cases.json"
        ))
        .unwrap();
        for case in cases["tokenize"].as_array().unwrap() {
            let text = case["text"].as_str().unwrap();
            let want: Vec<&str> = case["tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            let mut got = Vec::new();
            tokenize(text, &mut got);
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn short_tokens_are_not_stemmed() {
        let mut got = Vec::new();
        tokenize("Was it's USES ran", &mut got);
        assert_eq!(got, ["was", "it", "s", "use", "ran"]);
    }
}
