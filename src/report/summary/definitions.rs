//! Every tool's definitions side by side: the headline metrics of one run
//! computed the way llmload, vLLM's `bench serve`, guidellm, aiperf and
//! MLPerf each define them (DESIGN.md says exactly how, cell by cell).

use serde::{Deserialize, Serialize};

use crate::metrics::block::Block;
use crate::metrics::errors::ErrorClass;
use crate::metrics::mlperf::{self, OrderStats};
use crate::metrics::series::Series;
use crate::plan::MetricsPreset;
use crate::report::mlperf::contract;

const MS: f64 = 1e6;

/// The table; columns are tools, in `tools` order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Definitions {
    /// The preset the headline numbers use (`--metrics-preset`).
    #[cfg_attr(test, schemars(extend("enum" = ["llmload", "vllm", "guidellm", "aiperf", "mlperf"])))]
    pub preset: String,
    /// `llmload`, `vllm`, `guidellm`, `aiperf`, `mlperf`.
    pub tools: Vec<String>,
    pub rows: Vec<DefinitionRow>,
}

/// One metric under every tool's definition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct DefinitionRow {
    /// Stable key, e.g. `ttft_mean_ms`, `tpot_p99_ms`, `output_tokens_per_s`.
    pub metric: String,
    /// What a person reads, e.g. `TTFT mean (ms)`.
    pub label: String,
    /// One value per tool, `None` where that tool does not define it or the
    /// run lacks what it needs.
    pub values: Vec<Option<f64>>,
    /// One short phrase per tool saying how its cell was computed, e.g.
    /// `first token − send, successes`.
    pub how: Vec<String>,
}

/// The headline numbers under `--metrics-preset`'s definitions: the
/// preset's column of the table, beside (never instead of) `latency_ms`
/// and `throughput`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Headline {
    pub preset: String,
    pub requests_per_s: Option<f64>,
    pub output_tokens_per_s: Option<f64>,
    pub ttft_ms: Stat,
    pub tpot_ms: Stat,
    pub itl_ms: Stat,
    pub e2e_ms: Stat,
}

/// Mean, median and p99 of one headline metric, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct Stat {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
}

/// Column order.
pub(crate) const TOOLS: [MetricsPreset; 5] = [
    MetricsPreset::Llmload,
    MetricsPreset::Vllm,
    MetricsPreset::Guidellm,
    MetricsPreset::Aiperf,
    MetricsPreset::Mlperf,
];

/// How a tool reads a percentile off its samples.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pct {
    /// Ours and guidellm's: the value of rank ⌈q·n⌉.
    Rank,
    /// numpy's default: linear interpolation between ⌊(n−1)q⌋ and ⌈(n−1)q⌉.
    Linear,
    /// MLPerf's `np.percentile(method="lower")`: the sample at ⌊(n−1)q⌋.
    Lower,
}

impl Pct {
    fn at(self, s: &Series, q: f64) -> Option<f64> {
        let n = s.count();
        if n == 0 {
            return None;
        }
        match self {
            Pct::Rank => s.quantile_ns(q).map(|v| v as f64),
            Pct::Lower => mlperf::percentile(&s.order(), q * 100.0).map(|v| v as f64),
            Pct::Linear => {
                let o = s.order();
                let pos = (n - 1) as f64 * q;
                let (lo, hi) = (pos.floor() as u64, pos.ceil() as u64);
                let (a, b) = (o.at(lo) as f64, o.at(hi) as f64);
                Some(a + (b - a) * (pos - lo as f64))
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Pct::Rank => "rank ⌈q·n⌉",
            Pct::Linear => "numpy linear",
            Pct::Lower => "numpy lower",
        }
    }
}

/// A latency metric as one tool defines it: the series it reads, how it
/// takes percentiles, and what it is; or why the tool has none.
type Latency<'a> = Result<(&'a Series, Pct, &'static str), &'static str>;

/// A rate as one tool defines it: the count, the window (ns) and what both are.
struct Rate {
    count: u64,
    window_ns: Option<u64>,
    how: String,
}

/// One tool's definitions, read off a block.
struct Tool<'a> {
    requests_counted: (u64, &'static str),
    ttft: Latency<'a>,
    tpot: Latency<'a>,
    itl: Latency<'a>,
    e2e: Latency<'a>,
    requests: Rate,
    tokens: Rate,
}

fn tool<'a>(t: MetricsPreset, b: &'a Block, window_ns: u64) -> Tool<'a> {
    let span = |from: u64| (from != 0 && b.last_end > from).then(|| b.last_end - from);
    let source = b.output_source();
    match t {
        MetricsPreset::Llmload => Tool {
            requests_counted: (b.completed, "successes"),
            ttft: Ok((&b.ttft, Pct::Rank, "first text event − send")),
            tpot: Ok((
                &b.tpot,
                Pct::Rank,
                "(last − first text event) / (tokens − 1), per request",
            )),
            itl: Ok((&b.itl, Pct::Rank, "every gap between text events")),
            e2e: Ok((&b.e2e, Pct::Rank, "end − scheduled")),
            requests: Rate {
                count: b.completed,
                window_ns: Some(window_ns),
                how: "successes / measured window (measure start → last end)".into(),
            },
            tokens: Rate {
                count: b.output_tokens,
                window_ns: Some(window_ns),
                how: format!("output tokens ({source}) / measured window"),
            },
        },
        MetricsPreset::Vllm => Tool {
            requests_counted: (b.completed, "successes; failures out"),
            ttft: Ok((&b.ttft, Pct::Linear, "first chunk − send")),
            tpot: Ok((
                &b.tpot,
                Pct::Linear,
                "(latency − ttft) / (output_len − 1), per request, mean over requests",
            )),
            itl: Ok((&b.itl, Pct::Linear, "every gap between chunks")),
            e2e: Ok((
                &b.to_last_token,
                Pct::Linear,
                "last token chunk − send (E2EL)",
            )),
            requests: Rate {
                count: b.completed,
                window_ns: span(b.first_sched),
                how: "successes / benchmark duration (first issue → last end)".into(),
            },
            tokens: Rate {
                count: b.output_tokens,
                window_ns: span(b.first_sched),
                how: format!("usage, else tokenizer (here {source}) / benchmark duration"),
            },
        },
        MetricsPreset::Guidellm => Tool {
            requests_counted: (b.completed, "successful status"),
            ttft: Ok((&b.ttft, Pct::Rank, "first token iteration − request start")),
            tpot: Ok((
                &b.tpot_incl_ttft_weighted,
                Pct::Rank,
                "(last token − request start) / output tokens, TTFT included, token-weighted",
            )),
            itl: Ok((
                &b.tpot_weighted,
                Pct::Rank,
                "(last − first token) / (tokens − 1), weighted by tokens − 1",
            )),
            e2e: Ok((&b.service, Pct::Rank, "request end − request start")),
            requests: Rate {
                count: b.completed,
                window_ns: span(b.first_send),
                how: "successes / (first send → last end)".into(),
            },
            tokens: Rate {
                count: b.output_tokens,
                window_ns: span(b.first_send),
                how: format!("usage, else iterations (here {source}) / (first send → last end)"),
            },
        },
        MetricsPreset::Aiperf => Tool {
            requests_counted: (b.completed, "valid records; errors out"),
            ttft: Ok((
                &b.ttft,
                Pct::Linear,
                "first content response − request start",
            )),
            tpot: Ok((
                &b.tpot,
                Pct::Linear,
                "inter_token_latency: (request_latency − ttft) / (osl − 1), per request",
            )),
            itl: Ok((
                &b.itl,
                Pct::Linear,
                "inter_chunk_latency: every gap between content responses",
            )),
            e2e: Ok((
                &b.to_last_token,
                Pct::Linear,
                "request_latency: last content response − request start",
            )),
            requests: Rate {
                count: b.completed,
                window_ns: span(b.first_send),
                how: "valid requests / benchmark_duration (first request → last response)".into(),
            },
            tokens: Rate {
                count: b.output_tokens,
                window_ns: span(b.first_send),
                how: format!("osl (aiperf's tokenizer; here {source}) / benchmark_duration"),
            },
        },
        MetricsPreset::Mlperf => {
            let lost = b.errors.get(ErrorClass::WorkerLost);
            let finished = (b.completed + b.failed).saturating_sub(lost);
            Tool {
                requests_counted: (finished, "every finished request, failures included"),
                ttft: Ok((
                    contract::ttft(b),
                    Pct::Lower,
                    "first token − issue (scheduled)",
                )),
                tpot: if b.tpot_mlperf.count() > 0 {
                    Ok((
                        &b.tpot_mlperf,
                        Pct::Lower,
                        "(end of stream − first chunk) / tokenizer tokens after the first chunk",
                    ))
                } else {
                    Err("needs --tokenizer and streaming (tokens after the first chunk)")
                },
                itl: Err("MLPerf reports no inter-token latency"),
                e2e: Ok((
                    contract::latency(b),
                    Pct::Lower,
                    "end − issue, failures included",
                )),
                requests: Rate {
                    count: finished,
                    window_ns: Some(window_ns),
                    how: "finished requests, failures included / measured window (qps)".into(),
                },
                tokens: Rate {
                    count: b.output_tokens,
                    window_ns: Some(window_ns),
                    how: format!("output sequence lengths ({source}) / measured window (tps)"),
                },
            }
        }
    }
}

impl Definitions {
    /// The table for `b` (the whole run) over its measured window.
    pub(crate) fn of(b: &Block, window_ns: u64, preset: MetricsPreset) -> Definitions {
        let tools: Vec<Tool<'_>> = TOOLS.iter().map(|&t| tool(t, b, window_ns)).collect();
        let mut rows = vec![DefinitionRow {
            metric: "requests_counted".into(),
            label: "Requests in latency stats".into(),
            values: tools
                .iter()
                .map(|t| Some(t.requests_counted.0 as f64))
                .collect(),
            how: tools
                .iter()
                .map(|t| t.requests_counted.1.to_string())
                .collect(),
        }];
        type Pick = for<'t, 'a> fn(&'t Tool<'a>) -> &'t Latency<'a>;
        let latencies: [(&str, &str, Pick); 4] = [
            ("ttft", "TTFT", |t| &t.ttft),
            ("tpot", "TPOT", |t| &t.tpot),
            ("itl", "ITL", |t| &t.itl),
            ("e2e", "e2e latency", |t| &t.e2e),
        ];
        for (key, label, pick) in latencies {
            for stat in [Stat3::Mean, Stat3::P50, Stat3::P99] {
                rows.push(DefinitionRow {
                    metric: format!("{key}_{}_ms", stat.key()),
                    label: format!("{label} {} (ms)", stat.key()),
                    values: tools.iter().map(|t| latency_value(pick(t), stat)).collect(),
                    how: tools.iter().map(|t| latency_how(pick(t), stat)).collect(),
                });
            }
        }
        for (metric, label, pick) in [
            (
                "requests_per_s",
                "Requests/s",
                (|t| &t.requests) as for<'t> fn(&'t Tool<'_>) -> &'t Rate,
            ),
            ("output_tokens_per_s", "Output tokens/s", |t| &t.tokens),
        ] {
            rows.push(DefinitionRow {
                metric: metric.into(),
                label: label.into(),
                values: tools.iter().map(|t| rate(pick(t))).collect(),
                how: tools.iter().map(|t| pick(t).how.clone()).collect(),
            });
        }
        Definitions {
            preset: preset.name().into(),
            tools: TOOLS.iter().map(|t| t.name().to_string()).collect(),
            rows,
        }
    }

    /// A row's value for `tool`, `None` when absent.
    pub(crate) fn value(&self, metric: &str, tool: &str) -> Option<f64> {
        let col = self.tools.iter().position(|t| t == tool)?;
        let row = self.rows.iter().find(|r| r.metric == metric)?;
        row.values.get(col).copied().flatten()
    }

    /// The headline numbers: the preset's column.
    pub(crate) fn headline(&self) -> Headline {
        let p = self.preset.as_str();
        let stat = |key: &str| Stat {
            mean: self.value(&format!("{key}_mean_ms"), p),
            p50: self.value(&format!("{key}_p50_ms"), p),
            p99: self.value(&format!("{key}_p99_ms"), p),
        };
        Headline {
            preset: self.preset.clone(),
            requests_per_s: self.value("requests_per_s", p),
            output_tokens_per_s: self.value("output_tokens_per_s", p),
            ttft_ms: stat("ttft"),
            tpot_ms: stat("tpot"),
            itl_ms: stat("itl"),
            e2e_ms: stat("e2e"),
        }
    }
}

#[derive(Clone, Copy)]
enum Stat3 {
    Mean,
    P50,
    P99,
}

impl Stat3 {
    fn key(self) -> &'static str {
        match self {
            Stat3::Mean => "mean",
            Stat3::P50 => "p50",
            Stat3::P99 => "p99",
        }
    }
}

fn latency_value(l: &Latency<'_>, stat: Stat3) -> Option<f64> {
    let (s, pct, _) = l.as_ref().ok()?;
    let ns = match stat {
        Stat3::Mean => s.mean_ns(),
        Stat3::P50 => pct.at(s, 0.5),
        Stat3::P99 => pct.at(s, 0.99),
    }?;
    Some(ns / MS)
}

fn latency_how(l: &Latency<'_>, stat: Stat3) -> String {
    match l {
        Err(why) => (*why).to_string(),
        Ok((s, _, how)) if s.count() == 0 => format!("{how}; no samples in this run"),
        Ok((_, _, how)) if matches!(stat, Stat3::Mean) => (*how).to_string(),
        Ok((_, pct, how)) => format!("{how}; {}", pct.name()),
    }
}

fn rate(r: &Rate) -> Option<f64> {
    let w = r.window_ns.filter(|&w| w > 0)?;
    Some(r.count as f64 / (w as f64 / 1e9))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::block::RequestSample;

    const M: u64 = 1_000_000;

    /// A streamed success, times in ms.
    fn ok(sched: u64, send: u64, first: u64, last: u64, end: u64, tokens: u32) -> RequestSample {
        RequestSample {
            t_sched: sched * M,
            t_send: send * M,
            t_first_token: first * M,
            t_last_token: last * M,
            t_end: end * M,
            completion_tokens: Some(tokens),
            streamed: true,
            status: 200,
            ..RequestSample::default()
        }
    }

    /// Two successes and a failure with hand-computable numbers.
    fn block() -> Block {
        let mut b = Block::default();
        let mut r1 = ok(1000, 1000, 1010, 1040, 1041, 4);
        r1.tokens_after_first = Some(3);
        b.record(&r1, [10 * M; 3]);
        b.record(&ok(1000, 1002, 1022, 1062, 1062, 5), [10 * M; 4]);
        let failed = RequestSample {
            t_sched: 999 * M,
            t_send: 1003 * M,
            t_end: 1100 * M,
            error: Some(ErrorClass::Reset),
            ..RequestSample::default()
        };
        b.record(&failed, []);
        b
    }

    fn near(got: Option<f64>, want: f64, what: &str) {
        let got = got.unwrap_or_else(|| panic!("{what}: no value"));
        assert!(
            (got - want).abs() <= want.abs() * 1e-3,
            "{what}: {got}, want {want}"
        );
    }

    #[test]
    fn every_cell_follows_its_tools_definition() {
        let d = Definitions::of(&block(), 200 * M, MetricsPreset::Vllm);
        let v = |metric: &str, tool: &str| d.value(metric, tool);
        assert_eq!(d.tools, ["llmload", "vllm", "guidellm", "aiperf", "mlperf"]);
        // Counted: successes, except MLPerf's failures-included latency.
        for t in ["llmload", "vllm", "guidellm", "aiperf"] {
            assert_eq!(v("requests_counted", t), Some(2.0), "{t}");
        }
        assert_eq!(v("requests_counted", "mlperf"), Some(3.0));
        // TTFT from the send: 10 and 20 ms; MLPerf's from the schedule: 10, 22.
        near(v("ttft_mean_ms", "llmload"), 15.0, "ours");
        near(v("ttft_p50_ms", "llmload"), 10.0, "ours, rank 1 of 2");
        near(v("ttft_p99_ms", "llmload"), 20.0, "ours, rank 2 of 2");
        near(v("ttft_mean_ms", "vllm"), 15.0, "vllm");
        near(v("ttft_p50_ms", "vllm"), 15.0, "numpy's linear midpoint");
        near(v("ttft_p99_ms", "vllm"), 19.9, "10 + 0.99 × 10");
        near(v("ttft_mean_ms", "aiperf"), 15.0, "aiperf");
        near(v("ttft_mean_ms", "mlperf"), 16.0, "from the schedule");
        near(v("ttft_p99_ms", "mlperf"), 10.0, "lower: index ⌊0.99⌋ = 0");
        // TPOT: (40 − 10) / 3 and (62 − 22) / 4, both 10 ms, per request.
        near(v("tpot_mean_ms", "llmload"), 10.0, "ours");
        near(v("tpot_mean_ms", "vllm"), 10.0, "vllm");
        near(v("tpot_mean_ms", "aiperf"), 10.0, "aiperf's ITL");
        // guidellm's: (last − send) / tokens, 40/4 = 10 ×4 and 60/5 = 12 ×5.
        near(v("tpot_mean_ms", "guidellm"), 100.0 / 9.0, "token-weighted");
        near(v("tpot_p50_ms", "guidellm"), 12.0, "5th of 9 token-weights");
        // MLPerf's: (end − first) / tokens after the first chunk, r1 only.
        near(v("tpot_mean_ms", "mlperf"), 31.0 / 3.0, "mlperf");
        // ITL: seven gaps of 10 ms; guidellm's is its decode rate, 10 ms.
        near(v("itl_mean_ms", "llmload"), 10.0, "ours");
        near(v("itl_p99_ms", "aiperf"), 10.0, "aiperf's ICL");
        near(v("itl_mean_ms", "guidellm"), 10.0, "guidellm");
        assert_eq!(v("itl_mean_ms", "mlperf"), None);
        // e2e: ours from the schedule (41, 62); vLLM's and aiperf's to the
        // last token from the send (40, 60); guidellm's to the end (41, 60);
        // MLPerf's with the failure (41, 62, 101).
        near(v("e2e_mean_ms", "llmload"), 51.5, "ours");
        near(v("e2e_mean_ms", "vllm"), 50.0, "vllm");
        near(v("e2e_p99_ms", "vllm"), 59.8, "40 + 0.99 × 20");
        near(v("e2e_mean_ms", "aiperf"), 50.0, "aiperf");
        near(v("e2e_mean_ms", "guidellm"), 50.5, "guidellm");
        near(v("e2e_mean_ms", "mlperf"), 68.0, "mlperf");
        // Rates: ours and MLPerf's over the measured window (200 ms);
        // vLLM's from the first issue (999) and guidellm's and aiperf's from
        // the first send (1000) to the last end (1100).
        near(v("requests_per_s", "llmload"), 10.0, "ours");
        near(v("requests_per_s", "mlperf"), 15.0, "failures included");
        near(v("requests_per_s", "vllm"), 2.0 / 0.101, "vllm");
        near(v("requests_per_s", "guidellm"), 20.0, "guidellm");
        near(v("output_tokens_per_s", "aiperf"), 90.0, "aiperf");
        near(v("output_tokens_per_s", "llmload"), 45.0, "ours");
        let how = &d
            .rows
            .iter()
            .find(|r| r.metric == "itl_mean_ms")
            .unwrap()
            .how;
        assert!(how[4].contains("no inter-token"), "{how:?}");
    }

    #[test]
    fn the_headline_is_the_presets_column() {
        let b = block();
        let d = Definitions::of(&b, 200 * M, MetricsPreset::Guidellm);
        let h = d.headline();
        assert_eq!(h.preset, "guidellm");
        assert_eq!(h.tpot_ms.mean, d.value("tpot_mean_ms", "guidellm"));
        assert_eq!(h.e2e_ms.p99, d.value("e2e_p99_ms", "guidellm"));
        assert_eq!(h.requests_per_s, d.value("requests_per_s", "guidellm"));
        let ours = Definitions::of(&b, 200 * M, MetricsPreset::Llmload).headline();
        assert_eq!(ours.ttft_ms.mean, Some(15.0));
    }

    #[test]
    fn an_empty_run_has_no_values_and_says_why() {
        let d = Definitions::of(&Block::default(), 0, MetricsPreset::Llmload);
        assert!(
            d.rows
                .iter()
                .skip(1)
                .all(|r| r.values.iter().all(Option::is_none))
        );
        let ttft = d.rows.iter().find(|r| r.metric == "ttft_p50_ms").unwrap();
        assert!(ttft.how[0].contains("no samples"), "{:?}", ttft.how);
    }
}
