//! `GET /metrics`: the server's own counters in the Prometheus text format
//! (0.0.4), so a client that scrapes an endpoint's metrics is tested end to
//! end. The same few values go out under our names (`llmload_serve_*`) or,
//! with `--metrics-names`, under a real server's (vLLM, SGLang, TGI), so
//! the client's table of each server's names is exercised too.
//!
//! The values are summed over every worker's shared counter block at the
//! time of the request: a scrape costs one pass over a few cache lines per
//! worker and one formatted body, nothing on the generation path. This
//! server has no queue and no KV cache: `waiting` is always 0, and the
//! KV-cache usage a real server reports is stood in for by the responses
//! under way over the connection capacity (`--max-connections` × workers).

use std::io::Write;

use super::stats::ServerStats;

/// The `Content-Type` of the Prometheus text exposition format.
pub(crate) const CONTENT_TYPE: &[u8] = b"text/plain; version=0.0.4; charset=utf-8";

/// Whose names `/metrics` uses (`serve --metrics-names`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetricsNames {
    #[default]
    Llmload,
    Vllm,
    Sglang,
    Tgi,
}

impl MetricsNames {
    pub fn parse(s: &str) -> Result<MetricsNames, String> {
        match s.trim() {
            "llmload" => Ok(MetricsNames::Llmload),
            "vllm" => Ok(MetricsNames::Vllm),
            "sglang" => Ok(MetricsNames::Sglang),
            "tgi" => Ok(MetricsNames::Tgi),
            other => Err(format!(
                "--metrics-names '{other}': expected llmload, vllm, sglang or tgi"
            )),
        }
    }
}

/// What `/metrics` reports, summed over the workers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Values {
    pub running: u64,
    pub requests: u64,
    pub completed: u64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    /// Responses the server can hold at once: the stand-in KV cache's size.
    pub capacity: u64,
}

impl Values {
    pub(crate) fn of(s: &ServerStats, capacity: u64) -> Values {
        Values {
            running: s.running,
            requests: s.requests,
            completed: s.completed,
            prompt_tokens: s.prompt_tokens,
            output_tokens: s.output_tokens,
            capacity,
        }
    }

    fn usage(&self) -> f64 {
        self.running as f64 / self.capacity.max(1) as f64
    }
}

/// The label real servers put on every series (vLLM and SGLang say which
/// model); here it also gives a scraper label sets to sum over.
const LABELS: &str = "{model_name=\"llmload-mock\"}";

/// Appends the exposition of `v` under `names`' names to `out`.
pub(crate) fn render(out: &mut Vec<u8>, names: MetricsNames, v: &Values) {
    let mut w = Writer(out);
    match names {
        MetricsNames::Llmload => {
            w.metric(
                "llmload_serve_requests_running",
                "gauge",
                "Generation responses under way.",
                "",
                v.running as f64,
            );
            w.metric(
                "llmload_serve_requests_waiting",
                "gauge",
                "Requests queued (this server has no queue).",
                "",
                0.0,
            );
            w.metric(
                "llmload_serve_capacity_usage_perc",
                "gauge",
                "Responses under way over the connection capacity. 1 means 100 percent.",
                "",
                v.usage(),
            );
            w.metric(
                "llmload_serve_requests_total",
                "counter",
                "Generation requests received in full.",
                "",
                v.requests as f64,
            );
            w.metric(
                "llmload_serve_requests_completed_total",
                "counter",
                "Generation requests answered in full with 200.",
                "",
                v.completed as f64,
            );
            w.metric(
                "llmload_serve_prompt_tokens_total",
                "counter",
                "Prompt tokens of the completed responses.",
                "",
                v.prompt_tokens as f64,
            );
            w.metric(
                "llmload_serve_generation_tokens_total",
                "counter",
                "Output tokens of the completed responses.",
                "",
                v.output_tokens as f64,
            );
        }
        MetricsNames::Vllm => {
            w.metric(
                "vllm:num_requests_running",
                "gauge",
                "Number of requests in model execution batches.",
                LABELS,
                v.running as f64,
            );
            w.metric(
                "vllm:num_requests_waiting",
                "gauge",
                "Number of requests waiting to be processed.",
                LABELS,
                0.0,
            );
            w.metric(
                "vllm:kv_cache_usage_perc",
                "gauge",
                "KV-cache usage. 1 means 100 percent usage.",
                LABELS,
                v.usage(),
            );
            w.metric(
                "vllm:prompt_tokens_total",
                "counter",
                "Number of prefill tokens processed.",
                LABELS,
                v.prompt_tokens as f64,
            );
            w.metric(
                "vllm:generation_tokens_total",
                "counter",
                "Number of generation tokens processed.",
                LABELS,
                v.output_tokens as f64,
            );
            w.metric(
                "vllm:num_preemptions_total",
                "counter",
                "Cumulative number of preemption from the engine.",
                LABELS,
                0.0,
            );
        }
        MetricsNames::Sglang => {
            w.metric(
                "sglang:num_running_reqs",
                "gauge",
                "The number of running requests.",
                LABELS,
                v.running as f64,
            );
            w.metric(
                "sglang:num_queue_reqs",
                "gauge",
                "The number of requests in the waiting queue.",
                LABELS,
                0.0,
            );
            w.metric(
                "sglang:token_usage",
                "gauge",
                "The token usage.",
                LABELS,
                v.usage(),
            );
            w.metric(
                "sglang:prompt_tokens_total",
                "counter",
                "Number of prefill tokens processed.",
                LABELS,
                v.prompt_tokens as f64,
            );
            w.metric(
                "sglang:generation_tokens_total",
                "counter",
                "Number of generation tokens processed.",
                LABELS,
                v.output_tokens as f64,
            );
        }
        MetricsNames::Tgi => {
            w.metric(
                "tgi_batch_current_size",
                "gauge",
                "Current batch size.",
                "",
                v.running as f64,
            );
            w.metric("tgi_queue_size", "gauge", "Current queue size.", "", 0.0);
            w.metric(
                "tgi_request_count",
                "counter",
                "Total number of requests.",
                "",
                v.requests as f64,
            );
            // TGI counts tokens in per-request histograms: their sums are the
            // running totals.
            w.histogram(
                "tgi_request_input_length",
                "Input token length per request.",
                v.completed,
                v.prompt_tokens,
            );
            w.histogram(
                "tgi_request_generated_tokens",
                "Generated tokens per request.",
                v.completed,
                v.output_tokens,
            );
        }
    }
}

struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn metric(&mut self, name: &str, kind: &str, help: &str, labels: &str, value: f64) {
        // Writing to a Vec cannot fail.
        let _ = write!(
            self.0,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{labels} {value}\n"
        );
    }

    fn histogram(&mut self, name: &str, help: &str, count: u64, sum: u64) {
        let _ = write!(
            self.0,
            "# HELP {name} {help}\n# TYPE {name} histogram\n\
             {name}_bucket{{le=\"+Inf\"}} {count}\n{name}_sum {sum}\n{name}_count {count}\n"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(names: MetricsNames) -> String {
        let v = Values {
            running: 3,
            requests: 10,
            completed: 7,
            prompt_tokens: 70,
            output_tokens: 140,
            capacity: 12,
        };
        let mut out = Vec::new();
        render(&mut out, names, &v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn each_server_has_its_names() {
        let t = text(MetricsNames::Llmload);
        assert!(t.contains("\nllmload_serve_requests_running 3\n"), "{t}");
        assert!(
            t.contains("\nllmload_serve_generation_tokens_total 140\n"),
            "{t}"
        );
        assert!(
            t.contains("\nllmload_serve_capacity_usage_perc 0.25\n"),
            "{t}"
        );
        let t = text(MetricsNames::Vllm);
        assert!(
            t.contains("\nvllm:num_requests_running{model_name=\"llmload-mock\"} 3\n"),
            "{t}"
        );
        assert!(
            t.contains("# TYPE vllm:generation_tokens_total counter\n"),
            "{t}"
        );
        let t = text(MetricsNames::Sglang);
        assert!(
            t.contains("\nsglang:num_running_reqs{model_name=\"llmload-mock\"} 3\n"),
            "{t}"
        );
        let t = text(MetricsNames::Tgi);
        assert!(t.contains("\ntgi_batch_current_size 3\n"), "{t}");
        assert!(
            t.contains("\ntgi_request_generated_tokens_sum 140\n"),
            "{t}"
        );
        assert!(
            t.contains("tgi_request_generated_tokens_bucket{le=\"+Inf\"} 7\n"),
            "{t}"
        );
    }

    #[test]
    fn names_parse() {
        assert_eq!(MetricsNames::parse("vllm"), Ok(MetricsNames::Vllm));
        assert!(
            MetricsNames::parse("triton")
                .unwrap_err()
                .contains("--metrics-names")
        );
    }
}
