//! What a run is asked to do, in the engine's terms and free of how it was
//! written down: the load of each stage, its arrival law, content checks,
//! SLO thresholds. A leaf module: the profile resolves into these types, the
//! engine runs them, metrics and the report read them back.

/// How requests are released during a stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Load {
    /// Closed loop: keep `concurrency` requests in flight, each released when
    /// a previous one finishes (t_sched = release time).
    Closed { concurrency: usize },
    /// Every request due at the stage start, in flight up to the connection
    /// bound (t_sched = stage start).
    Offline,
    /// Open loop: arrivals on a schedule regardless of completions, at a rate
    /// sweeping linearly from `rate_from` to `rate_to` (equal for a constant rate).
    Open {
        kind: ArrivalKind,
        rate_from: f64,
        rate_to: f64,
    },
}

/// One stage of a run.
#[derive(Clone, Debug)]
pub(crate) struct StagePlan {
    pub name: String,
    pub load: Load,
    /// Measured length of the stage (the first stage's warmup comes before it).
    pub duration_ns: Option<u64>,
    /// Measured requests to issue in the stage.
    pub requests: Option<u64>,
    /// With `requests`: the count ends the stage only once this long has
    /// been measured too (`min_duration` in closed loop: until both hold).
    pub min_ns: Option<u64>,
}

/// Content checks on successful responses; one that fails turns the
/// request into a `check_failed` error.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Checks {
    pub contains: Vec<String>,
    pub not_contains: Vec<String>,
    pub min_completion_tokens: Option<u64>,
    pub max_completion_tokens: Option<u64>,
    /// The status a response must have.
    pub status: Option<u16>,
}

impl Checks {
    pub(crate) fn is_empty(&self) -> bool {
        *self == Checks::default()
    }

    /// Whether the response text must reach the parent.
    pub(crate) fn needs_text(&self) -> bool {
        !self.contains.is_empty() || !self.not_contains.is_empty()
    }

    /// The first check a response fails, as a message; `None` when all pass.
    pub(crate) fn failure(&self, status: u16, output_tokens: u64, text: &str) -> Option<String> {
        if let Some(want) = self.status
            && status != want
        {
            return Some(format!("status {status}, expected {want}"));
        }
        if let Some(min) = self.min_completion_tokens
            && output_tokens < min
        {
            return Some(format!(
                "{output_tokens} completion tokens, expected at least {min}"
            ));
        }
        if let Some(max) = self.max_completion_tokens
            && output_tokens > max
        {
            return Some(format!(
                "{output_tokens} completion tokens, expected at most {max}"
            ));
        }
        if let Some(m) = self.contains.iter().find(|m| !text.contains(m.as_str())) {
            return Some(format!("output does not contain {m:?}"));
        }
        if let Some(m) = self.not_contains.iter().find(|m| text.contains(m.as_str())) {
            return Some(format!("output contains {m:?}"));
        }
        None
    }
}

/// Inter-arrival law.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ArrivalKind {
    Uniform,
    Poisson,
}

impl ArrivalKind {
    /// The profile's `arrival` (and `bench --arrival`).
    pub(crate) fn parse(s: &str) -> Result<ArrivalKind, String> {
        match s {
            "uniform" => Ok(ArrivalKind::Uniform),
            "poisson" => Ok(ArrivalKind::Poisson),
            _ => Err(format!("'{s}': expected uniform or poisson")),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ArrivalKind::Uniform => "uniform",
            ArrivalKind::Poisson => "poisson",
        }
    }
}

/// Limits; `None` is not checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Thresholds {
    pub ttft_p95_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    /// On the requests' time per output token.
    pub tpot_p99_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Failed over issued, 0..1.
    pub error_rate: Option<f64>,
    pub min_rps: Option<f64>,
    /// Stop the run after the first stage that breaks one.
    pub abort_on_fail: bool,
}

impl Thresholds {
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.ttft_p95_ms.is_none()
            && self.ttft_p99_ms.is_none()
            && self.tpot_p99_ms.is_none()
            && self.p95_ms.is_none()
            && self.p99_ms.is_none()
            && self.error_rate.is_none()
            && self.min_rps.is_none()
    }
}

/// How long a request, its connection, its first token and the run's end
/// may take, and how much of a response's timing a request keeps. One value
/// travels from the profile to the parent and every worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A request not finished this long after it was sent fails as
    /// `request_timeout`.
    pub timeout_ns: u64,
    /// A response with no first token this long after the send fails as
    /// `ttft_timeout`; `None` leaves it to `timeout_ns`.
    pub ttft_ns: Option<u64>,
    /// A TCP connect not done by then fails as `connect_timeout`.
    pub connect_ns: u64,
    /// At the end of a run or after an interrupt, how long requests in
    /// flight get to finish before they are aborted.
    pub drain_ns: u64,
    /// Inter-token gaps a request keeps; later gaps are counted as truncated.
    pub max_gaps: usize,
    /// Output text bytes a response keeps; later text is counted, not kept,
    /// and the response is marked `output_truncated`.
    pub max_output_text: usize,
}

/// `--token-source`: where token counts come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TokenPolicy {
    /// The endpoint's `usage`, else `--tokenizer`, else the text events.
    #[default]
    Auto,
    /// `--tokenizer` always, even when the endpoint reports usage (as
    /// MLPerf counts): output text goes to the parent to be counted.
    Tokenizer,
    /// The endpoint's `usage` only; a response without it is counted by its
    /// text events (unknown when not streamed), never by the tokenizer.
    Usage,
}

impl TokenPolicy {
    pub(crate) fn parse(s: &str) -> Result<TokenPolicy, String> {
        match s {
            "auto" => Ok(TokenPolicy::Auto),
            "tokenizer" => Ok(TokenPolicy::Tokenizer),
            "usage" => Ok(TokenPolicy::Usage),
            _ => Err(format!("'{s}': expected auto, tokenizer or usage")),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            TokenPolicy::Auto => "auto",
            TokenPolicy::Tokenizer => "tokenizer",
            TokenPolicy::Usage => "usage",
        }
    }
}

/// `--slo`: the bounds a request must meet to count as *good* (goodput).
/// A bound left unset is not checked; with none set there is no goodput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Slo {
    /// TTFT from the send, ns.
    pub ttft_ns: Option<u64>,
    /// The request's own TPOT (our definition), ns.
    pub tpot_ns: Option<u64>,
    /// e2e latency (t_end − t_sched), ns.
    pub e2e_ns: Option<u64>,
}

impl Slo {
    pub(crate) fn is_empty(&self) -> bool {
        self.ttft_ns.is_none() && self.tpot_ns.is_none() && self.e2e_ns.is_none()
    }
}

/// `--metrics-preset`: whose definitions the headline numbers use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum MetricsPreset {
    #[default]
    Llmload,
    Vllm,
    Guidellm,
    Aiperf,
    Mlperf,
}

impl MetricsPreset {
    pub(crate) const ALL: [MetricsPreset; 5] = [
        MetricsPreset::Llmload,
        MetricsPreset::Vllm,
        MetricsPreset::Guidellm,
        MetricsPreset::Aiperf,
        MetricsPreset::Mlperf,
    ];

    pub(crate) fn parse(s: &str) -> Result<MetricsPreset, String> {
        MetricsPreset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("'{s}': expected llmload, vllm, guidellm, aiperf or mlperf"))
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            MetricsPreset::Llmload => "llmload",
            MetricsPreset::Vllm => "vllm",
            MetricsPreset::Guidellm => "guidellm",
            MetricsPreset::Aiperf => "aiperf",
            MetricsPreset::Mlperf => "mlperf",
        }
    }
}

/// `--server-metrics`: where the endpoint's own Prometheus metrics are read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum ServerMetrics {
    /// Try `<endpoint origin>/metrics` once; use it if it answers
    /// Prometheus text.
    #[default]
    Auto,
    Off,
    Url(String),
}

impl ServerMetrics {
    pub(crate) fn parse(s: &str) -> Result<ServerMetrics, String> {
        match s {
            "auto" => Ok(ServerMetrics::Auto),
            "off" | "none" => Ok(ServerMetrics::Off),
            url if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(ServerMetrics::Url(url.to_string()))
            }
            _ => Err(format!("'{s}': expected an http(s):// URL, auto or off")),
        }
    }
}
