//! Each endpoint's share of a run spread over several (`--endpoints`): its
//! requests, failures by class, and TTFT and end-to-end latency, with the
//! same definitions as a `Block`'s. Kept apart from the stage × scenario
//! blocks, since a request's endpoint is only known once a worker has given
//! it a connection; the trade-off is two more HDR series per endpoint, not
//! a whole `Block`.

use serde::{Deserialize, Serialize};

use super::block::{Block, RequestSample};
use super::errors::ErrorCounts;
use super::series::Series;

/// One endpoint's measured requests (warmup excluded).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct EndpointStats {
    /// As echoed: query values masked.
    pub url: String,
    pub completed: u64,
    pub failed: u64,
    pub errors: ErrorCounts,
    /// t_first_token − t_send of successful requests with a first token.
    pub ttft: Series,
    /// t_end − t_sched of successful requests.
    pub e2e: Series,
}

impl EndpointStats {
    pub(crate) fn new(url: &str) -> EndpointStats {
        EndpointStats {
            url: url.to_string(),
            ..EndpointStats::default()
        }
    }

    /// Requests that reached the endpoint (or tried to): completed and
    /// failed.
    pub(crate) fn issued(&self) -> u64 {
        self.completed + self.failed
    }

    /// Records one finished request as `Block::record` counts it; its
    /// latencies only with `latency` (a run of one endpoint takes them
    /// from its total instead, `take_latency`).
    pub(crate) fn record(&mut self, s: &RequestSample, latency: bool) {
        if let Some(class) = s.error {
            self.failed += 1;
            self.errors.record(class, s.status);
            return;
        }
        self.completed += 1;
        if !latency {
            return;
        }
        self.e2e.record(s.t_end.saturating_sub(s.t_sched));
        if s.t_first_token != 0 {
            self.ttft.record(s.t_first_token.saturating_sub(s.t_send));
        }
    }

    /// Adds another run's share of the same endpoint (a shard's).
    pub(crate) fn merge(&mut self, o: &EndpointStats) {
        self.completed += o.completed;
        self.failed += o.failed;
        self.errors.merge(&o.errors);
        self.ttft.merge(&o.ttft);
        self.e2e.merge(&o.e2e);
    }

    /// The latencies of the only endpoint of a run: every success reached
    /// it, so they are the measured total's, which the parent has already
    /// recorded once per request.
    pub(crate) fn take_latency(&mut self, total: &Block) {
        self.ttft = total.ttft.clone();
        self.e2e = total.e2e.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::errors::ErrorClass;

    /// The same requests give the same counts and latencies as a block.
    #[test]
    fn counts_as_a_block_does() {
        let mut e = EndpointStats::new("http://h:1/v1");
        let mut b = Block::default();
        let ok = |t_end| RequestSample {
            t_sched: 100,
            t_send: 150,
            t_first_token: 400,
            t_end,
            status: 200,
            ..RequestSample::default()
        };
        let failed = RequestSample {
            error: Some(ErrorClass::ConnectRefused),
            ..RequestSample::default()
        };
        let mut only = EndpointStats::new("http://h:1/v1");
        for s in [ok(1_000), ok(2_000), failed] {
            e.record(&s, true);
            only.record(&s, false);
            b.record(&s, []);
        }
        assert_eq!((e.completed, e.failed, e.issued()), (2, 1, 3));
        assert_eq!(e.errors.named(), b.errors.named());
        assert_eq!(e.e2e.rollup(1.0), b.e2e.rollup(1.0));
        assert_eq!(e.ttft.rollup(1.0), b.ttft.rollup(1.0));
        assert_eq!(e.ttft.count(), 2);
        // The only endpoint of a run counts alone and takes the total's
        // latencies: the same numbers.
        only.take_latency(&b);
        assert_eq!((only.completed, only.failed), (e.completed, e.failed));
        assert_eq!(only.e2e.rollup(1.0), e.e2e.rollup(1.0));
        assert_eq!(only.ttft.rollup(1.0), e.ttft.rollup(1.0));
    }
}
