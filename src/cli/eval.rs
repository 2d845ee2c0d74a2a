//! `llmload eval`: MLPerf's `eval` command, which its CLI declares and
//! does not implement (it always fails with exit status 1). It answers as
//! MLPerf's does, and says where llmload's accuracy runs are.

use argh::FromArgs;

use crate::cli::{errln, mlperf_status};

/// MLPerf's accuracy evaluation command, not implemented (as in MLPerf): use benchmark --mode acc.
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "eval",
    note = "MLPerf's arguments (ENDPOINTS, --dataset, --api-key, --output, --judge) are taken and not read.",
    error_code(1, "always: accuracy evaluation is not implemented as a command")
)]
pub(crate) struct EvalArgs {}

/// Refuses, as MLPerf's `eval` does; returns its exit status (1).
pub(crate) fn run(_args: EvalArgs) -> i32 {
    errln!(
        "llmload eval: Accuracy evaluation is not yet implemented (as in MLPerf's inference-endpoint). \
         Accuracy datasets run with: llmload benchmark offline|online|from-config ... --mode acc|both"
    );
    mlperf_status::FAILED
}
