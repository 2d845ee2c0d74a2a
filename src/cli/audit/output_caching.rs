//! MLPerf TEST04, the output-caching audit: a reference phase of distinct
//! dataset rows, then an audit phase that sends one row over and over. An
//! endpoint that caches answers serves the repeats faster, so the audit
//! phase's QPS rises above the reference's; past the threshold, the audit
//! fails. Each phase is an ordinary bench run (same execution path, same
//! files, in its own directory); only the pass rule (`verdict`) is the
//! audit's own.
//!
//! Every setting is checked before the first request: the load shape (the
//! QPS must be the endpoint's own, so offline or concurrency), prompts left
//! untouched (a cache-busting prefix would make every repeat distinct), a
//! reference no longer than the dataset and a row that exists.

use std::cell::Cell;
use std::path::Path;

use crate::cli::bench::{self, Outcome, Ran};
use crate::cli::{errln, outln};
use crate::config::BenchConfig;
use crate::config::profile::{CacheMode, Profile};
use crate::config::run_length::RunLength;
use crate::plan::Load;
use crate::report::atomic;

use super::verdict::{self, PhaseStats, Record, Verdict};
pub(crate) use crate::config::audit::{AuditParams, DEFAULT_THRESHOLD};

/// How the audit ended, as its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum AuditStatus {
    Passed = 0,
    Failed = 1,
    /// A setting the audit cannot run with (a flag, a profile field, the
    /// dataset too short for it).
    Usage = 2,
    /// A phase could not run or did not finish cleanly: no verdict is drawn
    /// from partial data.
    NoVerdict = 3,
    /// The verdict was reached but its files could not be written.
    Unwritten = 4,
    Interrupted = 130,
}

/// One phase: MLPerf's label (also its directory under `audit/`) and its
/// resolved run.
struct Phase {
    label: &'static str,
    requested: u64,
    cfg: BenchConfig,
}

/// Runs the output-caching audit on `base` (a run profile: endpoint, model,
/// API, dataset, load shape, TLS; `origin` names the file it came from, ""
/// for flags) and writes its verdict under `base.out`'s `audit/` (default
/// `results/<UTC timestamp>/audit/`). The run length of `base` is replaced
/// by each phase's count. Returns the exit status: 0 pass, 1 fail, 2 a
/// setting it cannot run with, 3 no verdict, 4 verdict not written, 130
/// interrupted. Settings errors name `audit.FIELD` as the YAML block does;
/// a command line checks `params` first to name its flags.
pub(crate) fn run_output_caching(base: Profile, origin: &str, params: &AuditParams) -> i32 {
    const WHO: &str = "llmload audit output-caching";
    if let Err((field, why)) = params.check() {
        errln!("{WHO}: audit.{field}: {why}");
        return AuditStatus::Usage as i32;
    }
    let fd_limit = crate::sys::process::raise_fd_limit();
    let report_dir = base
        .out
        .clone()
        .unwrap_or_else(|| bench::default_out_dir(crate::clock::wall_ns()));
    let dir = report_dir.join("audit");
    let phases = match plan(&base, origin, params, &dir, fd_limit) {
        Ok(p) => p,
        Err(e) => {
            errln!("{WHO}: {e}");
            return AuditStatus::Usage as i32;
        }
    };
    let (samples, index) = (params.samples, params.sample_index);
    // MLPerf checks both phases against the dataset as loaded, before any
    // phase sends a query; the reference loads it first.
    let refused = Cell::new(false);
    let fits = |rows: usize| -> Result<(), String> {
        let rows = rows as u64;
        let why = if samples > rows {
            format!(
                "--samples {samples}: the dataset has {rows} rows; a reference of distinct rows cannot be longer"
            )
        } else if index >= rows {
            format!(
                "--sample-index {index}: the dataset has {rows} rows (0 to {})",
                rows - 1
            )
        } else {
            return Ok(());
        };
        refused.set(true);
        Err(why)
    };
    let mut stats = Vec::with_capacity(2);
    for (i, phase) in phases.iter().enumerate() {
        errln!(
            "{WHO}: {} phase: {} → {}",
            phase.label,
            if i == 0 {
                format!("{} distinct rows ({})", phase.requested, phase.cfg.order)
            } else {
                format!("row {index} sent {} times", phase.requested)
            },
            dir.join(phase.label).display()
        );
        let check: bench::SamplesCheck<'_> = if i == 0 { &fits } else { &|_| Ok(()) };
        let ran = match bench::run_config(&phase.cfg, fd_limit, check) {
            Ok(r) => r,
            Err(e) if refused.get() => {
                errln!("{WHO}: {e}");
                return AuditStatus::Usage as i32;
            }
            Err(e) => {
                errln!("{WHO}: {} phase: {e}", phase.label);
                return AuditStatus::NoVerdict as i32;
            }
        };
        match finished(&ran, phase) {
            Ok(s) => stats.push(s),
            Err((status, why)) => {
                errln!("{WHO}: {} phase: {why}; no verdict", phase.label);
                return status as i32;
            }
        }
    }
    let (reference, audit) = (stats[0], stats[1]);
    let verdict = verdict::verify(reference, audit, params.threshold);
    let record = Record::new(reference, audit, params.threshold, &verdict);
    print_verdict(reference, audit, index, &verdict);
    if let Err(e) = write_files(&dir, &record) {
        errln!("{WHO}: could not write {e}");
        return AuditStatus::Unwritten as i32;
    }
    outln!("results: {}", dir.display());
    if verdict.passed {
        AuditStatus::Passed as i32
    } else {
        AuditStatus::Failed as i32
    }
}

/// Both phases, resolved and checked: errors say which setting, and come
/// before anything is sent.
fn plan(
    base: &Profile,
    origin: &str,
    params: &AuditParams,
    dir: &Path,
    fd_limit: u64,
) -> Result<[Phase; 2], String> {
    if base.stages.is_some() {
        return Err(
            "stages: the audit runs one stage per phase; give the load shape with --mode (offline or concurrency)"
                .into(),
        );
    }
    if base.scenarios.is_some() {
        return Err("scenarios: the audit sends one dataset; leave scenarios out".into());
    }
    if let Some(c) = base.cache_mode.as_deref()
        && c != CacheMode::Natural.name()
    {
        return Err(format!(
            "--cache-mode {c}: the audit sends prompts untouched (natural); a cache-busting prefix would make every repeat distinct"
        ));
    }
    let reference_order = match base.order.as_deref() {
        None | Some("shuffle") => "shuffle",
        Some("sequential") => "sequential",
        Some(o) => {
            return Err(format!(
                "--order {o}: the reference phase sends distinct rows; use shuffle (MLPerf's) or sequential"
            ));
        }
    };
    let phase = |label: &'static str, requested: u64, order: String| -> Result<Phase, String> {
        let mut p = base.clone();
        p.requests = Some(requested);
        p.duration = None;
        // The count is exact either way; under MLPerf's rules the config's
        // minimum stays, so a cap is checked against it as MLPerf checks it
        // (not against the 600 s default).
        p.min_duration = match base.preset.as_deref() {
            Some("mlperf") => base.min_duration.or(base.duration),
            _ => None,
        };
        p.min_requests = None;
        p.order = Some(order);
        p.cache_mode = Some(CacheMode::Natural.name().to_string());
        p.out = Some(dir.join(label));
        let cfg = bench::configure_profile(p, origin, fd_limit)?;
        check_shape(&cfg, requested)?;
        Ok(Phase {
            label,
            requested,
            cfg,
        })
    };
    Ok([
        phase("reference", params.samples, reference_order.to_string())?,
        phase(
            "output_caching",
            params.audit_samples(),
            format!("single:{}", params.sample_index),
        )?,
    ])
}

/// The resolved phase is the audit's: one stage of exactly `requested`
/// queries, offline or concurrency, one single-turn scenario, prompts
/// untouched.
fn check_shape(cfg: &BenchConfig, requested: u64) -> Result<(), String> {
    let [stage] = cfg.stages.as_slice() else {
        return Err("stages: the audit runs one stage per phase".into());
    };
    if let Load::Open { kind, .. } = stage.load {
        return Err(format!(
            "--mode {}: the output-caching audit needs offline or concurrency, where the QPS reached is the endpoint's own; a paced arrival rate would hide a caching speedup",
            kind.name()
        ));
    }
    // Under preset mlperf the stage is sized once the dataset is loaded, by
    // the exact count the phase set.
    let count = match &cfg.run_length {
        None => stage.requests,
        Some(RunLength::Mlperf { exact, .. }) => *exact,
        Some(RunLength::AtLeast { .. }) => None,
    };
    // A max_duration caps the phase, as it caps MLPerf's.
    let cap = cfg.profile.max_duration.map(|d| d.0.as_nanos() as u64);
    if count != Some(requested) || stage.duration_ns.is_some_and(|d| Some(d) != cap) {
        return Err(format!(
            "the phase must send exactly {requested} requests, but its run length resolved otherwise (a preset or profile that sets it?)"
        ));
    }
    let [sc] = cfg.scenarios.as_slice() else {
        return Err("scenarios: the audit sends one dataset".into());
    };
    if sc.turns.max > 1 {
        return Err("turns: the audit sends single-turn requests".into());
    }
    if sc.cache_mode != CacheMode::Natural {
        return Err("cache_mode: the audit sends prompts untouched (natural)".into());
    }
    Ok(())
}

/// A finished phase's stats, or why no verdict can be drawn from it.
fn finished(ran: &Ran, phase: &Phase) -> Result<PhaseStats, (AuditStatus, String)> {
    match ran.outcome {
        Outcome::Interrupted => {
            return Err((AuditStatus::Interrupted, "interrupted".into()));
        }
        Outcome::Incomplete => {
            return Err((AuditStatus::NoVerdict, "the phase is incomplete".into()));
        }
        Outcome::Unwritten => {
            // Its numbers are whole; only its own files are missing.
            errln!(
                "llmload audit output-caching: {} phase: some of its files could not be written",
                phase.label
            );
        }
        Outcome::Passed | Outcome::Failed | Outcome::ThresholdFailed => {}
    }
    if ran.result.total.completed == 0 {
        return Err((AuditStatus::NoVerdict, "no request succeeded".into()));
    }
    PhaseStats::of(&ran.result, phase.requested)
        .ok_or((AuditStatus::NoVerdict, "no measured window".into()))
}

/// The short verdict on stdout.
fn print_verdict(reference: PhaseStats, audit: PhaseStats, index: u64, v: &Verdict) {
    outln!(
        "output caching (MLPerf TEST04): {}",
        if v.passed { "PASS" } else { "FAIL" }
    );
    outln!(
        "  reference       {}/{} completed, {:.4} QPS (distinct rows)",
        reference.completed,
        reference.requested,
        reference.qps
    );
    outln!(
        "  output_caching  {}/{} completed, {:.4} QPS (row {index} repeated)",
        audit.completed,
        audit.requested,
        audit.qps
    );
    outln!("  {}", v.reason);
}

/// The JSON record, then the validator's marker, each atomically: a crash
/// between them never leaves a marker without its record.
fn write_files(dir: &Path, record: &Record<'_>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    atomic::write(&dir.join(verdict::json_name()), record.json().as_bytes())?;
    let marker = dir.join(verdict::verify_name());
    atomic::write(&marker, verdict::verify_text(record.passed).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> AuditParams {
        AuditParams {
            samples: 10,
            audit_samples: None,
            sample_index: 0,
            threshold: DEFAULT_THRESHOLD,
        }
    }

    #[test]
    fn params_are_checked_by_field() {
        assert_eq!(params().check(), Ok(()));
        assert_eq!(params().audit_samples(), 10);
        let bad = |p: AuditParams| p.check().unwrap_err().0;
        assert_eq!(
            bad(AuditParams {
                samples: 0,
                ..params()
            }),
            "samples"
        );
        assert_eq!(
            bad(AuditParams {
                audit_samples: Some(0),
                ..params()
            }),
            "audit_samples"
        );
        assert_eq!(
            bad(AuditParams {
                sample_index: u64::from(u32::MAX) + 1,
                ..params()
            }),
            "sample_index"
        );
        for t in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            assert_eq!(
                bad(AuditParams {
                    threshold: t,
                    ..params()
                }),
                "threshold",
                "{t}"
            );
        }
    }

    fn planned(base: Profile) -> Result<[Phase; 2], String> {
        let dir = Path::new("/nonexistent/audit");
        plan(&base, "", &params(), dir, 1 << 20)
    }

    #[test]
    fn phases_send_counts_with_prompts_untouched() {
        let base = Profile {
            mode: Some("offline".into()),
            duration: Some(crate::config::profile::HumanDuration(
                std::time::Duration::from_secs(60),
            )),
            ..Profile::default()
        };
        let [r, a] = planned(base).unwrap();
        assert_eq!((r.label, a.label), ("reference", "output_caching"));
        assert_eq!(r.cfg.stages[0].requests, Some(10));
        assert_eq!(r.cfg.stages[0].duration_ns, None);
        assert_eq!(r.cfg.order, crate::dataset::Order::Shuffle);
        assert_eq!(a.cfg.order, crate::dataset::Order::Single(0));
        for p in [&r, &a] {
            assert_eq!(p.cfg.scenarios[0].cache_mode, CacheMode::Natural);
        }
        assert_eq!(
            r.cfg.out.as_deref(),
            Some(Path::new("/nonexistent/audit/reference"))
        );
        let seq = Profile {
            order: Some("sequential".into()),
            ..Profile::default()
        };
        let [r, _] = planned(seq).unwrap();
        assert_eq!(r.cfg.order, crate::dataset::Order::Sequential);
        assert!(matches!(r.cfg.stages[0].load, Load::Closed { .. }));
    }

    #[test]
    fn an_mlperf_cap_is_checked_against_the_configs_minimum() {
        let secs = |s| {
            Some(crate::config::profile::HumanDuration(
                std::time::Duration::from_secs(s),
            ))
        };
        let base = Profile {
            preset: Some("mlperf".into()),
            mode: Some("offline".into()),
            min_duration: secs(6),
            max_duration: secs(20),
            ..Profile::default()
        };
        // Sized by the exact count once the dataset is loaded, capped at 20 s.
        let [r, a] = planned(base.clone()).unwrap();
        for p in [&r, &a] {
            assert_eq!(p.cfg.stages[0].duration_ns, Some(20_000_000_000));
        }
        // Below the config's own minimum it is refused, as MLPerf refuses it.
        let e = match planned(Profile {
            max_duration: secs(3),
            ..base
        }) {
            Ok(_) => panic!("accepted"),
            Err(e) => e,
        };
        assert!(e.contains("3s is below the minimum duration 6s"), "{e}");
    }

    #[test]
    fn settings_the_audit_cannot_run_with_are_named() {
        let err = |p: Profile| match planned(p) {
            Ok(_) => panic!("accepted"),
            Err(e) => e,
        };
        let e = err(Profile {
            rate: Some(5.0),
            ..Profile::default()
        });
        assert!(e.starts_with("--mode poisson: "), "{e}");
        let e = err(Profile {
            mode: Some("uniform".into()),
            rate: Some(5.0),
            ..Profile::default()
        });
        assert!(e.starts_with("--mode uniform: "), "{e}");
        let e = err(Profile {
            cache_mode: Some("bust".into()),
            ..Profile::default()
        });
        assert!(e.starts_with("--cache-mode bust: "), "{e}");
        let e = err(Profile {
            order: Some("random".into()),
            ..Profile::default()
        });
        assert!(e.starts_with("--order random: "), "{e}");
    }
}
