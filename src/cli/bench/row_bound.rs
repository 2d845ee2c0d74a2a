//! How many dataset rows a run can use, so a file of a million rows is not
//! read and serialized whole for `--requests 1`. Reading stops early only
//! where that changes no request: the order must pick rows from a prefix
//! of the file that the run's count bounds — sequential order (row j for
//! the j-th draw, each shard's rows `index + count·j`) or `single:I` — and
//! the count must be known before loading. A shuffle or random order draws
//! over every row (the row count is part of the permutation), a run sized
//! by MLPerf's rule rounds to whole passes over the file, a stage bounded
//! only by time or a warm-up by time has no count, and a multi-turn
//! scenario draws its turns at random: those read the whole file.

use crate::config::BenchConfig;
use crate::dataset::Order;

/// The rows a run can use, and why, for the report's notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RowBound {
    pub rows: u64,
    pub why: String,
}

/// The bound on rows read for `cfg`'s run, or `None` when it may use
/// any row of the file.
pub(super) fn rows_needed(cfg: &BenchConfig) -> Option<RowBound> {
    if let Order::Single(i) = cfg.order {
        return Some(RowBound {
            rows: u64::from(i) + 1,
            why: format!("--order single:{i} sends row {i} only"),
        });
    }
    if cfg.order != Order::Sequential || cfg.run_length.is_some() || cfg.warmup_ns > 0 {
        return None;
    }
    let (index, count) = cfg
        .shard
        .as_ref()
        .map_or((1, 1), |s| (s.index, s.count.max(1)));
    let share = |n: u64| crate::shard::share(n, index, count);
    // Each request draws one row; after a warm-up by count the order
    // starts again from the first row, so adding the two over-counts.
    let (mut draws, mut total) = (share(cfg.warmup_requests), cfg.warmup_requests);
    for stage in &cfg.stages {
        let n = stage.requests?;
        draws = draws.checked_add(share(n))?;
        total = total.checked_add(n)?;
    }
    let rows = draws.checked_mul(u64::from(count))?.max(1);
    Some(RowBound {
        rows,
        why: format!("{total} request(s) in sequential order use at most the first {rows} row(s)"),
    })
}

#[cfg(test)]
mod tests {
    use argh::FromArgs;

    use super::*;
    use crate::cli::bench::{BenchArgs, configure};

    fn cfg(args: &[&str]) -> BenchConfig {
        let mut all = vec!["--endpoint", "http://127.0.0.1:9/v1/chat/completions"];
        all.extend_from_slice(args);
        let args = BenchArgs::from_args(&["llmload", "bench"], &all).unwrap();
        configure(&args, 1 << 16).unwrap()
    }

    #[test]
    fn bounded_only_when_the_count_fixes_the_rows() {
        let rows = |args: &[&str]| rows_needed(&cfg(args)).map(|b| b.rows);
        assert_eq!(rows(&["--requests", "1"]), Some(1));
        assert_eq!(
            rows(&["--requests", "10", "--warmup-requests", "5"]),
            Some(15)
        );
        assert_eq!(rows(&["--requests", "10", "--order", "single:7"]), Some(8));
        assert_eq!(rows(&["--duration", "5s", "--order", "single:0"]), Some(1));
        // Shard 2 of 3 of 10 requests sends 3 of them, from rows 1, 4, 7.
        assert_eq!(rows(&["--requests", "10", "--shard", "2/3"]), Some(9));
        assert_eq!(rows(&["--requests", "10", "--order", "shuffle"]), None);
        assert_eq!(rows(&["--requests", "10", "--order", "random"]), None);
        assert_eq!(rows(&["--duration", "5s"]), None);
        assert_eq!(rows(&["--requests", "10", "--warmup", "2s"]), None);
        assert_eq!(rows(&["--requests", "10", "--preset", "mlperf"]), None);
    }
}
