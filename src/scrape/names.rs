//! Which series of each server's `/metrics` are kept, and what each means
//! in our words (its key). One table per server; a key may have several
//! entries, newest name first (vLLM renamed its KV-cache and prefix-cache
//! metrics in V1), and a run keeps, per key, the first entry the server
//! exposed. The server is the one whose table matches the most names.
//!
//! Names are as scraped: a counter carries its `_total` suffix, and TGI's
//! token totals are the `_sum` of its per-request histograms.

/// How a kept metric becomes points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Each scrape's value is a point.
    Gauge,
    /// Cumulative: a point is the rate per second between two scrapes.
    Counter,
    /// Two cumulative counters, `name` over `per`: a point is the ratio of
    /// their increases between two scrapes (a hit rate from hits and
    /// queries).
    Ratio { per: &'static str },
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Ratio { .. } => "ratio",
        }
    }
}

/// One kept metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kept {
    pub key: &'static str,
    pub name: &'static str,
    pub kind: Kind,
}

/// One server's table.
#[derive(Debug)]
pub(crate) struct Server {
    pub name: &'static str,
    pub kept: &'static [Kept],
}

const fn gauge(key: &'static str, name: &'static str) -> Kept {
    Kept {
        key,
        name,
        kind: Kind::Gauge,
    }
}

const fn counter(key: &'static str, name: &'static str) -> Kept {
    Kept {
        key,
        name,
        kind: Kind::Counter,
    }
}

const fn ratio(key: &'static str, name: &'static str, per: &'static str) -> Kept {
    Kept {
        key,
        name,
        kind: Kind::Ratio { per },
    }
}

/// Every table, in the order detection prefers on a tie.
pub(crate) static SERVERS: &[Server] = &[
    Server {
        name: "vllm",
        kept: &[
            gauge("running", "vllm:num_requests_running"),
            gauge("waiting", "vllm:num_requests_waiting"),
            // V1; V0 and early V1 said gpu_cache_usage_perc.
            gauge("kv_cache_usage", "vllm:kv_cache_usage_perc"),
            gauge("kv_cache_usage", "vllm:gpu_cache_usage_perc"),
            // V1 counts queried and hit tokens; early V1 with a gpu_
            // prefix; V0 published the rate itself.
            ratio(
                "prefix_cache_hit_rate",
                "vllm:prefix_cache_hits_total",
                "vllm:prefix_cache_queries_total",
            ),
            ratio(
                "prefix_cache_hit_rate",
                "vllm:gpu_prefix_cache_hits_total",
                "vllm:gpu_prefix_cache_queries_total",
            ),
            gauge("prefix_cache_hit_rate", "vllm:gpu_prefix_cache_hit_rate"),
            counter("preemptions", "vllm:num_preemptions_total"),
            counter("prompt_tokens", "vllm:prompt_tokens_total"),
            counter("generation_tokens", "vllm:generation_tokens_total"),
        ],
    },
    Server {
        name: "sglang",
        kept: &[
            gauge("running", "sglang:num_running_reqs"),
            gauge("waiting", "sglang:num_queue_reqs"),
            gauge("kv_cache_usage", "sglang:token_usage"),
            gauge("prefix_cache_hit_rate", "sglang:cache_hit_rate"),
            counter("preemptions", "sglang:num_retracted_requests_total"),
            counter("prompt_tokens", "sglang:prompt_tokens_total"),
            counter("generation_tokens", "sglang:generation_tokens_total"),
        ],
    },
    Server {
        name: "tgi",
        kept: &[
            gauge("running", "tgi_batch_current_size"),
            gauge("waiting", "tgi_queue_size"),
            gauge("batch_max_tokens", "tgi_batch_current_max_tokens"),
            counter("requests", "tgi_request_count"),
            counter("prompt_tokens", "tgi_request_input_length_sum"),
            counter("generation_tokens", "tgi_request_generated_tokens_sum"),
        ],
    },
    Server {
        name: "llmload",
        kept: &[
            gauge("running", "llmload_serve_requests_running"),
            gauge("waiting", "llmload_serve_requests_waiting"),
            gauge("kv_cache_usage", "llmload_serve_capacity_usage_perc"),
            counter("requests", "llmload_serve_requests_total"),
            counter("prompt_tokens", "llmload_serve_prompt_tokens_total"),
            counter("generation_tokens", "llmload_serve_generation_tokens_total"),
        ],
    },
];

/// Every metric name any table reads (a ratio's two), each once, in
/// table order: the scraper sums these and nothing else.
pub(crate) fn watched() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for s in SERVERS {
        for k in s.kept {
            let per = match k.kind {
                Kind::Ratio { per } => Some(per),
                _ => None,
            };
            for n in std::iter::once(k.name).chain(per) {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// The server whose table has the most entries all of whose names are in
/// `present`; `None` when no entry of any table is.
pub(crate) fn detect(present: &dyn Fn(&str) -> bool) -> Option<&'static Server> {
    let mut best: Option<(&'static Server, usize)> = None;
    for s in SERVERS {
        let n = s.kept.iter().filter(|k| has(k, present)).count();
        if n > 0 && best.is_none_or(|(_, m)| n > m) {
            best = Some((s, n));
        }
    }
    best.map(|(s, _)| s)
}

/// The entries of `server` kept: per key, the first whose names are all
/// in `present`, in table order.
pub(crate) fn chosen(server: &Server, present: &dyn Fn(&str) -> bool) -> Vec<Kept> {
    let mut out: Vec<Kept> = Vec::new();
    for k in server.kept {
        if has(k, present) && !out.iter().any(|o| o.key == k.key) {
            out.push(*k);
        }
    }
    out
}

fn has(k: &Kept, present: &dyn Fn(&str) -> bool) -> bool {
    present(k.name)
        && match k.kind {
            Kind::Ratio { per } => present(per),
            _ => true,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn among<'a>(names: &'a [&'a str]) -> impl Fn(&str) -> bool + 'a {
        move |n| names.contains(&n)
    }

    #[test]
    fn the_server_with_most_names_wins() {
        let v1 = [
            "vllm:num_requests_running",
            "vllm:kv_cache_usage_perc",
            "vllm:prefix_cache_hits_total",
            "vllm:prefix_cache_queries_total",
            "vllm:generation_tokens_total",
        ];
        assert_eq!(detect(&among(&v1)).unwrap().name, "vllm");
        let sg = ["sglang:num_running_reqs", "sglang:token_usage"];
        assert_eq!(detect(&among(&sg)).unwrap().name, "sglang");
        let tgi = ["tgi_queue_size", "tgi_request_generated_tokens_sum"];
        assert_eq!(detect(&among(&tgi)).unwrap().name, "tgi");
        let ours = ["llmload_serve_requests_running"];
        assert_eq!(detect(&among(&ours)).unwrap().name, "llmload");
        // A gateway in front of two kinds: the larger match.
        let mixed = [
            "sglang:num_running_reqs",
            "tgi_queue_size",
            "tgi_batch_current_size",
        ];
        assert_eq!(detect(&among(&mixed)).unwrap().name, "tgi");
        assert!(detect(&among(&["process_cpu_seconds_total"])).is_none());
    }

    #[test]
    fn per_key_the_newest_name_present_is_kept() {
        let vllm = &SERVERS[0];
        // V0: gpu_cache_usage_perc and the published hit rate.
        let v0 = [
            "vllm:gpu_cache_usage_perc",
            "vllm:gpu_prefix_cache_hit_rate",
            "vllm:num_preemptions_total",
        ];
        let got = chosen(vllm, &among(&v0));
        let names: Vec<&str> = got.iter().map(|k| k.name).collect();
        assert_eq!(
            names,
            [
                "vllm:gpu_cache_usage_perc",
                "vllm:gpu_prefix_cache_hit_rate",
                "vllm:num_preemptions_total"
            ]
        );
        // V1 with both the old and the new names: the new ones.
        let both = [
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "vllm:prefix_cache_hits_total",
            "vllm:prefix_cache_queries_total",
            "vllm:gpu_prefix_cache_hits_total",
            "vllm:gpu_prefix_cache_queries_total",
        ];
        let got = chosen(vllm, &among(&both));
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, "vllm:kv_cache_usage_perc");
        assert_eq!(
            got[1].kind,
            Kind::Ratio {
                per: "vllm:prefix_cache_queries_total"
            }
        );
        // Hits without queries make no rate.
        let half = ["vllm:prefix_cache_hits_total"];
        assert!(chosen(vllm, &among(&half)).is_empty());
    }

    #[test]
    fn watched_names_are_unique_and_cover_ratios() {
        let w = watched();
        assert!(w.contains(&"vllm:prefix_cache_queries_total"));
        let mut sorted = w.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), w.len());
    }
}
