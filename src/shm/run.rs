//! The one shared mapping of a bench run and what lives in it: a control
//! block (run phase, and where measuring and each stage began, so a worker
//! tells a request's stage as the parent does), per-worker counters and
//! connection statistics, the
//! parent's doorbell, and per worker an issue ring (parent → worker, fixed
//! `IssueSlot`s), a completion ring (worker → parent, variable records) and
//! the worker's doorbell.
//! Everything is placed before `fork()`; afterwards each process takes the
//! ring ends it owns. Each end is handed out once across all processes (the
//! ring header records it), so safe code cannot make a second producer.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::doorbell::{DOORBELL_BYTES, Doorbell};
use super::mapping::{Layout, Plain, SharedMapping};
use super::ring::{self, ByteConsumer, ByteProducer, RING_ALIGN, SlotConsumer, SlotProducer};

/// One conversation handed to a worker (a single request when the scenario
/// has one turn): which scenario, which content sample to start from, when
/// it was due. 24 bytes, `Copy`, pointer-free.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct IssueSlot {
    /// Run-wide conversation number, from 0.
    pub seq: u64,
    /// When the first request was due (CLOCK_MONOTONIC ns).
    pub t_sched: u64,
    /// Index into the scenario's samples.
    pub sample: u32,
    pub stage: u16,
    pub scenario: u16,
}

// SAFETY: integers only: valid as zero, no pointers; moved between processes
// by the slot ring, which hands each slot to one side at a time.
unsafe impl Plain for IssueSlot {}

/// Run phases, in order; workers act on each as they see it. Stored in
/// the shared control block as its `u32` discriminant.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RunPhase {
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
pub(crate) struct Control {
    pub phase: AtomicU32,
    /// Where measuring begins (`u64::MAX` while a warm-up by count is under
    /// way), as the parent published it.
    measure_start: AtomicU64,
    /// Connections each live worker may hold, as the parent published it
    /// after losing a worker (0: none published; each keeps the share it
    /// started with).
    conn_share: AtomicU64,
}

// SAFETY: atomics only: valid as zero, no pointers.
unsafe impl Plain for Control {}

/// What a worker reports beside its completion records, on cache lines of
/// its own (64-byte aligned) so workers never share a line.
#[repr(C, align(64))]
#[derive(Default)]
pub(crate) struct WorkerCounters {
    /// Set once the worker's event loop is ready to take requests.
    pub ready: AtomicU32,
    /// Set when the worker has pushed its last record.
    pub finished: AtomicU32,
    /// Start-up progress: bumped for each batch of warm connections started
    /// and each turn of the warm-up's poll that settled some, so the parent
    /// tells a long start (19,000 connections) from a hung worker.
    pub warming: AtomicU64,
    /// Warm connections started so far (for the parent's message when a
    /// start stalls).
    pub warm_started: AtomicU64,
    /// Nanoseconds spent outside the poll wait (event handling).
    pub busy_ns: AtomicU64,
    /// Requests that found no free connection and queued in the worker.
    pub waited_for_connection: AtomicU64,
    /// Times the completion ring was full and a record waited in the worker.
    pub completion_ring_full: AtomicU64,
    /// Requests whose inter-token gaps did not all fit the worker's buffer.
    pub itl_truncated: AtomicU64,
    /// Connections opened and ready for requests (TCP connected and, for
    /// https, the TLS handshake done).
    pub connections_opened: AtomicU64,
    /// Requests re-sent because a reused keep-alive connection turned out
    /// closed before any response byte.
    pub stale_retries: AtomicU64,
}

// SAFETY: atomics only: valid as zero, no pointers, changed atomically.
unsafe impl Plain for WorkerCounters {}

/// Buckets of a [`TimeHist`]: every value below 128 ns has its own, then
/// 64 per power of two (each at most 1/64 ≈ 1.6 % wide, so a bucket's
/// middle is within 0.8 % of any value in it), up to `TIME_TOP_NS`.
pub(crate) const TIME_BUCKETS: usize = 2240;
/// Sub-buckets per power of two, as a shift.
const SUB_BITS: u32 = 6;
/// The largest value with a bucket of its own, about 18 minutes; longer
/// ones are counted in the last bucket (their exact maximum is kept).
pub(crate) const TIME_TOP_NS: u64 = (1 << 40) - 1;

/// The bucket `ns` is counted in.
#[inline]
pub(crate) fn time_bucket(ns: u64) -> usize {
    let v = ns.min(TIME_TOP_NS);
    if v < 2 << SUB_BITS {
        return v as usize;
    }
    // v in [2^e, 2^(e+1)), e ≥ 7: its top SUB_BITS + 1 bits pick the bucket.
    let shift = 63 - v.leading_zeros() - SUB_BITS;
    ((shift as u64) << SUB_BITS) as usize + (v >> shift) as usize
}

/// The middle of bucket `i`: the value its counts stand for.
pub(crate) fn time_bucket_mid(i: usize) -> u64 {
    if i < 2 << SUB_BITS {
        return i as u64;
    }
    let shift = (i >> SUB_BITS) as u32 - 1;
    let m = (i - ((shift as usize) << SUB_BITS)) as u64;
    (m << shift) + (1 << shift) / 2
}

/// A histogram of durations one worker records (connect and handshake
/// times) and the parent reads at the end: fixed log-linear buckets of
/// atomics, so recording is a few relaxed adds with no allocation, beside
/// the exact count, sum, minimum and maximum. On its own cache lines
/// (64-byte aligned).
#[repr(C, align(64))]
pub(crate) struct TimeHist {
    pub count: AtomicU64,
    pub sum_ns: AtomicU64,
    /// The minimum, bit-inverted, so the mapping's zero means "none yet"
    /// and `fetch_max` keeps the smallest.
    min_ns_inverted: AtomicU64,
    pub max_ns: AtomicU64,
    pub buckets: [AtomicU64; TIME_BUCKETS],
}

// SAFETY: atomics only: valid as zero (an empty histogram), no pointers,
// changed only atomically.
unsafe impl Plain for TimeHist {}

impl TimeHist {
    /// Counts one duration. Relaxed: the parent reads after the worker
    /// exits (or a moment's skew does not matter).
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        self.buckets[time_bucket(ns)].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.min_ns_inverted.fetch_max(!ns, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// The smallest duration recorded; `None` when empty.
    pub(crate) fn min_ns(&self) -> Option<u64> {
        (self.count.load(Ordering::Relaxed) > 0)
            .then(|| !self.min_ns_inverted.load(Ordering::Relaxed))
    }
}

/// One worker's connection statistics beside its `WorkerCounters`: how its
/// connections were opened, and how long connecting took.
#[repr(C, align(64))]
pub(crate) struct ConnStats {
    /// TLS handshakes that resumed a session (no certificate exchange).
    pub resumed: AtomicU64,
    /// Connection attempts that ended without a usable connection: the TCP
    /// connect failed or timed out, or the TLS handshake failed (including
    /// a server rejecting the client right after it, as TLS 1.3 servers do
    /// with a missing client certificate).
    pub failed: AtomicU64,
    /// TCP connect start to connected.
    pub tcp_connect: TimeHist,
    /// TCP connected to TLS handshake done (https only).
    pub tls_handshake: TimeHist,
}

// SAFETY: atomics only (and `TimeHist`, itself `Plain`): valid as zero, no
// pointers, changed only atomically.
unsafe impl Plain for ConnStats {}

/// Issue ring slots per worker: more than the connections one worker can
/// hold (19,000 under a 20,000-descriptor limit), so a closed loop's first
/// burst fits at once.
pub(crate) const ISSUE_SLOTS: usize = 32768;
/// Completion ring bytes per worker: small enough to stay cache-resident
/// (records are written and read while hot), large enough that a record of
/// `MAX_GAPS` gaps fits (a record may be a quarter of the ring).
pub(crate) const COMPLETION_BYTES: usize = 4 << 20;

/// Inter-token gaps one completion record carries at most.
pub(crate) const MAX_GAPS: usize = 65_536;

/// The longest completion record the completion ring takes: a record and
/// the ring's 8-byte length word are at most a quarter of the ring. A
/// worker fits every record to this before it is pushed or queued, so no
/// record can ever be refused (`engine::record` checks at compile time that
/// the largest gaps and message leave room for text).
pub(crate) const MAX_RECORD: usize = COMPLETION_BYTES / 4 - 8;

/// The run's shared mapping and the offsets of everything in it.
pub(crate) struct Shared {
    control: usize,
    /// One `AtomicU64` per stage: when its measurement began (0: not yet).
    stage_starts: usize,
    stages: usize,
    counters: Vec<usize>,
    conn_stats: Vec<usize>,
    issue: Vec<usize>,
    completion: Vec<usize>,
    /// Rung by workers when they publish completions.
    pub parent_bell: Doorbell,
    /// Rung by the parent when it publishes requests or changes phase.
    pub worker_bells: Vec<Doorbell>,
    /// Declared last, so dropped after the doorbells whose flags it holds.
    map: Arc<SharedMapping>,
}

impl Shared {
    /// Maps and initializes everything for `workers` workers and a plan of
    /// `stages` stages.
    pub(crate) fn new(workers: usize, stages: usize) -> io::Result<Shared> {
        let mut l = Layout::new();
        let control = l.reserve(size_of::<Control>(), align_of::<Control>());
        let stage_starts = l.reserve(stages * size_of::<AtomicU64>(), 64);
        let counters: Vec<usize> = (0..workers)
            .map(|_| l.reserve(size_of::<WorkerCounters>(), align_of::<WorkerCounters>()))
            .collect();
        let conn_stats: Vec<usize> = (0..workers)
            .map(|_| l.reserve(size_of::<ConnStats>(), align_of::<ConnStats>()))
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
        let map = Arc::new(SharedMapping::new(l.len())?);
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
        // SAFETY: as above; each doorbell flag has its own reserved line, and
        // the doorbells live in `Shared`, which drops its share of the
        // mapping after them.
        let parent_bell = unsafe { Doorbell::new(map.at(parent_bell))? };
        let worker_bells = bells
            .iter()
            // SAFETY: as above.
            .map(|&off| unsafe { Doorbell::new(map.at(off)) })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Shared {
            control,
            stage_starts,
            stages,
            counters,
            conn_stats,
            issue,
            completion,
            parent_bell,
            worker_bells,
            map,
        })
    }

    /// The `T` reserved at `offset`.
    fn place<T: Plain>(&self, offset: usize) -> &T {
        // SAFETY: every caller passes an offset reserved for a `T` (size and
        // alignment) in `new`, whose bytes are zero or changed only through
        // atomics, valid either way for a `Plain` type; the reference lives no
        // longer than `self`, which holds a share of the mapping.
        unsafe { &*self.map.at(offset).cast::<T>() }
    }

    pub(crate) fn control(&self) -> &Control {
        self.place(self.control)
    }

    pub(crate) fn counters(&self, worker: usize) -> &WorkerCounters {
        self.place(self.counters[worker])
    }

    pub(crate) fn conn_stats(&self, worker: usize) -> &ConnStats {
        self.place(self.conn_stats[worker])
    }

    pub(crate) fn phase(&self) -> RunPhase {
        RunPhase::from_u32(self.control().phase.load(Ordering::Acquire))
    }

    /// Moves the run to `phase` and wakes every worker to see it.
    pub(crate) fn set_phase(&self, phase: RunPhase) {
        self.control().phase.store(phase as u32, Ordering::Release);
        for bell in &self.worker_bells {
            bell.ring();
        }
    }

    /// Publishes where measuring begins (`u64::MAX`: not known yet). The
    /// parent does so before it issues a request the value concerns, so a
    /// worker that took the request from its ring sees it.
    pub(crate) fn publish_measure_start(&self, t: u64) {
        self.control().measure_start.store(t, Ordering::Release);
    }

    /// Where measuring begins, as published.
    pub(crate) fn measure_start(&self) -> u64 {
        self.control().measure_start.load(Ordering::Acquire)
    }

    /// Publishes how many connections each live worker may now hold, and
    /// wakes the workers: the parent does so when a worker is lost, so the
    /// others can carry its conversations without queueing them.
    pub(crate) fn publish_conn_share(&self, n: u64) {
        self.control().conn_share.store(n, Ordering::Release);
        for bell in &self.worker_bells {
            bell.ring();
        }
    }

    /// Connections each live worker may hold, as published (0: none
    /// published yet).
    pub(crate) fn conn_share(&self) -> u64 {
        self.control().conn_share.load(Ordering::Acquire)
    }

    fn stage_start_cell(&self, k: usize) -> &AtomicU64 {
        assert!(k < self.stages, "stage {k} of {}", self.stages);
        self.place(self.stage_starts + k * size_of::<AtomicU64>())
    }

    /// Publishes when stage `k`'s measurement began, as
    /// `publish_measure_start`.
    pub(crate) fn publish_stage_start(&self, k: usize, t: u64) {
        self.stage_start_cell(k).store(t, Ordering::Release);
    }

    /// When stage `k`'s measurement began, as published (0: not yet).
    pub(crate) fn stage_start(&self, k: usize) -> u64 {
        self.stage_start_cell(k).load(Ordering::Acquire)
    }

    /// The plan's stages.
    pub(crate) fn stages(&self) -> usize {
        self.stages
    }

    /// The parent's ends of worker `k`'s rings: its issue producer and
    /// completion consumer. `None` if either was taken before, in any
    /// process (the two are taken as a pair, once: a failed take may use up
    /// the first).
    pub(crate) fn take_parent_ends(
        &self,
        k: usize,
    ) -> Option<(SlotProducer<IssueSlot>, ByteConsumer)> {
        // SAFETY: both offsets hold the rings of the kinds initialized in
        // `new` and are used as nothing else.
        unsafe {
            Some((
                SlotProducer::attach(&self.map, self.issue[k])?,
                ByteConsumer::attach(&self.map, self.completion[k])?,
            ))
        }
    }

    /// Worker `k`'s ends of its rings: its issue consumer and completion
    /// producer. `None` if either was taken before, in any process.
    pub(crate) fn take_worker_ends(
        &self,
        k: usize,
    ) -> Option<(SlotConsumer<IssueSlot>, ByteProducer)> {
        // SAFETY: as in `take_parent_ends`.
        unsafe {
            Some((
                SlotConsumer::attach(&self.map, self.issue[k])?,
                ByteProducer::attach(&self.map, self.completion[k])?,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::test_util::{Deadline, fork_child};
    use std::time::Duration;

    #[test]
    fn max_record_is_what_the_completion_ring_takes() {
        let shared = Shared::new(1, 1).unwrap();
        let (_, mut tx) = shared.take_worker_ends(0).unwrap();
        assert_eq!(tx.max_len(), MAX_RECORD);
        assert_eq!(
            tx.push_with(MAX_RECORD + 1, |_| {}),
            Err(ring::PushError::TooLarge)
        );
        assert_eq!(tx.push_with(MAX_RECORD, |b| b.fill(1)), Ok(()));
    }

    #[test]
    fn layout_sizes() {
        assert_eq!(size_of::<IssueSlot>(), 24);
        assert_eq!(size_of::<Control>(), 64);
        assert_eq!(size_of::<WorkerCounters>(), 128);
        assert_eq!(align_of::<TimeHist>(), 64);
        assert_eq!(
            size_of::<TimeHist>(),
            ((4 + TIME_BUCKETS) * 8).next_multiple_of(64)
        );
        assert_eq!(align_of::<ConnStats>(), 64);
    }

    #[test]
    fn stage_boundaries_are_seen_across_processes() {
        let shared = Shared::new(1, 3).unwrap();
        assert_eq!((shared.stages(), shared.stage_start(2)), (3, 0));
        shared.publish_measure_start(u64::MAX);
        shared.publish_stage_start(1, 77);
        let child = fork_child(|| {
            let seen = (
                shared.measure_start(),
                shared.stage_start(0),
                shared.stage_start(1),
            );
            if seen != (u64::MAX, 0, 77) {
                return 2;
            }
            shared.publish_stage_start(2, 99);
            0
        });
        assert_eq!(child.wait(Duration::from_secs(10)), Ok(0));
        assert_eq!(shared.stage_start(2), 99);
    }

    #[test]
    fn time_buckets_are_contiguous_and_fine() {
        // Every bucket is reached, in order, and each value lies in its
        // bucket's range, whose middle is within 0.8 % of it.
        let mut last = 0;
        let mut v = 0u64;
        while v <= TIME_TOP_NS {
            let b = time_bucket(v);
            assert!(b == last || b == last + 1, "gap at {v}: {last} → {b}");
            last = b;
            let mid = time_bucket_mid(b);
            let err = (mid as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 0.008, "{v} in bucket {b} (middle {mid}): {err}");
            v = if v < 1 << 20 { v + 1 } else { v + v / 997 };
        }
        assert_eq!(time_bucket(TIME_TOP_NS), TIME_BUCKETS - 1);
        assert_eq!(time_bucket(u64::MAX), TIME_BUCKETS - 1);
        for i in 0..TIME_BUCKETS {
            assert_eq!(time_bucket(time_bucket_mid(i)), i, "bucket {i}");
        }
    }

    #[test]
    fn a_time_histogram_keeps_exact_count_sum_min_and_max() {
        let shared = Shared::new(2, 1).unwrap();
        let h = &shared.conn_stats(1).tcp_connect;
        assert_eq!(h.min_ns(), None);
        for ns in [250_000, 90_000, 1_000_000, 90_000] {
            h.record(ns);
        }
        assert_eq!(h.count.load(Ordering::Relaxed), 4);
        assert_eq!(h.sum_ns.load(Ordering::Relaxed), 1_430_000);
        assert_eq!(h.min_ns(), Some(90_000));
        assert_eq!(h.max_ns.load(Ordering::Relaxed), 1_000_000);
        assert_eq!(h.buckets[time_bucket(90_000)].load(Ordering::Relaxed), 2);
        // Other workers' statistics are their own.
        assert_eq!(shared.conn_stats(0).tcp_connect.min_ns(), None);
    }

    #[test]
    fn each_end_is_handed_out_once_across_processes() {
        let shared = Shared::new(2, 1).unwrap();
        let (mut issue, mut done) = shared.take_parent_ends(1).unwrap();
        assert!(shared.take_parent_ends(1).is_none());
        let child = fork_child(|| {
            // Worker 1's ends, once; the parent's were taken before the fork.
            let Some((mut rx, mut tx)) = shared.take_worker_ends(1) else {
                return 2;
            };
            if shared.take_worker_ends(1).is_some() || shared.take_parent_ends(1).is_some() {
                return 3;
            }
            let deadline = Deadline::after(Duration::from_secs(10));
            loop {
                if let Some(slot) = rx.pop() {
                    let pushed = tx.push_with(8, |b| b.copy_from_slice(&slot.seq.to_le_bytes()));
                    return if pushed.is_ok() { 0 } else { 4 };
                }
                if deadline.passed() {
                    return 5;
                }
                deadline.relax();
            }
        });
        let slot = IssueSlot {
            seq: 77,
            ..IssueSlot::default()
        };
        issue.push(slot).unwrap();
        assert_eq!(child.wait(Duration::from_secs(10)), Ok(0));
        // The child took worker 1's ends, so they are gone here too.
        assert!(shared.take_worker_ends(1).is_none());
        assert_eq!(
            done.pop_with(|b| b.to_vec()),
            Ok(Some(77u64.to_le_bytes().to_vec()))
        );
        assert!(shared.take_parent_ends(0).is_some());
        assert!(shared.take_worker_ends(0).is_some());
    }
}
