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

/// The first four bytes of a plain V2 encoding, the compressed one's
/// content.
const V2_COOKIE: u32 = 0x1c84_9313;

/// A V2 encoding's header: cookie, payload length, normalizing offset,
/// digits, lowest, highest, integer-to-double ratio.
const V2_HEADER: usize = 40;

impl Bounds {
    /// The most bytes a V2 encoding of a histogram of these bounds can
    /// take: its header and a varint of at most 9 bytes per counter, of at
    /// most 65 buckets (one per bit of a u64, and one) of half the
    /// sub-buckets each.
    fn max_encoded(self) -> usize {
        let single_unit = 2 * 10u64.pow(u32::from(self.sigfig.min(5)));
        let sub_buckets = single_unit.next_power_of_two() as usize;
        V2_HEADER + 9 * 65 * (sub_buckets / 2)
    }
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The plain V2 encoding inside `bytes` (compressed or not), refused
/// before anything is sized by it: a declared length must be the length
/// there is, inflating stops past the largest encoding `bounds` allows,
/// and the header must name `bounds`.
fn plain_v2(bytes: &[u8], bounds: Bounds) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    use std::io::Read as _;
    let max = bounds.max_encoded();
    if bytes.len() < 8 {
        return Err(format!(
            "not an HdrHistogram V2 encoding: {} bytes",
            bytes.len()
        ));
    }
    let plain: std::borrow::Cow<'_, [u8]> = match be_u32(bytes, 0) {
        V2_COMPRESSED_COOKIE => {
            let declared = be_u32(bytes, 4) as usize;
            if declared != bytes.len() - 8 {
                return Err(format!(
                    "the encoding declares {declared} compressed bytes but holds {}",
                    bytes.len() - 8
                ));
            }
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..])
                .take(max as u64 + 1)
                .read_to_end(&mut plain)
                .map_err(|e| format!("not an HdrHistogram V2 encoding: {e}"))?;
            if plain.len() > max {
                return Err(format!(
                    "the encoding inflates past {max} bytes, more than any histogram of its bounds"
                ));
            }
            plain.into()
        }
        V2_COOKIE => bytes.into(),
        _ => return Err("not an HdrHistogram V2 encoding: InvalidCookie".into()),
    };
    if plain.len() < V2_HEADER || be_u32(&plain, 0) != V2_COOKIE {
        return Err("not an HdrHistogram V2 encoding: InvalidCookie".into());
    }
    let declared = be_u32(&plain, 4) as usize;
    if declared != plain.len() - V2_HEADER {
        return Err(format!(
            "the encoding declares {declared} payload bytes but holds {}",
            plain.len() - V2_HEADER
        ));
    }
    let got = (be_u32(&plain, 12), be_u64(&plain, 16), be_u64(&plain, 24));
    if got != (u32::from(bounds.sigfig), bounds.low, bounds.high) {
        return Err(format!(
            "histogram bounds {}..{} at {} digits, expected {}..{} at {}",
            got.1, got.2, got.0, bounds.low, bounds.high, bounds.sigfig
        ));
    }
    Ok(plain)
}

/// The histogram `text` encodes, which must have `bounds`; never resizes.
/// What the text declares (lengths, bounds) is checked before anything is
/// allocated by it, so a hostile text costs no more than a real one.
pub(crate) fn from_text<T: Counter>(text: &str, bounds: Bounds) -> Result<Histogram<T>, String> {
    let text = text.trim();
    // Base64 of the largest encoding, with room for deflate's worst case.
    let longest = (bounds.max_encoded() + bounds.max_encoded() / 100 + 64) / 3 * 4 + 4;
    if text.len() > longest {
        return Err(format!(
            "a histogram text of {} characters, longer than any histogram of its bounds ({longest})",
            text.len()
        ));
    }
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| format!("not base64: {e}"))?;
    let plain = plain_v2(&bytes, bounds)?;
    let mut h: Histogram<T> = Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| format!("not an HdrHistogram V2 encoding: {e:?}"))?;
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

    /// `bytes` as a V2 compressed text: the cookie, their length, zlib.
    fn packed(plain: &[u8]) -> String {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), Compression::fast());
        z.write_all(plain).unwrap();
        let z = z.finish().unwrap();
        let mut bytes = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        bytes.extend_from_slice(&(z.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&z);
        STANDARD.encode(bytes)
    }

    /// A plain V2 header of `B`'s bounds declaring `declared` payload bytes.
    fn header(declared: u32) -> Vec<u8> {
        let mut h = V2_COOKIE.to_be_bytes().to_vec();
        h.extend_from_slice(&declared.to_be_bytes());
        h.extend_from_slice(&0u32.to_be_bytes());
        h.extend_from_slice(&u32::from(B.sigfig).to_be_bytes());
        h.extend_from_slice(&B.low.to_be_bytes());
        h.extend_from_slice(&B.high.to_be_bytes());
        h.extend_from_slice(&1f64.to_be_bytes());
        h
    }

    /// What a text declares is checked against what it holds before any
    /// of it sizes an allocation: a 2 GiB payload declared in 40 bytes, a
    /// compressed length that is not the one there, 8 MiB of zeros
    /// inflated from 8 KiB.
    #[test]
    fn declared_sizes_are_checked_before_allocating() {
        let real = to_text(&B.histogram::<u64>());
        assert!(from_text::<u64>(&real, B).is_ok());
        let e = from_text::<u64>(&packed(&header(0x7fff_ffff)), B).unwrap_err();
        assert!(
            e.contains("declares 2147483647 payload bytes but holds 0"),
            "{e}"
        );
        let mut bytes = STANDARD.decode(&real).unwrap();
        bytes[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let e = from_text::<u64>(&STANDARD.encode(bytes), B).unwrap_err();
        assert!(e.contains("declares 4294967295 compressed bytes"), "{e}");
        let mut bomb = header(8 << 20);
        bomb.resize(bomb.len() + (8 << 20), 0);
        let text = packed(&bomb);
        assert!(text.len() < 64 << 10, "{}", text.len());
        let e = from_text::<u64>(&text, B).unwrap_err();
        assert!(e.contains("inflates past 599080 bytes"), "{e}");
        let long = "A".repeat(1 << 20);
        assert!(
            from_text::<u64>(&long, B)
                .unwrap_err()
                .contains("longer than")
        );
    }

    /// The bound on an encoding holds for the fullest histogram of each
    /// bounds in use: every counter non-zero.
    #[test]
    fn the_largest_encoding_is_within_the_bound() {
        for b in [B, crate::metrics::timeline::BOUNDS] {
            let mut h: Histogram<u64> = b.histogram();
            for v in h
                .iter_all()
                .map(|v| v.value_iterated_to())
                .collect::<Vec<_>>()
            {
                h.saturating_record_n(v, u64::from(u32::MAX));
            }
            let mut plain = Vec::new();
            V2Serializer::new().serialize(&h, &mut plain).unwrap();
            assert!(
                plain.len() <= b.max_encoded(),
                "{} > {}",
                plain.len(),
                b.max_encoded()
            );
            assert_eq!(from_text::<u64>(&to_text(&h), b).unwrap(), h);
        }
    }
}
