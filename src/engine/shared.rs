//! The one shared mapping of a run and what lives in it: a control block
//! (run phase), per-worker counters, the parent's doorbell, and per worker an
//! issue ring (parent → worker, fixed `IssueSlot`s), a completion ring
//! (worker → parent, variable records) and the worker's doorbell. Everything
//! is placed before `fork()`; afterwards each process attaches the ring ends
//! it owns and nothing else.

use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::shm::doorbell::{DOORBELL_BYTES, Doorbell};
use crate::shm::mapping::{Layout, SharedMapping};
use crate::shm::ring::{self, ByteConsumer, ByteProducer, RING_ALIGN, SlotConsumer, SlotProducer};

/// One conversation handed to a worker (a single request when the scenario
/// has one turn): which scenario, which content sample to start from, when
/// it was due. 24 bytes, `Copy`, pointer-free.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IssueSlot {
    /// Run-wide conversation number, from 0.
    pub seq: u64,
    /// When the first request was due (CLOCK_MONOTONIC ns).
    pub t_sched: u64,
    /// Index into the scenario's samples.
    pub sample: u32,
    pub stage: u16,
    pub scenario: u16,
}

/// Run phases, in order; workers act on each as they see it. Stored in
/// the shared control block as its `u32` discriminant.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RunPhase {
    /// Issue rings may receive requests.
    Running = 0,
    /// No more conversations will come; finish those under way, turns and all.
    Drain = 1,
    /// Interrupted: finish the requests in flight, start no further turns.
    WindDown = 2,
    /// Fail whatever is still in flight or queued as `aborted`, now.
    Abort = 3,
    /// Every request is accounted for: close connections and exit.
    Exit = 4,
}

impl RunPhase {
    fn from_u32(v: u32) -> RunPhase {
        match v {
            0 => RunPhase::Running,
            1 => RunPhase::Drain,
            2 => RunPhase::WindDown,
            3 => RunPhase::Abort,
            _ => RunPhase::Exit,
        }
    }
}

/// Run-wide control, on its own cache line (64-byte aligned).
#[repr(C, align(64))]
pub struct Control {
    pub phase: AtomicU32,
}

/// What a worker reports beside its completion records, on its own cache
/// lines (64-byte aligned) so workers never share a line.
#[repr(C, align(64))]
#[derive(Default)]
pub struct WorkerCounters {
    /// Set once the worker's event loop is ready to take requests.
    pub ready: AtomicU32,
    /// Set when the worker has pushed its last record.
    pub finished: AtomicU32,
    /// Nanoseconds spent outside the poll wait (event handling).
    pub busy_ns: AtomicU64,
    /// Requests that found no free connection and queued in the worker.
    pub waited_for_connection: AtomicU64,
    /// Times the completion ring was full and a record waited in the worker.
    pub completion_ring_full: AtomicU64,
    /// Requests whose inter-token gaps did not all fit the worker's buffer.
    pub itl_truncated: AtomicU64,
    /// TCP connections opened.
    pub connections_opened: AtomicU64,
    /// Requests re-sent because a reused keep-alive connection turned out
    /// closed before any response byte.
    pub stale_retries: AtomicU64,
}

/// Issue ring slots per worker.
pub const ISSUE_SLOTS: usize = 16384;
/// Completion ring bytes per worker: small enough to stay cache-resident
/// (records are written and read while hot), large enough that a record of
/// `MAX_GAPS` gaps fits (a record may be a quarter of the ring).
pub const COMPLETION_BYTES: usize = 4 << 20;

/// Inter-token gaps one completion record carries at most.
pub const MAX_GAPS: usize = 65_536;

/// The run's shared mapping and the offsets of everything in it.
pub struct Shared {
    map: SharedMapping,
    control: usize,
    counters: Vec<usize>,
    issue: Vec<usize>,
    completion: Vec<usize>,
    /// Rung by workers when they publish completions.
    pub parent_bell: Doorbell,
    /// Rung by the parent when it publishes requests or changes phase.
    pub worker_bells: Vec<Doorbell>,
}

impl Shared {
    /// Maps and initializes everything for `workers` workers.
    pub fn new(workers: usize) -> io::Result<Shared> {
        let mut l = Layout::new();
        let control = l.reserve(size_of::<Control>(), 64);
        let counters: Vec<usize> = (0..workers)
            .map(|_| l.reserve(size_of::<WorkerCounters>(), 64))
            .collect();
        let parent_bell = l.reserve(DOORBELL_BYTES, 64);
        let bells: Vec<usize> = (0..workers)
            .map(|_| l.reserve(DOORBELL_BYTES, 64))
            .collect();
        let issue: Vec<usize> = (0..workers)
            .map(|_| l.reserve(ring::slot_ring_bytes::<IssueSlot>(ISSUE_SLOTS), RING_ALIGN))
            .collect();
        let completion: Vec<usize> = (0..workers)
            .map(|_| l.reserve(ring::byte_ring_bytes(COMPLETION_BYTES), RING_ALIGN))
            .collect();
        let map = SharedMapping::new(l.len())?;
        // SAFETY: each offset was reserved in `l` with the size and alignment
        // the callee requires, inside a fresh zeroed mapping of `l.len()`
        // bytes that no handle uses yet.
        unsafe {
            for &off in &issue {
                ring::init_slot_ring::<IssueSlot>(map.at(off), ISSUE_SLOTS);
            }
            for &off in &completion {
                ring::init_byte_ring(map.at(off), COMPLETION_BYTES);
            }
        }
        // SAFETY: as above; each doorbell flag has its own reserved line.
        let parent_bell = unsafe { Doorbell::new(map.at(parent_bell))? };
        let worker_bells = bells
            .iter()
            // SAFETY: as above.
            .map(|&off| unsafe { Doorbell::new(map.at(off)) })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Shared {
            map,
            control,
            counters,
            issue,
            completion,
            parent_bell,
            worker_bells,
        })
    }

    pub fn workers(&self) -> usize {
        self.issue.len()
    }

    pub fn control(&self) -> &Control {
        // SAFETY: the offset holds a zero-initialized `Control` (atomics are
        // valid at zero), aligned as reserved, living as long as the mapping.
        unsafe { &*self.map.at(self.control).cast::<Control>() }
    }

    pub fn counters(&self, worker: usize) -> &WorkerCounters {
        // SAFETY: as `control`, for worker `worker`'s zeroed counters.
        unsafe { &*self.map.at(self.counters[worker]).cast::<WorkerCounters>() }
    }

    pub fn phase(&self) -> RunPhase {
        RunPhase::from_u32(self.control().phase.load(Ordering::Acquire))
    }

    /// Moves the run to `phase` and wakes every worker to see it.
    pub fn set_phase(&self, phase: RunPhase) {
        self.control().phase.store(phase as u32, Ordering::Release);
        for bell in &self.worker_bells {
            bell.ring();
        }
    }

    /// The parent's ends of worker `k`'s rings. Call once per worker, in the
    /// parent only.
    pub fn parent_ends(&self, k: usize) -> (SlotProducer<IssueSlot>, ByteConsumer) {
        // SAFETY: the rings were initialized in `new`; the parent is the only
        // issue producer and completion consumer, attaching once each; the
        // mapping outlives the handles (both are owned by the run).
        unsafe {
            (
                SlotProducer::attach(self.map.at(self.issue[k])),
                ByteConsumer::attach(self.map.at(self.completion[k])),
            )
        }
    }

    /// Worker `k`'s ends of its rings. Call once, in worker `k` only.
    pub fn worker_ends(&self, k: usize) -> (SlotConsumer<IssueSlot>, ByteProducer) {
        // SAFETY: as `parent_ends`, for the worker's consumer and producer.
        unsafe {
            (
                SlotConsumer::attach(self.map.at(self.issue[k])),
                ByteProducer::attach(self.map.at(self.completion[k])),
            )
        }
    }
}
