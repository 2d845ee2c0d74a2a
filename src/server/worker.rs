//! One worker process's event loop: a mio poll over its listening socket,
//! its connections, the timerfd that paces tokens, and a signalfd for
//! SIGTERM. Everything a worker does happens on this one thread, so nothing
//! is locked and a connection is only touched when its socket, its timer or
//! the listener says so. Connections live in a slab indexed by the poll
//! token; each slot has a generation so a timer entry left behind by a closed
//! connection can never wake the connection that reuses the slot.

use std::io;
use std::net::TcpListener as StdListener;
use std::os::fd::{AsFd, AsRawFd, RawFd};

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Registry, Token};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use super::access::Access;
use super::conn::{Conn, Ctx, Outcome, Settings};
use super::faults::FaultPlan;
use super::stats::WorkerCounters;
use super::timer::{Entry, TimerQueue};
use crate::clock::now_ns;

const LISTENER: Token = Token(usize::MAX - 1);
const TIMER: Token = Token(usize::MAX - 2);
const SIGNAL: Token = Token(usize::MAX - 3);

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
}

impl<'a> Worker<'a> {
    /// Sets up the loop. SIGTERM must already be blocked in this thread: the
    /// signalfd is how it is received.
    pub(super) fn new(
        listener: StdListener,
        settings: Settings,
        faults: FaultPlan,
        access: Access,
        counters: &'a WorkerCounters,
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
        Ok(Worker {
            poll,
            listener,
            signals,
            slots: Vec::new(),
            free: Vec::new(),
            ctx: Ctx {
                settings,
                counters,
                faults,
                access,
                timers,
                seq: 0,
            },
            due: Vec::new(),
        })
    }

    /// Serves until SIGTERM.
    pub(super) fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            self.ctx.timers.sync()?;
            match self.poll.poll(&mut events, None) {
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
                    // Token events are small writes that must leave now, not
                    // wait for the previous one's ACK.
                    let _ = sock.set_nodelay(true);
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
                    s.conn = Some(Conn::new(sock, slot, s.generation));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if e.kind() == io::ErrorKind::Interrupted
                        || e.kind() == io::ErrorKind::ConnectionAborted => {}
                // Out of descriptors or memory: the backlog keeps the rest
                // until a later connection raises the next edge.
                Err(_) => return,
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
        if let Some(conn) = s.conn.take() {
            if how == Outcome::Reset {
                conn.set_reset();
            }
        }
        s.generation = s.generation.wrapping_add(1);
        self.free.push(i as u32);
    }
}

/// Registers a descriptor that is not a socket (the timerfd, the signalfd)
/// for readable events.
pub(super) fn register_fd(registry: &Registry, fd: RawFd, token: Token) -> io::Result<()> {
    registry.register(&mut mio::unix::SourceFd(&fd), token, Interest::READABLE)
}
