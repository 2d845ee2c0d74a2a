//! The worker's connections: a fixed table of `Conn` slots, the free list
//! (slots with no socket) and the idle keep-alive list of each endpoint, and
//! what moves a slot between them: connect, the TLS handshake of an https
//! endpoint, warm-up, the idle check, close. Slots are allocated once and
//! keep their buffers for the whole run, so a reconnect costs the handshake
//! and nothing else (plus, for https, the rustls connection state, which
//! cannot be reused); only the memory of an unusually large response is
//! given back after it (`Rx::shrink`), to the worker's byte budget all
//! slots share.
//!
//! Each connection's TCP connect time and TLS handshake time go into the
//! worker's histograms in shared memory (`shm::run::ConnStats`): a few
//! relaxed adds per connection, none per request.

use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mio::net::TcpStream;

use rustls::{ClientConnection, HandshakeKind, ProtocolVersion};

use super::{Job, Worker};
use crate::clock::now_ns;
use crate::engine::conn::{Budget, READ_BUF, Rx};
use crate::engine::ports::PORT_TRIES;
use crate::metrics::errors::ErrorClass;
use crate::sys::socket;
use crate::tls::TlsClient;
use crate::tls::io::{self as tls_io, FirstBytes, Handshake};
use crate::tls::reason;

/// Longest the warm-up waits for a connection after starting it (when the
/// connect timeout is not shorter); one still opening then finishes in the
/// run's loop. Counted from the last connection started, so a pool of any
/// size has the same grace for its last connection as for its first.
const WARM_UP_MAX_NS: u64 = 2_000_000_000;
/// Poll slice while warming up.
const WARM_UP_POLL_NS: u64 = 10_000_000;
/// Connections started between two looks at the events during warm-up:
/// connected ones go idle as they come, and the parent sees the progress
/// (`WorkerCounters::warming`) however many there are to open.
pub(super) const WARM_UP_BATCH: usize = 256;
/// Shortest wait for a warm-up wave's session tickets; otherwise twice as
/// long as its handshakes took (tickets follow them by about a round trip).
/// Paid in full only once, by a server that sends no tickets.
const TICKET_WAIT_MIN_NS: u64 = 50_000_000;

/// Where a connection slot is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnState {
    /// No socket (on the free list).
    Empty,
    Connecting,
    /// TCP connected, TLS handshake under way (https).
    Handshaking,
    /// Connected, no request (on its endpoint's idle list).
    Idle,
    Sending,
    Receiving,
}

pub(super) struct Conn {
    pub(super) state: ConnState,
    /// Connecting ahead of any request (warm-up); no job is attached.
    pub(super) warm: bool,
    /// Endpoint index this connection goes to.
    pub(super) endpoint: usize,
    /// Its position in the endpoint list of the current request's
    /// scenario: which prebuilt head addresses the request to it.
    pub(super) target: usize,
    /// Request bytes when they are not sent straight from the prebuilt
    /// arena: a copy carrying a fresh conversation id, or a built turn.
    pub(super) wbuf: Vec<u8>,
    pub(super) from_wbuf: bool,
    pub(super) stream: Option<TcpStream>,
    /// The TLS state of an https connection (boxed: a few hundred bytes
    /// the plain slots do not carry).
    pub(super) tls: Option<Box<ClientConnection>>,
    /// The server's first bytes in the handshake, to name a plain-HTTP
    /// server behind an https URL.
    pub(super) first: FirstBytes,
    /// When TCP connected (the handshake's start).
    pub(super) t_tcp: u64,
    /// Responses this connection has completed; > 0 means it was reused.
    pub(super) served: u32,
    pub(super) job: Job,
    pub(super) written: usize,
    pub(super) t_connect: u64,
    /// How long the TCP handshake took: about one round trip.
    pub(super) handshake_ns: u64,
    pub(super) buf: Vec<u8>,
    pub(super) filled: usize,
    pub(super) rx: Rx,
}

impl Conn {
    /// An empty slot; its buffers are allocated on first connect, and grow
    /// within `budget`, the worker's.
    pub(super) fn new(budget: &Budget) -> Conn {
        Conn {
            state: ConnState::Empty,
            warm: false,
            endpoint: 0,
            target: 0,
            wbuf: Vec::new(),
            from_wbuf: false,
            stream: None,
            tls: None,
            first: FirstBytes::default(),
            t_tcp: 0,
            served: 0,
            job: Job::default(),
            written: 0,
            t_connect: 0,
            handshake_ns: 0,
            buf: Vec::new(),
            filled: 0,
            rx: Rx::new(0, false, 0, budget.clone()),
        }
    }
}

impl Worker<'_> {
    /// Opens `warm_conns` connections, spread evenly over `warm_endpoints`,
    /// and waits (bounded, per endpoint) until each is connected or has
    /// failed; failures are not errors, since no request was riding on them
    /// (they count as failed connections, and mark their endpoint down as a
    /// request's would), and the slot connects again on demand.
    ///
    /// To an https endpoint the connections open in waves, so that most
    /// resume a session instead of paying a full handshake: a TLS 1.3
    /// ticket is used once and arrives only after a handshake, so the first
    /// wave is one connection (or as many as there are tickets already, from
    /// model discovery), and each next wave as many as the tickets the last
    /// one brought. A server that sends none gets the rest at once.
    pub(super) fn warm_up(&mut self) {
        let n = self.s.warm_conns.min(self.conns.len());
        let m = self.s.warm_endpoints.len();
        if n == 0 || m == 0 {
            return;
        }
        // An even share each; the remainder goes to the endpoints from this
        // worker's first in turn (as `next_open` starts), so that across
        // workers it spreads too.
        for k in 0..m {
            let extra = (k + m - self.s.index % m) % m < n % m;
            let share = n / m + usize::from(extra);
            self.warm_endpoint(self.s.warm_endpoints[k], share);
        }
    }

    /// Warms `n` connections to endpoint `ep`: waits until each has
    /// connected or failed, or `WARM_UP_MAX_NS` (at most the connect
    /// timeout) has passed since the last one started.
    fn warm_endpoint(&mut self, ep: usize, n: usize) {
        if n == 0 {
            return;
        }
        let grace = self.s.limits.connect_ns.min(WARM_UP_MAX_NS);
        let mut deadline = now_ns() + grace;
        let tls: Option<TlsClient> = self.s.endpoints[ep].tls.clone();
        let mut wave = tls.as_ref().map_or(n, |t| t.tickets().max(1));
        let mut opened = 0;
        while opened < n {
            let start = now_ns();
            let mut left = wave.min(n - opened);
            while left > 0 {
                let mut started = 0;
                while started < left.min(WARM_UP_BATCH) {
                    let Some(i) = self.free.pop() else { break };
                    self.conns[i].warm = true;
                    self.connect(i, ep, Job::default());
                    started += 1;
                }
                if started == 0 {
                    break;
                }
                opened += started;
                left -= started;
                self.counters
                    .warm_started
                    .fetch_add(started as u64, Ordering::Relaxed);
                self.counters.warming.fetch_add(1, Ordering::Release);
                deadline = deadline.max(now_ns() + grace);
                // Take what has connected meanwhile, without waiting.
                self.warm_events(Duration::ZERO);
            }
            self.warm_poll(deadline, |w| !w.conns.iter().any(|c| c.warm));
            let Some(t) = &tls else { break };
            if opened >= n || self.free.is_empty() || now_ns() >= deadline {
                break;
            }
            let took = now_ns() - start;
            let until = deadline.min(now_ns() + took.saturating_mul(2).max(TICKET_WAIT_MIN_NS));
            self.warm_poll(until, |w| {
                w.conns
                    .iter()
                    .filter_map(|c| c.tls.as_ref().filter(|_| c.state == ConnState::Idle))
                    .all(|t| t.tls13_tickets_received() > 0)
            });
            wave = match t.tickets() {
                0 => n - opened,
                k => k,
            };
        }
        // Connections still opening finish in the run's loop (bounded by
        // the connect timeout there) and go idle then.
    }

    /// Handles events until `done` or `until`.
    fn warm_poll(&mut self, until: u64, done: impl Fn(&Self) -> bool) {
        while !done(self) {
            let now = now_ns();
            if now >= until {
                break;
            }
            let slice = Duration::from_nanos((until - now).min(WARM_UP_POLL_NS));
            if !self.warm_events(slice) {
                break;
            }
        }
    }

    /// One wait of the warm-up, at most `slice`: false if it failed. Each
    /// wait counts as progress for the parent's start-up watch (a worker
    /// that keeps waiting within the warm-up's deadline is not hung).
    fn warm_events(&mut self, slice: Duration) -> bool {
        match self.io_wait(slice) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return true,
            Err(_) => return false,
        }
        self.io_dispatch();
        self.counters.warming.fetch_add(1, Ordering::Release);
        true
    }

    /// Starts connecting free slot `i` to endpoint `ep` for `job`.
    pub(super) fn connect(&mut self, i: usize, ep: usize, job: Job) {
        if !self.conns[i].warm {
            self.busy += 1;
        }
        let now = now_ns();
        let source = self.source_addr();
        let c = &mut self.conns[i];
        c.job = job;
        c.endpoint = ep;
        c.served = 0;
        c.t_connect = now;
        c.rx.reset(0);
        let Some(addr) = self.s.endpoints[ep].addr else {
            c.state = ConnState::Connecting;
            self.fail(i, ErrorClass::Dns, now);
            return;
        };
        c.state = ConnState::Connecting;
        if let Err(e) = self.io_open(i, addr, source) {
            self.fail(i, connect_error(&e), now);
        }
    }

    /// The local address the next connection binds to, with its position
    /// in `--source-addrs` (round-robin), or none (the kernel's choice).
    pub(super) fn source_addr(&mut self) -> Option<(usize, IpAddr)> {
        let addrs = &self.s.io.source_addrs;
        if addrs.is_empty() {
            return None;
        }
        let k = self.next_source % addrs.len();
        self.next_source = self.next_source.wrapping_add(1);
        Some((k, addrs[k]))
    }

    /// A socket connecting to `addr` from `source`: bound to the next port
    /// of this worker's own when it has some (`engine::ports`), else from a
    /// port the kernel picks.
    pub(super) fn open(
        &mut self,
        addr: SocketAddr,
        source: Option<(usize, IpAddr)>,
    ) -> io::Result<TcpStream> {
        let ip = source.map(|(_, ip)| ip);
        if let Some(opened) = self.own_port(source, |port| socket::connect_bound(addr, ip, port)) {
            return opened.map(TcpStream::from_std);
        }
        match ip {
            None => TcpStream::connect(addr),
            Some(ip) => socket::connect_from(addr, ip).map(TcpStream::from_std),
        }
    }

    /// `open` for a backend that connects by itself (io_uring): the socket
    /// bound as `open` binds it, not yet connecting. A port that turns out
    /// taken for this destination fails the connect as port exhaustion.
    pub(super) fn open_unconnected(
        &mut self,
        addr: SocketAddr,
        source: Option<(usize, IpAddr)>,
    ) -> io::Result<OwnedFd> {
        let ip = source.map(|(_, ip)| ip);
        if let Some(bound) = self.own_port(source, |port| socket::bound_port(addr, ip, port)) {
            return bound;
        }
        let fd = socket::socket_for(&addr)?;
        if let Some(ip) = ip {
            socket::bind_source(&fd, ip)?;
        }
        Ok(fd)
    }

    /// `make` on the next of this worker's own ports for `source`, passing
    /// over a port held elsewhere a few times at most; `None` when the
    /// worker has no ports of its own (or all tried were taken): the
    /// kernel picks.
    fn own_port<T>(
        &mut self,
        source: Option<(usize, IpAddr)>,
        make: impl Fn(u16) -> io::Result<T>,
    ) -> Option<io::Result<T>> {
        let k = source.map_or(0, |(k, _)| k);
        for _ in 0..PORT_TRIES {
            let port = self.s.ports.next(k)?;
            match make(port) {
                Err(e) if socket::port_taken(&e) => {}
                made => return Some(made),
            }
        }
        None
    }

    /// Slot `i`'s TCP connect succeeded (`readable`, `closed`: what the
    /// event that said so also said). A warm connection goes idle;
    /// otherwise its request is sent at once.
    pub(super) fn connected(&mut self, i: usize, readable: bool, closed: bool) {
        let c = &mut self.conns[i];
        if c.buf.is_empty() {
            // Zeroed by the allocator (calloc): fresh pages are not written,
            // so a connection's memory is what its reads touch, not the whole
            // buffer (19,000 streams: 12 KiB less each).
            c.buf = vec![0; READ_BUF];
            let budget = c.rx.budget().clone();
            let limits = &self.s.limits;
            c.rx = Rx::new(
                limits.max_gaps,
                self.s.keep_text,
                limits.max_output_text,
                budget,
            );
        }
        let now = now_ns();
        c.handshake_ns = now.saturating_sub(c.t_connect);
        self.conn_stats.tcp_connect.record(c.handshake_ns);
        if self.s.endpoints[c.endpoint].tls.is_some() {
            self.start_tls(i, now);
            return;
        }
        self.ready(i, readable, closed);
    }

    /// TCP connection `i` to an https endpoint is up (since `now`): its
    /// TLS handshake starts.
    #[inline(never)]
    fn start_tls(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        let Some(client) = &self.s.endpoints[c.endpoint].tls else {
            return;
        };
        match client.connect() {
            Ok(tls) => {
                c.tls = Some(Box::new(tls));
                c.first = FirstBytes::default();
                c.t_tcp = now;
                c.state = ConnState::Handshaking;
                self.handshake_more(i);
            }
            Err(e) => {
                c.rx.set_message(reason::describe(&e).as_bytes());
                self.fail(i, ErrorClass::TlsHandshake, now);
            }
        }
    }

    /// Moves the TLS handshake of connection `i` on as far as the socket
    /// allows; when it is done, the connection is ready. Out of line: the
    /// event loop's plain path does not carry it.
    #[inline(never)]
    pub(super) fn handshake_more(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let (Some(tls), Some(stream)) = (c.tls.as_deref_mut(), c.stream.as_mut()) else {
            return;
        };
        match tls_io::handshake(tls, stream, &mut c.first) {
            Ok(Handshake::Blocked) => {}
            Ok(Handshake::Done) => {
                let now = now_ns();
                self.conn_stats
                    .tls_handshake
                    .record(now.saturating_sub(c.t_tcp));
                if tls.handshake_kind() == Some(HandshakeKind::Resumed) {
                    self.conn_stats.resumed.fetch_add(1, Ordering::Relaxed);
                }
                self.ready(i, false, false);
                // A warm connection gone idle: whatever already came after
                // the handshake (its tickets) is taken in now, as no new
                // edge may announce it.
                if self.conns[i].state == ConnState::Idle {
                    self.check_idle(i);
                }
            }
            Err(e) => self.handshake_failed(i, &e),
        }
    }

    /// The handshake of connection `i` failed: its request fails as
    /// `tls_handshake`, the reason its message.
    #[cold]
    fn handshake_failed(&mut self, i: usize, e: &io::Error) {
        let c = &mut self.conns[i];
        let why = reason::handshake(e, &c.first);
        c.rx.set_message(why.as_bytes());
        self.fail(i, ErrorClass::TlsHandshake, now_ns());
    }

    /// Connection `i` is open (and, for https, its handshake done): a warm
    /// one goes idle, otherwise its request is sent at once.
    fn ready(&mut self, i: usize, readable: bool, closed: bool) {
        self.counters
            .connections_opened
            .fetch_add(1, Ordering::Relaxed);
        let c = &mut self.conns[i];
        self.down_until[c.endpoint] = 0;
        if c.warm {
            c.warm = false;
            c.state = ConnState::Idle;
            self.idle[c.endpoint].push(i);
            return;
        }
        self.begin_send(i);
        if readable && self.conns[i].state == ConnState::Receiving {
            self.read_more(i, closed);
        }
    }

    /// Whether connection `i` is a TLS 1.3 connection the server may still
    /// reject: nothing has come from the server since the handshake (no
    /// ticket, no response byte) on its first request. A TLS 1.3 server
    /// checks the client's certificate after the client considers the
    /// handshake done, so its refusal arrives here, as an alert.
    pub(super) fn unconfirmed(&self, i: usize) -> bool {
        let c = &self.conns[i];
        c.served == 0
            && c.rx.t_first_byte == 0
            && c.tls.as_ref().is_some_and(|t| {
                t.protocol_version() == Some(ProtocolVersion::TLSv1_3)
                    && t.tls13_tickets_received() == 0
            })
    }

    /// The server refused connection `i` right after the handshake: it is
    /// counted as a failed connection, not an opened one.
    #[cold]
    pub(super) fn refused_after_handshake(&mut self, i: usize) {
        self.counters
            .connections_opened
            .fetch_sub(1, Ordering::Relaxed);
        self.conn_stats.failed.fetch_add(1, Ordering::Relaxed);
        if self.conns[i].tls.as_ref().and_then(|t| t.handshake_kind())
            == Some(HandshakeKind::Resumed)
        {
            self.conn_stats.resumed.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Sends ciphertext waiting in connection `i`'s TLS state (a reply to
    /// a post-handshake message), on a writable event in a state that
    /// writes nothing else. A failure shows on the next read.
    #[inline(never)]
    pub(super) fn flush_tls(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let (Some(tls), Some(stream)) = (c.tls.as_deref_mut(), c.stream.as_mut())
            && tls_io::pending(tls)
        {
            let _ = tls_io::flush(tls, stream);
        }
    }

    /// Idle connection `i` became readable: anything it says means it is
    /// no longer usable — except, over TLS, records with no plaintext (a
    /// TLS 1.3 server's session tickets after the handshake), which are
    /// taken in and the connection kept.
    pub(super) fn check_idle(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let stream = c.stream.as_mut().expect("idle has a stream");
        if let Some(tls) = c.tls.as_deref_mut() {
            // Read to `WouldBlock`: a record at a time, not a short read,
            // says the socket is drained.
            match tls_io::read(tls, stream, &mut c.buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if tls_io::tls_error(&e).is_some() && self.unconfirmed(i) => {
                    self.refused_after_handshake(i);
                    self.close_idle(i);
                }
                _ => self.close_idle(i),
            }
            return;
        }
        let mut probe = [0u8; 1];
        match stream.read(&mut probe) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // EOF, stray bytes or an error: the connection is unusable.
            _ => self.close_idle(i),
        }
    }

    pub(super) fn close_idle(&mut self, i: usize) {
        let idle = &mut self.idle[self.conns[i].endpoint];
        if let Some(pos) = idle.iter().position(|&x| x == i) {
            idle.swap_remove(pos);
        }
        self.release(i);
    }

    /// Closes connection `i` and puts its slot on the free list. A TLS
    /// connection past its handshake says goodbye first (close_notify, best
    /// effort), so the server does not see a truncation.
    pub(super) fn release(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut tls) = c.tls.take()
            && !tls.is_handshaking()
            && let Some(s) = c.stream.as_mut()
        {
            tls.send_close_notify();
            let _ = tls_io::flush(&mut tls, s);
        }
        c.state = ConnState::Empty;
        c.filled = 0;
        self.io_release(i);
    }
}

pub(super) fn connect_error(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ErrorClass::ConnectRefused,
        Some(libc::ETIMEDOUT) => ErrorClass::ConnectTimeout,
        Some(libc::EMFILE | libc::ENFILE) => ErrorClass::FdExhausted,
        Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => ErrorClass::PortsExhausted,
        Some(libc::ECONNRESET) => ErrorClass::Reset,
        _ => ErrorClass::ConnectError,
    }
}
