//! The error taxonomy: a small `Copy` enum the worker sets on the hot path,
//! counted in fixed arrays (by class, and by HTTP status code), and named only
//! when a report is written. Generator-side saturation (descriptor or port
//! exhaustion) is a class of its own so it is never read as a server fault.

/// Why a request failed. `repr(u8)` because it travels in completion records.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ErrorClass {
    /// The request succeeded.
    None = 0,
    /// The endpoint refused the TCP connection (nothing listening).
    ConnectRefused = 1,
    /// No TCP connection within `--connect-timeout`.
    ConnectTimeout = 2,
    /// Any other connect failure (unreachable network or host).
    ConnectError = 3,
    /// The peer reset or closed the connection before the response ended.
    Reset = 4,
    /// The response did not end within `--timeout` of the send.
    RequestTimeout = 5,
    /// A complete response with a non-2xx status (the code is kept beside it).
    HttpStatus = 6,
    /// Bytes that are not a valid HTTP response or body framing.
    MalformedResponse = 7,
    /// Still in flight when the drain after an interrupt ran out.
    Aborted = 8,
    /// The worker process carrying the request died.
    WorkerLost = 9,
    /// A socket error not covered above.
    Io = 10,
    /// Generator saturation: the process ran out of file descriptors.
    FdExhausted = 11,
    /// Generator saturation: no free local port for a new connection.
    PortsExhausted = 12,
    /// A success status whose body or stream carried an error (an SSE
    /// `error` event, or a JSON error object).
    InBandError = 13,
    /// No first token within `ttft_timeout` of the send.
    TtftTimeout = 14,
    /// A success whose content failed one of the scenario's checks.
    CheckFailed = 15,
    /// The endpoint's host name did not resolve.
    Dns = 16,
    /// A success status whose body is not the API's response shape: an HTML
    /// page from a proxy, an empty body, JSON without the API's fields, or a
    /// plain body where an event stream was asked for.
    NoOutput = 17,
    /// A stream the server ended (closed the connection) before `[DONE]` or
    /// a finish reason, so the output may be cut short.
    Truncated = 18,
    /// A multi-turn reply longer than the kept-text cap: the conversation
    /// cannot carry it into the next turn's history, so the turn fails. Also
    /// a non-streamed body the worker had no room for in its byte budget.
    OutputOverCap = 19,
    /// The TLS handshake failed (unknown issuer, name mismatch, expired
    /// certificate, no common protocol version, an alert from the server, or
    /// a server that does not speak TLS); the reason is the error message.
    TlsHandshake = 20,
    /// A TLS failure after the handshake: a record that does not decrypt or
    /// parse, or an alert mid-response.
    TlsError = 21,
}

/// Number of `ErrorClass` values, for fixed arrays indexed by class.
pub(crate) const CLASSES: usize = 22;

impl ErrorClass {
    pub(crate) const ALL: [ErrorClass; CLASSES] = [
        ErrorClass::None,
        ErrorClass::ConnectRefused,
        ErrorClass::ConnectTimeout,
        ErrorClass::ConnectError,
        ErrorClass::Reset,
        ErrorClass::RequestTimeout,
        ErrorClass::HttpStatus,
        ErrorClass::MalformedResponse,
        ErrorClass::Aborted,
        ErrorClass::WorkerLost,
        ErrorClass::Io,
        ErrorClass::FdExhausted,
        ErrorClass::PortsExhausted,
        ErrorClass::InBandError,
        ErrorClass::TtftTimeout,
        ErrorClass::CheckFailed,
        ErrorClass::Dns,
        ErrorClass::NoOutput,
        ErrorClass::Truncated,
        ErrorClass::OutputOverCap,
        ErrorClass::TlsHandshake,
        ErrorClass::TlsError,
    ];

    /// The class's key in reports; HTTP statuses are named `http_<code>`
    /// by `ErrorCounts` instead.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ErrorClass::None => "none",
            ErrorClass::ConnectRefused => "connect_refused",
            ErrorClass::ConnectTimeout => "connect_timeout",
            ErrorClass::ConnectError => "connect_error",
            ErrorClass::Reset => "reset",
            ErrorClass::RequestTimeout => "request_timeout",
            ErrorClass::HttpStatus => "http_status",
            ErrorClass::MalformedResponse => "malformed_response",
            ErrorClass::Aborted => "aborted",
            ErrorClass::WorkerLost => "worker_lost",
            ErrorClass::Io => "io_error",
            ErrorClass::FdExhausted => "fd_exhausted",
            ErrorClass::PortsExhausted => "ports_exhausted",
            ErrorClass::InBandError => "inband_error",
            ErrorClass::TtftTimeout => "ttft_timeout",
            ErrorClass::CheckFailed => "check_failed",
            ErrorClass::Dns => "dns_error",
            ErrorClass::NoOutput => "no_output",
            ErrorClass::Truncated => "truncated",
            ErrorClass::OutputOverCap => "output_over_cap",
            ErrorClass::TlsHandshake => "tls_handshake",
            ErrorClass::TlsError => "tls_error",
        }
    }

    /// Decodes the byte a completion record carries; unknown bytes are `Io`
    /// so a corrupt record is still counted as a failure.
    pub(crate) fn from_u8(b: u8) -> ErrorClass {
        ErrorClass::ALL
            .get(b as usize)
            .copied()
            .unwrap_or(ErrorClass::Io)
    }

    /// The report key of a failure: the class name, or `http_<code>`.
    pub(crate) fn key(self, status: u16) -> String {
        if self == ErrorClass::HttpStatus {
            format!("http_{}", (status as usize).min(STATUSES - 1))
        } else {
            self.name().to_string()
        }
    }

    /// The class and status a report key names (`reset`, `http_503`);
    /// `None` for a key this version does not know.
    pub(crate) fn from_key(key: &str) -> Option<(ErrorClass, u16)> {
        if let Some(code) = key.strip_prefix("http_") {
            let code: u16 = code.parse().ok()?;
            return (usize::from(code) < STATUSES).then_some((ErrorClass::HttpStatus, code));
        }
        let class = ErrorClass::ALL.iter().find(|c| c.name() == key)?;
        (*class != ErrorClass::HttpStatus).then_some((*class, 0))
    }

    /// Where a report key sorts in `ErrorCounts::named` order: by class,
    /// `http_<code>` in place of `http_status` by code, and keys this
    /// version does not know after all of them.
    pub(crate) fn report_order(key: &str) -> (usize, u16) {
        if let Some(code) = key.strip_prefix("http_").and_then(|c| c.parse().ok()) {
            return (ErrorClass::HttpStatus as usize, code);
        }
        match ErrorClass::ALL.iter().find(|c| c.name() == key) {
            Some(c) => (*c as usize, 0),
            None => (CLASSES, 0),
        }
    }
}

/// HTTP status codes are three digits; anything else is folded into 999.
const STATUSES: usize = 1000;

/// Failure counts by class and, for `HttpStatus`, by code.
#[derive(Clone, Debug)]
pub(crate) struct ErrorCounts {
    by_class: [u64; CLASSES],
    by_status: Box<[u64; STATUSES]>,
}

impl Default for ErrorCounts {
    fn default() -> Self {
        ErrorCounts {
            by_class: [0; CLASSES],
            by_status: Box::new([0; STATUSES]),
        }
    }
}

impl ErrorCounts {
    pub(crate) fn record(&mut self, class: ErrorClass, status: u16) {
        self.add(class, status, 1);
    }

    pub(crate) fn add(&mut self, class: ErrorClass, status: u16, n: u64) {
        if class == ErrorClass::HttpStatus {
            self.by_status[(status as usize).min(STATUSES - 1)] += n;
        }
        self.by_class[class as usize] += n;
    }

    pub(crate) fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.by_class.iter_mut().zip(other.by_class.iter()) {
            *a += b;
        }
        for (a, b) in self.by_status.iter_mut().zip(other.by_status.iter()) {
            *a += b;
        }
    }

    /// The counts `named` lists; a key this version does not know is an
    /// error naming it.
    pub(crate) fn from_named<'a>(
        named: impl IntoIterator<Item = (&'a str, u64)>,
    ) -> Result<ErrorCounts, String> {
        let mut e = ErrorCounts::default();
        for (key, n) in named {
            let (class, status) =
                ErrorClass::from_key(key).ok_or_else(|| format!("unknown error key {key:?}"))?;
            e.add(class, status, n);
        }
        Ok(e)
    }

    pub(crate) fn get(&self, class: ErrorClass) -> u64 {
        self.by_class[class as usize]
    }

    #[cfg(test)]
    pub(crate) fn status(&self, code: u16) -> u64 {
        self.by_status[(code as usize).min(STATUSES - 1)]
    }

    /// Non-zero counts as `(key, count)`, classes in taxonomy order with HTTP
    /// statuses in place of `http_status` as `http_<code>`.
    pub(crate) fn named(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for class in &ErrorClass::ALL[1..] {
            if *class == ErrorClass::HttpStatus {
                for (code, &n) in self.by_status.iter().enumerate() {
                    if n > 0 {
                        out.push((format!("http_{code}"), n));
                    }
                }
            } else if self.get(*class) > 0 {
                out.push((class.name().to_string(), self.get(*class)));
            }
        }
        out
    }
}

/// A map by report key (`reset`, `http_503`), only the keys that occurred,
/// as every rendering names them; a key this version does not know is
/// refused.
impl serde::Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.named())
    }
}

impl<'de> serde::Deserialize<'de> for ErrorCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ErrorCounts, D::Error> {
        let named: std::collections::BTreeMap<String, u64> = serde::Deserialize::deserialize(d)?;
        ErrorCounts::from_named(named.iter().map(|(k, n)| (k.as_str(), *n)))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
impl schemars::JsonSchema for ErrorCounts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorCounts".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut s = <std::collections::BTreeMap<String, u64>>::json_schema(g);
        s.insert(
            "description".into(),
            "Failures by report key (`reset`, `http_503`, …); only keys that occurred.".into(),
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_round_trip_through_u8() {
        for c in ErrorClass::ALL {
            assert_eq!(ErrorClass::from_u8(c as u8), c);
        }
        assert_eq!(ErrorClass::from_u8(200), ErrorClass::Io);
    }

    #[test]
    fn named_counts_statuses_apart() {
        let mut e = ErrorCounts::default();
        e.record(ErrorClass::HttpStatus, 503);
        e.record(ErrorClass::HttpStatus, 503);
        e.record(ErrorClass::HttpStatus, 429);
        e.record(ErrorClass::ConnectRefused, 0);
        let mut other = ErrorCounts::default();
        other.record(ErrorClass::MalformedResponse, 0);
        e.merge(&other);
        assert_eq!(e.by_class[1..].iter().sum::<u64>(), 5);
        assert_eq!(
            e.named(),
            vec![
                ("connect_refused".to_string(), 1),
                ("http_429".to_string(), 1),
                ("http_503".to_string(), 2),
                ("malformed_response".to_string(), 1),
            ]
        );
    }

    #[test]
    fn named_counts_read_back() {
        let mut e = ErrorCounts::default();
        e.add(ErrorClass::HttpStatus, 503, 4);
        e.add(ErrorClass::Reset, 0, 2);
        e.add(ErrorClass::TlsError, 0, 1);
        let named = e.named();
        let back = ErrorCounts::from_named(named.iter().map(|(k, n)| (k.as_str(), *n))).unwrap();
        assert_eq!(back.named(), named);
        assert_eq!(back.get(ErrorClass::HttpStatus), 4);
        assert!(
            ErrorCounts::from_named([("nope", 1)])
                .unwrap_err()
                .contains("nope")
        );
        assert_eq!(ErrorClass::from_key("http_status"), None);
        assert_eq!(ErrorClass::from_key("http_x"), None);
    }

    /// Keys sorted by name (as a JSON object holds them) and then by
    /// `report_order` come back in `named` order.
    #[test]
    fn report_order_restores_taxonomy_order() {
        let mut e = ErrorCounts::default();
        for (i, class) in ErrorClass::ALL[1..].iter().enumerate() {
            e.add(*class, [200, 503, 429, 999][i % 4], i as u64 + 1);
        }
        e.record(ErrorClass::HttpStatus, 404);
        let named = e.named();
        let mut keys: Vec<&str> = named.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort();
        keys.push("from_a_later_version");
        keys.sort_by_key(|k| ErrorClass::report_order(k));
        let mut want: Vec<&str> = named.iter().map(|(k, _)| k.as_str()).collect();
        want.push("from_a_later_version");
        assert_eq!(keys, want);
        assert!(want.contains(&"http_404") && want.contains(&"dns_error"));
    }
}
