//! The checks resolving runs on a profile's values: an error collector whose
//! entries are `json.path: message`, and the field checks that both say what
//! is wrong and hand back the parsed value, so that checking a string and
//! parsing it are one step. Messages written for the command line
//! (`--endpoint '…': …`) lose their flag prefix here, since the path already
//! names the field.

use std::collections::BTreeMap;
use std::fmt;

use super::Profile;
use crate::dataset::DatasetSpec;
use crate::http::endpoint::Endpoint;
use crate::protocol::{self, Protocol};

/// Errors collected while resolving, each `path: message`.
#[derive(Default)]
pub(crate) struct Errors(Vec<String>);

impl Errors {
    pub(crate) fn at(&mut self, path: impl fmt::Display, msg: impl fmt::Display) {
        self.0.push(format!("{path}: {msg}"));
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// `value` when nothing was collected, else every error.
    pub(crate) fn result<T>(self, value: T) -> Result<T, Vec<String>> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self.0)
        }
    }
}

impl Profile {
    /// Every impossible value in the profile, each as `json.path: message`;
    /// empty means the profile can run (the endpoint's host was resolved but
    /// not contacted). The error half of `config::resolve::resolve`, which
    /// `llmload validate` and `bench` call for both halves at once.
    #[cfg(test)]
    pub(crate) fn validate(&self) -> Vec<String> {
        crate::config::resolve::resolve(self.clone())
            .err()
            .unwrap_or_default()
    }
}

/// Removes a leading `--flag ` from messages written for the command line.
pub(crate) fn unflag(msg: String, flag: &str) -> String {
    match msg.strip_prefix(flag).and_then(|m| m.strip_prefix(' ')) {
        Some(m) => m.to_string(),
        None => msg,
    }
}

pub(crate) fn check_positive(errs: &mut Errors, path: &str, v: Option<f64>, what: &str) {
    if let Some(x) = v
        && !(x.is_finite() && x > 0.0)
    {
        errs.at(path, format!("{x}: {what} must be a number > 0"));
    }
}

pub(crate) fn check_headers(
    errs: &mut Errors,
    path: &str,
    headers: Option<&BTreeMap<String, String>>,
) {
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

pub(crate) fn valid_header_name(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_graphic() && b != b':')
}

/// Parses an endpoint URL (`default_path` when it has none) and resolves its
/// host. A host that does not resolve is not an error: the run goes on and
/// counts each request to it as `dns_error`.
pub(crate) fn check_endpoint(
    errs: &mut Errors,
    path: &str,
    url: &str,
    default_path: &str,
) -> Option<Endpoint> {
    Endpoint::parse_lenient(url, default_path)
        .map_err(|e| errs.at(path, unflag(e, "--endpoint")))
        .ok()
}

/// Splits an `endpoint` value that lists several URLs (`URL1,URL2`) at each
/// comma followed by `http://` or `https://`, so a comma inside one URL's
/// query stays part of it.
pub(crate) fn split_endpoints(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    for (i, _) in value.match_indices(',') {
        let rest = value[i + 1..].trim_start();
        if rest.starts_with("http://") || rest.starts_with("https://") {
            out.push(value[from..i].trim());
            from = i + 1;
        }
    }
    out.push(value[from..].trim());
    out
}

/// The endpoints of the top level or of a scenario: its `endpoint` (one URL
/// or a comma list) or its `endpoints`, each parsed and resolved as
/// `check_endpoint` does; empty when neither is set. Both set is an error
/// naming both, as is an empty list.
pub(crate) fn check_endpoints(
    errs: &mut Errors,
    prefix: &str,
    endpoint: Option<&str>,
    endpoints: Option<&[String]>,
    default_path: &str,
) -> Vec<Endpoint> {
    let urls: Vec<(String, &str)> = match (endpoint, endpoints) {
        (Some(_), Some(_)) => {
            errs.at(
                format!("{prefix}endpoints"),
                format!(
                    "{prefix}endpoint and {prefix}endpoints are alternatives; give one \
                     (a list in either: endpoint \"URL1,URL2\" or endpoints [\"URL1\", \"URL2\"])"
                ),
            );
            return Vec::new();
        }
        (Some(one), None) => {
            let list = split_endpoints(one);
            let several = list.len() > 1;
            list.into_iter()
                .enumerate()
                .map(|(i, u)| {
                    let path = if several {
                        format!("{prefix}endpoint (URL {})", i + 1)
                    } else {
                        format!("{prefix}endpoint")
                    };
                    (path, u)
                })
                .collect()
        }
        (None, Some([])) => {
            errs.at(
                format!("{prefix}endpoints"),
                "empty list: give at least one URL",
            );
            return Vec::new();
        }
        (None, Some(list)) => list
            .iter()
            .enumerate()
            .map(|(i, u)| (format!("{prefix}endpoints[{i}]"), u.as_str()))
            .collect(),
        (None, None) => return Vec::new(),
    };
    let mut out: Vec<Endpoint> = Vec::with_capacity(urls.len());
    for (path, url) in urls {
        let Some(e) = check_endpoint(errs, &path, url, default_path) else {
            continue;
        };
        if out.iter().any(|o| o.url == e.url) {
            errs.at(path, format!("'{}' is listed twice", e.display()));
            continue;
        }
        out.push(e);
    }
    out
}

pub(crate) fn check_api(errs: &mut Errors, path: &str, api: &str) -> Option<&'static dyn Protocol> {
    let found = protocol::find(api).ok();
    if found.is_none() {
        errs.at(
            path,
            format!(
                "unknown API '{api}'; expected one of {}",
                protocol::names().join(", ")
            ),
        );
    }
    found
}

pub(crate) fn check_dataset(errs: &mut Errors, path: &str, spec: &str) -> Option<DatasetSpec> {
    DatasetSpec::parse(spec)
        .map_err(|e| errs.at(path, unflag(e, "--dataset")))
        .ok()
}
