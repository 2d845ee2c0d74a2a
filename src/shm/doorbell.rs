//! Wakes a sleeping ring consumer without a syscall per message. The sleeper
//! sets a flag in shared memory, re-checks its rings, and only then blocks on
//! an eventfd; the producer, after publishing, writes the eventfd only if the
//! flag was set (a SeqCst fence between the store and the load on each side
//! closes the lost-wakeup window, as in a Dekker handshake). The price is one
//! fence per `ring()` on the producer's side, so producers ring once per batch
//! of pushes rather than once per item.
//!
//! # Why no wake-up is lost
//!
//! Sleeper: `flag = 1`; fence(SeqCst); load tail (the ring re-check); block.
//! Producer: store tail (the push); fence(SeqCst); load flag; write if set.
//!
//! The two fences are ordered one way or the other in the single total order
//! of SeqCst operations. If the sleeper's fence comes first, the producer's
//! flag load, after its own fence, must see the sleeper's `1` (or a later
//! value), so it writes the eventfd and the block returns at once. If the
//! producer's fence comes first, the sleeper's tail load must see the new
//! tail, so the re-check finds the item and the sleeper does not block. Both
//! loads missing each other's store would need each fence before the other.
//!
//! Spurious wake-ups remain possible (a producer that saw the flag just before
//! the sleeper cleared it writes the eventfd after the drain) and are harmless:
//! every wake is followed by a re-check of the rings.
//!
//! Several producers may share one doorbell (every worker rings the parent's);
//! the swap of the flag to 0 lets only the first of them pay the write.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering, fence};
use std::time::Duration;

use crate::sys::cvt;

/// Bytes of shared memory a doorbell's flag needs (its own cache line).
pub(crate) const DOORBELL_BYTES: usize = 64;

/// The doorbell's part of the mapping: `repr(C)`, one 64-byte-aligned line so
/// the flag never false-shares with a ring's head or tail.
#[repr(C, align(64))]
struct Shared {
    /// 1 while the sleeper is about to block or blocked, else 0.
    sleeping: AtomicU32,
}

const _: () = assert!(size_of::<Shared>() == DOORBELL_BYTES);

/// One doorbell: a flag in the shared mapping and an eventfd, both made
/// before `fork()` so every process holds them. Each process owns its copy of
/// the descriptor (closed when its `Doorbell` drops, kept across `fork()`).
#[derive(Debug)]
pub(crate) struct Doorbell {
    shared: NonNull<Shared>,
    fd: OwnedFd,
}

// SAFETY: the shared part is a single atomic and the eventfd may be used from
// any thread; nothing else is shared.
unsafe impl Send for Doorbell {}
// SAFETY: as for `Send`: every method works through `&self` on an atomic or a
// syscall.
unsafe impl Sync for Doorbell {}

impl Doorbell {
    /// Creates the eventfd (non-blocking) and clears the flag at `flag_at`.
    ///
    /// # Safety
    /// `flag_at` is 64-byte aligned, valid for `DOORBELL_BYTES` bytes of shared
    /// memory used by nothing else, and outlives the doorbell.
    pub(crate) unsafe fn new(flag_at: *mut u8) -> io::Result<Self> {
        let shared = NonNull::new(flag_at.cast::<Shared>()).expect("doorbell pointer is null");
        assert!(
            (flag_at as usize).is_multiple_of(DOORBELL_BYTES),
            "doorbell at {flag_at:p} is not 64-byte aligned"
        );
        // SAFETY: eventfd takes no pointers.
        let raw = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: `raw` is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: aligned, valid and unused, as the caller promised.
        unsafe {
            shared.write(Shared {
                sleeping: AtomicU32::new(0),
            })
        };
        Ok(Doorbell { shared, fd })
    }

    #[inline]
    fn sleeping(&self) -> &AtomicU32 {
        // SAFETY: `new`'s contract: the flag's memory outlives the doorbell.
        unsafe { &self.shared.as_ref().sleeping }
    }

    /// The eventfd, to register in a poller (mio `SourceFd`, readable).
    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Sleeper: announce the intent to sleep. The caller must re-check its
    /// rings after this (`is_empty()` re-reads the producer's position) and
    /// call `cancel_sleep` if work arrived.
    pub(crate) fn prepare_sleep(&self) {
        self.sleeping().store(1, Ordering::Relaxed);
        // The fence, not the store's ordering, is what keeps the re-check's
        // load of tail from being satisfied before the flag is visible (see
        // the module docs).
        fence(Ordering::SeqCst);
    }

    /// Sleeper: woke up or decided not to sleep; clears the flag, and drains
    /// the eventfd only if a producer claimed the flag (and so wrote, or is
    /// about to write, the eventfd). A busy sleeper that was never rung pays
    /// no syscall here.
    ///
    /// A producer that claimed the flag may write just after the drain; the
    /// counter then stays at 1. An edge-triggered poller (the workers' mio
    /// loop) sees that as one spurious wake-up at most, and `wait` drains
    /// whenever its level-triggered poll reports the counter readable.
    pub(crate) fn cancel_sleep(&self) {
        if self.sleeping().swap(0, Ordering::AcqRel) == 0 {
            self.drain();
        }
    }

    fn drain(&self) {
        let mut counter = 0u64;
        // SAFETY: reads 8 bytes into `counter`, which is 8 bytes. EAGAIN (the
        // counter was already 0) is the expected failure and is ignored.
        let _ = cvt(unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&raw mut counter).cast::<libc::c_void>(),
                size_of::<u64>(),
            )
        });
    }

    /// Sleeper without a poller of its own (the parent): `prepare_sleep` must
    /// have been called; blocks until rung or `timeout` passes (nanosecond
    /// precision, `None` = no limit), then clears as `cancel_sleep`.
    ///
    /// A signal also ends the wait early; like any wake-up, the caller
    /// re-checks its rings and decides whether to sleep again.
    pub(crate) fn wait(&self, timeout: Option<Duration>) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos().into(),
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a valid timespec or null (no limit), and a
        // null signal mask (keep the current one). EINTR simply ends the wait.
        let _ = cvt(unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) });
        if pfd.revents & libc::POLLIN != 0 {
            self.sleeping().store(0, Ordering::Relaxed);
            self.drain();
        } else {
            self.cancel_sleep();
        }
    }

    /// Producer: after publishing, wake the sleeper if (and only if) it
    /// announced sleep. Returns whether the eventfd was written.
    #[inline]
    pub(crate) fn ring(&self) -> bool {
        // Orders the caller's Release store of tail before the flag load (see
        // the module docs); a Release store alone may pass a later load.
        fence(Ordering::SeqCst);
        if self.sleeping().load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.wake()
    }

    #[cold]
    fn wake(&self) -> bool {
        // Only one of several producers that saw the flag writes the eventfd.
        if self.sleeping().swap(0, Ordering::AcqRel) == 0 {
            return false;
        }
        let one = 1u64;
        // SAFETY: writes the 8 bytes of `one`. It cannot block (EFD_NONBLOCK)
        // and fails only if the counter would overflow, which a 1 per sleep
        // cannot reach.
        cvt(unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                (&raw const one).cast::<libc::c_void>(),
                size_of::<u64>(),
            )
        })
        .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now_ns;
    use crate::shm::mapping::SharedMapping;
    use crate::shm::ring::{SlotConsumer, SlotProducer, SlotRing};
    use crate::shm::test_util::{Deadline, fork_child};

    fn bell_in(map: &SharedMapping, offset: usize) -> Doorbell {
        // SAFETY: `offset` was reserved for a doorbell, 64-byte aligned, in a
        // mapping the test keeps alive longer than the doorbell.
        unsafe { Doorbell::new(map.at(offset)).unwrap() }
    }

    fn readable(fd: RawFd) -> bool {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        unsafe { libc::poll(&mut pfd, 1, 0) == 1 }
    }

    #[test]
    fn rings_only_when_the_sleeper_announced_it() {
        let map = SharedMapping::new(DOORBELL_BYTES).unwrap();
        let bell = bell_in(&map, 0);
        assert!(!bell.ring());
        assert!(!readable(bell.fd()));
        bell.prepare_sleep();
        assert!(bell.ring());
        assert!(!bell.ring(), "the first ring clears the flag");
        assert!(readable(bell.fd()));
        bell.cancel_sleep();
        assert!(!readable(bell.fd()), "cancel_sleep drains the counter");
        bell.cancel_sleep(); // an empty counter is fine too
        bell.prepare_sleep();
        bell.cancel_sleep();
        assert!(!bell.ring());
    }

    #[test]
    fn wait_returns_at_once_when_rung_and_after_the_timeout_otherwise() {
        let map = SharedMapping::new(DOORBELL_BYTES).unwrap();
        let bell = bell_in(&map, 0);
        bell.prepare_sleep();
        assert!(bell.ring());
        let t = now_ns();
        bell.wait(Some(Duration::from_secs(5)));
        assert!(now_ns() - t < 1_000_000_000);
        assert!(!readable(bell.fd()));

        // 1.5 ms: a millisecond poll() would round this to 1 or 2 ms.
        bell.prepare_sleep();
        let t = now_ns();
        bell.wait(Some(Duration::from_micros(1500)));
        let waited = now_ns() - t;
        assert!(waited >= 1_500_000, "woke after {waited} ns");
        assert!(waited < 1_000_000_000, "woke after {waited} ns");
        assert!(!bell.ring(), "wait clears the flag");
    }

    #[test]
    fn eventfd_is_nonblocking_and_cloexec() {
        let map = SharedMapping::new(DOORBELL_BYTES).unwrap();
        let bell = bell_in(&map, 0);
        // SAFETY: F_GETFL / F_GETFD on a descriptor we own.
        let (fl, fd) = unsafe {
            (
                libc::fcntl(bell.fd(), libc::F_GETFL),
                libc::fcntl(bell.fd(), libc::F_GETFD),
            )
        };
        assert_ne!(fl & libc::O_NONBLOCK, 0);
        assert_ne!(fd & libc::FD_CLOEXEC, 0);
    }

    #[test]
    fn child_sleeps_parent_rings() {
        let map = SharedMapping::new(DOORBELL_BYTES).unwrap();
        let bell = bell_in(&map, 0);
        let ring = SlotRing::<u64>::new(4).unwrap();
        let (bell_ref, ring_ref) = (&bell, &ring);
        let child = fork_child(move || {
            let Some(mut c) = ring_ref.consumer() else {
                return 6;
            };
            let deadline = Deadline::after(Duration::from_secs(10));
            bell_ref.prepare_sleep();
            if !c.is_empty() {
                return 2; // the parent pushes only once it sees us asleep
            }
            let t = now_ns();
            bell_ref.wait(Some(Duration::from_secs(5)));
            if now_ns() - t > 4_000_000_000 {
                return 3; // never rung
            }
            // A wake-up comes after the push, so the item is there.
            match c.pop() {
                Some(42) => {}
                _ => return 4,
            }
            if deadline.passed() { 5 } else { 0 }
        });
        let deadline = Deadline::after(Duration::from_secs(10));
        while bell.sleeping().load(Ordering::SeqCst) == 0 {
            assert!(!deadline.passed(), "child never announced sleep");
            deadline.relax();
        }
        // Give the child time to reach ppoll (it works either way).
        std::thread::sleep(Duration::from_millis(20));
        let mut p = ring.producer().unwrap();
        p.push(42).unwrap();
        assert!(bell.ring(), "the sleeping child was not rung");
        assert_eq!(child.wait(Duration::from_secs(10)), Ok(0));
    }

    /// Ping-pong across fork() where both sides sleep whenever their ring is
    /// empty: a lost wake-up stalls a side until its wait times out, which is
    /// counted as a failure.
    #[test]
    fn ping_pong_with_sleeps_loses_no_wakeups() {
        const ROUNDS: u64 = 3000;
        const STALL: Duration = Duration::from_secs(2);
        let map = SharedMapping::new(2 * DOORBELL_BYTES).unwrap();
        let (to_child_bell, to_parent_bell) = (bell_in(&map, 0), bell_in(&map, DOORBELL_BYTES));
        let to_child = SlotRing::<u64>::new(2).unwrap();
        let to_parent = SlotRing::<u64>::new(2).unwrap();

        /// One side: receive `i` (sleeping while empty), answer `i + reply`.
        /// Returns 0, or a code for a stall, a wrong value or a full ring.
        fn side(
            rx: &mut SlotConsumer<u64>,
            rx_bell: &Doorbell,
            tx: &mut SlotProducer<u64>,
            tx_bell: &Doorbell,
            starts: bool,
        ) -> i32 {
            let deadline = Deadline::after(Duration::from_secs(20));
            let mut expect = 0;
            if starts {
                if tx.push(0).is_err() {
                    return 6;
                }
                tx_bell.ring();
                expect = 1;
            }
            while expect < 2 * ROUNDS {
                let got = loop {
                    if let Some(v) = rx.pop() {
                        break v;
                    }
                    rx_bell.prepare_sleep();
                    if !rx.is_empty() {
                        rx_bell.cancel_sleep();
                        continue;
                    }
                    let t = now_ns();
                    rx_bell.wait(Some(STALL));
                    if now_ns() - t >= STALL.as_nanos() as u64 || deadline.passed() {
                        return 7;
                    }
                };
                if got != expect {
                    return 8;
                }
                if tx.push(got + 1).is_err() {
                    return 6;
                }
                tx_bell.ring();
                expect += 2;
            }
            0
        }

        let (tcb, tpb) = (&to_child_bell, &to_parent_bell);
        let (tc, tp) = (&to_child, &to_parent);
        let child = fork_child(move || {
            // The child consumes `to_child` and produces `to_parent`.
            let (Some(mut rx), Some(mut tx)) = (tc.consumer(), tp.producer()) else {
                return 9;
            };
            side(&mut rx, tcb, &mut tx, tpb, false)
        });
        let mut rx = to_parent.consumer().unwrap();
        let mut tx = to_child.producer().unwrap();
        let code = side(&mut rx, &to_parent_bell, &mut tx, &to_child_bell, true);
        assert_eq!(code, 0, "parent side failed (7 = stalled: a lost wake-up)");
        assert_eq!(
            child.wait(Duration::from_secs(30)),
            Ok(0),
            "child side failed"
        );
    }
}
