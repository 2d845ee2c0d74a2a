//! Histograms as text: HdrHistogram's standard V2 compressed encoding
//! (deflate), in base64, the form summary.json carries so another run —
//! `llmload merge` — rebuilds the very same counts. Decoding checks the
//! bounds the caller expects: the encoding names its own, and a histogram
//! of other bounds would not add into ours without resizing or losing
//! values.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::{Counter, Histogram};

/// The bounds a histogram was made with: lowest discernible value,
/// highest trackable value, significant digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub low: u64,
    pub high: u64,
    pub sigfig: u8,
}

impl Bounds {
    /// A new, empty histogram of these bounds that never resizes.
    pub(crate) fn histogram<T: Counter>(self) -> Histogram<T> {
        let mut h = Histogram::new_with_bounds(self.low, self.high, self.sigfig)
            .expect("constant histogram bounds are valid");
        h.auto(false);
        h
    }
}

/// `h` in V2 compressed encoding, base64.
pub(crate) fn to_text<T: Counter>(h: &Histogram<T>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("encoding a histogram into memory cannot fail");
    STANDARD.encode(bytes)
}

/// The histogram `text` encodes, which must have `bounds`; never resizes.
pub(crate) fn from_text<T: Counter>(text: &str, bounds: Bounds) -> Result<Histogram<T>, String> {
    let bytes = STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    let mut h: Histogram<T> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e:?}"))?;
    let got = Bounds {
        low: h.low(),
        high: h.high(),
        sigfig: h.sigfig(),
    };
    if got != bounds {
        return Err(format!(
            "histogram bounds {}..{} at {} digits, expected {}..{} at {}",
            got.low, got.high, got.sigfig, bounds.low, bounds.high, bounds.sigfig
        ));
    }
    h.auto(false);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        low: 1,
        high: 3_600_000_000_000,
        sigfig: 3,
    };

    #[test]
    fn a_histogram_survives_its_text() {
        let mut h: Histogram<u64> = B.histogram();
        for v in [1, 7, 1_000, 123_456_789, 3_600_000_000_000] {
            h.record_n(v, v % 5 + 1).unwrap();
        }
        let back: Histogram<u64> = from_text(&to_text(&h), B).unwrap();
        assert_eq!(back, h);
        assert!(!back.is_auto_resize());
        let empty: Histogram<u64> = from_text(&to_text(&B.histogram::<u64>()), B).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn other_bounds_and_garbage_are_refused() {
        let other = Bounds { sigfig: 2, ..B };
        let text = to_text(&other.histogram::<u64>());
        let e = from_text::<u64>(&text, B).unwrap_err();
        assert!(e.contains("at 2 digits"), "{e}");
        assert!(from_text::<u64>("!!", B).unwrap_err().contains("base64"));
        assert!(from_text::<u64>("AAAA", B).unwrap_err().contains("V2"));
    }
}
