//! Deterministic fault injection. A rate `F` marks request `i` (0-based) as
//! faulty when `floor((i+1)·F) > floor(i·F)`, so after `n` requests exactly
//! `floor(n·F)` have failed and a test can count them instead of estimating.
//! The kinds are tried in a fixed order — error, malformed, reset, in-band
//! error — and each kind counts only the requests that reach it: the error
//! counter sees every generation request, in any format, that has a body and
//! passed the API key check (valid JSON or not, a served model or not: a
//! fault replaces the 400 or 404 such a request would get), the malformed
//! counter those not answered 503, and so on down the list. Overlapping kinds
//! therefore never hide each other (with one shared index, two equal rates
//! would always pick the same requests and the second kind would never
//! fire). Counters are per worker: with several workers each one follows the
//! pattern on its own share.

/// What to do to one generation request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    None,
    /// 503 with a JSON error body, connection kept alive.
    Error,
    /// Bytes that are not HTTP, then close.
    Malformed,
    /// Close with RST: mid-stream for streams, instead of the body otherwise.
    Reset,
    /// Status 200, then the format's error object: mid-stream for streams,
    /// as the body otherwise.
    Inband,
}

/// One kind's rate and how many requests it has judged.
#[derive(Clone, Copy, Debug)]
struct Rate {
    rate: f64,
    seen: u64,
}

impl Rate {
    fn new(rate: f64) -> Self {
        Rate { rate, seen: 0 }
    }

    fn hit(&mut self) -> bool {
        let i = self.seen;
        self.seen += 1;
        self.rate > 0.0 && ((i + 1) as f64 * self.rate).floor() > (i as f64 * self.rate).floor()
    }
}

/// The per-worker fault schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FaultPlan {
    error: Rate,
    malformed: Rate,
    reset: Rate,
    inband: Rate,
}

/// The rate of each fault kind.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FaultRates {
    pub error: f64,
    pub malformed: f64,
    pub reset: f64,
    pub inband: f64,
}

impl FaultPlan {
    pub(crate) fn new(rates: FaultRates) -> Self {
        FaultPlan {
            error: Rate::new(rates.error),
            malformed: Rate::new(rates.malformed),
            reset: Rate::new(rates.reset),
            inband: Rate::new(rates.inband),
        }
    }

    /// Decides the fate of the next generation request.
    pub(crate) fn next(&mut self) -> Fault {
        if self.error.hit() {
            Fault::Error
        } else if self.malformed.hit() {
            Fault::Malformed
        } else if self.reset.hit() {
            Fault::Reset
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
        FaultPlan::new(FaultRates {
            error,
            malformed,
            reset,
            inband,
        })
    }

    #[test]
    fn quarter_rate_hits_every_fourth_request() {
        let mut p = plan(0.25, 0.0, 0.0, 0.0);
        let got = pattern(&mut p, 40);
        let hits: Vec<usize> = (0..40).filter(|&i| got[i] == Fault::Error).collect();
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
            [
                Reset, Error, Malformed, Error, Reset, Error, Malformed, Error
            ]
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
}
