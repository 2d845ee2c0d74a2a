//! Flags into profile fields and over a profile: the kinds of flag argh
//! parses (`FlagValue`), the special cases a declaration names (`via`:
//! a flag pair, a comma list, a repeatable flag into a map, a flag into a
//! nested field) and the merges (`overlay`).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::{AsField, BenchFlags};
use crate::config::profile::{Correlation, HumanBytes, HumanDuration, defaults};
use crate::http::headers::parse_header_flag;

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

/// A switch `--NAME` and its `--no-NAME`, one setting.
fn switch_pair(on: bool, off: bool, name: &str) -> Result<Option<bool>, String> {
    match (on, off) {
        (true, true) => Err(format!("--{name} and --no-{name} contradict each other")),
        (true, _) => Ok(Some(true)),
        (_, true) => Ok(Some(false)),
        _ => Ok(None),
    }
}

/// `--stream` and `--no-stream`, one setting.
pub(super) fn stream_pair(f: &BenchFlags) -> Result<Option<bool>, String> {
    switch_pair(f.stream, f.no_stream, "stream")
}

/// `--fail-fast` and `--no-fail-fast`, one setting.
pub(super) fn fail_fast_pair(f: &BenchFlags) -> Result<Option<bool>, String> {
    switch_pair(f.fail_fast, f.no_fail_fast, "fail-fast")
}

/// `--endpoints a,b`: the list.
pub(super) fn endpoint_list(f: &BenchFlags) -> Result<Option<Vec<String>>, String> {
    Ok(f.endpoints
        .as_deref()
        .map(|v| v.split(',').map(|u| u.trim().to_string()).collect()))
}

/// MLPerf's `--dataset acc:PATH` names an accuracy dataset, not the
/// performance phase's.
pub(super) fn perf_dataset(f: &BenchFlags) -> Result<Option<String>, String> {
    Ok(f.dataset.clone().filter(|d| !d.starts_with("acc:")))
}

/// `--accuracy-dataset` (repeatable), after a `--dataset acc:PATH`.
pub(super) fn accuracy_list(f: &BenchFlags) -> Result<Option<Vec<String>>, String> {
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
pub(super) fn header_map(f: &BenchFlags) -> Result<Option<BTreeMap<String, String>>, String> {
    let mut headers = BTreeMap::new();
    for h in &f.header {
        let (k, v) = parse_header_flag(h)?;
        headers.insert(k, v);
    }
    Ok((!headers.is_empty()).then_some(headers))
}

/// `--extra-body '{…}'`: a JSON object.
pub(super) fn json_object(f: &BenchFlags) -> Result<Option<Map<String, Value>>, String> {
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
pub(super) fn correlation_flag(f: &BenchFlags) -> Result<Option<Correlation>, String> {
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

/// A field the flags set replaces the profile's.
pub(super) fn replace<T: Clone>(field: &mut Option<T>, flag: &Option<T>) {
    if flag.is_some() {
        field.clone_from(flag);
    }
}

/// Headers merge by name, compared case-insensitively, the flag's value
/// winning: a repeatable `--header` adds to a profile's headers rather than
/// erasing its credentials.
pub(super) fn merge_headers(
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
pub(super) fn merge_object(
    field: &mut Option<Map<String, Value>>,
    flag: &Option<Map<String, Value>>,
) {
    if let Some(fe) = flag {
        let e = field.get_or_insert_with(Map::new);
        for (k, v) in fe {
            e.insert(k.clone(), v.clone());
        }
    }
}
