//! The tests' HTTP client: blocking, naive and independent of the
//! library's parsers (httparse for the head, chunk sizes read by hand), so
//! it is an oracle for what the server sends rather than a second copy of
//! its framing. It records when the head and each chunk were complete.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::Value;

use llmload::clock::now_ns;

#[derive(Debug)]
pub(super) struct Resp {
    pub(super) status: u16,
    /// When the head was complete at the client.
    pub(super) head_at: u64,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    /// Chunk payloads with the time each was complete at the client.
    pub(super) chunks: Vec<(Vec<u8>, u64)>,
}

impl Resp {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The SSE events, checking that each chunk holds exactly one.
    pub(super) fn events(&self) -> Vec<String> {
        self.chunks
            .iter()
            .map(|(c, _)| {
                let text = std::str::from_utf8(c).unwrap();
                assert!(
                    text.starts_with("data: ") && text.ends_with("\n\n"),
                    "{text:?}"
                );
                assert_eq!(
                    text.matches("\n\n").count(),
                    1,
                    "one event per chunk: {text:?}"
                );
                text["data: ".len()..text.len() - 2].to_string()
            })
            .collect()
    }

    /// The SSE events as (event name, data), one per chunk, in any format.
    pub(super) fn named_events(&self) -> Vec<(Option<String>, String)> {
        self.chunks
            .iter()
            .map(|(c, _)| {
                let text = std::str::from_utf8(c).unwrap();
                let body = text.strip_suffix("\n\n").expect("event end");
                assert!(!body.contains("\n\n"), "one event per chunk: {text:?}");
                let (name, data) = match body.strip_prefix("event: ") {
                    Some(rest) => {
                        let (name, data) = rest.split_once('\n').expect("data line");
                        (Some(name.to_string()), data)
                    }
                    None => (None, body),
                };
                let data = data.strip_prefix("data: ").expect("data line");
                (name, data.to_string())
            })
            .collect()
    }

    /// Every event's data as JSON, with `[DONE]` as the string "[DONE]".
    pub(super) fn json_events(&self) -> Vec<(Option<String>, Value)> {
        self.named_events()
            .into_iter()
            .map(|(n, d)| {
                let v = if d == "[DONE]" {
                    Value::String(d)
                } else {
                    serde_json::from_str(&d).unwrap_or_else(|e| panic!("{e}: {d}"))
                };
                (n, v)
            })
            .collect()
    }
}

/// A client over a TCP stream, or over any other byte stream (`over`: a
/// TLS one).
pub(super) struct Client<S = TcpStream> {
    pub(super) s: S,
    pub(super) buf: Vec<u8>,
    /// When the latest read returned.
    pub(super) stamp: u64,
}

impl Client {
    pub(super) fn connect(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        Client::over(s)
    }
}

impl<S: Read + Write> Client<S> {
    /// A client over `s`, already connected.
    pub(super) fn over(s: S) -> Self {
        Client {
            s,
            buf: Vec::new(),
            stamp: 0,
        }
    }

    /// Writes `bytes`; returns the time just before the write. The server
    /// cannot hold the request earlier, so a delay it counts from the
    /// request's arrival is never longer than one counted from here (a
    /// stamp taken after the write can land after the server's own start).
    pub(super) fn send(&mut self, bytes: &[u8]) -> u64 {
        let at = now_ns();
        self.s.write_all(bytes).expect("send");
        at
    }

    fn fill(&mut self) -> io::Result<usize> {
        let mut tmp = [0u8; 65536];
        let n = self.s.read(&mut tmp)?;
        self.stamp = now_ns();
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(n)
    }

    fn fill_or_die(&mut self) {
        let n = self.fill().expect("read");
        assert!(
            n > 0,
            "connection closed early; have {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            self.fill_or_die();
        }
        self.buf.drain(..n).collect()
    }

    fn line(&mut self) -> Vec<u8> {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf[..i].to_vec();
                self.buf.drain(..i + 2);
                return line;
            }
            self.fill_or_die();
        }
    }

    pub(super) fn head(&mut self) -> (u16, Vec<(String, String)>) {
        loop {
            let mut hs = [httparse::EMPTY_HEADER; 32];
            let mut r = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(n) = r.parse(&self.buf).expect("HTTP response head") {
                let status = r.code.unwrap();
                let headers = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                self.buf.drain(..n);
                return (status, headers);
            }
            self.fill_or_die();
        }
    }

    pub(super) fn response(&mut self) -> Resp {
        let (status, headers) = self.head();
        let mut r = Resp {
            status,
            head_at: self.stamp,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
        };
        if r.header("transfer-encoding") == Some("chunked") {
            loop {
                let size = usize::from_str_radix(std::str::from_utf8(&self.line()).unwrap(), 16)
                    .expect("chunk size");
                if size == 0 {
                    assert!(self.line().is_empty(), "no trailers expected");
                    break;
                }
                let data = self.take(size);
                assert!(self.line().is_empty(), "CRLF after chunk data");
                r.body.extend_from_slice(&data);
                r.chunks.push((data, self.stamp));
            }
        } else if let Some(n) = r.header("content-length") {
            r.body = self.take(n.parse().unwrap());
        } else {
            while self.fill().expect("read") > 0 {}
            r.body = std::mem::take(&mut self.buf);
        }
        r
    }

    pub(super) fn roundtrip(&mut self, req: &[u8]) -> Resp {
        self.send(req);
        self.response()
    }

    /// Reads until the server closes; true for FIN, false for RST.
    pub(super) fn closed_cleanly(&mut self) -> bool {
        loop {
            match self.fill() {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return false,
                Err(e) => panic!("waiting for close: {e}"),
            }
        }
    }
}
