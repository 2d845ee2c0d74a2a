//! Axes: units, linear and log domains rounded to readable ticks (1, 2,
//! 2.5, 5 × 10ⁿ; whole seconds and minutes on time axes; whole decades on
//! log axes) and tick labels people write (`250 ms`, `1.5 s`, `1:30`,
//! `1.5k`, `50%`). The same rules, in a few lines of JS, format the hover
//! read-out, so the two must stay alike.

/// How a value reads on an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unit {
    /// Milliseconds, written in s past 2 s.
    Ms,
    /// Seconds since the run started.
    Time,
    /// A count or rate, with k and M.
    Count,
    /// 0..1 written as percent.
    Fraction,
}

impl Unit {
    pub(super) fn code(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Time => "t",
            Unit::Count => "n",
            Unit::Fraction => "f",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scale {
    Linear,
    Log,
}

#[derive(Clone, Debug)]
pub(super) struct Axis {
    pub label: String,
    pub unit: Unit,
    pub scale: Scale,
    /// A fixed domain (time axes: the stage's range) instead of the data's.
    pub fixed: Option<(f64, f64)>,
    /// A linear axis that starts at zero whatever the data.
    pub zero: bool,
}

impl Axis {
    pub(super) fn new(label: &str, unit: Unit) -> Axis {
        Axis {
            label: label.to_string(),
            unit,
            scale: Scale::Linear,
            fixed: None,
            zero: true,
        }
    }

    pub(super) fn log(mut self) -> Axis {
        self.scale = Scale::Log;
        self.zero = false;
        self
    }

    pub(super) fn fixed(mut self, lo: f64, hi: f64) -> Axis {
        self.fixed = Some((lo, hi));
        self
    }
}

/// An axis's range after rounding to ticks.
#[derive(Debug)]
pub(super) struct Domain {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Domain {
    pub(super) fn of(axis: &Axis, values: impl Iterator<Item = f64>) -> Domain {
        let log = axis.scale == Scale::Log;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if let Some((a, b)) = axis.fixed {
            return Domain {
                lo: a,
                hi: if b > a { b } else { a + 1.0 },
                log: false,
            };
        }
        if !lo.is_finite() {
            (lo, hi) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            // At most five decades: values far below the bulk (ITL's zero
            // gaps, read as 1 ns) sit at the left edge instead of
            // squeezing the curve into the right-hand corner.
            lo = lo.max(hi / 1e5);
            // Whole decades, so the ticks land on 1, 10, 100.
            return Domain {
                lo: 10f64.powf(lo.log10().floor()),
                hi: 10f64.powf(hi.log10().ceil().max(lo.log10().floor() + 1.0)),
                log: true,
            };
        }
        if axis.zero {
            lo = lo.min(0.0);
        }
        if axis.unit == Unit::Fraction {
            hi = hi.max(1.0);
        }
        if hi <= lo {
            hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        }
        let step = nice_step((hi - lo) / 5.0);
        Domain {
            lo: (lo / step).floor() * step,
            hi: (hi / step).ceil() * step,
            log: false,
        }
    }

    /// Where `v` lies, 0 at `lo` and 1 at `hi`.
    pub(super) fn at(&self, v: f64) -> f64 {
        if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    pub(super) fn fits(&self, v: f64) -> bool {
        !(self.log && v <= 0.0)
    }

    pub(super) fn code(&self, unit: Unit) -> String {
        format!("{}{}", if self.log { "log-" } else { "" }, unit.code())
    }

    /// Tick values, with `true` for unlabelled minor gridlines.
    pub(super) fn ticks(&self, unit: Unit) -> Vec<(f64, bool)> {
        if self.log {
            let mut out = Vec::new();
            let (a, b) = (
                self.lo.log10().round() as i32,
                self.hi.log10().round() as i32,
            );
            let few = b - a <= 3;
            for e in a..=b {
                let base = 10f64.powi(e);
                out.push((base, false));
                if e < b {
                    for m in [2.0, 5.0] {
                        out.push((base * m, !few));
                    }
                }
            }
            return out;
        }
        let step = if unit == Unit::Time {
            time_step(self.hi - self.lo)
        } else {
            nice_step((self.hi - self.lo) / 5.0)
        };
        let mut v = (self.lo / step).ceil() * step;
        let mut out = Vec::new();
        while v <= self.hi + step * 1e-9 && out.len() < 40 {
            out.push((v, false));
            v += step;
        }
        out
    }
}

/// 1, 2, 2.5 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// A time step of whole seconds, minutes or hours giving about six ticks.
fn time_step(span: f64) -> f64 {
    const STEPS: [f64; 14] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    ];
    let raw = span / 6.0;
    STEPS
        .iter()
        .copied()
        .find(|&s| s >= raw)
        .unwrap_or_else(|| (raw / 3600.0).ceil() * 3600.0)
}

/// A short number: at most three decimals, trailing zeros dropped.
pub(super) fn short(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A tick or tooltip value; `span` is the axis's extent (what decides
/// between ms and s, seconds and minutes).
pub(super) fn tick(v: f64, unit: Unit, span: f64) -> String {
    match unit {
        Unit::Ms if span >= 2000.0 || (span == 0.0 && v.abs() >= 1000.0) => {
            format!("{} s", short(v / 1000.0))
        }
        Unit::Ms if v != 0.0 && v.abs() < 0.001 => format!("{} ns", short(v * 1e6)),
        Unit::Ms if v != 0.0 && v.abs() < 0.01 => format!("{} µs", short(v * 1e3)),
        Unit::Ms => format!("{} ms", short(v)),
        Unit::Time if span >= 180.0 => {
            let s = v.round() as i64;
            if s >= 3600 {
                format!("{}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
            } else {
                format!("{}:{:02}", s / 60, s % 60)
            }
        }
        Unit::Time => format!("{}s", short(v)),
        Unit::Count if v.abs() >= 1e6 => format!("{}M", short(v / 1e6)),
        Unit::Count if v.abs() >= 1e3 => format!("{}k", short(v / 1e3)),
        Unit::Count => short(v),
        Unit::Fraction => format!("{}%", short(v * 100.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_as_people_write_them() {
        assert_eq!(tick(250.0, Unit::Ms, 500.0), "250 ms");
        assert_eq!(tick(1500.0, Unit::Ms, 3000.0), "1.5 s");
        assert_eq!(tick(0.25, Unit::Ms, 1.0), "0.25 ms");
        assert_eq!(tick(0.005, Unit::Ms, 1.0), "5 µs");
        assert_eq!(tick(0.0001, Unit::Ms, 1.0), "100 ns");
        assert_eq!(tick(1500.0, Unit::Count, 0.0), "1.5k");
        assert_eq!(tick(2_000_000.0, Unit::Count, 0.0), "2M");
        assert_eq!(tick(90.0, Unit::Time, 600.0), "1:30");
        assert_eq!(tick(3725.0, Unit::Time, 7200.0), "1:02:05");
        assert_eq!(tick(30.0, Unit::Time, 60.0), "30s");
        assert_eq!(tick(0.5, Unit::Fraction, 1.0), "50%");
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(23.0), 25.0);
        assert_eq!(time_step(3600.0), 600.0);
    }

    #[test]
    fn log_domain_is_whole_decades() {
        let d = Domain::of(
            &Axis::new("", Unit::Ms).log(),
            [3.0, 450.0, 0.0].into_iter(),
        );
        assert_eq!((d.lo, d.hi), (1.0, 1000.0));
        assert!((d.at(10.0) - 1.0 / 3.0).abs() < 1e-9);
        let ticks = d.ticks(Unit::Ms);
        assert!(ticks.contains(&(100.0, false)) && ticks.contains(&(5.0, false)));
        // A 1 ns outlier does not stretch the axis past five decades.
        let d = Domain::of(
            &Axis::new("", Unit::Ms).log(),
            [1e-6, 2.0, 30.0].into_iter(),
        );
        assert_eq!((d.lo, d.hi), (1e-4, 100.0));
    }
}
