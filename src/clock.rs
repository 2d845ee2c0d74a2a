//! Time as the engine measures it: CLOCK_MONOTONIC nanoseconds, shared by
//! the parent and every forked worker so timestamps taken in different
//! processes subtract meaningfully. A wall-clock anchor exists only to label
//! reports; no duration is ever computed from it.

use crate::sys::time;

/// CLOCK_MONOTONIC in nanoseconds. Served by the vDSO (~35 ns here), so it is
/// cheap enough to call on the hot path once per I/O event.
#[inline]
pub fn now_ns() -> u64 {
    time::monotonic_ns()
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch, for labels only.
pub fn wall_ns() -> u64 {
    time::realtime_ns()
}

/// Formats a Unix time in nanoseconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn format_utc(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// algorithm), so report labels need no date crate.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_advances() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }

    #[test]
    fn utc_format_known_dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400_000_000_000), "2000-02-29T00:00:00Z");
        assert_eq!(
            format_utc(1_796_000_000_000_000_000),
            "2026-11-30T00:53:20Z"
        );
    }
}
