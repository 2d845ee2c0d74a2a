//! The worker's connections: a fixed table of `Conn` slots, the free list
//! (slots with no socket) and the idle keep-alive list of each endpoint, and
//! what moves a slot between them: connect, warm-up, the idle check, close.
//! Slots are allocated once and keep their buffers for the whole run, so a
//! reconnect costs the handshake and nothing else; only the memory of an
//! unusually large response is given back after it (`Rx::shrink`), to the
//! worker's byte budget all slots share.

use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Events, Interest, Token};

use super::{BELL, Job, Ready, Worker};
use crate::clock::now_ns;
use crate::engine::conn::{Budget, READ_BUF, Rx};
use crate::metrics::errors::ErrorClass;

/// Longest the warm-up waits for its connections before the worker reports
/// ready; a slot still connecting then connects on demand.
const WARM_UP_MAX_NS: u64 = 2_000_000_000;
/// Poll slice while warming up.
const WARM_UP_POLL_NS: u64 = 10_000_000;

/// Where a connection slot is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ConnState {
    /// No socket (on the free list).
    Empty,
    Connecting,
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
    /// Request bytes when they are not sent straight from the prebuilt
    /// arena: a copy carrying a fresh conversation id, or a built turn.
    pub(super) wbuf: Vec<u8>,
    pub(super) from_wbuf: bool,
    pub(super) stream: Option<TcpStream>,
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
            wbuf: Vec::new(),
            from_wbuf: false,
            stream: None,
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
    /// Opens `warm_conns` connections and waits (bounded) until each is
    /// connected or has failed; failures are not errors, since no request
    /// was riding on them, and the slot connects again on demand.
    pub(super) fn warm_up(&mut self, events: &mut Events) {
        let n = self.s.warm_conns.min(self.conns.len());
        if n == 0 {
            return;
        }
        let ep = self.s.warm_endpoint;
        for _ in 0..n {
            let Some(i) = self.free.pop() else { break };
            self.conns[i].warm = true;
            self.connect(i, ep, Job::default());
        }
        let deadline = now_ns() + self.s.limits.connect_ns.min(WARM_UP_MAX_NS);
        while self.conns.iter().any(|c| c.warm) && now_ns() < deadline {
            if self
                .poll
                .poll(events, Some(Duration::from_nanos(WARM_UP_POLL_NS)))
                .is_err()
            {
                break;
            }
            for ev in events.iter() {
                if ev.token() != BELL {
                    self.on_event(ev.token().0, Ready::of(ev));
                }
            }
        }
        for i in 0..self.conns.len() {
            if self.conns[i].warm {
                self.fail(i, ErrorClass::ConnectTimeout, now_ns());
            }
        }
    }

    /// Starts connecting free slot `i` to endpoint `ep` for `job`.
    pub(super) fn connect(&mut self, i: usize, ep: usize, job: Job) {
        if !self.conns[i].warm {
            self.busy += 1;
        }
        let now = now_ns();
        let c = &mut self.conns[i];
        c.job = job;
        c.endpoint = ep;
        c.served = 0;
        c.t_connect = now;
        c.rx.reset(0);
        let Some(addr) = self.s.endpoints[ep] else {
            c.state = ConnState::Connecting;
            self.fail(i, ErrorClass::Dns, now);
            return;
        };
        match TcpStream::connect(addr) {
            Ok(mut stream) => {
                let _ = stream.set_nodelay(true);
                if let Err(e) = self.poll.registry().register(
                    &mut stream,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    c.stream = Some(stream);
                    self.fail(i, connect_error(&e), now);
                    return;
                }
                c.stream = Some(stream);
                c.state = ConnState::Connecting;
            }
            Err(e) => {
                c.state = ConnState::Connecting;
                self.fail(i, connect_error(&e), now);
            }
        }
    }

    /// A readiness event on connecting slot `i`: the connect finished, one
    /// way or the other. A warm connection goes idle; otherwise its request
    /// is sent at once.
    pub(super) fn on_connecting(&mut self, i: usize, readable: bool, closed: bool) {
        let c = &mut self.conns[i];
        let stream = c.stream.as_ref().expect("connecting has a stream");
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => {
                let class = connect_error(&e);
                self.fail(i, class, now_ns());
                return;
            }
            Ok(None) => {}
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(e) => {
                let class = connect_error(&e);
                self.fail(i, class, now_ns());
                return;
            }
        }
        if c.buf.is_empty() {
            c.buf.resize(READ_BUF, 0);
            let budget = c.rx.budget().clone();
            let limits = &self.s.limits;
            c.rx = Rx::new(
                limits.max_gaps,
                self.s.keep_text,
                limits.max_output_text,
                budget,
            );
        }
        c.handshake_ns = now_ns().saturating_sub(c.t_connect);
        self.counters
            .connections_opened
            .fetch_add(1, Ordering::Relaxed);
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

    /// Idle connection `i` became readable: anything it says means it is
    /// no longer usable.
    pub(super) fn check_idle(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let stream = c.stream.as_mut().expect("idle has a stream");
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

    /// Closes connection `i` and puts its slot on the free list.
    pub(super) fn release(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.state = ConnState::Empty;
        c.filled = 0;
        self.free.push(i);
    }
}

fn connect_error(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ErrorClass::ConnectRefused,
        Some(libc::ETIMEDOUT) => ErrorClass::ConnectTimeout,
        Some(libc::EMFILE | libc::ENFILE) => ErrorClass::FdExhausted,
        Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => ErrorClass::PortsExhausted,
        Some(libc::ECONNRESET) => ErrorClass::Reset,
        _ => ErrorClass::ConnectError,
    }
}
