//! `settings`: runtime, load pattern, client, drain, warmup, profiling and
//! early stopping. The run length and load shape map to our profile; the
//! Python client's machinery (ZMQ transport, GC mode, worker timeouts) has
//! no counterpart here: accepted at any value, noted off MLPerf's defaults.

use std::time::Duration;

use serde_json::Value;

use super::tree::{Section, number, shown};
use crate::config::profile::{HumanDuration, Profile};

/// `online`: the config's `type` (`None` when it is not one we run).
pub(super) fn read_settings(mut s: Section<'_>, online: Option<bool>, p: &mut Profile) {
    read_runtime(s.section("runtime"), p);
    read_load_pattern(s.section("load_pattern"), online, p);
    read_client(s.section("client"), p);
    read_drain(s.section("drain"), p);
    read_warmup(s.section("warmup"), p);
    let mut profiling = s.section("profiling");
    profiling.only_default("engine", Value::Null);
    profiling.only_default("urls", Value::Null);
    profiling.finish();
    let mut es = s.section("early_stopping");
    p.early_stopping = es.bool("enabled");
    es.finish();
    s.inert(
        "service_ready_timeout_s",
        30.0.into(),
        "llmload starts no metrics or event-logger services",
    );
    s.finish();
}

fn read_runtime(mut s: Section<'_>, p: &mut Profile) {
    let min = ms(&mut s, "min_duration_ms");
    let max = ms(&mut s, "max_duration_ms");
    if let (Some(lo), Some(hi)) = (min, max)
        && hi != 0
        && hi < lo
    {
        s.errs.at(
            &s.path_of("max_duration_ms"),
            format!("{hi} is less than min_duration_ms ({lo})"),
        );
    }
    p.min_duration = min.map(|m| HumanDuration(Duration::from_millis(m)));
    // 0 is MLPerf's "no limit".
    p.max_duration = max
        .filter(|m| *m > 0)
        .map(|m| HumanDuration(Duration::from_millis(m)));
    p.requests = s.int("n_samples_to_issue", 1).map(|n| n as u64);
    p.scheduler_seed = s.int("scheduler_random_seed", 0).map(|n| n as u64);
    p.dataloader_seed = s.int("dataloader_random_seed", 0).map(|n| n as u64);
    s.finish();
}

/// Milliseconds: a number, or a string with MLPerf's suffixes (`600s`,
/// `10m`, `600000ms`).
fn ms(s: &mut Section<'_>, key: &str) -> Option<u64> {
    let v = s.take(key)?;
    let parsed = match &v {
        Value::String(t) => parse_ms(t.trim()),
        other => number(other),
    };
    match parsed {
        Some(x) if x >= 0.0 && x.fract() == 0.0 => Some(x as u64),
        _ => {
            s.errs.at(
                &s.path_of(key),
                format!(
                    "expected milliseconds ≥ 0 (a number, or with a suffix: 600s, 10m), found {}",
                    shown(&v)
                ),
            );
            None
        }
    }
}

fn parse_ms(t: &str) -> Option<f64> {
    let num = |x: &str| x.trim().parse::<f64>().ok().filter(|x| x.is_finite());
    if let Some(x) = t.strip_suffix("ms") {
        // MLPerf reads the `ms` form as a whole number.
        return x.trim().parse::<u64>().ok().map(|n| n as f64);
    }
    if let Some(x) = t.strip_suffix('m') {
        return num(x).map(|m| (m * 60_000.0).trunc());
    }
    if let Some(x) = t.strip_suffix('s') {
        return num(x).map(|s| (s * 1000.0).trunc());
    }
    num(t)
}

fn read_load_pattern(mut s: Section<'_>, online: Option<bool>, p: &mut Profile) {
    let type_path = s.path_of("type");
    let kind = s.string("type").unwrap_or_else(|| "max_throughput".into());
    let qps_path = s.path_of("target_qps");
    let conc_path = s.path_of("target_concurrency");
    let qps = s.f64("target_qps");
    if qps.is_some_and(|q| q <= 0.0) {
        s.errs.at(&qps_path, "must be > 0");
    }
    let concurrency = s.int("target_concurrency", 1);
    p.mlperf.legacy_qps = s.bool("use_legacy_loadgen_qps_metrics");
    match kind.as_str() {
        "max_throughput" if online == Some(true) => s.errs.at(
            &type_path,
            "an online benchmark needs poisson or concurrency (max_throughput is offline's)",
        ),
        "max_throughput" => p.mode = Some("offline".into()),
        "poisson" | "concurrency" | "agentic_inference" if online == Some(false) => s.errs.at(
            &type_path,
            format!("'{kind}': an offline benchmark uses max_throughput"),
        ),
        "poisson" => {
            p.mode = Some("poisson".into());
            match qps {
                Some(q) => p.rate = Some(q),
                None => s.errs.at(&qps_path, "required by poisson"),
            }
        }
        "concurrency" => {
            p.mode = Some("concurrency".into());
            match concurrency {
                Some(c) => p.concurrency = Some(c as usize),
                None => s.errs.at(&conc_path, "required by concurrency"),
            }
        }
        "agentic_inference" => {
            // Validates as MLPerf's does; only running it is refused.
            if concurrency.is_none() {
                s.errs.at(&conc_path, "required by agentic_inference");
            }
            p.mode = Some("concurrency".into());
            p.concurrency = concurrency.map(|c| c as usize);
            p.mlperf.refuse_run.push(format!(
                "{type_path}: agentic_inference (multi-turn trajectory replay) is not supported yet"
            ));
        }
        "burst" | "step" => {
            s.errs.at(&type_path, format!("'{kind}' is not supported"));
        }
        other => s.errs.at(
            &type_path,
            format!("'{other}': expected max_throughput, poisson or concurrency"),
        ),
    }
    // MLPerf sizes a max_throughput or concurrency run from target_qps ×
    // min_duration_ms: the preset's run-length rule reads it as `rate`.
    if qps.is_some() && matches!(kind.as_str(), "max_throughput" | "concurrency") {
        p.rate = qps;
    }
    if concurrency.is_some() && matches!(kind.as_str(), "max_throughput" | "poisson") {
        s.errs
            .at(&conc_path, format!("applies to concurrency, not {kind}"));
    }
    s.finish();
}

fn read_client(mut s: Section<'_>, p: &mut Profile) {
    let auto_or_count = |s: &mut Section<'_>, key: &str| -> Option<usize> {
        let path = s.path_of(key);
        match s.int(key, -1)? {
            -1 => None,
            0 => {
                s.errs.at(&path, "must be -1 (auto) or ≥ 1, got 0");
                None
            }
            n => Some(n as usize),
        }
    };
    p.workers = auto_or_count(&mut s, "num_workers");
    p.connections = auto_or_count(&mut s, "max_connections");
    if s.bool("insecure") == Some(true) {
        p.insecure = Some(true);
    }
    let own = "llmload's workers are forked processes with their own event loops";
    for (key, default, why) in [
        (
            "warmup_connections",
            Value::from(-1),
            "llmload opens its connections itself, sized to the load",
        ),
        (
            "auto_warmup_budget_fraction",
            0.25.into(),
            "llmload opens its connections itself, sized to the load",
        ),
        (
            "max_concurrent_warmup_connects",
            128.into(),
            "llmload opens its connections itself, sized to the load",
        ),
        (
            "min_required_connections",
            (-1).into(),
            "llmload opens its connections itself, sized to the load",
        ),
        (
            "log_level",
            "INFO".into(),
            "llmload's messages are its own; -v is the verbose switch",
        ),
        (
            "stream_all_chunks",
            false.into(),
            "llmload's workers read every chunk and record its time",
        ),
        ("worker_initialization_timeout", 60.0.into(), own),
        ("worker_graceful_shutdown_wait", 0.5.into(), own),
        ("worker_force_kill_timeout", 0.5.into(), own),
        (
            "max_idle_time",
            4.0.into(),
            "llmload keeps its connections for the run and reconnects one the server closed",
        ),
        (
            "worker_gc_mode",
            "relaxed".into(),
            "there is no garbage collector to tune",
        ),
    ] {
        s.inert(key, default, why);
    }
    let mut t = s.section("transport");
    let ipc = "llmload's workers report over shared-memory rings, not ZMQ";
    for (key, default) in [
        ("type", Value::from("zmq")),
        ("recv_buffer_size", 16_777_216.into()),
        ("send_buffer_size", 16_777_216.into()),
        ("io_threads", 4.into()),
        ("worker_io_threads", 1.into()),
        ("high_water_mark", 0.into()),
        ("linger", (-1).into()),
        ("immediate", 1.into()),
    ] {
        t.inert(key, default, ipc);
    }
    t.finish();
    s.finish();
}

/// Long enough to be no limit: each response is still bounded by the
/// request timeout, so a drain without a limit waits for every response.
const NO_DRAIN_LIMIT: Duration = Duration::from_secs(366 * 24 * 3600);

fn read_drain(mut s: Section<'_>, p: &mut Profile) {
    let path = s.path_of("performance_timeout_s");
    if s.is_null("performance_timeout_s") {
        let _ = s.take("performance_timeout_s");
        p.drain_timeout = Some(HumanDuration(NO_DRAIN_LIMIT));
        s.errs.note(
            &path,
            "null: the performance phase waits for every response, each bounded by the request timeout",
        );
    } else if let Some(x) = s.f64("performance_timeout_s") {
        match Duration::try_from_secs_f64(x) {
            Ok(d) if x > 0.0 => p.drain_timeout = Some(HumanDuration(d)),
            _ => s.errs.at(&path, format!("{x}: expected seconds > 0")),
        }
    }
    // The accuracy phase waits as MLPerf's does: for every response unless
    // a limit is given.
    let path = s.path_of("accuracy_timeout_s");
    p.mlperf.accuracy_drain = Some(HumanDuration(NO_DRAIN_LIMIT));
    if let Some(x) = s.f64("accuracy_timeout_s") {
        match Duration::try_from_secs_f64(x) {
            Ok(d) if x > 0.0 => p.mlperf.accuracy_drain = Some(HumanDuration(d)),
            _ => s.errs.at(&path, format!("{x}: expected seconds > 0")),
        }
    }
    let path = s.path_of("warmup_timeout_s");
    let why = "llmload's warm-up requests run inside the performance phase and end by its drain";
    if s.is_null("warmup_timeout_s") {
        let _ = s.take("warmup_timeout_s");
        s.errs
            .note(&path, format!("null has no effect in llmload ({why})"));
    } else if let Some(x) = s.f64("warmup_timeout_s") {
        if x <= 0.0 {
            s.errs.at(&path, format!("{x}: expected seconds > 0"));
        } else if x != 240.0 {
            s.errs
                .note(&path, format!("{x} has no effect in llmload ({why})"));
        }
    }
    let metrics = "llmload counts tokens as responses arrive; nothing is left to drain";
    s.inert("metrics_drain_timeout_s", 0.0.into(), metrics);
    s.inert("metrics_tokenizer_workers", 4.into(), metrics);
    s.finish();
}

/// MLPerf's `warmup_random_seed` default.
pub(crate) const WARMUP_RANDOM_SEED: u64 = 42;

fn read_warmup(mut s: Section<'_>, p: &mut Profile) {
    let enabled = s.bool("enabled").unwrap_or(false);
    let n = s.int("n_requests", 1);
    if enabled {
        match n {
            Some(n) => p.warmup_requests = Some(n as u64),
            None => s.errs.at(
                &s.path_of("n_requests"),
                "required when warmup is enabled (a warmup of the whole dataset is not supported)",
            ),
        }
    }
    let salt = s.bool("salt");
    let drain = s.bool("drain");
    let seed = s.int("warmup_random_seed", i64::MIN);
    if salt == Some(true) {
        s.errs.note(
            &s.path_of("salt"),
            "true has no effect in llmload: warm-up prompts are sent unsalted",
        );
    }
    if drain == Some(true) {
        s.errs.note(
            &s.path_of("drain"),
            "true has no effect in llmload: warm-up requests still in flight are excluded from the numbers, not waited for",
        );
    }
    // Python's `random.Random(n)` seeds from |n|, as the warm-up's draws do.
    p.mlperf.warmup_seed = seed.map(i64::unsigned_abs);
    s.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_mlperfs_suffixes() {
        assert_eq!(parse_ms("600000"), Some(600000.0));
        assert_eq!(parse_ms("600000ms"), Some(600000.0));
        assert_eq!(parse_ms("600s"), Some(600000.0));
        assert_eq!(parse_ms("1.5s"), Some(1500.0));
        assert_eq!(parse_ms("10m"), Some(600000.0));
        assert_eq!(parse_ms("ten"), None);
    }
}
