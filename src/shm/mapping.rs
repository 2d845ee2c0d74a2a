//! The `MAP_SHARED | MAP_ANONYMOUS` region, a bump layout for carving it,
//! `Plain` (what may live in it) and `SharedArray` (a safe, typed array of
//! such values). The price of sharing memory across `fork()` is that only
//! pointer-free, zero-valid data may go there, and only shm may say which.

use std::io;
use std::marker::PhantomData;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous, munmap};

/// Data that may live in a shared mapping and be used from every process
/// that maps it: valid as all-zero bytes (a fresh mapping is zero-filled),
/// holding no pointers (an address means nothing in another process, and
/// a heap address written after `fork()` nothing at all), and changed after
/// it is placed only through atomics (or, as a ring item, by the one side the
/// ring protocol hands it to).
///
/// # Safety
/// Implement it only for types that meet all three conditions. Outside shm
/// no module may write `unsafe`, so the shared layouts are defined here.
pub unsafe trait Plain: Sync {}

// SAFETY: integers and integer atomics are valid for every bit pattern, zero
// included, and hold no pointers; atomics change only atomically.
unsafe impl Plain for u8 {}
// SAFETY: as for `u8`.
unsafe impl Plain for u16 {}
// SAFETY: as for `u8`.
unsafe impl Plain for u32 {}
// SAFETY: as for `u8`.
unsafe impl Plain for u64 {}
// SAFETY: as for `u8`.
unsafe impl Plain for AtomicU32 {}
// SAFETY: as for `u8`.
unsafe impl Plain for AtomicU64 {}
// SAFETY: an array of `Plain` values is laid out as the values, back to back.
unsafe impl<T: Plain, const N: usize> Plain for [T; N] {}

/// Bytes the kernel maps at a time, and so the alignment of every mapping.
const PAGE: usize = 4096;

/// An anonymous shared mapping, zero-filled by the kernel. Made before
/// `fork()`, it is the same physical memory in parent and children.
#[derive(Debug)]
pub struct SharedMapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; what is placed in
// it is accessed through atomics or by the one handle that owns each part.
unsafe impl Send for SharedMapping {}
// SAFETY: as for `Send`; `&SharedMapping` only hands out the base pointer.
unsafe impl Sync for SharedMapping {}

impl SharedMapping {
    /// Maps `len` bytes (rounded up to the page size).
    pub fn new(len: usize) -> io::Result<Self> {
        let len = NonZeroUsize::new(len.max(1).div_ceil(PAGE) * PAGE)
            .ok_or_else(|| io::Error::other("shared mapping too large"))?;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's
        // choosing; no existing memory is affected.
        let ptr = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
            )
        }?;
        Ok(SharedMapping {
            ptr: ptr.cast(),
            len: len.get(),
        })
    }

    /// Start of the mapping; page aligned.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pointer to `offset` bytes into the mapping.
    ///
    /// # Panics
    /// When `offset` is past the end: offsets come from a `Layout` sized for
    /// this mapping, so that is a bug, not a user error.
    pub fn at(&self, offset: usize) -> *mut u8 {
        assert!(
            offset < self.len,
            "offset {offset} outside a {} byte mapping",
            self.len
        );
        // SAFETY: `offset` is inside the mapping, checked above.
        unsafe { self.ptr.as_ptr().add(offset) }
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are exactly what mmap returned; whatever
        // points into the mapping borrows it or holds a share of it.
        let _ = unsafe { munmap(self.ptr.cast(), self.len) };
    }
}

/// Offsets for the pieces placed in one mapping.
#[derive(Debug, Default)]
pub struct Layout {
    len: usize,
}

impl Layout {
    pub fn new() -> Self {
        Layout { len: 0 }
    }

    /// Reserves `size` bytes aligned to `align` (a power of two) and returns
    /// their offset from the start of the mapping.
    pub fn reserve(&mut self, size: usize, align: usize) -> usize {
        debug_assert!(align.is_power_of_two());
        let offset = self.len.next_multiple_of(align);
        self.len = offset + size;
        offset
    }

    /// Bytes needed for everything reserved so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `len` zeroed `T`s in a shared mapping of their own, made before `fork()`
/// and read by index: per-process counter blocks that one process writes and
/// another reads.
#[derive(Debug)]
pub struct SharedArray<T> {
    map: SharedMapping,
    len: usize,
    item: PhantomData<T>,
}

impl<T: Plain> SharedArray<T> {
    pub fn new(len: usize) -> io::Result<Self> {
        assert!(
            align_of::<T>() <= PAGE,
            "shared items may be aligned to at most a page"
        );
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| io::Error::other("shared array too large"))?;
        Ok(SharedArray {
            map: SharedMapping::new(bytes)?,
            len,
            item: PhantomData,
        })
    }

    /// Item `k`.
    ///
    /// # Panics
    /// When `k` is not below `len()`.
    pub fn get(&self, k: usize) -> &T {
        assert!(k < self.len, "item {k} of a shared array of {}", self.len);
        // SAFETY: the page-aligned mapping holds `len` items of
        // `size_of::<T>()` bytes, so item `k` is in bounds and aligned (the
        // size is a multiple of the alignment); it is zero-filled by the
        // kernel or changed only through atomics, and valid either way
        // (`T: Plain`); the reference lives no longer than `self`, which owns
        // the mapping.
        unsafe { &*self.map.as_ptr().add(k * size_of::<T>()).cast::<T>() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).map(|k| self.get(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::test_util::fork_child;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    #[test]
    fn layout_aligns_each_piece() {
        let mut l = Layout::new();
        assert_eq!(l.reserve(10, 8), 0);
        assert_eq!(l.reserve(64, 128), 128);
        assert_eq!(l.reserve(1, 64), 192);
        assert_eq!(l.len(), 193);
    }

    #[test]
    fn mapping_rounds_up_to_pages() {
        assert_eq!(SharedMapping::new(100).unwrap().len(), 4096);
        assert_eq!(SharedMapping::new(4097).unwrap().len(), 8192);
    }

    #[test]
    fn array_is_shared_with_a_forked_child() {
        let a = SharedArray::<AtomicU64>::new(600).unwrap();
        assert_eq!(a.len(), 600);
        assert!(a.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        let child = fork_child(|| {
            a.get(599).store(0xfeed, Ordering::Relaxed);
            0
        });
        assert_eq!(child.wait(Duration::from_secs(10)), Ok(0));
        assert_eq!(a.get(599).load(Ordering::Relaxed), 0xfeed);
        assert_eq!(a.get(598).load(Ordering::Relaxed), 0);
    }

    #[test]
    #[should_panic(expected = "item 3 of a shared array of 3")]
    fn array_index_is_checked() {
        SharedArray::<[AtomicU32; 16]>::new(3).unwrap().get(3);
    }
}
