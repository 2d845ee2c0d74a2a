//! Every top-level setting declared once (`table.rs`), in the way ripgrep
//! declares a flag once with its doc, category and update function. One
//! declaration yields the `bench` flag (argh, with its help text), the
//! [`Profile`] field (serde, the same text as its doc comment), the rule that
//! puts a flag over a profile field, its line in `llmload init --full`, its
//! entry in the summary's `config` block, its row in the settings reference
//! (`docs/guide/settings.md`) and its place in `bench --help` (a topic, the
//! default it shows). What a setting means to the run is then one line of
//! `config::resolve`, which reads the field and the same typed default.
//!
//! argh cannot carry topics, defaults or a flag struct shared between
//! commands, so the structs are generated from the declarations by
//! `macro_rules!` (`macros.rs`) rather than derived; the trade-off is a
//! declaration syntax of our own, kept to one line per fact. Special cases
//! (a flag pair, a repeatable flag into a map, a comma list, a flag into a
//! nested field) name their conversion in the declaration; the functions
//! are here.

mod macros;
mod shown;
mod table;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

pub(crate) use macros::{defaults, flag_struct};
pub(crate) use shown::{AsField, Shown};
pub(crate) use table::{BenchFlags, Profile, SETTINGS, config_entries, with_auth_settings};

use super::BenchConfig;
use super::profile::validate::split_endpoints;
use super::profile::{Correlation, HumanBytes, HumanDuration, defaults};
use crate::http::endpoint::redact_url;
use crate::http::headers::{REDACTED, parse_header_flag};
use crate::plan::Load;

/// The topics of `bench --help` and of the settings reference, in the order
/// they are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Group {
    Files,
    Endpoint,
    Auth,
    Load,
    Requests,
    Data,
    Timeouts,
    Checks,
    Outputs,
    Generator,
    Mlperf,
    Shards,
}

impl Group {
    pub(crate) const ALL: [Group; 12] = [
        Group::Files,
        Group::Endpoint,
        Group::Auth,
        Group::Load,
        Group::Requests,
        Group::Data,
        Group::Timeouts,
        Group::Checks,
        Group::Outputs,
        Group::Generator,
        Group::Mlperf,
        Group::Shards,
    ];

    pub(crate) fn heading(self) -> &'static str {
        match self {
            Group::Files => "Profiles",
            Group::Endpoint => "Endpoint",
            Group::Auth => "TLS and authentication",
            Group::Load => "Load and run length",
            Group::Requests => "Requests",
            Group::Data => "Data",
            Group::Timeouts => "Timeouts",
            Group::Checks => "Checks and accuracy",
            Group::Outputs => "Outputs",
            Group::Generator => "The load generator",
            Group::Mlperf => "MLPerf",
            Group::Shards => "Shards",
        }
    }
}

/// One declared setting, as help and the reference show it.
#[derive(Debug)]
pub(crate) struct Setting {
    /// The profile field; `None` for a flag that is not one (`--profile`).
    /// Read by the settings reference and the coverage tests.
    #[cfg_attr(not(test), allow(dead_code))]
    pub field: Option<&'static str>,
    /// The flag, as argh names it (`connect_timeout` for
    /// `--connect-timeout`); `None` for a profile-only field (`stages`).
    pub flag: Option<&'static str>,
    /// `true` for a switch (no value), else an option.
    pub switch: bool,
    pub group: Group,
    /// The help text, `{NAME}` placeholders unfilled.
    pub help: &'static str,
    /// Its default; `None` where the default is absent or derived (the
    /// help then says so in words).
    pub default: Option<DefaultShown>,
    /// A flag without a field of its own is shown after this flag.
    pub after: Option<&'static str>,
}

/// A setting's typed default, for help and the reference.
#[derive(Debug)]
pub(crate) struct DefaultShown {
    /// The constant's name in `profile::defaults` (`{NAME}` in help).
    pub name: &'static str,
    /// The constant as help shows it.
    pub shown: fn() -> String,
}

impl DefaultShown {
    pub(crate) fn text(&self) -> String {
        (self.shown)()
    }
}

impl Setting {
    /// `--connect-timeout`; empty for a profile-only field.
    pub(crate) fn flag_name(&self) -> String {
        self.flag
            .map_or(String::new(), |f| format!("--{}", f.replace('_', "-")))
    }

    /// The help text on one line, placeholders unfilled.
    pub(crate) fn help_line(&self) -> String {
        self.help.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// The declarations in the order help and the reference show them: by
/// topic, each topic in declaration order, a flag without a field of its
/// own right after the flag it names.
pub(crate) fn by_topic() -> Vec<&'static Setting> {
    let mut out: Vec<&Setting> = Vec::new();
    for g in Group::ALL {
        for s in SETTINGS
            .iter()
            .filter(|s| s.group == g && s.after.is_none())
        {
            out.push(s);
        }
    }
    for s in SETTINGS.iter().filter(|s| s.after.is_some()) {
        let at = out
            .iter()
            .position(|o| o.flag == s.after)
            .map_or(out.len(), |i| i + 1);
        out.insert(at, s);
    }
    out
}

// ---- flags into profile fields ----

/// A flag's value as its profile field's: an option given or not, a switch
/// given (`Some(true)`) or not (`None`), a repeatable flag given at least
/// once, a duration or a size in the field's written form.
pub(crate) trait FlagValue<T> {
    fn profile_value(&self) -> Option<T>;
}

impl<T: Clone> FlagValue<T> for Option<T> {
    fn profile_value(&self) -> Option<T> {
        self.clone()
    }
}

impl FlagValue<HumanDuration> for Option<Duration> {
    fn profile_value(&self) -> Option<HumanDuration> {
        self.map(HumanDuration)
    }
}

impl FlagValue<HumanBytes> for Option<u64> {
    fn profile_value(&self) -> Option<HumanBytes> {
        self.map(HumanBytes)
    }
}

impl FlagValue<bool> for bool {
    fn profile_value(&self) -> Option<bool> {
        self.then_some(true)
    }
}

impl<T: Clone> FlagValue<Vec<T>> for Vec<T> {
    fn profile_value(&self) -> Option<Vec<T>> {
        (!self.is_empty()).then(|| self.clone())
    }
}

/// `--stream` and `--no-stream`, one setting.
fn stream_pair(f: &BenchFlags) -> Result<Option<bool>, String> {
    match (f.stream, f.no_stream) {
        (true, true) => Err("--stream and --no-stream contradict each other".into()),
        (true, _) => Ok(Some(true)),
        (_, true) => Ok(Some(false)),
        _ => Ok(None),
    }
}

/// `--endpoints a,b`: the list.
fn endpoint_list(f: &BenchFlags) -> Result<Option<Vec<String>>, String> {
    Ok(f.endpoints
        .as_deref()
        .map(|v| v.split(',').map(|u| u.trim().to_string()).collect()))
}

/// MLPerf's `--dataset acc:PATH` names an accuracy dataset, not the
/// performance phase's.
fn perf_dataset(f: &BenchFlags) -> Result<Option<String>, String> {
    Ok(f.dataset.clone().filter(|d| !d.starts_with("acc:")))
}

/// `--accuracy-dataset` (repeatable), after a `--dataset acc:PATH`.
fn accuracy_list(f: &BenchFlags) -> Result<Option<Vec<String>>, String> {
    let mut all: Vec<String> = f
        .dataset
        .iter()
        .filter(|d| d.starts_with("acc:"))
        .cloned()
        .collect();
    all.extend(f.accuracy_dataset.iter().cloned());
    Ok((!all.is_empty()).then_some(all))
}

/// `--header 'Name: value'` (repeatable) into the name → value map.
fn header_map(f: &BenchFlags) -> Result<Option<BTreeMap<String, String>>, String> {
    let mut headers = BTreeMap::new();
    for h in &f.header {
        let (k, v) = parse_header_flag(h)?;
        headers.insert(k, v);
    }
    Ok((!headers.is_empty()).then_some(headers))
}

/// `--extra-body '{…}'`: a JSON object.
fn json_object(f: &BenchFlags) -> Result<Option<Map<String, Value>>, String> {
    match &f.extra_body {
        None => Ok(None),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(_) => Err(format!("--extra-body '{text}': expected a JSON object")),
            Err(e) => Err(format!("--extra-body '{text}': not valid JSON: {e}")),
        },
    }
}

/// `--correlation-header` sets `correlation.header`.
fn correlation_flag(f: &BenchFlags) -> Result<Option<Correlation>, String> {
    Ok(f.correlation_header.as_ref().map(|h| Correlation {
        header: Some(h.clone()),
        uuid_in_prompt: None,
    }))
}

/// The correlation object at its defaults (for `init --full` and the
/// summary), from the flag's default header.
impl AsField<Correlation> for &'static str {
    fn as_field(&self) -> Correlation {
        Correlation {
            header: Some(self.to_string()),
            uuid_in_prompt: Some(defaults::UUID_IN_PROMPT),
        }
    }
}

// ---- flags over a profile ----

/// A field the flags set replaces the profile's.
fn replace<T: Clone>(field: &mut Option<T>, flag: &Option<T>) {
    if flag.is_some() {
        field.clone_from(flag);
    }
}

/// Headers merge by name, compared case-insensitively, the flag's value
/// winning: a repeatable `--header` adds to a profile's headers rather than
/// erasing its credentials.
fn merge_headers(
    field: &mut Option<BTreeMap<String, String>>,
    flag: &Option<BTreeMap<String, String>>,
) {
    if let Some(fh) = flag {
        let h = field.get_or_insert_with(BTreeMap::new);
        for (k, v) in fh {
            h.retain(|old, _| !old.eq_ignore_ascii_case(k));
            h.insert(k.clone(), v.clone());
        }
    }
}

/// Body fields merge by name, the flag's value winning.
fn merge_object(field: &mut Option<Map<String, Value>>, flag: &Option<Map<String, Value>>) {
    if let Some(fe) = flag {
        let e = field.get_or_insert_with(Map::new);
        for (k, v) in fe {
            e.insert(k.clone(), v.clone());
        }
    }
}

// ---- the summary's `config` ----

/// What the summary's `config` block knows beyond the configuration: where
/// the run wrote, the endpoint (built-in or given) and the model found.
pub(crate) struct ConfigContext<'a> {
    pub out: &'a Path,
    pub endpoint_url: &'a str,
    pub model: &'a str,
}

/// A setting's entry in `config` from the resolved run: given the profile's
/// value (its default when unset and it has one), the value shown, or
/// `None` to leave the key out.
pub(crate) type ConfigEntry = fn(&BenchConfig, &ConfigContext, Option<Value>) -> Option<Value>;

/// The value as given, `null` when unset: the setting has no default, or
/// one that depends on others and is shown by them.
fn given(_: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(v.unwrap_or(Value::Null))
}

/// As given, else none: an empty object.
fn given_map(_: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(v.unwrap_or_else(|| Value::Object(Map::new())))
}

/// As given, else none: an empty list.
fn given_list(_: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(v.unwrap_or_else(|| Value::Array(Vec::new())))
}

/// Every endpoint, comma-separated, URL query values redacted.
/// Puts `key`'s entry into `given`: its rule's value, or as given, else
/// its default, else `null`.
fn entry(
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

fn shown_endpoint(_: &BenchConfig, c: &ConfigContext, _: Option<Value>) -> Option<Value> {
    let shown: Vec<String> = split_endpoints(c.endpoint_url)
        .into_iter()
        .map(redact_url)
        .collect();
    Some(shown.join(",").into())
}

/// `endpoint` lists them; the list would say the same again.
fn left_out(_: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    None
}

fn shown_api(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.protocol.name().into())
}

fn shown_model(_: &BenchConfig, c: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(c.model.into())
}

/// The first stage's load (a resolved run has at least one stage).
fn shown_mode(cfg: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(match cfg.stages.first().map(|s| s.load) {
        Some(Load::Offline) => "offline".into(),
        Some(Load::Closed { .. }) => "concurrency".into(),
        Some(Load::Open { kind, .. }) => kind.name().into(),
        None => v.unwrap_or(Value::Null),
    })
}

/// A single stage's concurrency, however it was set.
fn shown_concurrency(cfg: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(
        match (&cfg.profile.stages, cfg.stages.first().map(|s| s.load)) {
            (None, Some(Load::Closed { concurrency })) => concurrency.into(),
            _ => v.unwrap_or(Value::Null),
        },
    )
}

/// The open-loop stages' arrival law, however it was set.
fn shown_arrival(cfg: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    let open = cfg.stages.iter().find_map(|s| match s.load {
        Load::Open { kind, .. } => Some(kind),
        _ => None,
    });
    Some(open.map_or(v.unwrap_or(Value::Null), |k| k.name().into()))
}

/// The MLPerf rule's minimum when it sized the run, else as given.
fn shown_min_duration(cfg: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    use super::run_length::RunLength;
    match &cfg.run_length {
        Some(RunLength::Mlperf {
            min_duration_ms,
            exact: None,
            ..
        }) if cfg.mlperf => {
            Some(super::duration::format_duration(Duration::from_millis(*min_duration_ms)).into())
        }
        _ => Some(v.unwrap_or(Value::Null)),
    }
}

fn shown_max_tokens(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.max_tokens.into())
}

fn shown_stream(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.stream.into())
}

fn shown_order(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.order.to_string().into())
}

fn shown_cache_mode(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.cache_mode.name().into())
}

/// The key itself never: `<redacted>` when there is one (given, from its
/// file or from the environment).
fn shown_api_key(cfg: &BenchConfig, _: &ConfigContext, v: Option<Value>) -> Option<Value> {
    Some(if v.is_some() || cfg.api_key.is_some() {
        REDACTED.into()
    } else {
        Value::Null
    })
}

/// Outside the preset `seed` seeds everything (0 when unset); under it
/// `seed` is the sampling seed only, shown when given.
fn shown_seed(cfg: &BenchConfig, c: &ConfigContext, v: Option<Value>) -> Option<Value> {
    if cfg.mlperf {
        given(cfg, c, v)
    } else {
        Some(cfg.sampling.seed.unwrap_or(defaults::SEED).into())
    }
}

fn shown_scheduler_seed(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.scheduler_seed.into())
}

fn shown_dataloader_seed(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.dataloader_seed.into())
}

fn shown_early_stopping(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.early_stopping.into())
}

fn shown_warmup_requests(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.warmup_requests.into())
}

fn shown_workers(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.workers.into())
}

fn shown_connections(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.connections.into())
}

fn shown_out(_: &BenchConfig, c: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(c.out.display().to_string().into())
}

fn shown_phase(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.phase.name().into())
}

/// As asked, `$LLMLOAD_IO` included (the backend chosen is the summary's
/// `generator.io`).
fn shown_io(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.io.name().into())
}

fn shown_events(cfg: &BenchConfig, _: &ConfigContext, _: Option<Value>) -> Option<Value> {
    Some(cfg.events.name().into())
}

/// Each address, a range written out.
fn shown_source_addrs(cfg: &BenchConfig, c: &ConfigContext, v: Option<Value>) -> Option<Value> {
    if cfg.source_addrs.is_empty() {
        return given(cfg, c, v);
    }
    let addrs: Vec<String> = cfg.source_addrs.iter().map(|a| a.to_string()).collect();
    Some(addrs.into())
}

/// The instant, however it was written.
fn shown_start_at(cfg: &BenchConfig, c: &ConfigContext, v: Option<Value>) -> Option<Value> {
    match cfg.start_at_ns {
        Some(ns) => Some(crate::clock::format_rfc3339(ns).into()),
        None => given(cfg, c, v),
    }
}

// ---- `init --full` ----

thread_local! {
    /// Set while a profile is written with its unset fields as `null`.
    static SHOW_UNSET: Cell<bool> = const { Cell::new(false) };
}

/// The top-level fields' `skip_serializing_if`: an unset field is left out,
/// unless the full template is being written.
pub(crate) fn unset<T>(v: &Option<T>) -> bool {
    v.is_none() && !SHOW_UNSET.get()
}

/// `write()` with unset top-level fields written as `null` (serde gives a
/// skip predicate no other way to see how it was called).
pub(crate) fn showing_unset<R>(show: bool, write: impl FnOnce() -> R) -> R {
    SHOW_UNSET.set(show);
    let r = write();
    SHOW_UNSET.set(false);
    r
}

#[cfg(test)]
mod tests;
