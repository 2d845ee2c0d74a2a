//! Entry point for the fuzz target (`fuzz/`) into the Prometheus text
//! parser, which is otherwise private to the crate. Not an API: hidden from
//! the docs.

use super::parse;

/// One sample as the parser hands it out: name, label set, value.
pub type Sample<'a> = (&'a str, &'a str, f64);

/// Every sample of `text`, or the error's line number and words.
pub fn samples(text: &str) -> Result<Vec<Sample<'_>>, (usize, String)> {
    let mut out = Vec::new();
    parse::parse(text, |s| out.push((s.name, s.labels, s.value)))
        .map_err(|e| (e.line, e.to_string()))?;
    Ok(out)
}
