//! Writes a complete HTTP/1.1 request (head and body) into a caller buffer.
//! Requests are serialized once before a run, so this is off the hot path;
//! it still writes into a reused `Vec` instead of building strings.

/// Appends `METHOD path HTTP/1.1`, `Host`, each extra header, `Content-Type:
/// application/json` and `Content-Length` (when `body` is non-empty), a blank
/// line and `body` to `out`. Header names and values are written verbatim;
/// callers reject CR/LF in user-supplied headers before calling.
pub(crate) fn write_request(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_with_body_and_headers() {
        let mut out = Vec::new();
        let body = br#"{"model":"m","stream":true}"#;
        write_request(
            &mut out,
            "POST",
            "127.0.0.1:8000",
            "/v1/chat/completions",
            &[
                ("Authorization", "Bearer sk-x"),
                ("Accept", "text/event-stream"),
            ],
            body,
        );
        let want = "POST /v1/chat/completions HTTP/1.1\r\n\
                    Host: 127.0.0.1:8000\r\n\
                    Authorization: Bearer sk-x\r\n\
                    Accept: text/event-stream\r\n\
                    Content-Type: application/json\r\n\
                    Content-Length: 27\r\n\
                    \r\n\
                    {\"model\":\"m\",\"stream\":true}";
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn get_without_body_has_no_length() {
        let mut out = b"previous".to_vec();
        write_request(&mut out, "GET", "h", "/v1/models", &[], b"");
        assert_eq!(out, b"previousGET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    /// What the writer produces, a real HTTP parser reads back.
    #[test]
    fn parses_back() {
        let mut out = Vec::new();
        let body = vec![b'x'; 12345];
        write_request(
            &mut out,
            "POST",
            "example.com",
            "/generate",
            &[("X-A", "1")],
            &body,
        );
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut req = httparse::Request::new(&mut headers);
        let httparse::Status::Complete(len) = req.parse(&out).unwrap() else {
            panic!("partial");
        };
        assert_eq!(
            (req.method, req.path, req.version),
            (Some("POST"), Some("/generate"), Some(1))
        );
        let find = |name: &str| req.headers.iter().find(|h| h.name == name).map(|h| h.value);
        assert_eq!(find("Host"), Some(&b"example.com"[..]));
        assert_eq!(find("X-A"), Some(&b"1"[..]));
        assert_eq!(find("Content-Length"), Some(&b"12345"[..]));
        assert_eq!(&out[len..], &body[..]);
    }
}
