//! `llmload bench`.

use argh::FromArgs;

/// Benchmark an endpoint (or, with no --endpoint, the built-in one).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "bench")]
pub struct BenchArgs {
    /// endpoint URL
    #[argh(option)]
    pub endpoint: Option<String>,
}

pub fn run(args: BenchArgs) -> i32 {
    let _ = args;
    todo!("engine")
}
