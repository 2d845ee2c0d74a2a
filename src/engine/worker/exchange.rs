//! One request's exchange on one connection: put its bytes in place, write
//! them, read the response into the connection's `Rx` until it says done,
//! then record the outcome and return the connection to the pool. The bytes
//! are parsed by `engine::conn`, which is pure; this file is the syscalls
//! and the bookkeeping around it.

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

use super::pool::ConnState;
use super::{Job, NO_CONV, Worker};
use crate::clock::now_ns;
use crate::engine::conn::Step;
use crate::metrics::errors::ErrorClass;
use crate::uuid::write_uuid;

/// How soon after a request was sent a reused connection's close or reset
/// still counts as the server's idle close crossing the request, on a local
/// network: a round trip plus the event loop's own delay under load.
const STALE_WINDOW_NS: u64 = 10_000_000;

/// The widest window, however slow the connect was.
const STALE_WINDOW_MAX_NS: u64 = 500_000_000;

/// The window for a connection whose TCP handshake took `handshake_ns`. A
/// close the server sent before our request arrives at most half a round
/// trip after we sent it; a far endpoint's round trip can exceed the local
/// window, so it widens to twice the handshake (about two round trips).
fn stale_window(handshake_ns: u64) -> u64 {
    handshake_ns
        .saturating_mul(2)
        .clamp(STALE_WINDOW_NS, STALE_WINDOW_MAX_NS)
}

impl Worker<'_> {
    /// Sends `job` on connected, idle connection `i`.
    pub(super) fn start(&mut self, i: usize, job: Job) {
        self.busy += 1;
        let c = &mut self.conns[i];
        c.job = job;
        self.begin_send(i);
    }

    pub(super) fn begin_send(&mut self, i: usize) {
        if !self.prepare(i) {
            return;
        }
        let keep_text = self.s.keep_text
            || self.s.scenarios[self.conns[i].job.slot.scenario as usize].keep_text
            || self.conns[i].job.conv != NO_CONV;
        let c = &mut self.conns[i];
        c.state = ConnState::Sending;
        c.written = 0;
        c.filled = 0;
        c.rx.reset(now_ns());
        c.rx.tally.keep_text = keep_text;
        c.rx.tally.fail_over_cap = c.job.conv != NO_CONV;
        self.write_more(i);
    }

    /// Puts the request's bytes where `write_more` takes them: straight from
    /// the prebuilt arena, a copy with this request's id written in, or a
    /// conversation turn built from its history. False when a conversation
    /// has no further turn to send (it is ended and the connection freed).
    fn prepare(&mut self, i: usize) -> bool {
        let job = self.conns[i].job;
        if job.conv != NO_CONV {
            return self.next_turn(i);
        }
        let sc = &self.s.scenarios[job.slot.scenario as usize];
        let c = &mut self.conns[i];
        if sc.requests.has_id_slots() {
            let bytes = sc.requests.get(job.slot.sample);
            c.wbuf.clear();
            c.wbuf.extend_from_slice(bytes);
            let mut id = [0u8; 36];
            write_uuid(&job.id, &mut id);
            for at in sc.requests.id_slots(job.slot.sample) {
                c.wbuf[at..at + 36].copy_from_slice(&id);
            }
            c.from_wbuf = true;
        } else {
            c.from_wbuf = false;
        }
        true
    }

    pub(super) fn write_more(&mut self, i: usize) {
        let sc = &self.s.scenarios[self.conns[i].job.slot.scenario as usize];
        loop {
            let c = &mut self.conns[i];
            let bytes = if c.from_wbuf {
                &c.wbuf[..]
            } else {
                sc.requests.get(c.job.slot.sample)
            };
            let stream = c.stream.as_mut().expect("sending has a stream");
            match stream.write(&bytes[c.written..]) {
                Ok(n) => {
                    c.written += n;
                    if c.written == bytes.len() {
                        c.state = ConnState::Receiving;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lost(i, io_error(&e));
                    return;
                }
            }
        }
    }

    /// Reads until the socket is drained. A short read means drained, so
    /// the next bytes bring a new edge — unless the peer has closed or reset
    /// (`closed`): no edge follows that, so then reading goes on until the
    /// end or the error is seen.
    pub(super) fn read_more(&mut self, i: usize, closed: bool) {
        let proto = self.s.scenarios[self.conns[i].job.slot.scenario as usize].protocol;
        loop {
            let c = &mut self.conns[i];
            if c.filled == c.buf.len() {
                // Only a head can fill the buffer: bodies are consumed whole.
                self.fail(i, ErrorClass::MalformedResponse, now_ns());
                return;
            }
            let space = c.buf.len() - c.filled;
            let stream = c.stream.as_mut().expect("receiving has a stream");
            let n = match stream.read(&mut c.buf[c.filled..]) {
                Ok(0) => {
                    self.on_eof(i);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.lost(i, io_error(&e));
                    return;
                }
            };
            let t = now_ns();
            c.filled += n;
            match c.rx.receive(&mut c.buf, &mut c.filled, t, proto) {
                Ok(Step::More) => {}
                Ok(Step::Done { keep_alive }) => {
                    self.complete(i, keep_alive, t);
                    return;
                }
                Err(class) => {
                    self.fail(i, class, t);
                    return;
                }
            }
            if n < space && !closed {
                return;
            }
        }
    }

    fn on_eof(&mut self, i: usize) {
        let t = now_ns();
        let c = &mut self.conns[i];
        match c.state {
            ConnState::Idle => self.close_idle(i),
            _ if c.rx.eof_completes() => self.complete(i, false, t),
            _ => self.lost(i, ErrorClass::Reset),
        }
    }

    /// The connection broke mid-request. A reused keep-alive connection
    /// that broke before any response byte, while the request was still
    /// being written or within `stale_window` of sending it, was most
    /// likely closed by the server while idle (its close crossed the
    /// request): the request is re-sent once on a new connection instead of
    /// being charged to the endpoint. Later than that, the server may have
    /// read the whole request and started on it, and a POST is not re-sent
    /// blind: the request fails.
    fn lost(&mut self, i: usize, class: ErrorClass) {
        let c = &mut self.conns[i];
        let racing = c.state == ConnState::Sending
            || now_ns().saturating_sub(c.rx.t_send) <= stale_window(c.handshake_ns);
        if c.served > 0 && c.rx.t_first_byte == 0 && !c.job.retried && racing {
            let mut job = c.job;
            job.retried = true;
            self.counters.stale_retries.fetch_add(1, Ordering::Relaxed);
            self.release(i);
            self.busy -= 1;
            self.pending.push_front(job);
            return;
        }
        self.fail(i, class, now_ns());
    }

    /// A complete response on connection `i`.
    fn complete(&mut self, i: usize, keep_alive: bool, t_end: u64) {
        let proto = self.s.scenarios[self.conns[i].job.slot.scenario as usize].protocol;
        let c = &mut self.conns[i];
        let status = c.rx.status();
        let error = c.rx.conclude(proto);
        self.emit(i, error, status, t_end);
        let c = &mut self.conns[i];
        c.served += 1;
        self.busy -= 1;
        if keep_alive && c.state == ConnState::Receiving {
            c.state = ConnState::Idle;
            self.idle[c.endpoint].push(i);
        } else {
            self.release(i);
        }
    }

    /// Request on connection `i` failed: record it and drop the connection.
    pub(super) fn fail(&mut self, i: usize, class: ErrorClass, t_end: u64) {
        if self.conns[i].warm {
            self.conns[i].warm = false;
            self.release(i);
            return;
        }
        let status = self.conns[i].rx.status();
        self.emit(i, class, status, t_end);
        self.busy -= 1;
        self.release(i);
    }
}

fn io_error(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => ErrorClass::Reset,
        Some(libc::ETIMEDOUT) => ErrorClass::RequestTimeout,
        _ => ErrorClass::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stale_window_widens_with_the_round_trip_within_bounds() {
        assert_eq!(stale_window(0), STALE_WINDOW_NS);
        assert_eq!(stale_window(100_000), STALE_WINDOW_NS);
        assert_eq!(stale_window(40_000_000), 80_000_000);
        assert_eq!(stale_window(u64::MAX), STALE_WINDOW_MAX_NS);
    }
}
