//! Conversation ids: random UUID v4 drawn from the run's seeded generator
//! (reproducible, allocation-free, safe in a forked child) and their
//! canonical text written without allocating. Written by workers into
//! requests and by the events log into its lines.

use crate::rng::Rng;

/// A random UUID v4.
pub(crate) fn new_uuid(rng: &mut Rng) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
    b[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    b
}

/// Each byte's two lowercase hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 0xf]];
        i += 1;
    }
    t
};

/// The canonical 36-character form, written into `out` without allocating.
pub(crate) fn write_uuid(id: &[u8; 16], out: &mut [u8; 36]) {
    let mut hex = [0u8; 32];
    write_hex(id, &mut hex);
    out[..8].copy_from_slice(&hex[..8]);
    out[9..13].copy_from_slice(&hex[8..12]);
    out[14..18].copy_from_slice(&hex[12..16]);
    out[19..23].copy_from_slice(&hex[16..20]);
    out[24..].copy_from_slice(&hex[20..]);
    for dash in [8, 13, 18, 23] {
        out[dash] = b'-';
    }
}

/// The canonical form as a `String` (reports and conversation building).
pub(crate) fn uuid_text(id: &[u8; 16]) -> String {
    let mut buf = [0u8; 36];
    write_uuid(id, &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The id of one request (MLPerf's `sample_uuid`): its conversation's id
/// for the first turn, and for turn `t > 1` that id with `t − 1` folded
/// into its last two bytes, so every turn has its own id and the id of a
/// single-turn request is the one it was sent with (`x-request-id`). The
/// version and variant bits are untouched, so it is still a UUID v4.
pub(crate) fn sample_uuid(conv_id: &[u8; 16], turn: u16) -> [u8; 16] {
    let mut id = *conv_id;
    let k = turn.saturating_sub(1).to_be_bytes();
    id[14] ^= k[0];
    id[15] ^= k[1];
    id
}

/// The 32-character hex form without dashes (Python's `uuid.hex`), written
/// into `out` without allocating.
pub(crate) fn write_hex(id: &[u8; 16], out: &mut [u8; 32]) {
    for (pair, byte) in out.chunks_exact_mut(2).zip(id) {
        pair.copy_from_slice(&HEX_PAIRS[*byte as usize]);
    }
}

/// The hex form as a `String`.
#[cfg(test)]
pub(crate) fn hex_text(id: &[u8; 16]) -> String {
    let mut buf = [0u8; 32];
    write_hex(id, &mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The placeholder prebuilt requests carry where the id goes.
pub(crate) const UUID_PLACEHOLDER: &str = "00000000-0000-4000-8000-000000000000";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_v4_and_distinct() {
        let mut rng = Rng::seeded(1);
        let a = uuid_text(&new_uuid(&mut rng));
        let b = uuid_text(&new_uuid(&mut rng));
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        assert_eq!(a.matches('-').count(), 4);
    }

    #[test]
    fn the_text_is_each_byte_in_hex_with_dashes_in_place() {
        let mut rng = Rng::seeded(3);
        for _ in 0..200 {
            let id = new_uuid(&mut rng);
            let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(hex_text(&id), hex);
            let dashed = [
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..],
            ]
            .join("-");
            assert_eq!(uuid_text(&id), dashed);
        }
    }

    #[test]
    fn sample_uuids_are_hex_and_distinct_per_turn() {
        let conv = new_uuid(&mut Rng::seeded(2));
        assert_eq!(sample_uuid(&conv, 1), conv);
        assert_eq!(sample_uuid(&conv, 0), conv);
        let ids: std::collections::HashSet<[u8; 16]> =
            (1..=1000).map(|t| sample_uuid(&conv, t)).collect();
        assert_eq!(ids.len(), 1000);
        let hex = hex_text(&conv);
        assert_eq!(hex, uuid_text(&conv).replace('-', ""));
        assert_eq!(hex.len(), 32);
        let t2 = uuid_text(&sample_uuid(&conv, 2));
        assert_eq!(&t2[14..15], "4");
    }
}
