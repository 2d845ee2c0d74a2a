//! io_uring: the one module holding the backend's unsafe code. A worker's
//! `Ring` is its submission and completion queues, a sparse table of
//! registered sockets (one entry per connection slot), the connect
//! addresses of those slots, and a provided-buffer ring multishot receives
//! fill.
//!
//! Buffer lifetimes, the rules every `unsafe` block here relies on:
//! - Provided buffers (`BufRing`) are memory the kernel writes. A buffer is
//!   handed to the kernel by putting its id in the ring; it is read by the
//!   worker only after a completion names it (`IORING_CQE_F_BUFFER`), and
//!   then given back (`give_back`) once its bytes are copied out. The
//!   memory is an mmap of this module's, never a Rust allocation, so no
//!   Rust reference aliases what the kernel is writing, and it is unmapped
//!   only after every operation of the ring is cancelled (`Drop`).
//! - Send buffers are memory the kernel reads: the prebuilt request arena
//!   (alive and unchanged for the whole run) or a connection's own copy.
//!   `send` takes the caller's word that the bytes are neither mutated,
//!   moved nor freed until the send's completion is reaped; the worker
//!   keeps it by counting each slot's operations in flight and reusing a
//!   slot (new socket, new request bytes) only when that count is zero.
//! - Connect addresses live in `addrs`, one per slot, and are rewritten
//!   only by the next connect of the same slot, which the same rule orders
//!   after the previous connect's completion. `addrs` is allocated for
//!   the whole table at once and only grows within that capacity, so an
//!   address the kernel is reading never moves.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::types::{CancelBuilder, Fixed, SubmitArgs, Timespec};
use io_uring::{IoUring, Probe, cqueue, opcode, squeue};

use super::socket::sockaddr;

/// The buffer group of the worker's provided-buffer ring.
const BGID: u16 = 0;

/// One completion, copied out of the queue.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Completion {
    pub user_data: u64,
    pub result: i32,
    pub flags: u32,
}

impl Completion {
    /// The operation stays armed (a multishot one posts more).
    pub(crate) fn more(&self) -> bool {
        cqueue::more(self.flags)
    }

    /// A zero-copy send's second completion: the kernel is done with the
    /// bytes.
    pub(crate) fn notif(&self) -> bool {
        cqueue::notif(self.flags)
    }

    /// The provided buffer the bytes are in.
    pub(crate) fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// Where an entry of a buffer ring of `entries` (a power of two) goes:
/// the ring is indexed by the tail, modulo its size.
fn ring_index(tail: u16, entries: u16) -> usize {
    usize::from(tail & (entries - 1))
}

/// The provided-buffer ring: `entries` buffers of `size` bytes in one
/// anonymous mapping, after the ring of their descriptors.
struct BufRing {
    base: *mut u8,
    map_len: usize,
    entries: u16,
    size: u32,
    /// Where the descriptors end and the buffers start.
    data_off: usize,
    /// The next descriptor to fill; published to the kernel by `publish`.
    tail: u16,
    dirty: bool,
}

impl BufRing {
    fn new(entries: u16, size: u32) -> io::Result<BufRing> {
        assert!(entries.is_power_of_two());
        let page = 4096;
        let ring_len = (usize::from(entries) * size_of::<io_uring::types::BufRingEntry>())
            .next_multiple_of(page);
        let map_len = ring_len + usize::from(entries) * size as usize;
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choice; nothing else refers to it. It is unmapped in
        // `Drop`, after the ring using it is gone.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut r = BufRing {
            base: base.cast(),
            map_len,
            entries,
            size,
            data_off: ring_len,
            tail: 0,
            dirty: false,
        };
        for bid in 0..entries {
            r.give_back(bid);
        }
        r.publish();
        Ok(r)
    }

    /// Puts buffer `bid` back in the ring (seen by the kernel after
    /// `publish`). The caller no longer reads it.
    fn give_back(&mut self, bid: u16) {
        let at = ring_index(self.tail, self.entries);
        let addr = self.buffer_ptr(bid) as u64;
        // SAFETY: `at` < `entries`, so the descriptor lies inside the
        // mapping. The fields are written one by one: descriptor 0's last
        // two bytes are the ring's tail, which only `publish` writes. The
        // kernel reads descriptors only up to the published tail, and this
        // one is past it.
        unsafe {
            let e = self.base.cast::<io_uring::types::BufRingEntry>().add(at);
            (*e).set_addr(addr);
            (*e).set_len(self.size);
            (*e).set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        self.dirty = true;
    }

    /// Makes the buffers given back visible to the kernel: one release
    /// store of the tail.
    fn publish(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        // SAFETY: the tail is the u16 at offset 14 of the mapping (the
        // `resv` field of descriptor 0, per io_uring's ABI), aligned for
        // u16; the kernel reads it atomically.
        let tail = unsafe { &*self.base.add(14).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }

    fn buffer_ptr(&self, bid: u16) -> *mut u8 {
        // SAFETY: `bid` < `entries`, so the offset is inside the mapping.
        unsafe {
            self.base
                .add(self.data_off + usize::from(bid) * self.size as usize)
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours, and `Ring` drops its queues (and
        // cancels their operations) before this.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

/// A worker's ring. Field order is drop order: the queues, with every
/// operation cancelled, go before the buffers the operations used.
pub(crate) struct Ring {
    ring: IoUring,
    bufs: BufRing,
    addrs: Vec<(libc::sockaddr_storage, libc::socklen_t)>,
    /// `io_uring_enter` calls made by `enter` (syscalls per request).
    pub enters: u64,
}

impl Ring {
    /// A ring for `slots` connections, with room in its table of
    /// registered sockets for `table` (at least `slots`: the most the
    /// worker may ever hold), receiving into `buffers` provided buffers of
    /// `buf_size` bytes; with a kernel polling thread when `sqpoll`.
    pub(crate) fn new(
        slots: u32,
        table: u32,
        buffers: u16,
        buf_size: u32,
        sqpoll: bool,
    ) -> io::Result<Ring> {
        let table = table.max(slots).max(1);
        let entries = (slots.saturating_mul(2))
            .clamp(256, 16384)
            .next_power_of_two();
        let cq = entries.saturating_mul(4).min(65536);
        let ring = if sqpoll {
            IoUring::builder()
                .setup_cqsize(cq)
                .setup_sqpoll(50)
                .build(entries)?
        } else {
            // One task submits and reaps: completions run as task work
            // inside our own `io_uring_enter`, batched, not as interrupts.
            IoUring::builder()
                .setup_cqsize(cq)
                .setup_single_issuer()
                .setup_defer_taskrun()
                .setup_submit_all()
                .build(entries)
                .or_else(|_| IoUring::builder().setup_cqsize(cq).build(entries))?
        };
        ring.submitter().register_files_sparse(table)?;
        let bufs = BufRing::new(buffers, buf_size)?;
        // SAFETY: the descriptors are inside `bufs`' mapping, which lives
        // until after the ring is dropped (field order, `Drop`).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(bufs.base as u64, buffers, BGID, 0)?;
        }
        // Filled as slots first connect, never past this capacity (the
        // module's rule on addresses).
        let addrs = Vec::with_capacity(table as usize);
        Ok(Ring {
            ring,
            bufs,
            addrs,
            enters: 0,
        })
    }

    /// Queues `e`, submitting what is queued first if the queue is full.
    ///
    /// # Safety
    /// Memory `e` points to must stay valid (and unchanged, if the kernel
    /// reads it) until its completion is reaped.
    unsafe fn push(&mut self, e: &squeue::Entry) {
        loop {
            // SAFETY: the caller's promise about `e`'s memory.
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return;
            }
            let _ = self.ring.submit();
        }
    }

    /// Puts socket `fd` in table entry `slot` (the ring keeps its own
    /// reference to the socket until `close` removes it).
    pub(crate) fn register(&mut self, slot: u32, fd: RawFd) -> io::Result<()> {
        self.ring
            .submitter()
            .register_files_update(slot, &[fd])
            .map(drop)
    }

    /// Connects registered socket `slot` to `addr`.
    pub(crate) fn connect(&mut self, slot: u32, addr: &SocketAddr, user_data: u64) {
        let i = slot as usize;
        if i >= self.addrs.len() {
            assert!(i < self.addrs.capacity(), "slot {i} beyond the table");
            // SAFETY: all-zero bytes are a valid `sockaddr_storage`.
            let zero: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
            // Within the capacity: no reallocation moves the addresses of
            // connects in flight.
            self.addrs.resize(i + 1, (zero, 0));
        }
        let a = &mut self.addrs[i];
        *a = sockaddr(addr);
        let e = opcode::Connect::new(Fixed(slot), (&raw const a.0).cast(), a.1)
            .build()
            .user_data(user_data);
        // SAFETY: the address lives in `self.addrs[slot]`, rewritten only
        // by the next connect of this slot, which the caller issues after
        // this one's completion (module docs).
        unsafe { self.push(&e) };
    }

    /// Arms a multishot receive on registered socket `slot`: each
    /// completion names a provided buffer holding its bytes.
    pub(crate) fn recv_multi(&mut self, slot: u32, user_data: u64) {
        let e = opcode::RecvMulti::new(Fixed(slot), BGID)
            .build()
            .user_data(user_data);
        // SAFETY: no memory of ours: the kernel picks provided buffers.
        unsafe { self.push(&e) };
    }

    /// Arms a multishot poll for `events` on registered socket `slot`, or
    /// on plain descriptor `fd`.
    pub(crate) fn poll_multi(&mut self, target: PollTarget, events: u32, user_data: u64) {
        let e = match target {
            PollTarget::Slot(s) => opcode::PollAdd::new(Fixed(s), events),
            PollTarget::Fd(fd) => opcode::PollAdd::new(io_uring::types::Fd(fd), events),
        }
        .multi(true)
        .build()
        .user_data(user_data);
        // SAFETY: a poll refers to no memory of ours.
        unsafe { self.push(&e) };
    }

    /// Sends `bytes` on registered socket `slot` (`MSG_NOSIGNAL`: a peer's
    /// reset is an error result, not a signal). With `zerocopy`, the
    /// kernel reads `bytes` until a second completion, the notification.
    ///
    /// The caller keeps `bytes` alive and unchanged until the completion
    /// (with `zerocopy`, the notification) is reaped: see the module docs;
    /// the worker's slot discipline is what upholds it.
    pub(crate) fn send(&mut self, slot: u32, bytes: &[u8], zerocopy: bool, user_data: u64) {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let e = if zerocopy {
            opcode::SendZc::new(Fixed(slot), bytes.as_ptr(), len)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        } else {
            opcode::Send::new(Fixed(slot), bytes.as_ptr(), len)
                .flags(libc::MSG_NOSIGNAL)
                .build()
        }
        .user_data(user_data);
        // SAFETY: the caller keeps `bytes` alive and unchanged until the
        // completion is reaped (this function's contract, module docs).
        unsafe { self.push(&e) };
    }

    /// Cancels every operation on registered socket `slot`, then takes the
    /// socket out of the table (the last reference: it closes once the
    /// cancelled operations let go of it). Two completions follow.
    pub(crate) fn close(&mut self, slot: u32, cancel_data: u64, close_data: u64) {
        // A hard link: the close runs even when nothing was there to
        // cancel (which the cancel reports as an error).
        let cancel = opcode::AsyncCancel2::new(CancelBuilder::fd(Fixed(slot)).all())
            .build()
            .flags(squeue::Flags::IO_HARDLINK)
            .user_data(cancel_data);
        let close = opcode::Close::new(Fixed(slot))
            .build()
            .user_data(close_data);
        // SAFETY: neither refers to memory of ours. Both are queued before
        // any submit: a full queue is flushed first, so the link is not
        // split across two submissions.
        unsafe {
            let sq = self.ring.submission();
            let room = sq.capacity() - sq.len();
            drop(sq);
            if room < 2 {
                let _ = self.ring.submit();
            }
            self.push(&cancel);
            self.push(&close);
        }
    }

    /// Submits what is queued and waits up to `timeout` for a completion:
    /// one `io_uring_enter`. An interrupted or timed-out wait is not an
    /// error.
    pub(crate) fn enter(&mut self, timeout: Duration) -> io::Result<()> {
        self.bufs.publish();
        self.enters += 1;
        let ts = Timespec::from(timeout);
        let args = SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Moves the completions waiting into `out`.
    pub(crate) fn reap(&mut self, out: &mut Vec<Completion>) {
        for c in self.ring.completion() {
            out.push(Completion {
                user_data: c.user_data(),
                result: c.result(),
                flags: c.flags(),
            });
        }
    }

    /// The `len` bytes a receive's completion put in buffer `bid`. Valid
    /// until `give_back(bid)`.
    pub(crate) fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let len = len.min(self.bufs.size as usize);
        if bid >= self.bufs.entries {
            return &[];
        }
        // SAFETY: a completion named `bid`, so the kernel is done writing
        // it and will not write it again until it is given back, which
        // takes `&mut self` and so ends this borrow first.
        unsafe { std::slice::from_raw_parts(self.bufs.buffer_ptr(bid), len) }
    }

    /// Gives buffer `bid` back to the kernel (at the next `enter`).
    pub(crate) fn give_back(&mut self, bid: u16) {
        if bid < self.bufs.entries {
            self.bufs.give_back(bid);
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Every operation ends before the buffers and addresses they use
        // are freed: a synchronous cancel waits for them.
        let _ = self
            .ring
            .submitter()
            .register_sync_cancel(Some(Timespec::new().sec(1)), CancelBuilder::any());
    }
}

/// What a multishot poll watches.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PollTarget {
    /// A registered socket.
    Slot(u32),
    /// A plain descriptor (the doorbell).
    Fd(RawFd),
}

/// Whether this process can run the io_uring backend (with SQPOLL when
/// `sqpoll`): `Err` names what is missing. It builds a small ring and
/// makes one real multishot receive into a provided buffer through a
/// registered socket, so a kernel that lacks any piece says which.
pub(crate) fn check(sqpoll: bool) -> Result<(), String> {
    let ring = IoUring::new(8).map_err(|e| format!("io_uring_setup failed ({e})"))?;
    if !ring.params().is_feature_ext_arg() {
        return Err("the kernel lacks IORING_FEAT_EXT_ARG (wait with a timeout)".into());
    }
    if !ring.params().is_feature_nodrop() {
        return Err("the kernel lacks IORING_FEAT_NODROP".into());
    }
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("IORING_REGISTER_PROBE failed ({e})"))?;
    for (code, name) in [
        (opcode::Recv::CODE, "IORING_OP_RECV"),
        (opcode::Send::CODE, "IORING_OP_SEND"),
        (opcode::Connect::CODE, "IORING_OP_CONNECT"),
        (opcode::PollAdd::CODE, "IORING_OP_POLL_ADD"),
        (opcode::AsyncCancel::CODE, "IORING_OP_ASYNC_CANCEL"),
        (opcode::Close::CODE, "IORING_OP_CLOSE"),
        (opcode::FilesUpdate::CODE, "IORING_OP_FILES_UPDATE"),
    ] {
        if !probe.is_supported(code) {
            return Err(format!("the kernel lacks {name}"));
        }
    }
    drop(ring);
    let mut r = Ring::new(2, 2, 4, 64, false)
        .map_err(|e| format!("registered files or a provided-buffer ring failed ({e})"))?;
    multishot_works(&mut r).map_err(|e| format!("multishot receive failed ({e})"))?;
    if sqpoll {
        Ring::new(2, 2, 4, 64, true)
            .map_err(|e| format!("--uring-sqpoll: SQPOLL setup failed ({e})"))?;
    }
    Ok(())
}

/// Two bytes through a socket pair, received by one multishot receive.
fn multishot_works(r: &mut Ring) -> io::Result<()> {
    let (a, b) = std::os::unix::net::UnixStream::pair()?;
    r.register(0, a.as_raw_fd())?;
    r.recv_multi(0, 7);
    for _ in 0..2 {
        (&b).write_all(b"x")?;
        r.enter(Duration::from_secs(1))?;
        let mut got = Vec::new();
        r.reap(&mut got);
        let c = got
            .first()
            .ok_or_else(|| io::Error::other("no completion within 1 s"))?;
        if c.result != 1 || !c.more() {
            return Err(io::Error::other(format!(
                "result {}, more {}",
                c.result,
                c.more()
            )));
        }
        let bid = c.buffer().ok_or_else(|| io::Error::other("no buffer"))?;
        if r.buffer(bid, 1) != b"x" {
            return Err(io::Error::other("wrong bytes"));
        }
        r.give_back(bid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_ring_wraps_at_its_size() {
        assert_eq!(ring_index(0, 8), 0);
        assert_eq!(ring_index(7, 8), 7);
        assert_eq!(ring_index(8, 8), 0);
        assert_eq!(ring_index(u16::MAX, 8), 7);
        assert_eq!(ring_index(u16::MAX.wrapping_add(1), 8), 0);
    }

    #[test]
    fn given_back_buffers_fill_the_ring_again() {
        let Ok(mut r) = Ring::new(2, 2, 4, 64, false) else {
            return; // no io_uring here
        };
        // 4 buffers, each received into and given back, 3 rounds: the
        // ring's tail wraps and every receive still finds a buffer.
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        r.register(0, a.as_raw_fd()).unwrap();
        r.recv_multi(0, 1);
        let mut seen = Vec::new();
        for k in 0..12u8 {
            (&b).write_all(&[b'a' + k]).unwrap();
            r.enter(Duration::from_secs(1)).unwrap();
            let mut got = Vec::new();
            r.reap(&mut got);
            assert_eq!(got.len(), 1);
            let bid = got[0].buffer().unwrap();
            assert_eq!(r.buffer(bid, 1), &[b'a' + k]);
            seen.push(bid);
            r.give_back(bid);
        }
        assert_eq!(&seen[..4], &seen[4..8]);
        let mut ids = seen[..4].to_vec();
        ids.sort_unstable();
        assert_eq!(ids, [0, 1, 2, 3]);
    }

    #[test]
    fn check_says_yes_or_names_what_is_missing() {
        match check(false) {
            Ok(()) => {}
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
