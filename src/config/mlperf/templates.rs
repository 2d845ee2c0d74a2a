//! `llmload init --mlperf offline|online|concurrency`: MLPerf-schema configs
//! to start from, with the same placeholders as MLPerf's own templates
//! (endpoint, model, dataset path) so the same edits make them run.

/// The template named `kind`, or `None` for a name that is not one.
pub(crate) fn template(kind: &str) -> Option<&'static str> {
    match kind {
        "offline" => Some(OFFLINE),
        "online" => Some(ONLINE),
        "concurrency" => Some(CONCURRENCY),
        _ => None,
    }
}

/// The names `template` knows.
pub(crate) const KINDS: &str = "offline, online or concurrency";

const OFFLINE: &str = "\
# An MLPerf offline benchmark: every query issued at once, maximum throughput.
# Run it with: llmload benchmark from-config -c THIS_FILE
# (or inference-endpoint benchmark from-config -c THIS_FILE).
# ${VAR} and ${VAR:-default} take values from the environment.
name: offline_benchmark
type: offline
model_params:
  name: '<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'
  # max_new_tokens: 1024
  # streaming: auto          # auto (off offline), on or off
datasets:
- name: perf
  type: performance
  path: '<DATASET_PATH eg: prompts.jsonl>'
  parser:                    # which column holds the prompt (and system)
    prompt: text_input
settings:
  runtime:
    min_duration_ms: 600000  # a minimum: it sizes the sample count (600s, 10m also work)
    max_duration_ms: 0       # the only wall-clock cap (0: none)
    n_samples_to_issue: null # an exact sample count instead
endpoint_config:
  endpoints:                 # with the scheme: http://host:port
  - http://localhost:8000
";

const ONLINE: &str = "\
# An MLPerf online benchmark: Poisson arrivals at a target QPS.
# Run it with: llmload benchmark from-config -c THIS_FILE
# ${VAR} and ${VAR:-default} take values from the environment.
name: online_benchmark
type: online
model_params:
  name: '<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'
  # streaming: auto          # auto (on online), on or off
datasets:
- name: perf
  type: performance
  path: '<DATASET_PATH eg: prompts.jsonl>'
  parser:
    prompt: text_input
settings:
  runtime:
    min_duration_ms: 600000  # a minimum: samples = ceil(qps x duration x 1.1), whole dataset passes
    max_duration_ms: 0       # the only wall-clock cap (0: none)
    n_samples_to_issue: null # an exact sample count instead
  load_pattern:
    type: poisson
    target_qps: 10.0
endpoint_config:
  endpoints:
  - http://localhost:8000
";

const CONCURRENCY: &str = "\
# An MLPerf online benchmark at a fixed number of requests in flight.
# Run it with: llmload benchmark from-config -c THIS_FILE
# ${VAR} and ${VAR:-default} take values from the environment.
name: concurrency_benchmark
type: online
model_params:
  name: '<MODEL_NAME eg: meta-llama/Llama-3.1-8B-Instruct>'
datasets:
- name: perf
  type: performance
  path: '<DATASET_PATH eg: prompts.jsonl>'
  parser:
    prompt: text_input
settings:
  runtime:
    min_duration_ms: 600000  # a minimum (600s, 10m also work)
    max_duration_ms: 0       # the only wall-clock cap (0: none)
    n_samples_to_issue: null # an exact sample count instead
  load_pattern:
    type: concurrency
    target_concurrency: 32
endpoint_config:
  endpoints:
  - http://localhost:8000
";
