//! A finished request as the parent records it and observers hear of it,
//! and the rolling window observers get every live interval. Observers live
//! in `report`; the engine only calls this trait, so it never formats or
//! writes files itself. An observer must return quickly: it is called from
//! the parent's loop.

use std::borrow::Cow;

use super::block::RequestSample;

/// One finished request (a turn, for multi-turn conversations): what it
/// measured and what identifies it. Borrowed from the completion record it
/// was read from; owned while the tokenizer lane counts its output.
#[derive(Clone, Debug)]
pub(crate) struct Finished<'a> {
    pub sample: RequestSample,
    /// Conversation number in the run (the request's own for single turns).
    pub seq: u64,
    pub conv_id: [u8; 16],
    pub scenario: u16,
    /// Index of the endpoint it went to (`Plan::endpoints`), or
    /// `record::NO_ENDPOINT` when it reached none.
    pub endpoint: u16,
    /// Stage index; `None` during warmup.
    pub stage: Option<u16>,
    /// Turn within the conversation, from 1.
    pub turn: u16,
    /// The dataset row its prompt came from; `None` for prompts that are
    /// not a dataset's rows (synthetic, pools, later turns).
    pub row: Option<u32>,
    pub gaps: Gaps<'a>,
    /// Output text, raw JSON-escaped, when the run or a check needs it.
    pub text: Cow<'a, [u8]>,
    /// Why it failed, as the endpoint or a check said.
    pub message: Option<String>,
}

impl Finished<'_> {
    /// The same request, no longer borrowing the record it came from.
    pub(crate) fn into_owned(self) -> Finished<'static> {
        Finished {
            gaps: Gaps::Owned(self.gaps.iter().collect()),
            text: Cow::Owned(self.text.into_owned()),
            ..self
        }
    }
}

/// Inter-token gaps in nanoseconds: read in place from a completion record
/// (native-endian `u64`s), or owned.
#[derive(Clone, Debug)]
pub(crate) enum Gaps<'a> {
    InPlace(&'a [u8]),
    Owned(Vec<u64>),
}

impl Gaps<'_> {
    /// Bytes the gaps take.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Gaps::InPlace(b) => b.len(),
            Gaps::Owned(v) => v.len() * 8,
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (bytes, owned): (&[u8], &[u64]) = match self {
            Gaps::InPlace(b) => (b, &[]),
            Gaps::Owned(v) => (&[], v),
        };
        bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("chunks of 8")))
            .chain(owned.iter().copied())
    }
}

/// The last live interval, with what the parent knows of the whole run at
/// its end. Everything here is read from the timeline's cells, which the
/// parent keeps anyway, once per interval: drawing it costs the per-request
/// path nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Interval<'a> {
    /// Since the run started.
    pub elapsed_ns: u64,
    pub interval_ns: u64,
    pub stage: &'a str,
    /// The stage's index in the plan (`None` during warmup) and how many
    /// stages the plan has.
    pub stage_index: Option<usize>,
    pub stages: usize,
    /// Measured requests that ended in the interval.
    pub completed: u64,
    pub failed: u64,
    /// Output tokens of the requests that succeeded in the interval.
    pub output_tokens: u64,
    /// The interval's failures by report key (`reset`, `http_503`), in
    /// taxonomy order.
    pub failures: &'a [(String, u64)],
    /// Measured requests ended since the run began.
    pub total_completed: u64,
    pub total_failed: u64,
    pub inflight: u64,
    /// e2e latency and TTFT of the successes that ended in the seconds the
    /// interval overlaps (the timeline's per-second cells, 2 significant
    /// digits).
    pub e2e: Latency,
    pub ttft: Latency,
    pub progress: Progress,
    pub generator: GeneratorDelta,
}

/// Two percentiles of a latency, ns; `None` when nothing was recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Latency {
    pub p50: Option<u64>,
    pub p99: Option<u64>,
}

impl Latency {
    pub(crate) fn of((p50, p99): (Option<u64>, Option<u64>)) -> Latency {
        Latency { p50, p99 }
    }
}

/// How far through its plan the run is.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Progress {
    /// Share of the plan done, 0 to 1: by time when every stage is timed,
    /// by requests issued when every stage is counted, and stage by stage
    /// (each an equal share) when they are mixed.
    pub done: f64,
    /// Warmup plus every stage's duration, when every stage is timed and
    /// the warmup is too.
    pub planned_ns: Option<u64>,
    /// Measured requests issued and planned over every stage, when every
    /// stage is counted.
    pub requests: Option<(u64, u64)>,
}

/// The generator's own health over the interval.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GeneratorDelta {
    /// Conversations that found every issue ring full.
    pub ring_full: u64,
    /// Open-loop arrivals held back by the in-flight bound.
    pub held_back: u64,
    /// Requests that waited in a worker for a free connection.
    pub waited_for_connection: u64,
    /// p99 of the send lateness (sent − scheduled) of the measured requests
    /// that ended in the seconds the interval overlaps.
    pub lateness_p99_ns: Option<u64>,
}

/// Receives events from the collector.
pub(crate) trait Observer {
    fn request(&mut self, finished: &Finished<'_>);
    fn interval(&mut self, interval: &Interval<'_>);
    /// The collector is about to sleep (at `now`): a good moment to pass on
    /// what was gathered.
    fn idle(&mut self, _now: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_read_the_same_in_place_and_owned() {
        let values = [3u64, u64::MAX, 0, 1 << 40];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let in_place = Gaps::InPlace(&bytes);
        assert_eq!(in_place.iter().collect::<Vec<_>>(), values);
        let f = Finished {
            sample: RequestSample::default(),
            seq: 1,
            conv_id: [0; 16],
            scenario: 0,
            endpoint: 0,
            stage: None,
            turn: 1,
            row: None,
            gaps: in_place,
            text: Cow::Borrowed(b"hi"),
            message: None,
        };
        let owned = f.into_owned();
        assert!(matches!(owned.gaps, Gaps::Owned(_)));
        assert_eq!(owned.gaps.iter().collect::<Vec<_>>(), values);
        assert_eq!(&owned.text[..], b"hi");
        assert_eq!(Gaps::Owned(Vec::new()).iter().count(), 0);
    }
}
