//! When open-loop requests are due: uniform (evenly paced) or Poisson
//! (exponential gaps), at a constant rate or along a linear ramp from
//! `rate_from` to `rate_to` over a stage. Every shape is one rule: arrival k
//! is at `Λ⁻¹(x_k)`, where `Λ(t)` is the cumulative expected arrivals by time
//! t and `x_k` is `k` (uniform) or the k-th point of a unit-rate Poisson
//! process (Poisson, which makes a ramp a non-homogeneous Poisson process).
//!
//! Offsets are computed from `x_k` directly rather than by adding rounded
//! gaps, so rounding to whole nanoseconds never accumulates: arrival k of a
//! uniform 3/s stream is at `round(k · 333_333_333.3…)` ns however large k is.
//!
//! MLPerf Inference Endpoint's Poisson schedule is one more shape
//! (`Arrivals::python_poisson`): its gaps, drawn from CPython's
//! `random.Random` and truncated to whole nanoseconds, are summed as it sums
//! them, so the same seed gives its arrival times to the nanosecond.
//!
//! Rates that cannot describe a stream — zero, negative, NaN or infinite —
//! give an empty sequence (`None` at once) rather than a panic or an endless
//! burst; the profile's validation is where such a rate is reported to the
//! user.

use std::time::Duration;

use crate::plan::ArrivalKind;
use crate::pyrandom::PyRandom;
use crate::rng::Rng;

const NS_PER_S: f64 = 1e9;

/// The cumulative arrival function `Λ` and its inverse, or MLPerf's own
/// gaps with the generator they are drawn from.
#[derive(Clone, Debug)]
enum Shape {
    /// No arrivals at all.
    Empty,
    /// `Λ(t) = r·t`, kept as nanoseconds per unit of `Λ` so that uniform
    /// offsets are one multiplication.
    Constant { ns_per_arrival: f64 },
    /// `Λ(t) = a·t + (b − a)·t²/(2D)` for `t` in seconds, up to `D`.
    Ramp {
        a: f64,
        b: f64,
        d_s: f64,
        d_ns: u64,
        /// `Λ(D) = (a + b)·D/2`: `x_k` at or past it ends the sequence.
        total: f64,
    },
    /// MLPerf's gaps: `max(1, int(expovariate(lambd)))` ns with `lambd` the
    /// rate per nanosecond, from `Arrivals::python_poisson` (the generator
    /// boxed: 2.5 KiB).
    Python { lambd: f64, py: Box<PyRandom> },
}

impl Shape {
    /// `Λ⁻¹(x)` in seconds for a ramp, `x` in `[0, total)`.
    ///
    /// Solves `c·t² + a·t − x = 0` with `c = (b − a)/(2D)` in the form
    /// `t = 2x / (a + √(a² + 4cx))`, which has no cancellation for `a ≥ 0`
    /// (the textbook `(−a + √…)/(2c)` loses every digit when `c` is tiny),
    /// stays finite when `c = 0` (it becomes `x/a`) and covers ramps down
    /// (`c < 0`): `x < Λ(D) ≤ max Λ` keeps the discriminant non-negative, up
    /// to rounding, which the clamp absorbs.
    fn ramp_inverse(a: f64, b: f64, d_s: f64, x: f64) -> f64 {
        if x <= 0.0 {
            // Also the only case where the denominator can be 0 (a = 0).
            return 0.0;
        }
        if a == b {
            return x / a;
        }
        let c = (b - a) / (2.0 * d_s);
        let disc = (a * a + 4.0 * c * x).max(0.0);
        2.0 * x / (a + disc.sqrt())
    }
}

/// A sequence of arrival offsets from the start of a stage.
#[derive(Clone, Debug)]
pub(crate) struct Arrivals {
    kind: ArrivalKind,
    shape: Shape,
    rng: Rng,
    /// Index of the next uniform arrival.
    k: u64,
    /// Where uniform arrivals fall between the points of the rate's own
    /// grid, in `[0, 1)`: a shard's place among the others.
    phase: f64,
    /// Position of the next Poisson arrival on the unit-rate time axis.
    x: f64,
    /// The last offset returned, to keep the sequence non-decreasing even if
    /// rounding ever disagreed.
    last_ns: u64,
    done: bool,
}

/// Usable as a rate: finite and strictly positive.
fn positive(rate: f64) -> bool {
    rate.is_finite() && rate > 0.0
}

/// Usable as a ramp end point: finite and not negative.
fn non_negative(rate: f64) -> bool {
    rate.is_finite() && rate >= 0.0
}

impl Arrivals {
    /// `rate` arrivals per second for as long as the caller asks. Uniform
    /// arrivals start at offset 0; Poisson ones after an exponential gap.
    /// A `rate` that is not finite and positive gives no arrivals.
    pub(crate) fn constant(kind: ArrivalKind, rate: f64, seed: u64) -> Self {
        let shape = if positive(rate) {
            Shape::Constant {
                ns_per_arrival: NS_PER_S / rate,
            }
        } else {
            Shape::Empty
        };
        Self::with_shape(kind, shape, seed)
    }

    /// Rate sweeping linearly from `rate_from` to `rate_to` over `duration`;
    /// the sequence ends at `duration`.
    ///
    /// Arrivals fall in `[0, duration)`: one due exactly at `duration`
    /// belongs to whatever follows. Either end may be 0 (a ramp up from
    /// idle or down to it) and `rate_to < rate_from` ramps down. A uniform
    /// ramp gives exactly `ceil((rate_from + rate_to)/2 · duration)`
    /// arrivals, the first at 0 (even when `rate_from` is 0). An end that
    /// is negative or not finite, both ends 0, or a zero duration give no
    /// arrivals.
    pub(crate) fn ramp(
        kind: ArrivalKind,
        rate_from: f64,
        rate_to: f64,
        duration: Duration,
        seed: u64,
    ) -> Self {
        let d_s = duration.as_secs_f64();
        let total = (rate_from + rate_to) / 2.0 * d_s;
        let usable =
            non_negative(rate_from) && non_negative(rate_to) && total.is_finite() && total > 0.0;
        let shape = if usable {
            Shape::Ramp {
                a: rate_from,
                b: rate_to,
                d_s,
                // Durations up to 584 years fit; longer ones saturate, which
                // is still "never ends" for any run.
                d_ns: u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
                total,
            }
        } else {
            Shape::Empty
        };
        Self::with_shape(kind, shape, seed)
    }

    /// MLPerf Inference Endpoint's Poisson arrivals at `rate` per second
    /// for `scheduler_random_seed` `seed` (`load_generator/delay.py` and
    /// `TimedIssueStrategy`): arrival k is at the sum of the first k gaps of
    /// `max(1, int(random.Random(seed).expovariate(rate / 1e9)))` ns.
    /// A `rate` that is not finite and positive gives no arrivals.
    pub(crate) fn python_poisson(rate: f64, seed: u64) -> Self {
        if !positive(rate) {
            return Self::with_shape(ArrivalKind::Poisson, Shape::Empty, seed);
        }
        Self::with_shape(
            ArrivalKind::Poisson,
            Shape::Python {
                lambd: rate / NS_PER_S,
                py: Box::new(PyRandom::new(seed.into())),
            },
            seed,
        )
    }

    fn with_shape(kind: ArrivalKind, shape: Shape, seed: u64) -> Self {
        Self {
            kind,
            rng: Rng::seeded(seed),
            k: 0,
            phase: 0.0,
            x: 0.0,
            last_ns: 0,
            done: matches!(shape, Shape::Empty),
            shape,
        }
    }

    /// The same schedule started over, from `seed`: MLPerf's performance
    /// phase draws its arrivals afresh after its warm-up phase. Allocates
    /// nothing.
    pub(crate) fn restart(&mut self, seed: u64) {
        self.rng = Rng::seeded(seed);
        if let Shape::Python { py, .. } = &mut self.shape {
            **py = PyRandom::new(seed.into());
        }
        self.k = 0;
        self.x = 0.0;
        self.last_ns = 0;
        self.done = matches!(self.shape, Shape::Empty);
    }

    /// Uniform arrivals at `k + phase` on the unit-rate axis instead of
    /// `k`: shard `i` of `N` at rate/N with phase `(i−1)/N` takes arrivals
    /// `i−1, i−1+N, …` of the full-rate schedule (a ramp's too, since its
    /// `Λ` is divided by N with the rates). No effect on Poisson arrivals.
    pub(crate) fn phased(mut self, phase: f64) -> Self {
        if phase.is_finite() && (0.0..1.0).contains(&phase) {
            self.phase = phase;
        }
        self
    }

    /// The next point on the unit-rate axis: `k` or the Poisson process.
    fn next_x(&mut self) -> f64 {
        match self.kind {
            ArrivalKind::Uniform => {
                let x = self.k as f64 + self.phase;
                self.k += 1;
                x
            }
            ArrivalKind::Poisson => {
                self.x += self.rng.exp1();
                self.x
            }
        }
    }

    /// Offset in nanoseconds of the next arrival, non-decreasing; `None` once
    /// a ramp's duration has passed. Once `None`, always `None`.
    pub(crate) fn next_offset_ns(&mut self) -> Option<u64> {
        if self.done {
            return None;
        }
        if let Shape::Python { lambd, py } = &mut self.shape {
            // Python's `int` truncates; `max(1, ·)` as MLPerf's guard.
            let gap = (py.expovariate(*lambd) as u64).max(1);
            self.last_ns = self.last_ns.saturating_add(gap);
            return Some(self.last_ns);
        }
        let x = self.next_x();
        let ns = match &self.shape {
            Shape::Empty | Shape::Python { .. } => None,
            &Shape::Constant { ns_per_arrival } => to_ns(x * ns_per_arrival),
            &Shape::Ramp {
                a,
                b,
                d_s,
                d_ns,
                total,
            } => {
                if x < total {
                    to_ns(Shape::ramp_inverse(a, b, d_s, x) * NS_PER_S).filter(|&ns| ns < d_ns)
                } else {
                    None
                }
            }
        };
        match ns {
            Some(ns) => {
                self.last_ns = self.last_ns.max(ns);
                Some(self.last_ns)
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

impl Iterator for Arrivals {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.next_offset_ns()
    }
}

impl std::iter::FusedIterator for Arrivals {}

/// Rounds seconds·1e9 to whole nanoseconds; `None` past `u64` (584 years),
/// which ends the sequence instead of repeating a saturated offset.
fn to_ns(ns: f64) -> Option<u64> {
    let ns = ns.round();
    // `u64::MAX as f64` is 2^64, itself out of range.
    (ns >= 0.0 && ns < u64::MAX as f64).then_some(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ArrivalKind::{Poisson, Uniform};

    const MS: u64 = 1_000_000;

    fn take(a: &mut Arrivals, n: usize) -> Vec<u64> {
        (0..n).map(|_| a.next_offset_ns().unwrap()).collect()
    }

    fn gaps(offsets: &[u64]) -> Vec<u64> {
        offsets.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// `Λ(t)` for a ramp, `t` in seconds (the reference the tests count against).
    fn ramp_cumulative(a: f64, b: f64, d_s: f64, t: f64) -> f64 {
        a * t + (b - a) * t * t / (2.0 * d_s)
    }

    #[test]
    fn phased_shards_interleave_into_the_full_schedule() {
        // 3 shards at 100/s each, phased, are the 300/s schedule; so is
        // a ramp 30→300/s over 2 s split the same way.
        let full: Vec<u64> = Arrivals::constant(Uniform, 300.0, 1).take(600).collect();
        let mut union: Vec<u64> = (0..3)
            .flat_map(|i| {
                Arrivals::constant(Uniform, 100.0, 1)
                    .phased(f64::from(i) / 3.0)
                    .take(200)
            })
            .collect();
        union.sort();
        assert!(union.iter().zip(&full).all(|(a, b)| a.abs_diff(*b) <= 1));
        let d = Duration::from_secs(2);
        let full: Vec<u64> = Arrivals::ramp(Uniform, 30.0, 300.0, d, 1).collect();
        let mut union: Vec<u64> = (0..3)
            .flat_map(|i| Arrivals::ramp(Uniform, 10.0, 100.0, d, 1).phased(f64::from(i) / 3.0))
            .collect();
        union.sort();
        assert_eq!(union.len(), full.len());
        assert!(union.iter().zip(&full).all(|(a, b)| a.abs_diff(*b) <= 1));
    }

    /// `tests/fixtures/pyrandom/mlperf.json`'s Poisson schedules, made with
    /// CPython as MLPerf makes them.
    #[test]
    fn python_poisson_is_mlperfs_schedule_to_the_nanosecond() {
        let f: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/pyrandom/mlperf.json"))
                .unwrap();
        let cases = f["poisson"].as_array().unwrap();
        assert!(cases.len() >= 3);
        for c in cases {
            let seed: u64 = c["seed"].as_str().unwrap().parse().unwrap();
            let qps = f64::from_bits(c["qps_bits"].as_u64().unwrap());
            let want: Vec<u64> = c["offsets_ns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap())
                .collect();
            let mut a = Arrivals::python_poisson(qps, seed);
            assert_eq!(take(&mut a, want.len()), want, "seed {seed}, {qps}/s");
            a.restart(seed);
            assert_eq!(take(&mut a, want.len()), want, "restarted");
        }
        // A 1e9/s rate's gaps truncate to 0 and are held at 1 ns.
        let mut fast = Arrivals::python_poisson(1e9, 7);
        assert!(gaps(&take(&mut fast, 50)).iter().all(|&g| g >= 1));
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(
                Arrivals::python_poisson(rate, 1).next_offset_ns(),
                None,
                "{rate}"
            );
        }
    }

    #[test]
    fn uniform_constant_spacing_is_exact() {
        let mut a = Arrivals::constant(Uniform, 1000.0, 1);
        let offs = take(&mut a, 10_000);
        assert_eq!(offs[0], 0);
        for (k, &o) in offs.iter().enumerate() {
            assert_eq!(o, k as u64 * MS);
        }

        // A period that is not a whole number of ns: each offset is the
        // rounded exact one, so gaps differ by at most 1 ns and never drift.
        let mut a = Arrivals::constant(Uniform, 3.0, 1);
        let offs = take(&mut a, 100_000);
        for (k, &o) in offs.iter().enumerate() {
            let exact = k as f64 * 1e9 / 3.0;
            assert!((o as f64 - exact).abs() <= 0.5, "k {k}: {o} vs {exact}");
        }
        assert!(
            gaps(&offs)
                .iter()
                .all(|&g| g == 333_333_333 || g == 333_333_334)
        );
    }

    #[test]
    fn poisson_constant_gaps_are_exponential() {
        const N: usize = 200_000;
        let mut a = Arrivals::constant(Poisson, 1000.0, 7);
        let offs = take(&mut a, N);
        assert!(offs[0] > 0);
        // Gaps in ms, the first one from 0.
        let mut g: Vec<f64> = std::iter::once(offs[0])
            .chain(gaps(&offs))
            .map(|ns| ns as f64 / MS as f64)
            .collect();
        let n = g.len() as f64;
        let mean = g.iter().sum::<f64>() / n;
        let var = g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((mean - 1.0).abs() < 0.01, "mean gap {mean} ms");
        assert!((var - 1.0).abs() < 0.03, "gap variance {var} ms²");

        // Kolmogorov–Smirnov against 1 − e^(−x): the 0.1% critical value is
        // 1.95/√n.
        g.sort_by(f64::total_cmp);
        let d = g
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let cdf = 1.0 - (-x).exp();
                (cdf - i as f64 / n)
                    .abs()
                    .max(((i + 1) as f64 / n - cdf).abs())
            })
            .fold(0.0, f64::max);
        let critical = 1.95 / n.sqrt();
        assert!(d < critical, "KS statistic {d} >= {critical}");
    }

    #[test]
    fn poisson_is_reproducible_by_seed() {
        let first = take(&mut Arrivals::constant(Poisson, 500.0, 42), 1000);
        let again = take(&mut Arrivals::constant(Poisson, 500.0, 42), 1000);
        let other = take(&mut Arrivals::constant(Poisson, 500.0, 43), 1000);
        assert_eq!(first, again);
        assert_ne!(first, other);
        let ramp = |seed| {
            Arrivals::ramp(Poisson, 10.0, 900.0, Duration::from_secs(5), seed).collect::<Vec<_>>()
        };
        assert_eq!(ramp(9), ramp(9));
        assert_ne!(ramp(9), ramp(10));
    }

    #[test]
    fn offsets_are_non_decreasing() {
        let streams = [
            Arrivals::constant(Poisson, 1e6, 3),
            Arrivals::ramp(Poisson, 0.0, 1e5, Duration::from_secs(1), 3),
            Arrivals::ramp(Poisson, 1e5, 0.0, Duration::from_secs(1), 3),
            Arrivals::ramp(Uniform, 1e5, 1.0, Duration::from_secs(1), 3),
        ];
        for s in streams {
            let offs: Vec<u64> = s.take(200_000).collect();
            assert!(offs.windows(2).all(|w| w[0] <= w[1]));
        }
    }

    #[test]
    fn degenerate_rates_give_no_arrivals() {
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for kind in [Uniform, Poisson] {
                let mut a = Arrivals::constant(kind, rate, 1);
                assert_eq!(a.next_offset_ns(), None, "constant {rate}");
                assert_eq!(a.next_offset_ns(), None);
            }
        }
        let sec = Duration::from_secs(1);
        for (from, to, d) in [
            (0.0, 0.0, sec),
            (-1.0, 10.0, sec),
            (10.0, -1.0, sec),
            (f64::NAN, 10.0, sec),
            (10.0, f64::INFINITY, sec),
            (10.0, 10.0, Duration::ZERO),
        ] {
            for kind in [Uniform, Poisson] {
                let mut a = Arrivals::ramp(kind, from, to, d, 1);
                assert_eq!(a.next_offset_ns(), None, "ramp {from} {to} {d:?}");
            }
        }
    }

    #[test]
    fn tiny_rate_ends_rather_than_overflowing() {
        // The second arrival would be 10^21 ns away, past u64.
        let mut a = Arrivals::constant(Uniform, 1e-12, 1);
        assert_eq!(a.next_offset_ns(), Some(0));
        assert_eq!(a.next_offset_ns(), None);
        assert_eq!(a.next_offset_ns(), None);
    }

    /// Counts arrivals in each tenth of `d`, checks every offset is in
    /// `[0, d)`, and returns (total, per-tenth counts).
    fn tenths(a: Arrivals, d: Duration) -> (u64, [u64; 10]) {
        let d_ns = d.as_nanos() as u64;
        let mut counts = [0u64; 10];
        let mut total = 0;
        for ns in a {
            assert!(ns < d_ns, "{ns} past {d_ns}");
            counts[(ns * 10 / d_ns) as usize] += 1;
            total += 1;
        }
        (total, counts)
    }

    /// Expected arrivals in each tenth of a ramp.
    fn expected_tenths(from: f64, to: f64, d_s: f64) -> [f64; 10] {
        std::array::from_fn(|i| {
            let lam = |j: usize| ramp_cumulative(from, to, d_s, d_s * j as f64 / 10.0);
            lam(i + 1) - lam(i)
        })
    }

    const RAMPS: [(f64, f64, f64); 7] = [
        (0.0, 100.0, 10.0), // up from idle
        (1000.0, 5000.0, 10.0),
        (5000.0, 1000.0, 10.0), // down
        (1000.0, 0.0, 10.0),    // down to idle
        (250.0, 250.0, 4.0),    // flat
        (1e-3, 300.0, 7.5),     // nearly from idle: c ≫ a
        (300.0, 300.001, 7.5),  // nearly flat: tiny c
    ];

    #[test]
    fn uniform_ramp_counts_are_exact() {
        for (from, to, d_s) in RAMPS {
            let d = Duration::from_secs_f64(d_s);
            let (total, counts) = tenths(Arrivals::ramp(Uniform, from, to, d, 0), d);
            let want = (from + to) / 2.0 * d_s;
            assert_eq!(total as f64, want.ceil(), "ramp {from}->{to}");
            // Arrivals up to the end of tenth i are k = 0..ceil(Λ(t_i)), so
            // each tenth's count is within 1 of its integral.
            for (i, (&c, e)) in counts
                .iter()
                .zip(expected_tenths(from, to, d_s))
                .enumerate()
            {
                assert!(
                    (c as f64 - e).abs() <= 1.0,
                    "ramp {from}->{to}: tenth {i} has {c}, expected {e}"
                );
            }
        }
    }

    #[test]
    fn uniform_ramp_offsets_invert_the_cumulative() {
        // Each offset t_k satisfies Λ(t_k) = k to within the 0.5 ns rounding.
        for (from, to, d_s) in RAMPS {
            let d = Duration::from_secs_f64(d_s);
            for (k, ns) in Arrivals::ramp(Uniform, from, to, d, 0).enumerate() {
                let t = ns as f64 / 1e9;
                // Rounding t moves Λ by at most 0.5 ns times the peak rate.
                let tol = 0.5e-9 * from.max(to) + 1e-9;
                let err = (ramp_cumulative(from, to, d_s, t) - k as f64).abs();
                assert!(err <= tol, "ramp {from}->{to}: k {k} err {err}");
            }
        }
    }

    #[test]
    fn poisson_ramp_counts_track_the_rate() {
        for (from, to, d_s) in RAMPS {
            let d = Duration::from_secs_f64(d_s);
            for seed in 0..3 {
                let (total, counts) = tenths(Arrivals::ramp(Poisson, from, to, d, seed), d);
                // Counts are Poisson: allow 4.5 sigma (plus 2 for tiny means).
                let close =
                    |got: u64, want: f64| (got as f64 - want).abs() <= 4.5 * want.sqrt() + 2.0;
                let want = (from + to) / 2.0 * d_s;
                assert!(close(total, want), "ramp {from}->{to}: {total} vs {want}");
                for (i, (&c, e)) in counts
                    .iter()
                    .zip(expected_tenths(from, to, d_s))
                    .enumerate()
                {
                    assert!(
                        close(c, e),
                        "ramp {from}->{to}: tenth {i} has {c}, expected {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn ramp_down_to_idle_ends_with_widening_gaps() {
        let d = Duration::from_secs(10);
        let offs: Vec<u64> = Arrivals::ramp(Uniform, 1000.0, 0.0, d, 0).collect();
        assert_eq!(offs.len(), 5000);
        let g = gaps(&offs);
        // Starts at 1000/s: the first gap solves 1000t − 50t² = 1.
        assert_eq!(g[0], 1_000_050);
        assert!(g.windows(2).all(|w| w[0] <= w[1] + 1));
        // The last arrival k = 4999 has Λ(D) − Λ(t) = 1, so D − t = √(2D/a).
        let want = 10e9 - (2.0 * 10.0 / 1000.0f64).sqrt() * 1e9;
        assert!((*offs.last().unwrap() as f64 - want).abs() < 2.0);
    }

    #[test]
    fn ramp_up_from_idle_starts_at_zero() {
        let d = Duration::from_secs(10);
        let offs: Vec<u64> = Arrivals::ramp(Uniform, 0.0, 100.0, d, 0).take(3).collect();
        // Λ(t) = 5t², so arrival k is at √(k/5) s.
        let want: Vec<u64> = (0..3)
            .map(|k| ((k as f64 / 5.0).sqrt() * 1e9).round() as u64)
            .collect();
        assert_eq!(offs, want);
    }

    #[test]
    fn flat_ramp_matches_constant() {
        let d = Duration::from_secs(3);
        for kind in [Uniform, Poisson] {
            let ramp: Vec<u64> = Arrivals::ramp(kind, 700.0, 700.0, d, 5).collect();
            let constant: Vec<u64> = Arrivals::constant(kind, 700.0, 5)
                .take_while(|&ns| ns < 3_000_000_000)
                .collect();
            assert_eq!(ramp.len(), constant.len());
            for (r, c) in ramp.iter().zip(&constant) {
                assert!(r.abs_diff(*c) <= 1, "{r} vs {c}");
            }
        }
    }
}
