//! `llmload serve`: the built-in mock LLM endpoint in the foreground.

use std::net::SocketAddr;
use std::time::Duration;

use argh::FromArgs;

use crate::cli::errln;
use crate::config::duration::duration_flag;
use crate::server::{self, ApiKey, ServerConfig};

/// Run the built-in mock LLM endpoint with exact timing: OpenAI chat
/// (/v1/chat/completions) and text completions (/v1/completions), SGLang
/// (/generate) and Anthropic (/v1/messages), streamed or not, and /v1/models.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "serve")]
pub(crate) struct ServeArgs {
    /// address to listen on (default 127.0.0.1:8000); port 0 picks a free port
    /// and the chosen address is printed on the first line of stdout
    #[argh(option, default = "\"127.0.0.1:8000\".parse().unwrap()")]
    pub listen: SocketAddr,

    /// worker processes sharing the port with SO_REUSEPORT (default 1)
    #[argh(option, default = "1")]
    pub workers: usize,

    /// time to first output token, from the request's arrival (default 0)
    #[argh(option, from_str_fn(duration_flag), default = "Duration::ZERO")]
    pub ttft: Duration,

    /// gap between consecutive output tokens (default 0)
    #[argh(option, from_str_fn(duration_flag), default = "Duration::ZERO")]
    pub tpot: Duration,

    /// output tokens per response (default: the request's
    /// max_completion_tokens / max_tokens / sampling_params.max_new_tokens,
    /// else 128)
    #[argh(option)]
    pub output_tokens: Option<u32>,

    /// the first K output tokens are reasoning: chat sends them as
    /// reasoning_content, Anthropic as a thinking block; completions and
    /// SGLang send them as text. Usage still counts them (default 0)
    #[argh(option, default = "0")]
    pub reasoning_tokens: u32,

    /// share of generation requests answered 503 with a JSON error body
    /// (0..1); deterministic: exactly floor(n*rate) of a worker's first n
    /// requests
    #[argh(option, default = "0.0")]
    pub error_rate: f64,

    /// test fault: share of generation requests answered with bytes that
    /// are not HTTP, then closed (0..1, deterministic like --error-rate)
    #[argh(option, default = "0.0")]
    pub malformed_rate: f64,

    /// test fault: share of generation requests whose connection is reset:
    /// streams after half their tokens, others instead of the body (0..1)
    #[argh(option, default = "0.0")]
    pub reset_rate: f64,

    /// test fault: share of generation requests answered 200 with the
    /// format's error object instead of output: streams after half their
    /// tokens, then properly ended; others as the body (0..1)
    #[argh(option, default = "0.0")]
    pub inband_error_rate: f64,

    /// answer every request with one JSON body, even when it asks for a
    /// stream (a server that does not stream)
    #[argh(switch)]
    pub ignore_stream: bool,

    /// report no usage in OpenAI chat and completions responses (token
    /// counts must then come from events or a tokenizer)
    #[argh(switch)]
    pub no_usage: bool,

    /// a model name this server answers to (repeatable); requests naming
    /// any other get 404, and /v1/models lists these (default: any model;
    /// /v1/models lists llmload-mock)
    #[argh(option)]
    pub served_model: Vec<String>,

    /// require this key in 'Authorization: Bearer KEY' or 'x-api-key: KEY'
    /// on every request, else 401 (default: no key); never printed
    #[argh(option)]
    pub api_key: Option<String>,

    /// pin worker k to CPU (first + k)
    #[argh(option)]
    pub pin: Option<usize>,
}

/// Runs the server until SIGINT or SIGTERM; 1 on a bad flag, a busy
/// address or a worker that died.
pub(crate) fn run(args: ServeArgs) -> i32 {
    match config(args).and_then(|cfg| server::run(&cfg)) {
        Ok(()) => 0,
        Err(msg) => {
            errln!("llmload serve: {msg}");
            1
        }
    }
}

/// The server's configuration from the flags; the values themselves are
/// checked by `ServerConfig::validate`.
fn config(args: ServeArgs) -> Result<ServerConfig, String> {
    Ok(ServerConfig {
        listen: args.listen,
        workers: args.workers,
        ttft: args.ttft,
        tpot: args.tpot,
        output_tokens: args.output_tokens,
        error_rate: args.error_rate,
        malformed_rate: args.malformed_rate,
        reset_rate: args.reset_rate,
        inband_error_rate: args.inband_error_rate,
        reasoning_tokens: args.reasoning_tokens,
        ignore_stream: args.ignore_stream,
        no_usage: args.no_usage,
        served_models: args.served_model,
        api_key: args.api_key.map(ApiKey::new).transpose()?,
        pin: args.pin,
    })
}
