//! Declarative run profiles (`llmload bench --profile run.json`): one JSON
//! file holding every `bench` flag under its snake_case name, plus what flags
//! cannot say well — stages, weighted scenarios, multi-turn content, response
//! checks and SLO thresholds.
//!
//! Loading is three steps, each with its own kind of error, all naming the
//! file and the JSON path: `${NAME}` expansion over the raw JSON (so secrets
//! stay in the environment), typed deserialization through
//! `serde_path_to_error` (unknown fields, wrong types, missing required
//! fields), then [`Profile::validate`] for values that parse but cannot run.
//! The main trade-off: the serde shapes stay loose (every field optional,
//! stage and content kinds as flat records) so that a profile with several
//! mistakes reports all of them with their paths, instead of serde stopping
//! at the first one with "data did not match any variant". The typed view —
//! [`Stage`], [`Scenario`], [`Content`], [`TurnRange`] — is produced by
//! [`Profile::stages`] and [`Profile::scenarios`], the same functions
//! `validate` runs, so a profile that validates always converts.

use std::collections::{BTreeMap, HashSet};
use std::env::VarError;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::duration::{format_duration, parse_duration};
use crate::http::endpoint::Endpoint;

/// The values a profile field takes when it is not set. `bench` has the same
/// defaults for its flags; a default that depends on another setting or on
/// the machine (workers, connections in closed loop, ttft_timeout) is
/// described at its field instead.
pub mod defaults {
    use std::time::Duration;

    pub const API: &str = "openai-chat";
    pub const CONCURRENCY: usize = 64;
    pub const DURATION: Duration = Duration::from_secs(10);
    /// Offline mode's request count when neither duration nor requests is set.
    pub const OFFLINE_REQUESTS: u64 = 1000;
    pub const WARMUP: Duration = Duration::ZERO;
    pub const MAX_TOKENS: u32 = 128;
    pub const STREAM: bool = true;
    pub const ORDER: &str = "sequential";
    pub const SEED: u64 = 0;
    /// The in-flight bound of offline and open-loop runs.
    pub const CONNECTIONS: usize = 1024;
    pub const TIMEOUT: Duration = Duration::from_secs(300);
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
    pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
    pub const LIVE_INTERVAL: Duration = Duration::from_secs(10);
    pub const ARRIVAL: &str = "poisson";
    pub const CACHE_MODE: &str = "bust";
    pub const CORRELATION_HEADER: &str = "x-request-id";
    pub const UUID_IN_PROMPT: bool = true;
    pub const WEIGHT: f64 = 1.0;
    pub const TURNS: u32 = 1;
    /// The one stage of a run without `stages`.
    pub const STAGE_NAME: &str = "main";
}

/// The `mode` values, as `bench --mode` takes them.
pub const MODES: &[&str] = &["offline", "poisson", "uniform", "concurrency"];

/// A run profile, as written in the file. `None` everywhere means "not set":
/// the default applies, and [`Profile::overlay`] can tell a flag that was
/// given from one that was not.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// `http://host[:port][/path]`; unset: the built-in endpoint.
    pub endpoint: Option<String>,
    pub api: Option<String>,
    /// Unset: the first model listed at `/v1/models`.
    pub model: Option<String>,

    // Load shape of a single-stage run; `stages` replaces all five.
    pub mode: Option<String>,
    #[serde(serialize_with = "ser_num")]
    pub rate: Option<f64>,
    pub concurrency: Option<usize>,
    pub duration: Option<HumanDuration>,
    pub requests: Option<u64>,

    pub warmup: Option<HumanDuration>,
    /// Open-loop inter-arrival law: `uniform` or `poisson`.
    pub arrival: Option<String>,
    /// Unset: `concurrency` in closed loop, 1024 otherwise.
    pub connections: Option<usize>,
    /// Open-loop in-flight bound; unset: `connections`.
    pub openloop_max_inflight: Option<u64>,

    pub max_tokens: Option<u32>,
    pub stream: Option<bool>,
    pub system: Option<String>,
    /// `PATH[,key=value...]`, as `--dataset`.
    pub dataset: Option<String>,
    /// `isl=N,osl=M[,...]`, as `--synthetic`.
    pub synthetic: Option<String>,
    pub order: Option<String>,
    pub tokenizer: Option<PathBuf>,

    // Sampling: sent only when set.
    #[serde(serialize_with = "ser_num")]
    pub temperature: Option<f64>,
    #[serde(serialize_with = "ser_num")]
    pub top_p: Option<f64>,
    pub stop: Option<Vec<String>>,
    pub ignore_eos: Option<bool>,
    pub min_tokens: Option<u32>,
    pub extra_body: Option<Map<String, Value>>,

    /// Extra request headers, name → value.
    pub headers: Option<BTreeMap<String, String>>,
    /// Sent as a Bearer token; unset: `$OPENAI_API_KEY`. Write
    /// `"${OPENAI_API_KEY}"` rather than the key itself.
    pub api_key: Option<String>,

    /// `bust` (a per-conversation UUID defeats prompt caches) or `natural`.
    pub cache_mode: Option<String>,
    pub correlation: Option<Correlation>,

    pub timeout: Option<HumanDuration>,
    /// No first token by then fails the request as `ttft_timeout`; unset:
    /// only `timeout` applies.
    pub ttft_timeout: Option<HumanDuration>,
    pub connect_timeout: Option<HumanDuration>,
    pub drain_timeout: Option<HumanDuration>,

    pub seed: Option<u64>,
    /// Unset: CPUs − 1, at least 1.
    pub workers: Option<usize>,
    pub pin: Option<bool>,
    /// Unset: `results/<UTC timestamp>`.
    pub out: Option<PathBuf>,
    pub quiet: Option<bool>,
    /// Progress line period; `"0"` disables it.
    pub live_interval: Option<HumanDuration>,
    /// Keep each response's text in the events file.
    pub record_output: Option<bool>,

    pub stages: Option<Vec<StageSpec>>,
    pub scenarios: Option<Vec<ScenarioSpec>>,
    pub thresholds: Option<Thresholds>,
}

/// A duration written as `"60s"`, `"250ms"`, `"1.5m"` or a number of
/// seconds; written back in the shortest exact unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

/// One stage as written: exactly one of `concurrency`, `rate` or
/// `rate_from` + `rate_to`; [`Profile::stages`] turns it into a [`Stage`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub rate_from: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub rate_to: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<HumanDuration>,
    /// A request cap: the stage ends at `duration` or after this many
    /// requests, whichever comes first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
}

/// One weighted scenario as written. Unset overrides inherit the top level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    /// Share of the load (closed loop: of the in-flight slots), relative to
    /// the other scenarios' weights; default 1.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub weight: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Turns>,
    /// Pause between a reply and the conversation's next turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub think_time: Option<HumanDuration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<Checks>,
}

/// Turns per conversation: a fixed number, or `{"min": a, "max": b}` drawn
/// uniformly per conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turns {
    Fixed(u32),
    Range { min: u32, max: u32 },
}

/// What a scenario sends, as written: `mode` picks which other field is
/// read; [`Content`] is the typed form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentSpec {
    /// `pool`, `scripted`, `sized` or `dataset`.
    pub mode: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approx_input_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Group the dataset's rows into multi-turn conversations by this column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
}

/// Assertions on each successful response; a response that fails one is
/// counted as `check_failed`, not as a success.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checks {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_contains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// The expected HTTP status (default: any 2xx).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// SLO thresholds checked per stage. A latency or `min_rps` of 0 means "not
/// set" (as in the gateway tester's profiles); `error_rate` 0 means no
/// failure is tolerated, and an absent field is not checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub ttft_p95_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub p95_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub p99_ms: Option<f64>,
    /// Failed / issued, 0..=1.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub error_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_num")]
    pub min_rps: Option<f64>,
    /// Stop after the first stage that breaks a threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort_on_fail: Option<bool>,
}

/// How a conversation's UUID is attached to its requests, the join key to
/// server-side records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Correlation {
    /// Header carrying the UUID; `""` sends none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// Put the UUID at the front of the first user message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid_in_prompt: Option<bool>,
}

// ---------------------------------------------------------------------------
// The typed view.

/// One stage of a validated profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// The stage's `name`, else `stage-N` (1-based), or `main` for the single
    /// stage of a profile without `stages`.
    pub name: String,
    pub load: StageLoad,
    /// Measured length; `None` only when `requests` bounds the stage.
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
}

/// A stage's load shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StageLoad {
    /// Every request due at the start (only from `mode: offline`).
    Offline,
    /// Closed loop: this many requests in flight.
    Closed { concurrency: usize },
    /// Open loop at a constant rate (requests/s).
    Open { rate: f64 },
    /// Open loop whose rate sweeps linearly from `from` to `to`.
    Ramp { from: f64, to: f64 },
}

/// Open-loop inter-arrival law.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    Uniform,
    Poisson,
}

/// Prompt-cache handling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    /// A per-conversation UUID at the front of the first user message.
    Bust,
    /// Prompts as written.
    Natural,
}

/// One scenario of a validated profile, with its defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub weight: f64,
    pub turns: TurnRange,
    pub think_time: Duration,
    pub cache_mode: CacheMode,
    /// `None`: the top-level dataset, synthetic spec or built-in prompts.
    pub content: Option<Content>,
    pub checks: Checks,
    /// The scenario as written, for its overrides (`api`, `endpoint`,
    /// `headers`, `model`, `max_tokens`, `stream`, `system`): `None` inherits.
    pub spec: ScenarioSpec,
}

/// Turns per conversation, inclusive bounds (`min == max` when fixed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnRange {
    pub min: u32,
    pub max: u32,
}

/// What a scenario sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// A random prompt from the pool per conversation.
    Pool { prompts: Vec<String> },
    /// Turn k sends line k of the script.
    Scripted { script: Vec<String> },
    /// Generated prompts of about this many input tokens.
    Sized { approx_input_tokens: u32 },
    /// A dataset (`PATH[,k=v]`), rows grouped into conversations by the
    /// `conversation` column when given.
    Dataset {
        dataset: String,
        conversation: Option<String>,
    },
}

impl Arrival {
    pub fn parse(s: &str) -> Result<Arrival, String> {
        match s {
            "uniform" => Ok(Arrival::Uniform),
            "poisson" => Ok(Arrival::Poisson),
            _ => Err(format!("'{s}': expected uniform or poisson")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arrival::Uniform => "uniform",
            Arrival::Poisson => "poisson",
        }
    }
}

impl CacheMode {
    pub fn parse(s: &str) -> Result<CacheMode, String> {
        match s {
            "bust" => Ok(CacheMode::Bust),
            "natural" => Ok(CacheMode::Natural),
            _ => Err(format!("'{s}': expected bust or natural")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Bust => "bust",
            CacheMode::Natural => "natural",
        }
    }
}

impl Turns {
    pub fn range(self) -> TurnRange {
        match self {
            Turns::Fixed(n) => TurnRange { min: n, max: n },
            Turns::Range { min, max } => TurnRange { min, max },
        }
    }
}

// ---------------------------------------------------------------------------
// Loading.

/// Environment lookup, injectable so tests need not touch the process
/// environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Result<String, VarError>;

impl Profile {
    /// Reads, expands and deserializes the profile at `path`. Every error
    /// starts with the path as given and names the JSON path inside the
    /// file; expansion errors are all reported, one per line.
    pub fn load(path: &Path) -> Result<Profile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Profile::parse(&text, &path.display().to_string(), &|k| std::env::var(k))
    }

    /// [`Profile::load`] on text already read; `origin` prefixes every error.
    pub fn parse(text: &str, origin: &str, env: EnvLookup<'_>) -> Result<Profile, String> {
        let mut value: Value = serde_json::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let msg = msg.strip_suffix(&suffix).unwrap_or(&msg);
            format!(
                "{origin}:{}:{}: not valid JSON: {msg}",
                e.line(),
                e.column()
            )
        })?;
        let mut errors = Vec::new();
        expand_value(&mut value, &mut String::new(), env, &mut errors);
        if !errors.is_empty() {
            return Err(errors
                .iter()
                .map(|e| format!("{origin}: {e}"))
                .collect::<Vec<_>>()
                .join("\n"));
        }
        if let Some(path) = array_for_object(&value) {
            return Err(if path.is_empty() {
                format!("{origin}: invalid type: array, expected an object")
            } else {
                format!("{origin}: {path}: invalid type: array, expected an object")
            });
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let msg = humanize(&e.inner().to_string());
            if path == "." {
                format!("{origin}: {msg}")
            } else {
                format!("{origin}: {path}: {msg}")
            }
        })
    }
}

/// Expands `${NAME}` in every string value (object keys are left alone: a
/// header name is not a secret). `$$` is a literal `$`; a `$` followed by
/// anything else is kept as is, so prompts about prices need no escaping.
fn expand_value(v: &mut Value, path: &mut String, env: EnvLookup<'_>, errors: &mut Vec<String>) {
    match v {
        Value::String(s) if s.contains('$') => match expand_str(s, env) {
            Ok(e) => *s = e,
            Err(msg) => errors.push(format!("{}: {msg}", shown(path))),
        },
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                expand_value(item, path, env, errors);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                expand_value(item, path, env, errors);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Where the profile has an array in place of one of its objects. Derived
/// serde structs accept an array as their fields in order, which would load
/// `"thresholds": [100, 200]` as two thresholds without a word.
fn array_for_object(root: &Value) -> Option<String> {
    let is_array = |v: Option<&Value>| v.is_some_and(Value::is_array);
    if root.is_array() {
        return Some(String::new());
    }
    for key in ["correlation", "thresholds"] {
        if is_array(root.get(key)) {
            return Some(key.to_string());
        }
    }
    let items = |key| {
        root.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    };
    for (i, stage) in items("stages").enumerate() {
        if stage.is_array() {
            return Some(format!("stages[{i}]"));
        }
    }
    for (i, sc) in items("scenarios").enumerate() {
        if sc.is_array() {
            return Some(format!("scenarios[{i}]"));
        }
        for key in ["content", "checks"] {
            if is_array(sc.get(key)) {
                return Some(format!("scenarios[{i}].{key}"));
            }
        }
    }
    None
}

fn shown(path: &str) -> &str {
    if path.is_empty() { "(top level)" } else { path }
}

fn expand_str(s: &str, env: EnvLookup<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
        } else if let Some(r) = after.strip_prefix('{') {
            let end = r
                .find('}')
                .ok_or("unterminated '${' (write $$ for a literal dollar sign)")?;
            let name = &r[..end];
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!(
                    "'${{{name}}}' is not a variable name (letters, digits, _; write $$ for a literal dollar sign)"
                ));
            }
            match env(name) {
                Ok(value) => out.push_str(&value),
                Err(VarError::NotPresent) => {
                    return Err(format!("environment variable {name} is not set"));
                }
                Err(VarError::NotUnicode(_)) => {
                    return Err(format!("environment variable {name} is not valid UTF-8"));
                }
            }
            rest = &r[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Rewrites serde's messages in the profile's vocabulary: JSON type names
/// instead of Rust ones, no backticks, and for unknown fields the choices
/// (or, among the many top-level fields, the nearest one).
fn humanize(msg: &str) -> String {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (field, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        return if known.is_empty() {
            "unknown field; this object has no fields".to_string()
        } else if known.len() <= 12 {
            format!("unknown field, expected one of {}", known.join(", "))
        } else {
            match nearest(field, &known) {
                Some(k) => format!(
                    "unknown field, did you mean {k}? (`llmload init --full` writes every field)"
                ),
                None => "unknown field (`llmload init --full` writes every field)".to_string(),
            }
        };
    }
    let msg = match msg.rsplit_once(", expected ") {
        Some((head, expected)) => {
            let expected = match expected {
                "f64" | "f32" => "a number",
                "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number ≥ 0",
                "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
                "a sequence" => "an array",
                "a map" => "an object",
                e if e.starts_with("struct ") => "an object",
                e => e,
            };
            format!("{head}, expected {expected}")
        }
        None => msg.to_string(),
    };
    msg.replace('`', "")
}

/// The known name closest to `typo` in edit distance, when close enough to
/// be a plausible typo.
fn nearest<'a>(typo: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(typo, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

// ---------------------------------------------------------------------------
// Serde for the two value types with more than one JSON shape.

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"60s\" or \"250ms\", or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HumanDuration, E> {
                parse_duration(s).map(HumanDuration).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<HumanDuration, E> {
                Ok(HumanDuration(Duration::from_secs(n)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<HumanDuration, E> {
                u64::try_from(n)
                    .map(|n| HumanDuration(Duration::from_secs(n)))
                    .map_err(|_| E::custom(format!("{n}: a duration cannot be negative")))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<HumanDuration, E> {
                Duration::try_from_secs_f64(x)
                    .map(HumanDuration)
                    .map_err(|_| E::custom(format!("{x}: expected a number of seconds ≥ 0")))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnBounds {
    min: u32,
    max: u32,
}

impl<'de> Deserialize<'de> for Turns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Turns;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of turns or {\"min\": a, \"max\": b}")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Turns, E> {
                u32::try_from(n)
                    .map(Turns::Fixed)
                    .map_err(|_| E::custom(format!("{n} turns: too many")))
            }
            // Delegating to a derived struct keeps serde_path_to_error's
            // key tracking, so `turns.mni` is named as such.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Turns, A::Error> {
                let b = TurnBounds::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Turns::Range {
                    min: b.min,
                    max: b.max,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Turns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match *self {
            Turns::Fixed(n) => s.serialize_u32(n),
            Turns::Range { min, max } => {
                let mut st = s.serialize_struct("Turns", 2)?;
                st.serialize_field("min", &min)?;
                st.serialize_field("max", &max)?;
                st.end()
            }
        }
    }
}

/// Writes whole numbers without a trailing `.0`, so a written profile reads
/// like a hand-written one (`"rate": 50`).
fn ser_num<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match *v {
        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => s.serialize_some(&(x as i64)),
        Some(x) => s.serialize_some(&x),
        None => s.serialize_none(),
    }
}

// ---------------------------------------------------------------------------
// Validation and the typed view.

/// Errors collected while checking, each `path: message`.
#[derive(Default)]
struct Errors(Vec<String>);

impl Errors {
    fn at(&mut self, path: impl fmt::Display, msg: impl fmt::Display) {
        self.0.push(format!("{path}: {msg}"));
    }

    fn result<T>(self, value: T) -> Result<T, Vec<String>> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self.0)
        }
    }
}

/// Removes a leading `--flag ` from messages written for the command line.
fn unflag(msg: String, flag: &str) -> String {
    match msg.strip_prefix(flag).and_then(|m| m.strip_prefix(' ')) {
        Some(m) => m.to_string(),
        None => msg,
    }
}

fn check_positive(errs: &mut Errors, path: &str, v: Option<f64>, what: &str) {
    if let Some(x) = v
        && !(x.is_finite() && x > 0.0)
    {
        errs.at(path, format!("{x}: {what} must be a number > 0"));
    }
}

fn check_headers(errs: &mut Errors, path: &str, headers: Option<&BTreeMap<String, String>>) {
    for (k, v) in headers.into_iter().flatten() {
        if !valid_header_name(k) {
            errs.at(
                format!("{path}.{k}"),
                "not a valid header name (visible ASCII, no ':')",
            );
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n') {
            errs.at(format!("{path}.{k}"), "the value contains a line break");
        }
    }
}

fn valid_header_name(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_graphic() && b != b':')
}

/// Checks an endpoint URL against an API's default path (resolving its host).
fn check_endpoint(errs: &mut Errors, path: &str, url: &str, api: &str) {
    let default_path = crate::protocol::find(api)
        .map(|p| p.default_path())
        .unwrap_or("/");
    // A host that does not resolve is not a profile error: the run goes
    // on and counts each request to it as `dns_error`.
    if let Err(e) = Endpoint::parse_lenient(url, default_path) {
        errs.at(path, unflag(e, "--endpoint"));
    }
}

fn check_api(errs: &mut Errors, path: &str, api: &str) {
    let names = crate::protocol::names();
    if !names.contains(&api) {
        errs.at(
            path,
            format!("unknown API '{api}'; expected one of {}", names.join(", ")),
        );
    }
}

fn check_dataset(errs: &mut Errors, path: &str, spec: &str) {
    if let Err(e) = crate::dataset::DatasetSpec::parse(spec) {
        errs.at(path, unflag(e, "--dataset"));
    }
}

impl Profile {
    /// Every impossible value in the profile, each as `json.path: message`.
    /// Empty means the profile can run (the endpoint's host resolved; the
    /// endpoint itself was not contacted).
    pub fn validate(&self) -> Vec<String> {
        let mut errs = Errors::default();
        let api = self.api.as_deref().unwrap_or(defaults::API);
        if let Some(a) = &self.api {
            check_api(&mut errs, "api", a);
        }
        if let Some(url) = &self.endpoint {
            check_endpoint(&mut errs, "endpoint", url, api);
        }
        if self.model.as_deref() == Some("") {
            errs.at("model", "empty model name (leave it out to ask /v1/models)");
        }
        if let Err(e) = self.arrival() {
            errs.at("arrival", e);
        }
        if let Some(c) = &self.cache_mode
            && let Err(e) = CacheMode::parse(c)
        {
            errs.at("cache_mode", e);
        }
        if let Some(o) = &self.order
            && let Err(e) = crate::dataset::Order::parse(o)
        {
            errs.at("order", unflag(e, "--order"));
        }
        if self.connections == Some(0) {
            errs.at("connections", "must be at least 1");
        }
        if self.openloop_max_inflight == Some(0) {
            errs.at("openloop_max_inflight", "must be at least 1");
        }
        if let Some(w) = self.workers
            && !(1..=64).contains(&w)
        {
            errs.at("workers", format!("{w}: expected 1 to 64"));
        }
        if self.max_tokens == Some(0) {
            errs.at("max_tokens", "must be at least 1");
        }
        if let (Some(min), Some(max)) = (self.min_tokens, self.max_tokens)
            && min > max
        {
            errs.at(
                "min_tokens",
                format!("{min} is above max_tokens {max}: no response can satisfy both"),
            );
        }
        if self.dataset.is_some() && self.synthetic.is_some() {
            errs.at(
                "synthetic",
                "dataset and synthetic are alternatives; give one",
            );
        }
        if let Some(d) = &self.dataset {
            check_dataset(&mut errs, "dataset", d);
        }
        if let Some(s) = &self.synthetic
            && let Err(e) = crate::dataset::SyntheticSpec::parse(s)
        {
            errs.at("synthetic", unflag(e, "--synthetic"));
        }
        if self.tokenizer.as_deref() == Some(Path::new("")) {
            errs.at("tokenizer", "empty path");
        }
        if let Some(t) = self.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            errs.at("temperature", format!("{t}: expected a number ≥ 0"));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            errs.at("top_p", format!("{p}: expected a number in (0, 1]"));
        }
        for (i, s) in self.stop.iter().flatten().enumerate() {
            if s.is_empty() {
                errs.at(format!("stop[{i}]"), "empty stop sequence");
            }
        }
        check_headers(&mut errs, "headers", self.headers.as_ref());
        if let Some(k) = &self.api_key
            && k.bytes().any(|b| b == b'\r' || b == b'\n')
        {
            errs.at("api_key", "contains a line break");
        }
        if let Some(c) = &self.correlation
            && let Some(h) = &c.header
            && !h.is_empty()
            && !valid_header_name(h)
        {
            errs.at("correlation.header", "not a valid header name");
        }
        for (name, d) in [
            ("timeout", self.timeout),
            ("connect_timeout", self.connect_timeout),
            ("ttft_timeout", self.ttft_timeout),
        ] {
            if d.is_some_and(|d| d.0.is_zero()) {
                errs.at(name, "must be longer than 0");
            }
        }
        let timeout = self.timeout.map_or(defaults::TIMEOUT, |t| t.0);
        if let Some(t) = self.ttft_timeout
            && t.0 > timeout
        {
            errs.at(
                "ttft_timeout",
                format!(
                    "{t} is longer than timeout {}: it could never fire",
                    format_duration(timeout)
                ),
            );
        }
        match self.stages() {
            Ok(stages) => {
                let closed = stages.iter().filter_map(|s| match s.load {
                    StageLoad::Closed { concurrency } => Some(concurrency),
                    _ => None,
                });
                if let (Some(c), Some(n)) = (self.connections, closed.max())
                    && c < n
                {
                    errs.at(
                        "connections",
                        format!(
                            "{c} is below the concurrency {n}: every in-flight request needs a connection"
                        ),
                    );
                }
            }
            Err(e) => errs.0.extend(e),
        }
        if let Err(e) = self.scenarios() {
            errs.0.extend(e);
        }
        if let Some(t) = &self.thresholds {
            for (name, v) in [
                ("ttft_p95_ms", t.ttft_p95_ms),
                ("p95_ms", t.p95_ms),
                ("p99_ms", t.p99_ms),
                ("min_rps", t.min_rps),
            ] {
                if let Some(x) = v
                    && !(x.is_finite() && x >= 0.0)
                {
                    errs.at(
                        format!("thresholds.{name}"),
                        format!("{x}: expected a number ≥ 0 (0: not checked)"),
                    );
                }
            }
            if let Some(x) = t.error_rate
                && !(0.0..=1.0).contains(&x)
            {
                errs.at(
                    "thresholds.error_rate",
                    format!("{x}: expected a fraction from 0 to 1 (0.01 is 1%)"),
                );
            }
        }
        errs.0
    }

    /// The open-loop arrival law: `arrival`, else `uniform` when `mode` is
    /// uniform, else Poisson. A contradiction with `mode` is an error.
    pub fn arrival(&self) -> Result<Arrival, String> {
        let from_mode = match self.mode.as_deref() {
            Some("uniform") => Some(Arrival::Uniform),
            Some("poisson") => Some(Arrival::Poisson),
            _ => None,
        };
        match (&self.arrival, from_mode) {
            (None, m) => Ok(m.unwrap_or(Arrival::Poisson)),
            (Some(a), m) => {
                let a = Arrival::parse(a)?;
                match m {
                    Some(m) if m != a => Err(format!("{} contradicts mode {}", a.name(), m.name())),
                    _ => Ok(a),
                }
            }
        }
    }

    /// The run's stages with defaults applied: `stages` as written, or the
    /// single stage `mode`/`rate`/`concurrency`/`duration`/`requests`
    /// describe (resolved as `bench` resolves its flags).
    pub fn stages(&self) -> Result<Vec<Stage>, Vec<String>> {
        let mut errs = Errors::default();
        if self.duration.is_some_and(|d| d.0.is_zero()) {
            errs.at("duration", "must be longer than 0");
        }
        if self.requests == Some(0) {
            errs.at("requests", "must be at least 1");
        }
        let Some(specs) = &self.stages else {
            let stage = self.single_stage(&mut errs);
            return errs.result(stage.into_iter().collect());
        };
        for (name, set) in [
            ("mode", self.mode.is_some()),
            ("rate", self.rate.is_some()),
            ("concurrency", self.concurrency.is_some()),
            ("duration", self.duration.is_some()),
            ("requests", self.requests.is_some()),
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
            if let Some(stage) = stage_of(s, name, &path, &mut errs) {
                out.push(stage);
            }
        }
        errs.result(out)
    }

    fn single_stage(&self, errs: &mut Errors) -> Option<Stage> {
        let mode = match (&self.mode, self.rate) {
            (Some(m), _) => m.as_str(),
            (None, Some(_)) => "poisson",
            (None, None) => "concurrency",
        };
        let load = match mode {
            "offline" => StageLoad::Offline,
            "poisson" | "uniform" => match self.rate {
                Some(r) if r.is_finite() && r > 0.0 => StageLoad::Open { rate: r },
                Some(r) => {
                    errs.at("rate", format!("{r}: must be a number > 0"));
                    return None;
                }
                None => {
                    errs.at(
                        "rate",
                        format!("mode {mode} needs a rate (requests per second)"),
                    );
                    return None;
                }
            },
            "concurrency" => match self.concurrency.unwrap_or(defaults::CONCURRENCY) {
                0 => {
                    errs.at("concurrency", "must be at least 1");
                    return None;
                }
                n => StageLoad::Closed { concurrency: n },
            },
            other => {
                errs.at(
                    "mode",
                    format!("'{other}': expected one of {}", MODES.join(", ")),
                );
                return None;
            }
        };
        if self.rate.is_some() && !matches!(load, StageLoad::Open { .. }) {
            errs.at(
                "rate",
                format!("applies to modes poisson and uniform, not {mode}"),
            );
        }
        if self.concurrency.is_some() && !matches!(load, StageLoad::Closed { .. }) {
            errs.at(
                "concurrency",
                format!("applies to mode concurrency, not {mode}"),
            );
        }
        let (duration, requests) = match (self.duration, self.requests, load) {
            (None, None, StageLoad::Offline) => (None, Some(defaults::OFFLINE_REQUESTS)),
            (None, None, _) => (Some(defaults::DURATION), None),
            (d, r, _) => (d.map(|d| d.0), r),
        };
        Some(Stage {
            name: defaults::STAGE_NAME.to_string(),
            load,
            duration,
            requests,
        })
    }

    /// The run's scenarios with defaults applied: `scenarios` as written,
    /// or one scenario `default` of weight 1 that sends the top-level content.
    pub fn scenarios(&self) -> Result<Vec<Scenario>, Vec<String>> {
        let mut errs = Errors::default();
        let cache_mode = self
            .cache_mode
            .as_deref()
            .and_then(|c| CacheMode::parse(c).ok())
            .unwrap_or(CacheMode::Bust);
        let Some(specs) = &self.scenarios else {
            return Ok(vec![Scenario {
                name: "default".to_string(),
                weight: defaults::WEIGHT,
                turns: TurnRange {
                    min: defaults::TURNS,
                    max: defaults::TURNS,
                },
                think_time: Duration::ZERO,
                cache_mode,
                content: None,
                checks: Checks::default(),
                spec: ScenarioSpec {
                    name: "default".to_string(),
                    ..ScenarioSpec::default()
                },
            }]);
        };
        if specs.is_empty() {
            errs.at(
                "scenarios",
                "empty: give at least one scenario, or leave scenarios out",
            );
        }
        let top_api = self.api.as_deref().unwrap_or(defaults::API);
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
            let weight = s.weight.unwrap_or(defaults::WEIGHT);
            check_positive(&mut errs, &format!("{path}.weight"), Some(weight), "weight");
            if let Some(a) = &s.api {
                check_api(&mut errs, &format!("{path}.api"), a);
            }
            if let Some(url) = &s.endpoint {
                let api = s.api.as_deref().unwrap_or(top_api);
                check_endpoint(&mut errs, &format!("{path}.endpoint"), url, api);
            }
            check_headers(&mut errs, &format!("{path}.headers"), s.headers.as_ref());
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
            let cache = match &s.cache_mode {
                None => cache_mode,
                Some(c) => CacheMode::parse(c).unwrap_or_else(|e| {
                    errs.at(format!("{path}.cache_mode"), e);
                    cache_mode
                }),
            };
            let content = s
                .content
                .as_ref()
                .and_then(|c| content_of(c, &format!("{path}.content"), &mut errs));
            let checks = s.checks.clone().unwrap_or_default();
            if let (Some(min), Some(max)) =
                (checks.min_completion_tokens, checks.max_completion_tokens)
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
            out.push(Scenario {
                name: s.name.clone(),
                weight,
                turns,
                think_time: s.think_time.map_or(Duration::ZERO, |d| d.0),
                cache_mode: cache,
                content,
                checks,
                spec: s.clone(),
            });
        }
        errs.result(out)
    }
}

/// One written stage to its typed form, or errors at `path`.
fn stage_of(s: &StageSpec, name: String, path: &str, errs: &mut Errors) -> Option<Stage> {
    let before = errs.0.len();
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
    if errs.0.len() > before {
        return None;
    }
    let load = match (s.concurrency, s.rate, s.rate_from, s.rate_to) {
        (Some(n), ..) => StageLoad::Closed { concurrency: n },
        (_, Some(r), ..) => StageLoad::Open { rate: r },
        (_, _, Some(from), Some(to)) => StageLoad::Ramp { from, to },
        _ => return None,
    };
    Some(Stage {
        name,
        load,
        duration: s.duration.map(|d| d.0),
        requests: s.requests,
    })
}

/// One written content block to its typed form, or errors at `path`.
fn content_of(c: &ContentSpec, path: &str, errs: &mut Errors) -> Option<Content> {
    let before = errs.0.len();
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
                Some(d) => check_dataset(errs, &format!("{path}.dataset"), d),
            }
            if c.conversation.as_deref() == Some("") {
                errs.at(format!("{path}.conversation"), "empty column name");
            }
        }
    }
    if errs.0.len() > before {
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
            dataset: c.dataset.clone().unwrap_or_default(),
            conversation: c.conversation.clone(),
        },
    })
}

// ---------------------------------------------------------------------------
// Overlay and the written templates.

impl Profile {
    /// Applies `flags` (the command line, as a profile) over `self`: every
    /// field set in `flags` replaces the profile's, with two exceptions.
    /// The load shape (`mode`, `rate`, `concurrency`, `stages`) is one
    /// setting: a flag setting any of them clears all four from the profile
    /// first, so `--rate 100` over a staged profile runs one stage at 100/s
    /// instead of an ambiguous mix. `headers` and `extra_body` merge by name
    /// (the flag's value wins; header names compare case-insensitively), as a
    /// repeatable `--header` adds to a profile's headers rather than erasing
    /// its credentials.
    pub fn overlay(&mut self, flags: &Profile) {
        if flags.mode.is_some()
            || flags.rate.is_some()
            || flags.concurrency.is_some()
            || flags.stages.is_some()
        {
            self.mode = None;
            self.rate = None;
            self.concurrency = None;
            self.stages = None;
        }
        if let Some(fh) = &flags.headers {
            let h = self.headers.get_or_insert_with(BTreeMap::new);
            for (k, v) in fh {
                h.retain(|old, _| !old.eq_ignore_ascii_case(k));
                h.insert(k.clone(), v.clone());
            }
        }
        if let Some(fe) = &flags.extra_body {
            let e = self.extra_body.get_or_insert_with(Map::new);
            for (k, v) in fe {
                e.insert(k.clone(), v.clone());
            }
        }
        macro_rules! replace {
            ($($f:ident),* $(,)?) => {
                // Destructuring makes a field added to `Profile` but not
                // listed here a compile error.
                let Profile { $($f: _,)* headers: _, extra_body: _ } = flags;
                $(if flags.$f.is_some() {
                    self.$f = flags.$f.clone();
                })*
            };
        }
        replace!(
            endpoint,
            api,
            model,
            mode,
            rate,
            concurrency,
            duration,
            requests,
            warmup,
            arrival,
            connections,
            openloop_max_inflight,
            max_tokens,
            stream,
            system,
            dataset,
            synthetic,
            order,
            tokenizer,
            temperature,
            top_p,
            stop,
            ignore_eos,
            min_tokens,
            api_key,
            cache_mode,
            correlation,
            timeout,
            ttft_timeout,
            connect_timeout,
            drain_timeout,
            seed,
            workers,
            pin,
            out,
            quiet,
            live_interval,
            record_output,
            stages,
            scenarios,
            thresholds,
        );
    }

    /// The profile `llmload init` writes: a three-stage run (closed loop,
    /// constant rate, rate sweep) over a multi-turn chat scenario and a
    /// checked Q&A scenario, with two thresholds.
    pub fn example() -> Profile {
        let secs = |s| Some(HumanDuration(Duration::from_secs(s)));
        Profile {
            endpoint: Some("http://127.0.0.1:8000/v1/chat/completions".to_string()),
            api: Some(defaults::API.to_string()),
            model: Some("demo".to_string()),
            max_tokens: Some(32),
            stream: Some(true),
            warmup: secs(1),
            arrival: Some("poisson".to_string()),
            stages: Some(vec![
                StageSpec {
                    name: Some("closed-8".to_string()),
                    concurrency: Some(8),
                    duration: secs(5),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("rate-50".to_string()),
                    rate: Some(50.0),
                    duration: secs(5),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("sweep-20-100".to_string()),
                    rate_from: Some(20.0),
                    rate_to: Some(100.0),
                    duration: secs(5),
                    ..StageSpec::default()
                },
            ]),
            scenarios: Some(vec![
                ScenarioSpec {
                    name: "chat".to_string(),
                    weight: Some(70.0),
                    turns: Some(Turns::Range { min: 2, max: 4 }),
                    content: Some(ContentSpec {
                        mode: "scripted".to_string(),
                        script: Some(strings(&["Hi", "tell me more", "and then?", "why?"])),
                        ..ContentSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
                ScenarioSpec {
                    name: "qa".to_string(),
                    weight: Some(30.0),
                    stream: Some(false),
                    max_tokens: Some(16),
                    content: Some(ContentSpec {
                        mode: "pool".to_string(),
                        prompts: Some(strings(&["What is 2+2?", "Name a color."])),
                        ..ContentSpec::default()
                    }),
                    checks: Some(Checks {
                        min_completion_tokens: Some(1),
                        ..Checks::default()
                    }),
                    ..ScenarioSpec::default()
                },
            ]),
            thresholds: Some(Thresholds {
                p99_ms: Some(5000.0),
                error_rate: Some(0.01),
                ..Thresholds::default()
            }),
            ..Profile::default()
        }
    }

    /// Every top-level field, each at its default; a field whose default is
    /// "absent" or derived (model, workers, ttft_timeout …) is `null`, and so
    /// are the single-stage fields, which `stages` replaces. Stages show
    /// each load kind, scenarios each self-contained content mode.
    pub fn full() -> Profile {
        let d = |d: Duration| Some(HumanDuration(d));
        let secs = |s| d(Duration::from_secs(s));
        Profile {
            endpoint: Some("http://127.0.0.1:8000/v1/chat/completions".to_string()),
            api: Some(defaults::API.to_string()),
            warmup: d(defaults::WARMUP),
            arrival: Some(defaults::ARRIVAL.to_string()),
            connections: Some(defaults::CONNECTIONS),
            max_tokens: Some(defaults::MAX_TOKENS),
            stream: Some(defaults::STREAM),
            order: Some(defaults::ORDER.to_string()),
            stop: Some(Vec::new()),
            ignore_eos: Some(false),
            extra_body: Some(Map::new()),
            headers: Some(BTreeMap::new()),
            cache_mode: Some(defaults::CACHE_MODE.to_string()),
            correlation: Some(Correlation {
                header: Some(defaults::CORRELATION_HEADER.to_string()),
                uuid_in_prompt: Some(defaults::UUID_IN_PROMPT),
            }),
            timeout: d(defaults::TIMEOUT),
            connect_timeout: d(defaults::CONNECT_TIMEOUT),
            drain_timeout: d(defaults::DRAIN_TIMEOUT),
            seed: Some(defaults::SEED),
            pin: Some(false),
            quiet: Some(false),
            live_interval: d(defaults::LIVE_INTERVAL),
            record_output: Some(false),
            stages: Some(vec![
                StageSpec {
                    name: Some("ceiling".to_string()),
                    concurrency: Some(defaults::CONCURRENCY),
                    duration: d(defaults::DURATION),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("steady".to_string()),
                    rate: Some(50.0),
                    duration: secs(30),
                    requests: Some(1500),
                    ..StageSpec::default()
                },
                StageSpec {
                    name: Some("sweep".to_string()),
                    rate_from: Some(10.0),
                    rate_to: Some(200.0),
                    duration: secs(60),
                    ..StageSpec::default()
                },
            ]),
            scenarios: Some(vec![
                ScenarioSpec {
                    name: "qa".to_string(),
                    weight: Some(60.0),
                    stream: Some(false),
                    max_tokens: Some(64),
                    turns: Some(Turns::Fixed(1)),
                    content: Some(ContentSpec {
                        mode: "pool".to_string(),
                        prompts: Some(strings(&[
                            "What is the capital of France?",
                            "Explain TCP slow start in two sentences.",
                            "Name three prime numbers.",
                        ])),
                        ..ContentSpec::default()
                    }),
                    checks: Some(Checks {
                        not_contains: Some(strings(&["error"])),
                        min_completion_tokens: Some(1),
                        status: Some(200),
                        ..Checks::default()
                    }),
                    ..ScenarioSpec::default()
                },
                ScenarioSpec {
                    name: "chat".to_string(),
                    weight: Some(30.0),
                    turns: Some(Turns::Range { min: 2, max: 4 }),
                    think_time: d(Duration::from_millis(500)),
                    content: Some(ContentSpec {
                        mode: "scripted".to_string(),
                        script: Some(strings(&[
                            "Hi, I need help planning a trip.",
                            "Tell me more.",
                            "And then?",
                            "Summarize the plan.",
                        ])),
                        ..ContentSpec::default()
                    }),
                    ..ScenarioSpec::default()
                },
                ScenarioSpec {
                    name: "long-context".to_string(),
                    weight: Some(10.0),
                    max_tokens: Some(256),
                    cache_mode: Some("natural".to_string()),
                    content: Some(ContentSpec {
                        mode: "sized".to_string(),
                        approx_input_tokens: Some(2000),
                        ..ContentSpec::default()
                    }),
                    checks: Some(Checks {
                        max_completion_tokens: Some(256),
                        ..Checks::default()
                    }),
                    ..ScenarioSpec::default()
                },
            ]),
            thresholds: Some(Thresholds {
                ttft_p95_ms: Some(2000.0),
                p95_ms: Some(15000.0),
                p99_ms: Some(30000.0),
                error_rate: Some(0.01),
                min_rps: Some(1.0),
                abort_on_fail: Some(false),
            }),
            ..Profile::default()
        }
    }

    /// Pretty JSON in field order. `show_unset` keeps unset top-level fields
    /// as `null` (the full template lists every field); otherwise they are
    /// left out.
    pub fn to_json(&self, show_unset: bool) -> String {
        let pretty = serde_json::to_string_pretty(self).expect("a profile serializes");
        if show_unset {
            return pretty + "\n";
        }
        // Filtering a `serde_json::Value` would sort the keys (no
        // `preserve_order`), so drop the lines instead: a top-level member is
        // the only line indented by exactly two spaces, and a null is one
        // line. JSON strings hold no raw newline, so no line is split.
        let mut lines: Vec<&str> = pretty
            .lines()
            .filter(|l| !(l.starts_with("  \"") && l.trim_end_matches(',').ends_with(": null")))
            .collect();
        if let [.., last_member, "}"] = lines.as_mut_slice() {
            *last_member = last_member.strip_suffix(',').unwrap_or(last_member);
        }
        if lines == ["{", "}"] {
            return "{}\n".to_string();
        }
        lines.join("\n") + "\n"
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"{
  "endpoint": "http://127.0.0.1:8000/v1/chat/completions",
  "api": "openai-chat",
  "model": "demo",
  "max_tokens": 32,
  "stream": true,
  "warmup": "1s",
  "arrival": "poisson",
  "stages": [
    {"concurrency": 8, "duration": "5s"},
    {"rate": 50, "duration": "5s"},
    {"rate_from": 20, "rate_to": 100, "duration": "5s"}
  ],
  "scenarios": [
    {"name": "chat", "weight": 70, "turns": {"min": 2, "max": 4},
     "content": {"mode": "scripted", "script": ["Hi", "tell me more", "and then?", "why?"]}},
    {"name": "qa", "weight": 30, "stream": false, "max_tokens": 16,
     "content": {"mode": "pool", "prompts": ["What is 2+2?", "Name a color."]},
     "checks": {"min_completion_tokens": 1}}
  ],
  "thresholds": {"p99_ms": 5000, "error_rate": 0.01}
}"#;

    fn no_env(_: &str) -> Result<String, VarError> {
        Err(VarError::NotPresent)
    }

    fn parse(text: &str) -> Result<Profile, String> {
        Profile::parse(text, "run.json", &no_env)
    }

    /// Parses `text` and returns its single load error.
    fn load_err(text: &str) -> String {
        parse(text).expect_err("should not load")
    }

    /// Parses `text` and returns its validation errors.
    fn invalid(text: &str) -> Vec<String> {
        parse(text).expect("loads").validate()
    }

    fn has(errs: &[String], needle: &str) -> bool {
        errs.iter().any(|e| e.contains(needle))
    }

    #[test]
    fn brief_example_loads_and_validates() {
        let p = parse(EXAMPLE).unwrap();
        assert_eq!(p.validate(), Vec::<String>::new());
        let stages = p.stages().unwrap();
        assert_eq!(stages.len(), 3);
        assert_eq!(stages[0].load, StageLoad::Closed { concurrency: 8 });
        assert_eq!(stages[1].load, StageLoad::Open { rate: 50.0 });
        assert_eq!(
            stages[2].load,
            StageLoad::Ramp {
                from: 20.0,
                to: 100.0
            }
        );
        assert_eq!(stages[2].name, "stage-3");
        assert_eq!(stages[0].duration, Some(Duration::from_secs(5)));
        let sc = p.scenarios().unwrap();
        assert_eq!(sc[0].turns, TurnRange { min: 2, max: 4 });
        assert_eq!(sc[1].turns, TurnRange { min: 1, max: 1 });
        assert_eq!(sc[1].cache_mode, CacheMode::Bust);
        assert!(matches!(&sc[1].content, Some(Content::Pool { prompts }) if prompts.len() == 2));
        assert_eq!(p.arrival().unwrap(), Arrival::Poisson);
        assert_eq!(p.thresholds.unwrap().p99_ms, Some(5000.0));
    }

    #[test]
    fn templates_validate_and_round_trip() {
        for (p, unset) in [(Profile::example(), false), (Profile::full(), true)] {
            assert_eq!(p.validate(), Vec::<String>::new(), "{p:?}");
            let text = p.to_json(unset);
            assert_eq!(parse(&text).unwrap(), p, "{text}");
        }
        let full = Profile::full().to_json(true);
        let v: Value = serde_json::from_str(&full).unwrap();
        // Every field of the schema is present in the full template.
        let keys = v.as_object().unwrap();
        for k in [
            "ttft_timeout",
            "workers",
            "model",
            "rate",
            "api_key",
            "thresholds",
        ] {
            assert!(keys.contains_key(k), "{k} missing");
        }
        assert!(full.contains("\"rate\": 50,"), "{full}");
        let example = Profile::example().to_json(false);
        assert!(!example.contains("null"), "{example}");
        assert!(
            example.starts_with("{\n  \"endpoint\": "),
            "derive order: {example}"
        );
        let order: Vec<usize> = ["\"api\"", "\"max_tokens\"", "\"stages\"", "\"thresholds\""]
            .iter()
            .map(|k| full.find(k).unwrap())
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "derive order: {full}"
        );
        // A last member that was unset leaves no dangling comma.
        let tail = Profile {
            model: Some("m".to_string()),
            ..Profile::default()
        };
        assert_eq!(tail.to_json(false), "{\n  \"model\": \"m\"\n}\n");
        assert_eq!(Profile::default().to_json(false), "{}\n");
    }

    #[test]
    fn unknown_fields_name_their_path() {
        let e = load_err(r#"{"max_token": 5}"#);
        assert!(e.starts_with("run.json: max_token: unknown field"), "{e}");
        assert!(e.contains("did you mean max_tokens?"), "{e}");
        let e = load_err(r#"{"stages": [{"rate": 1, "duration": 1}, {"rat": 5}]}"#);
        assert!(
            e.starts_with(
                "run.json: stages[1].rat: unknown field, expected one of name, concurrency, rate"
            ),
            "{e}"
        );
        let e = load_err(
            r#"{"scenarios": [{"name": "a", "content": {"mode": "pool", "prompt": ["x"]}}]}"#,
        );
        assert!(e.starts_with("run.json: scenarios[0].content.prompt: unknown field, expected one of mode, prompts"), "{e}");
        let e = load_err(r#"{"scenarios": [{"name": "a", "turns": {"mni": 1, "max": 2}}]}"#);
        assert_eq!(
            e,
            "run.json: scenarios[0].turns.mni: unknown field, expected one of min, max"
        );
        let e = load_err(r#"{"thresholds": {"p99": 5}}"#);
        assert!(
            e.starts_with("run.json: thresholds.p99: unknown field"),
            "{e}"
        );
    }

    #[test]
    fn wrong_types_and_missing_fields_name_their_path() {
        let e = load_err(r#"{"stages": [{"rate": 1, "duration": 1}, {"rate": "fast"}]}"#);
        assert_eq!(
            e,
            r#"run.json: stages[1].rate: invalid type: string "fast", expected a number"#
        );
        let e = load_err(r#"{"max_tokens": -1}"#);
        assert_eq!(
            e,
            "run.json: max_tokens: invalid value: integer -1, expected a whole number ≥ 0"
        );
        let e = load_err(r#"{"stream": "yes"}"#);
        assert_eq!(
            e,
            r#"run.json: stream: invalid type: string "yes", expected a boolean"#
        );
        let e = load_err(r#"{"stages": {"rate": 1}}"#);
        assert_eq!(e, "run.json: stages: invalid type: map, expected an array");
        let e = load_err(r#"{"scenarios": [{"weight": 2}]}"#);
        assert_eq!(e, "run.json: scenarios[0]: missing field name");
        let e = load_err(r#"{"scenarios": [{"name": "a", "content": {"prompts": []}}]}"#);
        assert_eq!(e, "run.json: scenarios[0].content: missing field mode");
        let e = load_err(r#"{"warmup": "soon"}"#);
        assert!(
            e.starts_with("run.json: warmup: 'soon': expected a duration"),
            "{e}"
        );
        let e = load_err(r#"{"scenarios": [{"name": "a", "turns": "many"}]}"#);
        assert!(
            e.contains(
                "scenarios[0].turns: invalid type: string \"many\", expected a number of turns"
            ),
            "{e}"
        );
        let e = load_err(r#"{"headers": {"X-A": 5}}"#);
        assert_eq!(
            e,
            "run.json: headers.X-A: invalid type: integer 5, expected a string"
        );
        let e = load_err("[1]");
        assert_eq!(e, "run.json: invalid type: array, expected an object");
        let e = load_err(r#"{"thresholds": [100, 200]}"#);
        assert_eq!(
            e,
            "run.json: thresholds: invalid type: array, expected an object"
        );
        let e = load_err(r#"{"scenarios": [{"name": "a", "checks": [1]}]}"#);
        assert_eq!(
            e,
            "run.json: scenarios[0].checks: invalid type: array, expected an object"
        );
        let e = load_err(r#"{"stages": [[5, 1]]}"#);
        assert_eq!(
            e,
            "run.json: stages[0]: invalid type: array, expected an object"
        );
    }

    #[test]
    fn bad_json_names_line_and_column() {
        let e = load_err("{\n  \"rate\": 5,\n}");
        assert!(
            e.starts_with("run.json:3:1: not valid JSON: trailing comma"),
            "{e}"
        );
    }

    #[test]
    fn durations_take_strings_and_seconds() {
        let p = parse(
            r#"{"warmup": 2, "timeout": 1.5, "drain_timeout": "250ms", "live_interval": "0"}"#,
        )
        .unwrap();
        assert_eq!(p.warmup.unwrap().0, Duration::from_secs(2));
        assert_eq!(p.timeout.unwrap().0, Duration::from_millis(1500));
        assert_eq!(p.drain_timeout.unwrap().0, Duration::from_millis(250));
        assert_eq!(p.live_interval.unwrap().0, Duration::ZERO);
        assert!(load_err(r#"{"warmup": -2}"#).contains("cannot be negative"));
    }

    #[test]
    fn environment_expansion() {
        let env = |k: &str| match k {
            "KEY" => Ok("sk-123".to_string()),
            "HOST" => Ok("127.0.0.1:9".to_string()),
            _ => Err(VarError::NotPresent),
        };
        let text = r#"{"endpoint": "http://${HOST}/v1", "headers": {"Authorization": "Bearer ${KEY}"},
            "system": "costs $$5, or $6; ${KEY}$$", "stop": ["${KEY}"]}"#;
        let p = Profile::parse(text, "run.json", &env).unwrap();
        assert_eq!(p.endpoint.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(p.headers.unwrap()["Authorization"], "Bearer sk-123");
        assert_eq!(p.system.as_deref(), Some("costs $5, or $6; sk-123$"));
        assert_eq!(p.stop.unwrap(), vec!["sk-123".to_string()]);

        let text = r#"{"headers": {"Authorization": "Bearer ${OPENAI_KEY}"},
            "scenarios": [{"name": "a", "system": "${ALSO_UNSET}"}]}"#;
        let e = Profile::parse(text, "run.json", &env).unwrap_err();
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(
            lines,
            [
                "run.json: headers.Authorization: environment variable OPENAI_KEY is not set",
                "run.json: scenarios[0].system: environment variable ALSO_UNSET is not set",
            ]
        );
        let e = Profile::parse(r#"{"model": "${KEY"}"#, "run.json", &env).unwrap_err();
        assert!(e.starts_with("run.json: model: unterminated '${'"), "{e}");
        let e = Profile::parse(r#"{"model": "${1X}"}"#, "run.json", &env).unwrap_err();
        assert!(e.contains("not a variable name"), "{e}");
    }

    #[test]
    fn stage_errors_name_the_stage() {
        let errs = invalid(
            r#"{"stages": [
                {"duration": "5s"},
                {"rate": 5, "concurrency": 2, "duration": "5s"},
                {"rate": 0, "duration": "5s"},
                {"rate_from": 5, "duration": "5s"},
                {"concurrency": 0, "duration": "5s"},
                {"concurrency": 4},
                {"rate": 5, "duration": 0},
                {"rate_from": 1, "rate_to": 9, "requests": 10}
            ]}"#,
        );
        for needle in [
            "stages[0]: no load",
            "stages[1]: set only one of",
            "stages[2].rate: 0: rate must be a number > 0",
            "stages[3].rate_from: needs rate_to",
            "stages[4].concurrency: must be at least 1",
            "stages[5].duration: missing",
            "stages[6].duration: must be longer than 0",
            "stages[7].duration: a ramp needs a duration",
        ] {
            assert!(has(&errs, needle), "{needle} not in {errs:#?}");
        }
        assert_eq!(errs.len(), 8, "{errs:#?}");
        // A request cap stands in for a duration.
        assert!(invalid(r#"{"stages": [{"concurrency": 4, "requests": 100}]}"#).is_empty());
    }

    #[test]
    fn stages_beside_a_single_stage_shape_are_ambiguous() {
        let errs =
            invalid(r#"{"rate": 5, "duration": "5s", "stages": [{"rate": 5, "duration": "5s"}]}"#);
        assert!(has(&errs, "rate: ambiguous beside stages"), "{errs:?}");
        assert!(has(&errs, "duration: ambiguous beside stages"), "{errs:?}");
        assert!(has(&invalid(r#"{"stages": []}"#), "stages: empty"));
    }

    #[test]
    fn single_stage_resolves_like_bench() {
        let p = parse("{}").unwrap();
        let s = &p.stages().unwrap()[0];
        assert_eq!(s.load, StageLoad::Closed { concurrency: 64 });
        assert_eq!(s.duration, Some(Duration::from_secs(10)));
        let p = parse(r#"{"rate": 20, "requests": 100}"#).unwrap();
        let s = &p.stages().unwrap()[0];
        assert_eq!(s.load, StageLoad::Open { rate: 20.0 });
        assert_eq!((s.duration, s.requests), (None, Some(100)));
        let s = &parse(r#"{"mode": "offline"}"#).unwrap().stages().unwrap()[0];
        assert_eq!((s.load, s.requests), (StageLoad::Offline, Some(1000)));
        assert_eq!(
            parse(r#"{"mode": "uniform", "rate": 3}"#)
                .unwrap()
                .arrival(),
            Ok(Arrival::Uniform)
        );
        let errs = invalid(r#"{"mode": "uniform", "arrival": "poisson", "rate": 3}"#);
        assert_eq!(errs, ["arrival: poisson contradicts mode uniform"]);
        assert!(has(
            &invalid(r#"{"mode": "poisson"}"#),
            "rate: mode poisson needs a rate"
        ));
        assert!(has(
            &invalid(r#"{"mode": "fast"}"#),
            "mode: 'fast': expected one of offline"
        ));
        assert!(has(
            &invalid(r#"{"mode": "offline", "concurrency": 3}"#),
            "concurrency: applies to mode concurrency"
        ));
        assert!(has(
            &invalid(r#"{"concurrency": 8, "connections": 4}"#),
            "connections: 4 is below the concurrency 8"
        ));
    }

    #[test]
    fn scenario_errors_name_the_scenario() {
        let errs = invalid(
            r#"{"scenarios": [
                {"name": "a", "weight": 0, "turns": {"min": 3, "max": 2}},
                {"name": "a", "turns": 0, "content": {"mode": "pool"}},
                {"name": "c", "content": {"mode": "scripted", "script": []}},
                {"name": "d", "content": {"mode": "sized", "approx_input_tokens": 0, "prompts": ["x"]}},
                {"name": "e", "content": {"mode": "poem"}},
                {"name": "f", "api": "grpc", "cache_mode": "warm", "max_tokens": 0,
                 "checks": {"min_completion_tokens": 9, "max_completion_tokens": 2, "status": 42}},
                {"name": "g", "content": {"mode": "dataset"}, "headers": {"Bad Name": "x"}}
            ]}"#,
        );
        for needle in [
            "scenarios[0].weight: 0: weight must be a number > 0",
            "scenarios[0].turns: min 3 is above max 2",
            "scenarios[1].name: 'a' names two scenarios",
            "scenarios[1].turns: a conversation has at least 1 turn",
            "scenarios[1].content: mode pool needs prompts",
            "scenarios[2].content.script: empty",
            "scenarios[3].content.approx_input_tokens: must be at least 1",
            "scenarios[3].content.prompts: not used by mode sized",
            "scenarios[4].content.mode: 'poem': expected pool, scripted, sized or dataset",
            "scenarios[5].api: unknown API 'grpc'; expected one of openai-chat",
            "scenarios[5].cache_mode: 'warm': expected bust or natural",
            "scenarios[5].max_tokens: must be at least 1",
            "scenarios[5].checks: min_completion_tokens 9 is above max_completion_tokens 2",
            "scenarios[5].checks.status: 42: not an HTTP status",
            "scenarios[6].content: mode dataset needs dataset",
            "scenarios[6].headers.Bad Name: not a valid header name",
        ] {
            assert!(has(&errs, needle), "{needle} not in {errs:#?}");
        }
        assert_eq!(errs.len(), 16, "{errs:#?}");
    }

    #[test]
    fn top_level_errors_name_the_field() {
        let errs = invalid(
            r#"{"api": "soap", "endpoint": "https://x", "order": "sorted", "arrival": "bursty",
                "cache_mode": "warm", "temperature": -1, "top_p": 0, "max_tokens": 0,
                "dataset": "a.jsonl", "synthetic": "isl=1,osl=1", "connections": 0,
                "thresholds": {"p95_ms": -1, "error_rate": 1.5}, "timeout": "0s",
                "ttft_timeout": "10m", "correlation": {"header": "x y"}, "workers": 0}"#,
        );
        for needle in [
            "api: unknown API 'soap'",
            "endpoint: 'https://x': https is not supported",
            "order: 'sorted': expected sequential, shuffle or random",
            "arrival: 'bursty': expected uniform or poisson",
            "cache_mode: 'warm': expected bust or natural",
            "temperature: -1: expected a number ≥ 0",
            "top_p: 0: expected a number in (0, 1]",
            "max_tokens: must be at least 1",
            "synthetic: dataset and synthetic are alternatives",
            "connections: must be at least 1",
            "thresholds.p95_ms: -1: expected a number ≥ 0",
            "thresholds.error_rate: 1.5: expected a fraction from 0 to 1",
            "timeout: must be longer than 0",
            "ttft_timeout: 600s is longer than timeout",
            "correlation.header: not a valid header name",
            "workers: 0: expected 1 to 64",
        ] {
            assert!(has(&errs, needle), "{needle} not in {errs:#?}");
        }
        assert!(has(
            &invalid(r#"{"endpoint": "localhost:8000"}"#),
            "endpoint: 'localhost:8000': expected http://"
        ));
    }

    #[test]
    fn overlay_flags_win() {
        let mut p = parse(EXAMPLE).unwrap();
        p.headers = Some(BTreeMap::from([
            ("Authorization".to_string(), "Bearer file".to_string()),
            ("X-Tenant".to_string(), "a".to_string()),
        ]));
        let flags = Profile {
            endpoint: Some("http://127.0.0.1:9".to_string()),
            max_tokens: Some(7),
            headers: Some(BTreeMap::from([(
                "authorization".to_string(),
                "Bearer flag".to_string(),
            )])),
            ..Profile::default()
        };
        p.overlay(&flags);
        assert_eq!(p.endpoint.as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(p.max_tokens, Some(7));
        assert_eq!(
            p.model.as_deref(),
            Some("demo"),
            "unset flags keep the profile's"
        );
        assert_eq!(p.stages.as_ref().map(Vec::len), Some(3));
        let h = p.headers.as_ref().unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h["authorization"], "Bearer flag");
        assert_eq!(h["X-Tenant"], "a");

        // A load-shape flag replaces the profile's stages.
        p.overlay(&Profile {
            rate: Some(100.0),
            ..Profile::default()
        });
        assert!(p.stages.is_none());
        assert_eq!(p.validate(), Vec::<String>::new());
        assert_eq!(p.stages().unwrap()[0].load, StageLoad::Open { rate: 100.0 });
    }

    #[test]
    fn humanize_keeps_unknown_messages() {
        assert_eq!(humanize("something `odd`"), "something odd");
        assert_eq!(edit_distance("mni", "min"), 2);
        assert_eq!(nearest("endpiont", &["endpoint", "api"]), Some("endpoint"));
        assert_eq!(nearest("zzzzzz", &["endpoint", "api"]), None);
    }
}
