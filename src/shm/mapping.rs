//! The `MAP_SHARED | MAP_ANONYMOUS` region and a bump layout for carving it.

use std::io;
use std::ptr::NonNull;

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
        let page = 4096;
        let len = len.max(1).div_ceil(page) * page;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's
        // choosing; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(SharedMapping { ptr, len })
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
        // SAFETY: `ptr` and `len` are exactly what mmap returned; handles into
        // the mapping do not outlive it (the attach contracts say so).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_aligns_each_piece() {
        let mut l = Layout::new();
        assert_eq!(l.reserve(10, 8), 0);
        assert_eq!(l.reserve(64, 128), 128);
        assert_eq!(l.reserve(1, 64), 192);
        assert_eq!(l.len(), 193);
    }

    #[test]
    fn mapping_is_shared_with_a_forked_child() {
        let m = SharedMapping::new(100).unwrap();
        assert_eq!(m.len(), 4096);
        let p = m.at(64).cast::<u64>();
        // SAFETY: fork in a test binary; the child only writes to the mapping
        // and calls `_exit`, both async-signal-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: `p` is inside the mapping and 8-byte aligned.
            unsafe { p.write_volatile(0xfeed) };
            // SAFETY: leaving the child without running the parent's destructors.
            unsafe { libc::_exit(0) };
        }
        let mut status = 0;
        // SAFETY: waiting for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        // SAFETY: the child has exited; the value it wrote is visible here.
        assert_eq!(unsafe { p.read_volatile() }, 0xfeed);
    }
}
