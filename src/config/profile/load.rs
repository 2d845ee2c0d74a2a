//! Reading a profile: `${NAME}` expansion over the raw JSON (so secrets stay
//! in the environment), then typed deserialization through
//! `serde_path_to_error`, each error naming the file and the JSON path.
//! serde's messages are rewritten in the profile's vocabulary (JSON types,
//! the nearest known field for a typo); the trade-off is that this leans on
//! the wording of serde's errors, which the tests pin.

use std::env::VarError;
use std::path::Path;

use serde_json::Value;

use super::Profile;
use crate::typo::nearest;

/// Environment lookup, injectable so tests need not touch the process
/// environment.
pub(crate) type EnvLookup<'a> = &'a dyn Fn(&str) -> Result<String, VarError>;

impl Profile {
    /// Reads, expands and deserializes the profile at `path`. Every error
    /// starts with the path as given and names the JSON path inside the
    /// file; expansion errors are all reported, one per line.
    pub(crate) fn load(path: &Path) -> Result<Profile, String> {
        let text = crate::capped_read::text(path, crate::capped_read::CONFIG)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        Profile::parse(&text, &path.display().to_string(), &|k| std::env::var(k))
    }

    /// [`Profile::load`] on text already read; `origin` prefixes every error.
    pub(crate) fn parse(text: &str, origin: &str, env: EnvLookup<'_>) -> Result<Profile, String> {
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
        // The key given as exactly `${NAME}` stays the reference: `resolve`
        // reads the variable, and what the run records names it.
        Value::String(s)
            if path == "api_key" && crate::config::mlperf::env::whole_reference(s).is_some() => {}
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
pub(super) fn humanize(msg: &str) -> String {
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
