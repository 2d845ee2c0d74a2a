//! The `audit:` block (MLPerf's TEST04 output-caching audit), read and
//! checked here and handed to whoever runs it.

use serde_json::Value;

use super::tree::{Errors, Section};
use crate::config::audit::{AuditParams, DEFAULT_THRESHOLD};

/// An `audit:` block, validated as MLPerf validates it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AuditBlock {
    /// Always `output_caching_test`, the one audit MLPerf defines.
    pub test: String,
    /// Run only the audit, not the benchmark before it.
    pub only: bool,
    pub params: AuditParams,
}

pub(super) fn read_audit(v: Value, errs: &Errors) -> Option<AuditBlock> {
    let mut s = Section::new(Some(v), "audit".into(), errs);
    let test = match s.string("test").as_deref() {
        Some("output_caching_test") => Some("output_caching_test".to_string()),
        Some(other) => {
            errs.at(
                "audit.test",
                format!("'{other}': expected output_caching_test"),
            );
            None
        }
        None => {
            errs.at("audit.test", "required: output_caching_test");
            None
        }
    };
    let only = s.bool("only").unwrap_or(false);
    let given = s.present("samples");
    let samples = s.int("samples", 1);
    if !given {
        errs.at(
            "audit.samples",
            "required: the reference phase's request count",
        );
    }
    let audit_samples = s.int("audit_samples", 1).map(|n| n as u64);
    let sample_index = s.int("sample_index", 0).unwrap_or(0) as u64;
    let threshold = s.f64("threshold");
    s.finish();
    let params = AuditParams {
        samples: samples.map_or(1, |n| n as u64),
        audit_samples,
        sample_index,
        threshold: threshold.unwrap_or(DEFAULT_THRESHOLD),
    };
    if let Err((field, why)) = params.check() {
        errs.at(&format!("audit.{field}"), why);
    }
    samples?;
    Some(AuditBlock {
        test: test?,
        only,
        params,
    })
}
