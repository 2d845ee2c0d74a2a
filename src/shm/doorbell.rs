//! Wakes a sleeping ring consumer without a syscall per message. The sleeper
//! sets a flag in shared memory, re-checks its rings, and only then blocks on
//! an eventfd; the producer, after publishing, writes the eventfd only if the
//! flag was set (a SeqCst store/load pair on each side closes the lost-wakeup
//! window, as in a Dekker handshake).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Bytes of shared memory a doorbell's flag needs (its own cache line).
pub const DOORBELL_BYTES: usize = 64;

/// One doorbell: a flag in the shared mapping and an eventfd, both made
/// before `fork()` so every process holds them.
#[derive(Debug)]
pub struct Doorbell {
    _private: (),
}

impl Doorbell {
    /// Creates the eventfd (non-blocking) and clears the flag at `flag_at`.
    ///
    /// # Safety
    /// `flag_at` is 64-byte aligned, valid for `DOORBELL_BYTES` bytes of shared
    /// memory used by nothing else, and outlives the doorbell.
    pub unsafe fn new(flag_at: *mut u8) -> io::Result<Self> {
        let _ = flag_at;
        todo!("shm helper")
    }

    /// The eventfd, to register in a poller (mio `SourceFd`).
    pub fn fd(&self) -> RawFd {
        todo!("shm helper")
    }

    /// Sleeper: announce the intent to sleep. The caller must re-check its
    /// rings after this and call `cancel_sleep` if work arrived.
    pub fn prepare_sleep(&self) {
        todo!("shm helper")
    }

    /// Sleeper: woke up or decided not to sleep; clears the flag and drains the
    /// eventfd counter.
    pub fn cancel_sleep(&self) {
        todo!("shm helper")
    }

    /// Sleeper without a poller of its own (the parent): `prepare_sleep` must
    /// have been called; blocks until rung or `timeout` passes (nanosecond
    /// precision, `None` = no limit), then clears as `cancel_sleep`.
    pub fn wait(&self, timeout: Option<Duration>) {
        let _ = timeout;
        todo!("shm helper")
    }

    /// Producer: after publishing, wake the sleeper if (and only if) it
    /// announced sleep. Returns whether the eventfd was written.
    pub fn ring(&self) -> bool {
        todo!("shm helper")
    }
}
