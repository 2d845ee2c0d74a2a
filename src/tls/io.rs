//! Bytes through a rustls connection on a non-blocking socket, with the
//! socket's own conventions: `WouldBlock` when nothing can move now, `Ok(0)`
//! for the peer's end. Callers keep their plain-socket code paths and call
//! these where a connection has TLS.
//!
//! Two differences from a plain socket matter to an edge-triggered loop:
//! a short plaintext read does not mean the socket is drained (rustls reads
//! ciphertext a record at a time), so a TLS reader reads on to `WouldBlock`;
//! and accepted plaintext may still wait as ciphertext, so a writer is done
//! only when [`pending`] is false as well.
//!
//! A TLS failure comes back as an `io::Error` of kind `InvalidData` that
//! wraps the `rustls::Error`; [`tls_error`] gets it back out. The alert
//! rustls queues for it is written first, so the peer learns why.

use std::io::{self, Read, Write};

use rustls::ConnectionCommon;

/// Where a handshake stands after [`handshake`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handshake {
    Done,
    /// Waits for the socket (readable, or writable when [`pending`]).
    Blocked,
}

/// The first bytes the peer sent during a handshake, so a failure can say
/// what the peer speaks instead (plain HTTP answers `HTTP/1.1 400 …`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FirstBytes {
    pub bytes: [u8; 8],
    pub len: u8,
}

impl FirstBytes {
    pub(crate) fn get(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// A reader that notes the first bytes it passes through.
struct Sniff<'a, R> {
    inner: &'a mut R,
    first: &'a mut FirstBytes,
}

impl<R: Read> Read for Sniff<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        let have = self.first.len as usize;
        let take = (self.first.bytes.len() - have).min(n);
        self.first.bytes[have..have + take].copy_from_slice(&buf[..take]);
        self.first.len += take as u8;
        Ok(n)
    }
}

/// Moves the handshake on as far as the socket allows. `first` collects
/// the peer's first bytes for [`super::reason`].
pub(crate) fn handshake<D, S: Read + Write>(
    tls: &mut ConnectionCommon<D>,
    sock: &mut S,
    first: &mut FirstBytes,
) -> io::Result<Handshake> {
    loop {
        if flush(tls, sock)? {
            return Ok(Handshake::Blocked);
        }
        if !tls.is_handshaking() {
            return Ok(Handshake::Done);
        }
        let mut sniff = Sniff { inner: sock, first };
        match tls.read_tls(&mut sniff) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection during the TLS handshake",
                ));
            }
            Ok(_) => process(tls, sock)?,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Handshake::Blocked),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reads plaintext into `buf`: `Ok(n > 0)`, `Ok(0)` at the peer's end
/// (close_notify, or the TCP end without it, which HTTP framing judges),
/// or `WouldBlock` once the socket has nothing more.
pub(crate) fn read<D, S: Read + Write>(
    tls: &mut ConnectionCommon<D>,
    sock: &mut S,
    buf: &mut [u8],
) -> io::Result<usize> {
    loop {
        match tls.reader().read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        match tls.read_tls(sock) {
            Ok(0) => return Ok(0),
            Ok(_) => process(tls, sock)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Takes plaintext from `bytes` (as much as rustls buffers: its limit
/// bounds memory) and sends what ciphertext the socket takes. `Ok(0)` with
/// bytes left means the socket is full: wait for writable, then call
/// again. Done when all is taken and [`pending`] is false.
pub(crate) fn write<D, S: Read + Write>(
    tls: &mut ConnectionCommon<D>,
    sock: &mut S,
    bytes: &[u8],
) -> io::Result<usize> {
    let n = if bytes.is_empty() {
        0
    } else {
        tls.writer().write(bytes)?
    };
    match flush(tls, sock) {
        Ok(_) => Ok(n),
        // Taken: what did not go out waits in rustls for the next call.
        Err(e) if e.kind() == io::ErrorKind::WouldBlock && n > 0 => Ok(n),
        Err(e) => Err(e),
    }
}

/// Writes queued ciphertext; true when some still waits (the socket is
/// full), false when all is out.
pub(crate) fn flush<D, S: Write>(tls: &mut ConnectionCommon<D>, sock: &mut S) -> io::Result<bool> {
    while tls.wants_write() {
        match tls.write_tls(sock) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// Whether ciphertext waits for the socket.
pub(crate) fn pending<D>(tls: &ConnectionCommon<D>) -> bool {
    tls.wants_write()
}

/// Decrypts what arrived; on a TLS error, sends the alert rustls queued
/// (best effort) and returns the error wrapped.
fn process<D, S: Write>(tls: &mut ConnectionCommon<D>, sock: &mut S) -> io::Result<()> {
    match tls.process_new_packets() {
        Ok(_) => {
            // Post-handshake messages (a key update) may need an answer.
            if tls.wants_write() {
                let _ = flush(tls, sock);
            }
            Ok(())
        }
        Err(e) => {
            let _ = flush(tls, sock);
            Err(io::Error::new(io::ErrorKind::InvalidData, e))
        }
    }
}

/// Whether the peer said `close_notify` before the end [`read`] saw
/// (false: the TCP connection ended without it), or what rustls found
/// wrong in what came before the end.
pub(crate) fn closed_cleanly<D>(tls: &mut ConnectionCommon<D>) -> Result<bool, rustls::Error> {
    tls.process_new_packets()
        .map(|state| state.peer_has_closed())
}

/// The rustls error an `io::Error` from this module carries, if any.
pub(crate) fn tls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}
