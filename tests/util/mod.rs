//! Helpers, each written once: start `llmload serve`, run `llmload` and
//! read its summary, all with hard time limits so a hung process fails a
//! test instead of CI; watch and signal the processes a test started; and
//! keep the tests that start processes from overlapping (`serial`).

#[cfg(feature = "columnar")]
pub(crate) mod columnar;
mod limits;
mod mlperf_src;
mod net;
mod proc;
mod run;
mod serial;
mod serve;
mod shards;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) use limits::*;
pub(crate) use mlperf_src::*;
pub(crate) use net::*;
pub(crate) use proc::*;
pub(crate) use run::*;
pub(crate) use serial::*;
pub(crate) use serve::*;
pub(crate) use shards::*;

/// The binary under test. A test that starts it runs alone (`serial`).
pub(crate) fn bin() -> &'static str {
    serial();
    env!("CARGO_BIN_EXE_llmload")
}

/// A fresh, empty directory under the system temp dir. A test that makes
/// one runs alone (`serial`): it is about to run something that writes.
pub(crate) fn temp_dir(tag: &str) -> PathBuf {
    serial();
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "llmload-it-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Reads a file, or "" when it does not exist.
pub(crate) fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

pub(crate) fn u(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

pub(crate) fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// issued == completed + failed, and the errors add up to failed.
pub(crate) fn assert_accounted(requests: &serde_json::Value) {
    let issued = u(&requests["issued"]);
    let completed = u(&requests["completed"]);
    let failed = u(&requests["failed"]);
    assert_eq!(issued, completed + failed, "{requests}");
    let errors: u64 = requests["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(u)
        .sum();
    assert_eq!(errors, failed, "{requests}");
}
