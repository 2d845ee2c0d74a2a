//! The wait for `--start-at`: the workers are forked and connected, and
//! the parent holds its time zero until the wall clock reaches the instant,
//! so shards on different hosts given one instant start their schedules
//! together. The instant is turned into CLOCK_MONOTONIC once, at the start
//! of the wait, so a clock step during it cannot move the start twice;
//! the parent sleeps until `SPIN_NS` before and spins the rest, since a
//! sleep's wake-up is late by up to a scheduler tick.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::clock::{now_ns, wall_ns};

/// Spin this close to the start; sleep before.
const SPIN_NS: u64 = 2_000_000;
/// Longest sleep, so a signal during a long wait is noticed promptly.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// Past the monotonic target, how long the wall clock may still be waited
/// for: a clock NTP slews (at most 500 ppm) lags the conversion by less
/// than this over a wait of 10 s. A longer lag (a long wait, a clock
/// stepped back) is not waited out: the start is then early by the wall
/// clock, and `start_late_ns` says by how much.
const WALL_CATCH_UP_NS: u64 = 5_000_000;

/// Waits until the wall clock reads `start_at_unix_ns` (at once when it
/// has passed) or a signal beyond those already counted arrives; false when
/// a signal ended the wait before the instant.
pub(super) fn wait_until(start_at_unix_ns: u64, signals: &AtomicU32) -> bool {
    let seen = signals.load(Ordering::Relaxed);
    let (mono, wall) = (now_ns(), wall_ns());
    let target = mono.saturating_add(start_at_unix_ns.saturating_sub(wall));
    loop {
        let now = now_ns();
        if signals.load(Ordering::Relaxed) > seen {
            return false;
        }
        if now >= target {
            // Never early by the wall clock, which is what shards compare.
            while wall_ns() < start_at_unix_ns && now_ns() < target + WALL_CATCH_UP_NS {
                std::hint::spin_loop();
            }
            return true;
        }
        let left = target - now;
        if left > SPIN_NS {
            std::thread::sleep(Duration::from_nanos((left - SPIN_NS).min(MAX_SLEEP_NS)));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_the_instant_and_not_for_one_past() {
        let signals = AtomicU32::new(0);
        let at = wall_ns() + 30_000_000;
        assert!(wait_until(at, &signals));
        let late = wall_ns() as i64 - at as i64;
        // Never early; late only by a scheduling hiccup on a busy machine.
        assert!((0..50_000_000).contains(&late), "{late} ns");
        let t = now_ns();
        assert!(wait_until(wall_ns() - 1_000_000_000, &signals));
        assert!(now_ns() - t < 10_000_000);
    }

    #[test]
    fn a_signal_ends_the_wait() {
        let signals = AtomicU32::new(1);
        let t = now_ns();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                signals.fetch_add(1, Ordering::Relaxed);
            });
            assert!(!wait_until(wall_ns() + 10_000_000_000, &signals));
        });
        assert!(now_ns() - t < 2_000_000_000);
    }
}
