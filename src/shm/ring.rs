//! Lock-free SPSC rings in shared memory, after rtrb: head and tail on their
//! own cache lines, positions in `0..2*capacity` so full and empty differ
//! without a wasted slot, each side caching the other's position and reading
//! the atomic only when the cache says full or empty, Acquire/Release only. A
//! full ring hands the item back; nothing here blocks.
//!
//! Two kinds: `SlotRing` carries fixed-size `Copy` items (the issue ring);
//! `ByteRing` carries length-prefixed, 8-byte-aligned variable records that
//! never wrap (a padding record fills the tail end), so the consumer always
//! reads one contiguous slice in place (the completion ring).
//!
//! Layout is `#[repr(C)]` and pointer-free; a ring is `init`ed once in the
//! mapping before `fork()`, and each process then `attach`es the one handle it
//! owns: exactly one producer and one consumer per ring, ever.

/// Bytes a slot ring of `capacity` items of `T` needs (header and slots);
/// `capacity` must be a power of two.
pub fn slot_ring_bytes<T: Copy>(capacity: usize) -> usize {
    let _ = capacity;
    todo!("shm helper")
}

/// Bytes a byte ring with `capacity` data bytes needs; `capacity` must be a
/// power of two and a multiple of 8.
pub fn byte_ring_bytes(capacity: usize) -> usize {
    let _ = capacity;
    todo!("shm helper")
}

/// Alignment every ring area needs (a cache line pair).
pub const RING_ALIGN: usize = 128;

/// Producer side of a slot ring.
pub struct SlotProducer<T: Copy> {
    _marker: std::marker::PhantomData<T>,
}

/// Consumer side of a slot ring.
pub struct SlotConsumer<T: Copy> {
    _marker: std::marker::PhantomData<T>,
}

/// Writes an empty slot ring header at `at`.
///
/// # Safety
/// `at` is `RING_ALIGN`-aligned and valid for `slot_ring_bytes::<T>(capacity)`
/// bytes of shared memory that no handle is using yet.
pub unsafe fn init_slot_ring<T: Copy>(at: *mut u8, capacity: usize) {
    let _ = (at, capacity);
    todo!("shm helper")
}

impl<T: Copy> SlotProducer<T> {
    /// # Safety
    /// `at` holds a ring made by `init_slot_ring::<T>`, the mapping outlives
    /// the handle, and no other producer exists for this ring in any process.
    pub unsafe fn attach(at: *mut u8) -> Self {
        let _ = at;
        todo!("shm helper")
    }

    /// Pushes `item`, or hands it back when the ring is full.
    pub fn push(&mut self, item: T) -> Result<(), T> {
        let _ = item;
        todo!("shm helper")
    }

    /// Items in the ring as of now (may be stale by the time it returns).
    pub fn len(&self) -> usize {
        todo!("shm helper")
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Copy> SlotConsumer<T> {
    /// # Safety
    /// As `SlotProducer::attach`, for the one consumer.
    pub unsafe fn attach(at: *mut u8) -> Self {
        let _ = at;
        todo!("shm helper")
    }

    /// Pops the oldest item, if any.
    pub fn pop(&mut self) -> Option<T> {
        todo!("shm helper")
    }

    /// Whether the ring looks empty (rechecks the producer's position).
    pub fn is_empty(&mut self) -> bool {
        todo!("shm helper")
    }
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
    _private: (),
}

/// Consumer side of a byte ring.
pub struct ByteConsumer {
    _private: (),
}

/// Writes an empty byte ring header at `at`.
///
/// # Safety
/// `at` is `RING_ALIGN`-aligned and valid for `byte_ring_bytes(capacity)` bytes
/// of shared memory that no handle is using yet.
pub unsafe fn init_byte_ring(at: *mut u8, capacity: usize) {
    let _ = (at, capacity);
    todo!("shm helper")
}

impl ByteProducer {
    /// # Safety
    /// As `SlotProducer::attach`, for a ring made by `init_byte_ring`.
    pub unsafe fn attach(at: *mut u8) -> Self {
        let _ = at;
        todo!("shm helper")
    }

    /// Reserves `len` bytes, lets `fill` write them in place (the slice is
    /// exactly `len` bytes, 8-byte aligned), then publishes the record.
    pub fn push_with(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<(), PushError> {
        let _ = (len, fill);
        todo!("shm helper")
    }

    /// Copies `parts` back to back into one record.
    pub fn push_parts(&mut self, parts: &[&[u8]]) -> Result<(), PushError> {
        let _ = parts;
        todo!("shm helper")
    }
}

impl ByteConsumer {
    /// # Safety
    /// As `SlotConsumer::attach`, for a ring made by `init_byte_ring`.
    pub unsafe fn attach(at: *mut u8) -> Self {
        let _ = at;
        todo!("shm helper")
    }

    /// Passes the oldest record (exactly the bytes pushed, 8-byte aligned) to
    /// `read` in place, then frees it.
    pub fn pop_with<R>(&mut self, read: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let _ = read;
        todo!("shm helper")
    }

    /// Whether the ring looks empty (rechecks the producer's position).
    pub fn is_empty(&mut self) -> bool {
        todo!("shm helper")
    }
}
