//! Deterministic fault injection. A rate `F` marks request `i` (0-based) as
//! faulty when `floor((i+1)·F) > floor(i·F)`, so after `n` requests exactly
//! `floor(n·F)` have failed and a test can count them instead of estimating.
//! The kinds are tried in a fixed order — error, malformed, reset, stall,
//! endless, in-band error — and each kind counts only the requests that
//! reach it: the error
//! counter sees every generation request, in any format, that has a body and
//! passed the API key check (valid JSON or not, a served model or not: a
//! fault replaces the 400 or 404 such a request would get), the malformed
//! counter those not answered 503, and so on down the list. Overlapping kinds
//! therefore never hide each other (with one shared index, two equal rates
//! would always pick the same requests and the second kind would never
//! fire). Counters are per worker: with several workers each one follows the
//! pattern on its own share. Errors may come in bursts (`--error-burst`):
//! the rule then judges blocks of consecutive requests, and each burst takes
//! the next status of `--error-status` in turn.

use super::head::Status;

/// What to do to one generation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    /// An error status (503 unless `--error-status` says otherwise) with a
    /// JSON error body, connection kept alive.
    Error(Status),
    /// Bytes that are not a valid response, of the configured kind.
    Malformed,
    /// Close with RST: mid-stream for streams, instead of the body otherwise.
    Reset,
    /// Stop sending mid-stream (before the body otherwise) and hold the
    /// connection open until the client gives up.
    Stall,
    /// A response that never ends: valid token events for ever.
    Endless,
    /// Status 200, then the format's error object: mid-stream for streams,
    /// as the body otherwise.
    Inband,
}

/// What a malformed response looks like (`--malformed-kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MalformedKind {
    /// An HTTP-looking status line that is not one, then close.
    #[default]
    StatusLine,
    /// 4 KiB of binary bytes instead of HTTP, then close.
    Garbage,
    /// A stream whose second chunk size has 17 hex digits, then close.
    ChunkSize,
    /// A 200 head of 70 KiB, then close.
    HugeHead,
    /// A stream whose first event is one line that never ends.
    EndlessLine,
    /// A 200 JSON head with `Content-Length: 10737418240` and a body that
    /// goes on for as long as the client reads.
    HugeLength,
    /// A 200 `text/html` page (what a proxy or a captive portal answers),
    /// connection kept alive.
    Html,
}

impl MalformedKind {
    pub const ALL: [MalformedKind; 7] = [
        MalformedKind::StatusLine,
        MalformedKind::Garbage,
        MalformedKind::ChunkSize,
        MalformedKind::HugeHead,
        MalformedKind::EndlessLine,
        MalformedKind::HugeLength,
        MalformedKind::Html,
    ];

    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            MalformedKind::StatusLine => "status-line",
            MalformedKind::Garbage => "garbage",
            MalformedKind::ChunkSize => "chunk-size",
            MalformedKind::HugeHead => "huge-head",
            MalformedKind::EndlessLine => "endless-line",
            MalformedKind::HugeLength => "huge-length",
            MalformedKind::Html => "html",
        }
    }

    pub fn parse(s: &str) -> Result<MalformedKind, String> {
        MalformedKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = MalformedKind::ALL.iter().map(|k| k.name()).collect();
                format!("'{s}' is not one of {}", names.join(", "))
            })
    }
}

/// Status codes `--error-status` may ask for.
pub const ERROR_STATUSES: [u16; 5] = [429, 500, 502, 503, 504];

/// Most statuses `--error-status` may cycle through.
pub(crate) const MAX_ERROR_STATUSES: usize = 8;

/// The `Status` of an allowed error code.
pub(crate) fn error_status(code: u16) -> Option<Status> {
    match code {
        429 => Some(Status::TooManyRequests),
        500 => Some(Status::InternalError),
        502 => Some(Status::BadGateway),
        503 => Some(Status::Unavailable),
        504 => Some(Status::GatewayTimeout),
        _ => None,
    }
}

/// One kind's rate, how many requests it has judged, and its bursts: with
/// a burst of `b`, requests are judged in blocks of `b` consecutive ones,
/// each block as a whole by the same rule, so faults come `b` at a time
/// and the count stays exact at every block's end.
#[derive(Clone, Copy, Debug)]
struct Rate {
    rate: f64,
    seen: u64,
    burst: u64,
    /// Whether the current block is faulty.
    block_hit: bool,
    /// Faulty blocks so far.
    bursts: u64,
}

impl Rate {
    fn new(rate: f64) -> Self {
        Rate::bursty(rate, 1)
    }

    fn bursty(rate: f64, burst: u32) -> Self {
        Rate {
            rate,
            seen: 0,
            burst: u64::from(burst.max(1)),
            block_hit: false,
            bursts: 0,
        }
    }

    fn hit(&mut self) -> bool {
        let i = self.seen;
        self.seen += 1;
        if i.is_multiple_of(self.burst) {
            let b = i / self.burst;
            self.block_hit = self.rate > 0.0
                && ((b + 1) as f64 * self.rate).floor() > (b as f64 * self.rate).floor();
            self.bursts += u64::from(self.block_hit);
        }
        self.block_hit
    }
}

/// The per-worker fault schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FaultPlan {
    error: Rate,
    malformed: Rate,
    reset: Rate,
    stall: Rate,
    endless: Rate,
    inband: Rate,
    /// The error statuses, one burst after another.
    statuses: [Status; MAX_ERROR_STATUSES],
    n_statuses: usize,
}

/// The rate of each fault kind, and the shape of the error bursts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FaultRates {
    pub error: f64,
    pub malformed: f64,
    pub reset: f64,
    pub stall: f64,
    pub endless: f64,
    pub inband: f64,
    /// Consecutive requests each error burst takes (1: spread evenly).
    pub error_burst: u32,
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates {
            error: 0.0,
            malformed: 0.0,
            reset: 0.0,
            stall: 0.0,
            endless: 0.0,
            inband: 0.0,
            error_burst: 1,
        }
    }
}

impl FaultPlan {
    /// `statuses` are the error codes bursts cycle through (503 when empty;
    /// codes outside `ERROR_STATUSES` are skipped, as validation refused
    /// them already).
    pub(crate) fn new(rates: FaultRates, statuses: &[u16]) -> Self {
        let mut list = [Status::Unavailable; MAX_ERROR_STATUSES];
        let mut n = 0;
        for s in statuses.iter().filter_map(|&c| error_status(c)) {
            if n < MAX_ERROR_STATUSES {
                list[n] = s;
                n += 1;
            }
        }
        FaultPlan {
            error: Rate::bursty(rates.error, rates.error_burst),
            malformed: Rate::new(rates.malformed),
            reset: Rate::new(rates.reset),
            stall: Rate::new(rates.stall),
            endless: Rate::new(rates.endless),
            inband: Rate::new(rates.inband),
            statuses: list,
            n_statuses: n.max(1),
        }
    }

    /// Decides the fate of the next generation request.
    pub(crate) fn next(&mut self) -> Fault {
        if self.error.hit() {
            let k = (self.error.bursts - 1) as usize % self.n_statuses;
            Fault::Error(self.statuses[k])
        } else if self.malformed.hit() {
            Fault::Malformed
        } else if self.reset.hit() {
            Fault::Reset
        } else if self.stall.hit() {
            Fault::Stall
        } else if self.endless.hit() {
            Fault::Endless
        } else if self.inband.hit() {
            Fault::Inband
        } else {
            Fault::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(plan: &mut FaultPlan, n: usize) -> Vec<Fault> {
        (0..n).map(|_| plan.next()).collect()
    }

    fn plan(error: f64, malformed: f64, reset: f64, inband: f64) -> FaultPlan {
        FaultPlan::new(
            FaultRates {
                error,
                malformed,
                reset,
                inband,
                ..FaultRates::default()
            },
            &[],
        )
    }

    const E503: Fault = Fault::Error(Status::Unavailable);

    #[test]
    fn quarter_rate_hits_every_fourth_request() {
        let mut p = plan(0.25, 0.0, 0.0, 0.0);
        let got = pattern(&mut p, 40);
        let hits: Vec<usize> = (0..40).filter(|&i| got[i] == E503).collect();
        assert_eq!(hits, (0..10).map(|k| 4 * k + 3).collect::<Vec<_>>());
    }

    #[test]
    fn counts_are_exact_for_awkward_rates() {
        for (rate, n) in [
            (0.1, 1000),
            (0.3, 70),
            (1.0 / 3.0, 99),
            (0.01, 250),
            (1.0, 17),
        ] {
            let mut p = plan(0.0, rate, 0.0, 0.0);
            let hits = pattern(&mut p, n)
                .iter()
                .filter(|f| **f == Fault::Malformed)
                .count();
            assert_eq!(
                hits as f64,
                (n as f64 * rate).floor(),
                "rate {rate} over {n}"
            );
        }
    }

    #[test]
    fn zero_rate_never_fires() {
        let mut p = plan(0.0, 0.0, 0.0, 0.0);
        assert!(pattern(&mut p, 1000).iter().all(|f| *f == Fault::None));
    }

    #[test]
    fn later_kinds_count_only_requests_that_reach_them() {
        // Errors take every other request; malformed takes every other one of
        // the rest, so one in four overall; reset every request left.
        let mut p = plan(0.5, 0.5, 1.0, 0.0);
        let got = pattern(&mut p, 8);
        use Fault::*;
        assert_eq!(
            got,
            [Reset, E503, Malformed, E503, Reset, E503, Malformed, E503]
        );
        // In-band errors see what the reset left: every other request of it.
        let mut p = plan(0.0, 0.0, 0.5, 1.0);
        assert_eq!(pattern(&mut p, 4), [Inband, Reset, Inband, Reset]);
    }

    #[test]
    fn inband_quarter_rate() {
        let mut p = plan(0.0, 0.0, 0.0, 0.25);
        let got = pattern(&mut p, 40);
        assert_eq!(got.iter().filter(|f| **f == Fault::Inband).count(), 10);
        assert_eq!(got[3], Fault::Inband);
    }

    #[test]
    fn stall_and_endless_come_after_reset() {
        let mut p = FaultPlan::new(
            FaultRates {
                reset: 0.5,
                stall: 0.5,
                endless: 1.0,
                ..FaultRates::default()
            },
            &[],
        );
        use Fault::*;
        assert_eq!(
            pattern(&mut p, 8),
            [Endless, Reset, Stall, Reset, Endless, Reset, Stall, Reset]
        );
    }

    #[test]
    fn bursts_take_whole_blocks_and_cycle_statuses() {
        let mut p = FaultPlan::new(
            FaultRates {
                error: 0.5,
                error_burst: 5,
                ..FaultRates::default()
            },
            &[500, 429],
        );
        let got = pattern(&mut p, 40);
        let status = |i: usize| match got[i] {
            Fault::Error(s) => s.code(),
            _ => 0,
        };
        let codes: Vec<u16> = (0..40).map(status).collect();
        let mut want = vec![0u16; 40];
        for (burst, code) in [(1, 500), (3, 429), (5, 500), (7, 429)] {
            want[burst * 5..burst * 5 + 5].fill(code);
        }
        assert_eq!(codes, want);
        // Exact at every block's end, whatever the rate.
        let mut p = FaultPlan::new(
            FaultRates {
                error: 0.3,
                error_burst: 4,
                ..FaultRates::default()
            },
            &[],
        );
        let hits = pattern(&mut p, 400).iter().filter(|f| **f == E503).count();
        assert_eq!(hits, 4 * 30);
    }

    #[test]
    fn malformed_kinds_round_trip_their_names() {
        for k in MalformedKind::ALL {
            assert_eq!(MalformedKind::parse(k.name()), Ok(k));
        }
        let err = MalformedKind::parse("nope").unwrap_err();
        assert!(err.contains("status-line") && err.contains("html"), "{err}");
    }
}
