//! Unsigned integers as ASCII decimal, appended to a byte buffer. Response
//! heads and bodies carry a handful of numbers each (lengths, counts, ids);
//! formatting them with `fmt` machinery costs more than the rest of a small
//! response, so this writes digits straight into the caller's buffer.

/// Appends `n` in decimal, without leading zeros.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
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
        for n in [0, 1, 9, 10, 99, 100, 12_345, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }
}
