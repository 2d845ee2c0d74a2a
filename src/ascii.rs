//! Unsigned integers as ASCII digits, appended to a byte buffer: decimal for
//! the numbers in heads, bodies and event lines (lengths, counts, ids), hex
//! for chunk sizes, and the decimal width of a number so an event's length
//! can be known before it is written. The server's responses and the events
//! log write these per request, where `fmt` machinery would cost more than
//! the rest of a small response; so digits go straight into the caller's
//! buffer, through a stack array, with no allocation beyond the buffer's own
//! growth, eight at a time without a division loop.

/// Eight decimal digits of `x` (below 10^8), leading zeros included, in
/// order, one per byte of a little-endian `u64` (values 0 to 9, not yet
/// ASCII), with no division: the two 4-digit halves, then their 2-digit
/// quarters, then the digits, each step on all lanes of one `u64` at once
/// (the halves in 32-bit lanes, the quarters in 16-bit ones; the
/// multiply-and-shift divisions are exact for the lane values they meet).
#[inline]
fn eight_digits(x: u64) -> u64 {
    let hi = x / 10_000;
    let merged = hi | ((x - hi * 10_000) << 32);
    // Each lane over 100: 10486 / 2^20 is 1/100 to within the error 10^4
    // values allow.
    let top = ((merged * 10_486) >> 20) & ((0x7f << 32) | 0x7f);
    let bot = merged - 100 * top;
    // Four 2-digit values, most significant in the lowest lane.
    let pairs = (bot << 16) + top;
    // Each over 10: 103 / 2^10 is 1/10 for values below 100.
    let digits = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    digits + ((pairs - 10 * digits) << 8)
}

/// `eight_digits` as ASCII.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// The decimal digits of `n`, without leading zeros, written into the end
/// of `buf`. A Unix timestamp in µs is 16 digits, and the events log writes
/// several per request: eight digits take a few multiplications, no
/// division loop, and the leading zeros are counted off the top eight's
/// zero bytes.
#[inline]
pub(crate) fn digits_u64(n: u64, buf: &mut [u8; 24]) -> &[u8] {
    const E8: u64 = 100_000_000;
    if n < 10 {
        buf[23] = b'0' + n as u8;
        return &buf[23..];
    }
    let (rest, low) = (n / E8, n % E8);
    let (top, at) = if rest == 0 {
        (eight_digits(low), 16)
    } else {
        buf[16..].copy_from_slice(&(eight_digits(low) + ZEROS).to_le_bytes());
        if rest < E8 {
            (eight_digits(rest), 8)
        } else {
            buf[8..16].copy_from_slice(&(eight_digits(rest % E8) + ZEROS).to_le_bytes());
            (eight_digits(rest / E8), 0)
        }
    };
    buf[at..at + 8].copy_from_slice(&(top + ZEROS).to_le_bytes());
    // The top eight is not zero: its leading zero digits are zero bytes.
    &buf[at + (top.trailing_zeros() / 8) as usize..]
}

/// Appends `n` in decimal, without leading zeros.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    let mut buf = [0u8; 24];
    out.extend_from_slice(digits_u64(n, &mut buf));
}

/// How many bytes `push_u64(n)` appends.
#[inline]
pub(crate) fn len_u64(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends `n` in lowercase hex, without leading zeros.
#[inline]
pub(crate) fn push_hex(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 2 * size_of::<usize>()];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_display() {
        let some = [0, 1, 9, 10, 99, 100, 12_345, u32::MAX as u64, u64::MAX];
        for n in some.into_iter().chain(0..2000).chain([1_796_197_718_123]) {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
            assert_eq!(len_u64(n), out.len());
            out.clear();
            push_hex(&mut out, n as usize);
            assert_eq!(out, format!("{:x}", n as usize).as_bytes());
        }
    }

    #[test]
    fn eight_digits_match_display_for_every_value_seen() {
        let mut rng = crate::rng::Rng::seeded(8);
        let edges = (0..100_000).chain((99_900_000..100_000_000).step_by(7));
        for x in edges.chain((0..200_000).map(|_| rng.below(100_000_000))) {
            let text = (eight_digits(x) + ZEROS).to_le_bytes();
            assert_eq!(text, format!("{x:08}").as_bytes(), "{x}");
        }
        for _ in 0..200_000 {
            let bits = rng.below(64) as u32;
            let n = rng.next_u64() >> (63 - bits);
            let mut buf = [0u8; 24];
            assert_eq!(digits_u64(n, &mut buf), n.to_string().as_bytes(), "{n}");
        }
    }

    #[test]
    fn every_width_and_appends() {
        let mut n = 1u64;
        for width in 1..=20 {
            for v in [n, n.saturating_mul(10) - 1] {
                let mut out = b"x".to_vec();
                push_u64(&mut out, v);
                assert_eq!(out, format!("x{v}").as_bytes());
                assert_eq!(len_u64(v), v.to_string().len(), "{v}");
            }
            assert_eq!(len_u64(n), width);
            n = n.saturating_mul(10);
        }
        for (v, s) in [(15, "f"), (16, "10"), (0xdead_beef, "deadbeef")] {
            let mut out = Vec::new();
            push_hex(&mut out, v);
            assert_eq!(out, s.as_bytes());
        }
        let mut out = Vec::new();
        push_hex(&mut out, usize::MAX);
        assert_eq!(out.len(), 2 * size_of::<usize>());
        assert!(out.iter().all(|&b| b == b'f'));
    }
}
