//! Stages and scenarios as written, turned into their typed form while they
//! are checked: stages straight into the engine's `plan::StagePlan`, each
//! scenario into a [`Scenario`] whose overrides are already applied over the
//! top level (its API found, its endpoint parsed and resolved, its headers
//! merged), so nothing after this reads a profile string again. A value that
//! fails a check is reported at its JSON path and left out; the caller
//! discards the result when any error was collected.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use super::validate::{
    Errors, check_api, check_dataset, check_endpoints, check_headers, check_positive, unflag,
};
use super::{ContentSpec, Profile, ScenarioSpec, StageSpec, Turns, defaults};
use crate::choice::choices;
use crate::config::run_length;
use crate::dataset::DatasetSpec;
use crate::http::endpoint::Endpoint;
use crate::plan::{ArrivalKind, Checks, Load, StagePlan};
use crate::protocol::Protocol;
use crate::tls::TlsSettings;

choices! {
    /// Prompt-cache handling.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum CacheMode {
        /// A per-conversation UUID at the front of the first user message.
        Bust = "bust",
        /// Prompts as written.
        Natural = "natural",
    }
}

choices! {
    /// A single-stage run's `mode`, parsed once: it shapes the stage and,
    /// when open-loop, names the arrival law.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Mode [one_of] {
        Offline = "offline",
        Poisson = "poisson",
        Uniform = "uniform",
        Concurrency = "concurrency",
    }
}

impl Mode {
    /// The arrival law an open-loop mode names.
    pub(crate) fn arrival(self) -> Option<ArrivalKind> {
        match self {
            Mode::Poisson => Some(ArrivalKind::Poisson),
            Mode::Uniform => Some(ArrivalKind::Uniform),
            Mode::Offline | Mode::Concurrency => None,
        }
    }
}

/// One scenario of a resolved profile: the top level with the scenario's
/// overrides applied.
#[derive(Clone)]
pub(crate) struct Scenario {
    pub name: String,
    pub weight: f64,
    pub protocol: &'static dyn Protocol,
    /// Its own endpoint, else the top-level one (with this scenario's API's
    /// default path when the APIs differ); `None`: the built-in endpoint.
    pub endpoint: Option<Endpoint>,
    /// Further endpoints that share its workload with `endpoint` (the
    /// first of the list); empty for one endpoint. Every setting but the
    /// URL is shared (`docs/DESIGN.md`, "Several endpoints").
    pub more_endpoints: Vec<Endpoint>,
    /// The top level's headers with the scenario's over them (names compare
    /// case-insensitively), in that order.
    pub headers: Vec<(String, String)>,
    /// How its https endpoint is reached (unused for http).
    pub tls: TlsSettings,
    /// Connections carry further requests; false: one request each.
    pub keep_alive: bool,
    /// `None`: the endpoint's first listed model.
    pub model: Option<String>,
    pub max_tokens: u32,
    pub stream: bool,
    pub system: Option<String>,
    pub turns: TurnRange,
    /// Pause between a reply and the conversation's next turn.
    pub think_time_ns: u64,
    pub cache_mode: CacheMode,
    /// `None`: the top-level dataset, synthetic spec or built-in prompts.
    pub content: Option<Content>,
    pub checks: Checks,
}

/// Turns per conversation, inclusive bounds (`min == max` when fixed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TurnRange {
    pub min: u32,
    pub max: u32,
}

/// What a scenario sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Content {
    /// A random prompt from the pool per conversation.
    Pool { prompts: Vec<String> },
    /// Turn k sends line k of the script.
    Scripted { script: Vec<String> },
    /// Generated prompts of about this many input tokens.
    Sized { approx_input_tokens: u32 },
    /// A dataset, rows grouped into conversations by the `conversation`
    /// column when given.
    Dataset {
        /// Boxed: a spec is many times the size of the other variants.
        spec: Box<DatasetSpec>,
        conversation: Option<String>,
    },
}

impl Turns {
    pub(crate) fn range(self) -> TurnRange {
        match self {
            Turns::Fixed(n) => TurnRange { min: n, max: n },
            Turns::Range { min, max } => TurnRange { min, max },
        }
    }
}

/// The open-loop arrival law: `arrival`, else the law `mode` names, else
/// the default. A contradiction with `mode` is an error.
pub(crate) fn arrival(
    p: &Profile,
    mode: Option<&Result<Mode, String>>,
    errs: &mut Errors,
) -> ArrivalKind {
    let from_mode = match mode {
        Some(Ok(m)) => m.arrival(),
        _ => None,
    };
    let Some(written) = &p.arrival else {
        return from_mode.unwrap_or(defaults::ARRIVAL);
    };
    match (ArrivalKind::parse(written), from_mode) {
        (Err(e), _) => {
            errs.at("arrival", e);
            defaults::ARRIVAL
        }
        (Ok(a), Some(m)) if m != a => {
            errs.at(
                "arrival",
                format!("{} contradicts mode {}", a.name(), m.name()),
            );
            a
        }
        (Ok(a), _) => a,
    }
}

/// The run's stages with defaults applied: `stages` as written, or the
/// single stage `mode`/`rate`/`concurrency`/`duration`/`requests` describe.
/// Open-loop stages arrive by `kind`. Under `mlperf` (MLPerf's run rules)
/// and with `min_duration`/`min_requests` the single stage's count is left
/// to its run-length rule (`config::run_length`), and a zero duration under
/// `mlperf` means one pass over the dataset.
pub(crate) fn stages(
    p: &Profile,
    mode: Option<&Result<Mode, String>>,
    kind: ArrivalKind,
    mlperf: bool,
    errs: &mut Errors,
) -> Vec<StagePlan> {
    if !mlperf && p.duration.is_some_and(|d| d.0.is_zero()) {
        errs.at("duration", "must be longer than 0");
    }
    if p.requests == Some(0) {
        errs.at("requests", "must be at least 1");
    }
    let Some(specs) = &p.stages else {
        return single_stage(p, mode, kind, mlperf, errs)
            .into_iter()
            .collect();
    };
    for (name, set) in [
        ("mode", p.mode.is_some()),
        ("rate", p.rate.is_some()),
        ("concurrency", p.concurrency.is_some()),
        ("duration", p.duration.is_some()),
        ("requests", p.requests.is_some()),
    ] {
        if set {
            errs.at(
                name,
                "ambiguous beside stages: give it in each stage, or drop stages",
            );
        }
    }
    if specs.is_empty() {
        errs.at(
            "stages",
            "empty: give at least one stage, or leave stages out",
        );
    }
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let path = format!("stages[{i}]");
        let name = match &s.name {
            Some(n) if n.is_empty() => {
                errs.at(format!("{path}.name"), "empty name");
                continue;
            }
            Some(n) => n.clone(),
            None => format!("stage-{}", i + 1),
        };
        if !names.insert(name.clone()) {
            errs.at(format!("{path}.name"), format!("'{name}' names two stages"));
        }
        if let Some(stage) = stage_of(s, name, kind, &path, errs) {
            out.push(stage);
        }
    }
    out
}

fn single_stage(
    p: &Profile,
    mode: Option<&Result<Mode, String>>,
    kind: ArrivalKind,
    mlperf: bool,
    errs: &mut Errors,
) -> Option<StagePlan> {
    let rate_sizes_only = run_length::rate_sizes_only(mlperf, mode);
    let mode = match (mode, p.rate) {
        (Some(Ok(m)), _) => *m,
        (Some(Err(e)), _) => {
            errs.at("mode", e);
            return None;
        }
        // Named poisson in messages; the stage arrives by `kind`.
        (None, Some(_)) => Mode::Poisson,
        (None, None) => Mode::Concurrency,
    };
    let load = match mode {
        Mode::Offline => Load::Offline,
        Mode::Poisson | Mode::Uniform => match p.rate {
            Some(r) if r.is_finite() && r > 0.0 => Load::Open {
                kind,
                rate_from: r,
                rate_to: r,
            },
            Some(r) => {
                errs.at("rate", format!("{r}: must be a number > 0"));
                return None;
            }
            None => {
                errs.at(
                    "rate",
                    format!("mode {} needs a rate (requests per second)", mode.name()),
                );
                return None;
            }
        },
        Mode::Concurrency => match p.concurrency.unwrap_or(defaults::CONCURRENCY) {
            0 => {
                errs.at("concurrency", "must be at least 1");
                return None;
            }
            n => Load::Closed { concurrency: n },
        },
    };
    if p.rate.is_some() && !matches!(load, Load::Open { .. }) && !rate_sizes_only {
        errs.at(
            "rate",
            format!("applies to modes poisson and uniform, not {}", mode.name()),
        );
    }
    if p.concurrency.is_some() && !matches!(load, Load::Closed { .. }) {
        errs.at(
            "concurrency",
            format!("applies to mode concurrency, not {}", mode.name()),
        );
    }
    // A cap of 0 is none, as MLPerf's max_duration_ms.
    let cap = p.max_duration.map(|d| d.0).filter(|d| !d.is_zero());
    let (duration, requests) = if mlperf || p.min_duration.is_some() || p.min_requests.is_some() {
        // Sized by its run-length rule once the dataset is loaded.
        (cap, None)
    } else {
        let (d, r) = match (p.duration, p.requests, load) {
            (None, None, Load::Offline) => (None, Some(defaults::OFFLINE_REQUESTS)),
            (None, None, _) => (Some(defaults::DURATION), None),
            (d, r, _) => (d.map(|d| d.0), r),
        };
        let d = match (d, cap) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        };
        (d, r)
    };
    Some(StagePlan {
        name: defaults::STAGE_NAME.to_string(),
        load,
        duration_ns: duration.map(nanos),
        requests,
        min_ns: None,
    })
}

/// One written stage to its typed form, or errors at `path`.
fn stage_of(
    s: &StageSpec,
    name: String,
    kind: ArrivalKind,
    path: &str,
    errs: &mut Errors,
) -> Option<StagePlan> {
    let before = errs.len();
    let ramp = s.rate_from.is_some() || s.rate_to.is_some();
    let kinds = [s.concurrency.is_some(), s.rate.is_some(), ramp];
    match kinds.iter().filter(|k| **k).count() {
        0 => errs.at(
            path,
            "no load: set one of concurrency (closed loop), rate (open loop) or rate_from + rate_to (ramp)",
        ),
        1 => {}
        _ => errs.at(
            path,
            "set only one of concurrency, rate or rate_from + rate_to",
        ),
    }
    if s.concurrency == Some(0) {
        errs.at(format!("{path}.concurrency"), "must be at least 1");
    }
    check_positive(errs, &format!("{path}.rate"), s.rate, "rate");
    match (s.rate_from, s.rate_to) {
        (Some(_), None) => errs.at(format!("{path}.rate_from"), "needs rate_to"),
        (None, Some(_)) => errs.at(format!("{path}.rate_to"), "needs rate_from"),
        (Some(a), Some(b)) => {
            for (field, x) in [("rate_from", a), ("rate_to", b)] {
                if !(x.is_finite() && x >= 0.0) {
                    errs.at(format!("{path}.{field}"), format!("{x}: must be ≥ 0"));
                }
            }
            if a == 0.0 && b == 0.0 {
                errs.at(
                    path,
                    "rate_from and rate_to are both 0: nothing would be sent",
                );
            }
            if s.duration.is_none() {
                errs.at(
                    format!("{path}.duration"),
                    "a ramp needs a duration (the rate sweeps across it)",
                );
            }
        }
        (None, None) => {}
    }
    if s.duration.is_some_and(|d| d.0.is_zero()) {
        errs.at(format!("{path}.duration"), "must be longer than 0");
    }
    if s.requests == Some(0) {
        errs.at(format!("{path}.requests"), "must be at least 1");
    }
    if s.duration.is_none() && s.requests.is_none() {
        errs.at(
            format!("{path}.duration"),
            "missing: a stage needs a duration (or a requests cap)",
        );
    }
    if errs.len() > before {
        return None;
    }
    let load = match (s.concurrency, s.rate, s.rate_from, s.rate_to) {
        (Some(n), ..) => Load::Closed { concurrency: n },
        (_, Some(r), ..) => Load::Open {
            kind,
            rate_from: r,
            rate_to: r,
        },
        (_, _, Some(from), Some(to)) => Load::Open {
            kind,
            rate_from: from,
            rate_to: to,
        },
        _ => return None,
    };
    Some(StagePlan {
        name,
        load,
        duration_ns: s.duration.map(|d| nanos(d.0)),
        requests: s.requests,
        min_ns: None,
    })
}

/// The run's scenarios: `scenarios` as written, each over `top` (the
/// top-level settings, as the scenario a profile without `scenarios` runs).
pub(crate) fn scenarios(p: &Profile, top: Scenario, errs: &mut Errors) -> Vec<Scenario> {
    let Some(specs) = &p.scenarios else {
        return vec![top];
    };
    if specs.is_empty() {
        errs.at(
            "scenarios",
            "empty: give at least one scenario, or leave scenarios out",
        );
    }
    let mut names = HashSet::new();
    let mut out = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let path = format!("scenarios[{i}]");
        if s.name.is_empty() {
            errs.at(format!("{path}.name"), "empty name");
        } else if !names.insert(s.name.as_str()) {
            errs.at(
                format!("{path}.name"),
                format!("'{}' names two scenarios", s.name),
            );
        }
        out.push(scenario_of(s, &top, &path, errs));
    }
    out
}

/// One written scenario over the top level, its errors at `path`.
fn scenario_of(s: &ScenarioSpec, top: &Scenario, path: &str, errs: &mut Errors) -> Scenario {
    let weight = s.weight.unwrap_or(defaults::WEIGHT);
    check_positive(errs, &format!("{path}.weight"), Some(weight), "weight");
    let protocol = s
        .api
        .as_ref()
        .and_then(|a| check_api(errs, &format!("{path}.api"), a))
        .unwrap_or(top.protocol);
    let top_list = || top.endpoint.iter().chain(&top.more_endpoints);
    let mut endpoints = match &s.endpoint {
        Some(url) => check_endpoints(
            errs,
            &format!("{path}."),
            Some(url),
            None,
            protocol.default_path(),
        ),
        None if protocol.name() == top.protocol.name() => top_list().cloned().collect(),
        // Another API at the same servers: its own default path there.
        None => top_list()
            .map(|e| Endpoint {
                url: origin(&e.url),
                path: protocol.default_path().to_string(),
                ..e.clone()
            })
            .collect(),
    };
    let endpoint = (!endpoints.is_empty()).then(|| endpoints.remove(0));
    check_headers(errs, &format!("{path}.headers"), s.headers.as_ref());
    let tls = tls_settings(
        errs,
        &format!("{path}."),
        TlsFields {
            ca_cert: s.ca_cert.as_ref(),
            insecure: s.insecure,
            server_name: s.tls_server_name.as_deref(),
            client_cert: s.client_cert.as_ref(),
            client_key: s.client_key.as_ref(),
        },
        &top.tls,
    );
    let mut headers = top.headers.clone();
    for (k, v) in s.headers.iter().flatten() {
        headers.retain(|(old, _)| !old.eq_ignore_ascii_case(k));
        headers.push((k.clone(), v.clone()));
    }
    if s.model.as_deref() == Some("") {
        errs.at(format!("{path}.model"), "empty model name");
    }
    if s.max_tokens == Some(0) {
        errs.at(format!("{path}.max_tokens"), "must be at least 1");
    }
    let turns = s.turns.unwrap_or(Turns::Fixed(defaults::TURNS)).range();
    if turns.min == 0 {
        let p = match s.turns {
            Some(Turns::Range { .. }) => format!("{path}.turns.min"),
            _ => format!("{path}.turns"),
        };
        errs.at(p, "a conversation has at least 1 turn");
    }
    if turns.min > turns.max {
        errs.at(
            format!("{path}.turns"),
            format!("min {} is above max {}", turns.min, turns.max),
        );
    }
    let cache_mode = match &s.cache_mode {
        None => top.cache_mode,
        Some(c) => CacheMode::parse(c).unwrap_or_else(|e| {
            errs.at(format!("{path}.cache_mode"), e);
            top.cache_mode
        }),
    };
    let content = s
        .content
        .as_ref()
        .and_then(|c| content_of(c, &format!("{path}.content"), errs));
    let checks = s.checks.clone().unwrap_or_default();
    if let (Some(min), Some(max)) = (checks.min_completion_tokens, checks.max_completion_tokens)
        && min > max
    {
        errs.at(
            format!("{path}.checks"),
            format!("min_completion_tokens {min} is above max_completion_tokens {max}"),
        );
    }
    if let Some(st) = checks.status
        && !(100..=599).contains(&st)
    {
        errs.at(
            format!("{path}.checks.status"),
            format!("{st}: not an HTTP status"),
        );
    }
    Scenario {
        name: s.name.clone(),
        weight,
        protocol,
        endpoint,
        more_endpoints: endpoints,
        headers,
        tls,
        keep_alive: s.keep_alive.unwrap_or(top.keep_alive),
        model: s.model.clone().or_else(|| top.model.clone()),
        max_tokens: s.max_tokens.unwrap_or(top.max_tokens),
        stream: s.stream.unwrap_or(top.stream),
        system: s.system.clone().or_else(|| top.system.clone()),
        turns,
        think_time_ns: s.think_time.map_or(0, |d| nanos(d.0)),
        cache_mode,
        content,
        checks: Checks {
            contains: checks.contains.unwrap_or_default(),
            not_contains: checks.not_contains.unwrap_or_default(),
            min_completion_tokens: checks.min_completion_tokens.map(u64::from),
            max_completion_tokens: checks.max_completion_tokens.map(u64::from),
            status: checks.status,
        },
    }
}

/// One written content block to its typed form, or errors at `path`.
fn content_of(c: &ContentSpec, path: &str, errs: &mut Errors) -> Option<Content> {
    let before = errs.len();
    let own: &[&str] = match c.mode.as_str() {
        "pool" => &["prompts"],
        "scripted" => &["script"],
        "sized" => &["approx_input_tokens"],
        "dataset" => &["dataset", "conversation"],
        other => {
            errs.at(
                format!("{path}.mode"),
                format!("'{other}': expected pool, scripted, sized or dataset"),
            );
            return None;
        }
    };
    for (field, set) in [
        ("prompts", c.prompts.is_some()),
        ("script", c.script.is_some()),
        ("approx_input_tokens", c.approx_input_tokens.is_some()),
        ("dataset", c.dataset.is_some()),
        ("conversation", c.conversation.is_some()),
    ] {
        if set && !own.contains(&field) {
            errs.at(
                format!("{path}.{field}"),
                format!("not used by mode {} (it reads {})", c.mode, own.join(", ")),
            );
        }
    }
    let lines = |field: &str, list: &Option<Vec<String>>, errs: &mut Errors| match list {
        None => errs.at(
            path,
            format!("mode {} needs {field} (an array of strings)", c.mode),
        ),
        Some(l) if l.is_empty() => errs.at(format!("{path}.{field}"), "empty"),
        Some(l) => {
            for (i, p) in l.iter().enumerate() {
                if p.is_empty() {
                    errs.at(format!("{path}.{field}[{i}]"), "empty string");
                }
            }
        }
    };
    let mut dataset = None;
    match c.mode.as_str() {
        "pool" => lines("prompts", &c.prompts, errs),
        "scripted" => lines("script", &c.script, errs),
        "sized" => match c.approx_input_tokens {
            None => errs.at(path, "mode sized needs approx_input_tokens"),
            Some(0) => errs.at(format!("{path}.approx_input_tokens"), "must be at least 1"),
            Some(_) => {}
        },
        _ => {
            match &c.dataset {
                None => errs.at(path, "mode dataset needs dataset (PATH[,key=value...])"),
                Some(d) => dataset = check_dataset(errs, &format!("{path}.dataset"), d),
            }
            if c.conversation.as_deref() == Some("") {
                errs.at(format!("{path}.conversation"), "empty column name");
            }
        }
    }
    if errs.len() > before {
        return None;
    }
    Some(match c.mode.as_str() {
        "pool" => Content::Pool {
            prompts: c.prompts.clone().unwrap_or_default(),
        },
        "scripted" => Content::Scripted {
            script: c.script.clone().unwrap_or_default(),
        },
        "sized" => Content::Sized {
            approx_input_tokens: c.approx_input_tokens.unwrap_or_default(),
        },
        _ => Content::Dataset {
            spec: Box::new(dataset?),
            conversation: c.conversation.clone(),
        },
    })
}

/// `http[s]://host:port` of a URL (its path dropped).
fn origin(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.find('/') {
        Some(i) => format!("{scheme}://{}", &rest[..i]),
        None => url.to_string(),
    }
}

/// The TLS fields of the top level or of one scenario, as written.
pub(crate) struct TlsFields<'a> {
    pub ca_cert: Option<&'a PathBuf>,
    pub insecure: Option<bool>,
    pub server_name: Option<&'a str>,
    pub client_cert: Option<&'a PathBuf>,
    pub client_key: Option<&'a PathBuf>,
}

/// TLS settings: each field written in `f`, else `inherit`'s. The files
/// written here are read once, so a missing or non-PEM file is reported at
/// its field (`prefix` + name) before anything is contacted; a client
/// certificate and its key must come as a pair. Inherited fields were
/// checked where they were written.
pub(crate) fn tls_settings(
    errs: &mut Errors,
    prefix: &str,
    f: TlsFields<'_>,
    inherit: &TlsSettings,
) -> TlsSettings {
    use crate::tls::client::{read_certs, read_key};
    for (field, flag, path) in [
        ("ca_cert", "--ca-cert", f.ca_cert),
        ("client_cert", "--client-cert", f.client_cert),
    ] {
        if let Some(p) = path
            && let Err(e) = read_certs(p, flag)
        {
            errs.at(format!("{prefix}{field}"), unflag(e, flag));
        }
    }
    if let Some(p) = f.client_key
        && let Err(e) = read_key(p)
    {
        errs.at(format!("{prefix}client_key"), e);
    }
    if let Some(name) = f.server_name
        && rustls::pki_types::ServerName::try_from(name).is_err()
    {
        errs.at(
            format!("{prefix}tls_server_name"),
            format!("'{name}' is not a valid TLS server name (a DNS name or an IP address)"),
        );
    }
    let settings = TlsSettings {
        ca_cert: f.ca_cert.cloned().or_else(|| inherit.ca_cert.clone()),
        insecure: f.insecure.unwrap_or(inherit.insecure),
        server_name: f
            .server_name
            .map(str::to_string)
            .or_else(|| inherit.server_name.clone()),
        client_cert: f
            .client_cert
            .cloned()
            .or_else(|| inherit.client_cert.clone()),
        client_key: f.client_key.cloned().or_else(|| inherit.client_key.clone()),
    };
    // Only where this level wrote one of the pair: an inherited half was
    // reported where it was written.
    if f.client_cert.is_some() || f.client_key.is_some() {
        match (&settings.client_cert, &settings.client_key) {
            (Some(_), None) => errs.at(
                format!("{prefix}client_cert"),
                "a client certificate needs its private key (client_key, --client-key)",
            ),
            (None, Some(_)) => errs.at(
                format!("{prefix}client_key"),
                "a client key needs its certificate (client_cert, --client-cert)",
            ),
            _ => {}
        }
    }
    settings
}

/// The TLS fields `s` sets, by name: what is unused when its endpoint is
/// plain http.
pub(crate) fn tls_fields_set(s: &TlsSettings) -> Vec<&'static str> {
    [
        ("ca_cert", s.ca_cert.is_some()),
        ("insecure", s.insecure),
        ("tls_server_name", s.server_name.is_some()),
        ("client_cert", s.client_cert.is_some()),
        ("client_key", s.client_key.is_some()),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(name, _)| name)
    .collect()
}

/// Nanoseconds, as the plan counts time.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
