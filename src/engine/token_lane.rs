//! Counting output tokens with `--tokenizer` when an endpoint reports no
//! usage: a thread in the parent (started after the workers are forked) takes
//! each such request's text, counts it, and hands the request back to be
//! recorded. It keeps tokenization off both the workers and the parent's
//! scheduling loop, at the cost of recording those requests a little later.
//!
//! The lane is bounded in bytes, not only in count: a tokenizer slower than
//! the endpoint would otherwise queue every output of the run. A request
//! that finds the lane full is recorded at once, its output counted by its
//! events instead and marked `untokenized` (the summary says how many). At
//! the end of the run the lane drains for at most `FINAL_DRAIN`, or until
//! another signal arrives; then the rest pass through uncounted, marked the
//! same way, so no request is ever lost to the lane.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use crate::metrics::observe::Finished;
use crate::protocol::json::unescape;
use crate::tokens::Tokenizer;

/// Bytes of requests (text, gaps and the record) the lane may hold.
const MAX_QUEUED: usize = 32 << 20;
/// How long the end of a run waits for the tokenizer before the remaining
/// requests pass through uncounted.
const FINAL_DRAIN: Duration = Duration::from_secs(5);
/// How often the final drain looks at the clock and the signal count.
const DRAIN_TICK: Duration = Duration::from_millis(50);

/// The parent's end of the counting thread.
pub(crate) struct TokenLane<'scope> {
    tx: Option<Sender<Finished<'static>>>,
    rx: Receiver<Finished<'static>>,
    /// Submitted and not yet returned.
    pub outstanding: usize,
    /// Bytes of the outstanding requests.
    queued: usize,
    limit: usize,
    /// Tells the thread to pass requests back without counting them.
    stop: Arc<AtomicBool>,
    /// The signal count the final drain reacts to.
    signals: &'static AtomicU32,
    /// How long the final drain may count.
    drain_for: Duration,
    /// The final drain's deadline and the signal count it began with (set
    /// by `close`).
    drain: Option<(Instant, u32)>,
    _thread: ScopedJoinHandle<'scope, ()>,
}

impl<'scope> TokenLane<'scope> {
    pub(crate) fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        tokenizer: &'env Tokenizer,
    ) -> Self {
        let limits = (MAX_QUEUED, FINAL_DRAIN);
        let count = move |text: &str| tokenizer.count(text);
        Self::with(scope, count, limits, crate::sys::signal::interrupts())
    }

    /// A lane counting with `count`, holding at most `limit` bytes and
    /// draining for at most `drain_for` at the end.
    fn with<'env>(
        scope: &'scope Scope<'scope, 'env>,
        count: impl Fn(&str) -> usize + Send + 'env,
        (limit, drain_for): (usize, Duration),
        signals: &'static AtomicU32,
    ) -> Self {
        let (tx, work) = channel::<Finished<'static>>();
        let (done, rx) = channel::<Finished<'static>>();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = scope.spawn(move || {
            for mut f in work {
                if stopped.load(Ordering::Relaxed) {
                    f.sample.untokenized = true;
                } else {
                    let n = count(&unescape(&f.text));
                    f.sample.tokenized_output = Some(n as u32);
                    f.sample.tokens_after_first = after_first(&f, &count);
                }
                if done.send(f).is_err() {
                    break;
                }
            }
        });
        TokenLane {
            tx: Some(tx),
            rx,
            outstanding: 0,
            queued: 0,
            limit,
            stop,
            signals,
            drain_for,
            drain: None,
            _thread: thread,
        }
    }

    /// Whether `f` may be submitted now: the lane is open and has room for
    /// it. A request it refuses is recorded uncounted.
    pub(crate) fn admits(&self, f: &Finished<'_>) -> bool {
        self.tx.is_some() && self.queued + weight(f) <= self.limit
    }

    pub(crate) fn submit(&mut self, f: Finished<'static>) {
        let w = weight(&f);
        if let Some(tx) = &self.tx
            && tx.send(f).is_ok()
        {
            self.outstanding += 1;
            self.queued += w;
        }
    }

    fn returned(&mut self, f: &Finished<'static>) {
        self.outstanding -= 1;
        self.queued = self.queued.saturating_sub(weight(f));
    }

    /// A counted request, if one is ready.
    pub(crate) fn try_take(&mut self) -> Option<Finished<'static>> {
        let p = self.rx.try_recv().ok()?;
        self.returned(&p);
        Some(p)
    }

    /// Waits for a request back; `None` once nothing is outstanding. After
    /// `close`, once `FINAL_DRAIN` has passed or a signal has arrived, the
    /// thread stops counting and the rest come back at once, uncounted.
    pub(crate) fn take(&mut self) -> Option<Finished<'static>> {
        while self.outstanding > 0 {
            match self.rx.recv_timeout(DRAIN_TICK) {
                Ok(p) => {
                    self.returned(&p);
                    return Some(p);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some((deadline, seen)) = self.drain
                        && (Instant::now() >= deadline
                            || self.signals.load(Ordering::Relaxed) != seen)
                    {
                        self.stop.store(true, Ordering::Relaxed);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
        None
    }

    /// No more submissions: lets the thread end once it has drained, and
    /// starts the final drain's clock.
    pub(crate) fn close(&mut self) {
        self.tx = None;
        self.drain = Some((
            Instant::now() + self.drain_for,
            self.signals.load(Ordering::Relaxed),
        ));
    }
}

/// Tokens of a stream's output after its first event's text, counted on
/// their own as MLPerf counts them (`text_after_first_chunk`): `None` for
/// a response that was not streamed or had nothing after its first event.
fn after_first(f: &Finished<'_>, count: &impl Fn(&str) -> usize) -> Option<u32> {
    if !f.sample.streamed {
        return None;
    }
    // The first event's piece ends where an escape is whole: it is a
    // prefix the worker kept in whole pieces.
    let cut = (f.sample.first_text_len as usize).min(f.text.len());
    let rest = unescape(&f.text[cut..]);
    (!rest.is_empty()).then(|| count(&rest) as u32)
}

/// What a request holds while it is in the lane.
fn weight(f: &Finished<'_>) -> usize {
    size_of::<Finished<'static>>() + f.text.len() + f.gaps.bytes()
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::metrics::block::RequestSample;
    use crate::metrics::observe::Gaps;

    #[test]
    fn a_stream_s_tokens_after_its_first_event_are_counted_apart() {
        static SIGNALS: AtomicU32 = AtomicU32::new(0);
        std::thread::scope(|scope| {
            let mut lane = TokenLane::with(scope, words, (usize::MAX, FINAL_DRAIN), &SIGNALS);
            let mut f = finished(0);
            f.text = Cow::Borrowed(
                br#" the
 quick brown "fox""#,
            );
            f.sample.first_text_len = 4;
            f.sample.streamed = true;
            lane.submit(f.clone());
            let back = lane.take().unwrap();
            assert_eq!(back.sample.tokenized_output, Some(4));
            assert_eq!(back.sample.tokens_after_first, Some(3));
            // Not a stream: no first event to count after.
            f.sample.streamed = false;
            lane.submit(f.clone());
            assert_eq!(lane.take().unwrap().sample.tokens_after_first, None);
            // A stream whose only event was the first.
            f.sample.streamed = true;
            f.sample.first_text_len = f.text.len() as u32;
            lane.submit(f);
            assert_eq!(lane.take().unwrap().sample.tokens_after_first, None);
        });
    }

    fn finished(words: usize) -> Finished<'static> {
        Finished {
            sample: RequestSample::default(),
            seq: 0,
            conv_id: [0; 16],
            scenario: 0,
            endpoint: 0,
            stage: None,
            turn: 1,
            row: None,
            gaps: Gaps::Owned(vec![1, 2]),
            text: Cow::Owned("w ".repeat(words).into_bytes()),
            message: None,
        }
    }

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    /// A tokenizer far slower than the requests come.
    fn slow(text: &str) -> usize {
        std::thread::sleep(Duration::from_millis(100));
        words(text)
    }

    #[test]
    fn the_lane_is_bounded_in_bytes() {
        static SIGNALS: AtomicU32 = AtomicU32::new(0);
        std::thread::scope(|scope| {
            let one = weight(&finished(1000));
            let limits = (2 * one, FINAL_DRAIN);
            let mut lane = TokenLane::with(scope, words, limits, &SIGNALS);
            assert!(lane.admits(&finished(1000)));
            lane.submit(finished(1000));
            lane.submit(finished(1000));
            // Full until something comes back, whatever the count.
            assert!(!lane.admits(&finished(1000)));
            assert!(!lane.admits(&finished(10)));
            let back = lane.take().unwrap();
            assert_eq!(back.sample.tokenized_output, Some(1000));
            assert!(!back.sample.untokenized);
            assert!(lane.admits(&finished(1000)));
            assert!(!lane.admits(&finished(3000)));
            lane.close();
            assert!(!lane.admits(&finished(1)));
            assert!(lane.take().is_some());
            assert!(lane.take().is_none());
        });
    }

    #[test]
    fn the_final_drain_ends_at_its_deadline_and_loses_nothing() {
        static SIGNALS: AtomicU32 = AtomicU32::new(0);
        std::thread::scope(|scope| {
            let limits = (usize::MAX, Duration::from_millis(300));
            let mut lane = TokenLane::with(scope, slow, limits, &SIGNALS);
            for _ in 0..40 {
                lane.submit(finished(3));
            }
            lane.close();
            let t0 = Instant::now();
            let (mut counted, mut passed) = (0, 0);
            while let Some(f) = lane.take() {
                match f.sample.tokenized_output {
                    Some(n) => {
                        assert_eq!(n, 3);
                        counted += 1;
                    }
                    None => {
                        assert!(f.sample.untokenized);
                        passed += 1;
                    }
                }
            }
            // 40 × 100 ms to count them all; the drain stops after 300 ms
            // plus the count under way and a tick.
            assert!(
                t0.elapsed() < Duration::from_millis(1500),
                "{:?}",
                t0.elapsed()
            );
            assert_eq!(counted + passed, 40);
            assert!(passed >= 25, "{counted} counted");
        });
    }

    #[test]
    fn a_signal_ends_the_final_drain() {
        static SIGNALS: AtomicU32 = AtomicU32::new(0);
        std::thread::scope(|scope| {
            let limits = (usize::MAX, Duration::from_secs(600));
            let mut lane = TokenLane::with(scope, slow, limits, &SIGNALS);
            for _ in 0..40 {
                lane.submit(finished(3));
            }
            lane.close();
            let t0 = Instant::now();
            assert!(lane.take().is_some());
            SIGNALS.fetch_add(1, Ordering::Relaxed);
            let mut n = 1;
            while lane.take().is_some() {
                n += 1;
            }
            assert_eq!(n, 40);
            assert!(
                t0.elapsed() < Duration::from_millis(1500),
                "{:?}",
                t0.elapsed()
            );
        });
    }
}
