//! Histograms as text: HdrHistogram's standard V2 compressed encoding
//! (deflate), in base64, the form summary.json carries so another run —
//! `llmload merge` — rebuilds the very same counts. Encoding reuses one zlib
//! stream per thread. Decoding checks the
//! bounds the caller expects: the encoding names its own, and a histogram
//! of other bounds would not add into ours without resizing or losing
//! values.

use std::cell::RefCell;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use flate2::{Compress, Compression, FlushCompress, Status};
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::{Counter, Histogram};

/// The first four bytes of a V2 compressed encoding (big-endian), as
/// HdrHistogram writes them.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

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

/// A V2 compressed encoder kept per thread: the bytes are
/// `V2DeflateSerializer`'s (cookie, length, the V2 encoding through zlib at
/// the default level), but its zlib stream is reset rather than made anew
/// for each histogram, which would zero some 300 KiB of tables: ten times
/// the work of compressing a histogram of a few hundred values.
struct Encoder {
    v2: V2Serializer,
    zlib: Compress,
    plain: Vec<u8>,
    packed: Vec<u8>,
}

thread_local! {
    static ENCODER: RefCell<Encoder> = RefCell::new(Encoder {
        v2: V2Serializer::new(),
        zlib: Compress::new(Compression::default(), true),
        plain: Vec::new(),
        packed: Vec::new(),
    });
}

/// `h` in V2 compressed encoding, base64.
pub(crate) fn to_text<T: Counter>(h: &Histogram<T>) -> String {
    ENCODER.with(|e| {
        let e = &mut *e.borrow_mut();
        e.plain.clear();
        e.v2.serialize(h, &mut e.plain)
            .expect("encoding a histogram into memory cannot fail");
        e.zlib.reset();
        e.packed.clear();
        e.packed
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        e.packed.extend_from_slice(&[0; 4]);
        loop {
            e.packed.reserve(e.plain.len() / 2 + 64);
            let from = e.zlib.total_in() as usize;
            let status = e
                .zlib
                .compress_vec(&e.plain[from..], &mut e.packed, FlushCompress::Finish)
                .expect("compressing into memory cannot fail");
            if status == Status::StreamEnd {
                break;
            }
        }
        let len = (e.packed.len() - 8) as u32;
        e.packed[4..8].copy_from_slice(&len.to_be_bytes());
        STANDARD.encode(&e.packed)
    })
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

    /// The same bytes as HdrHistogram's own V2 deflate serializer, for
    /// histograms small and large, one after another on one stream.
    #[test]
    fn the_text_is_hdrhistograms_own_encoding() {
        use hdrhistogram::serialization::V2DeflateSerializer;
        let theirs = |h: &Histogram<u64>| {
            let mut bytes = Vec::new();
            V2DeflateSerializer::new().serialize(h, &mut bytes).unwrap();
            STANDARD.encode(bytes)
        };
        let mut rng = crate::rng::Rng::seeded(14);
        for n in [0, 1, 10, 500, 20_000, 300_000] {
            let mut h: Histogram<u64> = B.histogram();
            for _ in 0..n {
                let bits = rng.below(42) as u32;
                h.record(rng.below(1 << bits).max(1)).unwrap();
            }
            assert_eq!(to_text(&h), theirs(&h), "{n} values");
        }
        let mut small: Histogram<u32> = Bounds {
            low: 1_000,
            high: B.high,
            sigfig: 2,
        }
        .histogram();
        small.record(12_345).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&small, &mut bytes)
            .unwrap();
        assert_eq!(to_text(&small), STANDARD.encode(bytes));
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
