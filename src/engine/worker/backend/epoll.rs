//! The epoll backend: mio readiness, edge-triggered. Each connection's
//! socket is registered for both directions once; the state machine reads
//! and writes until `WouldBlock` and the next edge calls it again.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use super::Io;
use crate::engine::worker::{Ready, Worker};
use crate::shm::doorbell::Doorbell;

const BELL: Token = Token(usize::MAX);

pub(in crate::engine::worker) struct Epoll {
    poll: Poll,
    events: Events,
}

impl Epoll {
    pub(super) fn new(bell: &Doorbell) -> io::Result<Epoll> {
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut SourceFd(&bell.fd()), BELL, Interest::READABLE)?;
        Ok(Epoll {
            poll,
            events: Events::with_capacity(1024),
        })
    }

    pub(super) fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        self.poll.poll(&mut self.events, Some(timeout))
    }
}

impl Ready {
    fn of(ev: &mio::event::Event) -> Ready {
        Ready {
            readable: ev.is_readable() || ev.is_read_closed() || ev.is_error(),
            writable: ev.is_writable() || ev.is_error(),
            closed: ev.is_read_closed() || ev.is_error(),
        }
    }
}

impl Worker<'_> {
    fn epoll(&mut self) -> &mut Epoll {
        match &mut self.io {
            Io::Epoll(e) => e,
            _ => unreachable!("epoll call on another backend"),
        }
    }

    pub(super) fn epoll_dispatch(&mut self) {
        // Taken out while the connections run (no allocation: an empty
        // `Events` has no capacity), put back for the next wait.
        let events = std::mem::replace(&mut self.epoll().events, Events::with_capacity(0));
        for ev in events.iter() {
            if ev.token() != BELL {
                self.on_event(ev.token().0, Ready::of(ev));
            }
        }
        self.epoll().events = events;
    }

    pub(super) fn epoll_open(
        &mut self,
        i: usize,
        addr: SocketAddr,
        source: Option<(usize, IpAddr)>,
    ) -> io::Result<()> {
        let mut stream = self.open(addr, source)?;
        let _ = stream.set_nodelay(true);
        let registered = self.epoll().poll.registry().register(
            &mut stream,
            Token(i),
            Interest::READABLE | Interest::WRITABLE,
        );
        self.conns[i].stream = Some(stream);
        registered
    }

    pub(super) fn epoll_release(&mut self, i: usize) {
        if let Some(mut s) = self.conns[i].stream.take() {
            let _ = self.epoll().poll.registry().deregister(&mut s);
        }
        self.free.push(i);
    }

    /// The connect of slot `i` finished, one way or the other (a readiness
    /// edge): a failure fails its request; success goes on as `connected`.
    pub(in crate::engine::worker) fn on_connecting(
        &mut self,
        i: usize,
        readable: bool,
        closed: bool,
    ) {
        let c = &mut self.conns[i];
        let stream = c.stream.as_ref().expect("connecting has a stream");
        match stream.take_error() {
            Ok(Some(e)) | Err(e) => {
                let class = crate::engine::worker::pool::connect_error(&e);
                self.fail(i, class, crate::clock::now_ns());
                return;
            }
            Ok(None) => {}
        }
        match stream.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
            Err(e) => {
                let class = crate::engine::worker::pool::connect_error(&e);
                self.fail(i, class, crate::clock::now_ns());
                return;
            }
        }
        self.connected(i, readable, closed);
    }
}
