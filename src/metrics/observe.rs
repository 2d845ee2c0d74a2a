//! What the collector tells observers besides the blocks: every finished
//! request (for the events log) and a rolling window every live interval
//! (for the progress line). Observers live in `report`; the engine only
//! calls this trait, so it never formats or writes files itself. An
//! observer must return quickly: it is called from the parent's loop.

use super::block::RequestSample;
use super::series::Series;

/// A finished request, with what identifies it.
#[derive(Clone, Copy, Debug)]
pub struct RequestEvent<'a> {
    pub sample: &'a RequestSample,
    /// Conversation number in the run (the request's own for single turns).
    pub seq: u64,
    pub conv_id: [u8; 16],
    pub scenario: u16,
    /// Stage index; `None` during warmup.
    pub stage: Option<u16>,
    /// Turn within the conversation, from 1.
    pub turn: u16,
    /// Output text, raw JSON-escaped, when the run records outputs.
    pub text: &'a [u8],
    /// Why it failed, as the endpoint or a check said.
    pub message: Option<&'a str>,
}

/// The last live interval.
#[derive(Clone, Copy, Debug)]
pub struct Interval<'a> {
    /// Since the run started.
    pub elapsed_ns: u64,
    pub interval_ns: u64,
    pub stage: &'a str,
    pub completed: u64,
    pub failed: u64,
    pub inflight: u64,
    /// e2e latency and TTFT of the requests that ended in the interval.
    pub e2e: &'a Series,
    pub ttft: &'a Series,
}

/// Receives events from the collector.
pub trait Observer {
    fn request(&mut self, event: &RequestEvent<'_>);
    fn interval(&mut self, interval: &Interval<'_>);
}
