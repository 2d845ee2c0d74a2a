//! Token pacing for every connection of a worker: a binary heap of
//! `(deadline, connection, generation)` driven by one timerfd (CLOCK_MONOTONIC,
//! absolute, nanosecond resolution) that sits in the mio poll like any socket.
//! mio's own poll timeout is rounded to milliseconds, which would smear token
//! times by up to a millisecond; the timerfd does not. The fd is re-armed
//! only when the earliest deadline changes, at most once per loop turn, so a
//! thousand streams ticking together cost one `timerfd_settime`, not a
//! thousand. Entries are never removed early: a closed connection's entry
//! stays in the heap and is dropped when it surfaces, because its slot's
//! generation no longer matches.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

/// One pending wake-up: a connection slot and the generation it had when the
/// wake-up was scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    pub deadline: u64,
    pub slot: u32,
    pub generation: u32,
}

/// The ordered deadlines, without the fd: pure, so it is tested on its own.
#[derive(Debug, Default)]
pub(super) struct Deadlines {
    heap: BinaryHeap<Reverse<Entry>>,
}

impl Deadlines {
    pub(super) fn push(&mut self, e: Entry) {
        self.heap.push(Reverse(e));
    }

    pub(super) fn earliest(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(e)| e.deadline)
    }

    /// Moves every entry due at `now` into `out`, earliest first.
    pub(super) fn pop_due(&mut self, now: u64, out: &mut Vec<Entry>) {
        while let Some(Reverse(e)) = self.heap.peek() {
            if e.deadline > now {
                break;
            }
            out.push(*e);
            self.heap.pop();
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }
}

/// The deadlines plus the timerfd that wakes the poll for the earliest one.
#[derive(Debug)]
pub(crate) struct TimerQueue {
    deadlines: Deadlines,
    fd: TimerFd,
    /// The deadline the fd is armed for, if any.
    armed: Option<u64>,
}

impl TimerQueue {
    pub(crate) fn new() -> io::Result<Self> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        Ok(TimerQueue {
            deadlines: Deadlines::default(),
            fd,
            armed: None,
        })
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_fd().as_raw_fd()
    }

    pub(crate) fn schedule(&mut self, deadline: u64, slot: u32, generation: u32) {
        self.deadlines.push(Entry {
            deadline,
            slot,
            generation,
        });
    }

    /// Called when the fd polled readable: clears its expiry count and
    /// collects the entries due at `now`.
    pub(crate) fn expire(&mut self, now: u64, out: &mut Vec<Entry>) {
        let mut count = [0u8; 8];
        // EAGAIN (a spurious wake-up) is as good as a read: either way the
        // fd is quiet until its next expiry.
        let _ = nix::unistd::read(self.fd.as_fd(), &mut count);
        self.armed = None;
        self.deadlines.pop_due(now, out);
    }

    /// Arms the fd for the earliest deadline if that changed since the last
    /// call; the worker calls this once per loop turn.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        let earliest = self.deadlines.earliest();
        if earliest == self.armed {
            return Ok(());
        }
        match earliest {
            // An absolute time of zero would disarm the timer; a deadline of
            // zero is long past, so one nanosecond fires just as promptly.
            Some(t) => self.fd.set(
                Expiration::OneShot(TimeSpec::from_duration(std::time::Duration::from_nanos(
                    t.max(1),
                ))),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )?,
            None => self.fd.unset()?,
        }
        self.armed = earliest;
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.deadlines.len()
    }
}

impl AsFd for TimerQueue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::now_ns;

    #[test]
    fn pops_in_deadline_order() {
        let mut d = Deadlines::default();
        for (i, t) in [50u64, 10, 30, 10, 70].into_iter().enumerate() {
            d.push(Entry {
                deadline: t,
                slot: i as u32,
                generation: 0,
            });
        }
        let mut out = Vec::new();
        d.pop_due(30, &mut out);
        let got: Vec<(u64, u32)> = out.iter().map(|e| (e.deadline, e.slot)).collect();
        assert_eq!(got, [(10, 1), (10, 3), (30, 2)]);
        assert_eq!(d.earliest(), Some(50));
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn timerfd_fires_at_the_absolute_deadline() {
        let mut q = TimerQueue::new().unwrap();
        let start = now_ns();
        let deadline = start + 3_000_000;
        q.schedule(deadline, 7, 1);
        q.sync().unwrap();
        let mut poll = mio::Poll::new().unwrap();
        let fd = q.fd();
        crate::server::worker::register_fd(poll.registry(), fd, mio::Token(0)).unwrap();
        let mut events = mio::Events::with_capacity(4);
        poll.poll(&mut events, Some(std::time::Duration::from_secs(1)))
            .unwrap();
        assert!(!events.is_empty(), "timerfd never fired");
        let now = now_ns();
        assert!(now >= deadline, "fired {} ns early", deadline - now);
        let mut out = Vec::new();
        q.expire(now, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].slot, out[0].generation), (7, 1));
        assert_eq!(q.pending(), 0);
        q.sync().unwrap();
    }
}
