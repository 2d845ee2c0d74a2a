//! Counting output tokens with `--tokenizer` when an endpoint reports no
//! usage: a thread in the parent (started after the workers are forked) takes
//! each such request's text, counts it, and hands the request back to be
//! recorded. It keeps tokenization off both the workers and the parent's
//! scheduling loop, at the cost of recording those requests a little later.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};

use crate::metrics::block::RequestSample;
use crate::protocol::json::unescape;
use crate::tokens::Tokenizer;

/// A finished request held back until its output is counted, with all the
/// collector needs to record it afterwards.
pub struct Pending {
    pub sample: RequestSample,
    /// Block the request belongs to (stage index, or `usize::MAX` for warmup).
    pub block: usize,
    pub scenario: u16,
    pub seq: u64,
    pub conv_id: [u8; 16],
    pub turn: u16,
    pub gaps: Vec<u64>,
    /// Output text, raw JSON-escaped as received.
    pub text: Vec<u8>,
}

/// The parent's end of the counting thread.
pub struct TokenLane<'scope> {
    tx: Option<Sender<Pending>>,
    rx: Receiver<Pending>,
    /// Submitted and not yet returned.
    pub outstanding: usize,
    _thread: ScopedJoinHandle<'scope, ()>,
}

impl<'scope> TokenLane<'scope> {
    pub fn spawn<'env>(scope: &'scope Scope<'scope, 'env>, tokenizer: &'env Tokenizer) -> Self {
        let (tx, work) = channel::<Pending>();
        let (done, rx) = channel::<Pending>();
        let thread = scope.spawn(move || {
            for mut p in work {
                let n = tokenizer.count(&unescape(&p.text));
                p.sample.tokenized_output = Some(n as u32);
                if done.send(p).is_err() {
                    break;
                }
            }
        });
        TokenLane {
            tx: Some(tx),
            rx,
            outstanding: 0,
            _thread: thread,
        }
    }

    pub fn submit(&mut self, p: Pending) {
        if let Some(tx) = &self.tx
            && tx.send(p).is_ok()
        {
            self.outstanding += 1;
        }
    }

    /// A counted request, if one is ready.
    pub fn try_take(&mut self) -> Option<Pending> {
        let p = self.rx.try_recv().ok()?;
        self.outstanding -= 1;
        Some(p)
    }

    /// Waits for a counted request; `None` once nothing is outstanding.
    pub fn take(&mut self) -> Option<Pending> {
        if self.outstanding == 0 {
            return None;
        }
        let p = self.rx.recv().ok()?;
        self.outstanding -= 1;
        Some(p)
    }

    /// No more submissions: lets the thread end once it has drained.
    pub fn close(&mut self) {
        self.tx = None;
    }
}
