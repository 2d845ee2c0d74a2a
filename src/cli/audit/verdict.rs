//! The output-caching audit's pass rule and its two result files, pure: the
//! phases' numbers in, MLPerf's verdict, reason and file contents out. The
//! rule and every spelling follow MLPerf's `output_caching_test.py` and
//! `compliance/result.py`, so its submission checker reads our files.

use serde::Serialize;

use crate::metrics::errors::ErrorClass;
use crate::metrics::run::RunResult;

/// MLPerf's name of the test, in the JSON record and both file names.
pub(crate) const TEST_ID: &str = "output_caching_test";

/// One phase's throughput as MLPerf's audit compares it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PhaseStats {
    /// Completed queries per second over the measured window.
    pub qps: f64,
    /// Queries that came back, failed ones included (MLPerf's
    /// `n_samples_completed` counts every query that completed, answered
    /// or not); not those aborted at the end or lost with a worker, which
    /// never completed.
    pub completed: u64,
    /// Queries the phase was asked to send.
    pub requested: u64,
}

impl PhaseStats {
    /// A finished phase's stats, as MLPerf's report computes them when no
    /// LoadGen window applies (offline and concurrency): completed over the
    /// measured window. `None` when the phase has no window or completed
    /// nothing, where no comparison is possible.
    pub(crate) fn of(run: &RunResult, requested: u64) -> Option<PhaseStats> {
        let t = &run.total;
        let never_completed =
            t.errors.get(ErrorClass::Aborted) + t.errors.get(ErrorClass::WorkerLost);
        let completed = (t.completed + t.failed).saturating_sub(never_completed);
        if completed == 0 || run.total_window_ns == 0 {
            return None;
        }
        Some(PhaseStats {
            qps: completed as f64 / (run.total_window_ns as f64 / 1e9),
            completed,
            requested,
        })
    }
}

/// The audit's outcome and why.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Verdict {
    pub passed: bool,
    pub reason: String,
}

/// MLPerf TEST04: both phases completed at least `1 − threshold` of their
/// queries, and the audit phase (one row repeated) was not faster than
/// `threshold` above the reference (distinct rows). The comparison is
/// strict, as upstream's `verify_performance.py`: on the boundary fails.
pub(crate) fn verify(reference: PhaseStats, audit: PhaseStats, threshold: f64) -> Verdict {
    let min_completion = 1.0 - threshold;
    let complete = |p: PhaseStats| p.completed as f64 >= p.requested as f64 * min_completion;
    if !complete(reference) || !complete(audit) {
        return Verdict {
            passed: false,
            reason: format!(
                "Phase incomplete: reference {}/{}, audit {}/{} (threshold {})",
                reference.completed,
                reference.requested,
                audit.completed,
                audit.requested,
                percent(threshold)
            ),
        };
    }
    let limit = reference.qps * (1.0 + threshold);
    let passed = audit.qps < limit;
    Verdict {
        passed,
        reason: format!(
            "audit_qps={:.4} {} ref_qps * (1 + {}) = {limit:.4}",
            audit.qps,
            if passed { "<" } else { ">=" },
            percent(threshold)
        ),
    }
}

/// Python's `{x:.0%}`: times 100, rounded half to even on the binary value.
fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// `audit_output_caching_test.json`, key for key and in MLPerf's order.
#[derive(Debug, Serialize)]
pub(crate) struct Record<'a> {
    pub test: &'static str,
    pub passed: bool,
    pub ref_qps: f64,
    pub audit_qps: f64,
    pub threshold: f64,
    pub ref_completed: u64,
    pub ref_requested: u64,
    pub audit_completed: u64,
    pub audit_requested: u64,
    pub reason: &'a str,
}

impl Record<'_> {
    pub(crate) fn new<'a>(
        reference: PhaseStats,
        audit: PhaseStats,
        threshold: f64,
        verdict: &'a Verdict,
    ) -> Record<'a> {
        Record {
            test: TEST_ID,
            passed: verdict.passed,
            ref_qps: reference.qps,
            audit_qps: audit.qps,
            threshold,
            ref_completed: reference.completed,
            ref_requested: reference.requested,
            audit_completed: audit.completed,
            audit_requested: audit.requested,
            reason: &verdict.reason,
        }
    }

    /// The JSON file's text: two-space indents and a final newline, as
    /// Python's `json.dumps(…, indent=2) + "\n"` writes it.
    pub(crate) fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a flat record serializes");
        s.push('\n');
        s
    }
}

/// The JSON record's file name.
pub(crate) fn json_name() -> String {
    format!("audit_{TEST_ID}.json")
}

/// The validator's marker file's name.
pub(crate) fn verify_name() -> String {
    format!("verify_{}.txt", TEST_ID.to_ascii_uppercase())
}

/// The validator's marker file's text (Python's `True`/`False`).
pub(crate) fn verify_text(passed: bool) -> String {
    format!(
        "Performance check pass: {}\n",
        if passed { "True" } else { "False" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(qps: f64, completed: u64, requested: u64) -> PhaseStats {
        PhaseStats {
            qps,
            completed,
            requested,
        }
    }

    #[test]
    fn a_repeat_no_faster_than_the_reference_passes() {
        let v = verify(phase(10.0, 64, 64), phase(10.5, 64, 64), 0.10);
        assert!(v.passed);
        assert_eq!(
            v.reason,
            "audit_qps=10.5000 < ref_qps * (1 + 10%) = 11.0000"
        );
        // Slower is fine too.
        assert!(verify(phase(10.0, 64, 64), phase(2.0, 64, 64), 0.10).passed);
    }

    #[test]
    fn a_cached_repeat_fails_and_the_boundary_fails() {
        let v = verify(phase(10.0, 64, 64), phase(50.0, 64, 64), 0.10);
        assert!(!v.passed);
        assert_eq!(
            v.reason,
            "audit_qps=50.0000 >= ref_qps * (1 + 10%) = 11.0000"
        );
        // Exactly on the limit is not below it (strict, as upstream).
        let limit = 8.0 * (1.0 + 0.25);
        assert!(!verify(phase(8.0, 4, 4), phase(limit, 4, 4), 0.25).passed);
        assert!(verify(phase(8.0, 4, 4), phase(9.999, 4, 4), 0.25).passed);
    }

    #[test]
    fn an_incomplete_phase_fails_whatever_the_speeds() {
        // 90 % of 100 is the least that counts as complete at 10 %.
        assert!(verify(phase(10.0, 90, 100), phase(10.0, 90, 100), 0.10).passed);
        let v = verify(phase(10.0, 89, 100), phase(1.0, 100, 100), 0.10);
        assert!(!v.passed);
        assert_eq!(
            v.reason,
            "Phase incomplete: reference 89/100, audit 100/100 (threshold 10%)"
        );
        let v = verify(phase(10.0, 100, 100), phase(1.0, 79, 100), 0.2);
        assert!(!v.passed);
        assert!(
            v.reason.ends_with("audit 79/100 (threshold 20%)"),
            "{}",
            v.reason
        );
    }

    #[test]
    fn percentages_round_as_python_does() {
        assert_eq!(percent(0.1), "10%");
        assert_eq!(percent(0.125), "12%");
        assert_eq!(percent(0.025), "2%");
        assert_eq!(percent(0.35), "35%");
    }

    #[test]
    fn the_files_are_spelled_as_mlperf_writes_them() {
        assert_eq!(json_name(), "audit_output_caching_test.json");
        assert_eq!(verify_name(), "verify_OUTPUT_CACHING_TEST.txt");
        assert_eq!(verify_text(true), "Performance check pass: True\n");
        assert_eq!(verify_text(false), "Performance check pass: False\n");
        let (r, a) = (phase(1.234, 64, 64), phase(1.201, 64, 64));
        let v = verify(r, a, 0.1);
        let json = Record::new(r, a, 0.1, &v).json();
        assert_eq!(
            json,
            r#"{
  "test": "output_caching_test",
  "passed": true,
  "ref_qps": 1.234,
  "audit_qps": 1.201,
  "threshold": 0.1,
  "ref_completed": 64,
  "ref_requested": 64,
  "audit_completed": 64,
  "audit_requested": 64,
  "reason": "audit_qps=1.2010 < ref_qps * (1 + 10%) = 1.3574"
}
"#
        );
    }

    #[test]
    fn stats_count_failures_as_completed_over_the_window() {
        let mut run = RunResult {
            total_window_ns: 2_000_000_000,
            ..Default::default()
        };
        assert_eq!(PhaseStats::of(&run, 10), None, "nothing completed");
        run.total.completed = 7;
        run.total.failed = 1;
        assert_eq!(PhaseStats::of(&run, 10), Some(phase(4.0, 8, 10)));
        // Two aborted at the end, one lost with a worker: never completed.
        run.total.failed = 4;
        run.total.errors.add(ErrorClass::Aborted, 0, 2);
        run.total.errors.add(ErrorClass::WorkerLost, 0, 1);
        run.total.errors.add(ErrorClass::Reset, 0, 1);
        assert_eq!(PhaseStats::of(&run, 10), Some(phase(4.0, 8, 10)));
        run.total_window_ns = 0;
        assert_eq!(PhaseStats::of(&run, 10), None, "no window");
    }
}
