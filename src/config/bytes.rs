//! Byte sizes on the command line and in profiles: `4194304`, `512KiB`,
//! `4MiB`, `1.5GiB`. A bare number is bytes. Only binary units are taken
//! (a `MB` that might mean 10⁶ or 2²⁰ is an error naming what was
//! expected), so a size always means what it says.

/// Parses `text` into a number of bytes, or says what is wrong with it.
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let expected = "expected a size such as 65536, 512KiB, 4MiB or 1GiB";
    if num.is_empty() {
        return Err(format!("'{text}': {expected}"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{text}': {expected}"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{}', {expected}",
                unit.trim()
            ));
        }
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 / 2.0 {
        return Err(format!("'{text}': size out of range"));
    }
    Ok(bytes.round() as u64)
}

/// argh adapter for size flags.
pub(crate) fn bytes_flag(text: &str) -> Result<u64, String> {
    parse_bytes(text)
}

/// Formats a size the way users write them, in the largest unit that
/// divides it exactly (`4MiB`, `1536KiB`, `1000`).
pub(crate) fn format_bytes(n: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n != 0 && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_bytes("65536").unwrap(), 65536);
        assert_eq!(parse_bytes("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_bytes("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_bytes("4 mib").unwrap(), 4 << 20);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("10B").unwrap(), 10);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "MiB",
            "4MB",
            "4 parsecs",
            "1.2.3KiB",
            "-1",
            "99999999999GiB",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert!(
            parse_bytes("4MB")
                .unwrap_err()
                .contains("unknown unit 'MB'")
        );
    }

    #[test]
    fn formats_round_trip() {
        for s in ["4MiB", "1536KiB", "2GiB", "1000", "0"] {
            assert_eq!(format_bytes(parse_bytes(s).unwrap()), s);
        }
    }
}
