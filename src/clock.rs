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

/// Formats a Unix time in nanoseconds as RFC 3339 UTC with the fraction
/// of a second it has (`2026-12-02T11:00:00.25Z`; none when whole).
pub(crate) fn format_rfc3339(unix_ns: u64) -> String {
    let whole = format_utc(unix_ns);
    let frac = unix_ns % 1_000_000_000;
    if frac == 0 {
        return whole;
    }
    let digits = format!("{frac:09}");
    format!(
        "{}.{}Z",
        &whole[..whole.len() - 1],
        digits.trim_end_matches('0')
    )
}

/// `--start-at`: an instant as RFC 3339 (`2026-12-02T11:00:00Z`, with a
/// fraction of a second and an offset such as `+01:00` if wanted) or as
/// Unix seconds (`1796209200`, `1796209200.5`), to Unix nanoseconds. The
/// error says what was expected; the caller names the flag.
pub(crate) fn parse_instant(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "'{s}': expected RFC 3339 (2026-12-02T11:00:00Z, 2026-12-02T12:00:00.5+01:00) or Unix seconds"
        )
    };
    if t.bytes().next().is_some_and(|b| b.is_ascii_digit()) && !t.contains('-') {
        return unix_seconds(t).ok_or_else(bad);
    }
    rfc3339(t).ok_or_else(bad)
}

/// `SECONDS[.FRACTION]` to ns.
fn unix_seconds(t: &str) -> Option<u64> {
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = whole.parse().ok()?;
    secs.checked_mul(1_000_000_000)?
        .checked_add(fraction_ns(frac)?)
}

/// The digits after a decimal point as ns (past the ninth digit dropped).
fn fraction_ns(frac: &str) -> Option<u64> {
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns = 0u64;
    for (i, b) in frac.bytes().take(9).enumerate() {
        ns += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    Some(ns)
}

/// `YYYY-MM-DDTHH:MM:SS[.F](Z|±HH:MM)` to Unix ns; `None` for anything
/// else, including a date before 1970 or one that does not exist.
fn rfc3339(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let s = t.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let rest = &t[19..];
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            (fraction_ns(&r[..end])?, &r[end..])
        }
        None => (0, rest),
    };
    let offset_s: i64 = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && z.as_bytes()[3] == b':' => {
            let sign = match z.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh = num(t.len() - 5..t.len() - 3)?;
            let om = num(t.len() - 2..t.len())?;
            if oh > 23 || om > 59 {
                return None;
            }
            sign * i64::from(oh * 3600 + om * 60)
        }
        _ => return None,
    };
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(i64::from(y), mo) {
        return None;
    }
    // 60: a leap second, which CLOCK_REALTIME shows as the next second's
    // start anyway.
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(i64::from(y), mo, d);
    let secs = days * 86_400 + i64::from(h * 3600 + mi * 60 + sec) - offset_s;
    let secs = u64::try_from(secs).ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(frac)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A proleptic Gregorian date to days since 1970-01-01, the inverse of
/// [`civil_from_days`] (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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

    #[test]
    fn instants_parse_in_both_forms() {
        let base = 1_796_209_200_000_000_000; // 2026-12-02T11:00:00Z
        assert_eq!(format_utc(base), "2026-12-02T11:00:00Z");
        for text in [
            "2026-12-02T11:00:00Z",
            "2026-12-02t11:00:00z",
            "2026-12-02T12:00:00+01:00",
            "2026-12-02T06:30:00-04:30",
            "1796209200",
            "2026-12-02 11:00:00Z",
        ] {
            assert_eq!(parse_instant(text), Ok(base), "{text}");
        }
        assert_eq!(parse_instant("1796209200.25"), Ok(base + 250_000_000));
        assert_eq!(
            parse_instant("2026-12-02T11:00:00.000000001Z"),
            Ok(base + 1)
        );
        assert_eq!(
            parse_instant("2026-12-02T11:00:00.5Z"),
            Ok(base + 500_000_000)
        );
        assert_eq!(
            parse_instant("2000-02-29T00:00:00Z"),
            Ok(951_782_400_000_000_000)
        );
        for bad in [
            "",
            "x",
            "tomorrow",
            "2026-12-02",
            "2026-12-02T11:00:00",
            "2026-13-02T11:00:00Z",
            "2026-02-30T11:00:00Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02T11:00:00.Z",
            "2026-12-02T11:00:00+1:00",
            "1969-12-31T23:59:59Z",
            "-5",
            "1.2.3",
            "17962092OO",
        ] {
            let e = parse_instant(bad).unwrap_err();
            assert!(e.contains("RFC 3339"), "{bad}: {e}");
        }
    }

    #[test]
    fn days_round_trip_and_rfc3339_keeps_the_fraction() {
        for z in [-1000i64, 0, 59, 60, 10_956, 20_789, 100_000] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
        let t = 1_796_209_200_000_000_000;
        assert_eq!(format_rfc3339(t), "2026-12-02T11:00:00Z");
        assert_eq!(format_rfc3339(t + 250_000_000), "2026-12-02T11:00:00.25Z");
        assert_eq!(parse_instant(&format_rfc3339(t + 123)), Ok(t + 123));
    }
}
