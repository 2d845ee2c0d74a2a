//! A one-off blocking `GET /v1/models`, to find the model to benchmark when
//! none is named (bench) and to list what an endpoint serves (probe). Setup
//! code, not the hot path: the blocking client in `http::blocking` and
//! serde_json.

use std::time::Duration;

use crate::http::blocking;
use crate::http::endpoint::Endpoint;

/// The first model id the endpoint lists.
pub(crate) fn first_model(endpoint: &Endpoint, timeout: Duration) -> Result<String, String> {
    let timeout = timeout.min(Duration::from_secs(5));
    let resp = blocking::get(
        endpoint,
        "/v1/models",
        &[("Accept", "application/json")],
        timeout,
    )
    .map_err(|e| e.to_string())?;
    if resp.status != 200 {
        return Err(format!("HTTP {}", resp.status));
    }
    model_ids(&resp.body)?
        .into_iter()
        .next()
        .ok_or_else(|| "no model listed".to_string())
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
}
