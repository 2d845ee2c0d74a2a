//! The settings of MLPerf's TEST04 output-caching audit, one value whether
//! they come from `llmload audit output-caching`'s flags or from an MLPerf
//! config's `audit:` block, and checked by one rule.

/// The audit's own settings: the MLPerf YAML `audit:` block's fields (but
/// `test` and `only`, which choose whether and what runs).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AuditParams {
    /// Reference-phase queries, each a distinct dataset row.
    pub samples: u64,
    /// Audit-phase queries; `None`: `samples`.
    pub audit_samples: Option<u64>,
    /// The dataset row the audit phase repeats (from 0).
    pub sample_index: u64,
    /// Tolerance of both checks, in (0, 1).
    pub threshold: f64,
}

/// MLPerf's default tolerance.
pub(crate) const DEFAULT_THRESHOLD: f64 = 0.10;

impl AuditParams {
    /// The first bad setting, by field name (`audit_samples`) and why.
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        if self.samples == 0 {
            return Err(("samples", "must be at least 1".into()));
        }
        if self.audit_samples == Some(0) {
            return Err(("audit_samples", "must be at least 1".into()));
        }
        if u32::try_from(self.sample_index).is_err() {
            return Err((
                "sample_index",
                format!("{} is larger than any dataset", self.sample_index),
            ));
        }
        let t = self.threshold;
        if !(t > 0.0 && t < 1.0) {
            return Err((
                "threshold",
                format!("expected more than 0 and less than 1 (0.10 is 10 %), got {t}"),
            ));
        }
        Ok(())
    }

    pub(crate) fn audit_samples(&self) -> u64 {
        self.audit_samples.unwrap_or(self.samples)
    }
}
