//! A backend for the worker's unit tests: it opens no socket. A test says
//! how each address answers a connect and puts what connections see (bytes,
//! a close, an error) in the event queue; a wait returns at once, and a
//! dispatch hands the queued events to the state machine through the calls
//! the io_uring backend makes for its completions (`connected`, `on_sent`,
//! `on_arrived`, `on_recv_end`, `fail`). What the worker opens, sends and
//! closes is recorded for the test to read.
//!
//! Plain connections only: a TLS handshake needs a byte stream under
//! rustls, and stays where it is (`Handshaking`) here.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;

use super::Io;
use crate::clock::now_ns;
use crate::engine::worker::Worker;
use crate::engine::worker::pool::{ConnState, connect_error};

/// How an address answers a connect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::engine::worker) enum Connect {
    /// Connected on the next dispatch.
    Accept,
    /// Fails on the next dispatch with this errno.
    Refuse(i32),
    /// Never answers (only the connect timeout ends it).
    Hang,
}

/// Something a connection slot sees; delivered in queue order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::engine::worker) enum Event {
    /// The connect finished: 0, or `-errno`.
    Connected(usize, i32),
    /// A send finished: bytes taken, or `-errno`.
    Sent(usize, i32),
    /// Bytes arrived.
    Bytes(usize, Vec<u8>),
    /// The peer closed.
    Eof(usize),
    /// A receive failed with this errno.
    Error(usize, i32),
}

impl Event {
    fn slot(&self) -> usize {
        match *self {
            Event::Connected(i, _)
            | Event::Sent(i, _)
            | Event::Bytes(i, _)
            | Event::Eof(i)
            | Event::Error(i, _) => i,
        }
    }
}

#[derive(Debug, Default)]
pub(in crate::engine::worker) struct Fake {
    /// How each address answers; `Accept` when not named.
    pub connects: HashMap<SocketAddr, Connect>,
    /// Events the next dispatch delivers.
    pub events: VecDeque<Event>,
    /// Every connect the worker started: slot and address.
    pub opened: Vec<(usize, SocketAddr)>,
    /// Every send the worker made: slot and bytes.
    pub sent: Vec<(usize, Vec<u8>)>,
    /// Every slot the worker closed, in order.
    pub released: Vec<usize>,
    /// The bytes of the `Bytes` event being delivered (where `on_arrived`
    /// copies from, as from a ring's buffer).
    arrived: Vec<u8>,
}

impl Worker<'_> {
    pub(in crate::engine::worker) fn fake(&mut self) -> &mut Fake {
        match &mut self.io {
            Io::Fake(f) => f,
            _ => unreachable!("fake call on another backend"),
        }
    }

    pub(super) fn fake_open(&mut self, i: usize, addr: SocketAddr) -> io::Result<()> {
        let f = self.fake();
        f.opened.push((i, addr));
        match f.connects.get(&addr).copied().unwrap_or(Connect::Accept) {
            Connect::Accept => f.events.push_back(Event::Connected(i, 0)),
            Connect::Refuse(errno) => f.events.push_back(Event::Connected(i, -errno)),
            Connect::Hang => {}
        }
        Ok(())
    }

    /// Closing a slot cancels what is still queued for it, as the ring's
    /// generation does.
    pub(super) fn fake_release(&mut self, i: usize) {
        let f = self.fake();
        f.released.push(i);
        f.events.retain(|e| e.slot() != i);
        self.free.push(i);
    }

    /// Records the rest of connection `i`'s request, which the next
    /// dispatch reports sent whole.
    pub(in crate::engine::worker) fn fake_send(&mut self, i: usize) {
        let sc = &self.s.scenarios[self.conns[i].job.slot.scenario as usize];
        let c = &self.conns[i];
        let (head, rest) = if c.from_wbuf {
            (&[][..], &c.wbuf[..])
        } else {
            sc.requests.pieces(c.job.slot.sample, c.target)
        };
        let bytes = [head, rest].concat()[c.written..].to_vec();
        let n = bytes.len() as i32;
        let f = self.fake();
        f.sent.push((i, bytes));
        f.events.push_back(Event::Sent(i, n));
    }

    /// Delivers the events queued before this call; those they cause wait
    /// for the next.
    pub(super) fn fake_dispatch(&mut self) {
        let events: Vec<Event> = self.fake().events.drain(..).collect();
        let closed_before = self.fake().released.len();
        for ev in events {
            // An event for a slot closed meanwhile was cancelled with it.
            let i = ev.slot();
            if self.conns[i].state == ConnState::Empty
                || self.fake().released[closed_before..].contains(&i)
            {
                continue;
            }
            match ev {
                Event::Connected(i, result) => {
                    if self.conns[i].state != ConnState::Connecting {
                        continue;
                    }
                    if result < 0 {
                        let e = io::Error::from_raw_os_error(-result);
                        self.fail(i, connect_error(&e), now_ns());
                    } else {
                        self.connected(i, false, false);
                    }
                }
                Event::Sent(i, result) => self.on_sent(i, result),
                Event::Bytes(i, bytes) => {
                    self.fake().arrived = bytes;
                    let n = self.fake().arrived.len();
                    self.on_arrived(i, n, |io, off, dst| {
                        if let Io::Fake(f) = io {
                            dst.copy_from_slice(&f.arrived[off..off + dst.len()]);
                        }
                    });
                }
                Event::Eof(i) => self.on_recv_end(i, 0),
                Event::Error(i, errno) => self.on_recv_end(i, errno),
            }
        }
    }
}
