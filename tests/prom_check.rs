//! A deliberately naive reader of the Prometheus text exposition format,
//! independent of the writer in `src/report/prom.rs`: enough to catch a
//! malformed line, a sample before its family's HELP and TYPE, a family
//! split in two, or a series twice. A module of the integration tests,
//! which read real runs' `metrics.prom` with it, and of the writer's unit
//! tests (by `#[path]`), so the oracle exists once and ships in no binary.

use std::collections::{BTreeMap, BTreeSet};

/// One sample: metric name, labels in order, value.
pub(super) type Sample = (String, Vec<(String, String)>, f64);

/// Parses `text` or says what is wrong with which line.
pub(super) fn parse(text: &str) -> Result<Vec<Sample>, String> {
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("the last line must end with a line feed".into());
    }
    let mut help = BTreeSet::new();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut started = BTreeSet::new();
    let mut current: Option<String> = None;
    let mut series = BTreeSet::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let err = |m: &str| Err(format!("line {}: {m}: {line:?}", i + 1));
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut it = rest.splitn(3, ' ');
            let (kw, name) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
            if !valid_name(name) {
                return err("bad metric name");
            }
            if current.as_deref() != Some(name) {
                if !started.insert(name.to_string()) {
                    return err("family appears twice");
                }
                current = Some(name.to_string());
            }
            match kw {
                "HELP" => {
                    if !help.insert(name.to_string()) {
                        return err("second HELP");
                    }
                }
                "TYPE" => {
                    let t = it.next().unwrap_or("");
                    if !["counter", "gauge", "summary", "histogram", "untyped"].contains(&t) {
                        return err("bad type");
                    }
                    if types.insert(name.to_string(), t.to_string()).is_some() {
                        return err("second TYPE");
                    }
                }
                _ => return err("unknown comment keyword"),
            }
            continue;
        }
        let (name, labels, value) = match sample(line) {
            Ok(s) => s,
            Err(m) => return err(&m),
        };
        let family = family_of(&name, &types);
        if current.as_deref() != Some(family.as_str()) {
            return err("sample outside its family's block");
        }
        if !help.contains(&family) || !types.contains_key(&family) {
            return err("sample before its family's HELP and TYPE");
        }
        if types[&family] == "summary" {
            let has_q = labels.iter().any(|(k, _)| k == "quantile");
            if has_q == (name != family) {
                return err("summary: quantile only on the bare name, not on _sum/_count");
            }
        }
        let mut key = labels.clone();
        key.sort();
        if !series.insert((name.clone(), key)) {
            return err("duplicate series");
        }
        out.push((name, labels, value));
    }
    Ok(out)
}

fn family_of(name: &str, types: &BTreeMap<String, String>) -> String {
    for suffix in ["_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && types.get(base).is_some_and(|t| t == "summary")
        {
            return base.to_string();
        }
    }
    name.to_string()
}

pub(super) fn valid_name(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label(n: &str) -> bool {
    valid_name(n) && !n.contains(':')
}

fn sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    if !valid_name(name) {
        return Err("bad metric name".into());
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let eq = rest.find("=\"").ok_or("label without =\"")?;
            let key = &rest[..eq];
            if !valid_label(key) {
                return Err(format!("bad label name {key:?}"));
            }
            let mut value = String::new();
            let mut chars = rest[eq + 2..].char_indices();
            let end = loop {
                match chars.next().ok_or("unterminated label value")? {
                    (i, '"') => break eq + 2 + i + 1,
                    (_, '\\') => match chars.next().ok_or("dangling backslash")?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    (_, '\n') => return Err("raw line feed in label value".into()),
                    (_, c) => value.push(c),
                }
            };
            if labels.iter().any(|(k, _): &(String, String)| k == key) {
                return Err(format!("label {key} twice"));
            }
            labels.push((key.to_string(), value));
            rest = &rest[end..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let mut parts = rest.split(' ');
    let v = parts.next().unwrap_or("");
    let value = match v {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().map_err(|_| format!("bad value {v:?}"))?,
    };
    if let Some(ts) = parts.next()
        && ts.parse::<i64>().is_err()
    {
        return Err("bad timestamp".into());
    }
    if parts.next().is_some() {
        return Err("trailing tokens".into());
    }
    Ok((name.to_string(), labels, value))
}
