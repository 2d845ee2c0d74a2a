//! `llmload bench`: flags (and a `--profile`) merged into one validated
//! configuration, the built-in endpoint started when no endpoint is given,
//! every request serialized, the engine run, the report printed and then
//! written, and the outcome mapped to an exit status (`Outcome`).

mod accuracy;
mod build;
mod fail_fast;
mod flags;
mod help;
mod mlperf;
mod plan;
mod row_bound;
mod server_metrics;
mod shard;

#[cfg(test)]
pub(crate) use build::builtin::NAMES as BUILTIN_NAMES;
pub(crate) use build::builtin::shown as builtin_shown;
pub(crate) use flags::BenchArgs;
pub(crate) use help::options as help_options;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{errln, out, outln};
use crate::clock::{now_ns, wall_ns};
use crate::config::BenchConfig;
use crate::config::duration::format_duration;
use crate::config::mlperf as mlperf_config;
use crate::config::mlperf::AuditBlock;
use crate::config::profile::Profile;
use crate::config::resolve::{check_host, resolve};
use crate::engine::supervisor;
use crate::metrics::run::{Incomplete, RunResult};
use crate::plan::{Load, StagePlan};
use crate::report::events::{EventsStats, RunObserver, SampleRow};
use crate::report::live::LiveView;
use crate::report::{self, RunInfo};
use crate::server::{self, ServerHandle};
use crate::sys::info::HostInfo;
use crate::tokens::Tokenizer;
use plan::Planned;

/// How a bench ended, as its exit status. When several apply, the first in
/// this order wins: a signal, unwritten results, an incomplete run, a broken
/// threshold, nothing succeeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Outcome {
    /// Complete, and every threshold passed.
    Passed = 0,
    /// A usage or configuration error, the run could not start, or no
    /// request succeeded.
    Failed = 1,
    /// A threshold failed.
    ThresholdFailed = 2,
    /// Incomplete for a reason other than a signal: a worker lost, records
    /// never reported or corrupt.
    Incomplete = 3,
    /// Some results could not be written (the report was still printed).
    Unwritten = 4,
    /// Stopped by SIGINT, SIGTERM or SIGHUP.
    Interrupted = 130,
}

impl Outcome {
    /// The outcome of `run`, whose files were written (`written`) or not.
    fn of(run: &RunResult, written: bool) -> Outcome {
        // A threshold abort is a broken threshold, not a lost measurement.
        let incomplete = run.incomplete_reasons.iter().any(|r| {
            !matches!(
                r,
                Incomplete::Interrupted
                    | Incomplete::InterruptedBeforeStart
                    | Incomplete::ThresholdAbort(_)
                    | Incomplete::FailedFast(_)
            )
        });
        let failed_fast = run
            .incomplete_reasons
            .iter()
            .any(|r| matches!(r, Incomplete::FailedFast(_)));
        if run.interrupted {
            Outcome::Interrupted
        } else if !written {
            Outcome::Unwritten
        } else if incomplete {
            Outcome::Incomplete
        } else if !run.thresholds_passed {
            Outcome::ThresholdFailed
        } else if failed_fast || (run.total.completed == 0 && run.total.issued > 0) {
            // A run stopped in its warm-up measured nothing, and failed.
            Outcome::Failed
        } else {
            Outcome::Passed
        }
    }

    /// The line that says why, for the outcomes a person must be told.
    fn message(self) -> Option<&'static str> {
        match self {
            Outcome::Failed => Some("no request succeeded"),
            Outcome::ThresholdFailed => Some("a threshold failed"),
            Outcome::Incomplete => Some("the run is incomplete (see the report)"),
            Outcome::Unwritten => Some("some results could not be written"),
            Outcome::Passed | Outcome::Interrupted => None,
        }
    }
}

/// Runs a benchmark; returns the exit status.
pub(crate) fn run(args: BenchArgs) -> i32 {
    let started = (now_ns(), wall_ns());
    // Raised first, so the check of the run against it sees the limit every
    // worker will inherit.
    match audited_config(&args) {
        Ok(None) => {}
        Ok(Some((profile, origin, audit))) => return run_audited(profile, &origin, &audit),
        Err(e) => {
            errln!("llmload bench: {e}");
            return Outcome::Failed as i32;
        }
    }
    let fd_limit = crate::sys::process::raise_fd_limit();
    match configure(&args, fd_limit) {
        Ok(cfg) => launch(&cfg, started, fd_limit).bench_status(),
        Err(e) => {
            errln!("llmload bench: {e}");
            Outcome::Failed as i32
        }
    }
}

/// How a run of a profile ended, for commands that give it exit statuses
/// of their own (`benchmark`'s are MLPerf's); its message is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The profile was refused: a setting, or a dataset file not there.
    Refused,
    /// It could not start: the machine, the dataset's rows, the tokenizer,
    /// the workers or the output directory.
    NotStarted,
    /// It ran, with this outcome.
    Ran(Outcome),
}

impl Ended {
    /// `bench`'s exit status for it.
    pub(crate) fn bench_status(self) -> i32 {
        match self {
            Ended::Refused | Ended::NotStarted => Outcome::Failed as i32,
            Ended::Ran(o) => o as i32,
        }
    }
}

/// Runs a profile built elsewhere (`llmload benchmark`), exactly as `bench`
/// runs its own; errors of the profile are named as `origin` says (a YAML
/// file, or the command line). Tells where it ended.
pub(crate) fn run_profile_ended(profile: Profile, origin: &str) -> Ended {
    let started = (now_ns(), wall_ns());
    let fd_limit = crate::sys::process::raise_fd_limit();
    match configure_profile(profile, origin, fd_limit) {
        Ok(cfg) => launch(&cfg, started, fd_limit),
        Err(e) => {
            errln!("llmload benchmark: {e}");
            Ended::Refused
        }
    }
}

/// Runs a resolved configuration; `started`: the monotonic and wall clocks
/// at the start of the command.
fn launch(cfg: &BenchConfig, started: (u64, u64), fd_limit: u64) -> Ended {
    // The host block, read once before anything runs (after the raise, so
    // its fd limit is the workers').
    let host = HostInfo::collect();
    match execute(cfg, started.0, started.1, fd_limit, host, None) {
        Ok(ran) => Ended::Ran(ran.outcome),
        Err(e) => {
            errln!("llmload bench: {e}");
            Ended::NotStarted
        }
    }
}

/// A finished run of a configuration: its exit status as `bench` would give
/// it, and its results (already printed and written under the run's `out`).
pub(crate) struct Ran {
    pub outcome: Outcome,
    pub result: RunResult,
}

/// Checks each scenario's count of distinct samples once they are loaded,
/// before any request is sent.
pub(crate) type SamplesCheck<'a> = &'a dyn Fn(usize) -> Result<(), String>;

/// Runs a resolved configuration exactly as `bench` does, for commands made
/// of bench runs (`audit`). `check` may refuse the loaded samples, so every
/// row of a dataset file is read (`check` sees the file's row count).
pub(crate) fn run_config(
    cfg: &BenchConfig,
    fd_limit: u64,
    check: SamplesCheck<'_>,
) -> Result<Ran, String> {
    let (started_ns, started_wall) = (now_ns(), wall_ns());
    execute(
        cfg,
        started_ns,
        started_wall,
        fd_limit,
        HostInfo::collect(),
        Some(check),
    )
}

/// The profile (if any) with the flags over it, resolved and checked
/// against this machine (`fd_limit`: each worker's descriptor limit).
pub(crate) fn configure(args: &BenchArgs, fd_limit: u64) -> Result<BenchConfig, String> {
    let (profile, origin) = profile_of(args)?;
    let given = if args.shard.is_some() {
        "flag"
    } else {
        "profile"
    };
    configure_as(profile, &origin, fd_limit, given)
}

/// The `--profile` file (or an empty profile) with the flags over it, and
/// the file's name to put before its errors (empty: they came from flags).
pub(crate) fn profile_of(args: &BenchArgs) -> Result<(Profile, String), String> {
    let flags = args.to_profile()?;
    let (mut profile, origin) = match (&args.profile, &args.config) {
        (Some(_), Some(_)) => {
            return Err("--profile and --config are alternatives: give one".into());
        }
        (Some(path), None) if !mlperf_config::is_yaml(path) => {
            (Profile::load(path)?, path.display().to_string())
        }
        (Some(path), None) | (None, Some(path)) => {
            (mlperf_profile(path)?, path.display().to_string())
        }
        (None, None) => (Profile::default(), String::new()),
    };
    profile.overlay(&flags);
    Ok((profile, origin))
}

/// The profile an MLPerf YAML config maps to. A config with an `audit:`
/// block is run by `run` (`run_audited`); other commands built on bench's
/// flags (`audit` itself) refuse it.
fn mlperf_profile(path: &Path) -> Result<Profile, String> {
    let read = mlperf_config::load(path)?;
    if read.audit.is_some() {
        return Err(format!(
            "{}: audit: a config with an audit block runs with llmload bench --config or llmload benchmark from-config",
            path.display()
        ));
    }
    Ok(read.profile)
}

/// The YAML config `args` names, when it has an `audit:` block: the
/// profile (flags over the config) and the block.
fn audited_config(args: &BenchArgs) -> Result<Option<(Profile, String, AuditBlock)>, String> {
    let path = match (&args.config, &args.profile) {
        (Some(p), None) => p,
        (None, Some(p)) if mlperf_config::is_yaml(p) => p,
        _ => return Ok(None),
    };
    let read = mlperf_config::load(path)?;
    let Some(audit) = read.audit else {
        return Ok(None);
    };
    let mut profile = read.profile;
    profile.overlay(&args.to_profile()?);
    Ok(Some((profile, path.display().to_string(), audit)))
}

/// An MLPerf config with an `audit:` block: the benchmark (unless the
/// block says `only`), then the audit into `<report dir>/audit/`, as
/// MLPerf runs them. The exit status is the benchmark's when it failed,
/// else the audit's.
pub(crate) fn run_audited(profile: Profile, origin: &str, audit: &AuditBlock) -> i32 {
    run_audited_as(profile, origin, audit, Ended::bench_status, |v| v)
}

/// [`run_audited`], the benchmark's end and the audit's status (`llmload
/// audit`'s) given as exit statuses by `status` and `verdict_status`.
pub(crate) fn run_audited_as(
    mut profile: Profile,
    origin: &str,
    audit: &AuditBlock,
    status: fn(Ended) -> i32,
    verdict_status: fn(i32) -> i32,
) -> i32 {
    // One report directory for both, as MLPerf writes them.
    if profile.out.is_none() {
        profile.out = Some(default_out_dir(wall_ns()));
    }
    let main = if audit.only {
        Ended::Ran(Outcome::Passed)
    } else {
        run_profile_ended(profile.clone(), origin)
    };
    if main == Ended::Ran(Outcome::Interrupted) {
        return status(main);
    }
    let verdict = crate::cli::audit::run_output_caching(profile, origin, &audit.params);
    if main != Ended::Ran(Outcome::Passed) {
        status(main)
    } else {
        verdict_status(verdict)
    }
}

/// `profile` resolved and checked against this machine; errors are named by
/// `origin` (a file), or as flags when it is empty.
pub(crate) fn configure_profile(
    profile: Profile,
    origin: &str,
    fd_limit: u64,
) -> Result<BenchConfig, String> {
    configure_as(profile, origin, fd_limit, "profile")
}

/// [`configure_profile`], a fixed shard index having come from `given`
/// (`flag` or `profile`).
fn configure_as(
    profile: Profile,
    origin: &str,
    fd_limit: u64,
    given: &str,
) -> Result<BenchConfig, String> {
    let mut cfg = resolve(profile).map_err(|errors| {
        let lines: Vec<String> = errors
            .iter()
            .map(|e| {
                if origin.is_empty() {
                    flag_error(e)
                } else {
                    format!("{origin}: {e}")
                }
            })
            .collect();
        lines.join("\n")
    })?;
    for w in &cfg.warnings {
        errln!("llmload bench: warning: {w}");
    }
    let refused = &cfg.profile.mlperf.refuse_run;
    if !refused.is_empty() {
        let at = if origin.is_empty() { "" } else { origin };
        return Err(refused
            .iter()
            .map(|r| format!("{at}: {r}"))
            .collect::<Vec<_>>()
            .join("\n"));
    }
    // The shard first: the host needs room for its part of the run only.
    cfg.place_shard(given, &|name| std::env::var(name).ok())?;
    check_host(&cfg, fd_limit)?;
    shard::check_start(&cfg, wall_ns())?;
    Ok(cfg)
}

/// Profile paths read as flags when no profile file was given
/// (`rate: …` → `--rate: …`).
fn flag_error(e: &str) -> String {
    match e.split_once(':') {
        Some((path, rest)) if !path.contains(' ') && !path.contains('[') => {
            format!("--{}:{rest}", path.replace('_', "-"))
        }
        _ => e.to_string(),
    }
}

/// Runs `cfg`: plan, run its phases, describe the run, write the results.
/// Without a `check`, a dataset file is read only as far as the run can use
/// (`row_bound`).
fn execute(
    cfg: &BenchConfig,
    started_ns: u64,
    started_wall: u64,
    fd_limit: u64,
    host: HostInfo,
    check: Option<SamplesCheck<'_>>,
) -> Result<Ran, String> {
    let tokenizer = load_tokenizer(cfg)?;
    let server = if build::needs_builtin(cfg) {
        Some(
            server::spawn(&build::builtin_server())
                .map_err(|e| format!("starting the built-in endpoint: {e}"))?,
        )
    } else {
        None
    };
    let (prepared, live) = prepare(
        cfg,
        server.as_ref(),
        tokenizer.as_ref(),
        check,
        started_wall,
    )?;
    let mut prepared = prepared;
    let mut phases = run_phases(
        cfg,
        &mut prepared,
        live,
        server.as_ref(),
        (started_ns, started_wall),
    )?;
    let server_stats = server.map(|h| h.stop());
    let info = run_info(
        cfg,
        &prepared,
        &mut phases,
        server_stats,
        (started_ns, started_wall, fd_limit),
        host,
    );
    Ok(write(cfg, &prepared, phases, &info))
}

/// A run made ready to start: its scenarios built and planned, every
/// accuracy dataset's reference answers read, its output directory made.
struct Prepared<'a> {
    /// What building found beside the plan's pieces (URL, model, datasets).
    built: build::Built<'a>,
    plan: crate::engine::Plan<'a>,
    io: crate::plan::IoChosen,
    references: Vec<accuracy::Expected>,
    out: PathBuf,
    /// How the run's length was derived, when it was.
    sized_why: Option<String>,
    /// The run's count, the same in every shard's config.
    run_requests: Option<u64>,
    /// Why `--fail-fast` stopped the run, with the fix.
    fail_cause: Option<String>,
}

fn prepare<'a>(
    cfg: &'a BenchConfig,
    server: Option<&ServerHandle>,
    tokenizer: Option<&'a Tokenizer>,
    check: Option<SamplesCheck<'_>>,
    started_wall: u64,
) -> Result<(Prepared<'a>, LiveView), String> {
    let mut built = build::build(cfg, server, tokenizer, check.is_none())?;
    if let Some(check) = check {
        for sc in &built.scenarios {
            check(sc.samples())?;
        }
    }
    // Every accuracy dataset is read before anything is sent: a bad file
    // fails the run at once, not after the performance phase.
    let references = accuracy::prepare(cfg)?;
    supervisor::install_signal_handlers().map_err(|e| format!("signal handlers: {e}"))?;
    let out = cfg
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(started_wall));
    // Sized for the whole run (a count rounded to whole passes over the
    // whole dataset), then split for a shard.
    let (mut stages, sized_why) = cfg.sized_stages(built.dataset_rows(), built.samples());
    // A dataset file's rows (or conversations) must reach every shard;
    // prompts made up or built in are shared whole when too few.
    let samples: Vec<(String, usize, bool)> = built
        .scenarios
        .iter()
        .map(|s| {
            let file = built
                .datasets
                .iter()
                .any(|d| d.scenario == s.name && matches!(d.source, build::Source::File { .. }));
            (s.name.clone(), s.samples(), file)
        })
        .collect();
    let run_requests = stages.first().and_then(|s| s.requests);
    let part = shard::part(cfg, &mut stages, &samples)?;
    let Planned { plan, live, io } = plan::plan(cfg, &mut built, stages, part, tokenizer)?;
    std::fs::create_dir_all(&out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    let prepared = Prepared {
        built,
        plan,
        io,
        references,
        out,
        sized_why,
        run_requests,
        fail_cause: None,
    };
    Ok((prepared, live))
}

/// What the phases produced.
struct Phases {
    result: RunResult,
    /// Each performance request's id and row, for MLPerf's files.
    sample_rows: Vec<SampleRow>,
    events: EventsStats,
    scraped: Option<crate::scrape::Scraped>,
    /// What the report must say for its numbers to be read right.
    notes: Vec<String>,
    accuracy: Option<accuracy::Accuracy>,
}

/// Runs the performance phase (unless `--phase acc`) on `p`'s plan, then
/// each accuracy dataset's (unless interrupted).
fn run_phases(
    cfg: &BenchConfig,
    p: &mut Prepared<'_>,
    live: LiveView,
    server: Option<&ServerHandle>,
    (started_ns, started_wall): (u64, u64),
) -> Result<Phases, String> {
    let plan = &p.plan;
    let watch = if cfg.phase.runs_perf() {
        server_metrics::Watch::prepare(cfg, server.map(|s| s.addr))
    } else {
        server_metrics::Watch::off()
    };
    let metrics_note = watch.note.clone();
    let mut scraped = None;
    let (mut result, sample_rows, mut events) = if cfg.phase.runs_perf() {
        errln!(
            "llmload: {}{} against {} (Ctrl-C stops and reports)",
            cfg.shard.as_ref().map_or(String::new(), |s| format!(
                "shard {} of {}: ",
                s.index, s.count
            )),
            describe(cfg, &plan.stages),
            p.built.url
        );
        // Forked before the events sink's and the scraper's threads start:
        // each worker is a copy of a single-threaded process.
        let workers = supervisor::spawn(plan)?;
        let scraper = watch.start();
        let scenarios: Vec<String> = plan.scenarios.iter().map(|s| s.name.clone()).collect();
        let stages: Vec<String> = plan.stages.iter().map(|s| s.name.clone()).collect();
        let mut observer = RunObserver::start(
            &p.out,
            (&scenarios, &stages),
            cfg.record_output,
            cfg.events,
            started_wall,
            started_ns,
        )?;
        observer.set_live(live);
        if mlperf_files(cfg) {
            observer.keep_sample_rows();
        }
        let mut result = workers.run(plan, started_ns, Some(&mut observer));
        p.fail_cause = fail_fast::explain(&mut result, &p.built);
        scraped = scraper.stop();
        let sample_rows = observer.take_sample_rows();
        (result, sample_rows, observer.finish())
    } else {
        let result = RunResult {
            complete: true,
            thresholds_passed: true,
            ..RunResult::default()
        };
        let events = EventsStats::untouched(&p.out, cfg.events);
        (result, Vec::new(), events)
    };
    let mut notes = notes(cfg, p.sized_why.clone(), plan.warmup_requests);
    notes.extend(p.built.notes.iter().cloned());
    if cfg.phase.runs_perf() {
        notes.extend(shard::start_note(cfg, &result));
    }
    notes.extend(metrics_note);
    notes.extend(cfg.profile.mlperf.notes.iter().cloned());
    let refused = &cfg.profile.mlperf.refuse_accuracy;
    if !refused.is_empty() && !result.interrupted && p.fail_cause.is_none() {
        for why in refused {
            errln!("llmload bench: accuracy phase: {why}");
            result
                .incomplete_reasons
                .push(Incomplete::AccuracyPhase { why: why.clone() });
        }
        result.complete = false;
    }
    let accuracy = if cfg.phase.runs_accuracy() && !result.interrupted && p.fail_cause.is_none() {
        let references = std::mem::take(&mut p.references);
        match accuracy::run(cfg, references, server, &p.built.model, &p.out) {
            Ok(acc) => {
                events.written += acc.events.written;
                events.dropped += acc.events.dropped;
                if events.error.is_none() {
                    events.error = acc.events.error.clone();
                }
                if acc.interrupted {
                    result.interrupted = true;
                }
                Some(acc)
            }
            Err(e) => {
                errln!("llmload bench: accuracy phase: {e}");
                result.complete = false;
                result
                    .incomplete_reasons
                    .push(Incomplete::AccuracyPhase { why: e });
                None
            }
        }
    } else {
        None
    };
    if result.started_wall_ns == 0 {
        // No performance phase: nothing started later than the command.
        result.started_wall_ns = started_wall;
    }
    Ok(Phases {
        result,
        sample_rows,
        events,
        scraped,
        notes,
        accuracy,
    })
}

/// MLPerf's files go with every accuracy run too: a submission needs
/// both parts from one report directory.
fn mlperf_files(cfg: &BenchConfig) -> bool {
    cfg.mlperf || cfg.phase.runs_accuracy()
}

/// The run described for the report: its configuration, target, notes and
/// every block beside the numbers. `clocks`: the command's start (monotonic
/// and wall) and the workers' descriptor limit.
fn run_info(
    cfg: &BenchConfig,
    p: &Prepared<'_>,
    phases: &mut Phases,
    server_stats: Option<crate::server::ServerStats>,
    (started_ns, started_wall, fd_limit): (u64, u64, u64),
    host: HostInfo,
) -> RunInfo {
    let result = &phases.result;
    let dataset = serde_json::to_value(build::Datasets::of(p.built.datasets.clone()))
        .expect("a dataset description serializes");
    let mut config = cfg.to_json(&p.out, &p.built.url, &p.built.model, server_stats.is_some());
    if let Some(why) = &p.sized_why {
        config["run_length"] = serde_json::json!({
            "requests": p.run_requests,
            "rule": why,
        });
    }
    let (accuracy_report, accuracy_rows) = match &mut phases.accuracy {
        Some(a) => (Some(a.report.clone()), std::mem::take(&mut a.sample_rows)),
        None => (None, Vec::new()),
    };
    let shard = shard::summary(cfg, &p.plan, result, &config);
    RunInfo {
        config,
        target: format!(
            "{} ({}, model {})",
            p.built.url,
            cfg.protocol.name(),
            p.built.model
        ),
        started_wall_ns: started_wall,
        fd_limit,
        host,
        builtin_endpoint: server_stats.map(|s| serde_json::to_value(s).expect("stats serialize")),
        dataset,
        events: phases.events.clone(),
        notes: std::mem::take(&mut phases.notes),
        tls: p.built.tls.clone(),
        mlperf: mlperf_files(cfg).then(|| {
            let mut m = mlperf::info(cfg, started_ns, std::mem::take(&mut phases.sample_rows));
            m.performance = cfg.phase.runs_perf();
            m.accuracy_rows = accuracy_rows;
            m
        }),
        accuracy: accuracy_report,
        server_metrics: phases
            .scraped
            .as_ref()
            .map(|s| server_metrics::summary(s, result.run_start_ns)),
        metrics_preset: cfg.metrics_preset,
        io: Some(p.io.clone()),
        shard,
        merged: None,
    }
}

/// Prints the report, then writes every file (a disk that cannot take them,
/// full or read-only, loses none of the numbers), and says how the run
/// ended.
fn write(cfg: &BenchConfig, p: &Prepared<'_>, phases: Phases, info: &RunInfo) -> Ran {
    let result = phases.result;
    let accuracy = phases.accuracy.as_ref().map(|a| &a.report);
    let accuracy_failed = accuracy.is_some_and(|a| !a.complete());
    // An accuracy-only run in which no request succeeded failed as a whole.
    let nothing_answered = !cfg.phase.runs_perf()
        && accuracy.is_some_and(|a| {
            a.datasets
                .iter()
                .all(|d| d.scored.scored == 0 && d.scored.issued > 0)
        });
    // `--quiet` prints the report only when a file cannot be written, to
    // stderr.
    let rendered = report::render(&result, info);
    if !cfg.quiet {
        out!(
            "{}",
            if cfg.verbose {
                &rendered.text
            } else {
                &rendered.terminal
            }
        );
    }
    let out = &p.out;
    let mut errors = rendered.write(out);
    if mlperf_files(cfg) {
        let yaml = mlperf_config::render_config_yaml(cfg, &p.built.url, &p.built.model, out);
        if let Err(e) = report::atomic::write(&out.join("config.yaml"), yaml.as_bytes()) {
            errors.push(e);
        }
    }
    if let Some(e) = &info.events.error {
        errors.insert(0, format!("{}: {e}", info.events.path));
    }
    outln!("results: {}", out.display());
    if !cfg.quiet {
        if !cfg.verbose {
            outln!(
                "(report.txt also explains each number and how each tool counts; --verbose prints it all)"
            );
        }
        out!("{}", rendered.headline);
    }
    if !errors.is_empty() && cfg.quiet {
        errln!("{}", rendered.text);
    }
    for e in &errors {
        errln!("llmload bench: could not write {e}");
    }
    let mut outcome = Outcome::of(&result, errors.is_empty());
    if outcome == Outcome::Passed && accuracy_failed {
        outcome = Outcome::Incomplete;
    } else if outcome == Outcome::Passed && nothing_answered {
        outcome = Outcome::Failed;
    }
    if let Some(why) = outcome.message() {
        errln!("llmload bench: {why}");
    }
    if let Some(cause) = &p.fail_cause {
        errln!(
            "llmload bench: stopped early (--fail-fast; --no-fail-fast runs on): {}",
            crate::protocol::errors::printable(cause)
        );
    }
    Ran { outcome, result }
}

/// `--tokenizer`'s tokenizer; under `preset: mlperf` without one, the
/// model's own when `--model` names one in the local Hugging Face cache (MLPerf
/// tokenizes with the model name when it has a tokenizer, and goes on
/// without one otherwise).
fn load_tokenizer(cfg: &BenchConfig) -> Result<Option<Tokenizer>, String> {
    if let Some(spec) = &cfg.tokenizer {
        return Tokenizer::load(spec).map(Some);
    }
    let Some(model) = cfg.profile.model.as_deref().filter(|_| cfg.mlperf) else {
        return Ok(None);
    };
    match crate::tokens::locate::locate(std::path::Path::new(model)) {
        Ok(files) => {
            errln!(
                "llmload bench: counting tokens with {}'s tokenizer ({})",
                model,
                files.tokenizer.display()
            );
            Tokenizer::load_files(&files).map(Some)
        }
        Err(_) => Ok(None),
    }
}

/// What the report must say for its numbers to be read right; `sized`
/// says how the run's length was derived, when it was; `warmup_requests`
/// are this process's (a shard's part of the run's).
fn notes(cfg: &BenchConfig, sized: Option<String>, warmup_requests: u64) -> Vec<String> {
    let mut out = Vec::new();
    if cfg.mlperf {
        out.push(format!(
            "preset mlperf: MLPerf's defaults unless set: cache_mode {}, order {}, scheduler seed {}, dataloader seed {}, max_tokens {}, {}, sampling seed {}",
            cfg.cache_mode.name(),
            cfg.order.name(),
            cfg.scheduler_seed,
            cfg.dataloader_seed,
            cfg.max_tokens,
            if cfg.stream { "streaming" } else { "not streaming" },
            cfg.sampling
                .seed
                .map_or("not sent".to_string(), |s| s.to_string()),
        ));
    }
    out.extend(sized);
    if warmup_requests > 0 {
        out.push(format!(
            "warm-up: {} requests{} before measuring, excluded below",
            warmup_requests,
            if cfg.warmup_ns > 0 {
                format!(
                    " and {} (whichever ends later)",
                    format_duration(Duration::from_nanos(cfg.warmup_ns))
                )
            } else {
                String::new()
            }
        ));
    }
    let open = cfg
        .stages
        .iter()
        .any(|s| matches!(s.load, Load::Open { .. }));
    let multi: Vec<&str> = cfg
        .scenarios
        .iter()
        .filter(|s| s.turns.max > 1)
        .map(|s| s.name.as_str())
        .collect();
    if open && !multi.is_empty() {
        out.push(format!(
            "open-loop rates count conversation starts; the turns of {} follow their conversation, so requests/s exceed the rate",
            multi.join(", ")
        ));
    }
    if !multi.is_empty() {
        out.push(
            "latency of a later turn is counted from when it was due: its conversation's previous reply plus the think time".to_string(),
        );
    }
    out
}

/// One line saying what the run will do, in `stages` (`cfg`'s, sized).
fn describe(cfg: &BenchConfig, stages: &[StagePlan]) -> String {
    let stages: Vec<String> = stages
        .iter()
        .map(|s| {
            let load = match s.load {
                Load::Offline => "offline".to_string(),
                Load::Closed { concurrency } => format!("concurrency {concurrency}"),
                Load::Open {
                    kind,
                    rate_from,
                    rate_to,
                } if rate_from == rate_to => format!("{} {rate_from} req/s", kind.name()),
                Load::Open {
                    kind,
                    rate_from,
                    rate_to,
                } => format!("{} {rate_from}→{rate_to} req/s", kind.name()),
            };
            let mut length = match (s.duration_ns.map(Duration::from_nanos), s.requests) {
                (Some(d), Some(r)) => format!("{} or {r} requests", format_duration(d)),
                (Some(d), None) => format_duration(d),
                (None, Some(r)) => format!("{r} requests"),
                (None, None) => "ever".to_string(),
            };
            if let Some(min) = s.min_ns.map(|m| format_duration(Duration::from_nanos(m))) {
                let at_least = match s.requests {
                    Some(r) if r > 0 => format!("at least {r} requests and {min}"),
                    _ => format!("at least {min}"),
                };
                length = match s.duration_ns.map(Duration::from_nanos) {
                    Some(cap) => format!("{at_least} (at most {})", format_duration(cap)),
                    None => at_least,
                };
            }
            format!("{load} for {length}")
        })
        .collect();
    format!(
        "{}{}, {}",
        stages.join(", then "),
        if cfg.scenarios.len() > 1 {
            format!(" over {} scenarios", cfg.scenarios.len())
        } else {
            String::new()
        },
        if cfg.stream {
            "streaming"
        } else {
            "non-streaming"
        }
    )
}

/// `results/<UTC timestamp>`, made unique with a suffix when needed.
pub(crate) fn default_out_dir(wall: u64) -> PathBuf {
    let stamp: String = crate::clock::format_utc(wall)
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    let mut dir = Path::new("results").join(&stamp);
    let mut n = 2;
    while dir.exists() {
        dir = Path::new("results").join(format!("{stamp}-{n}"));
        n += 1;
    }
    dir
}
