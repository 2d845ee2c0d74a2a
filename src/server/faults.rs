//! Deterministic fault injection. A rate `F` marks request `i` (0-based) as
//! faulty when `floor((i+1)·F) > floor(i·F)`, so after `n` requests exactly
//! `floor(n·F)` have failed and a test can count them instead of estimating.
//! The kinds are tried in a fixed order — error, then malformed, then reset —
//! and each kind counts only the requests that reach it: the error counter
//! sees every chat completion request that has a body (valid JSON or not; a
//! fault replaces the 400 a bad one would get), the malformed counter those
//! not answered 503,
//! the reset counter those neither. Overlapping kinds therefore never hide
//! each other (with one shared index, two equal rates would always pick the
//! same requests and the second kind would never fire). Counters are per
//! worker: with several workers each one follows the pattern on its own share.

/// What to do to one chat completion request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// 503 with a JSON error body, connection kept alive.
    Error,
    /// Bytes that are not HTTP, then close.
    Malformed,
    /// Close with RST: mid-stream for streams, instead of the body otherwise.
    Reset,
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
pub struct FaultPlan {
    error: Rate,
    malformed: Rate,
    reset: Rate,
}

impl FaultPlan {
    pub fn new(error_rate: f64, malformed_rate: f64, reset_rate: f64) -> Self {
        FaultPlan {
            error: Rate::new(error_rate),
            malformed: Rate::new(malformed_rate),
            reset: Rate::new(reset_rate),
        }
    }

    /// Decides the fate of the next chat completion request.
    pub fn next(&mut self) -> Fault {
        if self.error.hit() {
            Fault::Error
        } else if self.malformed.hit() {
            Fault::Malformed
        } else if self.reset.hit() {
            Fault::Reset
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

    #[test]
    fn quarter_rate_hits_every_fourth_request() {
        let mut plan = FaultPlan::new(0.25, 0.0, 0.0);
        let got = pattern(&mut plan, 40);
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
            let mut plan = FaultPlan::new(0.0, rate, 0.0);
            let hits = pattern(&mut plan, n)
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
        let mut plan = FaultPlan::new(0.0, 0.0, 0.0);
        assert!(pattern(&mut plan, 1000).iter().all(|f| *f == Fault::None));
    }

    #[test]
    fn later_kinds_count_only_requests_that_reach_them() {
        // Errors take every other request; malformed takes every other one of
        // the rest, so one in four overall; reset every request left.
        let mut plan = FaultPlan::new(0.5, 0.5, 1.0);
        let got = pattern(&mut plan, 8);
        use Fault::*;
        assert_eq!(
            got,
            [
                Reset, Error, Malformed, Error, Reset, Error, Malformed, Error
            ]
        );
    }
}
