//! `llmload init offline|online|concurrency|eval|submission` (also with
//! `--mlperf KIND`): MLPerf-schema configs to start from, with the same
//! placeholders and fields as MLPerf's own templates (endpoint, model,
//! dataset paths) so the same edits make them run.

/// The template named `kind`, or `None` for a name that is not one.
pub(crate) fn template(kind: &str) -> Option<&'static str> {
    match kind {
        "offline" => Some(OFFLINE),
        "online" => Some(ONLINE),
        "concurrency" => Some(CONCURRENCY),
        "eval" => Some(EVAL),
        "submission" => Some(SUBMISSION),
        _ => None,
    }
}

/// The names `template` knows.
pub(crate) const KINDS: &str = "concurrency, eval, offline, online or submission";

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

const EVAL: &str = "\
# An MLPerf accuracy evaluation: the accuracy datasets alone, no performance phase.
# Run it with: llmload benchmark from-config -c THIS_FILE
# ${VAR} and ${VAR:-default} take values from the environment.
name: accuracy-eval
version: '1.0'
type: eval
model_params:
  name: meta-llama/Llama-3.1-8B-Instruct
  temperature: 0.0
  max_new_tokens: 2048
datasets:
- name: gpqa
  type: accuracy
  path: datasets/gpqa.jsonl   # one row per question, with its answer
  samples: 500
  eval_method: exact_match
settings:
  runtime:
    scheduler_random_seed: 42
    dataloader_random_seed: 42
  load_pattern:
    type: max_throughput
  client:
    num_workers: 4
endpoint_config:
  endpoints:
  - http://localhost:8000
  api_key: null
  api_type: openai           # openai, openai_completions or sglang
";

const SUBMISSION: &str = "\
# An MLPerf submission run: the performance dataset, then the accuracy ones.
# Run it with: llmload benchmark from-config -c THIS_FILE
# ${VAR} and ${VAR:-default} take values from the environment.
name: llama-2-70b-submission
version: '1.0'
type: submission
benchmark_mode: offline      # offline or online
submission_ref:              # the model and ruleset the compliance checks use
  model: llama-2-70b
  ruleset: mlperf-inference-v6.1
model_params:
  name: meta-llama/Llama-2-70B-Chat-HF
  temperature: 0.7
  top_k: 50
  top_p: 0.9
  max_new_tokens: 2048
  osl_distribution:
    type: normal
    mean: 1000
    std: 200
    min: 512
    max: 2048
datasets:
- name: performance-test
  type: performance
  path: datasets/openorca.jsonl
  samples: 5000
- name: gpqa-accuracy
  type: accuracy
  path: datasets/gpqa.jsonl
  samples: 500
  eval_method: exact_match
- name: aime-accuracy
  type: accuracy
  path: datasets/aime.jsonl
  samples: 300
  eval_method: exact_match
settings:
  runtime:
    min_duration_ms: 600000  # a minimum: it sizes the sample count
    max_duration_ms: 1800000 # the wall-clock cap
    scheduler_random_seed: 42
    dataloader_random_seed: 42
  load_pattern:
    type: max_throughput
    target_qps: 100
  client:
    num_workers: 4
endpoint_config:
  endpoints:
  - http://localhost:8000
  api_key: null
  api_type: openai
";
