//! MLPerf Inference Endpoint's sources at the pinned commit, kept beside
//! the project in `shared/reference/mlperf-endpoints-src/` (above the main
//! checkout or a worktree), or where `LLMLOAD_MLPERF_SRC` says.

use std::path::{Path, PathBuf};

/// The folder, or `None` after saying on stderr why the calling test is
/// skipped.
pub(crate) fn mlperf_src_or_skip() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let given = std::env::var_os("LLMLOAD_MLPERF_SRC").map(PathBuf::from);
    let found = given
        .into_iter()
        .chain(
            here.ancestors()
                .map(|a| a.join("shared/reference/mlperf-endpoints-src")),
        )
        .find(|p| p.join("examples").is_dir() && p.join("docs").is_dir());
    if found.is_none() {
        eprintln!(
            "skipped: MLPerf's sources (the pinned copy of mlcommons/endpoints) are not in \
             shared/reference/mlperf-endpoints-src above this checkout, nor at \
             $LLMLOAD_MLPERF_SRC"
        );
    }
    found
}
