//! Numbers for people: one rule for how many decimals a value in a report
//! or a comparison table gets. It fixes the decimals by magnitude, not
//! significant digits in the strict sense, so a column of similar values
//! lines up; the price is that a value below 1 shows fewer significant
//! digits than one above.

/// How a whole number is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Whole {
    /// Without decimals (`128`): report.txt, where whole values are counts
    /// of tokens or exact histogram bounds.
    Bare,
    /// With the decimals of its magnitude (`128.0`): compare's tables,
    /// where a column holds measurements.
    Decimals,
}

/// `v` with `sig` digits before and after the point together, for
/// magnitudes from 1 up to `10^sig`: e.g. with `sig = 4`, `1234`, `123.4`,
/// `12.34`, `1.234` and `0.123`. Larger magnitudes print whole, smaller
/// ones with `sig - 1` decimals. Negative values take the rule of their
/// magnitude.
pub(crate) fn num(v: f64, sig: u32, whole: Whole) -> String {
    if whole == Whole::Bare && v.fract() == 0.0 {
        return format!("{v:.0}");
    }
    let a = v.abs();
    let mut decimals = sig.saturating_sub(1) as usize;
    let mut bound = 10.0;
    while decimals > 0 && a >= bound {
        decimals -= 1;
        bound *= 10.0;
    }
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_by_magnitude() {
        let four = |v| num(v, 4, Whole::Decimals);
        for (v, s) in [
            (0.0, "0.000"),
            (0.12345, "0.123"),
            (1.0, "1.000"),
            (9.9994, "9.999"),
            (10.0, "10.00"),
            (99.994, "99.99"),
            (100.0, "100.0"),
            (999.94, "999.9"),
            (1000.0, "1000"),
            (123_456.7, "123457"),
            (-0.5, "-0.500"),
            (-12.5, "-12.50"),
            (-1500.0, "-1500"),
        ] {
            assert_eq!(four(v), s, "{v}");
        }
        let three = |v| num(v, 3, Whole::Decimals);
        assert_eq!(three(1.234), "1.23");
        assert_eq!(three(12.34), "12.3");
        assert_eq!(three(123.4), "123");
    }

    #[test]
    fn bare_whole_numbers() {
        let bare = |v| num(v, 4, Whole::Bare);
        assert_eq!(bare(128.0), "128");
        assert_eq!(bare(0.0), "0");
        assert_eq!(bare(5.0), "5");
        assert_eq!(bare(5.5), "5.500");
        assert_eq!(bare(1234.5), "1234");
        assert_eq!(num(5.0, 4, Whole::Decimals), "5.000");
    }

    /// The rule the report and compare each had before they shared this
    /// one, over a sweep of values.
    #[test]
    fn matches_the_plain_thresholds() {
        let naive = |v: f64, bare: bool| {
            let a = v.abs();
            if bare && v.fract() == 0.0 || a >= 1000.0 {
                format!("{v:.0}")
            } else if a >= 100.0 {
                format!("{v:.1}")
            } else if a >= 10.0 {
                format!("{v:.2}")
            } else {
                format!("{v:.3}")
            }
        };
        let mut v: f64 = 1e-4;
        while v < 1e7 {
            for x in [v, -v, v.round(), v * 1.0001, 9.9995, 99.995, 999.95] {
                assert_eq!(num(x, 4, Whole::Bare), naive(x, true), "{x}");
                assert_eq!(num(x, 4, Whole::Decimals), naive(x, false), "{x}");
            }
            v *= 1.37;
        }
    }
}
