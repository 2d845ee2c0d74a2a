//! `serve --cache-repeats`: which request bodies a worker has seen, so a
//! repeat can be answered at once, as an output cache would. A worker keeps
//! 64-bit hashes of the bodies in a fixed table made once at start-up: sets
//! of `WAYS` hashes, each set in first-in-first-out order, so looking up or
//! inserting one never allocates and memory stays bounded however many
//! distinct prompts arrive. The trade-off: eviction is FIFO within a set,
//! not across the whole table, and two bodies whose hashes collide count as
//! one repeat (one in 2^64 per pair).

use std::hash::Hasher;

/// Hashes per set.
const WAYS: usize = 8;
/// Sets in the table (a power of two); with `WAYS`, 32768 hashes, 256 KiB.
const SETS: usize = 1 << 12;

/// The bodies one worker has seen, as hashes.
pub(crate) struct RepeatCache {
    /// Each set newest first; 0 is an empty way (no hash is stored as 0).
    sets: Box<[[u64; WAYS]]>,
}

impl RepeatCache {
    pub(crate) fn new() -> Self {
        RepeatCache {
            sets: vec![[0; WAYS]; SETS].into_boxed_slice(),
        }
    }

    /// Whether this request body, sent to the format `tag`, was seen before;
    /// remembers it when not, pushing the oldest hash of its set out.
    pub(crate) fn repeat(&mut self, tag: u8, body: &[u8]) -> bool {
        self.seen(hash(tag, body))
    }

    fn seen(&mut self, h: u64) -> bool {
        let set = &mut self.sets[(h as usize) & (SETS - 1)];
        if set.contains(&h) {
            return true;
        }
        set.copy_within(0..WAYS - 1, 1);
        set[0] = h;
        false
    }
}

/// A body's hash, never 0. `DefaultHasher::new` has fixed keys: the same
/// body hashes the same in every worker of one binary.
fn hash(tag: u8, body: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    h.write_u8(tag);
    h.write(body);
    h.finish().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_sight_is_a_repeat() {
        let mut c = RepeatCache::new();
        assert!(!c.repeat(0, b"{\"prompt\":\"a\"}"));
        assert!(c.repeat(0, b"{\"prompt\":\"a\"}"));
        assert!(!c.repeat(0, b"{\"prompt\":\"b\"}"));
        // Another format with the same bytes is another request.
        assert!(!c.repeat(1, b"{\"prompt\":\"a\"}"));
        assert!(c.repeat(0, b"{\"prompt\":\"b\"}"));
    }

    #[test]
    fn a_full_set_forgets_its_oldest() {
        let mut c = RepeatCache::new();
        // WAYS + 1 hashes that all land in set 0.
        let hs: Vec<u64> = (1..=WAYS as u64 + 1).map(|i| i * SETS as u64).collect();
        for &h in &hs {
            assert!(!c.seen(h));
        }
        assert!(!c.seen(hs[0]), "the oldest was pushed out");
        // Re-inserting it pushed out the next oldest; the newest stay.
        assert!(!c.seen(hs[1]));
        for &h in &hs[3..] {
            assert!(c.seen(h));
        }
        // Memory is the table and nothing more.
        assert_eq!(c.sets.len() * WAYS * 8, 256 * 1024);
    }
}
