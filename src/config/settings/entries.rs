//! Each setting's entry in the summary's `config` block: as given, else its
//! default, else `null` — or what its declaration's `config` rule says
//! when the value is resolving's (the first stage's mode, a seed under the
//! preset) or must not be shown (the key).

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::BenchConfig;
use crate::config::duration::format_duration;
use crate::config::profile::defaults;
use crate::config::profile::validate::split_endpoints;
use crate::config::run_length::RunLength;
use crate::http::endpoint::redact_url;
use crate::http::headers::REDACTED;
use crate::plan::Load;

/// What the summary's `config` block knows beyond the configuration: where
/// the run wrote, the endpoint (built-in or given) and the model found.
pub(crate) struct ConfigContext<'a> {
    pub out: &'a Path,
    pub endpoint_url: &'a str,
    pub model: &'a str,
}

/// A setting's entry in `config` from the resolved run: given the value as
/// the merged profile has it (`None` when unset), the value shown, or
/// `None` to leave the key out.
pub(crate) type ConfigEntry = fn(&BenchConfig, &ConfigContext, Option<Value>) -> Option<Value>;

/// The value as given, `null` when unset: the setting has no default, or
/// one that depends on others and is shown by them.
pub(super) fn given(_: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(v.unwrap_or(Value::Null))
}

/// As given, else none: an empty object.
pub(super) fn given_map(_: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(v.unwrap_or_else(|| Value::Object(Map::new())))
}

/// As given, else none: an empty list.
pub(super) fn given_list(_: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(v.unwrap_or_else(|| Value::Array(Vec::new())))
}

/// Puts `key`'s entry into `given`: its rule's value, or as given, else
/// its default, else `null`.
pub(super) fn entry(
    given: &mut Map<String, Value>,
    key: &str,
    defaults: &Map<String, Value>,
    rule: Option<ConfigEntry>,
    (cfg, ctx): (&BenchConfig, &ConfigContext),
) {
    let v = given.remove(key);
    let shown = match rule {
        Some(f) => f(cfg, ctx, v),
        None => Some(
            v.or_else(|| defaults.get(key).cloned())
                .unwrap_or(Value::Null),
        ),
    };
    if let Some(s) = shown {
        given.insert(key.to_string(), s);
    }
}

/// Every endpoint, comma-separated, URL query values redacted.
pub(super) fn shown_endpoint(
    _: &BenchConfig,
    c: &ConfigContext,
    _: Option<Value>,
) -> Option<Value> {
    let shown: Vec<String> = split_endpoints(c.endpoint_url)
        .into_iter()
        .map(redact_url)
        .collect();
    Some(shown.join(",").into())
}

/// The first stage's load (a resolved run has at least one stage).
pub(super) fn shown_mode(cfg: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(match cfg.stages.first().map(|s| s.load) {
        Some(Load::Offline) => "offline".into(),
        Some(Load::Closed { .. }) => "concurrency".into(),
        Some(Load::Open { kind, .. }) => kind.name().into(),
        None => v.unwrap_or(Value::Null),
    })
}

/// A single stage's concurrency, however it was set.
pub(super) fn shown_concurrency(
    cfg: &BenchConfig,
    _: &ConfigContext,
    v: Option<Value>,
) -> Option<Value> {
    Some(
        match (&cfg.profile.stages, cfg.stages.first().map(|s| s.load)) {
            (None, Some(Load::Closed { concurrency })) => concurrency.into(),
            _ => v.unwrap_or(Value::Null),
        },
    )
}

/// The open-loop stages' arrival law, however it was set.
pub(super) fn shown_arrival(
    cfg: &BenchConfig,
    _: &ConfigContext,
    v: Option<Value>,
) -> Option<Value> {
    let open = cfg.stages.iter().find_map(|s| match s.load {
        Load::Open { kind, .. } => Some(kind),
        _ => None,
    });
    Some(open.map_or(v.unwrap_or(Value::Null), |k| k.name().into()))
}

/// The MLPerf rule's minimum when it sized the run, else as given.
pub(super) fn shown_min_duration(
    cfg: &BenchConfig,
    _: &ConfigContext,
    v: Option<Value>,
) -> Option<Value> {
    match &cfg.run_length {
        Some(RunLength::Mlperf {
            min_duration_ms,
            exact: None,
            ..
        }) if cfg.mlperf => Some(format_duration(Duration::from_millis(*min_duration_ms)).into()),
        _ => Some(v.unwrap_or(Value::Null)),
    }
}

/// The key itself never: the variable it was read from when given as
/// `${NAME}`, else `<redacted>` when there is one (given, from its file or
/// from the environment).
pub(super) fn shown_api_key(
    cfg: &BenchConfig,
    _: &ConfigContext,
    v: Option<Value>,
) -> Option<Value> {
    if let Some(Value::String(k)) = &v
        && crate::config::mlperf::env::whole_reference(k).is_some()
    {
        return Some(k.as_str().into());
    }
    Some(if v.is_some() || cfg.api_key.is_some() {
        REDACTED.into()
    } else {
        Value::Null
    })
}

/// Outside the preset `seed` seeds everything (0 when unset); under it
/// `seed` is the sampling seed only, shown when given.
pub(super) fn shown_seed(cfg: &BenchConfig, c: &ConfigContext, v: Option<Value>) -> Option<Value> {
    if cfg.mlperf {
        given(cfg, c, v)
    } else {
        Some(cfg.sampling.seed.unwrap_or(defaults::SEED).into())
    }
}

/// Each address, a range written out.
pub(super) fn shown_source_addrs(
    cfg: &BenchConfig,
    c: &ConfigContext,
    v: Option<Value>,
) -> Option<Value> {
    if cfg.source_addrs.is_empty() {
        return given(cfg, c, v);
    }
    let addrs: Vec<String> = cfg.source_addrs.iter().map(|a| a.to_string()).collect();
    Some(addrs.into())
}

/// The instant, however it was written.
pub(super) fn shown_start_at(
    cfg: &BenchConfig,
    c: &ConfigContext,
    v: Option<Value>,
) -> Option<Value> {
    match cfg.start_at_ns {
        Some(ns) => Some(crate::clock::format_rfc3339(ns).into()),
        None => given(cfg, c, v),
    }
}
