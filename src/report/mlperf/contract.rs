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

/// TPOT. MLPerf's, (end of stream − first chunk) over the tokenizer's
/// count of the text after the first chunk, when a tokenizer measured it;
/// without one MLPerf has no TPOT at all, and the submission tooling reads a
/// missing TPOT as a broken run, so ours stands in, (last token − first
/// token) / (output tokens − 1), and `tpot_contract` says so.
pub(crate) fn tpot(b: &Block) -> &Series {
    if b.tpot_mlperf.count() > 0 {
        &b.tpot_mlperf
    } else {
        &b.tpot
    }
}

/// How the report names the TPOT `tpot` returns.
pub(crate) fn tpot_contract(b: &Block) -> &'static str {
    if b.tpot_mlperf.count() > 0 {
        "MLPerf's: (end of stream - first chunk) / tokenizer tokens after the first chunk"
    } else {
        "llmload's: (last token - first token) / (output tokens - 1); MLPerf's needs --tokenizer and streaming"
    }
}
