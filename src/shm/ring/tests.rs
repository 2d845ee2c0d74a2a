//! The rings' tests: layout, every way a slot or byte ring fills, wraps and
//! pads, a model check of the byte ring, and both kinds across `fork()`.

use super::*;
use crate::rng::Rng;
use crate::shm::test_util::{Deadline, fork_child};
use std::collections::VecDeque;
use std::time::Duration;

fn slot_ring<T: Plain + Copy>(capacity: usize) -> (SlotRing<T>, SlotProducer<T>, SlotConsumer<T>) {
    let ring = SlotRing::new(capacity).unwrap();
    let (p, c) = (ring.producer().unwrap(), ring.consumer().unwrap());
    (ring, p, c)
}

fn byte_ring(capacity: usize) -> (ByteRing, ByteProducer, ByteConsumer) {
    let ring = ByteRing::new(capacity).unwrap();
    let (p, c) = (ring.producer().unwrap(), ring.consumer().unwrap());
    (ring, p, c)
}

#[test]
fn each_end_is_handed_out_once() {
    let ring = SlotRing::<u64>::new(4).unwrap();
    let p = ring.producer().unwrap();
    assert!(ring.producer().is_none());
    drop(p);
    assert!(
        ring.producer().is_none(),
        "not even after the first is dropped"
    );
    assert!(ring.consumer().is_some());
    assert!(ring.consumer().is_none());
    let ring = ByteRing::new(64).unwrap();
    assert!(ring.consumer().is_some());
    assert!(ring.consumer().is_none());
    assert!(ring.producer().is_some());
    assert!(ring.producer().is_none());
}

#[test]
fn handles_keep_the_mapping() {
    let ring = SlotRing::<u32>::new(2).unwrap();
    let (mut p, mut c) = (ring.producer().unwrap(), ring.consumer().unwrap());
    drop(ring);
    p.push(5).unwrap();
    assert_eq!(c.pop(), Some(5));
}

#[test]
fn sizes_and_layout() {
    assert_eq!(slot_ring_bytes::<u64>(4), 384);
    assert_eq!(slot_ring_bytes::<[u8; 32]>(1024), 256 + 32 * 1024);
    assert_eq!(byte_ring_bytes(64), 384);
    assert_eq!(std::mem::offset_of!(Header, head), 0);
    assert_eq!(std::mem::offset_of!(HeadLines, head), 0);
    assert_eq!(std::mem::offset_of!(HeadLines, meta), 64);
    assert_eq!(std::mem::offset_of!(Header, tail), 128);
    let h = SlotRing::<u8>::new(4).unwrap();
    let base = h.map.as_ptr() as usize;
    // SAFETY: offset 0 holds the header `new` wrote.
    let header = unsafe { &*h.map.as_ptr().cast::<Header>() };
    assert_eq!(&*header.head as *const HeadLines as usize - base, 0);
    assert_eq!(&header.head.meta as *const Line<Meta> as usize - base, 64);
    assert_eq!(&*header.tail as *const AtomicU64 as usize - base, 128);
}

#[test]
#[should_panic(expected = "not a power of two")]
fn slot_capacity_must_be_a_power_of_two() {
    slot_ring_bytes::<u32>(3);
}

#[test]
#[should_panic(expected = "no ring of this kind")]
fn attach_checks_the_kind() {
    let ring = ByteRing::new(64).unwrap();
    // SAFETY: the attach is meant to fail before any handle exists.
    unsafe { SlotConsumer::<u64>::attach(&ring.map, 0) };
}

#[test]
fn slot_ring_wraps_many_times() {
    let (_map, mut p, mut c) = slot_ring::<u64>(8);
    let mut next_pop = 0u64;
    for i in 0..10_000u64 {
        assert_eq!(p.push(i), Ok(()));
        if i % 3 != 0 {
            assert_eq!(c.pop(), Some(next_pop));
            next_pop += 1;
        }
        if p.len() == 8 {
            while let Some(x) = c.pop() {
                assert_eq!(x, next_pop);
                next_pop += 1;
            }
        }
    }
    while let Some(x) = c.pop() {
        assert_eq!(x, next_pop);
        next_pop += 1;
    }
    assert_eq!(next_pop, 10_000);
    assert!(c.is_empty());
}

#[test]
fn slot_ring_full_and_empty() {
    for cap in [1usize, 2, 4, 64] {
        let (_map, mut p, mut c) = slot_ring::<u32>(cap);
        assert_eq!(c.pop(), None);
        assert!(c.is_empty() && p.is_empty());
        for round in 0..5u32 {
            for i in 0..cap as u32 {
                assert_eq!(p.push(round * 1000 + i), Ok(()), "cap {cap}");
            }
            assert_eq!(p.len(), cap);
            assert_eq!(c.len(), cap);
            assert_eq!(p.push(7), Err(7), "cap {cap} should be full");
            for i in 0..cap as u32 {
                assert_eq!(c.pop(), Some(round * 1000 + i), "cap {cap}");
            }
            assert_eq!(c.pop(), None);
            assert!(c.is_empty());
        }
    }
}

#[test]
fn slot_ring_capacity_one_and_two_alternate() {
    for cap in [1usize, 2] {
        let (_map, mut p, mut c) = slot_ring::<u16>(cap);
        for i in 0..1000u16 {
            assert_eq!(p.push(i), Ok(()));
            if cap == 1 {
                assert_eq!(p.push(i), Err(i));
            }
            assert_eq!(c.pop(), Some(i));
            assert_eq!(c.pop(), None);
        }
    }
}

#[test]
fn slot_ring_refreshes_stale_caches() {
    let (_map, mut p, mut c) = slot_ring::<u64>(4);
    // The producer's cached head says full until it rereads the atomic.
    for i in 0..4 {
        p.push(i).unwrap();
    }
    assert_eq!(p.cached_head, 0);
    assert_eq!(c.pop(), Some(0));
    assert_eq!(p.push(4), Ok(()));
    assert_eq!(p.cached_head, 1);
    // The consumer's cached tail says empty until it rereads the atomic.
    while c.pop().is_some() {}
    let seen = c.cached_tail;
    p.push(5).unwrap();
    assert_eq!(c.cached_tail, seen);
    assert_eq!(c.pop(), Some(5));
    // And the cache is used, not reread, while it says there is more.
    p.push(6).unwrap();
    p.push(7).unwrap();
    assert_eq!(c.pop(), Some(6));
    let t = c.cached_tail;
    assert_eq!(c.pop(), Some(7));
    assert_eq!(c.cached_tail, t);
}

#[test]
fn slot_ring_carries_structs() {
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(C, align(16))]
    struct Issue {
        sample: u32,
        t_sched: u64,
    }
    // SAFETY: integers only: valid as zero, no pointers.
    unsafe impl Plain for Issue {}
    let (_map, mut p, mut c) = slot_ring::<Issue>(16);
    for i in 0..100 {
        let item = Issue {
            sample: i,
            t_sched: u64::from(i) * 3,
        };
        p.push(item).unwrap();
        assert_eq!(c.pop(), Some(item));
    }
}

fn pop_vec(c: &mut ByteConsumer) -> Option<Vec<u8>> {
    c.pop_with(|b| {
        assert_eq!(b.as_ptr() as usize % 8, 0, "record not 8-byte aligned");
        b.to_vec()
    })
    .expect("no corrupt record")
}

#[test]
fn byte_ring_variable_sizes_and_alignment() {
    let (_map, mut p, mut c) = byte_ring(1024);
    assert_eq!(p.max_len(), 248);
    for len in 0..=248usize {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        p.push_parts(&[&data]).unwrap();
        assert_eq!(pop_vec(&mut c).unwrap(), data);
    }
    assert_eq!(pop_vec(&mut c), None);
}

#[test]
fn byte_ring_zero_length_records() {
    let (_map, mut p, mut c) = byte_ring(64);
    for _ in 0..8 {
        p.push_with(0, |b| assert!(b.is_empty())).unwrap();
    }
    assert_eq!(p.push_with(0, |_| ()), Err(PushError::Full));
    for _ in 0..8 {
        assert_eq!(c.pop_with(|b| b.len()), Ok(Some(0)));
    }
    assert!(c.is_empty());
}

#[test]
fn byte_ring_too_large() {
    let (_map, mut p, mut c) = byte_ring(4096);
    assert_eq!(p.max_len(), 1016);
    assert_eq!(p.push_with(1017, |_| ()), Err(PushError::TooLarge));
    assert_eq!(p.push_with(usize::MAX, |_| ()), Err(PushError::TooLarge));
    assert_eq!(
        p.push_parts(&[&[0; 1000], &[0; 17]]),
        Err(PushError::TooLarge)
    );
    // Lengths that round up to the limit are fine.
    assert_eq!(p.push_with(1016, |b| b.fill(1)), Ok(()));
    assert_eq!(p.push_with(1009, |b| b.fill(2)), Ok(()));
    assert_eq!(c.pop_with(|b| (b.len(), b[0])), Ok(Some((1016, 1))));
    assert_eq!(c.pop_with(|b| (b.len(), b[0])), Ok(Some((1009, 2))));
}

#[test]
fn byte_ring_exact_fill_to_full() {
    let (_map, mut p, mut c) = byte_ring(256);
    // 16 records of 16 bytes (8 header + 8 payload) fill it exactly.
    for round in 0..3u8 {
        for i in 0..16u8 {
            p.push_with(5 + (i % 4) as usize, |b| b.fill(i ^ round))
                .unwrap();
        }
        assert_eq!(p.push_with(0, |_| ()), Err(PushError::Full));
        for i in 0..16u8 {
            let len = 5 + (i % 4) as usize;
            assert_eq!(pop_vec(&mut c).unwrap(), vec![i ^ round; len]);
        }
        assert!(c.is_empty());
    }
}

#[test]
fn byte_ring_pads_instead_of_wrapping() {
    let (_map, mut p, mut c) = byte_ring(256);
    // Move to offset 200: records of 40 (32 payload) + 40 + 40 + 40 + 40.
    for i in 0..5u8 {
        p.push_with(32, |b| b.fill(i)).unwrap();
        assert_eq!(pop_vec(&mut c).unwrap(), vec![i; 32]);
    }
    assert_eq!(p.tail, 200);
    // 64 bytes do not fit in the 56 left: a pad covers them and the record
    // starts at offset 0, position 256 (the second lap).
    p.push_with(56, |b| b.fill(9)).unwrap();
    assert_eq!(p.tail, 256 + 64);
    let ptr = c.pop_with(|b| {
        assert_eq!(b, &[9; 56][..]);
        b.as_ptr() as usize
    });
    assert_eq!(ptr, Ok(Some(c.data.as_ptr() as usize + 8)));
    assert_eq!(c.head, 320);
    assert!(c.is_empty());
}

#[test]
fn byte_ring_pad_needs_room_for_both() {
    let (_map, mut p, mut c) = byte_ring(256);
    for _ in 0..3 {
        p.push_with(56, |_| ()).unwrap(); // 64 bytes each: tail at 192
    }
    c.pop_with(|_| ()).unwrap().unwrap(); // head at 64: 128 free, 64 before the end
    // A 56-byte payload record (64) fits exactly before the end.
    p.push_with(56, |_| ()).unwrap();
    c.pop_with(|_| ()).unwrap().unwrap(); // head 128, tail 256: 128 free, 0 to the end
    // Now at index 0: 64 + 64 = 128 bytes fit.
    p.push_with(56, |_| ()).unwrap();
    p.push_with(56, |_| ()).unwrap();
    assert_eq!(p.push_with(0, |_| ()), Err(PushError::Full));
    // Head at 192, tail at 256+128=384 (index 128): 64 free, 128 to the
    // end — a 64-byte record fits.
    c.pop_with(|_| ()).unwrap().unwrap();
    p.push_with(56, |_| ()).unwrap();
    // Index 192 with 64 bytes to the end, but the ring is full.
    assert_eq!(p.push_with(0, |_| ()), Err(PushError::Full));
    for _ in 0..4 {
        c.pop_with(|_| ()).unwrap().unwrap();
    }
    assert!(c.is_empty());
    // Empty at index 192: a 64-byte record fits exactly in the 64 bytes
    // before the end, with no pad.
    p.push_with(56, |_| ()).unwrap();
    assert_eq!(p.tail % 256, 0);
}

#[test]
fn byte_ring_wrap_when_end_is_short_and_ring_nearly_full() {
    let (_map, mut p, mut c) = byte_ring(256);
    // tail at index 240 with 16 bytes to the end.
    for _ in 0..15 {
        p.push_with(8, |_| ()).unwrap();
    }
    for _ in 0..15 {
        c.pop_with(|_| ()).unwrap().unwrap();
    }
    // Empty, index 240: a 24-byte payload (32-byte record) needs 16 + 32.
    p.push_with(24, |b| b.fill(3)).unwrap();
    assert_eq!(p.tail, 256 + 32);
    // Used is now 48 (pad + record); 208 free, index 32.
    assert_eq!(pop_vec(&mut c).unwrap(), vec![3; 24]);
}

#[test]
fn byte_ring_refreshes_stale_caches() {
    let (_map, mut p, mut c) = byte_ring(64);
    for i in 0..4u8 {
        p.push_with(8, |b| b.fill(i)).unwrap();
    }
    assert_eq!(p.push_with(8, |_| ()), Err(PushError::Full));
    assert_eq!(p.cached_head, 0);
    assert_eq!(pop_vec(&mut c).unwrap(), vec![0; 8]);
    p.push_with(8, |b| b.fill(4)).unwrap();
    assert_eq!(p.cached_head, 16);
    for i in 1..5u8 {
        assert_eq!(pop_vec(&mut c).unwrap(), vec![i; 8]);
    }
    let seen = c.cached_tail;
    p.push_with(1, |b| b[0] = 5).unwrap();
    assert_eq!(c.cached_tail, seen);
    assert_eq!(pop_vec(&mut c).unwrap(), vec![5]);
    assert!(c.is_empty());
}

/// Writes `word` as the record header at data offset `index`, as a
/// producer with a memory bug would.
fn scribble(p: &mut ByteProducer, index: usize, word: u64) {
    // SAFETY: test-only: `index` is a multiple of 8 inside the data area.
    unsafe { p.data.add(index).cast::<u64>().write(word.to_le()) };
}

#[test]
fn corrupt_headers_are_errors_not_panics() {
    let (_map, mut p, mut c) = byte_ring(256);
    // A length past the end of the ring.
    p.push_corrupt().unwrap();
    let err = c.pop_with(|_| ()).unwrap_err();
    assert_eq!(
        err,
        Corrupt {
            word: 257,
            offset: 0
        }
    );
    assert!(err.to_string().contains("0x101 at offset 0"), "{err}");
    // The ring is left as it was: the same answer again, nothing consumed.
    assert_eq!(c.pop_with(|_| ()), Err(err));
    assert_eq!(c.head, 0);

    // A length within the ring but past the published bytes.
    let (_map, mut p, mut c) = byte_ring(256);
    p.push_with(8, |b| b.fill(1)).unwrap();
    scribble(&mut p, 0, 40);
    assert_eq!(
        c.pop_with(|_| ()),
        Err(Corrupt {
            word: 40,
            offset: 0
        })
    );

    // A pad with no record after it would move head past tail.
    let (_map, mut p, mut c) = byte_ring(256);
    for _ in 0..3 {
        p.push_with(56, |_| ()).unwrap();
        c.pop_with(|_| ()).unwrap().unwrap();
    }
    p.push_with(56, |_| ()).unwrap(); // index 192, the last 64 bytes
    scribble(&mut p, 192, u64::MAX);
    assert_eq!(
        c.pop_with(|_| ()),
        Err(Corrupt {
            word: u64::MAX,
            offset: 192
        })
    );
    // A pad at offset 0 says the whole ring is padding.
    let (_map, mut p, mut c) = byte_ring(64);
    p.push_with(8, |_| ()).unwrap();
    scribble(&mut p, 0, u64::MAX);
    assert!(c.pop_with(|_| ()).is_err());
}

/// Random bytes over the data area and random tails: the consumer answers
/// with a record inside the ring, an error or nothing, and never panics.
#[test]
fn scribbled_rings_never_panic() {
    let mut rng = Rng::seeded(8);
    let mut errors = 0;
    for _ in 0..2_000 {
        let (_map, mut p, mut c) = byte_ring(256);
        for _ in 0..rng.below(6) {
            let _ = p.push_with(rng.below(56) as usize, |b| b.fill(7));
        }
        for _ in 0..rng.below(4) {
            let at = rng.below(32) as usize * 8;
            let word = match rng.below(3) {
                0 => u64::MAX,
                1 => rng.below(300),
                _ => rng.next_u64(),
            };
            scribble(&mut p, at, word);
        }
        if rng.below(2) == 0 {
            p.header().tail.store(rng.next_u64(), Ordering::Release);
        }
        for _ in 0..8 {
            match c.pop_with(|b| b.len()) {
                Ok(Some(len)) => assert!(len <= 256 - 8),
                Ok(None) => break,
                Err(_) => {
                    errors += 1;
                    break;
                }
            }
        }
    }
    assert!(errors > 100, "{errors}");
}

fn record_of(seq: u64, len: usize) -> Vec<u8> {
    let mut m = Rng::seeded(seq);
    (0..len).map(|_| m.next_u64() as u8).collect()
}

/// A reference model of the byte ring in plain arithmetic (offsets in
/// `0..cap`, bytes each queued record occupies including the pad in front
/// of it), checked against the ring for every push's outcome and every
/// pop's bytes.
#[test]
fn byte_ring_matches_a_model() {
    for (cap, seed) in [(64usize, 1u64), (256, 2), (1024, 3), (4096, 4)] {
        let (_map, mut p, mut c) = byte_ring(cap);
        let max = p.max_len();
        let mut model: VecDeque<(Vec<u8>, usize)> = VecDeque::new();
        let mut model_tail = 0usize;
        let mut rng = Rng::seeded(seed);
        let mut seq = 0u64;
        let (mut pushed, mut fulls, mut pads) = (0, 0, 0);
        for _ in 0..200_000 {
            if rng.below(100) < 55 {
                // Mostly small, sometimes up to and past the limit.
                let len = match rng.below(10) {
                    0 => rng.below(max as u64 + 9) as usize,
                    1..=3 => 0,
                    _ => rng.below((max as u64).min(40) + 1) as usize,
                };
                let data = record_of(seq, len);
                let rec = 8 + len.next_multiple_of(8);
                let to_end = cap - model_tail;
                let need = if rec <= to_end { rec } else { to_end + rec };
                let free = cap - model.iter().map(|r| r.1).sum::<usize>();
                let got = p.push_parts(&[&data[..len / 2], &data[len / 2..]]);
                if rec > cap / 4 {
                    assert_eq!(got, Err(PushError::TooLarge), "len {len}");
                } else if need > free {
                    assert_eq!(
                        got,
                        Err(PushError::Full),
                        "len {len} need {need} free {free}"
                    );
                    fulls += 1;
                } else {
                    assert_eq!(got, Ok(()), "len {len} need {need} free {free}");
                    pushed += 1;
                    pads += usize::from(need > rec);
                    seq += 1;
                    model.push_back((data, need));
                    model_tail = (model_tail + need) % cap;
                }
            } else {
                assert_eq!(pop_vec(&mut c), model.pop_front().map(|r| r.0));
            }
        }
        while let Some(expect) = model.pop_front() {
            assert_eq!(pop_vec(&mut c).unwrap(), expect.0);
        }
        assert_eq!(pop_vec(&mut c), None);
        assert!(
            pushed > 10_000 && fulls > 100 && pads > 100,
            "cap {cap}: pushed {pushed} fulls {fulls} pads {pads}"
        );
    }
}

// --- across fork() -----------------------------------------------------
//
// The child may not allocate, lock, print or panic (the test harness is
// multithreaded): it runs ring operations, `Rng` and raw syscalls only and
// reports through its exit code.

const N: u64 = 100_000;
const CHILD_LIMIT: Duration = Duration::from_secs(10);

/// FNV-1a: a checksum a child can compute without allocating.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Payload length for record `seq`: 16 (sequence number and checksum) to
/// `max`.
fn len_of(seq: u64, max: usize) -> usize {
    16 + (Rng::seeded(seq ^ 0xabcd).next_u64() % (max as u64 - 15)) as usize
}

/// `[seq][bytes from Rng::seeded(seq)…][fnv of everything before]`.
fn fill_record(seq: u64, buf: &mut [u8]) {
    let n = buf.len();
    buf[..8].copy_from_slice(&seq.to_le_bytes());
    let mut m = Rng::seeded(seq);
    for b in &mut buf[8..n - 8] {
        *b = m.next_u64() as u8;
    }
    let sum = fnv(&buf[..n - 8]);
    buf[n - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// 0 when `buf` is record `seq` of the right length, else a reason code.
fn check_record(seq: u64, max: usize, buf: &[u8]) -> i32 {
    let n = buf.len();
    if n != len_of(seq, max) {
        return 11;
    }
    if buf[..8] != seq.to_le_bytes() {
        return 12;
    }
    if buf[n - 8..] != fnv(&buf[..n - 8]).to_le_bytes() {
        return 13;
    }
    let mut m = Rng::seeded(seq);
    if buf[8..n - 8].iter().any(|&b| b != m.next_u64() as u8) {
        return 14;
    }
    0
}

/// Pushes records `0..N`, spinning while full; false on timeout.
fn produce_records(p: &mut ByteProducer, deadline: Deadline) -> bool {
    let max = p.max_len();
    let mut seq = 0;
    while seq < N {
        match p.push_with(len_of(seq, max), |b| fill_record(seq, b)) {
            Ok(()) => seq += 1,
            Err(_) if deadline.passed() => return false,
            Err(_) => deadline.relax(),
        }
    }
    true
}

/// Pops and checks records `0..N`; 0 or a reason code.
fn consume_records(c: &mut ByteConsumer, max: usize, deadline: Deadline) -> i32 {
    let mut seq = 0;
    while seq < N {
        match c.pop_with(|b| check_record(seq, max, b)) {
            Ok(Some(0)) => seq += 1,
            Ok(Some(code)) => return code,
            Ok(None) if deadline.passed() => return 20,
            Ok(None) => deadline.relax(),
            Err(_) => return 22,
        }
    }
    if c.is_empty() { 0 } else { 21 }
}

const CROSS_CAP: usize = 4096;

#[test]
fn byte_ring_child_produces_parent_consumes() {
    let ring = ByteRing::new(CROSS_CAP).unwrap();
    let r = &ring;
    let child = fork_child(move || {
        let Some(mut p) = r.producer() else { return 2 };
        if produce_records(&mut p, Deadline::after(CHILD_LIMIT)) {
            0
        } else {
            3
        }
    });
    let mut c = ring.consumer().unwrap();
    let code = consume_records(&mut c, CROSS_CAP / 4 - 8, Deadline::after(CHILD_LIMIT));
    assert_eq!(code, 0, "parent's check of record failed");
    assert_eq!(child.wait(CHILD_LIMIT), Ok(0));
}

#[test]
fn byte_ring_parent_produces_child_consumes() {
    let ring = ByteRing::new(CROSS_CAP).unwrap();
    let r = &ring;
    let child = fork_child(move || {
        let Some(mut c) = r.consumer() else { return 2 };
        consume_records(&mut c, CROSS_CAP / 4 - 8, Deadline::after(CHILD_LIMIT))
    });
    let mut p = ring.producer().unwrap();
    assert!(
        produce_records(&mut p, Deadline::after(CHILD_LIMIT)),
        "producer timed out"
    );
    assert_eq!(
        child.wait(CHILD_LIMIT),
        Ok(0),
        "child's check of records failed"
    );
}

#[derive(Clone, Copy, PartialEq, Debug)]
#[repr(C)]
struct Item {
    seq: u64,
    a: u64,
    b: u64,
    sum: u64,
}

// SAFETY: integers only: valid as zero, no pointers.
unsafe impl Plain for Item {}

impl Item {
    fn new(seq: u64) -> Self {
        let mut m = Rng::seeded(seq);
        let (a, b) = (m.next_u64(), m.next_u64());
        Item {
            seq,
            a,
            b,
            sum: seq ^ a.rotate_left(7) ^ b.rotate_left(19),
        }
    }
}

#[test]
fn slot_ring_across_fork_both_ways() {
    for child_produces in [true, false] {
        let ring = SlotRing::<Item>::new(64).unwrap();
        let r = &ring;
        let produce = move |deadline: Deadline| -> i32 {
            let Some(mut p) = r.producer() else { return 2 };
            let mut seq = 0;
            while seq < N {
                match p.push(Item::new(seq)) {
                    Ok(()) => seq += 1,
                    Err(_) if deadline.passed() => return 3,
                    Err(_) => deadline.relax(),
                }
            }
            0
        };
        let consume = move |deadline: Deadline| -> i32 {
            let Some(mut c) = r.consumer() else { return 2 };
            let mut seq = 0;
            while seq < N {
                match c.pop() {
                    Some(item) if item == Item::new(seq) => seq += 1,
                    Some(_) => return 12,
                    None if deadline.passed() => return 20,
                    None => deadline.relax(),
                }
            }
            0
        };
        let (mine, theirs): (&dyn Fn(Deadline) -> i32, _) = if child_produces {
            (
                &consume,
                fork_child(move || produce(Deadline::after(CHILD_LIMIT))),
            )
        } else {
            (
                &produce,
                fork_child(move || consume(Deadline::after(CHILD_LIMIT))),
            )
        };
        assert_eq!(
            mine(Deadline::after(CHILD_LIMIT)),
            0,
            "child produces: {child_produces}"
        );
        assert_eq!(
            theirs.wait(CHILD_LIMIT),
            Ok(0),
            "child produces: {child_produces}"
        );
    }
}
