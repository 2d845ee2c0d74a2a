//! Lock-free SPSC rings in shared memory, after rtrb: head and tail on their
//! own cache lines, positions in `0..2*capacity` so full and empty differ
//! without a wasted slot, each side caching the other's position and reading
//! the atomic only when the cache says full or empty, Acquire/Release only. A
//! full ring hands the item back; nothing here blocks.
//!
//! Two kinds: `SlotRing` carries fixed-size `Copy` items (the issue ring);
//! `ByteRing` carries length-prefixed, 8-byte-aligned variable records that
//! never wrap (a padding record fills the tail end), so the consumer always
//! reads one contiguous slice in place (the completion ring). The price of
//! never wrapping is that a record may be at most a quarter of the ring, so
//! the padding it can force is bounded and a half-empty ring always has room.
//!
//! Layout is `#[repr(C)]` and pointer-free; a ring is `init`ed once in the
//! mapping before `fork()`, and each process then `attach`es the one handle it
//! owns: exactly one producer and one consumer per ring, ever, which the
//! header enforces (a second attach of the same end, in any process, gets
//! `None`). Handles hold raw pointers into the mapping, valid in every process
//! because `fork()` keeps the mapping at the same address, and a share of the
//! mapping, so it outlives them. `SlotRing` and `ByteRing` are the safe way
//! to make a ring of one's own; `run` lays out the engine's.
//!
//! Every index a handle computes is masked into its own ring, so a peer that
//! scribbles on the shared header can make the other side see garbage records
//! or a `Corrupt` error, never read or write outside the ring, and never
//! panic.

use std::io;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use super::mapping::{Plain, SharedMapping};

/// Alignment every ring area needs: a cache line pair, `CachePadded`'s
/// alignment on the machines we build for (checked below).
pub const RING_ALIGN: usize = 128;

/// Bytes a slot ring of `capacity` items of `T` needs (header and slots);
/// `capacity` must be a power of two.
///
/// Rounded up to `RING_ALIGN` so that whatever the layout places next never
/// shares a cache line pair with the last slots.
pub fn slot_ring_bytes<T: Copy>(capacity: usize) -> usize {
    check_slot_params::<T>(capacity);
    (HEADER_BYTES + capacity * size_of::<T>()).next_multiple_of(RING_ALIGN)
}

/// Bytes a byte ring with `capacity` data bytes needs; `capacity` must be a
/// power of two of at least `MIN_BYTE_CAPACITY` (so a multiple of 8).
pub fn byte_ring_bytes(capacity: usize) -> usize {
    check_byte_params(capacity);
    (HEADER_BYTES + capacity).next_multiple_of(RING_ALIGN)
}

/// Smallest byte ring: its largest record (a quarter, 16 bytes) still carries
/// an 8-byte payload.
pub const MIN_BYTE_CAPACITY: usize = 64;

fn check_slot_params<T>(capacity: usize) {
    assert!(
        capacity.is_power_of_two(),
        "slot ring capacity {capacity} is not a power of two"
    );
    assert!(
        align_of::<T>() <= RING_ALIGN,
        "slot items may be aligned to at most {RING_ALIGN} bytes"
    );
}

fn check_byte_params(capacity: usize) {
    assert!(
        capacity.is_power_of_two() && capacity >= MIN_BYTE_CAPACITY,
        "byte ring capacity {capacity} is not a power of two >= {MIN_BYTE_CAPACITY}"
    );
}

/// One 64-byte cache line.
#[repr(C, align(64))]
struct Line<T>(T);

/// What `init` fixed, and which ends have been attached; read and written by
/// `attach` only, so it may share a line pair with the consumer's `head`
/// without false sharing in the hot path.
#[repr(C)]
struct Meta {
    /// `SLOT_MAGIC` or `BYTE_MAGIC`: `attach` refuses the wrong kind.
    magic: u64,
    /// Slots (slot ring) or data bytes (byte ring); a power of two.
    capacity: u64,
    /// `size_of::<T>()` for a slot ring, 1 for a byte ring.
    item_size: u64,
    /// `PRODUCER | CONSUMER` bits of the ends attached so far, in any process.
    attached: AtomicU64,
}

const SLOT_MAGIC: u64 = u64::from_le_bytes(*b"llmSLOT1");
const BYTE_MAGIC: u64 = u64::from_le_bytes(*b"llmBYTE1");

/// `Meta::attached` bits.
const PRODUCER: u64 = 1;
const CONSUMER: u64 = 2;

/// The consumer's line pair: its position, and the meta on the second line.
#[repr(C)]
struct HeadLines {
    /// The consumer's position: everything before it is free.
    head: AtomicU64,
    meta: Line<Meta>,
}

/// Shared header of both ring kinds: `repr(C)`, 256 bytes, aligned to
/// `RING_ALIGN` (128). The data (slots or bytes) starts right after it.
///
/// | offset | line  | written by             |
/// | ------ | ----- | ---------------------- |
/// | 0      | head  | the consumer           |
/// | 64     | meta  | `init`, then `attach`  |
/// | 128    | tail  | the producer           |
/// | 192    | —     | nobody                 |
///
/// Head and tail are on different 64-byte lines and also in different
/// 128-byte-aligned line pairs (`CachePadded`): Intel's L2 spatial
/// prefetcher fetches lines in such pairs, which makes two hot lines of one
/// pair false-share. The data starts at 256, a pair of its own.
///
/// Positions are byte offsets (byte ring) or slot numbers (slot ring) in
/// `0..2*capacity`: `index = pos & (capacity-1)`, `used = (tail-head) &
/// (2*capacity-1)`, so `used == capacity` is full and `head == tail` empty.
#[repr(C)]
struct Header {
    head: CachePadded<HeadLines>,
    /// The producer's position: everything before it (from `head`) is
    /// published.
    tail: CachePadded<AtomicU64>,
}

const HEADER_BYTES: usize = size_of::<Header>();
const _: () = assert!(
    HEADER_BYTES == 2 * RING_ALIGN
        && align_of::<Header>() == RING_ALIGN
        && align_of::<CachePadded<u8>>() == RING_ALIGN
);

/// Arithmetic on positions in `0..2*cap`, `cap` a power of two.
#[derive(Clone, Copy, Debug)]
struct Positions {
    cap: u64,
}

impl Positions {
    #[inline]
    fn used(self, head: u64, tail: u64) -> u64 {
        tail.wrapping_sub(head) & (2 * self.cap - 1)
    }

    #[inline]
    fn advance(self, pos: u64, n: u64) -> u64 {
        pos.wrapping_add(n) & (2 * self.cap - 1)
    }

    #[inline]
    fn index(self, pos: u64) -> usize {
        (pos & (self.cap - 1)) as usize
    }
}

/// Writes a fresh header; shared by both `init`s.
///
/// # Safety
/// `at` is `RING_ALIGN`-aligned and valid for `HEADER_BYTES` bytes that no
/// handle is using.
unsafe fn write_header(at: *mut u8, magic: u64, capacity: usize, item_size: usize) {
    assert!(
        (at as usize).is_multiple_of(RING_ALIGN),
        "ring at {at:p} is not {RING_ALIGN}-byte aligned"
    );
    let header = Header {
        head: CachePadded::new(HeadLines {
            head: AtomicU64::new(0),
            meta: Line(Meta {
                magic,
                capacity: capacity as u64,
                item_size: item_size as u64,
                attached: AtomicU64::new(0),
            }),
        }),
        tail: CachePadded::new(AtomicU64::new(0)),
    };
    // SAFETY: aligned (checked above) and valid for a `Header`, and unused,
    // as the caller promised.
    unsafe { at.cast::<Header>().write(header) };
}

/// What `attach` needs: the header pointer, the positions and the current
/// head and tail; `None` when `end` was attached before, in any process.
///
/// # Safety
/// `at` holds a header written by `write_header` in memory that stays mapped.
unsafe fn attach_header(
    at: *mut u8,
    magic: u64,
    item_size: usize,
    end: u64,
) -> Option<(NonNull<Header>, Positions, u64, u64)> {
    let header = NonNull::new(at.cast::<Header>()).expect("ring pointer is null");
    // SAFETY: the caller promised an initialized header at `at`.
    let h = unsafe { header.as_ref() };
    let meta = &h.head.meta.0;
    assert!(
        meta.magic == magic && meta.item_size == item_size as u64,
        "no ring of this kind at {at:p}"
    );
    let cap = meta.capacity;
    assert!(
        cap.is_power_of_two(),
        "ring at {at:p} has a corrupt capacity"
    );
    if meta.attached.fetch_or(end, Ordering::AcqRel) & end != 0 {
        return None;
    }
    let head = h.head.head.load(Ordering::Acquire);
    let tail = h.tail.load(Ordering::Acquire);
    Some((header, Positions { cap }, head, tail))
}

/// Pointer to the data area that follows the header at `header`.
fn data_of(header: NonNull<Header>) -> NonNull<u8> {
    // SAFETY: every ring's allocation (`*_ring_bytes`) extends past the header,
    // so one-past-the-header is in bounds (or one past the end for an empty
    // slot type) and not null.
    unsafe { header.cast::<u8>().add(HEADER_BYTES) }
}

// ---------------------------------------------------------------------------
// Slot ring

/// Producer side of a slot ring.
///
/// `T` travels between processes by bit copy: it must be plain data, meaningful
/// in the other process (no pointers into one process's heap), which the safe
/// ways to make a ring ask for as `Plain`.
pub struct SlotProducer<T: Copy> {
    /// Keeps the mapping the pointers below point into.
    _map: Arc<SharedMapping>,
    header: NonNull<Header>,
    slots: NonNull<T>,
    pos: Positions,
    /// Our own position; only we write `header.tail`.
    tail: u64,
    /// The consumer's position when last read: at or behind the real one, so
    /// it can only make the ring look fuller than it is.
    cached_head: u64,
}

/// Consumer side of a slot ring.
pub struct SlotConsumer<T: Copy> {
    _map: Arc<SharedMapping>,
    header: NonNull<Header>,
    slots: NonNull<T>,
    pos: Positions,
    /// Our own position; only we write `header.head`.
    head: u64,
    /// The producer's position when last read: at or behind the real one, so
    /// it can only make the ring look emptier than it is.
    cached_tail: u64,
}

// SAFETY: the handle is the one owner of its side of the ring; it shares only
// atomics and slots that the head/tail protocol hands to one side at a time, so
// moving it to another thread is as good as using it in another process.
unsafe impl<T: Copy + Send> Send for SlotProducer<T> {}
// SAFETY: as for `SlotProducer`.
unsafe impl<T: Copy + Send> Send for SlotConsumer<T> {}

/// Writes an empty slot ring header at `at`.
///
/// # Safety
/// `at` is `RING_ALIGN`-aligned and valid for `slot_ring_bytes::<T>(capacity)`
/// bytes of shared memory that no handle is using yet.
pub(crate) unsafe fn init_slot_ring<T: Copy>(at: *mut u8, capacity: usize) {
    check_slot_params::<T>(capacity);
    // SAFETY: the caller's contract covers the header, the first part of the
    // area.
    unsafe { write_header(at, SLOT_MAGIC, capacity, size_of::<T>()) };
}

impl<T: Copy> SlotProducer<T> {
    /// The ring's one producer; `None` if it was attached before, in any
    /// process.
    ///
    /// # Safety
    /// `offset` in `map` holds a ring made by `init_slot_ring::<T>` and is
    /// used as nothing else.
    pub(crate) unsafe fn attach(map: &Arc<SharedMapping>, offset: usize) -> Option<Self> {
        // SAFETY: the caller promised a slot ring of `T` there; `map` stays
        // mapped while the handle holds its share.
        let (header, pos, head, tail) =
            unsafe { attach_header(map.at(offset), SLOT_MAGIC, size_of::<T>(), PRODUCER) }?;
        Some(SlotProducer {
            _map: Arc::clone(map),
            header,
            slots: data_of(header).cast::<T>(),
            pos,
            tail,
            cached_head: head,
        })
    }

    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: `attach` checked the header; our share keeps it mapped.
        unsafe { self.header.as_ref() }
    }

    /// Pushes `item`, or hands it back when the ring is full.
    #[inline]
    pub fn push(&mut self, item: T) -> Result<(), T> {
        if self.pos.used(self.cached_head, self.tail) == self.pos.cap {
            // Acquire: the consumer's reads of the slots it freed happen before
            // we overwrite them.
            self.cached_head = self.header().head.head.load(Ordering::Acquire);
            if self.pos.used(self.cached_head, self.tail) == self.pos.cap {
                return Err(item);
            }
        }
        let index = self.pos.index(self.tail);
        // SAFETY: `index < capacity`, so the slot is inside the ring (slots are
        // `T`-aligned: the data starts 256 bytes into a 128-aligned area and
        // `align_of::<T>() <= 128`). It is free: fewer than `capacity` slots
        // are in use, and the Acquire load above ordered the consumer's last
        // read of it before this write.
        unsafe { self.slots.add(index).write(item) };
        self.tail = self.pos.advance(self.tail, 1);
        // Release: the slot's contents are visible before the new tail is.
        self.header().tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Items in the ring as of now (may be stale by the time it returns).
    pub fn len(&self) -> usize {
        let head = self.header().head.head.load(Ordering::Acquire);
        self.pos.used(head, self.tail) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.pos.cap as usize
    }
}

impl<T: Copy> SlotConsumer<T> {
    /// The ring's one consumer; `None` if it was attached before.
    ///
    /// # Safety
    /// As `SlotProducer::attach`.
    pub(crate) unsafe fn attach(map: &Arc<SharedMapping>, offset: usize) -> Option<Self> {
        // SAFETY: as in `SlotProducer::attach`.
        let (header, pos, head, tail) =
            unsafe { attach_header(map.at(offset), SLOT_MAGIC, size_of::<T>(), CONSUMER) }?;
        Some(SlotConsumer {
            _map: Arc::clone(map),
            header,
            slots: data_of(header).cast::<T>(),
            pos,
            head,
            cached_tail: tail,
        })
    }

    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: `attach` checked the header; our share keeps it mapped.
        unsafe { self.header.as_ref() }
    }

    /// Pops the oldest item, if any.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.cached_tail {
            // Acquire: the producer's write of the slot happens before our read.
            self.cached_tail = self.header().tail.load(Ordering::Acquire);
            if self.head == self.cached_tail {
                return None;
            }
        }
        let index = self.pos.index(self.head);
        // SAFETY: `index < capacity` and the slot is aligned (see `push`); it
        // is published: it lies in `head..tail`, and the Acquire load of tail
        // made the producer's write visible.
        let item = unsafe { self.slots.add(index).read() };
        self.head = self.pos.advance(self.head, 1);
        // Release: our read of the slot happens before the producer reuses it.
        self.header().head.head.store(self.head, Ordering::Release);
        Some(item)
    }

    /// Whether the ring looks empty (rechecks the producer's position).
    pub fn is_empty(&mut self) -> bool {
        self.cached_tail = self.header().tail.load(Ordering::Acquire);
        self.head == self.cached_tail
    }

    /// Items in the ring as of now (rechecks the producer's position).
    pub fn len(&mut self) -> usize {
        self.cached_tail = self.header().tail.load(Ordering::Acquire);
        self.pos.used(self.head, self.cached_tail) as usize
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.pos.cap as usize
    }
}

// ---------------------------------------------------------------------------
// Byte ring
//
// A record is an 8-byte little-endian header holding the payload length, then
// the payload, then zero to seven bytes of slack up to the next multiple of 8.
// A header holding `PAD` instead says "the rest of the ring up to its end is
// unused; the next record is at offset 0". Pad and record are published by one
// store of tail, so a consumer that sees a pad always finds a record after it.

/// Header value of a padding record.
const PAD: u64 = u64::MAX;
/// Bytes of a record header.
const RECORD_HEADER: u64 = 8;

/// Bytes a record with a `len`-byte payload occupies; `len <= capacity`, so it
/// cannot overflow.
#[inline]
fn record_bytes(len: u64) -> u64 {
    RECORD_HEADER + len.next_multiple_of(8)
}

/// Why a record was not pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// Not enough free space now; retry after the consumer catches up.
    Full,
    /// The record can never fit (larger than a quarter of the ring).
    TooLarge,
}

/// Producer side of a byte ring.
pub struct ByteProducer {
    _map: Arc<SharedMapping>,
    header: NonNull<Header>,
    data: NonNull<u8>,
    pos: Positions,
    /// Our own position (as for `SlotProducer`).
    tail: u64,
    /// The consumer's position, at or behind the real one.
    cached_head: u64,
}

/// Consumer side of a byte ring.
pub struct ByteConsumer {
    _map: Arc<SharedMapping>,
    header: NonNull<Header>,
    data: NonNull<u8>,
    pos: Positions,
    /// Our own position (as for `SlotConsumer`).
    head: u64,
    /// The producer's position, at or behind the real one.
    cached_tail: u64,
}

// SAFETY: as for `SlotProducer`: the one owner of its side, sharing only
// atomics and bytes the protocol hands over one side at a time.
unsafe impl Send for ByteProducer {}
// SAFETY: as for `ByteProducer`.
unsafe impl Send for ByteConsumer {}

/// Writes an empty byte ring header at `at` and zeroes the data area, so every
/// byte later lent to `push_with`'s `fill` is initialized (and the pages are
/// touched once here rather than on the hot path).
///
/// # Safety
/// `at` is `RING_ALIGN`-aligned and valid for `byte_ring_bytes(capacity)` bytes
/// of shared memory that no handle is using yet.
pub(crate) unsafe fn init_byte_ring(at: *mut u8, capacity: usize) {
    check_byte_params(capacity);
    // SAFETY: the caller's contract covers the header, the first part of the
    // area.
    unsafe { write_header(at, BYTE_MAGIC, capacity, 1) };
    // SAFETY: the data area is the `capacity` bytes after the header, inside
    // the caller's `byte_ring_bytes(capacity)`.
    unsafe { at.add(HEADER_BYTES).write_bytes(0, capacity) };
}

impl ByteProducer {
    /// The ring's one producer; `None` if it was attached before.
    ///
    /// # Safety
    /// As `SlotProducer::attach`, for a ring made by `init_byte_ring`.
    pub(crate) unsafe fn attach(map: &Arc<SharedMapping>, offset: usize) -> Option<Self> {
        // SAFETY: the caller promised a byte ring there; `map` stays mapped
        // while the handle holds its share.
        let (header, pos, head, tail) =
            unsafe { attach_header(map.at(offset), BYTE_MAGIC, 1, PRODUCER) }?;
        Some(ByteProducer {
            _map: Arc::clone(map),
            header,
            data: data_of(header),
            pos,
            tail,
            cached_head: head,
        })
    }

    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: `attach` checked the header; our share keeps it mapped.
        unsafe { self.header.as_ref() }
    }

    /// Data bytes in the ring.
    pub fn capacity(&self) -> usize {
        self.pos.cap as usize
    }

    /// The longest payload `push_with` accepts: a record, header included, is
    /// at most a quarter of the ring.
    #[cfg(test)]
    pub fn max_len(&self) -> usize {
        (self.pos.cap / 4 - RECORD_HEADER) as usize
    }

    /// Reserves `len` bytes, lets `fill` write them in place (the slice is
    /// exactly `len` bytes, 8-byte aligned), then publishes the record.
    ///
    /// The slice holds whatever an older record left there. If `fill` panics
    /// nothing is published.
    #[inline]
    pub fn push_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<(), PushError> {
        let cap = self.pos.cap;
        let len = len as u64;
        if len > cap / 4 || record_bytes(len) > cap / 4 {
            return Err(PushError::TooLarge);
        }
        let rec = record_bytes(len);
        let index = self.pos.index(self.tail) as u64;
        let to_end = cap - index;
        // A record that does not fit before the end also costs the pad.
        let need = if rec <= to_end { rec } else { to_end + rec };
        if cap - self.pos.used(self.cached_head, self.tail) < need {
            // Acquire: the consumer's reads of what it freed happen before we
            // overwrite it.
            self.cached_head = self.header().head.head.load(Ordering::Acquire);
            if cap - self.pos.used(self.cached_head, self.tail) < need {
                return Err(PushError::Full);
            }
        }
        let mut start = self.tail;
        if rec > to_end {
            // SAFETY: `index` is a multiple of 8 below `capacity`, so the 8
            // bytes there are inside the data area and aligned; they are free
            // (`need` counted them).
            unsafe { self.data.add(index as usize).cast::<u64>().write(PAD) };
            start = self.pos.advance(start, to_end);
        }
        let at = self.pos.index(start);
        // SAFETY: `at + rec <= capacity` (either the record fits before the
        // end, or `at` is 0 and `rec <= capacity/4`), `at` is a multiple of 8,
        // and those bytes are free (`need` counted them). The slice covers
        // initialized bytes (zeroed by `init_byte_ring` or written since) that
        // the consumer does not touch until we publish them below.
        let payload = unsafe {
            let record = self.data.add(at);
            record.cast::<u64>().write(len.to_le());
            std::slice::from_raw_parts_mut(
                record.add(RECORD_HEADER as usize).as_ptr(),
                len as usize,
            )
        };
        fill(payload);
        self.tail = self.pos.advance(start, rec);
        // Release: the pad, the header and the payload are visible before the
        // new tail is.
        self.header().tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Publishes a record header no consumer accepts (a length past the end
    /// of the ring), as a producer with a memory bug would: what the fault
    /// tests use to show the consumer's side copes. `Full` when there is no
    /// room for the header.
    pub fn push_corrupt(&mut self) -> Result<(), PushError> {
        let cap = self.pos.cap;
        if cap - self.pos.used(self.cached_head, self.tail) < RECORD_HEADER {
            // Acquire: as in `push_with`.
            self.cached_head = self.header().head.head.load(Ordering::Acquire);
            if cap - self.pos.used(self.cached_head, self.tail) < RECORD_HEADER {
                return Err(PushError::Full);
            }
        }
        let index = self.pos.index(self.tail);
        // SAFETY: `index` is a multiple of 8 below `capacity`: an aligned word
        // inside the data area, free (checked above).
        unsafe { self.data.add(index).cast::<u64>().write((cap + 1).to_le()) };
        self.tail = self.pos.advance(self.tail, RECORD_HEADER);
        // Release: the header is visible before the new tail is.
        self.header().tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Copies `parts` back to back into one record.
    #[cfg(test)]
    pub fn push_parts(&mut self, parts: &[&[u8]]) -> Result<(), PushError> {
        let len = parts
            .iter()
            .try_fold(0usize, |sum, p| sum.checked_add(p.len()))
            .ok_or(PushError::TooLarge)?;
        self.push_with(len, |mut out| {
            for part in parts {
                let (head, rest) = out.split_at_mut(part.len());
                head.copy_from_slice(part);
                out = rest;
            }
        })
    }
}

impl ByteConsumer {
    /// The ring's one consumer; `None` if it was attached before.
    ///
    /// # Safety
    /// As `ByteProducer::attach`.
    pub(crate) unsafe fn attach(map: &Arc<SharedMapping>, offset: usize) -> Option<Self> {
        // SAFETY: as in `ByteProducer::attach`.
        let (header, pos, head, tail) =
            unsafe { attach_header(map.at(offset), BYTE_MAGIC, 1, CONSUMER) }?;
        Some(ByteConsumer {
            _map: Arc::clone(map),
            header,
            data: data_of(header),
            pos,
            head,
            cached_tail: tail,
        })
    }

    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: `attach` checked the header; our share keeps it mapped.
        unsafe { self.header.as_ref() }
    }

    /// Data bytes in the ring.
    pub fn capacity(&self) -> usize {
        self.pos.cap as usize
    }

    #[inline]
    fn read_word(&self, index: usize) -> u64 {
        debug_assert!(index.is_multiple_of(8) && index < self.pos.cap as usize);
        // SAFETY: callers pass a multiple of 8 below `capacity`: an aligned
        // word inside the data area (whatever value it holds).
        u64::from_le(unsafe { self.data.add(index).cast::<u64>().read() })
    }

    /// Passes the oldest record (exactly the bytes pushed, 8-byte aligned) to
    /// `read` in place, then frees it; `Ok(None)` when the ring is empty.
    ///
    /// A record header that is impossible (a pad or a length that runs past
    /// the published data or the end of the ring) is `Err(Corrupt)`: only a
    /// peer writing outside the protocol can make one. The ring is then left
    /// as it is, so every later call says the same: the consumer's owner
    /// decides what to do with the peer.
    #[inline]
    pub fn pop_with<R>(&mut self, read: impl FnOnce(&[u8]) -> R) -> Result<Option<R>, Corrupt> {
        if self.head == self.cached_tail {
            // Acquire: the producer's writes of the record happen before our
            // reads.
            self.cached_tail = self.header().tail.load(Ordering::Acquire);
            if self.head == self.cached_tail {
                return Ok(None);
            }
        }
        let cap = self.pos.cap;
        let mut head = self.head;
        let mut index = self.pos.index(head);
        let mut word = self.read_word(index);
        if word == PAD {
            // A pad is published with the record after it: both must lie in
            // the published bytes, or head would pass tail.
            let skip = cap - index as u64;
            if skip + RECORD_HEADER > self.pos.used(head, self.cached_tail) {
                return Err(corrupt(word, index));
            }
            head = self.pos.advance(head, skip);
            index = 0;
            word = self.read_word(0);
        }
        // One compare on the hot path keeps a corrupt header from sending the
        // slice outside the published bytes.
        let rec = if word <= cap {
            record_bytes(word)
        } else {
            u64::MAX
        };
        if rec > self.pos.used(head, self.cached_tail) || index as u64 + rec > cap {
            return Err(corrupt(word, index));
        }
        // SAFETY: `index + rec <= capacity`, so the payload is inside the data
        // area, 8-aligned after its 8-aligned header; it lies in `head..tail`,
        // published and made visible by the Acquire load of tail, and the
        // producer does not touch it until we move head past it below.
        let payload = unsafe {
            std::slice::from_raw_parts(
                self.data.add(index + RECORD_HEADER as usize).as_ptr(),
                word as usize,
            )
        };
        let out = read(payload);
        self.head = self.pos.advance(head, rec);
        // Release: our reads of the record happen before the producer reuses
        // its bytes.
        self.header().head.head.store(self.head, Ordering::Release);
        Ok(Some(out))
    }

    /// Whether the ring looks empty (rechecks the producer's position).
    pub fn is_empty(&mut self) -> bool {
        self.cached_tail = self.header().tail.load(Ordering::Acquire);
        self.head == self.cached_tail
    }
}

// ---------------------------------------------------------------------------
// A ring of one's own

/// A slot ring in a shared mapping of its own, made before `fork()`; each end
/// is handed out once, to whichever process asks first.
pub struct SlotRing<T> {
    map: Arc<SharedMapping>,
    item: PhantomData<T>,
}

impl<T: Plain + Copy> SlotRing<T> {
    /// An empty ring of `capacity` slots (a power of two).
    pub fn new(capacity: usize) -> io::Result<Self> {
        let map = Arc::new(SharedMapping::new(slot_ring_bytes::<T>(capacity))?);
        // SAFETY: a fresh page-aligned mapping of the size the ring needs,
        // used by nothing else.
        unsafe { init_slot_ring::<T>(map.as_ptr(), capacity) };
        Ok(SlotRing {
            map,
            item: PhantomData,
        })
    }

    /// The producer, or `None` once it has been taken.
    pub fn producer(&self) -> Option<SlotProducer<T>> {
        // SAFETY: offset 0 holds the ring of `T` made in `new`, and only it.
        unsafe { SlotProducer::attach(&self.map, 0) }
    }

    /// The consumer, or `None` once it has been taken.
    pub fn consumer(&self) -> Option<SlotConsumer<T>> {
        // SAFETY: as in `producer`.
        unsafe { SlotConsumer::attach(&self.map, 0) }
    }
}

/// A byte ring in a shared mapping of its own, as `SlotRing`.
pub struct ByteRing {
    map: Arc<SharedMapping>,
}

impl ByteRing {
    /// An empty ring of `capacity` data bytes (a power of two of at least
    /// `MIN_BYTE_CAPACITY`).
    pub fn new(capacity: usize) -> io::Result<Self> {
        let map = Arc::new(SharedMapping::new(byte_ring_bytes(capacity))?);
        // SAFETY: a fresh page-aligned mapping of the size the ring needs,
        // used by nothing else.
        unsafe { init_byte_ring(map.as_ptr(), capacity) };
        Ok(ByteRing { map })
    }

    /// The producer, or `None` once it has been taken.
    pub fn producer(&self) -> Option<ByteProducer> {
        // SAFETY: offset 0 holds the byte ring made in `new`, and only it.
        unsafe { ByteProducer::attach(&self.map, 0) }
    }

    /// The consumer, or `None` once it has been taken.
    pub fn consumer(&self) -> Option<ByteConsumer> {
        // SAFETY: as in `producer`.
        unsafe { ByteConsumer::attach(&self.map, 0) }
    }
}

/// A byte ring's next record header is impossible: the producer wrote
/// outside the protocol (a memory bug, or a test's `push_corrupt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt {
    /// The header word found.
    pub word: u64,
    /// Its offset in the data area.
    pub offset: usize,
}

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "corrupt completion ring: record header {:#x} at offset {}",
            self.word, self.offset
        )
    }
}

#[cold]
#[inline(never)]
fn corrupt(word: u64, offset: usize) -> Corrupt {
    Corrupt { word, offset }
}

#[cfg(test)]
mod tests;
