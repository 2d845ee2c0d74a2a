//! Unsigned integers as ASCII digits, appended to a byte buffer: decimal for
//! the numbers in heads, bodies and event lines (lengths, counts, ids), hex
//! for chunk sizes, and the decimal width of a number so an event's length
//! can be known before it is written. The server's responses and the events
//! log write these per request, where `fmt` machinery would cost more than
//! the rest of a small response; so digits go straight into the caller's
//! buffer, through a stack array, with no allocation beyond the buffer's own
//! growth.

/// "00" to "99", for two digits per division.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Appends `n` in decimal, without leading zeros. Two digits per step: a
/// Unix timestamp in ms is 13 digits, and the events log writes several
/// per request.
#[inline]
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = n as usize * 2;
        i -= 2;
        digits[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        digits[i] = b'0' + n as u8;
    }
    out.extend_from_slice(&digits[i..]);
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
