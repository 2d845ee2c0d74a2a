//! Arrival sources: when the next conversation is due and of which
//! scenario, for every load shape. A closed loop refills a scenario's share
//! of virtual users; an offline stage keeps its in-flight bound full; an
//! open loop follows its arrival schedule (with an optional in-flight bound
//! that holds arrivals back); a draining run has nothing left to issue. The
//! parent's one loop asks the source and issues what is due, so a full ring
//! or a held arrival means the same in every mode.

use std::time::Duration;

use crate::engine::arrival::Arrivals;
use crate::plan::{ArrivalKind, Load};
use crate::rng::Rng;

/// What the source says at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Due {
    /// Issue a conversation of `scenario` now, charged from `t_sched`.
    Now { t_sched: u64, scenario: usize },
    /// The next arrival is due at this time.
    At(u64),
    /// An arrival is due, but the open loop's in-flight bound holds it back
    /// (it stays charged from its scheduled time).
    Held,
    /// Nothing is due until a conversation ends.
    Wait,
    /// Nothing will ever be due: an open schedule ran out in a stage with no
    /// end, or a drain has nothing left in flight.
    Done,
}

/// Conversations in flight, as the source needs to see them.
pub(super) struct Inflight<'a> {
    pub total: u64,
    pub by_scenario: &'a [u64],
}

pub(super) enum Source {
    /// Keep `windows[s]` conversations of scenario `s` in flight, each
    /// released (and charged) when a slot frees.
    Closed { windows: Vec<u64> },
    /// Every conversation is due at `due_at` (the measured start); at most
    /// `bound` in flight. Before `due_at` (warmup) they are due when released.
    Offline {
        bound: u64,
        due_at: u64,
        next: Option<usize>,
    },
    /// Arrivals on a schedule from `start`, each of a scenario drawn by
    /// weight; `max_inflight` holds arrivals back beyond that many. A
    /// finished schedule waits out a stage that has an end (`timed`).
    Open {
        arrivals: Arrivals,
        start: u64,
        max_inflight: Option<u64>,
        timed: bool,
        next: Option<(u64, usize)>,
    },
    /// The run is draining: done once nothing is in flight.
    Drain,
}

impl Source {
    /// The source of a stage with load `load` that starts at `start`, is
    /// measured from `measured_from` and ends at `end` (`u64::MAX`: no time
    /// limit). `seed` makes its schedule reproducible; `python` draws a
    /// constant-rate Poisson schedule as MLPerf does (`Arrivals::python_poisson`).
    pub(super) fn for_stage(
        load: Load,
        weights: &[f64],
        connections: u64,
        max_inflight: Option<u64>,
        (start, measured_from, end): (u64, u64, u64),
        (seed, phase, python): (u64, f64, bool),
    ) -> Source {
        match load {
            Load::Closed { concurrency } => Source::Closed {
                windows: split_by_weight(concurrency as u64, weights),
            },
            Load::Offline => Source::Offline {
                bound: connections,
                due_at: measured_from,
                next: None,
            },
            Load::Open {
                kind,
                rate_from,
                rate_to,
            } => Source::Open {
                arrivals: if python && kind == ArrivalKind::Poisson && rate_from == rate_to {
                    Arrivals::python_poisson(rate_from, seed)
                } else if rate_from == rate_to || end == u64::MAX {
                    Arrivals::constant(kind, rate_from, seed)
                } else {
                    Arrivals::ramp(
                        kind,
                        rate_from,
                        rate_to,
                        Duration::from_nanos(end - start),
                        seed,
                    )
                }
                .phased(phase),
                start,
                max_inflight,
                timed: end != u64::MAX,
                next: None,
            },
        }
    }

    /// What is due at `now`. Idempotent until `taken`: a conversation that
    /// could not be issued is offered again, with the same schedule.
    pub(super) fn next_due(
        &mut self,
        now: u64,
        inflight: &Inflight<'_>,
        rng: &mut Rng,
        weights: &[f64],
    ) -> Due {
        match self {
            Source::Closed { windows } => windows
                .iter()
                .zip(inflight.by_scenario)
                .position(|(w, n)| n < w)
                .map_or(Due::Wait, |scenario| Due::Now {
                    t_sched: now,
                    scenario,
                }),
            Source::Offline {
                bound,
                due_at,
                next,
            } => {
                if inflight.total >= *bound {
                    return Due::Wait;
                }
                let scenario = *next.get_or_insert_with(|| pick_weighted(rng, weights));
                Due::Now {
                    t_sched: if now >= *due_at { *due_at } else { now },
                    scenario,
                }
            }
            Source::Open {
                arrivals,
                start,
                max_inflight,
                timed,
                next,
            } => {
                let (t, scenario) = match next {
                    Some(a) => *a,
                    None => match arrivals.next_offset_ns() {
                        Some(off) => {
                            *next.insert((start.saturating_add(off), pick_weighted(rng, weights)))
                        }
                        None if *timed => return Due::Wait,
                        None => return Due::Done,
                    },
                };
                if now < t {
                    Due::At(t)
                } else if max_inflight.is_some_and(|max| inflight.total >= max) {
                    Due::Held
                } else {
                    Due::Now {
                        t_sched: t,
                        scenario,
                    }
                }
            }
            Source::Drain if inflight.total == 0 => Due::Done,
            Source::Drain => Due::Wait,
        }
    }

    /// Measuring begins at `t` (a warm-up by count just ended): an offline
    /// stage's conversations are due from then.
    pub(super) fn measure_from(&mut self, t: u64) {
        if let Source::Offline { due_at, .. } = self {
            *due_at = t;
        }
    }

    /// An open schedule starts over at `start`, drawn from `seed` (MLPerf's
    /// performance phase after its warm-up phase). Allocates nothing.
    pub(super) fn restart_schedule(&mut self, start: u64, seed: u64) {
        if let Source::Open {
            arrivals,
            start: from,
            next,
            ..
        } = self
        {
            arrivals.restart(seed);
            *from = start;
            *next = None;
        }
    }

    /// The conversation last offered was issued.
    pub(super) fn taken(&mut self) {
        match self {
            Source::Offline { next, .. } => *next = None,
            Source::Open { next, .. } => *next = None,
            Source::Closed { .. } | Source::Drain => {}
        }
    }
}

/// Splits `total` into shares proportional to `weights`, summing exactly to
/// `total` (largest remainders get the leftovers).
pub(crate) fn split_by_weight(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![total];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut out: Vec<u64> = exact.iter().map(|x| x.floor() as u64).collect();
    let mut left = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = exact[a] - exact[a].floor();
        let rb = exact[b] - exact[b].floor();
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    // A scenario with weight gets at least one slot while another has two.
    for i in 0..out.len() {
        if out[i] == 0 && weights[i] > 0.0 {
            let (j, &most) = out
                .iter()
                .enumerate()
                .max_by_key(|(_, n)| **n)
                .expect("non-empty");
            if most > 1 {
                out[j] -= 1;
                out[i] = 1;
            }
        }
    }
    out
}

/// A scenario index drawn with probability proportional to its weight.
fn pick_weighted(rng: &mut Rng, weights: &[f64]) -> usize {
    if weights.len() <= 1 {
        return 0;
    }
    let sum: f64 = weights.iter().sum();
    let mut x = rng.next_f64() * sum;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ArrivalKind;

    #[test]
    fn weights_split_exactly() {
        assert_eq!(
            split_by_weight(1000, &[70.0, 20.0, 10.0]),
            vec![700, 200, 100]
        );
        assert_eq!(split_by_weight(8, &[70.0, 30.0]), vec![6, 2]);
        assert_eq!(
            split_by_weight(3, &[1.0, 1.0, 1.0, 1.0])
                .iter()
                .sum::<u64>(),
            3
        );
        assert_eq!(split_by_weight(5, &[1.0]), vec![5]);
        assert_eq!(split_by_weight(4, &[98.0, 1.0, 1.0]), vec![2, 1, 1]);
        assert_eq!(split_by_weight(2, &[1.0, 1.0, 1.0]), vec![1, 1, 0]);
    }

    #[test]
    fn weighted_picks_follow_weights() {
        let mut rng = Rng::seeded(4);
        let mut counts = [0u32; 2];
        for _ in 0..10_000 {
            counts[pick_weighted(&mut rng, &[70.0, 30.0])] += 1;
        }
        assert!((6_700..7_300).contains(&counts[0]), "{counts:?}");
    }

    fn inflight(total: u64, by_scenario: &[u64]) -> Inflight<'_> {
        Inflight { total, by_scenario }
    }

    #[test]
    fn closed_refills_the_first_scenario_below_its_share() {
        let w = [3.0, 1.0];
        let mut rng = Rng::seeded(1);
        let mut s = Source::for_stage(
            Load::Closed { concurrency: 4 },
            &w,
            4,
            None,
            (0, 0, u64::MAX),
            (1, 0.0, false),
        );
        let due = |s: &mut Source, rng: &mut Rng, by: &[u64]| {
            s.next_due(50, &inflight(by.iter().sum(), by), rng, &w)
        };
        assert_eq!(
            due(&mut s, &mut rng, &[0, 0]),
            Due::Now {
                t_sched: 50,
                scenario: 0
            }
        );
        assert_eq!(
            due(&mut s, &mut rng, &[3, 0]),
            Due::Now {
                t_sched: 50,
                scenario: 1
            }
        );
        assert_eq!(due(&mut s, &mut rng, &[3, 1]), Due::Wait);
    }

    #[test]
    fn offline_is_due_at_the_measured_start_up_to_its_bound() {
        let w = [1.0];
        let mut rng = Rng::seeded(1);
        let mut s = Source::for_stage(
            Load::Offline,
            &w,
            2,
            None,
            (0, 100, u64::MAX),
            (1, 0.0, false),
        );
        let warm = s.next_due(40, &inflight(0, &[0]), &mut rng, &w);
        assert_eq!(
            warm,
            Due::Now {
                t_sched: 40,
                scenario: 0
            }
        );
        s.taken();
        let measured = s.next_due(150, &inflight(1, &[1]), &mut rng, &w);
        assert_eq!(
            measured,
            Due::Now {
                t_sched: 100,
                scenario: 0
            }
        );
        assert_eq!(s.next_due(150, &inflight(2, &[2]), &mut rng, &w), Due::Wait);
    }

    #[test]
    fn open_offers_the_same_arrival_until_taken_and_holds_at_the_bound() {
        let w = [1.0];
        let mut rng = Rng::seeded(1);
        let load = Load::Open {
            kind: ArrivalKind::Uniform,
            rate_from: 1000.0,
            rate_to: 1000.0,
        };
        let mut s = Source::for_stage(
            load,
            &w,
            8,
            Some(1),
            (1_000, 1_000, u64::MAX),
            (1, 0.0, false),
        );
        let first = s.next_due(0, &inflight(0, &[0]), &mut rng, &w);
        let Due::At(t0) = first else {
            panic!("{first:?}")
        };
        assert_eq!(s.next_due(0, &inflight(0, &[0]), &mut rng, &w), first);
        assert_eq!(
            s.next_due(t0, &inflight(0, &[0]), &mut rng, &w),
            Due::Now {
                t_sched: t0,
                scenario: 0
            }
        );
        assert_eq!(
            s.next_due(t0 + 5, &inflight(1, &[1]), &mut rng, &w),
            Due::Held
        );
        s.taken();
        assert_eq!(
            s.next_due(t0, &inflight(0, &[0]), &mut rng, &w),
            Due::At(t0 + 1_000_000)
        );
    }

    #[test]
    fn finished_schedules_wait_out_their_stage_and_an_empty_drain_is_done() {
        let w = [1.0];
        let mut rng = Rng::seeded(1);
        let load = Load::Open {
            kind: ArrivalKind::Uniform,
            rate_from: 1.0,
            rate_to: 3.0,
        };
        let mut s = Source::for_stage(load, &w, 8, None, (0, 0, 1_000_000_000), (1, 0.0, false));
        let mut n = 0;
        loop {
            match s.next_due(u64::MAX - 1, &inflight(0, &[0]), &mut rng, &w) {
                Due::Now { .. } => {
                    s.taken();
                    n += 1;
                }
                // The stage has an end: the finished ramp waits it out.
                Due::Wait => break,
                other => panic!("{other:?}"),
            }
        }
        // (1 + 3) / 2 arrivals per second over one second.
        assert_eq!(n, 2);
        let constant = Load::Open {
            kind: ArrivalKind::Uniform,
            rate_from: 0.0,
            rate_to: 0.0,
        };
        let mut untimed =
            Source::for_stage(constant, &w, 8, None, (0, 0, u64::MAX), (1, 0.0, false));
        assert_eq!(
            untimed.next_due(5, &inflight(0, &[0]), &mut rng, &w),
            Due::Done
        );
        assert_eq!(
            Source::Drain.next_due(0, &inflight(0, &[0]), &mut rng, &w),
            Due::Done
        );
        assert_eq!(
            Source::Drain.next_due(0, &inflight(1, &[1]), &mut rng, &w),
            Due::Wait
        );
    }
}
