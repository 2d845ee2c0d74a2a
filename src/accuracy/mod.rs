//! Accuracy runs: what the endpoint answered, scored against a dataset's
//! reference answers with MLPerf's definitions — extractors that pull the
//! answer out of a reply (`extract`), and the scorers (`rouge` for
//! summaries; exact and trimmed matches).

pub(crate) mod extract;
pub(crate) mod rouge;
