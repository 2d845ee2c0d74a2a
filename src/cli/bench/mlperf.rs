//! What MLPerf mode's result files need from the configuration: the
//! `run_config` block (load pattern, warm-up, seeds) and whether QPS is
//! read over LoadGen's window (poisson, as MLPerf's
//! `use_legacy_loadgen_qps_metrics` defaults).

use crate::config::BenchConfig;
use crate::plan::{ArrivalKind, Load};
use crate::report::events::SampleRow;
use crate::report::mlperf::{LoadPattern, MlperfInfo, RunConfig, WarmupConfig};

/// The MLPerf files' inputs for a run of `cfg` started at `started_ns`
/// (CLOCK_MONOTONIC) whose measured requests were `sample_rows`.
pub(super) fn info(cfg: &BenchConfig, started_ns: u64, sample_rows: Vec<SampleRow>) -> MlperfInfo {
    let scheduler_seed = cfg.scheduler_seed;
    let warmup_requests = (cfg.warmup_requests > 0).then_some(cfg.warmup_requests);
    MlperfInfo {
        run_config: RunConfig {
            load_pattern: cfg
                .stages
                .first()
                .map(|s| LoadPattern::of(&s.load))
                .unwrap_or_default()
                .with_legacy_qps(cfg.profile.mlperf.legacy_qps),
            warmup: WarmupConfig {
                enabled: cfg.warmup_ns > 0 || warmup_requests.is_some_and(|n| n > 0),
                n_requests: warmup_requests,
                salt: false,
                drain: false,
                warmup_random_seed: cfg.mlperf_warmup_seed(),
            },
            scheduler_random_seed: scheduler_seed,
            dataloader_random_seed: cfg.dataloader_seed,
        },
        // MLPerf's `use_legacy_loadgen_qps_metrics: false` asks for its
        // native completed/duration QPS.
        legacy_window: cfg.profile.mlperf.legacy_qps != Some(false)
            && !cfg.stages.is_empty()
            && cfg.stages.iter().all(|s| {
                matches!(
                    s.load,
                    Load::Open {
                        kind: ArrivalKind::Poisson,
                        ..
                    }
                )
            }),
        early_stopping: cfg.early_stopping,
        test_started_at: started_ns,
        streaming: cfg.stream,
        tokenizer: cfg.tokenizer.is_some(),
        sample_rows,
        performance: true,
        accuracy_rows: Vec::new(),
    }
}
