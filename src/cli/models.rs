//! A one-off blocking `GET /v1/models`, to find the model to benchmark when
//! none is named (bench) and to list what an endpoint serves (probe). Setup
//! code, not the hot path: the blocking client in `http::blocking` and
//! serde_json. The request carries the credentials the run's requests carry,
//! since a server that wants a key for generation usually wants it here too.

use crate::tls::TlsClient;
use std::fmt;
use std::time::Duration;

use crate::http::blocking;
use crate::http::endpoint::Endpoint;
use crate::protocol::errors;

/// Characters of a server's error message kept in ours.
const MESSAGE_CHARS: usize = 200;

/// Why no model was found.
#[derive(Debug)]
pub(crate) enum ModelsError {
    /// 401 or 403: the credentials were refused (or none were sent). A run
    /// with them would fail every request, so this one is fatal.
    Refused { status: u16, message: String },
    /// Anything else: no answer, another status, a body that is no list.
    Other(String),
}

impl fmt::Display for ModelsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelsError::Refused { status, message } if message.is_empty() => {
                write!(f, "HTTP {status}")
            }
            ModelsError::Refused { status, message } => write!(f, "HTTP {status}: {message}"),
            ModelsError::Other(e) => f.write_str(e),
        }
    }
}

/// The model ids the endpoint lists, in order, asked with `headers` (the API's
/// auth header and the run's extra headers) and the endpoint's URL query.
/// Ids and messages come back as the server sent them; a caller printing
/// one to a terminal strips control characters first.
pub(crate) fn list(
    endpoint: &Endpoint,
    headers: &[(&str, &str)],
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<Vec<String>, ModelsError> {
    let timeout = timeout.min(Duration::from_secs(5));
    let mut all = vec![("Accept", "application/json")];
    all.extend_from_slice(headers);
    let path = format!("/v1/models{}", endpoint.query());
    let resp = blocking::get(endpoint, &path, &all, timeout, tls)
        .map_err(|e| ModelsError::Other(e.to_string()))?;
    match resp.status {
        200 => {}
        401 | 403 => {
            let message = if resp.body.is_empty() {
                String::new()
            } else {
                errors::readable(&resp.body, MESSAGE_CHARS)
            };
            return Err(ModelsError::Refused {
                status: resp.status,
                message,
            });
        }
        s => return Err(ModelsError::Other(format!("HTTP {s}"))),
    }
    model_ids(&resp.body).map_err(ModelsError::Other)
}

/// The first model id the endpoint lists (see [`list`]).
pub(crate) fn first_model(
    endpoint: &Endpoint,
    headers: &[(&str, &str)],
    timeout: Duration,
    tls: Option<&TlsClient>,
) -> Result<String, ModelsError> {
    list(endpoint, headers, timeout, tls)?
        .into_iter()
        .next()
        .ok_or_else(|| ModelsError::Other("no model listed".to_string()))
}

/// The ids of a `/v1/models` body (`{"data": [{"id": ...}, ...]}`), in order.
pub(crate) fn model_ids(body: &[u8]) -> Result<Vec<String>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
    let data = v["data"].as_array().ok_or("no \"data\" array of models")?;
    Ok(data
        .iter()
        .filter_map(|m| m["id"].as_str().map(str::to_string))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_order() {
        let body = br#"{"object":"list","data":[{"id":"a","object":"model"},{"id":"b"},{"x":1}]}"#;
        assert_eq!(model_ids(body).unwrap(), ["a", "b"]);
        assert_eq!(model_ids(br#"{"data":[]}"#).unwrap(), Vec::<String>::new());
        assert!(model_ids(b"<html>").is_err());
        assert!(model_ids(br#"{"models":[]}"#).is_err());
    }

    #[test]
    fn the_first_model_is_found_over_tls() {
        use crate::http::blocking::tests::{client, pki, serve_tls, trusting};
        let p = pki("models");
        let config = crate::tls::server::config(&p.cert, &p.key, None, true).unwrap();
        let answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"data\":[{\"id\":\"tls-model\"}]}";
        let addr = serve_tls(config, 2, answer);
        let e = Endpoint::local(addr, "/");
        let tls = client(trusting(&p));
        let got = first_model(&e, &[], Duration::from_secs(5), Some(&tls));
        assert_eq!(got.unwrap(), "tls-model");
        // Unverifiable: the reason comes back for the caller's warning.
        let stranger = client(crate::tls::TlsSettings {
            ca_cert: Some(p.other_ca.clone()),
            ..Default::default()
        });
        let e = first_model(
            &Endpoint::local(addr, "/"),
            &[],
            Duration::from_secs(5),
            Some(&stranger),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("TLS handshake failed: unknown issuer"), "{e}");
    }
}
