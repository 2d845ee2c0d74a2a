//! What the worker tells its parent: one completion record per request (or
//! per conversation that ends without one), built in one place from the job
//! and how it ended, and the backlog of encoded records the completion ring
//! had no room for. The backlog trades memory for never blocking the loop:
//! a full ring delays records, it never stalls sockets.
//!
//! Every record is fitted to what the ring takes (`Completion::fit`) before
//! it goes to the ring or the backlog, so a record the ring refuses cannot
//! exist, and the backlog always drains once the parent reads.

use std::sync::atomic::Ordering;

use super::{Job, Worker};
use crate::engine::record::{self, Completion};
use crate::metrics::errors::ErrorClass;
use crate::shm::ring::{ByteProducer, PushError};
use crate::shm::run::{MAX_GAPS, MAX_RECORD, WorkerCounters};

/// How a job ended, as its record says.
#[derive(Clone, Copy, Debug)]
pub(super) enum Outcome {
    /// The request went out on connection `conn` (or tried to): the record
    /// carries what its receiver tallied.
    Exchange {
        conn: usize,
        status: u16,
        error: ErrorClass,
        /// The last request of its conversation.
        conv_end: bool,
    },
    /// The request never reached a connection; its conversation ends.
    Unsent(ErrorClass),
    /// The conversation ended without sending this turn.
    ConvEnd,
}

impl Worker<'_> {
    /// Records the end of the request on connection `i`, after feeding its
    /// reply to the conversation (which may schedule the next turn).
    pub(super) fn emit(&mut self, i: usize, error: ErrorClass, status: u16, t_end: u64) {
        let conv_end = self.continue_conversation(i, error, t_end);
        let outcome = Outcome::Exchange {
            conn: i,
            status,
            error,
            conv_end,
        };
        self.record(self.conns[i].job, t_end, outcome);
        self.conns[i].rx.shrink();
    }

    /// Builds `job`'s completion record and sends it (or queues it).
    /// Always inlined: each caller passes one known variant, so each gets
    /// only its own arm (the response path is the hot one).
    #[inline(always)]
    pub(super) fn record(&mut self, job: Job, t_end: u64, outcome: Outcome) {
        let mut rec = Completion {
            seq: job.slot.seq,
            t_sched: job.slot.t_sched,
            t_end,
            sample: job.slot.sample,
            stage: job.slot.stage,
            scenario: job.slot.scenario,
            turn: job.turn,
            conv_id: job.id,
            prompt_tokens: Completion::code(None),
            completion_tokens: Completion::code(None),
            endpoint: record::NO_ENDPOINT,
            ..Completion::default()
        };
        match outcome {
            Outcome::Unsent(error) => {
                rec.error = error as u8;
                rec.flags = record::CONV_END;
                self.out.push(self.counters, rec, &[], &[], &[]);
            }
            Outcome::ConvEnd => {
                rec.flags = record::CONV_END | record::NO_REQUEST;
                self.out.push(self.counters, rec, &[], &[], &[]);
            }
            Outcome::Exchange {
                conn,
                status,
                error,
                conv_end,
            } => {
                rec.endpoint = self.conns[conn].endpoint as u16;
                let rx = &self.conns[conn].rx;
                let tally = &rx.tally;
                let sc = &self.s.scenarios[job.slot.scenario as usize];
                let ship_text = self.s.keep_text || sc.keep_text;
                if conv_end {
                    rec.flags |= record::CONV_END;
                }
                if rx.sse_mode {
                    rec.flags |= record::STREAMED;
                }
                if tally.gaps_truncated {
                    rec.flags |= record::GAPS_TRUNCATED;
                }
                if tally.text_truncated {
                    rec.flags |= record::OUTPUT_TRUNCATED;
                }
                rec.t_send = rx.t_send;
                rec.t_first_byte = rx.t_first_byte;
                rec.t_first_token = tally.t_first_token;
                rec.t_last_token = tally.t_last_token;
                rec.status = status;
                rec.error = error as u8;
                rec.prompt_tokens = Completion::code(tally.prompt_tokens);
                rec.completion_tokens = Completion::code(tally.completion_tokens);
                rec.text_events = tally.text_events;
                rec.text_bytes = tally.text_bytes;
                rec.finish = tally.finish as u8;
                rec.first_text_len = tally.first_text_len;
                let text: &[u8] = if ship_text { &tally.text } else { &[] };
                let mut gaps: &[u64] = &tally.gaps;
                // Without gaps (a non-streamed reply, a single event) there
                // is nothing to fold.
                let fold = match error {
                    ErrorClass::None if !gaps.is_empty() => {
                        self.fold_block(job.slot.scenario, job.slot.t_sched, job.turn)
                    }
                    _ => None,
                };
                if let Some(key) = fold {
                    // The gaps a record would have carried (`Completion::fit`).
                    if gaps.len() > MAX_GAPS {
                        rec.flags |= record::GAPS_TRUNCATED;
                    }
                    self.folded.add(key, &gaps[..gaps.len().min(MAX_GAPS)]);
                    rec.flags |= record::FOLDED;
                    gaps = &[];
                }
                self.out
                    .push(self.counters, rec, gaps, text, tally.error_message());
            }
        }
    }
}

/// The completion ring's producer end and the records waiting for room in
/// it.
pub(super) struct Outbox {
    ring: ByteProducer,
    /// Encoded records the ring had no room for, in order, each behind its
    /// length.
    backlog: Vec<u8>,
    /// A record went out since the parent was last rung.
    published: bool,
}

impl Outbox {
    pub(super) fn new(ring: ByteProducer) -> Outbox {
        Outbox {
            ring,
            backlog: Vec::new(),
            published: false,
        }
    }

    /// No record is waiting for room.
    pub(super) fn is_empty(&self) -> bool {
        self.backlog.is_empty()
    }

    /// Whether records went out since the last call.
    pub(super) fn take_published(&mut self) -> bool {
        std::mem::take(&mut self.published)
    }

    /// Test-only (`LLMLOAD_TEST_CORRUPT_RECORD`): publishes a record header
    /// the parent cannot read, as a memory bug would.
    pub(super) fn push_corrupt(&mut self) {
        self.published |= self.ring.push_corrupt().is_ok();
    }

    /// Pushes one record with `gaps`, `text` and `msg`, or queues it behind
    /// earlier ones when the ring is full (order among records does not
    /// matter to the parent, but the backlog must drain before new records
    /// so none waits forever). The record is fitted first (`fit` sets its
    /// lengths), so it is never too large for the ring, queued or not.
    pub(super) fn push(
        &mut self,
        counters: &WorkerCounters,
        mut rec: Completion,
        gaps: &[u64],
        text: &[u8],
        msg: &[u8],
    ) {
        self.published = true;
        rec.fit(gaps.len(), msg.len(), text);
        if rec.flags & record::GAPS_TRUNCATED != 0 {
            counters.itl_truncated.fetch_add(1, Ordering::Relaxed);
        }
        let len = rec.encoded_len();
        debug_assert!(len <= MAX_RECORD);
        if self.backlog.is_empty() {
            match self
                .ring
                .push_with(len, |buf| rec.encode(gaps, text, msg, buf))
            {
                Ok(()) => return,
                Err(PushError::Full) => {}
                // `fit` makes this unreachable. Were it reached, the request
                // is still reported, by its header alone.
                Err(PushError::TooLarge) => {
                    rec.flags |= record::GAPS_TRUNCATED | record::OUTPUT_TRUNCATED;
                    return self.push(counters, rec, &[], &[], &[]);
                }
            }
        }
        counters
            .completion_ring_full
            .fetch_add(1, Ordering::Relaxed);
        self.backlog.extend_from_slice(&(len as u32).to_ne_bytes());
        let at = self.backlog.len();
        self.backlog.resize(at + len, 0);
        rec.encode(gaps, text, msg, &mut self.backlog[at..]);
    }

    /// Moves queued records into the ring while it has room.
    pub(super) fn flush(&mut self) {
        let mut at = 0;
        while at < self.backlog.len() {
            let len =
                u32::from_ne_bytes(self.backlog[at..at + 4].try_into().expect("4 bytes")) as usize;
            let rec = &self.backlog[at + 4..at + 4 + len];
            match self.ring.push_with(len, |buf| buf.copy_from_slice(rec)) {
                Ok(()) => {
                    at += 4 + len;
                    self.published = true;
                }
                Err(PushError::Full) => break,
                // Unreachable (`push` fits every record); skipping it keeps
                // the records behind it moving.
                Err(PushError::TooLarge) => at += 4 + len,
            }
        }
        self.backlog.drain(..at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::conn::MAX_MESSAGE;
    use crate::engine::record::MIN_RECORD_TEXT;
    use crate::shm::run::Shared;

    #[test]
    fn an_oversized_record_behind_a_full_ring_is_trimmed_and_the_backlog_drains() {
        let shared = Shared::new(1, 1).unwrap();
        let (_issue, mut done) = shared.take_parent_ends(0).unwrap();
        let (_take, ring) = shared.take_worker_ends(0).unwrap();
        let counters = shared.counters(0);
        let mut out = Outbox::new(ring);
        let rec = |seq| Completion {
            seq,
            ..Completion::default()
        };
        let gaps = vec![7u64; MAX_GAPS + 10];
        let text = vec![b'x'; 600 << 10];
        // Records that ship text fill the ring until they queue.
        let mut seq = 0;
        while out.is_empty() {
            out.push(counters, rec(seq), &gaps[..1000], &text, b"");
            seq += 1;
        }
        // The largest record a response can make: more gaps than a record
        // carries, more text than the ring takes, the longest message.
        let big = seq;
        out.push(
            counters,
            rec(big),
            &gaps,
            &vec![b'y'; 3 << 20],
            &[b'm'; 300],
        );
        // The worker goes on reporting behind it.
        out.push(counters, rec(big + 1), &[], b"after", b"");
        let mut got = Vec::new();
        for _ in 0..100 {
            while let Some(r) = done
                .pop_with(|b| {
                    let d = Completion::decode(b).expect("a whole record");
                    (d.c, d.gaps.iter().count(), d.text.to_vec(), d.msg.len())
                })
                .expect("an intact ring")
            {
                got.push(r);
            }
            if out.is_empty() {
                break;
            }
            out.flush();
        }
        assert!(out.is_empty(), "the backlog is wedged");
        let seqs: Vec<u64> = got.iter().map(|r| r.0.seq).collect();
        assert_eq!(seqs, (0..=big + 1).collect::<Vec<_>>());
        let (c, n_gaps, text, msg) = &got[big as usize];
        // Trimmed text first: every gap a record carries is kept.
        assert_eq!(*n_gaps, MAX_GAPS);
        assert_eq!(c.flags, record::GAPS_TRUNCATED | record::OUTPUT_TRUNCATED);
        assert!(text.len() >= MIN_RECORD_TEXT && text.iter().all(|&b| b == b'y'));
        assert_eq!(*msg, MAX_MESSAGE);
        assert!(c.encoded_len() <= MAX_RECORD);
        assert_eq!(got[big as usize + 1].2, b"after");
        assert!(counters.completion_ring_full.load(Ordering::Relaxed) >= 2);
        assert_eq!(counters.itl_truncated.load(Ordering::Relaxed), 1);
    }
}
