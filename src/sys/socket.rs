//! Raw socket setup the standard library does not offer: listening sockets
//! with `SO_REUSEPORT` set before `bind` (so several workers share one port
//! and the kernel spreads connections between them), and `SO_LINGER {on, 0}`
//! to end a connection with RST. Every call goes through `cvt`, which turns
//! `-1` into `io::Error::last_os_error()`, so callers only see `io::Error`.

use std::io;
use std::mem::size_of;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::cvt;

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` is a live c_int and the length passed is its size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&raw const value).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Makes the kernel end the connection with RST when `fd` is closed,
/// discarding anything unsent.
pub(crate) fn set_linger_zero(fd: RawFd) -> io::Result<()> {
    let lg = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: `lg` is a live `linger` and the length passed is its size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const lg).cast(),
            size_of::<libc::linger>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A `sockaddr_storage` holding `addr`, and its length.
pub(crate) fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for
            // `sockaddr_in`.
            unsafe { (&raw mut ss).cast::<libc::sockaddr_in>().write(sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: `sockaddr_storage` is larger than and aligned for
            // `sockaddr_in6`.
            unsafe { (&raw mut ss).cast::<libc::sockaddr_in6>().write(sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A bound TCP socket (not yet listening) with `SO_REUSEADDR`, and
/// `SO_REUSEPORT` when `reuse_port`.
fn bound(addr: &SocketAddr, reuse_port: bool) -> io::Result<OwnedFd> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain socket creation; the fd is owned right below.
    let raw = cvt(unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    })?;
    // SAFETY: `raw` is a fresh fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    set_int(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuse_port {
        set_int(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    let (ss, len) = sockaddr(addr);
    // SAFETY: `ss` holds a valid address of `len` bytes.
    cvt(unsafe { libc::bind(raw, (&raw const ss).cast(), len) })?;
    Ok(fd)
}

/// A non-blocking TCP socket bound to `source` (port 0: the kernel picks
/// one of that address's ephemeral ports) and connecting to `addr`; the
/// connect finishes later, as a writable socket.
///
/// `IP_BIND_ADDRESS_NO_PORT` defers the port choice to the connect, so a
/// port is taken per (source, destination) pair, not per source: without
/// it every bound socket would hold a port of its own across all
/// destinations and the range would run out 28 k sockets sooner.
pub(crate) fn connect_from(addr: SocketAddr, source: IpAddr) -> io::Result<std::net::TcpStream> {
    let fd = socket_for(&addr)?;
    bind_source(&fd, source)?;
    start_connect(&fd, &addr)?;
    Ok(std::net::TcpStream::from(fd))
}

/// A non-blocking TCP socket bound to `port` (and `source`, else the
/// unspecified address of `addr`'s family) and connecting to `addr`, for a
/// worker that picks its own ports (`engine::ports`). `SO_REUSEADDR` lets
/// the port serve other destinations too: only the same destination from
/// the same port fails, at connect, with `EADDRNOTAVAIL`; a port another
/// process holds fails at bind with `EADDRINUSE` ([`port_taken`] says both).
pub(crate) fn connect_bound(
    addr: SocketAddr,
    source: Option<IpAddr>,
    port: u16,
) -> io::Result<std::net::TcpStream> {
    let fd = bound_port(addr, source, port)?;
    start_connect(&fd, &addr)?;
    Ok(std::net::TcpStream::from(fd))
}

/// [`connect_bound`]'s socket before its connect, for a backend that
/// connects by itself (io_uring).
pub(crate) fn bound_port(
    addr: SocketAddr,
    source: Option<IpAddr>,
    port: u16,
) -> io::Result<OwnedFd> {
    let fd = socket_for(&addr)?;
    set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    let ip = source.unwrap_or(match addr {
        SocketAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    });
    let (ss, len) = sockaddr(&SocketAddr::new(ip, port));
    // SAFETY: `ss` holds a valid address of `len` bytes.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&raw const ss).cast(), len) })?;
    Ok(fd)
}

/// Whether `e`, from [`connect_bound`], means only that its port is taken:
/// the next port may do.
pub(crate) fn port_taken(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EADDRINUSE | libc::EADDRNOTAVAIL)
    )
}

/// Whether `source` is an address of this host that sockets can be bound
/// to (`--source-addrs`): binding one without a port says so at once.
pub(crate) fn check_source(source: IpAddr) -> io::Result<()> {
    let probe = SocketAddr::new(source, 0);
    let fd = socket_for(&probe)?;
    bind_source(&fd, source)
}

/// A fresh non-blocking, close-on-exec TCP socket of `addr`'s family.
pub(crate) fn socket_for(addr: &SocketAddr) -> io::Result<OwnedFd> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain socket creation; the fd is owned right below.
    let raw = cvt(unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    })?;
    // SAFETY: `raw` is a fresh fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Starts a non-blocking connect of `fd` to `addr`: `Ok` once it is under
/// way (`EINPROGRESS`) or done.
fn start_connect(fd: &OwnedFd, addr: &SocketAddr) -> io::Result<()> {
    let (ss, len) = sockaddr(addr);
    // SAFETY: `ss` holds a valid address of `len` bytes.
    match cvt(unsafe { libc::connect(fd.as_raw_fd(), (&raw const ss).cast(), len) }) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Binds `fd` to `source`, port chosen at connect (see `connect_from`).
pub(crate) fn bind_source(fd: &OwnedFd, source: IpAddr) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    if source.is_ipv4() {
        set_int(raw, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)?;
    }
    let (ss, len) = sockaddr(&SocketAddr::new(source, 0));
    // SAFETY: `ss` holds a valid address of `len` bytes.
    cvt(unsafe { libc::bind(raw, (&raw const ss).cast(), len) }).map(drop)
}

/// Fails with `AddrInUse` when some socket already listens on `addr`.
///
/// Sockets with `SO_REUSEPORT` of the same user may share a port, so without
/// this check a second `llmload serve` on a busy port would silently take half
/// of the first one's connections. A probe bound without `SO_REUSEPORT` (but
/// with `SO_REUSEADDR`, so old TIME_WAIT connections do not count) fails
/// exactly when a listener holds the port.
fn check_free(addr: &SocketAddr) -> io::Result<()> {
    bound(addr, false).map(drop)
}

/// `n` non-blocking listening sockets sharing one address with
/// `SO_REUSEPORT`. With port 0 the first socket picks the port and the others
/// join it. Returns the sockets and the address actually bound.
pub(crate) fn listeners(addr: SocketAddr, n: usize) -> io::Result<(Vec<TcpListener>, SocketAddr)> {
    if addr.port() != 0 {
        check_free(&addr)?;
    }
    let mut out = Vec::with_capacity(n);
    let mut bound_addr = addr;
    for _ in 0..n {
        let fd = bound(&bound_addr, true)?;
        // SAFETY: `fd` is a bound stream socket.
        cvt(unsafe { libc::listen(fd.as_raw_fd(), 4096) })?;
        let listener = TcpListener::from(fd);
        if bound_addr.port() == 0 {
            bound_addr = listener.local_addr()?;
        }
        out.push(listener);
    }
    Ok((out, bound_addr))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_zero_shares_one_port() {
        let (ls, addr) = listeners("127.0.0.1:0".parse().unwrap(), 3).unwrap();
        assert_ne!(addr.port(), 0);
        for l in &ls {
            assert_eq!(l.local_addr().unwrap(), addr);
        }
        // A listener already holds the port, so a fresh bind must say so.
        let err = listeners(addr, 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn a_connection_comes_from_the_source_address_asked_for() {
        let (ls, addr) = listeners("127.0.0.1:0".parse().unwrap(), 1).unwrap();
        let s = connect_from(addr, "127.0.0.3".parse().unwrap()).unwrap();
        ls[0].set_nonblocking(false).unwrap();
        let (_, peer) = ls[0].accept().unwrap();
        assert_eq!(peer.ip().to_string(), "127.0.0.3");
        assert_eq!(s.local_addr().unwrap().ip(), peer.ip());
    }

    #[test]
    fn a_connection_bound_to_a_port_comes_from_it_and_the_same_pair_is_refused() {
        let (ls, addr) = listeners("127.0.0.1:0".parse().unwrap(), 1).unwrap();
        ls[0].set_nonblocking(false).unwrap();
        // A free port: one the kernel just handed out and took back.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let src: IpAddr = "127.0.0.2".parse().unwrap();
        let s = connect_bound(addr, Some(src), port).unwrap();
        let (_, peer) = ls[0].accept().unwrap();
        assert_eq!(peer, SocketAddr::new(src, port));
        assert_eq!(s.local_addr().unwrap(), peer);
        // The same source, port and destination again: taken.
        let again = connect_bound(addr, Some(src), port).unwrap_err();
        assert!(port_taken(&again), "{again}");
        // Another source address may use the port.
        let other = connect_bound(addr, Some("127.0.0.3".parse().unwrap()), port).unwrap();
        let (_, peer) = ls[0].accept().unwrap();
        assert_eq!(peer.port(), port);
        drop((s, other));
        // A port a listener holds is refused at bind.
        let held = connect_bound(addr, None, addr.port()).unwrap_err();
        assert!(port_taken(&held), "{held}");
    }

    #[test]
    fn only_local_addresses_are_sources() {
        check_source("127.0.0.9".parse().unwrap()).unwrap();
        if std::fs::read_to_string("/proc/sys/net/ipv4/ip_nonlocal_bind")
            .is_ok_and(|v| v.trim() != "0")
        {
            eprintln!("skipping: ip_nonlocal_bind lets any address be bound here");
            return;
        }
        // TEST-NET-3: documentation only, never an address of this host.
        let e = check_source("203.0.113.7".parse().unwrap()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EADDRNOTAVAIL));
    }

    #[test]
    fn ipv6_loopback_when_available() {
        match listeners("[::1]:0".parse().unwrap(), 2) {
            Ok((ls, addr)) => assert_eq!(ls[1].local_addr().unwrap(), addr),
            Err(e) => eprintln!("skipping: no IPv6 loopback here ({e})"),
        }
    }
}
