//! Human durations on the command line and in profiles: `250ms`, `1.5s`,
//! `2m`, `1h`, `500us`, `20ns`. A bare number is seconds, as in most load
//! tools. Parsing is strict: a typo is an error naming what was expected,
//! never a silent zero.

use std::time::Duration;

/// Parses `text` into a duration, or says what is wrong with it.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let expected = "expected a duration such as 500ms, 2s, 1.5m, 1h";
    if num.is_empty() {
        return Err(format!("'{text}': {expected}"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{text}': {expected}"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1e9,
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "m" | "min" | "mins" => 60e9,
        "h" => 3600e9,
        other => return Err(format!("'{text}': unknown unit '{other}', {expected}")),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns > u64::MAX as f64 / 2.0 {
        return Err(format!("'{text}': duration out of range"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// argh adapter for duration flags.
pub(crate) fn duration_flag(text: &str) -> Result<Duration, String> {
    parse_duration(text)
}

/// Formats a duration the way users write them (`20ms`, `1.5s`), for reports
/// and the resolved config.
pub(crate) fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0s".to_string()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_duration("").is_err());
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("1.2.3s").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for s in ["20ms", "2s", "250us", "7ns", "0s"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }
}
