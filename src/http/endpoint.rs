//! The `--endpoint` URL: `http://host[:port][/path]`, resolved to a socket
//! address once, in the parent, before any worker is forked.

use std::net::{SocketAddr, ToSocketAddrs};

/// A resolved endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The URL as the user gave it (or as built for the built-in server).
    pub url: String,
    /// The `Host` header value: host, and port when not 80.
    pub host: String,
    pub path: String,
    pub addr: SocketAddr,
}

impl Endpoint {
    /// Parses and resolves `url`; `default_path` is used when it has none.
    pub(crate) fn parse(url: &str, default_path: &str) -> Result<Endpoint, String> {
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(format!(
                "--endpoint '{url}': https is not supported yet; use http:// (e.g. through a local TLS-terminating proxy)"
            ));
        } else {
            return Err(format!(
                "--endpoint '{url}': expected http://host:port[/path]"
            ));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(format!("--endpoint '{url}': no host"));
        }
        let path = if path.is_empty() || path == "/" {
            default_path.to_string()
        } else {
            path.to_string()
        };
        let (host, port) = split_host_port(authority)
            .ok_or_else(|| format!("--endpoint '{url}': bad port in '{authority}'"))?;
        let addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("--endpoint '{url}': cannot resolve '{host}': {e}"))?
            .next()
            .ok_or_else(|| format!("--endpoint '{url}': '{host}' has no address"))?;
        let host_header = if port == 80 {
            host.to_string()
        } else {
            format!(
                "{}:{port}",
                authority.rsplit_once(':').map_or(authority, |(h, _)| h)
            )
        };
        Ok(Endpoint {
            url: url.to_string(),
            host: host_header,
            path,
            addr,
        })
    }

    /// As `parse`, but a host name that does not resolve is not an error:
    /// the endpoint's address is then unspecified (`0.0.0.0`), and its
    /// requests fail as `dns_error` instead of the run refusing to start.
    pub(crate) fn parse_lenient(url: &str, default_path: &str) -> Result<Endpoint, String> {
        match Endpoint::parse(url, default_path) {
            Err(e) if e.contains("cannot resolve") || e.contains("has no address") => {
                let rest = url.strip_prefix("http://").unwrap_or(url);
                let authority = rest.split('/').next().unwrap_or(rest);
                let (host, port) = split_host_port(authority).ok_or(e)?;
                let path = match rest.find('/') {
                    Some(i) if &rest[i..] != "/" => rest[i..].to_string(),
                    _ => default_path.to_string(),
                };
                Ok(Endpoint {
                    url: url.to_string(),
                    host: if port == 80 {
                        host.to_string()
                    } else {
                        format!("{host}:{port}")
                    },
                    path,
                    addr: SocketAddr::from(([0, 0, 0, 0], port)),
                })
            }
            other => other,
        }
    }

    /// Whether the host resolved (see `parse_lenient`).
    pub(crate) fn resolved(&self) -> bool {
        !self.addr.ip().is_unspecified()
    }

    /// The endpoint of a server listening at `addr` (the built-in one).
    pub(crate) fn local(addr: SocketAddr, path: &str) -> Endpoint {
        Endpoint {
            url: format!("http://{addr}{path}"),
            host: addr.to_string(),
            path: path.to_string(),
            addr,
        }
    }
}

/// Splits `host[:port]`, with `[v6]:port` brackets; the port defaults to 80.
fn split_host_port(authority: &str) -> Option<(&str, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) => Some((host, p.parse().ok()?)),
            None if after.is_empty() => Some((host, 80)),
            None => None,
        };
    }
    match authority.rsplit_once(':') {
        Some((host, p)) => Some((host, p.parse().ok()?)),
        None => Some((authority, 80)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        let e = Endpoint::parse("http://127.0.0.1:8000", "/v1/chat/completions").unwrap();
        assert_eq!(e.path, "/v1/chat/completions");
        assert_eq!(e.host, "127.0.0.1:8000");
        assert_eq!(e.addr, "127.0.0.1:8000".parse().unwrap());
        let e = Endpoint::parse("http://localhost:9/x/y", "/d").unwrap();
        assert_eq!(e.path, "/x/y");
        assert_eq!(e.host, "localhost:9");
        assert_eq!(e.addr.port(), 9);
        let e = Endpoint::parse("http://[::1]:81/", "/d").unwrap();
        assert_eq!(e.addr, "[::1]:81".parse().unwrap());
        assert_eq!(e.path, "/d");
        let e = Endpoint::parse("http://127.0.0.1", "/d").unwrap();
        assert_eq!(e.addr.port(), 80);
        assert_eq!(e.host, "127.0.0.1");
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(
            Endpoint::parse("https://x", "/")
                .unwrap_err()
                .contains("https")
        );
        assert!(Endpoint::parse("ftp://x", "/").is_err());
        assert!(Endpoint::parse("http://:80", "/").is_err());
        assert!(
            Endpoint::parse("http://h:notaport", "/")
                .unwrap_err()
                .contains("bad port")
        );
    }
}
