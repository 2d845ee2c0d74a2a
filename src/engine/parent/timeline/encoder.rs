//! Closed seconds' latency histograms, read and encoded off the parent's
//! loop: a closed cell's histograms go to a thread of their own, which
//! takes their percentiles, encodes them as text (`hdr::to_text`, a V2
//! deflate and base64 of about 40 µs each) and hands the histograms back
//! reset, for the pool. A second's close in the loop is then a swap and a
//! channel send per cell; the text, which summary.json keeps, is all that
//! stays, and the closed buckets get it when the run ends. The thread runs
//! in the idle scheduling class, so on a busy core it waits for the loop
//! and the workers rather than delaying them. Without the thread (it
//! could not start) the loop encodes them itself, as it must.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use hdrhistogram::Histogram;

use crate::metrics::hdr;
use crate::metrics::timeline::{BOUNDS, Bucket};

/// An open cell's latency histograms: TTFT and e2e of its successes, and
/// (whole-run slice only) the send lateness of all its requests.
pub(super) struct Hists {
    pub ttft: Histogram<u32>,
    pub e2e: Histogram<u32>,
    pub late: Histogram<u32>,
}

impl Hists {
    pub(super) fn new() -> Hists {
        Hists {
            ttft: BOUNDS.histogram(),
            e2e: BOUNDS.histogram(),
            late: BOUNDS.histogram(),
        }
    }

    /// No success recorded: nothing for a bucket to keep.
    pub(super) fn no_latency(&self) -> bool {
        self.ttft.is_empty() && self.e2e.is_empty()
    }

    pub(super) fn reset(&mut self) {
        for h in [&mut self.ttft, &mut self.e2e, &mut self.late] {
            if !h.is_empty() {
                h.reset();
            }
        }
    }
}

/// Which bucket a closed cell became: its slice, interval and stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cell {
    pub slice: usize,
    pub interval: u32,
    pub stage: Option<u16>,
}

/// What a bucket keeps of one histogram.
struct Kept {
    p50: u64,
    p99: u64,
    text: String,
}

/// A closed cell's histograms, read.
pub(super) struct Encoded {
    pub cell: Cell,
    ttft: Option<Kept>,
    e2e: Option<Kept>,
}

impl Encoded {
    /// Reads `h` and resets it.
    fn of(cell: Cell, h: &mut Hists) -> Encoded {
        let keep = |h: &Histogram<u32>| {
            (!h.is_empty()).then(|| Kept {
                p50: h.value_at_quantile(0.5),
                p99: h.value_at_quantile(0.99),
                text: hdr::to_text(h),
            })
        };
        let e = Encoded {
            cell,
            ttft: keep(&h.ttft),
            e2e: keep(&h.e2e),
        };
        h.reset();
        e
    }

    /// Fills `b`'s percentiles and histograms.
    pub(super) fn fill(self, b: &mut Bucket) {
        if let Some(k) = self.ttft {
            (b.ttft_p50_ns, b.ttft_p99_ns, b.ttft_hist) = (Some(k.p50), Some(k.p99), Some(k.text));
        }
        if let Some(k) = self.e2e {
            (b.e2e_p50_ns, b.e2e_p99_ns, b.e2e_hist) = (Some(k.p50), Some(k.p99), Some(k.text));
        }
    }
}

/// Histogram sets the thread may hold before the loop encodes the next ones
/// itself: about 10 MiB, several seconds of a run with 16 scenarios. Only a
/// thread kept off the CPU for that long (its class yields to everything)
/// gets there, and memory stays bounded if it does.
const MAX_QUEUED: usize = 256;

/// The encoding thread, or the loop itself when there is none.
pub(super) struct Encoder {
    work: Option<Sender<(Cell, Hists)>>,
    back: Option<Receiver<Hists>>,
    thread: Option<JoinHandle<Vec<Encoded>>>,
    /// Sets sent to the thread and not yet handed back.
    queued: usize,
    /// Sets handed back, ready for cells.
    spares: Vec<Hists>,
    /// Encoded in the loop (no thread, or too far behind).
    here: Vec<Encoded>,
}

impl Encoder {
    /// An encoder that does its work in the caller's thread; `start` moves
    /// it to a thread of its own.
    pub(super) fn inline() -> Encoder {
        Encoder {
            work: None,
            back: None,
            thread: None,
            queued: 0,
            spares: Vec::new(),
            here: Vec::new(),
        }
    }

    /// Starts the thread (after the workers are forked: a process with
    /// another thread is refused a fork). If it cannot start, encoding
    /// stays in the loop.
    pub(super) fn start(&mut self) {
        if self.thread.is_some() {
            return;
        }
        let (work, jobs) = channel::<(Cell, Hists)>();
        let (done, back) = channel::<Hists>();
        let thread = std::thread::Builder::new()
            .name("llmload-timeline".into())
            .spawn(move || {
                // It shares the cores with the parent's loop and the
                // workers (`--pin` puts it on the parent's): it must
                // only ever take the time they leave.
                let _ = crate::sys::process::lower_thread_priority();
                let mut out = Vec::new();
                for (cell, mut h) in jobs {
                    out.push(Encoded::of(cell, &mut h));
                    // The loop may be gone (ending): the histogram goes too.
                    let _ = done.send(h);
                }
                out
            });
        if let Ok(thread) = thread {
            (self.work, self.back, self.thread) = (Some(work), Some(back), Some(thread));
        }
    }

    /// Takes `h`'s histograms for `cell`, leaving an empty set in its
    /// place (one the thread handed back, when there is one).
    pub(super) fn take(&mut self, cell: Cell, h: &mut Hists) {
        if let Some(back) = &self.back {
            while let Ok(spare) = back.try_recv() {
                self.spares.push(spare);
                self.queued -= 1;
            }
        }
        if let Some(work) = &self.work
            && self.queued < MAX_QUEUED
        {
            let spare = self.spares.pop().unwrap_or_else(Hists::new);
            let full = std::mem::replace(h, spare);
            match work.send((cell, full)) {
                Ok(()) => {
                    self.queued += 1;
                    return;
                }
                Err(e) => *h = e.0.1,
            }
        }
        self.here.push(Encoded::of(cell, h));
    }

    /// Every cell encoded, once the thread has done them all; the encoder
    /// keeps working in the loop after this.
    pub(super) fn finish(&mut self) -> Vec<Encoded> {
        self.work = None;
        self.back = None;
        let mut out = std::mem::take(&mut self.here);
        if let Some(done) = self.thread.take().and_then(|t| t.join().ok()) {
            out.extend(done);
        }
        out
    }
}
