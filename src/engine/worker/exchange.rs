//! One request's exchange on one connection: put its bytes in place, write
//! them, read the response into the connection's `Rx` until it says done,
//! then record the outcome and return the connection to the pool. The bytes
//! are parsed by `engine::conn`, which is pure; this file is the syscalls
//! and the bookkeeping around it.
//!
//! Over TLS the same buffers are used: plaintext goes into rustls and comes
//! out of it (`tls::io`), so the parsers never know. The one branch on the
//! plain path is whether the connection has a TLS state. Two rules differ
//! for TLS in this edge-triggered loop: a short read does not mean the
//! socket is drained (rustls reads a record at a time), so reading goes on
//! to `WouldBlock`; and a request is sent only when rustls holds no
//! ciphertext for it either.

use std::borrow::Cow;
use std::io::{self, IoSlice, Read, Write};
use std::sync::atomic::Ordering;

use mio::net::TcpStream;
use rustls::ClientConnection;

use super::pool::ConnState;
use super::{DOWN_NS, Job, NO_CONV, Worker};
use crate::clock::now_ns;
use crate::engine::conn::Step;
use crate::metrics::errors::ErrorClass;
use crate::protocol::Protocol;
use crate::tls::io as tls_io;
use crate::tls::reason;
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
            let (head, rest) = sc.requests.pieces(job.slot.sample, c.target);
            c.wbuf.clear();
            c.wbuf.extend_from_slice(head);
            c.wbuf.extend_from_slice(rest);
            let mut id = [0u8; 36];
            write_uuid(&job.id, &mut id);
            let shift = sc.requests.head_shift(c.target);
            for at in sc.requests.id_slots(job.slot.sample) {
                let at = at.saturating_add_signed(shift);
                c.wbuf[at..at + 36].copy_from_slice(&id);
            }
            c.from_wbuf = true;
        } else {
            c.from_wbuf = false;
        }
        true
    }

    pub(super) fn write_more(&mut self, i: usize) {
        if self.io.is_uring() && self.conns[i].tls.is_none() {
            self.uring_send(i);
            return;
        }
        #[cfg(test)]
        if let super::backend::Io::Fake(_) = self.io {
            self.fake_send(i);
            return;
        }
        let sc = &self.s.scenarios[self.conns[i].job.slot.scenario as usize];
        loop {
            let c = &mut self.conns[i];
            // A head of its own (empty but for a further endpoint of the
            // scenario), then the shared bytes.
            let (head, bytes) = if c.from_wbuf {
                (&[][..], &c.wbuf[..])
            } else {
                sc.requests.pieces(c.job.slot.sample, c.target)
            };
            let stream = c.stream.as_mut().expect("sending has a stream");
            let wrote = if c.written < head.len() {
                write_head(stream, c.tls.as_deref_mut(), &head[c.written..], bytes)
            } else {
                let rest = &bytes[c.written - head.len()..];
                match c.tls.as_deref_mut() {
                    None => stream.write(rest),
                    Some(tls) => tls_write(tls, stream, rest),
                }
            };
            match wrote {
                Ok(n) => {
                    c.written += n;
                    if c.written == head.len() + bytes.len() {
                        // Over TLS the last bytes may still wait as
                        // ciphertext: a writable edge brings them out.
                        if c.tls.as_deref().is_some_and(|t| tls_io::pending(t)) {
                            return;
                        }
                        c.state = ConnState::Receiving;
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.broken(i, &e);
                    return;
                }
            }
        }
    }

    /// Reads until the socket is drained. A short plain read means drained,
    /// so the next bytes bring a new edge — unless the peer has closed or
    /// reset (`closed`): no edge follows that, so then reading goes on until
    /// the end or the error is seen. Over TLS only `WouldBlock` says drained.
    pub(super) fn read_more(&mut self, i: usize, closed: bool) {
        let proto = self.s.scenarios[self.conns[i].job.slot.scenario as usize].protocol;
        loop {
            let c = &mut self.conns[i];
            if c.filled == c.buf.len() {
                // Only a head can fill the buffer: bodies are consumed whole.
                self.malformed(i, now_ns());
                return;
            }
            let space = c.buf.len() - c.filled;
            let stream = c.stream.as_mut().expect("receiving has a stream");
            let got = match c.tls.as_deref_mut() {
                None => stream.read(&mut c.buf[c.filled..]),
                Some(tls) => tls_read(tls, stream, &mut c.buf[c.filled..]),
            };
            let n = match got {
                Ok(0) => {
                    self.on_eof(i);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.broken(i, &e);
                    return;
                }
            };
            if !self.take_bytes(i, n, now_ns(), proto) {
                return;
            }
            if n < space && !closed && self.conns[i].tls.is_none() {
                return;
            }
        }
    }

    /// `n` bytes just put at `buf[filled..]` of connection `i` (at `t`):
    /// parsed, and the response completed or failed if they say so. True
    /// while the response goes on.
    pub(super) fn take_bytes(&mut self, i: usize, n: usize, t: u64, proto: &dyn Protocol) -> bool {
        let c = &mut self.conns[i];
        c.filled += n;
        match c.rx.receive(&mut c.buf, &mut c.filled, t, proto) {
            Ok(Step::More) => true,
            Ok(Step::Done { keep_alive }) => {
                self.complete(i, keep_alive, t);
                false
            }
            Err(ErrorClass::MalformedResponse) => {
                self.malformed(i, t);
                false
            }
            Err(class) => {
                self.fail(i, class, t);
                false
            }
        }
    }

    /// The response on connection `i` is not HTTP. An http:// endpoint that
    /// answers with a TLS record is a TLS server: the message says to use
    /// https://.
    #[cold]
    pub(super) fn malformed(&mut self, i: usize, t: u64) {
        let c = &mut self.conns[i];
        if c.tls.is_none() && c.rx.head.is_none() && reason::looks_like_tls(&c.buf[..c.filled]) {
            c.rx.set_message(reason::TLS_ON_HTTP.as_bytes());
        }
        self.fail(i, ErrorClass::MalformedResponse, t);
    }

    /// A read or write on connection `i` failed. A TLS failure is named by
    /// its reason: `tls_handshake` when the server refused the connection
    /// right after the handshake (`unconfirmed`), else `tls_error`; a socket
    /// error is the connection breaking (`lost`).
    #[cold]
    pub(super) fn broken(&mut self, i: usize, e: &io::Error) {
        if self.conns[i].tls.is_none() || tls_io::tls_error(e).is_none() {
            self.lost(i, io_error(e));
            return;
        }
        let (class, why) = if self.unconfirmed(i) {
            self.refused_after_handshake(i);
            let c = &self.conns[i];
            (ErrorClass::TlsHandshake, reason::handshake(e, &c.first))
        } else {
            (ErrorClass::TlsError, reason::after_handshake(e))
        };
        self.conns[i].rx.set_message(why.as_bytes());
        self.fail(i, class, now_ns());
    }

    pub(super) fn on_eof(&mut self, i: usize) {
        let t = now_ns();
        let c = &mut self.conns[i];
        match c.state {
            ConnState::Idle => self.close_idle(i),
            _ if c.rx.eof_completes() => self.complete(i, false, t),
            // A TLS server's alert to a plain-HTTP request, then its close.
            _ if c.tls.is_none()
                && c.rx.head.is_none()
                && reason::looks_like_tls(&c.buf[..c.filled]) =>
            {
                self.malformed(i, t)
            }
            _ if c.tls.is_some() => {
                let why = tls_cut(c.tls.as_deref_mut().expect("a TLS connection"));
                c.rx.set_message(why.as_bytes());
                self.lost(i, ErrorClass::Reset);
            }
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
        if keep_alive && c.state == ConnState::Receiving && self.s.endpoints[c.endpoint].keep_alive
        {
            c.state = ConnState::Idle;
            self.idle[c.endpoint].push(i);
        } else {
            self.release(i);
        }
    }

    /// Request on connection `i` failed: record it and drop the connection.
    pub(super) fn fail(&mut self, i: usize, class: ErrorClass, t_end: u64) {
        let connecting = matches!(
            self.conns[i].state,
            ConnState::Connecting | ConnState::Handshaking
        );
        // A connection the generator could not open (no descriptor, no
        // port) is its own limit, reported as such, not the endpoint's.
        if connecting
            && !matches!(
                class,
                ErrorClass::Aborted
                    | ErrorClass::Dns
                    | ErrorClass::FdExhausted
                    | ErrorClass::PortsExhausted
            )
        {
            self.conn_stats.failed.fetch_add(1, Ordering::Relaxed);
        }
        // The endpoint, not this machine, failed to connect: new
        // connections of a scenario with several endpoints avoid it for a
        // while (`open_target`).
        if connecting
            && matches!(
                class,
                ErrorClass::ConnectRefused
                    | ErrorClass::ConnectTimeout
                    | ErrorClass::ConnectError
                    | ErrorClass::Dns
                    | ErrorClass::TlsHandshake
            )
        {
            self.down_until[self.conns[i].endpoint] = t_end.saturating_add(DOWN_NS);
        }
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

/// The rest of a further endpoint's own head and the shared bytes after
/// it: one vectored write on a plain socket, so the head does not leave as
/// a packet of its own; through TLS the head alone (rustls takes it whole
/// and frames it with what follows).
#[inline(never)]
fn write_head(
    stream: &mut TcpStream,
    tls: Option<&mut ClientConnection>,
    head: &[u8],
    rest: &[u8],
) -> io::Result<usize> {
    match tls {
        None => stream.write_vectored(&[IoSlice::new(head), IoSlice::new(rest)]),
        Some(tls) => tls_write(tls, stream, head),
    }
}

/// Why a TLS connection's response ended at the server's close: said
/// with or without `close_notify`, as rustls tells them apart.
#[cold]
fn tls_cut(tls: &mut ClientConnection) -> Cow<'static, str> {
    match tls_io::closed_cleanly(tls) {
        Ok(true) => {
            "the server closed the TLS connection (close_notify) before the response ended".into()
        }
        Ok(false) => {
            "peer closed connection without sending TLS close_notify: the response was cut short"
                .into()
        }
        Err(e) => reason::describe(&e),
    }
}

/// Plaintext through TLS. Out of line, as is [`tls_write`], so the plain
/// path's loop stays the size it was.
#[inline(never)]
fn tls_read(tls: &mut ClientConnection, sock: &mut TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    tls_io::read(tls, sock, buf)
}

/// Plaintext into TLS, as `write` on a socket: `WouldBlock` when nothing
/// was taken, or when all was taken and its ciphertext could not go out
/// (the socket is full either way).
#[inline(never)]
fn tls_write(tls: &mut ClientConnection, sock: &mut TcpStream, bytes: &[u8]) -> io::Result<usize> {
    match tls_io::write(tls, sock, bytes) {
        Ok(0) if !bytes.is_empty() || tls_io::pending(tls) => Err(io::ErrorKind::WouldBlock.into()),
        other => other,
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
