//! What a connection needs to speak TLS beside its plain-socket code: the
//! session it is given at accept, and the socket as rustls sees it. The
//! bytes themselves move through `crate::tls::io`; this keeps the socket
//! conventions the plain path relies on (a short read means the socket is
//! empty, so the edge-triggered loop can skip the read that would return
//! `WouldBlock`).

use std::io::{self, IoSlice, Read, Write};
use std::sync::Arc;

use mio::net::TcpStream;
use rustls::ServerConnection;

/// Ciphertext a TLS session may hold for the socket: plaintext is taken
/// from the connection's output only while rustls holds less, and whatever
/// it holds counts as unsent output, so a reader that stops costs at most
/// the high-water mark plus this. Four full records, so one `writev` moves
/// a good share of a burst.
pub(super) const OUT_LIMIT: usize = 64 * 1024;

/// A new TLS session for an accepted connection (`None` if rustls refuses
/// the configuration, which it accepted when it was built).
pub(super) fn session(config: &Arc<rustls::ServerConfig>) -> Option<Box<ServerConnection>> {
    let mut session = ServerConnection::new(config.clone()).ok()?;
    session.set_buffer_limit(Some(OUT_LIMIT));
    Some(Box::new(session))
}

/// The socket as rustls reads and writes it, noting whether the last read
/// came up short: then the socket was empty, and data arriving later
/// raises a fresh edge.
pub(super) struct Sock<'a> {
    sock: &'a mut TcpStream,
    pub(super) short: bool,
}

impl<'a> Sock<'a> {
    pub(super) fn new(sock: &'a mut TcpStream) -> Self {
        Sock { sock, short: false }
    }
}

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.sock.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.write(buf)
    }

    /// rustls hands its queued records over as one vector: one `writev`.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.sock.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_read_is_noted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (accepted, _) = l.accept().unwrap();
        accepted.set_nonblocking(true).unwrap();
        let mut sock = TcpStream::from_std(accepted);
        peer.write_all(b"hello").unwrap();
        let mut buf = [0u8; 64];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut s = Sock::new(&mut sock);
        let n = loop {
            match s.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    assert!(std::time::Instant::now() < deadline);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!((n, s.short), (5, true));
        peer.write_all(&[7u8; 64]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let n = s.read(&mut buf).unwrap();
        assert_eq!((n, s.short), (64, false));
    }
}
