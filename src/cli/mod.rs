//! One file per subcommand. Each parses its flags into a validated config and
//! hands it to the library; each returns the process exit status.

pub(crate) mod bench;
pub(crate) mod compare;
pub(crate) mod init;
pub(crate) mod models;
pub(crate) mod probe;
pub(crate) mod serve;
pub(crate) mod validate;

use argh::FromArgs;

pub use bench::help_with_defaults;

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
    Compare(compare::CompareArgs),
    Serve(serve::ServeArgs),
    Init(init::InitArgs),
    Validate(validate::ValidateArgs),
    Probe(probe::ProbeArgs),
}

/// Runs the chosen subcommand and returns the exit status.
pub fn run(top: Top) -> i32 {
    match top.command {
        Command::Bench(args) => bench::run(*args),
        Command::Compare(args) => compare::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Init(args) => init::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Probe(args) => probe::run(args),
    }
}
