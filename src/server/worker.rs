//! One worker process's event loop: a mio poll over its listening socket,
//! its connections, the timerfd that paces tokens, and a signalfd for
//! SIGTERM. Everything a worker does happens on this one thread, so nothing
//! is locked and a connection is only touched when its socket, its timer or
//! the listener says so. Connections live in a slab indexed by the poll
//! token; each slot has a generation so a timer entry left behind by a closed
//! connection can never wake the connection that reuses the slot.
//!
//! The worker also guards itself against its clients: past `max_connections`
//! a new connection gets a prebuilt 503 and is closed; a sweep, every eighth
//! of the idle timeout, closes connections that have waited on their client
//! too long; and when `accept` fails for want of descriptors or memory, the
//! accept is retried on a short timer and whenever a connection closes, since
//! the edge-triggered listener would otherwise stay silent until the next
//! client arrives, however many are queued.

use std::io;
use std::net::TcpListener as StdListener;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Registry, Token};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use super::Shared;
use super::access::Access;
use super::cache::RepeatCache;
use super::conn::{Conn, Ctx, InputBudget, Outcome, Settings};
use super::faults::FaultPlan;
use super::formats::{self, Problem};
use super::head::{self, Framing, ResponseHead, Status};
use super::stats::{CounterBlock, WorkerCounters};
use super::timer::{Entry, TimerQueue};
use crate::clock::now_ns;

const LISTENER: Token = Token(usize::MAX - 1);
const TIMER: Token = Token(usize::MAX - 2);
const SIGNAL: Token = Token(usize::MAX - 3);

/// How soon a failed `accept` (out of descriptors or memory) is retried.
const ACCEPT_RETRY_NS: u64 = 20_000_000;
/// Longest gap between two sweeps for connections past their time.
const SWEEP_MAX_NS: u64 = 1_000_000_000;
/// Shortest gap between two sweeps.
const SWEEP_MIN_NS: u64 = 10_000_000;
/// Refused connections (the 503 at the cap) being closed at once; past
/// this, more are closed without an answer.
const REFUSING_MAX: usize = 64;

struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

pub(super) struct Worker<'a> {
    poll: Poll,
    listener: TcpListener,
    signals: SignalFd,
    slots: Vec<Slot>,
    free: Vec<u32>,
    ctx: Ctx<'a>,
    due: Vec<Entry>,
    /// Connections served (not refused) now open, and their cap.
    live: usize,
    max_connections: usize,
    /// Refused connections still closing.
    refusing: usize,
    /// The whole 503 a connection over the cap gets.
    busy: Vec<u8>,
    /// When to try `accept` again after it failed (0: it did not).
    accept_retry_at: u64,
    sweep_ns: u64,
    next_sweep: u64,
}

/// What the limits of one worker are, from the server's flags.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub max_connections: usize,
    pub input_budget: u64,
}

impl<'a> Worker<'a> {
    /// Sets up the loop. SIGTERM must already be blocked in this thread: the
    /// signalfd is how it is received.
    pub(super) fn new(
        listener: StdListener,
        settings: Settings,
        limits: Limits,
        faults: FaultPlan,
        access: Access,
        shared: Shared,
        all: &'a CounterBlock,
    ) -> io::Result<Self> {
        let poll = Poll::new()?;
        listener.set_nonblocking(true)?;
        let mut listener = TcpListener::from_std(listener);
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let timers = TimerQueue::new()?;
        register_fd(poll.registry(), timers.fd(), TIMER)?;
        let mut mask = SigSet::empty();
        mask.add(Signal::SIGTERM);
        let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
        register_fd(poll.registry(), signals.as_fd().as_raw_fd(), SIGNAL)?;
        let sweep_ns = match settings.idle_timeout_ns {
            0 => SWEEP_MAX_NS,
            t => (t / 8).clamp(SWEEP_MIN_NS, SWEEP_MAX_NS),
        };
        Ok(Worker {
            poll,
            listener,
            signals,
            slots: Vec::new(),
            free: Vec::new(),
            ctx: Ctx {
                settings,
                counters: all.worker(settings.worker as usize),
                all,
                faults,
                access,
                tls: shared.tls,
                replies: shared.replies,
                timers,
                budget: InputBudget {
                    limit: limits.input_budget,
                    used: 0,
                },
                seq: 0,
                cache: settings.cache_repeats.then(RepeatCache::new),
            },
            due: Vec::new(),
            live: 0,
            max_connections: limits.max_connections,
            refusing: 0,
            busy: busy_response(limits.max_connections),
            accept_retry_at: 0,
            sweep_ns,
            next_sweep: now_ns().saturating_add(sweep_ns),
        })
    }

    /// Serves until SIGTERM.
    pub(super) fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            self.ctx.timers.sync()?;
            let now = now_ns();
            if now >= self.next_sweep {
                self.sweep(now);
                self.next_sweep = now.saturating_add(self.sweep_ns);
            }
            if self.accept_retry_at != 0 && now >= self.accept_retry_at {
                self.accept_retry_at = 0;
                self.accept();
            }
            // The sweep and the accept retry are coarse (milliseconds), so
            // the poll's own timeout serves them; token pacing has the
            // timerfd.
            let mut wake = self.next_sweep;
            if self.accept_retry_at != 0 {
                wake = wake.min(self.accept_retry_at);
            }
            let timeout = Duration::from_nanos(wake.saturating_sub(now_ns()));
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    TIMER => self.fire_timers(),
                    SIGNAL => {
                        if self.terminated() {
                            return Ok(());
                        }
                    }
                    Token(i) => {
                        let hup = ev.is_read_closed() || ev.is_error();
                        let readable = ev.is_readable() || hup;
                        self.conn_event(i, readable, ev.is_writable(), hup);
                    }
                }
            }
        }
    }

    fn terminated(&mut self) -> bool {
        let mut seen = false;
        while let Ok(Some(info)) = self.signals.read_signal() {
            seen |= info.ssi_signo == Signal::SIGTERM as u32;
        }
        seen
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut sock, _)) => {
                    let refuse = self.live >= self.max_connections;
                    if refuse && self.refusing >= REFUSING_MAX {
                        // Too many refusals already closing: this one is
                        // closed unanswered.
                        WorkerCounters::bump(&self.ctx.counters.over_capacity, 1);
                        continue;
                    }
                    // Token events are small writes that must leave now, not
                    // wait for the previous one's ACK.
                    let _ = sock.set_nodelay(true);
                    // A refused connection speaks TLS too: its 503 follows
                    // the handshake, so the client reads why.
                    let tls = match &self.ctx.tls {
                        None => None,
                        Some(config) => match Conn::tls_session(config) {
                            Some(t) => Some(t),
                            None => continue,
                        },
                    };
                    let slot = match self.free.pop() {
                        Some(s) => s,
                        None => {
                            self.slots.push(Slot {
                                generation: 0,
                                conn: None,
                            });
                            (self.slots.len() - 1) as u32
                        }
                    };
                    let s = &mut self.slots[slot as usize];
                    let registered = self.poll.registry().register(
                        &mut sock,
                        Token(slot as usize),
                        Interest::READABLE | Interest::WRITABLE,
                    );
                    if registered.is_err() {
                        self.free.push(slot);
                        continue;
                    }
                    let now = now_ns();
                    s.conn = Some(if refuse {
                        WorkerCounters::bump(&self.ctx.counters.over_capacity, 1);
                        self.refusing += 1;
                        Conn::refuse(sock, tls, slot, s.generation, now, &self.busy)
                    } else {
                        self.live += 1;
                        let drip = self.ctx.settings.drip_ns;
                        Conn::new(sock, tls, slot, s.generation, now, drip)
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if e.kind() == io::ErrorKind::Interrupted
                        || e.kind() == io::ErrorKind::ConnectionAborted => {}
                // Out of descriptors or memory (or anything else): the
                // listener raises no new edge for the connections already
                // queued, so retry on a timer, or sooner when one closes.
                Err(_) => {
                    WorkerCounters::bump(&self.ctx.counters.accept_failures, 1);
                    self.accept_retry_at = now_ns().saturating_add(ACCEPT_RETRY_NS);
                    return;
                }
            }
        }
    }

    /// Closes every connection that has waited on its client too long.
    fn sweep(&mut self, now: u64) {
        let idle = self.ctx.settings.idle_timeout_ns;
        for i in 0..self.slots.len() {
            let Some(conn) = self.slots[i].conn.as_ref() else {
                continue;
            };
            if conn.expired(now, idle) {
                if !conn.lingering() {
                    WorkerCounters::bump(&self.ctx.counters.timed_out, 1);
                }
                self.close(i, Outcome::Close);
            }
        }
    }

    fn conn_event(&mut self, i: usize, readable: bool, writable: bool, hup: bool) {
        let Some(conn) = self.slots.get_mut(i).and_then(|s| s.conn.as_mut()) else {
            return;
        };
        let outcome = conn.on_io(&mut self.ctx, readable, writable, hup);
        if outcome != Outcome::Open {
            self.close(i, outcome);
        }
    }

    fn fire_timers(&mut self) {
        let now = now_ns();
        let mut due = std::mem::take(&mut self.due);
        self.ctx.timers.expire(now, &mut due);
        for e in due.drain(..) {
            let s = &mut self.slots[e.slot as usize];
            if s.generation != e.generation {
                continue;
            }
            let Some(conn) = s.conn.as_mut() else {
                continue;
            };
            if conn.timer_at != e.deadline {
                continue;
            }
            let outcome = conn.on_timer(&mut self.ctx, now);
            if outcome != Outcome::Open {
                self.close(e.slot as usize, outcome);
            }
        }
        self.due = due;
    }

    fn close(&mut self, i: usize, how: Outcome) {
        let s = &mut self.slots[i];
        // Closing the fd removes it from the epoll set; no deregister call.
        if let Some(mut conn) = s.conn.take() {
            conn.abandon(self.ctx.counters);
            if how == Outcome::Reset {
                conn.set_reset();
            }
            self.ctx.budget.release(conn.reserved);
            if conn.refused {
                self.refusing -= 1;
            } else {
                self.live -= 1;
            }
        }
        s.generation = s.generation.wrapping_add(1);
        self.free.push(i as u32);
        if self.accept_retry_at != 0 {
            // A descriptor was just freed: the next turn accepts at once.
            self.accept_retry_at = 1;
        }
    }
}

/// The 503 a connection over the cap gets, whole, with `connection: close`.
fn busy_response(cap: usize) -> Vec<u8> {
    let mut body = Vec::new();
    let msg = format!("this server worker is at its limit of {cap} connections; retry later");
    formats::error_body(None, &mut body, Problem::Unavailable, 503, &msg);
    let mut out = Vec::new();
    head::write(
        &mut out,
        &ResponseHead {
            status: Status::Unavailable,
            content_type: head::JSON,
            framing: Framing::Length(body.len()),
            messages: 0,
            keep_alive: false,
            http10: false,
            extra: b"retry-after: 1\r\n",
        },
    );
    out.extend_from_slice(&body);
    out
}

/// Registers a descriptor that is not a socket (the timerfd, the signalfd)
/// for readable events.
pub(super) fn register_fd(registry: &Registry, fd: RawFd, token: Token) -> io::Result<()> {
    registry.register(&mut mio::unix::SourceFd(&fd), token, Interest::READABLE)
}
