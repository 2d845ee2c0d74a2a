//! How a worker's bytes move: the backends behind one interface. Both
//! drive the same connection state machine (`pool`, `exchange`), the same
//! parsers (`engine::conn`) and the same records (`emit`); a backend only
//! opens sockets, waits, and turns what the kernel reports into calls of
//! that machine.
//!
//! - `epoll`: readiness through mio; the state machine reads and writes
//!   the non-blocking sockets itself.
//! - `uring`: completions through io_uring: connect, send and multishot
//!   receive run in the ring, and a turn of the loop is one
//!   `io_uring_enter`. An https connection runs in readiness mode there (a
//!   multishot poll, then the same synchronous TLS code as under epoll).

mod epoll;
mod uring;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::Worker;
use crate::engine::io::IoPlan;
use crate::plan::IoBackend;
use crate::shm::doorbell::Doorbell;

pub(super) use epoll::Epoll;
pub(super) use uring::Uring;

/// The worker's backend.
pub(super) enum Io {
    Epoll(Epoll),
    Uring(Box<Uring>),
}

impl Io {
    /// The backend `plan` names, for `slots` connections, woken by `bell`.
    pub(super) fn new(plan: &IoPlan, slots: usize, bell: &Doorbell) -> io::Result<Io> {
        Ok(match plan.backend {
            IoBackend::Epoll => Io::Epoll(Epoll::new(bell)?),
            IoBackend::Uring => Io::Uring(Box::new(Uring::new(slots, plan.sqpoll, bell)?)),
        })
    }

    /// Whether plain connections send and receive through the ring.
    pub(super) fn is_uring(&self) -> bool {
        matches!(self, Io::Uring(_))
    }
}

impl Worker<'_> {
    /// Submits what is queued and waits up to `timeout` for something to
    /// happen; `io_dispatch` then handles it.
    pub(super) fn io_wait(&mut self, timeout: Duration) -> io::Result<()> {
        match &mut self.io {
            Io::Epoll(e) => e.wait(timeout),
            Io::Uring(u) => u.ring.enter(timeout),
        }
    }

    /// Hands what the last wait brought to the connections.
    pub(super) fn io_dispatch(&mut self) {
        if self.io.is_uring() {
            self.uring_dispatch();
        } else {
            self.epoll_dispatch();
        }
    }

    /// Opens a socket for connection `i` to `addr` (from `source`, when
    /// given) and starts connecting it.
    pub(super) fn io_open(
        &mut self,
        i: usize,
        addr: SocketAddr,
        source: Option<(usize, IpAddr)>,
    ) -> io::Result<()> {
        if self.io.is_uring() {
            self.uring_open(i, addr, source)
        } else {
            self.epoll_open(i, addr, source)
        }
    }

    /// Closes connection `i`'s socket; the slot goes back on the free list
    /// once no operation of the backend still refers to it.
    pub(super) fn io_release(&mut self, i: usize) {
        if self.io.is_uring() {
            self.uring_release(i);
        } else {
            self.epoll_release(i);
        }
    }
}
