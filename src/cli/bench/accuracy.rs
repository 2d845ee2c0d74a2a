//! The accuracy phase: each accuracy dataset run as its own engine run
//! against the run's endpoint — every row once per repeat, in file order,
//! one request at a time on one connection (MLPerf's rule for accuracy, so
//! nothing about the answers depends on load) — its replies judged as they
//! arrive (the events line carries the extracted answer), then scored.

use std::path::Path;

use crate::accuracy::score::{self, Reply, Scorer};
use crate::accuracy::spec::EXPECTED_NAMES;
use crate::accuracy::{AccuracyReport, AccuracySpec, DatasetResult, Phase};
use crate::clock::{now_ns, wall_ns};
use crate::config::BenchConfig;
use crate::config::profile::{Correlation, HumanDuration};
use crate::config::resolve::resolve;
use crate::dataset::{self, DatasetSpec};
use crate::engine::supervisor;
use crate::metrics::observe::{Finished, Interval, Observer};
use crate::metrics::run::RunResult;
use crate::protocol::json::unescape;
use crate::report::events::{EventsPhase, EventsStats, RunObserver, SampleRow, Verdict};
use crate::server::ServerHandle;

use super::build;
use super::plan::Planned;

/// Every accuracy dataset's phase, run.
pub(super) struct Accuracy {
    pub report: AccuracyReport,
    /// Per dataset (by name): each request's id and row, for
    /// `sample_idx_map.json`.
    pub sample_rows: Vec<(String, Vec<SampleRow>)>,
    /// The lines the phases added to `events.jsonl`.
    pub events: EventsStats,
    /// A signal stopped it; the datasets after went unrun.
    pub interrupted: bool,
}

/// One dataset's reference answers, in row order, and the column they are in.
pub(super) struct Expected {
    column: String,
    values: Vec<String>,
}

/// Every accuracy dataset's reference answers, read before the run starts
/// (none when the run has no accuracy phase).
pub(super) fn prepare(cfg: &BenchConfig) -> Result<Vec<Expected>, String> {
    if !cfg.phase.runs_accuracy() {
        return Ok(Vec::new());
    }
    cfg.accuracy.iter().map(expected).collect()
}

/// Runs `cfg`'s accuracy datasets one after the other into `out` (their
/// lines go after the performance phase's in `events.jsonl`), against the
/// endpoint of `cfg` (`server` when it is the built-in one) and `model`;
/// `references` are `prepare`'s.
pub(super) fn run(
    cfg: &BenchConfig,
    references: Vec<Expected>,
    server: Option<&ServerHandle>,
    model: &str,
    out: &Path,
) -> Result<Accuracy, String> {
    let mut acc = Accuracy {
        report: AccuracyReport {
            phase: cfg.phase,
            datasets: Vec::new(),
        },
        sample_rows: Vec::new(),
        events: EventsStats::default(),
        interrupted: false,
    };
    for (spec, expected) in cfg.accuracy.iter().zip(references) {
        if acc.interrupted {
            break;
        }
        lingering_thread();
        let ran = run_one(cfg, spec, expected, server, model, out)?;
        acc.events.path = ran.events.path.clone();
        acc.events.written += ran.events.written;
        acc.events.dropped += ran.events.dropped;
        if acc.events.error.is_none() {
            acc.events.error = ran.events.error.clone();
        }
        acc.interrupted = ran.interrupted;
        acc.sample_rows.push((spec.name.clone(), ran.rows));
        acc.report.datasets.push(ran.result);
    }
    Ok(acc)
}

/// Test-only, undocumented: `LLMLOAD_TEST_LINGERING_THREAD=<ms>` leaves a
/// thread that ends that long after the phase starts, as the previous
/// phase's joined events thread may still be listed by the kernel when the
/// next phase forks (which must wait for it, not fail).
fn lingering_thread() {
    let Some(ms) = std::env::var("LLMLOAD_TEST_LINGERING_THREAD")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    std::thread::spawn(move || std::thread::sleep(std::time::Duration::from_millis(ms)));
}

struct RanOne {
    result: DatasetResult,
    rows: Vec<SampleRow>,
    events: EventsStats,
    interrupted: bool,
}

fn run_one(
    cfg: &BenchConfig,
    spec: &AccuracySpec,
    expected: Expected,
    server: Option<&ServerHandle>,
    model: &str,
    out: &Path,
) -> Result<RanOne, String> {
    let rows = expected.values.len() as u64;
    let planned = rows * u64::from(spec.repeats);
    let mut acfg = phase_config(cfg, spec, model, planned)?;
    let mut data = spec.dataset.clone();
    data.columns.expected = Some(expected.column.clone());
    acfg.dataset = Some(data);
    let mut built = build::build(&acfg, server, None, false)?;
    // No shard splits this phase (a sharded run may not have one), and its
    // configuration already says one worker, one connection, kept text.
    let mut stages = acfg.stages.clone();
    let part = super::shard::part(&acfg, &mut stages, &[])?;
    let Planned { plan, live, .. } = super::plan::plan(&acfg, &mut built, stages, part, None)?;
    crate::cli::errln!(
        "llmload: accuracy {}: {} rows × {} repeat(s), one request at a time ({}, {})",
        spec.name,
        rows,
        spec.repeats,
        spec.scorer.name(),
        spec.extractor.name()
    );
    let started = (now_ns(), wall_ns());
    let workers = supervisor::spawn(&plan)?;
    let names = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>();
    let scenarios = names(&mut plan.scenarios.iter().map(|s| s.name.clone()));
    let stages = names(&mut plan.stages.iter().map(|s| s.name.clone()));
    let mut inner = RunObserver::start_phase(
        out,
        (&scenarios, &stages),
        EventsPhase::Accuracy(spec.name.clone()),
        started.1,
        started.0,
    )?;
    inner.set_live(live);
    inner.keep_sample_rows();
    let mut judge = Judge {
        inner,
        scorer: spec.scorer,
        extractor: spec.extractor,
        expected: &expected.values,
        replies: Vec::with_capacity(planned as usize),
    };
    let result = workers.run(&plan, started.0, Some(&mut judge));
    let duration_s = (now_ns() - started.0) as f64 / 1e9;
    let Judge {
        mut inner, replies, ..
    } = judge;
    let sample_rows = inner.take_sample_rows();
    let events = inner.finish();
    let scored = score::score(
        spec.scorer,
        spec.extractor,
        &expected.values,
        &replies,
        planned,
    );
    let mut incomplete: Vec<String> = result
        .incomplete_reasons
        .iter()
        .map(crate::report::summary::incomplete)
        .collect();
    if scored.missing > 0 {
        incomplete.push(format!(
            "{} of {planned} requests were never answered",
            scored.missing
        ));
    }
    Ok(RanOne {
        result: DatasetResult {
            spec: spec.clone(),
            expected_column: expected.column,
            rows,
            scored,
            duration_s,
            complete: incomplete.is_empty(),
            incomplete,
            latency_ms: latency(&result),
        },
        rows: sample_rows,
        events,
        interrupted: result.interrupted,
    })
}

/// e2e p50 and p99 of a phase's requests, ms.
fn latency(run: &RunResult) -> Option<(f64, f64)> {
    let e2e = &run.total.e2e;
    let q = |p: f64| e2e.quantile_ns(p).map(|v| v as f64 / 1e6);
    Some((q(0.5)?, q(0.99)?))
}

/// The run's configuration reshaped for one accuracy dataset: the run's
/// own profile (endpoint, API, TLS, headers, timeouts, I/O backend and
/// every other setting flow through unchanged), with what the phase must
/// force over it — one connection with one request in flight on one
/// worker, `requests` of them in file order, no warm-up, prompts sent
/// exactly as the file has them, each reply's text kept, sampling as the
/// dataset asks — and what belongs to the performance phase alone (its
/// load shape, length, content, checks and shard) cleared.
fn phase_config(
    cfg: &BenchConfig,
    spec: &AccuracySpec,
    model: &str,
    requests: u64,
) -> Result<BenchConfig, String> {
    let base = &cfg.profile;
    let mut p = base.clone();
    // Its own load: one request at a time, the dataset's rows in order.
    p.mode = None;
    p.rate = None;
    p.concurrency = Some(1);
    p.connections = Some(1);
    p.workers = Some(1);
    p.openloop_max_inflight = None;
    p.arrival = None;
    p.stages = None;
    p.requests = Some(requests);
    p.duration = None;
    p.min_duration = None;
    p.min_requests = None;
    p.max_duration = None;
    p.warmup = Some(HumanDuration(std::time::Duration::ZERO));
    p.warmup_requests = None;
    // Its own content, sent untouched and kept whole.
    p.dataset = None;
    p.synthetic = None;
    p.scenarios = None;
    p.order = Some("sequential".into());
    p.cache_mode = Some("natural".into());
    p.correlation = Some(Correlation {
        header: base.correlation.as_ref().and_then(|c| c.header.clone()),
        uuid_in_prompt: Some(false),
    });
    p.record_output = Some(true);
    p.tokenizer = None;
    p.token_source = Some("usage".into());
    p.model = Some(model.to_string());
    // An MLPerf config's own accuracy drain (`drain.accuracy_timeout_s`).
    if let Some(d) = base.mlperf.accuracy_drain {
        p.drain_timeout = Some(d);
    }
    p.max_tokens = Some(spec.max_tokens.unwrap_or(cfg.max_tokens));
    p.stream = Some(cfg.stream);
    p.temperature = spec.temperature.or(base.temperature);
    p.top_p = spec.top_p.or(base.top_p);
    // Judged by its score, not by the run's rules, thresholds or SLO; not
    // sharded, not held for a start instant.
    p.preset = None;
    p.thresholds = None;
    p.slo = None;
    p.phase = None;
    p.accuracy_datasets = None;
    p.prompt_template = None;
    p.shard = None;
    p.shards = None;
    p.start_at = None;
    let mut acfg =
        resolve(p).map_err(|e| format!("accuracy dataset {}: {}", spec.name, e.join("; ")))?;
    if let Some(first) = acfg.stages.first_mut() {
        first.name = format!("accuracy:{}", spec.name);
    }
    acfg.phase = Phase::Acc;
    // Request ids come from the workers' generator, seeded by the
    // scheduler seed: each dataset gets a stream of its own, so no id of
    // the performance phase or another dataset repeats in events.jsonl.
    acfg.scheduler_seed = cfg.scheduler_seed ^ fnv1a(spec.name.as_bytes()) ^ 0x6163_6375_7261_6379;
    Ok(acfg)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Loads `spec`'s reference answers: from `expected=`'s column, else the
/// first of `EXPECTED_NAMES` the file has. Every row must have one.
fn expected(spec: &AccuracySpec) -> Result<Expected, String> {
    let file = spec.dataset.path.display().to_string();
    let candidates: Vec<String> = match &spec.dataset.columns.expected {
        Some(c) => vec![c.clone()],
        None => EXPECTED_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    let mut last = String::new();
    for column in &candidates {
        let mut data: DatasetSpec = spec.dataset.clone();
        data.columns.expected = Some(column.clone());
        let mut values = Vec::new();
        let mut lacking = Vec::new();
        let loaded = dataset::load(&data, &mut |s| {
            match s.expected {
                Some(v) => values.push(v),
                None => {
                    lacking.push(values.len() + lacking.len());
                    values.push(String::new());
                }
            }
            Ok(())
        });
        match loaded {
            Ok(_) if !lacking.is_empty() => {
                return Err(format!(
                    "accuracy dataset {} ({file}): {} of {} rows have no '{column}' value to score against (first: row {})",
                    spec.name,
                    lacking.len(),
                    values.len(),
                    lacking[0]
                ));
            }
            Ok(_) => {
                return Ok(Expected {
                    column: column.clone(),
                    values,
                });
            }
            Err(e) if candidates.len() > 1 && e.contains("no row has a field") => last = e,
            Err(e) => return Err(format!("accuracy dataset {}: {e}", spec.name)),
        }
    }
    Err(format!(
        "accuracy dataset {} ({file}): no reference answers: no column named {} (map one with expected=COL){}",
        spec.name,
        EXPECTED_NAMES.join(", "),
        if last.is_empty() {
            String::new()
        } else {
            format!("; {last}")
        }
    ))
}

/// Judges each reply as it arrives and passes its line on with the
/// verdict.
struct Judge<'a> {
    inner: RunObserver,
    scorer: Scorer,
    extractor: crate::accuracy::extract::Extractor,
    expected: &'a [String],
    replies: Vec<(usize, Reply)>,
}

impl Observer for Judge<'_> {
    fn request(&mut self, e: &Finished<'_>) {
        let Some(row) = e
            .row
            .map(|r| r as usize)
            .filter(|r| *r < self.expected.len())
        else {
            self.inner.request(e);
            return;
        };
        let (reply, verdict) = if e.sample.error.is_some() {
            (Reply::Failed, Verdict::default())
        } else if e.sample.output_truncated {
            (Reply::Truncated, Verdict::default())
        } else {
            let text = unescape(&e.text);
            let verdict = match self.scorer {
                Scorer::Rouge => Verdict::default(),
                s => {
                    let (extracted, right) =
                        score::judge(s, self.extractor, &text, &self.expected[row]);
                    Verdict {
                        extracted,
                        correct: Some(right),
                    }
                }
            };
            (Reply::Text(text), verdict)
        };
        let verdict = match (&reply, self.scorer) {
            (Reply::Failed | Reply::Truncated, s) if s != Scorer::Rouge => Verdict {
                correct: Some(false),
                ..verdict
            },
            _ => verdict,
        };
        self.replies.push((row, reply));
        self.inner.request_judged(e, verdict);
    }

    fn interval(&mut self, i: &Interval<'_>) {
        self.inner.interval(i);
    }
}
