//! Raw sockets against a server.

use std::io::Read;

/// Reads until the server closes; true for a clean close (FIN, or a TLS
/// stream's close_notify or bare TCP end), false for a reset, with what
/// came before.
pub(crate) fn read_to_close(s: &mut impl Read) -> (bool, Vec<u8>) {
    let mut got = Vec::new();
    let mut tmp = [0u8; 65536];
    loop {
        match s.read(&mut tmp) {
            Ok(0) => return (true, got),
            Ok(n) => got.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return (true, got),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (false, got),
            Err(e) => panic!("reading to the server's close: {e} (have {got:?})"),
        }
    }
}
