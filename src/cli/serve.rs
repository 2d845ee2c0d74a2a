//! `llmload serve`: the built-in mock LLM endpoint in the foreground.

use std::net::SocketAddr;
use std::time::Duration;

use argh::FromArgs;

use crate::config::duration::duration_flag;
use crate::server::{self, ServerConfig};

/// Run the built-in OpenAI-compatible endpoint (a mock LLM with exact timing).
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "serve")]
pub struct ServeArgs {
    /// address to listen on (default 127.0.0.1:8000); port 0 picks a free port
    /// and the chosen address is printed on the first line of stdout
    #[argh(option, default = "\"127.0.0.1:8000\".parse().unwrap()")]
    pub listen: SocketAddr,

    /// worker processes sharing the port with SO_REUSEPORT (default 1)
    #[argh(option, default = "1")]
    pub workers: usize,

    /// time to first content token, from the request's arrival (default 0)
    #[argh(option, from_str_fn(duration_flag), default = "Duration::ZERO")]
    pub ttft: Duration,

    /// gap between consecutive content tokens (default 0)
    #[argh(option, from_str_fn(duration_flag), default = "Duration::ZERO")]
    pub tpot: Duration,

    /// content tokens per response (default: the request's
    /// max_completion_tokens or max_tokens, else 128)
    #[argh(option)]
    pub output_tokens: Option<u32>,

    /// share of chat requests answered 503 with a JSON error body (0..1);
    /// deterministic: exactly floor(n*rate) of a worker's first n requests
    #[argh(option, default = "0.0")]
    pub error_rate: f64,

    /// test fault: share of chat requests answered with bytes that are not
    /// HTTP, then closed (0..1, deterministic like --error-rate)
    #[argh(option, default = "0.0")]
    pub malformed_rate: f64,

    /// test fault: share of chat requests whose connection is reset: streams
    /// after half their tokens, others instead of the body (0..1)
    #[argh(option, default = "0.0")]
    pub reset_rate: f64,

    /// pin worker k to CPU (first + k)
    #[argh(option)]
    pub pin: Option<usize>,
}

/// Runs the server until SIGINT or SIGTERM; 1 on a bad flag, a busy
/// address or a worker that died.
pub fn run(args: ServeArgs) -> i32 {
    let cfg = ServerConfig {
        listen: args.listen,
        workers: args.workers,
        ttft: args.ttft,
        tpot: args.tpot,
        output_tokens: args.output_tokens,
        error_rate: args.error_rate,
        malformed_rate: args.malformed_rate,
        reset_rate: args.reset_rate,
        pin: args.pin,
    };
    match server::run(&cfg) {
        Ok(()) => 0,
        Err(msg) => {
            eprintln!("llmload serve: {msg}");
            1
        }
    }
}
