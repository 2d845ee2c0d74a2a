//! MLPerf YAML as a JSON tree, and the reader the schema walks it with.
//! YAML becomes `serde_json::Value` once (environment references
//! substituted in string values, as MLPerf does after its parse), so that
//! command-line overrides can be merged into the same tree and everything
//! after that is one walk with one kind of error: a dotted YAML path and a
//! message. Values are read leniently as MLPerf's pydantic models read them
//! (`"8000"` is a number where a number is expected, which is what a
//! substituted `${PORT}` gives), and every key a section does not take is
//! reported, never ignored.

use std::cell::RefCell;

use serde_json::{Map, Number, Value};
use yaml_rust2::{Yaml, YamlLoader};

use super::bounds;
use super::env::{Lookup, substitute_noting, whole_reference};
use crate::http::redact::{redact, spellings};
use crate::printable::printable;

/// The problems found, each at its YAML path (`""` for the whole file),
/// and the values no message may show. Messages quote values from the file
/// (and the environment), so they leave with control characters spelled
/// out, safe for a terminal.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    found: RefCell<Vec<(String, String)>>,
    /// What a run's report says about fields accepted without effect.
    notes: RefCell<Vec<String>>,
    hidden: RefCell<Vec<String>>,
}

impl Errors {
    /// Errors whose messages never show any of `hidden` (as
    /// `http::redact::secrets` makes such a list).
    pub(crate) fn hiding(hidden: Vec<String>) -> Errors {
        Errors {
            found: RefCell::default(),
            notes: RefCell::default(),
            hidden: RefCell::new(hidden),
        }
    }

    /// A note for the report about the field at `path` (accepted, and
    /// what it does or does not do here).
    pub(crate) fn note(&self, path: &str, msg: impl AsRef<str>) {
        self.notes
            .borrow_mut()
            .push(format!("{path}: {}", msg.as_ref()));
    }

    pub(crate) fn at(&self, path: &str, msg: impl Into<String>) {
        self.found.borrow_mut().push((path.to_string(), msg.into()));
    }

    fn hide(&self, value: String) {
        self.hidden.borrow_mut().push(value);
    }

    pub(crate) fn into_vec(self) -> Vec<(String, String)> {
        self.into_parts().0
    }

    /// The errors and the notes, each as safe to print as `into_vec`'s,
    /// and the values hidden from both.
    pub(crate) fn into_parts(self) -> (Vec<(String, String)>, Vec<String>, Vec<String>) {
        let given = self.hidden.into_inner();
        let hidden = spellings(given.clone());
        let found = self
            .found
            .into_inner()
            .into_iter()
            .map(|(path, msg)| (printable(&path), printable(&redact(&msg, &hidden))))
            .collect();
        let notes = self
            .notes
            .into_inner()
            .into_iter()
            .map(|n| printable(&redact(&n, &hidden)))
            .collect();
        (found, notes, given)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.borrow().is_empty()
    }
}

/// A config's tree, and what nothing printed about it may show: every
/// value substituted from the environment (a config may name any
/// variable) and every string under a key that names a credential.
#[derive(Debug)]
pub(crate) struct Tree {
    pub value: Value,
    pub hidden: Vec<String>,
}

impl Tree {
    /// A tree nothing of which came from the environment (built from the
    /// command line, or written back out).
    pub(crate) fn plain(value: Value) -> Tree {
        Tree {
            value,
            hidden: Vec::new(),
        }
    }
}

/// Parses YAML text into a tree, substituting environment references.
pub(crate) fn parse(text: &str, env: Lookup<'_>) -> Result<Tree, Vec<(String, String)>> {
    bounds::check(text).map_err(|e| vec![(String::new(), e)])?;
    let docs = YamlLoader::load_from_str(text).map_err(|e| {
        let m = e.marker();
        vec![(
            String::new(),
            format!("line {}, column {}: {}", m.line(), m.col() + 1, e.info()),
        )]
    })?;
    let doc = match docs.len() {
        0 => return Err(vec![(String::new(), "empty: expected a mapping".into())]),
        1 => &docs[0],
        n => {
            return Err(vec![(
                String::new(),
                format!("{n} YAML documents: expected one"),
            )]);
        }
    };
    let errs = Errors::default();
    let v = to_json(doc, "", env, &errs);
    if !errs.is_empty() {
        return Err(errs.into_vec());
    }
    if !v.is_object() {
        return Err(vec![(
            String::new(),
            "expected a mapping at the top".into(),
        )]);
    }
    Ok(Tree {
        value: v,
        hidden: errs.hidden.into_inner(),
    })
}

/// The one secret field a run reads: given as exactly `${NAME}`, it stays
/// the reference in the tree, and the run reads the variable when it is
/// resolved (`config::resolve`), so what it records names the variable.
const SECRET_FIELD: &str = "endpoint_config.api_key";

/// Whether the key at the end of `path` names a credential: a word of it
/// (split at `_`, `-` and `.`) is one, so `api_key` and `auth_token` are
/// and `max_new_tokens` or `tokenizer_name` are not.
fn names_secret(path: &str) -> bool {
    let key = path.rsplit('.').next().unwrap_or(path);
    let key = key.split('[').next().unwrap_or(key).to_ascii_lowercase();
    key.split(['_', '-']).any(|w| {
        matches!(
            w,
            "key"
                | "apikey"
                | "token"
                | "secret"
                | "password"
                | "passwd"
                | "credential"
                | "credentials"
                | "auth"
                | "authorization"
        )
    })
}

fn string_value(s: &str, path: &str, env: Lookup<'_>, errs: &Errors) -> Value {
    let secret = names_secret(path);
    if path == SECRET_FIELD
        && let Some(name) = whole_reference(s)
    {
        return match env(name) {
            Some(v) => {
                errs.hide(v);
                Value::String(s.to_string())
            }
            None => {
                errs.at(
                    path,
                    format!("environment variable ${{{name}}} is not set and has no default"),
                );
                Value::Null
            }
        };
    }
    let mut from_env = Vec::new();
    let v = substitute_noting(s, env, &mut from_env);
    for value in from_env {
        errs.hide(value);
    }
    match v {
        Ok(v) => {
            if secret {
                errs.hide(v.clone());
            }
            Value::String(v)
        }
        Err(e) => {
            errs.at(path, e);
            Value::Null
        }
    }
}

fn to_json(y: &Yaml, path: &str, env: Lookup<'_>, errs: &Errors) -> Value {
    match y {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(s) => match s.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Value::Number(n),
            None => Value::String(s.clone()),
        },
        Yaml::String(s) => string_value(s, path, env, errs),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| to_json(v, &format!("{path}[{i}]"), env, errs))
                .collect(),
        ),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => {
                        errs.at(path, "a key that is not a plain scalar");
                        continue;
                    }
                };
                let child = join(path, &key);
                let value = to_json(v, &child, env, errs);
                if m.insert(key, value).is_some() {
                    errs.at(&child, "key given twice");
                }
            }
            Value::Object(m)
        }
        // The loader expands aliases, so `Alias` never reaches here; an
        // alias inside its own anchor loads as `BadValue`.
        Yaml::Alias(_) | Yaml::BadValue => {
            errs.at(
                path,
                "unsupported YAML value (a scalar unlike its tag, or an alias inside its own anchor)",
            );
            Value::Null
        }
    }
}

/// `a.b` (or `b` at the top).
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Sets `value` at the dotted `path` of `tree`, making mappings on the way
/// (an override from the command line).
pub(crate) fn set(tree: &mut Value, path: &str, value: Value) {
    let mut node = tree;
    for key in path.split('.') {
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        node = node
            .as_object_mut()
            .expect("made a mapping above")
            .entry(key.to_string())
            .or_insert(Value::Null);
    }
    *node = value;
}

/// One mapping being read: each key is taken once, and `finish` reports
/// the keys nobody took.
pub(crate) struct Section<'e> {
    pub path: String,
    map: Map<String, Value>,
    pub errs: &'e Errors,
}

impl<'e> Section<'e> {
    /// The mapping at `path`; `null` or absent reads as empty.
    pub(crate) fn new(value: Option<Value>, path: String, errs: &'e Errors) -> Section<'e> {
        let map = match value {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                errs.at(&path, format!("expected a mapping, found {}", kind(&other)));
                Map::new()
            }
        };
        Section { path, map, errs }
    }

    pub(crate) fn path_of(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// The value at `key`, `null` read as absent.
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// Whether `key` has a value other than `null`.
    pub(crate) fn present(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    /// The keys not taken yet.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    /// Whether `key` is present as `null`.
    pub(crate) fn is_null(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(Value::is_null)
    }

    pub(crate) fn section(&mut self, key: &str) -> Section<'e> {
        let v = self.take(key);
        Section::new(v, self.path_of(key), self.errs)
    }

    pub(crate) fn string(&mut self, key: &str) -> Option<String> {
        match self.take(key)? {
            Value::String(s) => Some(s.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            other => {
                self.errs.at(
                    &self.path_of(key),
                    format!("expected a string, found {}", kind(&other)),
                );
                None
            }
        }
    }

    pub(crate) fn f64(&mut self, key: &str) -> Option<f64> {
        let v = self.take(key)?;
        match number(&v) {
            Some(x) => Some(x),
            None => {
                self.errs.at(
                    &self.path_of(key),
                    format!("expected a number, found {}", shown(&v)),
                );
                None
            }
        }
    }

    /// A whole number ≥ `min`.
    pub(crate) fn int(&mut self, key: &str, min: i64) -> Option<i64> {
        let v = self.take(key)?;
        match number(&v) {
            Some(x) if x.fract() == 0.0 && x >= min as f64 && x <= i64::MAX as f64 => {
                Some(x as i64)
            }
            _ => {
                self.errs.at(
                    &self.path_of(key),
                    format!("expected a whole number ≥ {min}, found {}", shown(&v)),
                );
                None
            }
        }
    }

    pub(crate) fn bool(&mut self, key: &str) -> Option<bool> {
        let v = self.take(key)?;
        let b = bool_quiet(&v);
        if b.is_none() {
            self.errs.at(
                &self.path_of(key),
                format!("expected true or false, found {}", shown(&v)),
            );
        }
        b
    }

    /// A field llmload has no use for: accepted only at MLPerf's default
    /// (`Value::Null` for a default of none), so that a config that asks
    /// for something different is never run as if it had not.
    pub(crate) fn only_default(&mut self, key: &str, default: Value) {
        let Some(v) = self.map.remove(key) else {
            return;
        };
        let same = same_value(&v, &default);
        if !same {
            let default = match &default {
                Value::Null => "unset (null)".to_string(),
                d => format!("its default, {}", shown(d)),
            };
            self.errs.at(
                &self.path_of(key),
                format!(
                    "{} is not supported: llmload accepts this field only at {default}",
                    shown(&v)
                ),
            );
        }
    }

    /// A field accepted at any value that changes nothing here (the Python
    /// client's machinery, or a field MLPerf itself never reads): when it
    /// says something other than MLPerf's `default`, the report notes that
    /// it has no effect and `why`.
    pub(crate) fn inert(&mut self, key: &str, default: Value, why: &str) {
        let Some(v) = self.map.remove(key) else {
            return;
        };
        if !same_value(&v, &default) {
            self.errs.note(
                &self.path_of(key),
                format!("{} has no effect in llmload ({why})", shown(&v)),
            );
        }
    }

    /// Reports every key not taken.
    pub(crate) fn finish(self) {
        for (key, _) in self.map {
            self.errs.at(
                &join(&self.path, &key),
                "unknown key (not in MLPerf's schema)",
            );
        }
    }
}

/// Whether `v` is `default` as MLPerf's pydantic models compare them: a
/// number and the string holding it are one, as are `true` and `'on'`.
fn same_value(v: &Value, default: &Value) -> bool {
    match (v, default) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (a, b) => match (number(a), number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => match (a, b) {
                (Value::String(x), Value::String(y)) => x.trim() == y,
                (_, Value::Bool(y)) => bool_quiet(a) == Some(*y),
                _ => a == b,
            },
        },
    }
}

fn bool_quiet(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "on" | "yes" | "1" => Some(true),
            "false" | "off" | "no" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// A number, or a string holding one (a substituted `${VAR}`).
pub(crate) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// A value as an error message quotes it.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn yaml_becomes_json_with_paths_for_env_errors() {
        let v = parse("a: 1\nb: [x, 2.5]\nc: {d: null, e: true}\n", &no_env)
            .unwrap()
            .value;
        assert_eq!(v["a"], 1);
        assert_eq!(v["b"][1], 2.5);
        assert_eq!(v["c"]["e"], true);
        let e = parse("a:\n  b: [ok, '${NOPE}']\n", &no_env).unwrap_err();
        assert_eq!(e[0].0, "a.b[1]");
        assert!(e[0].1.contains("${NOPE}"), "{e:?}");
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse("a: [1, 2\nb: 3\n", &no_env).unwrap_err();
        assert!(e[0].1.starts_with("line "), "{e:?}");
        let e = parse("- 1\n- 2\n", &no_env).unwrap_err();
        assert!(e[0].1.contains("mapping"), "{e:?}");
    }

    #[test]
    fn only_default_compares_by_value() {
        let errs = Errors::default();
        let v = parse(
            "n: 16777216\nf: 0.5\ns: INFO\nb: 'false'\nz: null\nbad: 3\n",
            &no_env,
        )
        .unwrap()
        .value;
        let mut s = Section::new(Some(v), String::new(), &errs);
        s.only_default("n", 16777216.into());
        s.only_default("f", 0.5.into());
        s.only_default("s", "INFO".into());
        s.only_default("b", false.into());
        s.only_default("z", Value::Null);
        s.only_default("bad", 4.into());
        s.finish();
        let e = errs.into_vec();
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].0, "bad");
        assert!(e[0].1.contains("3 is not supported"), "{e:?}");
    }

    #[test]
    fn credential_keys_are_told_by_their_words() {
        for k in [
            "api_key",
            "a.auth_token",
            "x.password",
            "b[0].secret",
            "x.API-KEY",
        ] {
            assert!(names_secret(k), "{k}");
        }
        for k in [
            "max_new_tokens",
            "model_params.tokenizer_name",
            "keys",
            "monkey",
        ] {
            assert!(!names_secret(k), "{k}");
        }
    }

    #[test]
    fn what_came_from_the_environment_or_a_credential_key_is_hidden() {
        let env = |k: &str| (k == "SECRET_MODEL").then(|| "sekrit-model".to_string());
        let t = parse(
            "m: ${SECRET_MODEL}\nauth_token: tok-1234\nplain: visible\nendpoint_config: {api_key: '${SECRET_MODEL}'}\n",
            &env,
        )
        .unwrap();
        assert_eq!(t.value["m"], "sekrit-model");
        assert_eq!(t.value["endpoint_config"]["api_key"], "${SECRET_MODEL}");
        assert!(
            t.hidden.contains(&"sekrit-model".to_string()),
            "{:?}",
            t.hidden
        );
        assert!(t.hidden.contains(&"tok-1234".to_string()), "{:?}", t.hidden);
        assert!(!t.hidden.contains(&"visible".to_string()));
        let errs = Errors::hiding(t.hidden);
        errs.at("m", "'sekrit-model' is not supported");
        errs.at("x\x1b", "'a\x1b[31m' is not supported");
        let e = errs.into_vec();
        assert_eq!(e[0].1, "'<redacted>' is not supported");
        assert_eq!(
            e[1],
            ("x\\u{1b}".into(), "'a\\u{1b}[31m' is not supported".into())
        );
    }
}
