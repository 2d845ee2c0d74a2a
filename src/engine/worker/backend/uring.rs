//! The io_uring backend: connect, send and receive are operations of the
//! worker's ring (`sys::uring`); a turn of the loop is one `io_uring_enter`
//! that submits what the turn queued and waits for completions.
//!
//! Each connection slot's socket sits in the ring's table of registered
//! files at the slot's index. Once connected, a plain connection has one
//! multishot receive armed for the rest of its life: each completion names
//! a provided buffer, whose bytes are copied into the connection's parse
//! buffer and given to the same `Rx` as under epoll, and the buffer goes
//! back to the ring at once. So an idle connection's close or stray bytes
//! arrive the same way. A request goes out as one send of its prebuilt
//! bytes (another send for the rest, if the socket took only part).
//!
//! An https connection is connected by the ring too, then runs in
//! readiness mode: a multishot poll reports its socket's readiness, and
//! the same synchronous rustls code as under epoll reads and writes it.
//!
//! Every operation is tagged with its slot, the slot's generation and its
//! kind (`UserData`). Closing a slot cancels its operations and bumps the
//! generation, so completions still to come are recognized as stale (their
//! buffers given back); the slot returns to the free list only when none
//! of its operations is left in flight, so no new socket or new request
//! bytes meet an old operation.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use mio::net::TcpStream;

use super::Io;
use crate::clock::now_ns;
use crate::engine::worker::pool::{ConnState, connect_error};
use crate::engine::worker::{Ready, Worker};
use crate::shm::doorbell::Doorbell;
use crate::sys::uring::{Completion, PollTarget, Ring};

/// Bytes per provided buffer: a small response whole, an SSE stream in a
/// few pieces.
const BUF_SIZE: u32 = 4096;

/// What an operation was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Op {
    Connect = 1,
    Recv = 2,
    Send = 3,
    Poll = 4,
    Cancel = 5,
    Close = 6,
    Bell = 7,
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Connect,
            2 => Op::Recv,
            3 => Op::Send,
            4 => Op::Poll,
            5 => Op::Cancel,
            6 => Op::Close,
            7 => Op::Bell,
            _ => return None,
        })
    }
}

/// An operation's tag: kind in the top byte, the slot's generation (24
/// bits) below it, the slot in the low 32 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct UserData {
    op: Op,
    generation: u32,
    slot: u32,
}

const GEN_MASK: u32 = 0x00ff_ffff;

impl UserData {
    fn encode(self) -> u64 {
        (self.op as u64) << 56 | u64::from(self.generation & GEN_MASK) << 32 | u64::from(self.slot)
    }

    fn decode(v: u64) -> Option<UserData> {
        Some(UserData {
            op: Op::from_u8((v >> 56) as u8)?,
            generation: (v >> 32) as u32 & GEN_MASK,
            slot: v as u32,
        })
    }
}

/// The ring's view of one connection slot.
#[derive(Clone, Copy, Debug, Default)]
struct SlotIo {
    generation: u32,
    /// Operations submitted and not yet finished (a multishot one counts
    /// once, until its last completion).
    in_flight: u32,
    /// The socket is in the table of registered files.
    registered: bool,
    /// Closed, waiting for `in_flight` to reach 0 before the free list.
    parked: bool,
}

pub(in crate::engine::worker) struct Uring {
    pub(super) ring: Ring,
    slots: Vec<SlotIo>,
    /// Completions of the last wait (kept to reuse its capacity).
    done: Vec<Completion>,
    bell: std::os::fd::RawFd,
    /// Send the arena's bytes with `IORING_OP_SEND_ZC` (measurement
    /// switch, `LLMLOAD_URING_SEND_ZC=1`; see perf/RESULTS.md).
    zerocopy: bool,
}

/// Readiness a TLS connection's poll watches.
const POLL_MASK: u32 =
    (libc::POLLIN | libc::POLLOUT | libc::POLLRDHUP | libc::POLLERR | libc::POLLHUP) as u32;

impl Uring {
    /// A ring for `slots` connections whose table of registered sockets
    /// has room for `table` (the most the worker may grow to).
    pub(super) fn new(
        slots: usize,
        table: usize,
        sqpoll: bool,
        bell: &Doorbell,
    ) -> io::Result<Uring> {
        let n = u32::try_from(slots.max(1)).unwrap_or(u32::MAX);
        let table = u32::try_from(table).unwrap_or(u32::MAX);
        // About two buffers per connection, so a turn in which every
        // connection receives does not run the ring dry.
        let buffers = n.saturating_mul(2).clamp(64, 8192).next_power_of_two() as u16;
        let mut ring = Ring::new(n, table, buffers, BUF_SIZE, sqpoll)?;
        let ud = UserData {
            op: Op::Bell,
            generation: 0,
            slot: 0,
        };
        ring.poll_multi(PollTarget::Fd(bell.fd()), libc::POLLIN as u32, ud.encode());
        Ok(Uring {
            ring,
            slots: vec![SlotIo::default(); n as usize],
            done: Vec::with_capacity(1024),
            bell: bell.fd(),
            zerocopy: std::env::var_os("LLMLOAD_URING_SEND_ZC").is_some_and(|v| v == "1"),
        })
    }

    /// Slots up to `n`, within the table `new` was given.
    pub(super) fn grow(&mut self, n: usize) {
        if n > self.slots.len() {
            self.slots.resize(n, SlotIo::default());
        }
    }

    fn tag(&mut self, i: usize, op: Op) -> u64 {
        let s = &mut self.slots[i];
        s.in_flight += 1;
        UserData {
            op,
            generation: s.generation,
            slot: i as u32,
        }
        .encode()
    }
}

fn ready_of(mask: u32) -> Ready {
    let m = mask as i16;
    Ready {
        readable: m & (libc::POLLIN | libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0,
        writable: m & (libc::POLLOUT | libc::POLLERR) != 0,
        closed: m & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0,
    }
}

impl Worker<'_> {
    fn uring(&mut self) -> &mut Uring {
        match &mut self.io {
            Io::Uring(u) => u,
            _ => unreachable!("io_uring call on another backend"),
        }
    }

    pub(super) fn uring_open(
        &mut self,
        i: usize,
        addr: SocketAddr,
        source: Option<(usize, IpAddr)>,
    ) -> io::Result<()> {
        let fd = self.open_unconnected(addr, source)?;
        let stream = std::net::TcpStream::from(fd);
        let _ = stream.set_nodelay(true);
        let raw = stream.as_raw_fd();
        self.conns[i].stream = Some(TcpStream::from_std(stream));
        let u = self.uring();
        u.ring.register(i as u32, raw)?;
        u.slots[i].registered = true;
        let ud = u.tag(i, Op::Connect);
        u.ring.connect(i as u32, &addr, ud);
        Ok(())
    }

    pub(super) fn uring_release(&mut self, i: usize) {
        // The ring still holds the socket: closing our descriptor does not
        // end the connection, the `close` below does.
        self.conns[i].stream = None;
        let u = self.uring();
        if u.slots[i].registered {
            u.slots[i].registered = false;
            let cancel = u.tag(i, Op::Cancel);
            let close = u.tag(i, Op::Close);
            u.ring.close(i as u32, cancel, close);
        }
        let s = &mut u.slots[i];
        s.generation = s.generation.wrapping_add(1) & GEN_MASK;
        if s.in_flight == 0 {
            self.free.push(i);
        } else {
            s.parked = true;
        }
    }

    /// Sends the rest of connection `i`'s request: one send from the
    /// prebuilt arena or the connection's own copy. A further endpoint's
    /// own head goes into the copy with the shared bytes first, so the
    /// request is still one send.
    pub(in crate::engine::worker) fn uring_send(&mut self, i: usize) {
        let sc = &self.s.scenarios[self.conns[i].job.slot.scenario as usize];
        let c = &mut self.conns[i];
        if !c.from_wbuf && c.written == 0 {
            let (head, rest) = sc.requests.pieces(c.job.slot.sample, c.target);
            if !head.is_empty() {
                c.wbuf.clear();
                c.wbuf.extend_from_slice(head);
                c.wbuf.extend_from_slice(rest);
                c.from_wbuf = true;
            }
        }
        let bytes = if c.from_wbuf {
            &c.wbuf[..]
        } else {
            sc.requests.pieces(c.job.slot.sample, c.target).1
        };
        let Io::Uring(u) = &mut self.io else {
            unreachable!("io_uring call on another backend")
        };
        let ud = u.tag(i, Op::Send);
        // The bytes stay put until the completion: the arena for the whole
        // run, `wbuf` until this slot's next request, which starts only
        // after this send's completion (`on_sent` moves the connection on;
        // a slot whose send is in flight is not reused, see `in_flight`).
        // A zero-copy send's bytes are read until its notification, which
        // may come after the response: only the arena's, never `wbuf`.
        let zc = u.zerocopy && !c.from_wbuf;
        u.ring.send(i as u32, &bytes[c.written..], zc, ud);
    }

    pub(super) fn uring_dispatch(&mut self) {
        let mut done = std::mem::take(&mut self.uring().done);
        self.uring().ring.reap(&mut done);
        for c in done.drain(..) {
            self.on_completion(c);
        }
        self.uring().done = done;
    }

    fn on_completion(&mut self, c: Completion) {
        let Some(ud) = UserData::decode(c.user_data) else {
            return;
        };
        let i = ud.slot as usize;
        if ud.op == Op::Bell {
            if !c.more() {
                let bell = self.uring().bell;
                self.uring().ring.poll_multi(
                    PollTarget::Fd(bell),
                    libc::POLLIN as u32,
                    c.user_data,
                );
            }
            return;
        }
        let u = self.uring();
        let Some(s) = u.slots.get_mut(i) else { return };
        if !c.more() {
            s.in_flight = s.in_flight.saturating_sub(1);
        }
        if s.generation != ud.generation {
            // A closed connection's operation: its buffer goes back, and
            // the slot is free once its last operation is done.
            if let Some(bid) = c.buffer() {
                u.ring.give_back(bid);
            }
            if s.in_flight == 0 && s.parked {
                s.parked = false;
                self.free.push(i);
            }
            return;
        }
        match ud.op {
            Op::Connect => self.on_connected(i, c.result),
            Op::Recv => self.on_received(i, ud, c),
            Op::Send if c.notif() => {}
            Op::Send => self.on_sent(i, c.result),
            Op::Poll => {
                if c.result > 0 {
                    self.on_event(i, ready_of(c.result as u32));
                }
                self.rearm(i, ud, &c, Op::Poll);
            }
            Op::Cancel | Op::Close | Op::Bell => {}
        }
    }

    /// A multishot operation of connection `i` that ended (out of buffers,
    /// or the kernel's own limit) is armed again while the connection
    /// lives.
    fn rearm(&mut self, i: usize, ud: UserData, c: &Completion, op: Op) {
        if c.more() || self.conns[i].state == ConnState::Empty {
            return;
        }
        let u = self.uring();
        if u.slots[i].generation != ud.generation || !u.slots[i].registered {
            return;
        }
        let tag = u.tag(i, op);
        match op {
            Op::Poll => u
                .ring
                .poll_multi(PollTarget::Slot(i as u32), POLL_MASK, tag),
            _ => u.ring.recv_multi(i as u32, tag),
        }
    }

    fn on_connected(&mut self, i: usize, result: i32) {
        if self.conns[i].state != ConnState::Connecting {
            return;
        }
        if result < 0 {
            let e = io::Error::from_raw_os_error(-result);
            self.fail(i, connect_error(&e), now_ns());
            return;
        }
        let tls = self.s.endpoints[self.conns[i].endpoint].tls.is_some();
        let u = self.uring();
        if tls {
            let tag = u.tag(i, Op::Poll);
            u.ring
                .poll_multi(PollTarget::Slot(i as u32), POLL_MASK, tag);
        } else {
            let tag = u.tag(i, Op::Recv);
            u.ring.recv_multi(i as u32, tag);
        }
        self.connected(i, false, false);
    }

    fn on_received(&mut self, i: usize, ud: UserData, c: Completion) {
        match (c.result, c.buffer()) {
            (n, Some(bid)) if n > 0 => {
                self.take_buffer(i, bid, n as usize);
                self.uring().ring.give_back(bid);
            }
            (n, _) if n == -libc::ENOBUFS => {}
            (n, _) if n <= 0 => {
                self.on_recv_end(i, -n);
                return;
            }
            _ => {}
        }
        self.rearm(i, ud, &c, Op::Recv);
    }

    /// `n` bytes in provided buffer `bid` for connection `i`.
    fn take_buffer(&mut self, i: usize, bid: u16, n: usize) {
        self.on_arrived(i, n, |io, off, dst| {
            if let Io::Uring(u) = io {
                dst.copy_from_slice(&u.ring.buffer(bid, n)[off..off + dst.len()]);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips_and_keeps_its_parts_apart() {
        for op in [
            Op::Connect,
            Op::Recv,
            Op::Send,
            Op::Poll,
            Op::Cancel,
            Op::Close,
            Op::Bell,
        ] {
            let ud = UserData {
                op,
                generation: 0x00ab_cdef,
                slot: u32::MAX - 1,
            };
            assert_eq!(UserData::decode(ud.encode()), Some(ud));
        }
        let wrapped = UserData {
            op: Op::Recv,
            generation: GEN_MASK.wrapping_add(1) & GEN_MASK,
            slot: 3,
        };
        assert_eq!(UserData::decode(wrapped.encode()).unwrap().generation, 0);
        assert_eq!(UserData::decode(0), None);
        assert_eq!(UserData::decode(0xff << 56), None);
    }

    #[test]
    fn poll_masks_map_to_readiness() {
        let r = ready_of(libc::POLLIN as u32);
        assert!(r.readable && !r.writable && !r.closed);
        let r = ready_of(libc::POLLOUT as u32);
        assert!(!r.readable && r.writable);
        let r = ready_of((libc::POLLIN | libc::POLLRDHUP) as u32);
        assert!(r.readable && r.closed);
        let r = ready_of(libc::POLLERR as u32);
        assert!(r.readable && r.writable && r.closed);
    }
}
