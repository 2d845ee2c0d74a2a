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

/// Which phases a run has (`--phase`, MLPerf's `--mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The performance phase alone.
    #[default]
    Perf,
    /// The accuracy datasets alone.
    Acc,
    /// Performance, then accuracy.
    Both,
}

impl Phase {
    pub(crate) fn parse(s: &str) -> Result<Phase, String> {
        match s {
            "perf" => Ok(Phase::Perf),
            "acc" => Ok(Phase::Acc),
            "both" => Ok(Phase::Both),
            _ => Err(format!("--phase '{s}': expected perf, acc or both")),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Perf => "perf",
            Phase::Acc => "acc",
            Phase::Both => "both",
        }
    }

    pub(crate) fn runs_perf(self) -> bool {
        self != Phase::Acc
    }

    pub(crate) fn runs_accuracy(self) -> bool {
        self != Phase::Perf
    }
}
