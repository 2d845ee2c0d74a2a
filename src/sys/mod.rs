//! The operating system beneath everything else: processes, signals, sockets,
//! descriptors, CPUs. With `shm`, the only place `unsafe` is written: each
//! system call is a thin wrapper whose invariant is stated where it is made,
//! so the rest of the crate stays safe (the crate denies `unsafe_code` and
//! only `shm` and `sys` allow it). `nix` wherever it has the call; raw
//! `libc` through `cvt` where it does not.

#![allow(unsafe_code)]

pub(crate) mod clock_sync;
pub(crate) mod info;
pub mod process;
pub(crate) mod signal;
pub(crate) mod socket;
pub(crate) mod time;
pub(crate) mod uring;

use std::io;

/// A raw system call's return type, `-1` on failure.
pub(crate) trait MinusOne: Copy + PartialEq {
    const MINUS_ONE: Self;
}

impl MinusOne for i32 {
    const MINUS_ONE: Self = -1;
}

impl MinusOne for i64 {
    const MINUS_ONE: Self = -1;
}

impl MinusOne for isize {
    const MINUS_ONE: Self = -1;
}

/// Turns a raw system call's `-1` into `io::Error::last_os_error()`. It does
/// not allocate, so a forked child may call it.
pub(crate) fn cvt<T: MinusOne>(ret: T) -> io::Result<T> {
    if ret == T::MINUS_ONE {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cvt_passes_results_and_reads_errno_on_minus_one() {
        assert_eq!(cvt(3i32).unwrap(), 3);
        assert_eq!(cvt(0isize).unwrap(), 0);
        // SAFETY: close(-1) touches no descriptor; it fails with EBADF.
        let e = cvt(unsafe { libc::close(-1) }).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
