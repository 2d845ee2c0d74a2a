//! The `--endpoint` URL: `http[s]://host[:port][/path][?query]`, resolved to
//! a socket address once, in the parent, before any worker is forked. An
//! `https` endpoint's TLS settings (trust, names, client certificate) are
//! not in the URL: they come from their own flags and profile fields
//! (`crate::tls::TlsSettings`).
//!
//! A URL can carry credentials: a key in its query (`?key=…`, as Google's
//! APIs take one) or a `user:password@` before the host. The query is sent
//! as written, but wherever a URL is echoed (the start line, the summary,
//! the report, probe's output, error messages) it goes through
//! [`redact_url`], which masks every query value; userinfo is refused, since
//! it is not how any LLM API takes a key and would otherwise be misread as
//! part of the host.

use std::net::{SocketAddr, ToSocketAddrs};

use super::headers::REDACTED;

/// A resolved endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The URL as the user gave it (or as built for the built-in server).
    /// Its query may hold a key: echo [`Endpoint::display`] instead.
    pub url: String,
    /// The `Host` header value: host, and port when not 80.
    pub host: String,
    /// The request target: the path, and the URL's query when it has one.
    pub path: String,
    pub addr: SocketAddr,
    /// `https`: requests go over TLS.
    pub tls: bool,
    /// The host as written in the URL, without port or brackets: the name
    /// TLS verifies and sends as SNI (unless `--tls-server-name` says).
    pub hostname: String,
}

/// A URL split into what an `Endpoint` needs, before resolving.
struct Parts<'a> {
    host: &'a str,
    port: u16,
    tls: bool,
    /// The `Host` header value.
    host_header: String,
    path: String,
}

/// Splits `url`; errors quote it redacted.
fn split<'a>(url: &'a str, default_path: &str) -> Result<Parts<'a>, String> {
    let shown = redact_url(url);
    let (rest, tls) = if let Some(rest) = url.strip_prefix("http://") {
        (rest, false)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (rest, true)
    } else {
        return Err(format!(
            "--endpoint '{shown}': expected http://host:port[/path] or https://host[:port][/path]"
        ));
    };
    let default_port = if tls { 443 } else { 80 };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, target) = rest.split_at(end);
    if authority.contains('@') {
        return Err(format!(
            "--endpoint '{shown}': credentials in the URL (user:password@host) are not supported; \
             send a key with --api-key, --api-key-file or --header"
        ));
    }
    if authority.is_empty() {
        return Err(format!("--endpoint '{shown}': no host"));
    }
    // The path up to its query; none (or `/`) takes the API's default. A
    // path ending in `/v1` is a base URL, as OpenAI's SDKs take one
    // (`base_url`): the API's own path goes under it.
    let q = target.find(['?', '#']).unwrap_or(target.len());
    let (path, query) = target.split_at(q);
    let base = path.trim_end_matches('/');
    let path = if path.is_empty() || path == "/" {
        format!("{default_path}{query}")
    } else if let (true, Some(under)) = (base.ends_with("/v1"), default_path.strip_prefix("/v1/")) {
        format!("{base}/{under}{query}")
    } else {
        target.to_string()
    };
    let (host, port) = split_host_port(authority, default_port)
        .ok_or_else(|| format!("--endpoint '{shown}': bad port in '{authority}'"))?;
    if host.is_empty() {
        return Err(format!("--endpoint '{shown}': no host"));
    }
    let host_header = if port == default_port {
        host.to_string()
    } else {
        format!(
            "{}:{port}",
            authority.rsplit_once(':').map_or(authority, |(h, _)| h)
        )
    };
    Ok(Parts {
        host,
        port,
        tls,
        host_header,
        path,
    })
}

impl Endpoint {
    /// Parses and resolves `url`; `default_path` is used when it has none.
    pub(crate) fn parse(url: &str, default_path: &str) -> Result<Endpoint, String> {
        let p = split(url, default_path)?;
        let shown = redact_url(url);
        let host = p.host;
        let addr = (host, p.port)
            .to_socket_addrs()
            .map_err(|e| format!("--endpoint '{shown}': cannot resolve '{host}': {e}"))?
            .next()
            .ok_or_else(|| format!("--endpoint '{shown}': '{host}' has no address"))?;
        Ok(Endpoint {
            url: url.to_string(),
            host: p.host_header,
            path: p.path,
            addr,
            tls: p.tls,
            hostname: p.host.to_string(),
        })
    }

    /// As `parse`, but a host name that does not resolve is not an error:
    /// the endpoint's address is then unspecified (`0.0.0.0`), and its
    /// requests fail as `dns_error` instead of the run refusing to start.
    pub(crate) fn parse_lenient(url: &str, default_path: &str) -> Result<Endpoint, String> {
        match Endpoint::parse(url, default_path) {
            Err(e) if e.contains("cannot resolve") || e.contains("has no address") => {
                let p = split(url, default_path)?;
                Ok(Endpoint {
                    url: url.to_string(),
                    host: p.host_header,
                    path: p.path,
                    addr: SocketAddr::from(([0, 0, 0, 0], p.port)),
                    tls: p.tls,
                    hostname: p.host.to_string(),
                })
            }
            other => other,
        }
    }

    /// Whether the host resolved (see `parse_lenient`).
    pub(crate) fn resolved(&self) -> bool {
        !self.addr.ip().is_unspecified()
    }

    /// Whether requests stay on this machine, so a credential sent in clear
    /// text cannot be read on the network. An unresolved host is not.
    pub(crate) fn is_loopback(&self) -> bool {
        self.resolved() && self.addr.ip().to_canonical().is_loopback()
    }

    /// The URL as it may be echoed: query values masked.
    pub(crate) fn display(&self) -> String {
        redact_url(&self.url)
    }

    /// The URL's query, `?` included, or `""`: sent with every request to
    /// the endpoint's server (`/v1/models` too), since it may hold the key.
    pub(crate) fn query(&self) -> &str {
        self.path.find('?').map_or("", |i| &self.path[i..])
    }

    /// The endpoint of a server listening at `addr` (the built-in one).
    pub(crate) fn local(addr: SocketAddr, path: &str) -> Endpoint {
        Endpoint {
            url: format!("http://{addr}{path}"),
            host: addr.to_string(),
            path: path.to_string(),
            addr,
            tls: false,
            hostname: addr.ip().to_string(),
        }
    }
}

/// `url` as it may be echoed anywhere: each query value (and a fragment)
/// replaced by [`REDACTED`], names kept (`?key=<redacted>&v=<redacted>`),
/// and `user:password@` before the host masked whole. Works on any text,
/// URL or not, so error messages can quote what they were given.
pub(crate) fn redact_url(url: &str) -> String {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = url.split_at(scheme_end);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, target) = rest.split_at(end);
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(REDACTED);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let q = target.find(['?', '#']).unwrap_or(target.len());
    let (path, query) = target.split_at(q);
    out.push_str(path);
    if let Some(frag) = query.strip_prefix('#') {
        out.push('#');
        if !frag.is_empty() {
            out.push_str(REDACTED);
        }
        return out;
    }
    if let Some(query) = query.strip_prefix('?') {
        out.push('?');
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((name, v)) => {
                    out.push_str(name);
                    out.push('=');
                    if !v.is_empty() {
                        out.push_str(REDACTED);
                    }
                }
                // A bare item may be the key itself.
                None if !pair.is_empty() => out.push_str(REDACTED),
                None => {}
            }
        }
    }
    out
}

/// Splits `host[:port]`, with `[v6]:port` brackets; the port defaults to
/// the scheme's.
fn split_host_port(authority: &str, default_port: u16) -> Option<(&str, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) => Some((host, p.parse().ok()?)),
            None if after.is_empty() => Some((host, default_port)),
            None => None,
        };
    }
    match authority.rsplit_once(':') {
        Some((host, p)) => Some((host, p.parse().ok()?)),
        None => Some((authority, default_port)),
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
    fn a_base_url_ending_in_v1_takes_the_apis_path_under_it() {
        for (url, path) in [
            ("http://127.0.0.1:8000/v1", "/v1/chat/completions"),
            ("http://127.0.0.1:8000/v1/", "/v1/chat/completions"),
            (
                "http://127.0.0.1:8000/v1?key=k",
                "/v1/chat/completions?key=k",
            ),
            (
                "http://127.0.0.1:8000/openai/v1",
                "/openai/v1/chat/completions",
            ),
            (
                "http://127.0.0.1:8000/v1/chat/completions",
                "/v1/chat/completions",
            ),
            ("http://127.0.0.1:8000/v2", "/v2"),
        ] {
            let e = Endpoint::parse(url, "/v1/chat/completions").unwrap();
            assert_eq!(e.path, path, "{url}");
        }
        // An API whose path is not under /v1 (SGLang's /generate) is sent
        // where the URL says.
        let e = Endpoint::parse("http://127.0.0.1:8000/v1", "/generate").unwrap();
        assert_eq!(e.path, "/v1");
    }

    #[test]
    fn a_query_is_sent_but_never_echoed() {
        let e = Endpoint::parse("http://127.0.0.1:9/v1/x?key=QSECRET&v=2", "/d").unwrap();
        assert_eq!(e.path, "/v1/x?key=QSECRET&v=2");
        assert_eq!(e.query(), "?key=QSECRET&v=2");
        assert_eq!(
            e.display(),
            "http://127.0.0.1:9/v1/x?key=<redacted>&v=<redacted>"
        );
        // No path before the query: the API's default path carries it.
        let e = Endpoint::parse("http://127.0.0.1:9?key=Q", "/d").unwrap();
        assert_eq!(
            (e.path.as_str(), e.host.as_str()),
            ("/d?key=Q", "127.0.0.1:9")
        );
        let e = Endpoint::parse("http://127.0.0.1:9/?key=Q", "/d").unwrap();
        assert_eq!(e.path, "/d?key=Q");
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:9/p", "/d")
                .unwrap()
                .query(),
            ""
        );
        let e = Endpoint::parse_lenient("http://no-such-host.invalid/p?key=Q", "/d").unwrap();
        assert!(!e.resolved() && !e.is_loopback());
        assert_eq!(e.path, "/p?key=Q");
    }

    #[test]
    fn urls_are_redacted_for_echoing() {
        for (url, want) in [
            ("http://h:1/p", "http://h:1/p"),
            (
                "http://h/p?key=S1&x=&y",
                "http://h/p?key=<redacted>&x=&<redacted>",
            ),
            ("http://h/p?S1", "http://h/p?<redacted>"),
            ("http://h?key=S1", "http://h?key=<redacted>"),
            ("http://h/p#S1", "http://h/p#<redacted>"),
            ("http://u:S1@h:1/p", "http://<redacted>@h:1/p"),
            ("u:S1@h/p?k=S2", "<redacted>@h/p?k=<redacted>"),
            ("", ""),
        ] {
            let got = redact_url(url);
            assert_eq!(got, want, "{url}");
        }
        assert!(!redact_url("http://a@b:S1@h/").contains("S1"));
    }

    #[test]
    fn userinfo_is_refused_without_echoing_it() {
        for url in [
            "http://user:PWSECRET@127.0.0.1:9/v1",
            "http://PWSECRET@127.0.0.1:9",
            "http://user:PWSECRET@127.0.0.1:9?key=QSECRET",
        ] {
            let e = Endpoint::parse_lenient(url, "/d").unwrap_err();
            assert!(e.contains("credentials in the URL"), "{e}");
            assert!(!e.contains("SECRET"), "{e}");
        }
        // An @ after the host is the path's or the query's business.
        let e = Endpoint::parse("http://127.0.0.1:9/a@b?c=d@e", "/d").unwrap();
        assert_eq!(e.path, "/a@b?c=d@e");
    }

    #[test]
    fn https_takes_port_443_and_keeps_the_name() {
        let e = Endpoint::parse("https://localhost/v1/x", "/d").unwrap();
        assert!(e.tls);
        assert_eq!(e.addr.port(), 443);
        assert_eq!(
            (e.host.as_str(), e.hostname.as_str()),
            ("localhost", "localhost")
        );
        let e = Endpoint::parse("https://localhost:8443", "/d").unwrap();
        assert_eq!((e.host.as_str(), e.addr.port()), ("localhost:8443", 8443));
        let e = Endpoint::parse("https://[::1]:80/p", "/d").unwrap();
        assert_eq!((e.host.as_str(), e.hostname.as_str()), ("[::1]:80", "::1"));
        assert!(!Endpoint::parse("http://localhost:9", "/d").unwrap().tls);
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(Endpoint::parse("ftp://x", "/").is_err());
        assert!(Endpoint::parse("http://:80", "/").is_err());
        assert!(
            Endpoint::parse("http://h:notaport", "/")
                .unwrap_err()
                .contains("bad port")
        );
        let e = Endpoint::parse("ftp://h/p?key=QSECRET", "/").unwrap_err();
        assert!(!e.contains("QSECRET"), "{e}");
        let e = Endpoint::parse("http://h:bad?key=QSECRET", "/").unwrap_err();
        assert!(e.contains("bad port") && !e.contains("QSECRET"), "{e}");
    }

    #[test]
    fn loopback_is_told_apart() {
        let l = |u: &str| Endpoint::parse(u, "/").unwrap().is_loopback();
        assert!(l("http://127.0.0.1:9") && l("http://[::1]:9") && l("http://localhost:9"));
        assert!(!l("http://10.1.2.3:9"));
    }
}
