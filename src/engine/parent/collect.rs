//! The collector half of the parent: completion records read in place from
//! each worker's ring, their counts resolved (input tokens from ids, the
//! tokenizer or usage; output tokens by the tokenizer lane when the endpoint
//! reported none), the scenario's checks applied, and each request recorded
//! in its block, the timeline and the observer — as one `Finished`. The
//! workers' folded inter-token gaps come at the end, a series per block.

use std::borrow::Cow;
use std::time::Duration;

use super::{Parent, WorkerEnd};
use crate::clock::now_ns;
use crate::engine::record::{self, Completion, Decoded};
use crate::engine::requests::{InputSource, RequestSet};
use crate::engine::stages;
use crate::http::redact::redact;
use crate::metrics::block::{InputCount, RequestSample};
use crate::metrics::errors::ErrorClass;
use crate::metrics::goodput;
use crate::metrics::observe::Finished;
use crate::plan::TokenPolicy;
use crate::protocol::errors;
use crate::protocol::json::unescape;

/// Characters of an error message kept for the report and events log.
const MAX_MESSAGE: usize = 200;
/// How long the end of a run waits for the workers' folded series.
const SERIES_WAIT_NS: u64 = 5_000_000_000;

/// What reading one completion record came to.
enum Read {
    /// Recorded; `Some(open)` when it ended its conversation, whose
    /// in-flight count is kept at `open` in `WorkerEnd::open`, and
    /// `Some(block)` when its gaps were folded by the worker, for the block
    /// it was recorded in (indexed as `open`).
    Ok(Option<usize>, Option<usize>),
    /// A folded series merged into block `.0`, covering `.1` requests;
    /// `None`: the worker's last record.
    Series(usize, Option<u64>),
    /// It does not decode, or names a stage or scenario the run does not
    /// have: the worker wrote outside the protocol.
    Bad,
}

impl Parent<'_, '_, '_> {
    /// Folds every waiting completion record into its block; returns how
    /// many were read. A worker whose ring holds a record that cannot be
    /// read is stopped, as if it had died (`worker_corrupt`).
    pub(super) fn collect(&mut self) -> usize {
        let mut n = 0;
        // Empty (no allocation) unless a worker wrote outside the protocol.
        let mut corrupt = Vec::new();
        // The ring ends are moved out for the loop so records can be handled
        // in place (`absorb` needs the rest of `self`) before their ring
        // space is released: nothing is copied out of the ring.
        let mut workers = std::mem::take(&mut self.workers);
        for (k, w) in workers.iter_mut().enumerate() {
            if !w.alive {
                continue;
            }
            loop {
                let read = w.done.pop_with(|bytes| {
                    let Some(d) = Completion::decode(bytes) else {
                        return Read::Bad;
                    };
                    let Some(open) = self.open_index(d.c.stage, d.c.scenario) else {
                        return Read::Bad;
                    };
                    if d.c.flags & record::SERIES != 0 {
                        return self.merge_series(open, d.text);
                    }
                    let ended = d.c.flags & record::CONV_END != 0;
                    let folded = (d.c.flags & record::FOLDED != 0).then(|| {
                        let slot = stages::slot_of(self.stage_of(d.c.t_sched));
                        slot * self.plan.scenarios.len() + open % self.plan.scenarios.len()
                    });
                    self.absorb(d);
                    Read::Ok(ended.then_some(open), folded)
                });
                match read {
                    Ok(None) => break,
                    Ok(Some(Read::Ok(ended, folded))) => {
                        n += 1;
                        if let Some(open) = ended {
                            self.conversation_ended(w, open);
                        }
                        if let Some(block) = folded {
                            w.unfolded[block] += 1;
                        }
                    }
                    Ok(Some(Read::Series(block, covered))) => w.series_in(block, covered),
                    Ok(Some(Read::Bad)) | Err(_) => {
                        corrupt.push(k);
                        break;
                    }
                }
            }
        }
        self.workers = workers;
        for k in corrupt {
            self.worker_corrupt(k);
        }
        while let Some(f) = self.lane.as_mut().and_then(|l| l.try_take()) {
            self.finalize(f);
        }
        n
    }

    /// Merges a worker's folded gaps of block `block` (indexed as
    /// `WorkerEnd::open`), the `SERIES` record's `text`, into that block;
    /// empty, the worker's last record.
    fn merge_series(&mut self, block: usize, text: &[u8]) -> Read {
        if text.is_empty() {
            return Read::Series(block, None);
        }
        let Some((requests, itl)) = record::read_series(text) else {
            return Read::Bad;
        };
        let n = self.plan.scenarios.len();
        let b = match block / n {
            0 => &mut self.warmup,
            slot => &mut self.blocks[slot - 1][block % n],
        };
        b.itl.merge(&itl);
        Read::Series(block, Some(requests))
    }

    /// After `Exit`: waits for each live worker's folded series, which it
    /// sends as it exits, up to its last record, or until it dies or
    /// `SERIES_WAIT_NS` have passed. A request's record seen here came after
    /// its conversation was written off (`drain`): it is passed over, as
    /// it would have been unread before.
    pub(super) fn collect_series(&mut self) {
        let deadline = now_ns().saturating_add(SERIES_WAIT_NS);
        loop {
            let mut waiting = false;
            let mut workers = std::mem::take(&mut self.workers);
            for w in workers.iter_mut().filter(|w| w.alive && !w.series_done) {
                let exited = matches!(w.child.try_wait(), Ok(Some(_)));
                loop {
                    let read = w.done.pop_with(|bytes| {
                        let d = Completion::decode(bytes)?;
                        if d.c.flags & record::SERIES == 0 {
                            return Some(None);
                        }
                        let open = self.open_index(d.c.stage, d.c.scenario)?;
                        match self.merge_series(open, d.text) {
                            Read::Series(block, covered) => Some(Some((block, covered))),
                            _ => None,
                        }
                    });
                    match read {
                        Ok(Some(Some(Some((block, covered))))) => w.series_in(block, covered),
                        Ok(Some(Some(None))) => {}
                        // Empty, or unreadable: nothing more from this one.
                        Ok(None) | Ok(Some(None)) | Err(_) => break,
                    }
                }
                waiting |= !exited && !w.series_done;
            }
            self.workers = workers;
            if !waiting || now_ns() >= deadline {
                return;
            }
            let bell = &self.shared.parent_bell;
            bell.prepare_sleep();
            if self.workers.iter_mut().any(|w| !w.done.is_empty()) {
                bell.cancel_sleep();
                continue;
            }
            bell.wait(Some(Duration::from_millis(10)));
        }
    }

    /// A conversation kept at `open` on `w` ended. A worker that reports one
    /// end too many (a protocol bug) cannot push a count below zero.
    fn conversation_ended(&mut self, w: &mut WorkerEnd<'_>, open: usize) {
        if w.open[open] == 0 {
            return;
        }
        w.open[open] -= 1;
        w.inflight -= 1;
        self.inflight -= 1;
        self.inflight_by_scenario[open % self.plan.scenarios.len()] -= 1;
    }

    /// Handles one decoded record: resolves its counts, and records it now
    /// or after the tokenizer lane has counted its output.
    fn absorb(&mut self, d: Decoded<'_>) {
        if d.c.flags & record::NO_REQUEST != 0 {
            return;
        }
        let scenario = (d.c.scenario as usize).min(self.plan.scenarios.len() - 1);
        let sc = &self.plan.scenarios[scenario];
        let mut sample = d.c.sample();
        let policy = self.plan.token_source;
        resolve_input(
            &mut sample,
            &sc.requests,
            d.c.sample,
            sc.conversation.is_some(),
            policy,
        );
        if policy == TokenPolicy::Tokenizer {
            // The tokenizer's count stands in for the endpoint's.
            sample.completion_tokens = None;
        }
        if sample.t_send != 0 && (self.first_send == 0 || sample.t_send < self.first_send) {
            self.first_send = sample.t_send;
        }
        let mut f = Finished {
            sample,
            seq: d.c.seq,
            conv_id: d.c.conv_id,
            scenario: scenario as u16,
            endpoint: d.c.endpoint,
            stage: self.stage_of(d.c.t_sched),
            turn: d.c.turn,
            row: sc.rows.then_some(d.c.sample),
            gaps: d.gaps,
            text: Cow::Borrowed(d.text),
            // Masked here, where a server's message becomes text, so the
            // summary, the events and every report get it masked.
            message: (!d.msg.is_empty())
                .then(|| redact(&errors::readable(d.msg, MAX_MESSAGE), &self.plan.secrets)),
        };
        if let Some(lane) = self.lane.as_mut()
            && policy != TokenPolicy::Usage
            && f.sample.error.is_none()
            && f.sample.completion_tokens.is_none()
            && !f.text.is_empty()
        {
            // A cut text would be undercounted; a full lane would hold up
            // the run: either way the events count it, and the summary says so.
            if !f.sample.output_truncated && lane.admits(&f) {
                lane.submit(f.into_owned());
                return;
            }
            f.sample.untokenized = true;
        }
        self.finalize(f);
    }

    /// Applies the scenario's checks, then records the request in its block,
    /// the timeline and the observer.
    pub(super) fn finalize(&mut self, mut f: Finished<'_>) {
        let si = f.scenario as usize;
        let checks = &self.plan.scenarios[si].checks;
        if f.sample.error.is_none() && !checks.is_empty() {
            let (out, _) = f.sample.output_tokens();
            let body = if checks.needs_text() {
                unescape(&f.text)
            } else {
                String::new()
            };
            if let Some(why) = checks.failure(f.sample.status, out, &body) {
                f.sample.error = Some(ErrorClass::CheckFailed);
                f.message = Some(why);
            }
        }
        let slo = self.plan.slo;
        let b = match f.stage {
            None => &mut self.warmup,
            Some(stage) => &mut self.blocks[stage as usize][si],
        };
        if let (Some(class), Some(m)) = (f.sample.error, &f.message) {
            b.record_message(&class.key(f.sample.status), m);
        }
        b.record(&f.sample, f.gaps.iter());
        // Judged once: the block's goodput and the timeline's good count
        // read the same verdict.
        let good = !slo.is_empty() && {
            let judged = goodput::judge(&slo, &f.sample);
            b.record_judged(&judged, f.sample.output_tokens().0);
            judged.good
        };
        self.timeline.record(&f.sample, f.stage, si, good);
        if self.fail_fast.watching() {
            self.fail_fast.see(&f);
        }
        let several = self.by_endpoint.len() > 1;
        if f.stage.is_some()
            && let Some(e) = self.by_endpoint.get_mut(f.endpoint as usize)
        {
            e.record(&f.sample, several);
        }
        if let Some(obs) = self.observer.as_deref_mut() {
            obs.request(&f);
        }
    }

    /// The stage a request due at `t_sched` is measured in (`None`:
    /// warm-up), as a worker folding its gaps tells it.
    fn stage_of(&self, t_sched: u64) -> Option<u16> {
        stages::stage_of(
            t_sched,
            self.measure_start,
            self.stage_starts.iter().copied(),
        )
    }
}

/// Input tokens: known before sending (ids, tokenizer), else the usage;
/// with `TokenPolicy::Usage`, the usage only.
fn resolve_input(
    s: &mut RequestSample,
    requests: &RequestSet,
    sample: u32,
    conversation: bool,
    policy: TokenPolicy,
) {
    let known = if conversation || policy == TokenPolicy::Usage {
        None
    } else {
        requests.input_tokens(sample)
    };
    match known {
        Some((n, source)) => {
            s.input_tokens = Some(n);
            s.input_source = match source {
                InputSource::Ids => InputCount::Ids,
                InputSource::ChatTemplate => InputCount::ChatTemplate,
                _ => InputCount::Tokenizer,
            };
        }
        None => {
            s.input_tokens = s.prompt_tokens;
            s.input_source = if s.prompt_tokens.is_some() {
                InputCount::Usage
            } else {
                InputCount::Unknown
            };
        }
    }
}
