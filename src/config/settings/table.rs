//! The declarations: one row per top-level setting, in the order the
//! profile writes its fields (`init --full`, the summary's `config`). The
//! help text is the flag's `--help` line and the field's doc; `{NAME}`
//! stands for a constant of `profile::defaults` (or the built-in
//! endpoint's), filled in when help is printed. The row's syntax is in
//! `macros.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;
use serde_json::{Map, Value};

use super::entries::*;
use super::flags::*;
use super::macros::{first, settings};
use super::*;
use crate::config::BenchConfig;
use crate::config::bytes::bytes_flag;
use crate::config::duration::duration_flag;
use crate::config::profile::values::{ser_num, text_or_number};
use crate::config::profile::{
    Correlation, HumanBytes, HumanDuration, ScenarioSpec, StageSpec, ThresholdsSpec, defaults,
    templates,
};

/// The settings `bench` and `probe` share: request headers, the API key and
/// how an https endpoint is trusted and trusts us. Rows of the table,
/// handed to `$callback` between `$before` and `$after`, so that each
/// command's flags are generated from the one declaration.
macro_rules! with_auth_settings {
    ($callback:ident ! { $($before:tt)* } { $($after:tt)* }) => {
        $callback! {
            $($before)*

            /// extra request header 'Name: value' (repeatable)
            headers: BTreeMap<String, String> = header: Vec<String> [option] in Auth
                via header_map overlay merge_headers full { Some(BTreeMap::new()) }
                config given_map;
            /// API key sent as the API's auth header (default:
            /// $OPENAI_API_KEY); never written to any output
            api_key: String = api_key: Option<String> [option] in Auth
                joint key config shown_api_key;
            /// read the API key from this file (trailing newline dropped):
            /// unlike --api-key, it stays out of the command line that ps
            /// shows
            api_key_file: PathBuf = api_key_file: Option<PathBuf> [option] in Auth
                joint key;
            /// https: a PEM file of CA certificates to trust beside the
            /// system store (may hold several)
            ca_cert: PathBuf = ca_cert: Option<PathBuf> [option] in Auth;
            /// https: skip certificate verification, as curl -k does (the
            /// report says so)
            insecure: bool = insecure: bool [switch] in Auth default INSECURE;
            /// https: the name to verify and send as SNI instead of the
            /// URL's host (to test a gateway by its IP address)
            tls_server_name: String = tls_server_name: Option<String> [option] in Auth;
            /// https: a client certificate chain (PEM), for gateways that
            /// require one (mTLS); needs --client-key
            client_cert: PathBuf = client_cert: Option<PathBuf> [option] in Auth;
            /// https: the client certificate's private key (PEM); never
            /// shown
            client_key: PathBuf = client_key: Option<PathBuf> [option] in Auth;

            $($after)*
        }
    };
}

pub(crate) use with_auth_settings;

with_auth_settings! { settings! {
    flags
    /// Benchmark an endpoint (with no --endpoint: the built-in one).
    #[derive(FromArgs, Debug, Default)]
    #[argh(
        subcommand,
        name = "bench",
        example = "{command_name}",
        example = "{command_name} --endpoint http://127.0.0.1:8000 --concurrency 32 --duration 60s",
        example = "{command_name} --endpoint https://gateway.example/v1/chat/completions --api-key-file key.txt --rate 20 --dataset prompts.jsonl",
        example = "{command_name} --profile run.json --endpoint http://127.0.0.1:8000",
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
    )];

    only_flags:

    /// a run profile (JSON): every flag has a field there; flags given here
    /// override it (llmload init writes one)
    profile: Option<PathBuf> [option] in Files;
    /// an MLPerf config (YAML, inference-endpoint's schema) read as a
    /// profile: flags given here override it
    config: Option<PathBuf> [option] in Files;
    /// ask for whole, non-streamed responses
    no_stream: bool [switch] in Requests after stream;
    /// keep going however the first requests fail (the run as asked, to
    /// its end)
    no_fail_fast: bool [switch] in Load after fail_fast;

    fields:

    /// endpoint URL, http[s]://host[:port][/path] (default path from
    /// --api); a base URL ending in /v1 (http://host:8000/v1, as OpenAI
    /// SDKs take) gets the API's path under it (/v1/chat/completions);
    /// without it, a built-in endpoint (ttft {BUILTIN_TTFT}, tpot
    /// {BUILTIN_TPOT}) is started and measured
    endpoint: String = endpoint: Option<String> [option] in Endpoint
        joint endpoint full { Some("http://127.0.0.1:8000/v1/chat/completions".to_string()) }
        config shown_endpoint;
    /// several endpoint URLs sharing one workload, comma-separated (the
    /// same as a comma list in --endpoint): each worker spreads its
    /// connections over them in turn; only the URLs differ, every other
    /// setting is shared
    // The summary leaves the list out: `endpoint` shows it, comma-separated.
    endpoints: Vec<String> = endpoints: Option<String> [option] in Endpoint
        via endpoint_list joint endpoint config |_, _, _| None;
    /// run rules and settings of MLPerf Inference Endpoint: mlperf (prompts
    /// untouched, order {MLPERF_ORDER}, scheduler and dataloader seeds
    /// {MLPERF_SEED}, max tokens {MLPERF_MAX_TOKENS}, streaming off offline
    /// and on otherwise; the duration sizes the request count: ceil(rate ×
    /// duration × 1.1) rounded up to whole dataset passes, rate
    /// {MLPERF_QPS}/s when not given, duration {MLPERF_MIN_DURATION} when
    /// not given); every setting given explicitly still wins
    preset: String = preset: Option<String> [option] in Mlperf;
    /// wire format: openai-chat, openai-completions, sglang or anthropic
    /// (default {API})
    api: String = api: Option<String> [option] in Endpoint
        default API config |c, _, _| Some(c.protocol.name().into());
    /// model name (default: the first model the endpoint lists at
    /// /v1/models)
    model: String = model: Option<String> [option] in Endpoint
        config |_, x, _| Some(x.model.into());

    /// load shape: offline, poisson, uniform or concurrency (default:
    /// poisson when --rate is given, else concurrency)
    mode: String = mode: Option<String> [option] in Load
        joint load config shown_mode;
    /// arrivals per second for poisson and uniform modes (with --preset
    /// mlperf in offline and concurrency modes: the rate that sizes the
    /// request count, MLPerf's --target-qps)
    rate: f64 as [serialize_with = "ser_num"] = rate: Option<f64> [option] in Load
        joint load;
    /// requests kept in flight in concurrency mode (default {CONCURRENCY})
    concurrency: usize = concurrency: Option<usize> [option] in Load
        default CONCURRENCY joint load full { None } config shown_concurrency;
    /// measured run length, e.g. 30s (default {DURATION} unless --requests
    /// is given); with --preset mlperf a minimum that only sizes the
    /// request count, as --min-duration
    duration: HumanDuration
        = duration: Option<Duration> [option, from_str_fn(duration_flag)] in Load;
    /// measured requests to issue (offline default {OFFLINE_REQUESTS}); with
    /// --preset mlperf the exact count (MLPerf's --num-samples)
    requests: u64 = requests: Option<u64> [option] in Load;

    /// run this long before measuring; excluded from statistics (default
    /// {WARMUP})
    warmup: HumanDuration
        = warmup: Option<Duration> [option, from_str_fn(duration_flag)] in Load
        default WARMUP;
    /// warm-up by count: issue this many requests with the run's load shape
    /// before measuring, excluded from statistics (with --warmup, measuring
    /// starts when both are done)
    warmup_requests: u64 = warmup_requests: Option<u64> [option] in Load
        config |c, _, _| Some(c.warmup_requests.into());
    /// issue until at least this long is measured (with --min-requests:
    /// until both hold); with --preset mlperf it sizes the request count
    min_duration: HumanDuration
        = min_duration: Option<Duration> [option, from_str_fn(duration_flag)] in Load
        config shown_min_duration;
    /// issue at least this many measured requests (with --preset mlperf
    /// rounded up to whole dataset passes)
    min_requests: u64 = min_requests: Option<u64> [option] in Load;
    /// wall-clock cap on the measured run; 0 for none (with --preset mlperf
    /// the only clock)
    max_duration: HumanDuration
        = max_duration: Option<Duration> [option, from_str_fn(duration_flag)] in Load;
    /// open-loop inter-arrival law for stages of a profile: poisson or
    /// uniform (default {ARRIVAL})
    arrival: String = arrival: Option<String> [option] in Load
        default ARRIVAL config shown_arrival;
    /// connections across all workers: the in-flight bound in offline and
    /// open-loop modes (default {CONNECTIONS}; concurrency mode uses
    /// --concurrency)
    connections: usize = connections: Option<usize> [option] in Load
        default CONNECTIONS config |c, _, _| Some(c.connections.into());
    /// open loop: at most this many requests in flight; later arrivals
    /// wait, charged from their scheduled time (default: --connections)
    openloop_max_inflight: u64 = openloop_max_inflight: Option<u64> [option] in Load;
    /// stop the run when its first {FAIL_FAST_FIRST} completed requests all
    /// failed with the same error that load cannot change (connection
    /// refused or unreachable, DNS, TLS handshake, HTTP 401, 403, 404 or
    /// 405) and none succeeded: the report says why, with the fix (default
    /// {FAIL_FAST}; --no-fail-fast runs on)
    fail_fast: bool = fail_fast: bool [switch] in Load
        default FAIL_FAST via fail_fast_pair config |c, _, _| Some(c.fail_fast.into());

    /// output tokens to request per response (default {MAX_TOKENS}; with
    /// --preset mlperf {MLPERF_MAX_TOKENS})
    max_tokens: u32 = max_tokens: Option<u32> [option] in Requests
        default MAX_TOKENS config |c, _, _| Some(c.max_tokens.into());
    /// stream responses (default {STREAM}; with --preset mlperf off in
    /// offline mode)
    stream: bool = stream: bool [switch] in Requests
        default STREAM via stream_pair config |c, _, _| Some(c.stream.into());
    /// system prompt sent with every request
    system: String = system: Option<String> [option] in Requests;
    /// dataset PATH[,key=value...]: JSONL, JSON array or CSV (by extension
    /// or format=); columns prompt=, system=, messages=, input_tokens=,
    /// max_tokens=, expected=; skip_invalid=true (default: built-in
    /// prompts)
    dataset: String = dataset: Option<String> [option] in Data
        via perf_dataset;
    /// synthetic prompts:
    /// isl=N,osl=M[,isl_std=S,osl_std=T,dist=fixed|normal|uniform|lognormal,count=K]
    synthetic: String = synthetic: Option<String> [option] in Data;
    /// sample order: sequential, shuffle (each pass), random or single:I
    /// (always row I, from 0) (default {ORDER}; with --preset mlperf
    /// {MLPERF_ORDER})
    order: String = order: Option<String> [option] in Data
        default ORDER config |c, _, _| Some(c.order.to_string().into());
    /// a HuggingFace tokenizer.json, a model directory, or a model id
    /// (org/name) in the local Hugging Face cache, for exact token counts
    /// (message prompts through the model's chat template, as MLPerf)
    tokenizer: PathBuf = tokenizer: Option<PathBuf> [option] in Data;
    /// where token counts come from: auto (usage, else --tokenizer, else
    /// text events), tokenizer (always --tokenizer, as MLPerf) or usage
    /// (never the tokenizer) (default {TOKEN_SOURCE})
    token_source: String = token_source: Option<String> [option] in Data
        default TOKEN_SOURCE config given;

    /// sampling temperature (sent only when given)
    temperature: f64 as [serialize_with = "ser_num"]
        = temperature: Option<f64> [option] in Requests;
    /// nucleus sampling top_p (sent only when given)
    top_p: f64 as [serialize_with = "ser_num"] = top_p: Option<f64> [option] in Requests;
    /// stop sequence (repeatable)
    stop: Vec<String> = stop: Vec<String> [option] in Requests
        full { Some(Vec::new()) } config given_list;
    /// ask the server to ignore end-of-sequence, so outputs have the
    /// requested length (vLLM, SGLang, TensorRT-LLM)
    ignore_eos: bool = ignore_eos: bool [switch] in Requests default IGNORE_EOS;
    /// minimum output tokens, where the API has it
    min_tokens: u32 = min_tokens: Option<u32> [option] in Requests;
    /// JSON object merged into every request body, e.g. '{"top_k": 20}'
    extra_body: Map<String, Value> = extra_body: Option<String> [option] in Requests
        via json_object overlay merge_object full { Some(Map::new()) } config given_map;
} {
    /// reuse each connection for further requests: true or false (default
    /// {KEEP_ALIVE}); false opens a new connection for every request and the
    /// report shows connects/s and connect and handshake percentiles
    keep_alive: bool = keep_alive: Option<bool> [option] in Endpoint default KEEP_ALIVE;

    /// cache busting: bust (a per-conversation id in front of the first
    /// user message) or natural (prompts untouched); default {CACHE_MODE}
    /// (with --preset mlperf {MLPERF_CACHE_MODE})
    cache_mode: String = cache_mode: Option<String> [option] in Requests
        default CACHE_MODE config |c, _, _| Some(c.cache_mode.name().into());
    /// header carrying each conversation's id (default
    /// {CORRELATION_HEADER}; '' for none); in a profile, `correlation`
    /// also says whether the id goes in front of the first user message
    /// (uuid_in_prompt, default {UUID_IN_PROMPT})
    correlation: Correlation = correlation_header: Option<String> [option] in Requests
        default CORRELATION_HEADER via correlation_flag;

    /// per-request timeout from dispatch to the end of the response
    /// (default {TIMEOUT})
    timeout: HumanDuration
        = timeout: Option<Duration> [option, from_str_fn(duration_flag)] in Timeouts
        default TIMEOUT;
    /// fail a streamed request with no first token within this time
    /// (default: --timeout; a non-streamed or non-2xx response is held to
    /// --timeout only)
    ttft_timeout: HumanDuration
        = ttft_timeout: Option<Duration> [option, from_str_fn(duration_flag)] in Timeouts;
    /// connect timeout: the TCP connect and, for https, the TLS handshake
    /// (default {CONNECT_TIMEOUT})
    connect_timeout: HumanDuration
        = connect_timeout: Option<Duration> [option, from_str_fn(duration_flag)] in Timeouts
        default CONNECT_TIMEOUT;
    /// at the end of the run, or after Ctrl-C, SIGTERM or SIGHUP, how long
    /// in-flight requests may finish before they are aborted (default
    /// {DRAIN_TIMEOUT})
    drain_timeout: HumanDuration
        = drain_timeout: Option<Duration> [option, from_str_fn(duration_flag)] in Timeouts
        default DRAIN_TIMEOUT;

    /// seed for arrival times, sample order and synthetic prompts (default
    /// {SEED}): same seed, same schedule; when given, also sent as the
    /// sampling seed (with --preset mlperf only that)
    seed: u64 = seed: Option<u64> [option] in Load default SEED config shown_seed;
    /// seed of the arrival schedule alone (default: --seed; with --preset
    /// mlperf {MLPERF_SEED})
    scheduler_seed: u64 = scheduler_seed: Option<u64> [option] in Mlperf
        config |c, _, _| Some(c.scheduler_seed.into());
    /// seed of the sample order and synthetic prompts alone (default:
    /// --seed; with --preset mlperf {MLPERF_SEED})
    dataloader_seed: u64 = dataloader_seed: Option<u64> [option] in Mlperf
        config |c, _, _| Some(c.dataloader_seed.into());
    /// MLPerf's early-stopping percentile estimates in the MLPerf result
    /// files: true or false (default {EARLY_STOPPING})
    early_stopping: bool = early_stopping: Option<bool> [option] in Mlperf
        default EARLY_STOPPING config |c, _, _| Some(c.early_stopping.into());
    /// worker processes (default: CPUs − 1, at least 1)
    workers: usize = workers: Option<usize> [option] in Generator
        config |c, _, _| Some(c.workers.into());
    /// pin the parent and each worker to distinct CPUs
    pin: bool = pin: bool [switch] in Generator default PIN;
    /// output directory (default: results/<UTC timestamp>)
    out: PathBuf = out: Option<PathBuf> [option] in Outputs config |_, x, _| Some(x.out.display().to_string().into());
    /// print neither the live view nor the report at the end (it is still
    /// written, and printed to stderr when a file cannot be)
    quiet: bool = quiet: bool [switch] in Outputs default QUIET;
    /// print the whole report at the end, as report.txt has it (the
    /// per-tool table and the definitions too); otherwise the terminal
    /// gets the report without them, and the headline last
    verbose: bool = verbose: bool [switch] in Outputs default VERBOSE;
    /// print a progress line to stderr this often (default
    /// {LIVE_INTERVAL}; 0 disables); on a terminal, a status block redrawn
    /// every second (or this often, if shorter) instead
    live_interval: HumanDuration
        = live_interval: Option<Duration> [option, from_str_fn(duration_flag)] in Outputs
        default LIVE_INTERVAL;
    /// keep each response's text in events.jsonl
    record_output: bool = record_output: bool [switch] in Outputs default RECORD_OUTPUT;
    /// output text kept per response, bytes or with a KiB/MiB/GiB suffix
    /// (default {MAX_OUTPUT_TEXT}); past it the text is cut and marked
    /// output_truncated (a conversation's turn fails as output_over_cap)
    max_output_text: HumanBytes
        = max_output_text: Option<u64> [option, from_str_fn(bytes_flag)] in Outputs
        default MAX_OUTPUT_TEXT;
    /// which phases run: perf, acc (the accuracy datasets alone) or both
    /// (default: both when an accuracy dataset is given, else perf)
    phase: String = phase: Option<String> [option] in Checks config |c, _, _| Some(c.phase.name().into());
    /// an accuracy dataset, [acc:]PATH[,key=value...] (repeatable): the
    /// dataset's keys plus expected=COL (default: ground_truth, expected or
    /// answer), scorer=string_match|pass_at_1|rouge,
    /// extractor=identity|abcd|boxed_math|python_code|function_call,
    /// repeats=N, name=NAME, max_output_tokens=N, temperature=X, top_p=X;
    /// each row is asked once per repeat, in order, one request at a time
    accuracy_datasets: Vec<String> = accuracy_dataset: Vec<String> [option] in Checks
        via accuracy_list;
    /// build each prompt from a dataset row's columns, Python format
    /// style: 'Answer with the letter only. {question}' ({{ and }} are
    /// braces); for datasets without a template= key of their own
    prompt_template: String = prompt_template: Option<String> [option] in Data;
    /// service-level objectives a request must meet to count as good
    /// (goodput), any subset: 'ttft=200ms,tpot=40ms,e2e=10s'
    slo: String = slo: Option<String> [option] in Checks;
    /// whose definitions the headline numbers use: llmload, vllm, guidellm,
    /// aiperf or mlperf (default {METRICS_PRESET}); every tool's are in the
    /// definitions table either way
    metrics_preset: String = metrics_preset: Option<String> [option] in Outputs
        default METRICS_PRESET;
    /// the endpoint's own Prometheus metrics, scraped during the run: a
    /// URL, auto (try <endpoint origin>/metrics once) or off (default
    /// {SERVER_METRICS})
    server_metrics: String = server_metrics: Option<String> [option] in Outputs
        default SERVER_METRICS;
    /// how often --server-metrics is scraped (default
    /// {SERVER_METRICS_INTERVAL})
    server_metrics_interval: HumanDuration
        = server_metrics_interval: Option<Duration> [option, from_str_fn(duration_flag)]
        in Outputs default SERVER_METRICS_INTERVAL;
    /// how workers move bytes: epoll, uring or auto (io_uring when the
    /// kernel offers it; default {IO}, or $LLMLOAD_IO)
    io: String = io: Option<String> [option] in Generator default IO config |c, _, _| Some(c.io.name().into());
    /// with io_uring, a kernel thread polls the submission queue (one busy
    /// core per worker, fewer syscalls)
    uring_sqpoll: bool = uring_sqpoll: bool [switch] in Generator default URING_SQPOLL;
    /// which requests get a line in events.jsonl: all, errors or none
    /// (default {EVENTS})
    events: String = events: Option<String> [option] in Outputs
        default EVENTS config |c, _, _| Some(c.events.name().into());
    /// local addresses to open connections from, round-robin per
    /// connection, past one address's ephemeral ports:
    /// 127.0.0.1-127.0.0.4, or a,b,c
    source_addrs: String = source_addrs: Option<String> [option] in Generator
        config shown_source_addrs;
    /// run as shard I of N of one run (I from 1; e.g. 2/3): this process
    /// generates its part of the load the other flags describe (rates,
    /// concurrency and counts split, dataset rows partitioned, seeds
    /// derived); auto reads the scheduler's variables: JOB_COMPLETION_INDEX
    /// (Kubernetes Indexed Job, with --shards or $LLMLOAD_SHARDS),
    /// SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE,
    /// PMI_RANK/PMI_SIZE
    shard: String = shard: Option<String> [option] in Shards;
    /// shards in the run: the count --shard auto needs under a Kubernetes
    /// Indexed Job (default: $LLMLOAD_SHARDS); with --shard I/N it must
    /// agree
    shards: u32 = shards: Option<u32> [option] in Shards;
    /// start the schedule at this instant, RFC 3339 (2026-12-02T11:00:00Z)
    /// or Unix seconds: workers are forked and connected first, then the
    /// run waits, so every shard given the same instant starts together (at
    /// most 24 h ahead; one already past starts at once, noted as late)
    start_at: String as [default, deserialize_with = "text_or_number"]
        = start_at: Option<String> [option] in Shards config shown_start_at;

    only_fields:

    /// The run's stages, one after another, each exactly one of
    /// concurrency, rate or rate_from + rate_to, with a duration or a
    /// request cap; replaces mode, rate and concurrency
    stages: Vec<StageSpec>, in Load joint load full { Some(templates::full_stages()) };
    /// Weighted scenarios sharing the load, each with its own endpoint,
    /// API, headers, TLS, model, sampling, turns, content and checks over
    /// the top level's
    scenarios: Vec<ScenarioSpec>, in Data full { Some(templates::full_scenarios()) };
    /// Limits each stage is held to (ttft_p95_ms, p99_ms, error_rate,
    /// min_rps …); a broken one makes the exit status 2
    thresholds: ThresholdsSpec, in Checks full { Some(templates::full_thresholds()) };
} }
