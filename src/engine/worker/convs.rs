//! The worker's multi-turn conversations: a slot table reused across
//! conversations (a slot keeps its history's allocation), and the heap of
//! conversations thinking before their next turn. A turn's request is built
//! here from the history; the reply is fed back when the turn ends. This is
//! the part of the worker that allocates (see `engine::conversation`); a
//! single-turn request never comes here.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::emit::Outcome;
use super::pool::ConnState;
use super::{Job, NO_CONV, Worker};
use crate::clock::now_ns;
use crate::engine::conversation::Conv;
use crate::metrics::errors::ErrorClass;
use crate::protocol::Message;
use crate::protocol::json::unescape;
use crate::shm::run::IssueSlot;
use crate::uuid::new_uuid;

/// Conversation slots and the conversations waiting out their think time.
#[derive(Default)]
pub(super) struct Convs {
    slots: Vec<Conv>,
    free: Vec<u32>,
    /// Conversations waiting out their think time: (due, slot).
    thinking: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Convs {
    /// Puts `conv` in a free slot (reusing its history's allocation) and
    /// returns the slot.
    fn open(&mut self, conv: Conv) -> u32 {
        match self.free.pop() {
            Some(k) => {
                let mut old = std::mem::replace(&mut self.slots[k as usize], conv);
                // Keep the history's allocation for the next conversation.
                old.history.clear();
                self.slots[k as usize].history = old.history;
                k
            }
            None => {
                self.slots.push(conv);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Conversation `k` has ended; its slot is free.
    pub(super) fn release(&mut self, k: u32) {
        self.free.push(k);
    }

    /// When the next thinking conversation is due.
    pub(super) fn next_due(&self) -> Option<u64> {
        self.thinking.peek().map(|&Reverse((due, _))| due)
    }
}

impl Worker<'_> {
    /// The first request of what the parent issued: a single request, or
    /// the first turn of a new conversation.
    pub(super) fn first_job(&mut self, slot: IssueSlot, now: u64) -> Job {
        let id = new_uuid(&mut self.rng);
        let sc = &self.s.scenarios[slot.scenario as usize];
        let mut job = Job {
            slot,
            t_dispatch: now,
            id,
            ..Job::default()
        };
        if let Some(t) = &sc.conversation {
            let (lo, hi) = sc.turns;
            let mut turns = lo + self.rng.below((hi - lo) as u64 + 1) as u16;
            if let Some(max) = t.turns.max_turns(slot.sample) {
                turns = turns.min(max).max(1);
            }
            job.conv = self.convs.open(Conv {
                scenario: slot.scenario,
                stage: slot.stage,
                sample: slot.sample,
                seq: slot.seq,
                id,
                turn: 0,
                turns,
                history: Vec::new(),
            });
        }
        job
    }

    /// Starts the turns whose think time has passed.
    pub(super) fn wake_thinkers(&mut self, now: u64) {
        while let Some(&Reverse((due, k))) = self.convs.thinking.peek() {
            if due > now {
                break;
            }
            self.convs.thinking.pop();
            let c = &self.convs.slots[k as usize];
            let job = Job {
                slot: c.slot(due),
                t_dispatch: now,
                retried: false,
                conv: k,
                turn: c.turn + 1,
                id: c.id,
            };
            self.enqueue(job);
        }
    }

    /// Draining: conversations waiting to think start no further turns. The
    /// parent still hears that each has ended (a record with no request).
    pub(super) fn end_thinking(&mut self, now: u64) {
        while let Some(Reverse((_, k))) = self.convs.thinking.pop() {
            let c = &self.convs.slots[k as usize];
            let job = Job {
                slot: c.slot(now),
                conv: k,
                turn: c.turn,
                id: c.id,
                ..Job::default()
            };
            self.record(job, now, Outcome::ConvEnd);
            self.convs.release(k);
        }
    }

    /// Builds the next turn of the conversation riding on connection `i`
    /// into its write buffer. False when the source has run out of turns:
    /// the connection goes back to the pool and the parent hears that the
    /// conversation ended.
    pub(super) fn next_turn(&mut self, i: usize) -> bool {
        let job = self.conns[i].job;
        let sc = &self.s.scenarios[job.slot.scenario as usize];
        let t = sc
            .conversation
            .as_ref()
            .expect("conversation jobs have a template");
        let c = &mut self.conns[i];
        let conv = &mut self.convs.slots[job.conv as usize];
        conv.turn = job.turn - 1;
        if t.next_request(
            sc.protocol,
            conv,
            c.target,
            &mut self.body_scratch,
            &mut c.wbuf,
        ) {
            c.from_wbuf = true;
            return true;
        }
        c.state = ConnState::Idle;
        self.idle[c.endpoint].push(i);
        self.busy -= 1;
        self.record(job, now_ns(), Outcome::ConvEnd);
        self.convs.release(job.conv);
        false
    }

    /// After turn `c.job.turn` of a conversation ended: feeds the reply back
    /// and schedules the next turn after the think time, or ends the
    /// conversation. Returns whether it (or the single request) has ended.
    pub(super) fn continue_conversation(
        &mut self,
        i: usize,
        error: ErrorClass,
        t_end: u64,
    ) -> bool {
        let job = self.conns[i].job;
        if job.conv == NO_CONV {
            return true;
        }
        let conv = &mut self.convs.slots[job.conv as usize];
        if error != ErrorClass::None || job.turn >= conv.turns || self.draining {
            self.convs.release(job.conv);
            return true;
        }
        let reply = unescape(&self.conns[i].rx.tally.text);
        conv.history.push(Message {
            role: "assistant".to_string(),
            content: reply,
        });
        conv.turn = job.turn;
        let think = self.s.scenarios[job.slot.scenario as usize].think_time_ns;
        self.convs.thinking.push(Reverse((t_end + think, job.conv)));
        false
    }
}
