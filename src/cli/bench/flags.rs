//! `llmload bench` flags, and their translation into a `Profile` that holds
//! only the flags actually given, so that flags override a `--profile` field
//! by field. Every flag is optional here: defaults live in one place, the
//! profile's (`config::profile::defaults`), and the help names them by
//! placeholder (`{TIMEOUT}`), filled in by `help::with_defaults`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use crate::config::bytes::bytes_flag;
use crate::config::duration::duration_flag;
use crate::config::profile::{Correlation, HumanBytes, HumanDuration, Profile};
use crate::http::headers::parse_header_flag;

/// Benchmark an endpoint (with no --endpoint: the built-in one).
#[derive(FromArgs, Debug, Default)]
#[argh(
    subcommand,
    name = "bench",
    note = "When several exit statuses apply, the first of 130, 4, 3, 2, 1 is used.",
    error_code(0, "the run is complete and every threshold passed"),
    error_code(
        1,
        "bad usage or configuration, the run could not start, or none succeeded"
    ),
    error_code(2, "a threshold failed"),
    error_code(
        3,
        "the run is incomplete: a worker lost, records unreported or corrupt"
    ),
    error_code(4, "some results could not be written (the report was still printed)"),
    error_code(
        130,
        "stopped by SIGINT, SIGTERM or SIGHUP (results written, marked interrupted)"
    )
)]
pub(crate) struct BenchArgs {
    /// a run profile (JSON): every flag has a field there; flags given here
    /// override it (llmload init writes one)
    #[argh(option)]
    pub profile: Option<PathBuf>,

    /// an MLPerf config (YAML, inference-endpoint's schema) read as a
    /// profile: flags given here override it
    #[argh(option)]
    pub config: Option<PathBuf>,

    /// endpoint URL, http[s]://host[:port][/path] (default path from --api); without
    /// it, a built-in endpoint (ttft {BUILTIN_TTFT}, tpot {BUILTIN_TPOT}) is
    /// started and measured
    #[argh(option)]
    pub endpoint: Option<String>,

    /// several endpoint URLs sharing one workload, comma-separated (the same
    /// as a comma list in --endpoint): each worker spreads its connections
    /// over them in turn; only the URLs differ, every other setting is shared
    #[argh(option)]
    pub endpoints: Option<String>,

    /// wire format: openai-chat, openai-completions, sglang or anthropic
    /// (default {API})
    #[argh(option)]
    pub api: Option<String>,

    /// load shape: offline, poisson, uniform or concurrency (default:
    /// poisson when --rate is given, else concurrency)
    #[argh(option)]
    pub mode: Option<String>,

    /// arrivals per second for poisson and uniform modes (with --preset
    /// mlperf in offline and concurrency modes: the rate that sizes the
    /// request count, MLPerf's --target-qps)
    #[argh(option)]
    pub rate: Option<f64>,

    /// requests kept in flight in concurrency mode (default {CONCURRENCY})
    #[argh(option)]
    pub concurrency: Option<usize>,

    /// connections across all workers: the in-flight bound in offline and
    /// open-loop modes (default {CONNECTIONS}; concurrency mode uses
    /// --concurrency)
    #[argh(option)]
    pub connections: Option<usize>,

    /// measured run length, e.g. 30s (default {DURATION} unless --requests is
    /// given); with --preset mlperf a minimum that only sizes the request
    /// count, as --min-duration
    #[argh(option, from_str_fn(duration_flag))]
    pub duration: Option<Duration>,

    /// measured requests to issue (offline default {OFFLINE_REQUESTS}); with
    /// --preset mlperf the exact count (MLPerf's --num-samples)
    #[argh(option)]
    pub requests: Option<u64>,

    /// run rules and settings of MLPerf Inference Endpoint: mlperf (prompts
    /// untouched, order shuffle, scheduler and dataloader seeds
    /// {MLPERF_SEED}, max tokens {MLPERF_MAX_TOKENS}, streaming off offline
    /// and on otherwise; the duration sizes the request count: ceil(rate ×
    /// duration × 1.1) rounded up to whole dataset passes, rate
    /// {MLPERF_QPS}/s when not given, duration {MLPERF_MIN_DURATION} when not
    /// given); every setting given explicitly still wins
    #[argh(option)]
    pub preset: Option<String>,

    /// issue until at least this long is measured (with --min-requests:
    /// until both hold); with --preset mlperf it sizes the request count
    #[argh(option, from_str_fn(duration_flag))]
    pub min_duration: Option<Duration>,

    /// issue at least this many measured requests (with --preset mlperf
    /// rounded up to whole dataset passes)
    #[argh(option)]
    pub min_requests: Option<u64>,

    /// wall-clock cap on the measured run; 0 for none (with --preset mlperf
    /// the only clock)
    #[argh(option, from_str_fn(duration_flag))]
    pub max_duration: Option<Duration>,

    /// run this long before measuring; excluded from statistics (default
    /// {WARMUP})
    #[argh(option, from_str_fn(duration_flag))]
    pub warmup: Option<Duration>,

    /// warm-up by count: issue this many requests with the run's load shape
    /// before measuring, excluded from statistics (with --warmup, measuring
    /// starts when both are done)
    #[argh(option)]
    pub warmup_requests: Option<u64>,

    /// open-loop inter-arrival law for stages of a profile: poisson or uniform
    /// (default {ARRIVAL})
    #[argh(option)]
    pub arrival: Option<String>,

    /// open loop: at most this many requests in flight; later arrivals wait,
    /// charged from their scheduled time (default: --connections)
    #[argh(option)]
    pub openloop_max_inflight: Option<u64>,

    /// seed for arrival times, sample order and synthetic prompts (default
    /// {SEED}): same seed, same schedule; when given, also sent as the sampling seed
    /// (with --preset mlperf only that)
    #[argh(option)]
    pub seed: Option<u64>,

    /// seed of the arrival schedule alone (default: --seed; with --preset
    /// mlperf {MLPERF_SEED})
    #[argh(option)]
    pub scheduler_seed: Option<u64>,

    /// seed of the sample order and synthetic prompts alone (default:
    /// --seed; with --preset mlperf {MLPERF_SEED})
    #[argh(option)]
    pub dataloader_seed: Option<u64>,

    /// MLPerf's early-stopping percentile estimates in the MLPerf result
    /// files: true or false (default {EARLY_STOPPING})
    #[argh(option)]
    pub early_stopping: Option<bool>,

    /// model name (default: the first model the endpoint lists at /v1/models)
    #[argh(option)]
    pub model: Option<String>,

    /// output tokens to request per response (default {MAX_TOKENS}; with
    /// --preset mlperf {MLPERF_MAX_TOKENS})
    #[argh(option)]
    pub max_tokens: Option<u32>,

    /// stream responses (default {STREAM}; with --preset mlperf off in
    /// offline mode)
    #[argh(switch)]
    pub stream: bool,

    /// ask for whole, non-streamed responses
    #[argh(switch)]
    pub no_stream: bool,

    /// dataset PATH[,key=value...]: JSONL, JSON array or CSV (by extension or
    /// format=); columns prompt=, system=, messages=, input_tokens=,
    /// max_tokens=, expected=; skip_invalid=true (default: built-in prompts)
    #[argh(option)]
    pub dataset: Option<String>,

    /// synthetic prompts: isl=N,osl=M[,isl_std=S,osl_std=T,dist=fixed|normal|uniform|lognormal,count=K]
    #[argh(option)]
    pub synthetic: Option<String>,

    /// sample order: sequential, shuffle (each pass), random or single:I
    /// (always row I, from 0) (default {ORDER}; with --preset mlperf shuffle)
    #[argh(option)]
    pub order: Option<String>,

    /// a HuggingFace tokenizer.json, a model directory, or a model id
    /// (org/name) in the local Hugging Face cache, for exact token counts
    /// (message prompts through the model's chat template, as MLPerf)
    #[argh(option)]
    pub tokenizer: Option<PathBuf>,

    /// where token counts come from: auto (usage, else --tokenizer, else
    /// text events), tokenizer (always --tokenizer, as MLPerf) or usage
    /// (never the tokenizer) (default {TOKEN_SOURCE})
    #[argh(option)]
    pub token_source: Option<String>,

    /// system prompt sent with every request
    #[argh(option)]
    pub system: Option<String>,

    /// extra request header 'Name: value' (repeatable)
    #[argh(option)]
    pub header: Vec<String>,

    /// API key sent as the API's auth header (default: $OPENAI_API_KEY);
    /// never written to any output
    #[argh(option)]
    pub api_key: Option<String>,

    /// read the API key from this file (trailing newline dropped): unlike
    /// --api-key, it stays out of the command line that ps shows
    #[argh(option)]
    pub api_key_file: Option<PathBuf>,

    /// https: a PEM file of CA certificates to trust beside the system store
    /// (may hold several)
    #[argh(option)]
    pub ca_cert: Option<PathBuf>,

    /// https: skip certificate verification, as curl -k does (the report
    /// says so)
    #[argh(switch)]
    pub insecure: bool,

    /// https: the name to verify and send as SNI instead of the URL's host
    /// (to test a gateway by its IP address)
    #[argh(option)]
    pub tls_server_name: Option<String>,

    /// https: a client certificate chain (PEM), for gateways that require
    /// one (mTLS); needs --client-key
    #[argh(option)]
    pub client_cert: Option<PathBuf>,

    /// https: the client certificate's private key (PEM); never shown
    #[argh(option)]
    pub client_key: Option<PathBuf>,

    /// reuse each connection for further requests: true or false (default
    /// {KEEP_ALIVE}); false opens a new connection for every request and the
    /// report shows connects/s and connect and handshake percentiles
    #[argh(option)]
    pub keep_alive: Option<bool>,

    /// sampling temperature
    #[argh(option)]
    pub temperature: Option<f64>,

    /// nucleus sampling top_p
    #[argh(option)]
    pub top_p: Option<f64>,

    /// stop sequence (repeatable)
    #[argh(option)]
    pub stop: Vec<String>,

    /// ask the server to ignore end-of-sequence, so outputs have the
    /// requested length (vLLM, SGLang, TensorRT-LLM)
    #[argh(switch)]
    pub ignore_eos: bool,

    /// minimum output tokens, where the API has it
    #[argh(option)]
    pub min_tokens: Option<u32>,

    /// JSON object merged into every request body, e.g. '{"top_k": 20}'
    #[argh(option)]
    pub extra_body: Option<String>,

    /// cache busting: bust (a per-conversation id in front of the first user
    /// message) or natural (prompts untouched); default {CACHE_MODE}
    /// (with --preset mlperf natural)
    #[argh(option)]
    pub cache_mode: Option<String>,

    /// header carrying each conversation's id (default {CORRELATION_HEADER};
    /// '' for none)
    #[argh(option)]
    pub correlation_header: Option<String>,

    /// per-request timeout from dispatch to the end of the response (default
    /// {TIMEOUT})
    #[argh(option, from_str_fn(duration_flag))]
    pub timeout: Option<Duration>,

    /// fail a streamed request with no first token within this time (default:
    /// --timeout; a non-streamed or non-2xx response is held to --timeout only)
    #[argh(option, from_str_fn(duration_flag))]
    pub ttft_timeout: Option<Duration>,

    /// connect timeout: the TCP connect and, for https, the TLS handshake
    /// (default {CONNECT_TIMEOUT})
    #[argh(option, from_str_fn(duration_flag))]
    pub connect_timeout: Option<Duration>,

    /// at the end of the run, or after Ctrl-C, SIGTERM or SIGHUP, how long
    /// in-flight requests may finish before they are aborted (default
    /// {DRAIN_TIMEOUT})
    #[argh(option, from_str_fn(duration_flag))]
    pub drain_timeout: Option<Duration>,

    /// worker processes (default: CPUs − 1, at least 1)
    #[argh(option)]
    pub workers: Option<usize>,

    /// pin the parent and each worker to distinct CPUs
    #[argh(switch)]
    pub pin: bool,

    /// output directory (default: results/<UTC timestamp>)
    #[argh(option)]
    pub out: Option<PathBuf>,

    /// print neither the live view nor the report at the end (it is still
    /// written, and printed to stderr when a file cannot be)
    #[argh(switch)]
    pub quiet: bool,

    /// print a progress line to stderr this often (default {LIVE_INTERVAL}; 0
    /// disables); on a terminal, a status block redrawn every second (or
    /// this often, if shorter) instead
    #[argh(option, from_str_fn(duration_flag))]
    pub live_interval: Option<Duration>,

    /// keep each response's text in events.jsonl
    #[argh(switch)]
    pub record_output: bool,

    /// output text kept per response, bytes or with a KiB/MiB/GiB suffix
    /// (default {MAX_OUTPUT_TEXT}); past it the text is cut and marked
    /// output_truncated (a conversation's turn fails as output_over_cap)
    #[argh(option, from_str_fn(bytes_flag))]
    pub max_output_text: Option<u64>,

    /// which phases run: perf, acc (the accuracy datasets alone) or both
    /// (unset: both when an accuracy dataset is given, else perf)
    #[argh(option)]
    pub phase: Option<String>,

    /// an accuracy dataset, [acc:]PATH[,key=value...] (repeatable): the
    /// dataset's keys plus expected=COL (unset: ground_truth, expected or
    /// answer), scorer=string_match|pass_at_1|rouge,
    /// extractor=identity|abcd|boxed_math|python_code|function_call,
    /// repeats=N, name=NAME, max_output_tokens=N, temperature=X, top_p=X;
    /// each row is asked once per repeat, in order, one request at a time
    #[argh(option)]
    pub accuracy_dataset: Vec<String>,

    /// build each prompt from a dataset row's columns, Python format style:
    /// 'Answer with the letter only. {question}' ({{ and }} are braces); for
    /// datasets without a template= key of their own
    #[argh(option)]
    pub prompt_template: Option<String>,

    /// service-level objectives a request must meet to count as good
    /// (goodput), any subset: 'ttft=200ms,tpot=40ms,e2e=10s'
    #[argh(option)]
    pub slo: Option<String>,

    /// whose definitions the headline numbers use: llmload, vllm, guidellm,
    /// aiperf or mlperf (default {METRICS_PRESET}); every tool's are in the
    /// definitions table either way
    #[argh(option)]
    pub metrics_preset: Option<String>,

    /// the endpoint's own Prometheus metrics, scraped during the run: a URL,
    /// auto (try <endpoint origin>/metrics once) or off (default
    /// {SERVER_METRICS})
    #[argh(option)]
    pub server_metrics: Option<String>,

    /// how often --server-metrics is scraped (default
    /// {SERVER_METRICS_INTERVAL})
    #[argh(option, from_str_fn(duration_flag))]
    pub server_metrics_interval: Option<Duration>,

    /// how workers move bytes: epoll, uring or auto (io_uring when the
    /// kernel offers it; default {IO}, or $LLMLOAD_IO)
    #[argh(option)]
    pub io: Option<String>,

    /// with io_uring, a kernel thread polls the submission queue (one
    /// busy core per worker, fewer syscalls)
    #[argh(switch)]
    pub uring_sqpoll: bool,

    /// which requests get a line in events.jsonl: all, errors or none
    /// (default {EVENTS})
    #[argh(option)]
    pub events: Option<String>,

    /// local addresses to open connections from, round-robin per
    /// connection, past one address's ephemeral ports:
    /// 127.0.0.1-127.0.0.4, or a,b,c
    #[argh(option)]
    pub source_addrs: Option<String>,

    /// run as shard I of N of one run (I from 1; e.g. 2/3): this process
    /// generates its part of the load the other flags describe (rates,
    /// concurrency and counts split, dataset rows partitioned, seeds
    /// derived); auto reads the scheduler's variables: JOB_COMPLETION_INDEX
    /// (Kubernetes Indexed Job, with --shards or $LLMLOAD_SHARDS),
    /// SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE
    #[argh(option)]
    pub shard: Option<String>,

    /// shards in the run: the count --shard auto needs under a Kubernetes
    /// Indexed Job (default: $LLMLOAD_SHARDS); with --shard I/N it must agree
    #[argh(option)]
    pub shards: Option<u32>,

    /// start the schedule at this instant, RFC 3339 (2026-12-02T11:00:00Z)
    /// or Unix seconds: workers are forked and connected first, then the
    /// run waits, so every shard given the same instant starts together (at
    /// most 24 h ahead; one already past starts at once, noted as late)
    #[argh(option)]
    pub start_at: Option<String>,
}

impl BenchArgs {
    /// The flags given, as a profile (everything else unset).
    pub(crate) fn to_profile(&self) -> Result<Profile, String> {
        if self.stream && self.no_stream {
            return Err("--stream and --no-stream contradict each other".into());
        }
        let d = |v: Option<Duration>| v.map(HumanDuration);
        let on = |b: bool| b.then_some(true);
        let mut headers = BTreeMap::new();
        for h in &self.header {
            let (k, v) = parse_header_flag(h)?;
            headers.insert(k, v);
        }
        let extra_body = match &self.extra_body {
            None => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(m)) => Some(m),
                Ok(_) => return Err(format!("--extra-body '{text}': expected a JSON object")),
                Err(e) => return Err(format!("--extra-body '{text}': not valid JSON: {e}")),
            },
        };
        // MLPerf's `--dataset acc:PATH` names an accuracy dataset.
        let mut accuracy = self.accuracy_dataset.clone();
        let perf_dataset = match &self.dataset {
            Some(d) if d.starts_with("acc:") => {
                accuracy.insert(0, d.clone());
                None
            }
            d => d.clone(),
        };
        Ok(Profile {
            endpoint: self.endpoint.clone(),
            api: self.api.clone(),
            model: self.model.clone(),
            mode: self.mode.clone(),
            rate: self.rate,
            concurrency: self.concurrency,
            duration: d(self.duration),
            requests: self.requests,
            warmup: d(self.warmup),
            arrival: self.arrival.clone(),
            connections: self.connections,
            openloop_max_inflight: self.openloop_max_inflight,
            max_tokens: self.max_tokens,
            stream: match (self.stream, self.no_stream) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            system: self.system.clone(),
            dataset: perf_dataset,
            synthetic: self.synthetic.clone(),
            order: self.order.clone(),
            tokenizer: self.tokenizer.clone(),
            token_source: self.token_source.clone(),
            temperature: self.temperature,
            top_p: self.top_p,
            stop: (!self.stop.is_empty()).then(|| self.stop.clone()),
            ignore_eos: on(self.ignore_eos),
            min_tokens: self.min_tokens,
            extra_body,
            headers: (!headers.is_empty()).then_some(headers),
            api_key: self.api_key.clone(),
            api_key_file: self.api_key_file.clone(),
            ca_cert: self.ca_cert.clone(),
            insecure: on(self.insecure),
            tls_server_name: self.tls_server_name.clone(),
            client_cert: self.client_cert.clone(),
            client_key: self.client_key.clone(),
            keep_alive: self.keep_alive,
            cache_mode: self.cache_mode.clone(),
            correlation: self.correlation_header.as_ref().map(|h| Correlation {
                header: Some(h.clone()),
                uuid_in_prompt: None,
            }),
            timeout: d(self.timeout),
            ttft_timeout: d(self.ttft_timeout),
            connect_timeout: d(self.connect_timeout),
            drain_timeout: d(self.drain_timeout),
            seed: self.seed,
            workers: self.workers,
            pin: on(self.pin),
            out: self.out.clone(),
            quiet: on(self.quiet),
            live_interval: d(self.live_interval),
            record_output: on(self.record_output),
            max_output_text: self.max_output_text.map(HumanBytes),
            phase: self.phase.clone(),
            accuracy_datasets: (!accuracy.is_empty()).then_some(accuracy),
            prompt_template: self.prompt_template.clone(),
            slo: self.slo.clone(),
            metrics_preset: self.metrics_preset.clone(),
            server_metrics: self.server_metrics.clone(),
            server_metrics_interval: d(self.server_metrics_interval),
            io: self.io.clone(),
            uring_sqpoll: on(self.uring_sqpoll),
            events: self.events.clone(),
            source_addrs: self.source_addrs.clone(),
            stages: None,
            scenarios: None,
            thresholds: None,
            endpoints: self
                .endpoints
                .as_deref()
                .map(|v| v.split(',').map(|u| u.trim().to_string()).collect()),
            preset: self.preset.clone(),
            warmup_requests: self.warmup_requests,
            min_duration: d(self.min_duration),
            min_requests: self.min_requests,
            max_duration: d(self.max_duration),
            scheduler_seed: self.scheduler_seed,
            dataloader_seed: self.dataloader_seed,
            early_stopping: self.early_stopping,
            shard: self.shard.clone(),
            shards: self.shards,
            start_at: self.start_at.clone(),
        })
    }
}
