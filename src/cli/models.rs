//! A one-off blocking `GET /v1/models`, to find the model to benchmark when
//! none is named. Setup code, not the hot path: std sockets and serde_json.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::config::endpoint::Endpoint;
use crate::http::response::{BodyKind, parse_head};

/// The first model id the endpoint lists.
pub fn first_model(endpoint: &Endpoint, timeout: Duration) -> Result<String, String> {
    let timeout = timeout.min(Duration::from_secs(5));
    let mut s = TcpStream::connect_timeout(&endpoint.addr, timeout).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let req = format!(
        "GET /v1/models HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        endpoint.host
    );
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(e.to_string()),
        }
        if buf.len() > 4 << 20 {
            return Err("response too large".into());
        }
    }
    let head = parse_head(&buf)
        .map_err(|e| format!("bad response: {e:?}"))?
        .ok_or("incomplete response")?;
    if head.status != 200 {
        return Err(format!("HTTP {}", head.status));
    }
    let body = &buf[head.len..];
    let body = match head.body {
        BodyKind::Chunked => dechunk(body)?,
        _ => body.to_vec(),
    };
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("bad JSON: {e}"))?;
    v["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "no model listed".to_string())
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut d = crate::http::chunked::ChunkedDecoder::default();
    let mut out = Vec::new();
    while !body.is_empty() {
        let step = d.decode(body).map_err(|e| format!("bad chunking: {e:?}"))?;
        out.extend_from_slice(step.data);
        body = &body[step.consumed..];
        if step.done || step.consumed == 0 {
            break;
        }
    }
    Ok(out)
}
