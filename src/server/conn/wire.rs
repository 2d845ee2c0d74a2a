//! The socket side of a connection: buffered output written out (one byte
//! at a time when dripping, ciphertext rustls already made first), requests
//! read in within the input bounds, what a turn of I/O leaves the
//! connection as, and the lingering close.

use super::*;

impl Conn {
    /// Writes buffered output until done or the socket is full (one byte
    /// when it is due, when dripping). With TLS, ciphertext rustls already
    /// made goes first, and the socket is full once some of it waits.
    pub(super) fn flush(&mut self) -> io::Result<()> {
        if let Some(tls) = self.tls.as_deref_mut()
            && tls_io::flush(tls, &mut self.sock)?
        {
            return Ok(());
        }
        if self.drip_ns != 0 {
            return self.drip();
        }
        while self.out_pos < self.out.len() {
            match self.send(self.out.len()) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out_pos += n;
                    // The client is reading: whatever it owes starts anew.
                    self.waiting_since = 0;
                    if self.tls.as_deref().is_some_and(|t| tls_io::pending(t)) {
                        // Taken, but the socket filled up: the writable
                        // edge brings the rest.
                        self.compact_out();
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.compact_out();
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.out_pos = 0;
        if self.out.capacity() > 4 * HIGH_WATER {
            self.out.shrink_to(HIGH_WATER);
        }
        Ok(())
    }

    /// Drops output already sent once it is a good share of the buffer.
    pub(super) fn compact_out(&mut self) {
        if self.out_pos > HIGH_WATER {
            self.out.drain(..self.out_pos);
            self.out_pos = 0;
        }
    }

    /// Sends `out[out_pos..end]` with a socket's meaning: `Ok(n)` bytes
    /// taken, `WouldBlock` when none can be. With TLS, taken means sealed
    /// into rustls, whose records may still wait for the socket.
    pub(super) fn send(&mut self, end: usize) -> io::Result<usize> {
        let bytes = &self.out[self.out_pos..end];
        let Some(tls) = self.tls.as_deref_mut() else {
            return self.sock.write(bytes);
        };
        loop {
            let n = tls_io::write(tls, &mut self.sock, bytes)?;
            if n > 0 {
                return Ok(n);
            }
            if tls_io::pending(tls) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            // rustls was full and the socket has just drained it: it takes
            // more now.
        }
    }

    /// Writes one byte of output if one is due; the caller arms the timer
    /// for the next (`settle`). With TLS each byte is a record of its own.
    pub(super) fn drip(&mut self) -> io::Result<()> {
        if self.out_pos == self.out.len() {
            return Ok(());
        }
        let now = crate::clock::now_ns();
        if now < self.drip_next {
            return Ok(());
        }
        loop {
            match self.send(self.out_pos + 1) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out_pos += n;
                    self.drip_next = now.saturating_add(self.drip_ns);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        } else {
            self.compact_out();
        }
        Ok(())
    }

    /// Bytes the request being read needs buffered, once its head is known.
    pub(super) fn request_len(&self) -> usize {
        match self.head {
            Some(Head {
                len,
                body: Body::Length(n),
                ..
            }) if n <= MAX_BODY => len + n as usize,
            // Over the cap: answered 413 before any of it is buffered.
            _ => 0,
        }
    }

    /// Reads until the socket is drained, the peer has finished sending, or
    /// the input limit is reached.
    pub(super) fn read_some(&mut self) -> io::Result<()> {
        loop {
            if self.peer_eof {
                return Ok(());
            }
            let buffered = self.in_end - self.in_start;
            let budget = IN_SOFT.max(self.request_len());
            if buffered >= budget {
                self.read_paused = true;
                return Ok(());
            }
            if self.in_start == self.in_end {
                self.in_start = 0;
                self.in_end = 0;
            }
            if self.inb.len() - self.in_end < 2048 {
                if self.in_start > 0 {
                    self.inb.copy_within(self.in_start..self.in_end, 0);
                    self.in_end -= self.in_start;
                    self.in_start = 0;
                }
                if self.inb.len() - self.in_end < 2048 {
                    let target = (self.inb.len() * 2)
                        .max(IN_MIN)
                        .max(self.request_len())
                        .min(budget)
                        .max(self.in_end + 1);
                    self.inb.resize(target, 0);
                }
            }
            let room = self.inb.len() - self.in_end;
            let into = &mut self.inb[self.in_end..];
            // With TLS, the plaintext read says nothing about the socket
            // (rustls reads a record's worth at a time): whether the
            // socket's own last read came up short does.
            let (got, drained) = match self.tls.as_deref_mut() {
                None => (self.sock.read(into), true),
                Some(tls) => {
                    let mut sock = tls::Sock::new(&mut self.sock);
                    let got = tls_io::read(tls, &mut sock, into);
                    (got, sock.short)
                }
            };
            match got {
                Ok(0) => {
                    self.peer_eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.in_end += n;
                    // A short read means the socket is empty now, and new
                    // data raises a fresh edge, so the EAGAIN read is saved.
                    // Not after a hang-up: its edge has been spent, so only
                    // reading on to EOF observes it. Through TLS, a short
                    // plaintext read means rustls holds no more, and a
                    // short socket read that the socket had no more.
                    if n < room && drained && !self.hup_seen {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Answers buffered requests while no response is under way, flushes,
    /// and decides whether the connection lives on.
    pub(super) fn settle(&mut self, ctx: &mut Ctx<'_>, now: u64) -> Outcome {
        let mut refills = 0;
        loop {
            while self.resp.is_none() && !self.close_after {
                if self.pending_out() >= HIGH_WATER {
                    if self.flush().is_err() {
                        return Outcome::Close;
                    }
                    if self.pending_out() > 0 {
                        // The writable edge brings us back.
                        break;
                    }
                }
                match self.next_request(ctx, now) {
                    Next::NeedMore => break,
                    Next::Handled => {}
                    Next::End(o) => return o,
                }
            }
            if self.flush().is_err() {
                return Outcome::Close;
            }
            let idle = self.resp.is_none() && !self.close_after;
            if self.read_paused && idle && self.pending_out() < HIGH_WATER {
                refills += 1;
                if refills > 8 {
                    // A client pipelining without pause: let the other
                    // connections run and come back on the next turn.
                    self.arm(ctx, now);
                    break;
                }
                self.read_paused = false;
                if self.read_some().is_err() {
                    return Outcome::Close;
                }
                continue;
            }
            break;
        }
        let quiet = self.pending_out() == 0 && self.resp.is_none();
        if quiet && self.peer_eof {
            return Outcome::Close;
        }
        if quiet && self.close_after {
            return self.linger(now);
        }
        if self.peer_eof && self.resp.is_some_and(|r| r.stalled()) {
            // Nothing more will be sent, and the client has gone.
            return Outcome::Close;
        }
        if self.drip_ns != 0 && self.pending_out() > 0 {
            self.arm(ctx, self.drip_next);
        }
        // Waiting on the client: for a request (nothing of ours left to
        // send, or left in a socket it does not drain), or for it to read a
        // paused stream. A dripped response is ours to send, not a wait.
        let waiting = self.write_wait
            || (self.resp.is_none() && (self.drip_ns == 0 || self.pending_out() == 0));
        if !waiting {
            self.waiting_since = 0;
        } else if self.waiting_since == 0 {
            self.waiting_since = now;
        }
        Outcome::Open
    }

    /// Ends a connection whose response is out: says close_notify (TLS),
    /// shuts down the sending side and reads on until the client closes its
    /// end (or `LINGER_NS`).
    pub(super) fn linger(&mut self, now: u64) -> Outcome {
        self.lingering = true;
        self.waiting_since = now;
        self.in_start = 0;
        self.in_end = 0;
        if let Some(tls) = self.tls.as_deref_mut()
            && !self.tls_done
        {
            tls.send_close_notify();
            self.tls_done = true;
        }
        self.shut_down()
    }

    /// The sending side's end, once TLS's last records are out (else the
    /// writable edge calls again), then the read to the client's end.
    pub(super) fn shut_down(&mut self) -> Outcome {
        if let Some(tls) = self.tls.as_deref_mut() {
            match tls_io::flush(tls, &mut self.sock) {
                Ok(false) => {}
                Ok(true) => return Outcome::Open,
                Err(_) => return Outcome::Close,
            }
        }
        if self.sock.shutdown(std::net::Shutdown::Write).is_err() {
            return Outcome::Close;
        }
        self.shut = true;
        if self.discard() {
            Outcome::Close
        } else {
            Outcome::Open
        }
    }
}
