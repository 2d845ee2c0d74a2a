//! Writes a complete HTTP/1.1 request (head and body) into a caller buffer.
//! Requests are serialized once before a run, so this is off the hot path;
//! it still writes into a reused `Vec` instead of building strings.

/// Appends `METHOD path HTTP/1.1`, `Host`, each extra header, `Content-Type:
/// application/json` and `Content-Length` (when `body` is non-empty), a blank
/// line and `body` to `out`. Header names and values are written verbatim;
/// callers reject CR/LF in user-supplied headers before calling.
pub fn write_request(
    out: &mut Vec<u8>,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    for part in [method, " ", path, " HTTP/1.1\r\nHost: ", host, "\r\n"] {
        out.extend_from_slice(part.as_bytes());
    }
    for (name, value) in headers {
        for part in [name, ": ", value, "\r\n"] {
            out.extend_from_slice(part.as_bytes());
        }
    }
    if !body.is_empty() {
        out.extend_from_slice(b"Content-Type: application/json\r\nContent-Length: ");
        out.extend_from_slice(body.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}
