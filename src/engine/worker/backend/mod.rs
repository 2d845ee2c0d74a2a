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
//! - `fake` (unit tests only): no sockets; a test scripts what each
//!   connection sees and the fake reports it as `uring` reports
//!   completions, through the same calls below.

mod epoll;
#[cfg(test)]
mod fake;
mod uring;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::Worker;
use super::pool::ConnState;
use crate::clock::now_ns;
use crate::engine::io::IoPlan;
use crate::plan::IoBackend;
use crate::shm::doorbell::Doorbell;

pub(super) use epoll::Epoll;
#[cfg(test)]
pub(super) use fake::{Connect, Event, Fake};
pub(super) use uring::Uring;

/// The worker's backend.
pub(super) enum Io {
    Epoll(Epoll),
    Uring(Box<Uring>),
    #[cfg(test)]
    Fake(Box<Fake>),
}

impl Io {
    /// The backend `plan` names, for `slots` connections that may grow to
    /// `most`, woken by `bell`.
    pub(super) fn new(plan: &IoPlan, slots: usize, most: usize, bell: &Doorbell) -> io::Result<Io> {
        Ok(match plan.backend {
            IoBackend::Epoll => Io::Epoll(Epoll::new(bell)?),
            IoBackend::Uring => Io::Uring(Box::new(Uring::new(slots, most, plan.sqpoll, bell)?)),
        })
    }

    /// Room for connection slots up to `n` (at most the `most` it was made
    /// for): epoll needs none, io_uring its per-slot state.
    pub(super) fn grow(&mut self, n: usize) {
        if let Io::Uring(u) = self {
            u.grow(n);
        }
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
            #[cfg(test)]
            Io::Fake(_) => Ok(()),
        }
    }

    /// Hands what the last wait brought to the connections.
    pub(super) fn io_dispatch(&mut self) {
        match self.io {
            Io::Uring(_) => self.uring_dispatch(),
            Io::Epoll(_) => self.epoll_dispatch(),
            #[cfg(test)]
            Io::Fake(_) => self.fake_dispatch(),
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
        match self.io {
            Io::Uring(_) => self.uring_open(i, addr, source),
            Io::Epoll(_) => self.epoll_open(i, addr, source),
            #[cfg(test)]
            Io::Fake(_) => self.fake_open(i, addr),
        }
    }

    /// Closes connection `i`'s socket; the slot goes back on the free list
    /// once no operation of the backend still refers to it.
    pub(super) fn io_release(&mut self, i: usize) {
        match self.io {
            Io::Uring(_) => self.uring_release(i),
            Io::Epoll(_) => self.epoll_release(i),
            #[cfg(test)]
            Io::Fake(_) => self.fake_release(i),
        }
    }

    /// A completion backend's send of `result` bytes (or `-errno`) on
    /// connection `i` finished: the request is out, or its rest is sent.
    pub(super) fn on_sent(&mut self, i: usize, result: i32) {
        if self.conns[i].state != ConnState::Sending {
            return;
        }
        if result < 0 {
            self.broken(i, &io::Error::from_raw_os_error(-result));
            return;
        }
        let sc = &self.s.scenarios[self.conns[i].job.slot.scenario as usize];
        let c = &mut self.conns[i];
        c.written += result as usize;
        let total = if c.from_wbuf {
            c.wbuf.len()
        } else {
            let (head, rest) = sc.requests.pieces(c.job.slot.sample, c.target);
            head.len() + rest.len()
        };
        if c.written >= total {
            c.state = ConnState::Receiving;
        } else {
            self.write_more(i);
        }
    }

    /// `n` bytes for connection `i` arrived in a completion backend's own
    /// buffer: `copy(io, off, dst)` puts bytes `off..off + dst.len()` of
    /// them into `dst`. They go to the connection's parse buffer, as much
    /// as fits at a time, and are parsed. Bytes on an idle connection, or
    /// after a complete response, make it unusable.
    #[inline(always)]
    pub(super) fn on_arrived(&mut self, i: usize, n: usize, copy: impl Fn(&Io, usize, &mut [u8])) {
        let proto = self.s.scenarios[self.conns[i].job.slot.scenario as usize].protocol;
        let mut off = 0;
        while off < n {
            let c = &mut self.conns[i];
            if !matches!(c.state, ConnState::Sending | ConnState::Receiving) {
                if c.state == ConnState::Idle {
                    self.close_idle(i);
                }
                return;
            }
            if c.filled == c.buf.len() {
                self.malformed(i, now_ns());
                return;
            }
            let take = (n - off).min(c.buf.len() - c.filled);
            copy(&self.io, off, &mut c.buf[c.filled..c.filled + take]);
            off += take;
            if !self.take_bytes(i, take, now_ns(), proto) {
                if off < n && self.conns[i].state == ConnState::Idle {
                    self.close_idle(i);
                }
                return;
            }
        }
    }

    /// A completion backend's receive on connection `i` ended: the peer
    /// closed (`errno` 0) or the receive failed with `errno`.
    pub(super) fn on_recv_end(&mut self, i: usize, errno: i32) {
        let state = self.conns[i].state;
        if errno == 0 {
            if matches!(
                state,
                ConnState::Sending | ConnState::Receiving | ConnState::Idle
            ) {
                self.on_eof(i);
            }
        } else if matches!(state, ConnState::Sending | ConnState::Receiving) {
            self.broken(i, &io::Error::from_raw_os_error(errno));
        } else if state == ConnState::Idle {
            self.close_idle(i);
        }
    }
}
