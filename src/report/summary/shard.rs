//! The summary's account of sharding: what one shard of a run was
//! (`shard`, in every shard's summary) and how a merged run was put
//! together (`merged`, in `llmload merge`'s summary). A merge checks the
//! first to decide which summaries belong to one run; a reader checks the
//! second to know whether the shards' schedules lined up.

use serde::{Deserialize, Serialize};

/// One shard of a run (`--shard I/N` or `--shard auto`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct ShardSummary {
    /// This shard's index, 1..=`count`.
    #[cfg_attr(test, schemars(range(min = 1)))]
    pub index: u32,
    /// Shards in the run.
    #[cfg_attr(test, schemars(range(min = 1)))]
    pub count: u32,
    /// Where index and count came from: `flag`, `profile`, or the
    /// scheduler variable `--shard auto` read (`JOB_COMPLETION_INDEX`,
    /// `SLURM_PROCID`, `OMPI_COMM_WORLD_RANK`, `PMI_RANK`).
    pub source: String,
    /// Identifies the run across its shards: a hash of the configuration
    /// with the per-shard settings (`shard`, `shards`, `out`) left out, and
    /// of `start_at`. Every shard of one run has the same id.
    pub run_id: String,
    /// `--start-at` as given, normalised to RFC 3339 UTC; `None` when the
    /// shard started as soon as it was launched.
    pub start_at: Option<String>,
    /// `--start-at`, Unix ns.
    pub start_at_unix_ns: Option<u64>,
    /// When this shard's schedule actually began (time zero of its
    /// timeline), Unix ns.
    pub started_unix_ns: u64,
    /// `started_unix_ns − start_at_unix_ns`, ns: how late this shard began
    /// (negative would be early, which the wait never is).
    pub start_late_ns: Option<i64>,
    /// The kernel's estimate of this host's clock error (`adjtimex`):
    /// `None` when the clock is not synchronised or it cannot be read.
    pub clock_error_ns: Option<u64>,
    /// The clock is synchronised (NTP/PTP, per the kernel's status).
    pub clock_synced: bool,
    /// The seeds this shard used, derived from the run's seeds and its index.
    pub scheduler_seed: u64,
    pub dataloader_seed: u64,
}

/// A run merged from its shards' summaries (`llmload merge`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct MergedSummary {
    pub run_id: String,
    /// Shards the run was split into.
    #[cfg_attr(test, schemars(range(min = 1)))]
    pub shards: u32,
    /// Indices whose summary was found and merged, ascending.
    pub merged: Vec<u32>,
    /// Indices with no summary.
    pub missing: Vec<u32>,
    /// Indices whose summary says the shard did not complete.
    pub incomplete: Vec<u32>,
    /// Indices left out: their state contradicts itself (the reasons say
    /// where).
    pub inconsistent: Vec<u32>,
    /// Every shard waited for the same `--start-at`.
    pub aligned: bool,
    /// The common `--start-at`, when aligned.
    pub start_at: Option<String>,
    /// Latest shard start minus earliest, ns.
    pub start_skew_ns: u64,
    /// Largest clock error any shard's kernel estimated, ns (`None` when no
    /// shard could say).
    pub max_clock_error_ns: Option<u64>,
    /// Each merged shard's results directory, by index.
    pub sources: Vec<MergedSource>,
}

/// One merged shard.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct MergedSource {
    pub index: u32,
    pub dir: String,
    pub started_unix_ns: u64,
    pub complete: bool,
}
