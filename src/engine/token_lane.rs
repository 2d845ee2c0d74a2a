//! Counting output tokens with `--tokenizer` when an endpoint reports no
//! usage: a thread in the parent (started after the workers are forked) takes
//! each such request's text, counts it, and hands the request back to be
//! recorded. It keeps tokenization off both the workers and the parent's
//! scheduling loop, at the cost of recording those requests a little later.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::{Scope, ScopedJoinHandle};

use crate::metrics::observe::Finished;
use crate::protocol::json::unescape;
use crate::tokens::Tokenizer;

/// The parent's end of the counting thread.
pub(crate) struct TokenLane<'scope> {
    tx: Option<Sender<Finished<'static>>>,
    rx: Receiver<Finished<'static>>,
    /// Submitted and not yet returned.
    pub outstanding: usize,
    _thread: ScopedJoinHandle<'scope, ()>,
}

impl<'scope> TokenLane<'scope> {
    pub(crate) fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        tokenizer: &'env Tokenizer,
    ) -> Self {
        let (tx, work) = channel::<Finished<'static>>();
        let (done, rx) = channel::<Finished<'static>>();
        let thread = scope.spawn(move || {
            for mut f in work {
                let n = tokenizer.count(&unescape(&f.text));
                f.sample.tokenized_output = Some(n as u32);
                if done.send(f).is_err() {
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

    pub(crate) fn submit(&mut self, f: Finished<'static>) {
        if let Some(tx) = &self.tx
            && tx.send(f).is_ok()
        {
            self.outstanding += 1;
        }
    }

    /// A counted request, if one is ready.
    pub(crate) fn try_take(&mut self) -> Option<Finished<'static>> {
        let p = self.rx.try_recv().ok()?;
        self.outstanding -= 1;
        Some(p)
    }

    /// Waits for a counted request; `None` once nothing is outstanding.
    pub(crate) fn take(&mut self) -> Option<Finished<'static>> {
        if self.outstanding == 0 {
            return None;
        }
        let p = self.rx.recv().ok()?;
        self.outstanding -= 1;
        Some(p)
    }

    /// No more submissions: lets the thread end once it has drained.
    pub(crate) fn close(&mut self) {
        self.tx = None;
    }
}
