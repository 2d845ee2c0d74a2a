//! How long a run whose length is a minimum lasts: MLPerf's rule under
//! `preset: mlperf` (the duration only sizes a request count, rounded up to
//! whole dataset passes, and only `max_duration` is a clock), and
//! `min_requests` / `min_duration` outside it (issue until both hold). The
//! MLPerf count depends on the dataset's row count, known only once it is
//! loaded, so resolving keeps the rule ([`RunLength`]) and [`RunLength::size`]
//! applies it to the first stage before the run starts; the sentence it
//! returns goes into the report and the summary, so a reader sees why the run
//! issued what it did.

use std::time::Duration;

use super::duration::format_duration;
use super::profile::typed::Mode;
use super::profile::validate::Errors;
use super::profile::{Profile, defaults};
use crate::plan::{Load, StagePlan};

/// MLPerf's padding on the count a duration implies (`padding_factor`).
const MLPERF_PADDING: f64 = 1.1;

/// The rule that sizes the first (only) stage.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RunLength {
    /// `preset: mlperf`: MLPerf's `total_samples_to_issue`.
    Mlperf {
        /// Requests per second the count is sized by: the open loop's rate,
        /// else `rate` given for sizing, else MLPerf's 10.
        qps: f64,
        /// `qps` is MLPerf's default, no rate having been given.
        qps_default: bool,
        /// MLPerf keeps `min_duration_ms` as whole milliseconds.
        min_duration_ms: u64,
        /// `requests`: MLPerf's `n_samples_to_issue`, the exact count.
        exact: Option<u64>,
        min_requests: Option<u64>,
    },
    /// Outside the preset: at least `min_requests` issued and `min_duration`
    /// measured. An open loop turns both into one count (`rate` is its
    /// rate), a closed loop or offline run checks both as it goes.
    AtLeast {
        min_requests: Option<u64>,
        min_duration: Option<Duration>,
        rate: Option<f64>,
    },
}

/// A stage sized by its rule, and why.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sized {
    pub requests: Option<u64>,
    pub min_ns: Option<u64>,
    pub why: String,
}

impl RunLength {
    /// The size of the stage for content of `samples` distinct prompts, of
    /// which `rows` (a dataset file's rows; `None` for generated prompts,
    /// which have no passes) make one pass.
    pub(crate) fn size(&self, rows: Option<u64>, samples: u64) -> Sized {
        match *self {
            RunLength::Mlperf {
                qps,
                qps_default,
                min_duration_ms,
                exact,
                min_requests,
            } => {
                if let Some(n) = exact {
                    return Sized {
                        requests: Some(n),
                        min_ns: None,
                        why: format!(
                            "requests to issue: {n}, as given (MLPerf's n_samples_to_issue: exact, not rounded)"
                        ),
                    };
                }
                let (base, how) = if min_duration_ms == 0 {
                    (samples.max(1), "one pass (min_duration 0)".to_string())
                } else {
                    let n = mlperf_count(qps, min_duration_ms);
                    let d = format_duration(Duration::from_millis(min_duration_ms));
                    let dflt = if qps_default {
                        " (MLPerf's qps when no rate is given)"
                    } else {
                        ""
                    };
                    (n, format!("ceil({qps}/s{dflt} × {d} × 1.1)"))
                };
                let (n, how) = match min_requests {
                    Some(m) if m > base => (m, format!("max({how} = {base}, min_requests {m})")),
                    _ => (base, how),
                };
                let (total, passes) = round_to_passes(n, rows);
                let rounded = match (rows, passes) {
                    (Some(r), Some(p)) if total != n => {
                        format!(" = {n} rounded up to {p} passes of {r} rows")
                    }
                    (Some(r), Some(p)) => format!(", {p} passes of {r} rows"),
                    _ => String::new(),
                };
                Sized {
                    requests: Some(total),
                    min_ns: None,
                    why: format!(
                        "requests to issue: {total} = {how}{rounded} (MLPerf run rules: the duration is a minimum that sizes the count)"
                    ),
                }
            }
            RunLength::AtLeast {
                min_requests,
                min_duration,
                rate: Some(rate),
            } => {
                let by_time = min_duration.map_or(0, |d| (rate * d.as_secs_f64()).ceil() as u64);
                let n = by_time.max(min_requests.unwrap_or(0)).max(1);
                let mut parts = Vec::new();
                if let Some(m) = min_requests {
                    parts.push(format!("min_requests {m}"));
                }
                if let Some(d) = min_duration {
                    parts.push(format!(
                        "ceil({rate}/s × {}) = {by_time}",
                        format_duration(d)
                    ));
                }
                let how = match parts.len() {
                    1 => parts.remove(0),
                    _ => format!("max({})", parts.join(", ")),
                };
                Sized {
                    requests: Some(n),
                    min_ns: None,
                    why: format!("requests to issue: {n} = {how}"),
                }
            }
            RunLength::AtLeast {
                min_requests,
                min_duration,
                rate: None,
            } => {
                let mut parts = Vec::new();
                if let Some(m) = min_requests {
                    parts.push(format!("{m} requests issued"));
                }
                if let Some(d) = min_duration {
                    parts.push(format!("{} measured", format_duration(d)));
                }
                Sized {
                    requests: Some(min_requests.unwrap_or(0)),
                    min_ns: min_duration.map(|d| d.as_nanos().min(u64::MAX as u128) as u64),
                    why: format!("runs until both hold: {}", parts.join(" and ")),
                }
            }
        }
    }
}

impl RunLength {
    /// The rule in words before the dataset is loaded (for `validate`).
    pub(crate) fn plan(&self) -> String {
        match *self {
            RunLength::Mlperf { exact: Some(n), .. } => {
                format!("exactly {n} requests (MLPerf's n_samples_to_issue)")
            }
            RunLength::Mlperf {
                qps,
                min_duration_ms,
                min_requests,
                ..
            } => {
                let base = if min_duration_ms == 0 {
                    "one pass over the dataset".to_string()
                } else {
                    let d = format_duration(Duration::from_millis(min_duration_ms));
                    let n = mlperf_count(qps, min_duration_ms);
                    format!("ceil({qps}/s × {d} × 1.1) = {n} requests")
                };
                let at_least = min_requests.map_or(String::new(), |m| format!(", at least {m}"));
                format!("{base}{at_least}, rounded up to whole dataset passes (MLPerf run rules)")
            }
            RunLength::AtLeast { .. } => self.size(None, 0).why,
        }
    }
}

/// `ceil(qps × duration × 1.1)` in MLPerf's floating-point order (so
/// 100/s × 2 s gives 221, as it does there: 220.00000000000003).
fn mlperf_count(qps: f64, min_duration_ms: u64) -> u64 {
    let expected = qps * (min_duration_ms as f64 / 1000.0);
    let n = (expected * MLPERF_PADDING).ceil();
    if n >= u64::MAX as f64 {
        u64::MAX
    } else {
        (n as u64).max(1)
    }
}

/// `n` rounded up to whole passes of `rows`, and how many passes that is.
fn round_to_passes(n: u64, rows: Option<u64>) -> (u64, Option<u64>) {
    match rows {
        Some(r) if r > 0 => {
            let passes = n.div_ceil(r);
            (passes.saturating_mul(r), Some(passes))
        }
        _ => (n, None),
    }
}

/// The rule the profile's run-length fields describe for the single stage
/// `stage` (`None`: the run's length is its `duration`/`requests` as
/// usual), with every contradiction reported by its JSON path.
pub(crate) fn rule(
    p: &Profile,
    mlperf: bool,
    stage: Option<&StagePlan>,
    errs: &mut Errors,
) -> Option<RunLength> {
    if p.min_requests == Some(0) {
        errs.at("min_requests", "must be at least 1");
    }
    let minimum = p.min_duration.is_some() || p.min_requests.is_some();
    if p.stages.is_some() {
        for (name, set) in [
            ("min_duration", p.min_duration.is_some()),
            ("min_requests", p.min_requests.is_some()),
            ("max_duration", p.max_duration.is_some()),
        ] {
            if set {
                errs.at(name, "ambiguous beside stages: it sizes a single-stage run");
            }
        }
        if mlperf {
            errs.at(
                "stages",
                "preset mlperf runs one load phase: give mode/rate/concurrency instead",
            );
        }
        return None;
    }
    let max = p.max_duration.map(|d| d.0).filter(|d| !d.is_zero());
    let load = stage.map(|s| s.load);
    if mlperf {
        let min = match (p.duration, p.min_duration) {
            (Some(_), Some(_)) => {
                errs.at(
                    "min_duration",
                    "under preset mlperf duration is already a minimum: give one of them",
                );
                None
            }
            (d, m) => d.or(m).map(|d| d.0),
        }
        .unwrap_or(defaults::MLPERF_MIN_DURATION);
        if let (Some(n), Some(m)) = (p.requests, p.min_requests)
            && m > n
        {
            errs.at(
                "min_requests",
                format!("{m} is above requests {n}, the exact count"),
            );
        }
        check_cap(errs, max, Some(min));
        let (qps, qps_default) = match (load, p.rate) {
            (Some(Load::Open { rate_from, .. }), _) => (rate_from, false),
            (_, Some(r)) => (r, false),
            _ => (defaults::MLPERF_QPS, true),
        };
        return Some(RunLength::Mlperf {
            qps,
            qps_default,
            min_duration_ms: min.as_millis().min(u64::MAX as u128) as u64,
            exact: p.requests,
            min_requests: p.min_requests,
        });
    }
    if !minimum {
        return None;
    }
    for (name, set) in [
        ("duration", p.duration.is_some()),
        ("requests", p.requests.is_some()),
    ] {
        if set {
            errs.at(
                name,
                "ends the run, while min_duration/min_requests set a minimum: give one kind (max_duration caps a minimum)",
            );
        }
    }
    if p.min_duration.is_some_and(|d| d.0.is_zero()) {
        errs.at("min_duration", "must be longer than 0");
    }
    let min_duration = p.min_duration.map(|d| d.0);
    check_cap(errs, max, min_duration);
    Some(RunLength::AtLeast {
        min_requests: p.min_requests,
        min_duration,
        rate: match load {
            Some(Load::Open { rate_from, .. }) => Some(rate_from),
            _ => None,
        },
    })
}

/// MLPerf's check: a cap below the minimum could never let the run finish.
fn check_cap(errs: &mut Errors, max: Option<Duration>, min: Option<Duration>) {
    if let (Some(max), Some(min)) = (max, min)
        && max < min
    {
        errs.at(
            "max_duration",
            format!(
                "{} is below the minimum duration {}",
                format_duration(max),
                format_duration(min)
            ),
        );
    }
}

/// Whether `mode` lets `rate` size an MLPerf run without setting its load:
/// offline and concurrency runs take it as MLPerf's `target_qps`.
pub(crate) fn rate_sizes_only(mlperf: bool, mode: Option<&Result<Mode, String>>) -> bool {
    mlperf && matches!(mode, Some(Ok(Mode::Offline | Mode::Concurrency)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mlperf(qps: f64, ms: u64, exact: Option<u64>, min_requests: Option<u64>) -> RunLength {
        RunLength::Mlperf {
            qps,
            qps_default: false,
            min_duration_ms: ms,
            exact,
            min_requests,
        }
    }

    #[test]
    fn mlperf_counts_as_total_samples_to_issue_does() {
        // Values from runtime_settings.py's arithmetic (Python floats).
        let n = |r: &RunLength, rows| r.size(rows, rows.unwrap_or(7)).requests.unwrap();
        assert_eq!(n(&mlperf(10.0, 60_000, None, None), None), 660);
        assert_eq!(n(&mlperf(10.0, 600_000, None, None), None), 6601);
        assert_eq!(n(&mlperf(100.0, 2_000, None, None), None), 221);
        assert_eq!(n(&mlperf(50.0, 5_000, None, None), None), 275);
        // Padded to the dataset size.
        assert_eq!(n(&mlperf(10.0, 60_000, None, None), Some(330)), 660);
        assert_eq!(n(&mlperf(10.0, 600_000, None, None), Some(1000)), 7000);
        assert_eq!(n(&mlperf(10.0, 600_000, None, None), Some(6601)), 6601);
        assert_eq!(n(&mlperf(100.0, 2_000, None, Some(250)), Some(100)), 300);
        assert_eq!(n(&mlperf(100.0, 2_000, None, Some(150)), Some(100)), 300);
        // The explicit count wins and is not padded.
        assert_eq!(n(&mlperf(10.0, 600_000, Some(50), None), Some(330)), 50);
        // Duration 0: every sample once.
        assert_eq!(n(&mlperf(10.0, 0, None, None), Some(330)), 330);
        assert_eq!(n(&mlperf(10.0, 0, None, Some(400)), Some(330)), 660);
        assert_eq!(
            mlperf(10.0, 0, None, None).size(None, 12).requests,
            Some(12)
        );
        // A tiny duration still issues one.
        assert_eq!(n(&mlperf(0.001, 1, None, None), None), 1);
    }

    #[test]
    fn the_why_names_the_arithmetic() {
        let s = mlperf(10.0, 60_000, None, None).size(Some(330), 330);
        assert_eq!(
            s.why,
            "requests to issue: 660 = ceil(10/s × 60s × 1.1), 2 passes of 330 rows \
             (MLPerf run rules: the duration is a minimum that sizes the count)"
        );
        let s = mlperf(100.0, 2_000, None, Some(250)).size(Some(100), 100);
        assert!(
            s.why.starts_with(
                "requests to issue: 300 = max(ceil(100/s × 2s × 1.1) = 221, min_requests 250) \
                 = 250 rounded up to 3 passes of 100 rows"
            ),
            "{}",
            s.why
        );
        let dflt = RunLength::Mlperf {
            qps: 10.0,
            qps_default: true,
            min_duration_ms: 1_000,
            exact: None,
            min_requests: None,
        };
        assert!(dflt.size(None, 5).why.contains("10/s (MLPerf's qps"));
        assert_eq!((dflt.size(None, 5).requests), Some(11));
    }

    #[test]
    fn validate_states_the_rule_before_the_dataset_is_known() {
        assert_eq!(
            mlperf(20.0, 30_000, None, Some(700)).plan(),
            "ceil(20/s × 30s × 1.1) = 660 requests, at least 700, rounded up to whole dataset passes (MLPerf run rules)"
        );
        assert_eq!(
            mlperf(20.0, 30_000, Some(5), None).plan(),
            "exactly 5 requests (MLPerf's n_samples_to_issue)"
        );
        assert!(mlperf(1.0, 0, None, None).plan().starts_with("one pass"));
    }

    #[test]
    fn outside_the_preset_an_open_loop_takes_the_larger_count() {
        let r = RunLength::AtLeast {
            min_requests: Some(250),
            min_duration: Some(Duration::from_secs(2)),
            rate: Some(100.0),
        };
        let s = r.size(Some(100), 100);
        assert_eq!((s.requests, s.min_ns), (Some(250), None));
        assert_eq!(
            s.why,
            "requests to issue: 250 = max(min_requests 250, ceil(100/s × 2s) = 200)"
        );
        let r = RunLength::AtLeast {
            min_requests: Some(10),
            min_duration: Some(Duration::from_secs(2)),
            rate: Some(100.0),
        };
        assert_eq!(r.size(None, 1).requests, Some(200));
        let closed = RunLength::AtLeast {
            min_requests: Some(10),
            min_duration: Some(Duration::from_millis(1500)),
            rate: None,
        };
        let s = closed.size(Some(100), 100);
        assert_eq!((s.requests, s.min_ns), (Some(10), Some(1_500_000_000)));
        assert_eq!(
            s.why,
            "runs until both hold: 10 requests issued and 1500ms measured"
        );
    }

    /// Resolution of the preset and the run-length fields.
    mod resolution {
        use std::env::VarError;

        use super::super::*;
        use crate::config::BenchConfig;
        use crate::config::profile::CacheMode;
        use crate::config::resolve::resolve;
        use crate::dataset::Order;

        fn parse(text: &str) -> Profile {
            let no_env = |_: &str| Err(VarError::NotPresent);
            Profile::parse(text, "run.json", &no_env).unwrap()
        }

        fn resolved(text: &str) -> BenchConfig {
            resolve(parse(text)).unwrap_or_else(|e| panic!("{e:?}"))
        }

        fn errors(text: &str) -> Vec<String> {
            resolve(parse(text)).err().unwrap_or_default()
        }

        #[test]
        fn the_preset_brings_mlperfs_defaults() {
            let c = resolved(r#"{"preset": "mlperf", "rate": 5}"#);
            assert!(c.mlperf);
            assert_eq!(c.cache_mode, CacheMode::Natural);
            assert_eq!(c.scenarios[0].cache_mode, CacheMode::Natural);
            assert_eq!(c.order, Order::Shuffle);
            assert_eq!((c.scheduler_seed, c.dataloader_seed), (42, 42));
            assert_eq!(c.sampling.seed, None, "no sampling seed unless asked");
            assert_eq!(c.max_tokens, 1024);
            assert!(c.stream, "online streams");
            assert!(c.early_stopping);
            assert_eq!(
                c.run_length,
                Some(RunLength::Mlperf {
                    qps: 5.0,
                    qps_default: false,
                    min_duration_ms: 600_000,
                    exact: None,
                    min_requests: None,
                })
            );
            // Sized later; no clock unless max_duration.
            assert_eq!(
                (c.stages[0].requests, c.stages[0].duration_ns),
                (None, None)
            );
            let off = resolved(r#"{"preset": "mlperf", "mode": "offline"}"#);
            assert!(!off.stream, "offline does not stream");
            assert_eq!(
                off.run_length,
                Some(RunLength::Mlperf {
                    qps: 10.0,
                    qps_default: true,
                    min_duration_ms: 600_000,
                    exact: None,
                    min_requests: None,
                })
            );
        }

        #[test]
        fn explicit_settings_win_over_the_preset() {
            let c = resolved(
                r#"{"preset": "mlperf", "mode": "offline", "rate": 50, "cache_mode": "bust",
                    "order": "sequential", "seed": 7, "scheduler_seed": 1, "dataloader_seed": 2,
                    "max_tokens": 8, "stream": true, "early_stopping": false,
                    "duration": "2s", "max_duration": "30s", "min_requests": 3, "requests": 9}"#,
            );
            assert_eq!(c.cache_mode, CacheMode::Bust);
            assert_eq!(c.order, Order::Sequential);
            assert_eq!((c.scheduler_seed, c.dataloader_seed), (1, 2));
            assert_eq!(c.sampling.seed, Some(7));
            assert_eq!((c.max_tokens, c.stream, c.early_stopping), (8, true, false));
            assert_eq!(
                c.run_length,
                Some(RunLength::Mlperf {
                    qps: 50.0,
                    qps_default: false,
                    min_duration_ms: 2_000,
                    exact: Some(9),
                    min_requests: Some(3),
                })
            );
            assert_eq!(c.stages[0].duration_ns, Some(30_000_000_000));
            // Under the preset `seed` is the sampling seed alone.
            let s = resolved(r#"{"preset": "mlperf", "seed": 7}"#);
            assert_eq!((s.scheduler_seed, s.dataloader_seed), (42, 42));
        }

        #[test]
        fn outside_the_preset_seed_still_seeds_everything() {
            let c = resolved(r#"{"seed": 7}"#);
            assert_eq!((c.scheduler_seed, c.dataloader_seed), (7, 7));
            assert_eq!(c.sampling.seed, Some(7));
            assert_eq!(c.cache_mode, CacheMode::Bust);
            assert_eq!(
                (c.order, c.max_tokens, c.stream),
                (Order::Sequential, 128, true)
            );
            assert_eq!(c.run_length, None);
            let d = resolved("{}");
            assert_eq!(
                (d.scheduler_seed, d.dataloader_seed, d.sampling.seed),
                (0, 0, None)
            );
            let apart = resolved(r#"{"seed": 7, "dataloader_seed": 3}"#);
            assert_eq!((apart.scheduler_seed, apart.dataloader_seed), (7, 3));
        }

        #[test]
        fn minimums_outside_the_preset() {
            let c = resolved(
                r#"{"rate": 100, "min_duration": "2s", "min_requests": 250, "max_duration": "9s"}"#,
            );
            let s = c.sized_stages(Some(100), 100);
            assert_eq!(s.0[0].requests, Some(250));
            assert_eq!(s.0[0].duration_ns, Some(9_000_000_000));
            let closed = resolved(r#"{"concurrency": 4, "min_duration": "2s"}"#);
            let s = closed.sized_stages(None, 10).0;
            assert_eq!((s[0].requests, s[0].min_ns), (Some(0), Some(2_000_000_000)));
            // A cap alone shortens the usual length.
            let capped = resolved(r#"{"max_duration": "3s"}"#);
            assert_eq!(capped.stages[0].duration_ns, Some(3_000_000_000));
            assert_eq!(capped.run_length, None);
        }

        #[test]
        fn contradictions_name_their_field() {
            assert_eq!(
                errors(r#"{"min_requests": 5, "requests": 9}"#),
                [
                    "requests: ends the run, while min_duration/min_requests set a minimum: give one kind (max_duration caps a minimum)"
                ]
            );
            assert_eq!(
                errors(r#"{"preset": "mlperf", "duration": "1s", "min_duration": "2s"}"#),
                [
                    "min_duration: under preset mlperf duration is already a minimum: give one of them"
                ]
            );
            assert_eq!(
                errors(r#"{"preset": "mlperf", "requests": 5, "min_requests": 9}"#),
                ["min_requests: 9 is above requests 5, the exact count"]
            );
            assert_eq!(
                errors(r#"{"preset": "mlperf", "duration": "60s", "max_duration": "10s"}"#),
                ["max_duration: 10s is below the minimum duration 60s"]
            );
            assert_eq!(
                errors(r#"{"preset": "mlperf", "stages": [{"rate": 1, "duration": 1}]}"#),
                ["stages: preset mlperf runs one load phase: give mode/rate/concurrency instead"]
            );
            assert_eq!(
                errors(r#"{"preset": "mlperf", "min_requests": 0}"#),
                ["min_requests: must be at least 1"]
            );
            assert_eq!(
                errors(
                    r#"{"warmup_requests": 5, "stages": [{"rate_from": 1, "rate_to": 5, "duration": 1}]}"#
                ),
                [
                    "warmup_requests: the first stage is a ramp, whose length would depend on when the warm-up ends: use warmup (a time)"
                ]
            );
            // Zero means one pass under the preset; a rate sizes offline runs there only.
            assert!(errors(r#"{"preset": "mlperf", "duration": 0}"#).is_empty());
            assert!(errors(r#"{"preset": "mlperf", "mode": "offline", "rate": 5}"#).is_empty());
            assert_eq!(
                errors(r#"{"mode": "offline", "rate": 5}"#),
                ["rate: applies to modes poisson and uniform, not offline"]
            );
        }
    }
}
