//! One file per subcommand. Each parses its flags into a validated config and
//! hands it to the library; each returns the process exit status. What they
//! print goes through `outln!`/`errln!`, which never panic.

pub(crate) mod audit;
pub(crate) mod bench;
pub(crate) mod benchmark;
pub(crate) mod cause;
pub(crate) mod compare;
pub(crate) mod datasets;
pub(crate) mod eval;
pub mod help;
pub(crate) mod info;
pub(crate) mod init;
pub(crate) mod merge;
pub(crate) mod mlperf_status;
pub(crate) mod models;
pub(crate) mod probe;
pub(crate) mod report;
pub(crate) mod serve;
pub mod spelling;
pub mod usage;
pub(crate) mod validate;

use std::fmt;
use std::io::{self, Write};

use argh::FromArgs;

pub use help::fill_help as help_with_defaults;

/// Where `emit` writes.
#[derive(Clone, Copy)]
pub(crate) enum To {
    Out,
    Err,
}

/// Writes `args` to stdout or stderr and ignores a failure: a closed pipe
/// (`llmload bench … | head -1`; Rust ignores SIGPIPE, so it is EPIPE) or a
/// full disk behind a redirect is the reader's choice, not the command's
/// failure, and must neither panic — as `print!` does — nor change the exit
/// status. Files a command writes report their own errors.
pub(crate) fn emit(to: To, args: fmt::Arguments<'_>) {
    let _ = match to {
        To::Out => io::stdout().lock().write_fmt(args),
        To::Err => io::stderr().lock().write_fmt(args),
    };
}

/// `print!` to stdout that never panics (see `emit`).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::emit($crate::cli::To::Out, format_args!($($arg)*))
    };
}

/// `println!` to stdout that never panics (see `emit`).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::emit($crate::cli::To::Out, format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprintln!` that never panics (see `emit`).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::emit($crate::cli::To::Err, format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {errln, out, outln};

/// llmload: load generator and benchmark for LLM inference endpoints and gateways.
#[derive(FromArgs, Debug)]
pub struct Top {
    #[argh(subcommand)]
    command: Command,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Command {
    Bench(Box<bench::BenchArgs>),
    Audit(audit::AuditArgs),
    Benchmark(benchmark::BenchmarkArgs),
    Compare(compare::CompareArgs),
    Report(report::ReportArgs),
    Merge(merge::MergeArgs),
    Serve(serve::ServeArgs),
    Init(init::InitArgs),
    Validate(validate::ValidateArgs),
    ValidateYaml(validate::ValidateYamlArgs),
    Probe(probe::ProbeArgs),
    Info(info::InfoArgs),
    Eval(eval::EvalArgs),
    Datasets(datasets::DatasetsArgs),
}

/// The exit status of a command line argh refused: 1 for `bench`, whose 2
/// means a broken threshold, and for MLPerf-mode command lines, as MLPerf's
/// parser exits; 2 for the others, which scripts tell apart from a
/// command's own failure (1).
pub fn usage_status(args: &[&str]) -> i32 {
    if spelling::is_mlperf(args) {
        return mlperf_status::FAILED;
    }
    match args.first() {
        Some(&"bench") => 1,
        _ => 2,
    }
}

/// Command lines answered before argh reads them: MLPerf's `eval`, whose
/// arguments (flags first) argh's positional list cannot take. `args` are
/// normalized (`spelling::normalize`).
pub fn early(args: &[&str]) -> Option<i32> {
    match args {
        ["eval", rest @ ..] if !rest.contains(&"--help") => Some(eval::run(eval::EvalArgs {})),
        _ => None,
    }
}

/// Runs the chosen subcommand and returns the exit status.
pub fn run(top: Top) -> i32 {
    match top.command {
        Command::Bench(args) => bench::run(*args),
        Command::Audit(args) => audit::run(args),
        Command::Benchmark(args) => benchmark::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Init(args) => init::run(args),
        Command::Validate(args) => validate::run(args),
        Command::ValidateYaml(args) => validate::run_yaml(args),
        Command::Probe(args) => probe::run(args),
        Command::Info(args) => info::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Datasets(args) => datasets::run(args),
    }
}
