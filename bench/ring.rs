//! Ring throughput between two processes: the producer in this process, the
//! consumer in a forked child, each pinned to its own CPU when there are two,
//! exactly as the parent and a worker use the rings. Reported in the shape of
//! the Python ZMQ transport's benchmark (its numbers come from the MLPerf
//! endpoint tool's ZMQ receive pull request, in the team's shared reference
//! folder) with the ratio to its "after" numbers beside each row.
//!
//! The answers are checked: the producer copies every payload byte from a
//! source buffer into the ring, the consumer reads every byte in place to
//! checksum it and checks the sequence numbers at both ends of each record;
//! any mismatch, loss or stall panics. The child neither allocates nor prints
//! and reports through a control block in shared memory.
//!
//! Run: `cargo bench --bench ring`.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_utils::Backoff;
use llmload::clock::now_ns;
use llmload::rng::Rng;
use llmload::shm::mapping::SharedArray;
use llmload::shm::ring::{ByteRing, PushError, SlotRing};
use llmload::sys::process::{Child, Exit, fork_child, pin_to};
use nix::sched::{CpuSet, sched_getaffinity};
use nix::unistd::Pid;

/// Default byte ring size: 1 MiB stays resident in a core's L2, which is
/// worth up to 1.6× at large records over a ring that streams through memory.
/// `RING_BENCH_KIB` (a power of two) overrides it; sizes whose records would
/// exceed a quarter of the ring are skipped.
const BYTE_CAPACITY: usize = 1 << 20;
const SLOT_CAPACITY: usize = 4096;
const SIZES: [usize; 7] = [32, 128, 512, 1024, 4096, 16384, 32768];
const RUN: Duration = Duration::from_millis(600);
/// A side that makes no progress for this long means the other one is gone.
const STALL_NS: u64 = 5_000_000_000;

/// The Python transport's "after" table, Query rows: (chars, bytes on the
/// wire, issue msg/s, issue MB/s, recv msg/s, recv MB/s).
const PYTHON_AFTER: [(usize, usize, f64, f64, f64, f64); 7] = [
    (32, 128, 460_000.0, 58.9, 459_600.0, 58.8),
    (128, 224, 467_800.0, 104.8, 467_400.0, 104.7),
    (512, 609, 448_400.0, 273.1, 448_000.0, 272.8),
    (1024, 1121, 410_800.0, 460.5, 410_400.0, 460.1),
    (4096, 4193, 301_800.0, 1265.4, 301_400.0, 1263.8),
    (16384, 16481, 148_000.0, 2439.2, 147_600.0, 2432.6),
    (32768, 32865, 73_600.0, 2418.9, 73_200.0, 2405.7),
];

/// What the consumer reports back, in a shared array written by the child and
/// read by the parent after it exits.
struct Control(SharedArray<AtomicU64>);

impl Control {
    fn new() -> Control {
        Control(SharedArray::new(6).expect("mmap"))
    }

    fn ready(&self) -> &AtomicU64 {
        self.0.get(0)
    }

    fn received(&self) -> &AtomicU64 {
        self.0.get(1)
    }

    fn first_ns(&self) -> &AtomicU64 {
        self.0.get(2)
    }

    fn last_ns(&self) -> &AtomicU64 {
        self.0.get(3)
    }

    /// 0, or what went wrong (`Bad`).
    fn error(&self) -> &AtomicU64 {
        self.0.get(4)
    }

    fn error_seq(&self) -> &AtomicU64 {
        self.0.get(5)
    }
}

#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bad {
    Length = 1,
    HeadSeq = 2,
    TailSeq = 3,
    Checksum = 4,
    Stall = 5,
    Payload = 6,
}

impl Bad {
    fn from_code(code: u64) -> Option<Bad> {
        [
            Bad::Length,
            Bad::HeadSeq,
            Bad::TailSeq,
            Bad::Checksum,
            Bad::Stall,
            Bad::Payload,
        ]
        .into_iter()
        .find(|b| *b as u64 == code)
    }
}

/// A consumer's verdict on one record.
enum Verdict {
    Ok,
    End,
    Bad(Bad),
}

/// Fletcher-style sum over little-endian words in four independent lanes, so
/// it reads at memory speed yet notices reordered, stale or torn words.
fn checksum(bytes: &[u8]) -> u64 {
    let (mut a, mut s) = ([0u64; 4], [0u64; 4]);
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for lane in 0..4 {
            let w = u64::from_le_bytes(block[lane * 8..lane * 8 + 8].try_into().unwrap());
            a[lane] = a[lane].wrapping_add(w);
            s[lane] = s[lane].wrapping_add(a[lane]);
        }
    }
    for (i, word) in blocks.remainder().chunks(8).enumerate() {
        let mut w = [0u8; 8];
        w[..word.len()].copy_from_slice(word);
        a[i] = a[i].wrapping_add(u64::from_le_bytes(w));
        s[i] = s[i].wrapping_add(a[i]);
    }
    (0..4).fold(0, |h, i| {
        h ^ (a[i] ^ s[i].rotate_left(32)).rotate_left(16 * i as u32)
    })
}

const SOURCES: usize = 8;

/// Source payloads: record `seq` of size `n` is `[seq][sources[seq % 8][..n-16]][seq]`.
fn sources() -> Vec<Vec<u8>> {
    (0..SOURCES)
        .map(|k| {
            let mut rng = Rng::seeded(k as u64);
            (0..SIZES[SIZES.len() - 1] / 8)
                .flat_map(|_| rng.next_u64().to_le_bytes())
                .collect()
        })
        .collect()
}

fn check_record(rec: &[u8], seq: u64, size: usize, sums: &[u64; SOURCES]) -> Verdict {
    if rec.is_empty() {
        return Verdict::End;
    }
    if rec.len() != size {
        return Verdict::Bad(Bad::Length);
    }
    if rec[..8] != seq.to_le_bytes() {
        return Verdict::Bad(Bad::HeadSeq);
    }
    if rec[size - 8..] != seq.to_le_bytes() {
        return Verdict::Bad(Bad::TailSeq);
    }
    if checksum(&rec[8..size - 8]) != sums[seq as usize % SOURCES] {
        return Verdict::Bad(Bad::Checksum);
    }
    Verdict::Ok
}

/// A 32-byte issue-ring item, self-checking: `[seq, a, b, check]`.
type Item = [u64; 4];

/// The sequence number of the end marker.
const END: u64 = u64::MAX;

fn item(seq: u64) -> Item {
    let a = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let b = !seq ^ 0x5555;
    [seq, a, b, a.rotate_left(17) ^ b.wrapping_add(seq)]
}

fn check_item(got: Item, seq: u64) -> Verdict {
    let want = item(seq);
    if got[0] == END {
        Verdict::End
    } else if got[0] != seq {
        Verdict::Bad(Bad::HeadSeq)
    } else if got[1..3] != want[1..3] {
        Verdict::Bad(Bad::Payload)
    } else if got[3] != want[3] {
        Verdict::Bad(Bad::Checksum)
    } else {
        Verdict::Ok
    }
}

/// Where each side runs: two CPUs from our affinity mask, when there are two.
fn pick_cpus() -> Option<(usize, usize)> {
    let mask = sched_getaffinity(Pid::from_raw(0)).ok()?;
    let mut cpus = (0..CpuSet::count()).filter(|&c| mask.is_set(c).unwrap_or(false));
    Some((cpus.next()?, cpus.next()?))
}

/// Best effort: a failure only makes the numbers noisier.
fn pin(cpu: usize) {
    let _ = pin_to(cpu);
}

/// The forked consumer; killed and reaped if the parent fails first.
struct Consumer(Child);

/// Forks the consumer: it pins itself and runs `body`, which reports through
/// `Control`. This benchmark is single-threaded, and the child only runs ring
/// operations, clock reads and `sched_setaffinity`.
fn fork_consumer(cpu: Option<usize>, body: impl FnOnce()) -> Consumer {
    let child = fork_child(|| {
        if let Some(cpu) = cpu {
            pin(cpu);
        }
        body();
        0
    })
    .expect("fork");
    Consumer(child)
}

impl Consumer {
    fn wait(mut self) {
        let exit = self.0.wait().expect("waitpid");
        assert_eq!(exit, Exit::Status(0), "consumer {exit}");
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The consumer's loop, shared by both ring kinds: `pop` returns `None` when
/// empty, else the verdict on the next record given the expected sequence.
fn consume(ctl: &Control, mut pop: impl FnMut(u64) -> Option<Verdict>) {
    ctl.ready().store(1, Ordering::Release);
    let (mut seq, mut first, mut idle) = (0u64, 0u64, 0u64);
    let mut progress_ns = now_ns();
    loop {
        match pop(seq) {
            Some(Verdict::Ok) => {
                if seq == 0 {
                    first = now_ns();
                }
                seq += 1;
                idle = 0;
            }
            Some(Verdict::End) => break,
            Some(Verdict::Bad(bad)) => {
                ctl.error_seq().store(seq, Ordering::Relaxed);
                ctl.error().store(bad as u64, Ordering::Release);
                return;
            }
            None => {
                idle += 1;
                if idle % 4096 == 0 {
                    let now = now_ns();
                    if idle == 4096 {
                        progress_ns = now;
                    } else if now - progress_ns > STALL_NS {
                        ctl.error_seq().store(seq, Ordering::Relaxed);
                        ctl.error().store(Bad::Stall as u64, Ordering::Release);
                        return;
                    }
                }
                // A bare spin rather than crossbeam's `Backoff`: each side has
                // a CPU of its own, and `Backoff`'s yields measured 10-20%
                // slower at 32-byte records.
                spin_loop();
            }
        }
    }
    ctl.first_ns().store(first, Ordering::Relaxed);
    ctl.last_ns().store(now_ns(), Ordering::Relaxed);
    ctl.received().store(seq, Ordering::Release);
}

/// What one run measured.
struct Run {
    sent: u64,
    send_ns: u64,
    received: u64,
    recv_ns: u64,
    fulls: u64,
}

/// What the producer pushes: record `seq`, or the end marker.
#[derive(Clone, Copy)]
enum Msg {
    Data(u64),
    End,
}

/// The producer's loop: `push` returns false when the ring is full. Pushes for
/// `RUN`, then the end marker; returns (records sent, ns spent, full pushes).
fn produce(ctl: &Control, mut push: impl FnMut(Msg) -> bool) -> (u64, u64, u64) {
    let start_by = now_ns() + STALL_NS;
    let backoff = Backoff::new();
    while ctl.ready().load(Ordering::Acquire) == 0 {
        assert!(now_ns() < start_by, "consumer never started");
        backoff.snooze();
    }
    let (mut seq, mut fulls, mut blocked_since) = (0u64, 0u64, 0u64);
    let t0 = now_ns();
    let stop = t0 + RUN.as_nanos() as u64;
    loop {
        if seq % 64 == 0 && now_ns() >= stop {
            break;
        }
        if push(Msg::Data(seq)) {
            seq += 1;
            blocked_since = 0;
        } else {
            fulls += 1;
            if fulls % 4096 == 0 {
                let now = now_ns();
                if blocked_since == 0 {
                    blocked_since = now;
                }
                assert!(
                    now - blocked_since < STALL_NS,
                    "ring stayed full: consumer stalled ({:?})",
                    consumer_error(ctl)
                );
            }
            spin_loop();
        }
    }
    let t1 = now_ns();
    while !push(Msg::End) {
        assert!(
            now_ns() - t1 < STALL_NS,
            "ring stayed full at the end ({:?})",
            consumer_error(ctl)
        );
        spin_loop();
    }
    (seq, t1 - t0, fulls)
}

fn consumer_error(ctl: &Control) -> Option<(Bad, u64)> {
    let code = ctl.error().load(Ordering::Acquire);
    Bad::from_code(code).map(|b| (b, ctl.error_seq().load(Ordering::Relaxed)))
}

fn finish(ctl: &Control, child: Consumer, sent: u64, send_ns: u64, fulls: u64) -> Run {
    child.wait();
    if let Some((bad, seq)) = consumer_error(ctl) {
        panic!("consumer found {bad:?} at record {seq}");
    }
    let received = ctl.received().load(Ordering::Acquire);
    assert_eq!(received, sent, "records lost");
    let recv_ns = ctl.last_ns().load(Ordering::Relaxed) - ctl.first_ns().load(Ordering::Relaxed);
    Run {
        sent,
        send_ns,
        received,
        recv_ns: recv_ns.max(1),
        fulls,
    }
}

fn byte_capacity() -> usize {
    match std::env::var("RING_BENCH_KIB") {
        Ok(kib) => kib.parse::<usize>().expect("RING_BENCH_KIB: KiB, a number") << 10,
        Err(_) => BYTE_CAPACITY,
    }
}

fn bench_bytes(size: usize, cpus: Option<(usize, usize)>, sources: &[Vec<u8>]) -> Run {
    let ring = ByteRing::new(byte_capacity()).expect("mmap");
    let ctl = &Control::new();
    let body = size - 16;
    let sums: [u64; SOURCES] = std::array::from_fn(|k| checksum(&sources[k][..body]));
    let child = fork_consumer(cpus.map(|c| c.1), || {
        let mut c = ring.consumer().expect("the consumer end");
        consume(ctl, |seq| {
            // A corrupt header reads as a bad length.
            c.pop_with(|rec| check_record(rec, seq, size, &sums))
                .unwrap_or(Some(Verdict::Bad(Bad::Length)))
        });
    });
    let mut p = ring.producer().expect("the producer end");
    let (sent, send_ns, fulls) = produce(ctl, |msg| {
        let pushed = match msg {
            Msg::Data(seq) => {
                let src = &sources[seq as usize % SOURCES][..body];
                p.push_with(size, |rec| {
                    rec[..8].copy_from_slice(&seq.to_le_bytes());
                    rec[8..size - 8].copy_from_slice(src);
                    rec[size - 8..].copy_from_slice(&seq.to_le_bytes());
                })
            }
            Msg::End => p.push_with(0, |_| ()),
        };
        match pushed {
            Ok(()) => true,
            Err(PushError::Full) => false,
            Err(PushError::TooLarge) => panic!("{size}-byte records do not fit"),
        }
    });
    finish(ctl, child, sent, send_ns, fulls)
}

fn bench_slots(cpus: Option<(usize, usize)>) -> Run {
    let ring = SlotRing::<Item>::new(SLOT_CAPACITY).expect("mmap");
    let ctl = &Control::new();
    let child = fork_consumer(cpus.map(|c| c.1), || {
        let mut c = ring.consumer().expect("the consumer end");
        consume(ctl, |seq| c.pop().map(|got| check_item(got, seq)));
    });
    let mut p = ring.producer().expect("the producer end");
    let (sent, send_ns, fulls) = produce(ctl, |msg| {
        let next = match msg {
            Msg::Data(seq) => item(seq),
            Msg::End => [END, 0, 0, 0],
        };
        p.push(next).is_ok()
    });
    finish(ctl, child, sent, send_ns, fulls)
}

fn rate(n: u64, ns: u64) -> f64 {
    n as f64 * 1e9 / ns as f64
}

/// `1234567.8` as `1,234,568`.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn row(label: &str, size: usize, run: &Run, python: (usize, usize, f64, f64, f64, f64)) {
    let (issue, recv) = (rate(run.sent, run.send_ns), rate(run.received, run.recv_ns));
    let mb = |msgs: f64| msgs * size as f64 / 1e6;
    let (chars, wire, py_issue, _, py_recv, _) = python;
    println!(
        "  {label:<9}{size:>6} B: issue={:>11} msg/s {:>8.1} MB/s, recv={:>11} msg/s {:>8.1} MB/s \
         | vs Python after (Query {chars:>5} chars, {wire:>5} B): issue x{:<5.1} recv x{:<5.1} | full {:.1}%",
        grouped(issue),
        mb(issue),
        grouped(recv),
        mb(recv),
        issue / py_issue,
        recv / py_recv,
        100.0 * run.fulls as f64 / (run.fulls + run.sent).max(1) as f64,
    );
}

fn main() {
    let cpus = pick_cpus();
    if let Some((producer, _)) = cpus {
        pin(producer);
    }
    let where_ = match cpus {
        Some((a, b)) => format!("producer pinned to CPU {a}, consumer to CPU {b}"),
        None => "unpinned (fewer than 2 CPUs available)".to_string(),
    };
    println!(
        "ring throughput, producer (parent) -> consumer (forked child), {where_}; \
         {:.1} s per row; every payload byte copied in, checksummed out",
        RUN.as_secs_f64()
    );
    println!("ByteRing {} KiB:", byte_capacity() >> 10);
    let sources = sources();
    for (i, &size) in SIZES.iter().enumerate() {
        // A record (8-byte header and payload) is at most a quarter of the ring.
        if size + 8 > byte_capacity() / 4 {
            println!(
                "  ByteRing {size:>6} B: skipped, a record would exceed a quarter of the ring"
            );
            continue;
        }
        let run = bench_bytes(size, cpus, &sources);
        row("ByteRing", size, &run, PYTHON_AFTER[i]);
    }
    println!("SlotRing {SLOT_CAPACITY} slots of {} B:", size_of::<Item>());
    let run = bench_slots(cpus);
    row("SlotRing", size_of::<Item>(), &run, PYTHON_AFTER[0]);
}
