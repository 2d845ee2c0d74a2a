//! What a run is asked to do, in the engine's terms and free of how it was
//! written down: the load of each stage, its arrival law, content checks,
//! SLO thresholds. A leaf module: the profile resolves into these types, the
//! engine runs them, metrics and the report read them back.

use crate::choice::choices;

/// How requests are released during a stage. Written as `LoadMode`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(into = "LoadMode", from = "LoadMode")]
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

/// A stage's load as summary.json writes it, `{"mode": …}` with the
/// mode's parameters: an open loop is named by its arrival law.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "mode", rename_all = "lowercase")]
pub(crate) enum LoadMode {
    Concurrency {
        #[cfg_attr(test, schemars(range(min = 1)))]
        concurrency: usize,
    },
    Offline,
    Poisson {
        rate_from: f64,
        rate_to: f64,
    },
    Uniform {
        rate_from: f64,
        rate_to: f64,
    },
}

impl LoadMode {
    /// The mode's name, as written.
    pub(crate) fn mode(&self) -> &'static str {
        match self {
            LoadMode::Concurrency { .. } => "concurrency",
            LoadMode::Offline => "offline",
            LoadMode::Poisson { .. } => "poisson",
            LoadMode::Uniform { .. } => "uniform",
        }
    }
}

impl From<Load> for LoadMode {
    fn from(l: Load) -> LoadMode {
        match l {
            Load::Closed { concurrency } => LoadMode::Concurrency { concurrency },
            Load::Offline => LoadMode::Offline,
            Load::Open {
                kind: ArrivalKind::Poisson,
                rate_from,
                rate_to,
            } => LoadMode::Poisson { rate_from, rate_to },
            Load::Open {
                kind: ArrivalKind::Uniform,
                rate_from,
                rate_to,
            } => LoadMode::Uniform { rate_from, rate_to },
        }
    }
}

impl From<LoadMode> for Load {
    fn from(l: LoadMode) -> Load {
        match l {
            LoadMode::Concurrency { concurrency } => Load::Closed { concurrency },
            LoadMode::Offline => Load::Offline,
            LoadMode::Poisson { rate_from, rate_to } => Load::Open {
                kind: ArrivalKind::Poisson,
                rate_from,
                rate_to,
            },
            LoadMode::Uniform { rate_from, rate_to } => Load::Open {
                kind: ArrivalKind::Uniform,
                rate_from,
                rate_to,
            },
        }
    }
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

choices! {
    /// Inter-arrival law (`--arrival`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum ArrivalKind {
        Uniform = "uniform",
        Poisson = "poisson",
    }
}

/// Limits; `None` is not checked.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
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

choices! {
    /// `--token-source`: where token counts come from.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) enum TokenPolicy {
        /// The endpoint's `usage`, else `--tokenizer`, else the text events.
        #[default]
        Auto = "auto",
        /// `--tokenizer` always, even when the endpoint reports usage (as
        /// MLPerf counts): output text goes to the parent to be counted.
        Tokenizer = "tokenizer",
        /// The endpoint's `usage` only; a response without it is counted by
        /// its text events (unknown when not streamed), never by the
        /// tokenizer.
        Usage = "usage",
    }
}

/// `--slo`: the bounds a request must meet to count as *good* (goodput).
/// A bound left unset is not checked; with none set there is no goodput.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
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

choices! {
    /// `--metrics-preset`: whose definitions the headline numbers use.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) enum MetricsPreset {
        #[default]
        Llmload = "llmload",
        Vllm = "vllm",
        Guidellm = "guidellm",
        Aiperf = "aiperf",
        Mlperf = "mlperf",
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
    /// As `--server-metrics` spells it.
    pub(crate) fn name(&self) -> &str {
        match self {
            ServerMetrics::Auto => "auto",
            ServerMetrics::Off => "off",
            ServerMetrics::Url(url) => url,
        }
    }

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

choices! {
    /// `--io`: which backend moves the workers' bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) enum IoChoice {
        Epoll = "epoll",
        Uring = "uring" | "io_uring",
        /// io_uring when the kernel offers what the backend needs, else
        /// epoll.
        #[default]
        Auto = "auto",
    }
}

choices! {
    /// The backend a run's workers use (`--io` resolved against the kernel).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) enum IoBackend {
        #[default]
        Epoll = "epoll",
        Uring = "uring",
    }
}

/// The backend `--io` chose on this kernel, and why, in words for the
/// report (`engine::io::choose` decides).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub(crate) struct IoChosen {
    /// The backend that ran.
    pub backend: IoBackend,
    /// `--io` as asked.
    pub requested: IoChoice,
    /// Why this backend ran.
    pub reason: String,
    /// io_uring's kernel submission-queue thread was on (`--uring-sqpoll`).
    pub sqpoll: bool,
}

choices! {
    /// `--events`: which requests get a line in events.jsonl.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) enum EventsMode {
        #[default]
        All = "all",
        /// Only failed requests.
        Errors = "errors",
        /// No events.jsonl at all.
        None = "none" | "off",
    }
}

/// `--source-addrs`: the local addresses new connections are bound to,
/// round-robin (each address has its own ephemeral port range per
/// destination). `127.0.0.1-127.0.0.4` (an IPv4 range), `a,b,c`, or one
/// address.
pub(crate) fn parse_source_addrs(s: &str) -> Result<Vec<std::net::IpAddr>, String> {
    use std::net::{IpAddr, Ipv4Addr};
    const MAX: u32 = 256;
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let addr = |t: &str| {
            t.trim()
                .parse::<IpAddr>()
                .map_err(|_| format!("'{t}' is not an IP address"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (IpAddr::V4(a), IpAddr::V4(b)) = (addr(a)?, addr(b)?) else {
                    return Err(format!(
                        "'{part}': ranges are IPv4 only; list IPv6 addresses"
                    ));
                };
                let (lo, hi) = (u32::from(a), u32::from(b));
                if hi < lo {
                    return Err(format!("'{part}': the range ends before it starts"));
                }
                if hi - lo >= MAX {
                    return Err(format!("'{part}': at most {MAX} addresses"));
                }
                out.extend((lo..=hi).map(|v| IpAddr::V4(Ipv4Addr::from(v))));
            }
            None => out.push(addr(part)?),
        }
    }
    if out.is_empty() {
        return Err("no address given".into());
    }
    if out.len() > MAX as usize {
        return Err(format!("at most {MAX} addresses"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_addrs_are_a_range_a_list_or_one() {
        let v = parse_source_addrs("127.0.0.1-127.0.0.4").unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[3].to_string(), "127.0.0.4");
        let v = parse_source_addrs("10.0.0.1, ::1").unwrap();
        assert_eq!(v[1].to_string(), "::1");
        assert!(parse_source_addrs("127.0.0.4-127.0.0.1").is_err());
        assert!(parse_source_addrs("127.0.0.1-127.0.2.1").is_err());
        assert!(parse_source_addrs("host").unwrap_err().contains("'host'"));
        assert!(parse_source_addrs("").is_err());
    }

    #[test]
    fn io_and_events_choices_parse_by_name() {
        assert_eq!(IoChoice::parse("uring"), Ok(IoChoice::Uring));
        assert!(IoChoice::parse("kqueue").is_err());
        assert_eq!(EventsMode::parse("errors"), Ok(EventsMode::Errors));
        assert!(EventsMode::parse("some").is_err());
        assert_eq!(
            IoChoice::parse("kqueue").unwrap_err(),
            "'kqueue': expected epoll, uring or auto"
        );
        assert_eq!(
            MetricsPreset::parse("x").unwrap_err(),
            "'x': expected llmload, vllm, guidellm, aiperf or mlperf"
        );
    }
}
