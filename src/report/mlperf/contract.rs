//! MLPerf's metric contract, beside ours: which of a block's series each
//! MLPerf number is read from, and how the report names that choice. Every
//! MLPerf file and section reads the series through these functions only,
//! so a definition changes in one place.

use crate::metrics::block::Block;
use crate::metrics::series::Series;

/// TTFT from issue: first token − t_sched (our `ttft_sched`; our `ttft`
/// starts at the send).
pub(crate) fn ttft(b: &Block) -> &Series {
    &b.ttft_sched
}

/// Latency: completion − issue of every finished request, failures
/// included (our `e2e` counts successes only).
pub(crate) fn latency(b: &Block) -> &Series {
    &b.latency_all
}

/// TPOT. MLPerf's (end of stream − first chunk) over the tokenizer's count
/// of the text after the first chunk is not measured yet, so this is ours,
/// (last token − first token) / (output tokens − 1); `TPOT_CONTRACT` says
/// which one the files hold. Both change together.
pub(crate) fn tpot(b: &Block) -> &Series {
    &b.tpot
}

/// How the report names the TPOT `tpot` returns.
pub(crate) const TPOT_CONTRACT: &str = "llmload's: (last token - first token) / (output tokens - 1), not yet MLPerf's tokenizer count after the first chunk";
