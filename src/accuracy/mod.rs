//! Accuracy runs: what the endpoint answered, scored against a dataset's
//! reference answers with MLPerf's definitions — extractors that pull the
//! answer out of a reply (`extract`), the scorers (`score`, with `rouge`
//! for summaries), the `--accuracy-dataset` argument (`spec`) and the
//! results as the report and MLPerf's `accuracy_results.json` show them
//! (`results`). The phase itself is run by `bench` (`cli::bench::accuracy`):
//! every row once per repeat, in order, one request at a time on one
//! connection.

pub(crate) mod extract;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod results;
pub(crate) mod rouge;
pub(crate) mod score;
pub(crate) mod spec;

pub(crate) use results::{AccuracyReport, DatasetResult};
pub(crate) use spec::AccuracySpec;

crate::choice::choices! {
    /// Which phases a run has (`--phase`, MLPerf's `--mode`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) enum Phase {
        /// The performance phase alone.
        #[default]
        Perf = "perf",
        /// The accuracy datasets alone.
        Acc = "acc",
        /// Performance, then accuracy.
        Both = "both",
    }
}

impl Phase {
    pub(crate) fn runs_perf(self) -> bool {
        self != Phase::Acc
    }

    pub(crate) fn runs_accuracy(self) -> bool {
        self != Phase::Perf
    }
}
