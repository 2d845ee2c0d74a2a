//! The cause of a run that `--fail-fast` stopped, in `probe`'s words
//! (`cli::cause`), with the fix: what the engine saw (an error class, the
//! server's message) read against what bench knows of the setup (the
//! address, the API, the model, whether credentials were sent). For an
//! unknown model the endpoint's model list is asked once, so the line can
//! name what is served.

use std::time::Duration;

use super::build::Built;
use crate::cli::cause;
use crate::http::redact::redact;
use crate::metrics::errors::ErrorClass;
use crate::metrics::run::{FailedFast, Incomplete, RunResult};
use crate::protocol::errors::one_line;

/// How long the model list may take, when it is asked.
const MODELS_TIMEOUT: Duration = Duration::from_secs(2);

/// Fills in the cause of `result`'s fail-fast stop, if it stopped so, and
/// returns it.
pub(super) fn explain(result: &mut RunResult, built: &Built<'_>) -> Option<String> {
    let f = result.incomplete_reasons.iter_mut().find_map(|r| match r {
        Incomplete::FailedFast(f) => Some(f),
        _ => None,
    })?;
    let c = cause_of(f, built);
    f.cause = Some(c.clone());
    Some(c)
}

fn cause_of(f: &FailedFast, built: &Built<'_>) -> String {
    let (class, status) = ErrorClass::from_key(&f.error).unwrap_or((ErrorClass::Io, 0));
    let msg = f.message.as_deref().unwrap_or("");
    let ask = built.first.as_ref();
    let url = f.endpoint.as_deref().unwrap_or(&built.url);
    let addr = built
        .endpoints
        .iter()
        .find(|e| e.url == url)
        .and_then(|e| e.addr)
        .or(ask.map(|a| a.endpoint.addr));
    let at = addr.map_or_else(|| url.to_string(), |a| a.to_string());
    let api = ask.map_or("the API", |a| a.api);
    let path = ask.map_or("", |a| a.endpoint.path.as_str());
    let server = if msg.is_empty() {
        String::new()
    } else {
        format!(" (server: {msg})")
    };
    match class {
        ErrorClass::ConnectRefused => cause::refused(at),
        ErrorClass::ConnectError => cause::unreachable(at, msg),
        ErrorClass::Dns => format!("the host name of {url} did not resolve: check the host name"),
        ErrorClass::TlsHandshake => match addr {
            Some(a) => cause::tls_handshake(a, msg),
            None => format!("TLS handshake with {url} failed: {msg}"),
        },
        ErrorClass::HttpStatus if matches!(status, 401 | 403) => format!(
            "POST {path} → {status}: {}{server}",
            cause::auth(ask.is_some_and(|a| a.credentials))
        ),
        ErrorClass::HttpStatus if cause::mentions_model(msg, &built.model, status) => {
            let served = ask.and_then(|a| {
                let headers: Vec<(&str, &str)> = a
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                crate::cli::models::list(&a.endpoint, &headers, MODELS_TIMEOUT, a.tls.as_ref()).ok()
            });
            let served = served.map(|l| {
                l.iter()
                    .map(|m| one_line(&redact(m, &built.secrets), 200))
                    .collect::<Vec<_>>()
            });
            format!(
                "POST {path} → {status}: {}{server}",
                cause::unknown_model(&built.model, served.as_deref())
            )
        }
        ErrorClass::HttpStatus => format!(
            "POST {path} → {status}: {}{server}; llmload probe --endpoint {} shows where it answers",
            cause::not_served(api),
            ask.map_or_else(|| url.to_string(), |a| a.endpoint.display())
        ),
        _ => format!("{}{server}", f.error),
    }
}
