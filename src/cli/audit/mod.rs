//! `llmload audit`: MLPerf's compliance audits, each made of bench runs.
//! Today one: `output-caching` (TEST04). Its command line is the audit's
//! own flags plus every `bench` flag (endpoint, model, API, dataset, load
//! shape, TLS…), parsed by `BenchArgs` itself so the two never drift
//! (`args`).

pub(crate) mod args;
mod output_caching;
mod verdict;

use argh::FromArgs;

pub(crate) use output_caching::{AuditParams, AuditStatus, run_output_caching};

use crate::cli::{bench, errln};

/// Run an MLPerf compliance audit against an endpoint.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "audit")]
pub(crate) struct AuditArgs {
    #[argh(subcommand)]
    test: AuditTest,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum AuditTest {
    OutputCaching(Box<args::OutputCachingArgs>),
}

/// Runs the chosen audit; returns the exit status.
pub(crate) fn run(args: AuditArgs) -> i32 {
    match args.test {
        AuditTest::OutputCaching(a) => output_caching_cli(*a),
    }
}

/// The command line's checks (flags named as flags), then the audit.
fn output_caching_cli(a: args::OutputCachingArgs) -> i32 {
    const WHO: &str = "llmload audit output-caching";
    let params: AuditParams = a.params();
    if let Err((field, why)) = params.check() {
        errln!("{WHO}: --{}: {why}", field.replace('_', "-"));
        return AuditStatus::Usage as i32;
    }
    // Each phase's length is the audit's to set.
    for (given, flag, instead) in [
        (
            a.bench.requests.is_some(),
            "--requests",
            "--samples and --audit-samples",
        ),
        (
            a.bench.duration.is_some(),
            "--duration",
            "--samples and --audit-samples",
        ),
    ] {
        if given {
            errln!("{WHO}: {flag}: the phases are counted by {instead}");
            return AuditStatus::Usage as i32;
        }
    }
    match bench::profile_of(&a.bench) {
        Ok((profile, origin)) => run_output_caching(profile, &origin, &params),
        Err(e) => {
            errln!("{WHO}: {e}");
            AuditStatus::Usage as i32
        }
    }
}
