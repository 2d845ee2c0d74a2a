//! `llmload serve`: the built-in mock LLM endpoint in the foreground.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use crate::cli::errln;
use crate::config::bytes::bytes_flag;
use crate::config::duration::duration_flag;
use crate::config::settings::Shown;
use crate::server::{self, ApiKey, MalformedKind, MetricsNames, ServerConfig};

/// What `serve` does when a flag is not given; its help shows them.
pub(crate) mod defaults {
    use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
    use std::time::Duration;

    use crate::config::profile::HumanBytes;
    use crate::config::settings::defaults;
    use crate::server::{self, MalformedKind, MetricsNames, formats};

    defaults! {
        LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8000));
        SERVE_WORKERS: usize = 1;
        TTFT: Duration = Duration::ZERO;
        TPOT: Duration = Duration::ZERO;
        /// A reply's length when the request asks for none.
        OUTPUT_TOKENS: u32 = formats::DEFAULT_OUTPUT_TOKENS;
        REASONING_TOKENS: u32 = 0;
        /// Sent for `--error-rate` without `--error-status`.
        ERROR_STATUS: u16 = 503;
        ERROR_BURST: u32 = 1;
        MALFORMED_KIND: MalformedKind = MalformedKind::StatusLine;
        DRIP: Duration = Duration::ZERO;
        IDLE_TIMEOUT: Duration = server::IDLE_TIMEOUT;
        MAX_CONNECTIONS: usize = server::MAX_CONNECTIONS;
        INPUT_BUDGET: HumanBytes = HumanBytes(server::INPUT_BUDGET);
        METRICS_NAMES: MetricsNames = MetricsNames::Llmload;
        /// The model /v1/models lists without --served-model.
        MOCK_MODEL: &str = formats::MODEL;
    }
}

impl Shown for MalformedKind {
    fn shown(&self) -> String {
        self.name().to_string()
    }
}

/// As `--metrics-names` spells it: its variant's name in lower case (a
/// test checks that it parses back).
impl Shown for MetricsNames {
    fn shown(&self) -> String {
        format!("{self:?}").to_lowercase()
    }
}

/// Run the built-in mock LLM endpoint with exact timing: OpenAI chat
/// (/v1/chat/completions) and text completions (/v1/completions), SGLang
/// (/generate) and Anthropic (/v1/messages), streamed or not, and /v1/models.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "serve")]
pub(crate) struct ServeArgs {
    /// address to listen on (default {LISTEN}); port 0 picks a free port
    /// and the chosen address is printed on the first line of stdout
    #[argh(option, default = "defaults::LISTEN")]
    pub listen: SocketAddr,

    /// worker processes sharing the port with SO_REUSEPORT (default
    /// {SERVE_WORKERS})
    #[argh(option, default = "defaults::SERVE_WORKERS")]
    pub workers: usize,

    /// time to first output token, from the request's arrival (default
    /// {TTFT})
    #[argh(option, from_str_fn(duration_flag), default = "defaults::TTFT")]
    pub ttft: Duration,

    /// gap between consecutive output tokens (default {TPOT})
    #[argh(option, from_str_fn(duration_flag), default = "defaults::TPOT")]
    pub tpot: Duration,

    /// output tokens per response (default: the request's
    /// max_completion_tokens / max_tokens / sampling_params.max_new_tokens,
    /// else {OUTPUT_TOKENS})
    #[argh(option)]
    pub output_tokens: Option<u32>,

    /// the first K output tokens are reasoning: chat sends them as
    /// reasoning_content, Anthropic as a thinking block; completions and
    /// SGLang send them as text. Usage still counts them (default
    /// {REASONING_TOKENS})
    #[argh(option, default = "defaults::REASONING_TOKENS")]
    pub reasoning_tokens: u32,

    /// share of generation requests answered with an error status and a
    /// JSON error body (0..1); deterministic: exactly floor(n*rate) of a
    /// worker's first n requests
    #[argh(option, default = "0.0")]
    pub error_rate: f64,

    /// a status of --error-rate: 429, 500, 502, 503 or 504 (repeatable:
    /// bursts take them in turn; default {ERROR_STATUS}); a 429 carries
    /// retry-after: 1
    #[argh(option, from_str_fn(status_code))]
    pub error_status: Vec<u16>,

    /// errors come N consecutive requests at a time: blocks of N requests
    /// are judged by --error-rate as one (default {ERROR_BURST})
    #[argh(option, default = "defaults::ERROR_BURST")]
    pub error_burst: u32,

    /// test fault: share of generation requests answered with a malformed
    /// response (see --malformed-kind), then closed (0..1, deterministic
    /// like --error-rate)
    #[argh(option, default = "0.0")]
    pub malformed_rate: f64,

    /// what a malformed response is: status-line (an HTTP-looking line that
    /// is not), garbage (4 KiB of binary), chunk-size (a stream whose second
    /// chunk size has 17 hex digits), huge-head (a 70 KiB head),
    /// endless-line (an event line that never ends), huge-length
    /// (Content-Length 10 GB and a body for as long as it is read), html (a
    /// 200 text/html page, kept alive) (default {MALFORMED_KIND})
    #[argh(
        option,
        from_str_fn(malformed_kind),
        default = "defaults::MALFORMED_KIND"
    )]
    pub malformed_kind: MalformedKind,

    /// test fault: share of generation requests whose connection is reset:
    /// streams after --fault-after tokens, others instead of the body (0..1)
    #[argh(option, default = "0.0")]
    pub reset_rate: f64,

    /// test fault: share of generation requests that stall: streams stop
    /// after --fault-after tokens, others never get their body; the
    /// connection stays open until the client closes it (0..1)
    #[argh(option, default = "0.0")]
    pub stall_rate: f64,

    /// test fault: share of generation requests answered with a stream that
    /// never ends: valid events paced by --tpot, each after the first
    /// carrying about 4 KiB of text, even when no stream was asked for (0..1)
    #[argh(option, default = "0.0")]
    pub endless_rate: f64,

    /// test fault: share of generation requests answered 200 with the
    /// format's error object instead of output: streams after --fault-after
    /// tokens, then properly ended; others as the body (0..1)
    #[argh(option, default = "0.0")]
    pub inband_error_rate: f64,

    /// output tokens a stream sends before an injected reset, stall or
    /// in-band error (default: half of them)
    #[argh(option)]
    pub fault_after: Option<u32>,

    /// test fault: send every response one byte per this interval, e.g.
    /// 1s (a slowloris server; default {DRIP}: at once)
    #[argh(option, from_str_fn(duration_flag), default = "defaults::DRIP")]
    pub drip: Duration,

    /// close a connection that has waited this long on its client: for a
    /// whole request (head and body) since it opened or since its previous
    /// response, or for it to read a response; 0 never (default
    /// {IDLE_TIMEOUT})
    #[argh(option, from_str_fn(duration_flag), default = "defaults::IDLE_TIMEOUT")]
    pub idle_timeout: Duration,

    /// connections one worker serves at once; a connection over the cap is
    /// answered 503 with retry-after and closed (default {MAX_CONNECTIONS})
    #[argh(option, default = "defaults::MAX_CONNECTIONS")]
    pub max_connections: usize,

    /// bytes of large request bodies one worker buffers at once, e.g.
    /// 256MiB: a request over 64 KiB reserves its size first and is
    /// answered 503 when the rest is taken; bodies over 64 MiB (or over
    /// this budget, if smaller) are answered 413, heads over 64 KiB 431
    /// (default {INPUT_BUDGET})
    #[argh(option, from_str_fn(bytes_flag), default = "defaults::INPUT_BUDGET.0")]
    pub input_budget: u64,

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
    /// /v1/models lists {MOCK_MODEL})
    #[argh(option)]
    pub served_model: Vec<String>,

    /// require this key in 'Authorization: Bearer KEY' or 'x-api-key: KEY'
    /// on every request, else 401 (default: no key); never printed
    #[argh(option)]
    pub api_key: Option<String>,

    /// pin worker k to CPU (first + k)
    #[argh(option)]
    pub pin: Option<usize>,

    /// serve every API over TLS (https) with this certificate chain (PEM,
    /// leaf first); needs --tls-key. The first line of stdout is then
    /// https://ADDR
    #[argh(option)]
    pub tls_cert: Option<PathBuf>,

    /// the private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1); never
    /// printed
    #[argh(option)]
    pub tls_key: Option<PathBuf>,

    /// require a client certificate signed by this CA (PEM) on every
    /// connection (mutual TLS); needs --tls-cert and --tls-key
    #[argh(option)]
    pub tls_client_ca: Option<PathBuf>,

    /// issue no session tickets and keep no session cache, so every TLS
    /// handshake is a full one (to measure a client's full-handshake cost)
    #[argh(switch)]
    pub tls_no_resumption: bool,

    /// answer a request whose body this worker has seen before at once,
    /// every token with no --ttft or --tpot delay (an output cache); first
    /// sightings stay paced; counted as cache_hits
    #[argh(switch)]
    pub cache_repeats: bool,

    /// answer each request with its prompt: the last user message (chat,
    /// Anthropic; a content array's text parts joined), the prompt
    /// (completions, of a batch the first) or text (SGLang); token ids as
    /// the ids joined by spaces. One token per word and the whitespace after
    /// it, paced by --ttft and --tpot; finish reason stop, or length when
    /// the request's max_tokens cuts the reply. --output-tokens and
    /// --reasoning-tokens do not apply; faults do. With --answers, for the
    /// prompts the file has no reply to
    #[argh(switch)]
    pub echo: bool,

    /// answer from a JSONL file of {"prompt": "...", "reply": "..."} lines
    /// ("answer" may name the reply; other keys are ignored): a request
    /// whose prompt (read as --echo reads it) is there gets that reply,
    /// split and capped as --echo's; any other the generated text (or its
    /// prompt, with --echo), counted as answers_missed
    #[argh(option)]
    pub answers: Option<PathBuf>,

    /// whose names GET /metrics uses for the server's own counters
    /// (responses under way, requests, prompt and output tokens): llmload
    /// (llmload_serve_*), vllm, sglang or tgi, so a client's table of a real
    /// server's names can be tested (default {METRICS_NAMES})
    #[argh(
        option,
        default = "defaults::METRICS_NAMES",
        from_str_fn(metrics_names)
    )]
    pub metrics_names: MetricsNames,
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
        stall_rate: args.stall_rate,
        endless_rate: args.endless_rate,
        error_statuses: if args.error_status.is_empty() {
            vec![defaults::ERROR_STATUS]
        } else {
            args.error_status
        },
        error_burst: args.error_burst,
        fault_after: args.fault_after,
        malformed_kind: args.malformed_kind,
        drip: args.drip,
        idle_timeout: args.idle_timeout,
        max_connections: args.max_connections,
        input_budget: args.input_budget,
        reasoning_tokens: args.reasoning_tokens,
        ignore_stream: args.ignore_stream,
        no_usage: args.no_usage,
        served_models: args.served_model,
        api_key: args.api_key.map(ApiKey::new).transpose()?,
        pin: args.pin,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        tls_client_ca: args.tls_client_ca,
        tls_no_resumption: args.tls_no_resumption,
        cache_repeats: args.cache_repeats,
        echo: args.echo,
        answers: args.answers,
        metrics_names: args.metrics_names,
    })
}

/// argh adapter: a status code (which ones are allowed, `validate` checks).
fn status_code(text: &str) -> Result<u16, String> {
    text.trim()
        .parse::<u16>()
        .map_err(|_| format!("'{text}' is not a status code; expected e.g. 429 or 503"))
}

fn metrics_names(text: &str) -> Result<MetricsNames, String> {
    MetricsNames::parse(text)
}

fn malformed_kind(text: &str) -> Result<MalformedKind, String> {
    MalformedKind::parse(text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes() {
        assert_eq!(status_code(" 503 "), Ok(503));
        assert!(status_code("5xx").is_err());
    }

    /// The help's defaults are the ones a run without the flags gets.
    #[test]
    fn shown_defaults_parse_back() {
        let d = defaults::METRICS_NAMES;
        assert_eq!(metrics_names(&d.shown()), Ok(d));
        let k = defaults::MALFORMED_KIND;
        assert_eq!(malformed_kind(&k.shown()), Ok(k));
        assert!(
            crate::server::ERROR_STATUSES.contains(&defaults::ERROR_STATUS),
            "an allowed status"
        );
    }
}
