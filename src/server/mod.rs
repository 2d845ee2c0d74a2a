//! The built-in mock LLM endpoint (`llmload serve`, the default benchmark
//! target, and the peer of every integration test): OpenAI chat
//! (`POST /v1/chat/completions`) and text completions (`POST
//! /v1/completions`), SGLang's `POST /generate`, Anthropic's `POST
//! /v1/messages` — each streamed or not — and `GET /v1/models`, with exact
//! token timing, deterministic fault injection (error statuses, malformed
//! responses of several kinds, resets, stalls, endless streams, in-band
//! errors, dripped bytes), reasoning tokens, an optional API key and
//! an optional list of served models.
//!
//! It is also a peer that must survive its own clients: a connection that
//! waits on its client past the idle timeout is closed, connections over a
//! per-worker cap are answered 503, large request bodies share a per-worker
//! input budget (503 when taken, 413 over the cap, 431 for a head over 64
//! KiB), a non-streamed reply is capped (it is built whole), and a worker
//! out of descriptors retries `accept` on a timer.
//!
//! With `--tls-cert` and `--tls-key` every API is served over TLS
//! (rustls): the configuration is read once, before the workers fork, so
//! they share one ticket key and a session resumes on whichever worker
//! accepts the next connection; each connection holds its TLS session
//! beside its socket, and nothing above the connection's reads and writes
//! knows (`conn`). `--tls-client-ca` requires client certificates.
//!
//! Each of `workers` forked processes runs one mio event loop on its own
//! `SO_REUSEPORT` socket; tokens are paced by a timerfd inside that loop,
//! never by a thread or a sleep per request, so one worker holds thousands
//! of concurrent streams and answers small requests at well over 100k/s. The
//! price is the process model: counters live in a shared mapping made before
//! `fork()`, and the server is stopped by signalling its worker PIDs.
//!
//! Modules: `supervisor` (bind, fork, stop), `worker` (event loop), `conn`
//! (one connection's state machine), `timer` (deadline heap and timerfd),
//! `cache` (the bodies seen, for `--cache-repeats`), `answers` (replies
//! taken from the prompt: `--echo`, `--answers`),
//! `formats` (request parsing and response bytes, one module per wire
//! format), `head` (HTTP heads), `access` (API key, served models),
//! `faults` (which requests fail), `stats` (shared counters), `metrics`
//! (`GET /metrics`: those counters as Prometheus text). Numbers are
//! written by `crate::ascii`, raw socket options by `sys::socket`.

mod access;
mod answers;
mod cache;
pub(crate) mod conn;
mod faults;
pub mod formats;
pub(crate) mod head;
mod metrics;
mod stats;
mod supervisor;
mod timer;
mod worker;

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

pub use access::ApiKey;
pub use answers::{Choice, Replies};
pub use conn::{HUGE_HEAD, MALFORMED};
pub use faults::{ERROR_STATUSES, MalformedKind};
pub use metrics::MetricsNames;
pub use stats::ServerStats;

/// Most worker processes one server may fork.
pub const MAX_WORKERS: usize = 1024;

/// Default of `--idle-timeout`.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of `--max-connections` (per worker).
pub const MAX_CONNECTIONS: usize = 10_000;
/// Default of `--input-budget` (bytes, per worker).
pub const INPUT_BUDGET: u64 = 256 << 20;
/// Smallest `--input-budget` accepted.
pub const MIN_INPUT_BUDGET: u64 = 1 << 20;
/// Largest request body (413 above); a smaller `--input-budget` lowers it.
pub const MAX_BODY: u64 = conn::MAX_BODY;

/// Everything the server needs, resolved from flags.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub workers: usize,
    pub ttft: Duration,
    pub tpot: Duration,
    pub output_tokens: Option<u32>,
    pub error_rate: f64,
    pub malformed_rate: f64,
    pub reset_rate: f64,
    /// Share of requests answered 200 with an in-band error object.
    pub inband_error_rate: f64,
    /// Share of requests whose response stops mid-way, the connection held.
    pub stall_rate: f64,
    /// Share of requests whose response never ends.
    pub endless_rate: f64,
    /// The statuses injected errors cycle through, a burst each (503 when
    /// empty); each one of `ERROR_STATUSES`.
    pub error_statuses: Vec<u16>,
    /// Consecutive requests one error burst takes.
    pub error_burst: u32,
    /// Tokens sent before a mid-stream reset, stall or in-band error
    /// (`None`: half the response).
    pub fault_after: Option<u32>,
    /// What a malformed response looks like.
    pub malformed_kind: MalformedKind,
    /// Send every response one byte per this interval (zero: at once).
    pub drip: Duration,
    /// Close a connection that has waited this long on its client: for a
    /// whole request after opening or after its previous response, or for
    /// it to read (zero: never).
    pub idle_timeout: Duration,
    /// Connections one worker serves at once; more are answered 503.
    pub max_connections: usize,
    /// Bytes of large request input one worker holds at once (requests
    /// over 64 KiB reserve their size from it; none may exceed it).
    pub input_budget: u64,
    /// The first this many output tokens are reasoning (chat, Anthropic).
    pub reasoning_tokens: u32,
    /// Answer streaming requests with one JSON body anyway.
    pub ignore_stream: bool,
    /// Report no usage in OpenAI chat and completions responses (a server
    /// whose token counts must come from elsewhere).
    pub no_usage: bool,
    /// Model names requests may ask for; empty means any.
    pub served_models: Vec<String>,
    /// The key every request must carry, if any.
    pub api_key: Option<ApiKey>,
    pub pin: Option<usize>,
    /// Serve over TLS with this certificate chain (PEM, leaf first) and
    /// `tls_key`; both or neither.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Require a client certificate signed by this CA (PEM); needs TLS.
    pub tls_client_ca: Option<PathBuf>,
    /// Issue no session tickets and keep no session cache: every TLS
    /// handshake is a full one.
    pub tls_no_resumption: bool,
    /// Answer a request whose body this worker has seen before at once, all
    /// tokens with no TTFT or TPOT delay (an output cache).
    pub cache_repeats: bool,
    /// Answer with the prompt's text (after `answers`, when both are set).
    pub echo: bool,
    /// A JSONL file of `{"prompt", "reply"}` objects: a request whose
    /// prompt is there gets that reply.
    pub answers: Option<PathBuf>,
    /// Whose names `GET /metrics` uses.
    pub metrics_names: MetricsNames,
}

/// What the workers share, built once in the parent before they fork.
#[derive(Clone, Default)]
pub(crate) struct Shared {
    /// The TLS configuration: one ticket key for every worker.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Replies taken from prompts (`--echo`, `--answers`).
    pub replies: Option<Arc<Replies>>,
}

impl Default for ServerConfig {
    /// One worker on an ephemeral loopback port, no delays, no faults, no
    /// reasoning, no key, any model, the default limits.
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            workers: 1,
            ttft: Duration::ZERO,
            tpot: Duration::ZERO,
            output_tokens: None,
            error_rate: 0.0,
            malformed_rate: 0.0,
            reset_rate: 0.0,
            inband_error_rate: 0.0,
            stall_rate: 0.0,
            endless_rate: 0.0,
            error_statuses: Vec::new(),
            error_burst: 1,
            fault_after: None,
            malformed_kind: MalformedKind::default(),
            drip: Duration::ZERO,
            idle_timeout: IDLE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            input_budget: INPUT_BUDGET,
            reasoning_tokens: 0,
            ignore_stream: false,
            no_usage: false,
            served_models: Vec::new(),
            api_key: None,
            pin: None,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            tls_no_resumption: false,
            cache_repeats: false,
            echo: false,
            answers: None,
            metrics_names: MetricsNames::Llmload,
        }
    }
}

impl ServerConfig {
    /// Checks the values a user can get wrong, naming the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.workers == 0 {
            return Err("--workers must be at least 1".to_string());
        }
        if self.workers > MAX_WORKERS {
            return Err(format!(
                "--workers {} is more than the limit of {MAX_WORKERS}",
                self.workers
            ));
        }
        for (flag, rate) in [
            ("--error-rate", self.error_rate),
            ("--malformed-rate", self.malformed_rate),
            ("--reset-rate", self.reset_rate),
            ("--inband-error-rate", self.inband_error_rate),
            ("--stall-rate", self.stall_rate),
            ("--endless-rate", self.endless_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(format!("{flag} must be between 0 and 1, got {rate}"));
            }
        }
        for &code in &self.error_statuses {
            if !ERROR_STATUSES.contains(&code) {
                return Err(format!(
                    "--error-status {code} is not one of {ERROR_STATUSES:?}"
                ));
            }
        }
        if self.error_statuses.len() > faults::MAX_ERROR_STATUSES {
            return Err(format!(
                "--error-status lists {} statuses; at most {} are cycled",
                self.error_statuses.len(),
                faults::MAX_ERROR_STATUSES
            ));
        }
        if self.error_burst == 0 {
            return Err("--error-burst must be at least 1".to_string());
        }
        if self.max_connections == 0 {
            return Err("--max-connections must be at least 1".to_string());
        }
        if self.input_budget < MIN_INPUT_BUDGET {
            return Err(format!(
                "--input-budget {} is under the minimum of {MIN_INPUT_BUDGET} bytes (1 MiB)",
                self.input_budget
            ));
        }
        if let Some(n) = self.output_tokens
            && n > formats::MAX_OUTPUT_TOKENS
        {
            return Err(format!(
                "--output-tokens {n} is more than the limit of {}",
                formats::MAX_OUTPUT_TOKENS
            ));
        }
        match self.output_tokens {
            Some(n) if self.reasoning_tokens > n => {
                return Err(format!(
                    "--reasoning-tokens {} is more than --output-tokens {n}; \
                     reasoning tokens are part of the output",
                    self.reasoning_tokens
                ));
            }
            _ if self.reasoning_tokens > formats::MAX_OUTPUT_TOKENS => {
                return Err(format!(
                    "--reasoning-tokens {} is more than the limit of {}",
                    self.reasoning_tokens,
                    formats::MAX_OUTPUT_TOKENS
                ));
            }
            _ => {}
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => return Err("--tls-cert needs --tls-key".to_string()),
            (None, Some(_)) => return Err("--tls-key needs --tls-cert".to_string()),
            (None, None) if self.tls_client_ca.is_some() => {
                return Err("--tls-client-ca needs --tls-cert and --tls-key".to_string());
            }
            (None, None) if self.tls_no_resumption => {
                return Err("--tls-no-resumption needs --tls-cert and --tls-key".to_string());
            }
            _ => {}
        }
        for name in &self.served_models {
            if name.is_empty() {
                return Err("--served-model must not be empty".to_string());
            }
        }
        if let Some(first) = self.pin {
            let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
                .map_err(|e| format!("cannot read this process's CPU set: {e}"))?;
            for cpu in first..first.saturating_add(self.workers) {
                if !allowed.is_set(cpu).unwrap_or(false) {
                    return Err(format!(
                        "--pin {first} with {} worker(s) needs CPUs {first} to {}, \
                         but CPU {cpu} is not available to this process",
                        self.workers,
                        first + self.workers - 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether the server speaks TLS.
    pub fn tls(&self) -> bool {
        self.tls_cert.is_some()
    }

    /// The replies taken from prompts, the answers file read once, before
    /// the workers fork: they share the map copy-on-write.
    fn replies(&self) -> Result<Option<Arc<Replies>>, String> {
        Ok(match &self.answers {
            Some(path) => Some(Arc::new(Replies::load(path, self.echo)?)),
            None if self.echo => Some(Arc::new(Replies::echo())),
            None => None,
        })
    }

    /// The TLS configuration every worker serves with, read from the files
    /// once, before the workers fork: they share its ticket key, so a
    /// session resumes whichever worker accepts the next connection.
    fn tls_config(&self) -> Result<Option<Arc<rustls::ServerConfig>>, String> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                let config = crate::tls::server::config(
                    cert,
                    key,
                    self.tls_client_ca.as_deref(),
                    !self.tls_no_resumption,
                )
                // The shared reader says "key file"; here it has a flag.
                .map_err(|e| match e.strip_prefix("key file ") {
                    Some(rest) => format!("--tls-key {rest}"),
                    None => e,
                })?;
                Ok(Some(config))
            }
            _ => Ok(None),
        }
    }
}

/// A running server. Dropping it stops the workers (SIGTERM, then waits).
#[derive(Debug)]
pub struct ServerHandle {
    /// The address bound, with the real port when port 0 was asked for.
    pub addr: SocketAddr,
    /// It speaks TLS (`https://`).
    pub tls: bool,
    workers: supervisor::Workers,
}

impl ServerHandle {
    /// Worker process ids, worker 0 first.
    pub fn pids(&self) -> &[i32] {
        self.workers.pids()
    }

    /// Counters so far, summed over the workers (they keep running).
    pub fn stats(&self) -> ServerStats {
        self.workers.counters().total()
    }

    /// Counters so far, one entry per worker.
    pub fn worker_stats(&self) -> Vec<ServerStats> {
        self.workers.counters().per_worker()
    }

    /// Stops every worker (SIGTERM by PID, then `waitpid`; SIGKILL after 5 s)
    /// and returns the final counters.
    pub fn stop(mut self) -> ServerStats {
        self.workers.terminate();
        self.stats()
    }
}

/// Binds `cfg.listen` (one `SO_REUSEPORT` socket per worker), forks the
/// workers, and returns once each has reported ready; connections made
/// after that are served, and even during start-up they queue.
///
/// `PR_SET_PDEATHSIG` ties the workers to the *thread* that calls this: if
/// that thread exits, they get SIGTERM. Call it from a thread that outlives
/// the server (the main thread, in the binary).
pub fn spawn(cfg: &ServerConfig) -> Result<ServerHandle, String> {
    cfg.validate()?;
    let shared = Shared {
        tls: cfg.tls_config()?,
        replies: cfg.replies()?,
    };
    let (addr, workers) = supervisor::start(cfg, shared)?;
    Ok(ServerHandle {
        addr,
        tls: cfg.tls(),
        workers,
    })
}

/// Runs the server in the foreground: prints the bound address as the first
/// line of stdout (`https://ADDR` with TLS), serves until SIGINT or SIGTERM, then prints the final
/// counters as one JSON line. A worker that dies is an error.
pub fn run(cfg: &ServerConfig) -> Result<(), String> {
    cfg.validate()?;
    // Blocked before the workers exist, so a signal that arrives right after
    // the address is printed waits for `sigwait` instead of killing the
    // process. Workers set their own mask.
    let mut waited = SigSet::empty();
    waited.add(Signal::SIGINT);
    waited.add(Signal::SIGTERM);
    waited.add(Signal::SIGCHLD);
    let mut old = SigSet::empty();
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&waited), Some(&mut old))
        .map_err(|e| format!("cannot block signals: {e}"))?;
    let result = serve_until_signal(cfg, &waited);
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    result
}

fn serve_until_signal(cfg: &ServerConfig, waited: &SigSet) -> Result<(), String> {
    let mut handle = spawn(cfg)?;
    supervisor::print_addr(handle.addr, handle.tls);
    if cfg.tls() {
        // For the person at the terminal; stdout's first line stays the
        // address alone.
        let clients = match &cfg.tls_client_ca {
            Some(ca) => format!(
                "client certificates required, signed by a CA in '{}'",
                ca.display()
            ),
            None => "no client certificate asked for".to_string(),
        };
        let mut err = io::stderr().lock();
        let _ = writeln!(
            err,
            "llmload serve: TLS on (TLS 1.2 and 1.3, ALPN http/1.1); {clients}"
        );
    }
    let failure = loop {
        match waited.wait() {
            Ok(Signal::SIGCHLD) => {
                if let Some(msg) = handle.workers.reap_exited() {
                    break Some(msg);
                }
            }
            Ok(_) => break None,
            Err(e) => break Some(format!("waiting for signals: {e}")),
        }
    };
    let stats = handle.stop();
    let line = serde_json::to_string(&stats).unwrap_or_default();
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    failure.map_or(Ok(()), Err)
}
