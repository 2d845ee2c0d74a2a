//! The probe's report: the checks as three small tables (connect, TLS and
//! models, the known API paths, the chosen API streamed and not) followed
//! by the findings, one line each; or all of it as one `--json` document.
//! Both only format what the checks and findings already hold, so they say
//! the same things; no finding is drawn here.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::diagnose::{Class, Verdict, classify, days_left, note, resumptions};
use super::exchange::{Check, Kind};
use super::{CHOSEN_TOKENS, DISCOVERY_TOKENS, Report};
use crate::cli::cause::list_some;
use crate::protocol::Finish;
use crate::report::fmt::{Whole, num};

/// Milliseconds with three significant digits or so, as the report prints them.
pub(super) fn ms(d: Duration) -> String {
    format!("{} ms", num(d.as_secs_f64() * 1e3, 3, Whole::Decimals))
}

/// Milliseconds to the microsecond, for `--json`.
fn ms_json(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| {
        json!((d.as_secs_f64() * 1e6).round() / 1e3)
    })
}

impl Report {
    /// The report a person reads.
    pub(super) fn render(&self) -> String {
        let mut o = String::new();
        let model = self.model.as_deref().unwrap_or("");
        let _ = write!(o, "llmload probe — {} ({}", self.url, self.api);
        if !model.is_empty() {
            let _ = write!(o, ", model {model}");
        }
        o.push_str(")\n\n");
        let dash = || "-".to_string();
        for c in &self.checks {
            match c.kind {
                Kind::Connect => {
                    let _ = writeln!(
                        o,
                        "connect   {:<22} {:>6} {:>10}  {}",
                        self.addr.as_deref().unwrap_or(""),
                        "",
                        c.latency.map_or_else(dash, ms),
                        c.failure.as_ref().map_or("", |f| f.short.as_str())
                    );
                    if let Some(setup) = &c.setup
                        && let Some(tls) = &setup.tls
                    {
                        let _ = writeln!(
                            o,
                            "tls       {:<22} {:>6} {:>10}  {}, ALPN {}{}",
                            tls.version,
                            "",
                            setup.tls_handshake.map_or_else(dash, ms),
                            tls.cipher_suite,
                            tls.alpn.as_deref().unwrap_or("none"),
                            if tls.insecure {
                                ", server certificate NOT verified (--insecure)"
                            } else {
                                ", server certificate verified"
                            }
                        );
                        if let Some(cert) = &tls.cert {
                            let _ = writeln!(o, "          subject  {}", cert.subject);
                            let _ = writeln!(o, "          issuer   {}", cert.issuer);
                            let _ = writeln!(
                                o,
                                "          expires  {} ({})",
                                cert.not_after,
                                days_left(cert.days_left)
                            );
                        }
                    }
                }
                Kind::Models => {
                    let what = match (&c.models, &c.failure) {
                        (Some(ids), _) => list_some(ids, 10),
                        (None, Some(f)) => f.short.clone(),
                        (None, None) => note_models(c),
                    };
                    let _ = writeln!(
                        o,
                        "models    {:<22} {:>6} {:>10}  {what}",
                        format!("GET {}", c.path),
                        c.answer
                            .as_ref()
                            .map_or_else(dash, |a| a.status.to_string()),
                        c.latency.map_or_else(dash, ms),
                    );
                }
                _ => {}
            }
        }

        let paths: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| c.kind == Kind::Path)
            .collect();
        if !paths.is_empty() {
            let pw = paths.iter().map(|c| c.path.len()).max().unwrap_or(4).max(4);
            let aw = paths
                .iter()
                .map(|c| c.protocol.map_or(0, |p| p.name().len()))
                .max()
                .unwrap_or(3)
                .max(3);
            let _ = writeln!(
                o,
                "\npaths (POST, not streamed, max_tokens {DISCOVERY_TOKENS})"
            );
            let _ = writeln!(
                o,
                "  {:<pw$}  {:<aw$}  {:>6} {:>10}  found",
                "path", "api", "status", "latency"
            );
            for c in paths {
                let _ = writeln!(
                    o,
                    "  {:<pw$}  {:<aw$}  {:>6} {:>10}  {}",
                    c.path,
                    c.protocol.map_or("", |p| p.name()),
                    c.answer
                        .as_ref()
                        .map_or_else(dash, |a| a.status.to_string()),
                    c.latency.map_or_else(dash, ms),
                    note(c, model)
                );
            }
        }

        let chosen: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| matches!(c.kind, Kind::NonStream | Kind::Stream))
            .collect();
        if let Some(first) = chosen.first() {
            let _ = writeln!(
                o,
                "\n{} at {} (max_tokens {CHOSEN_TOKENS})",
                self.api, first.path
            );
            let _ = writeln!(
                o,
                "  {:<10}  {:>6} {:>10} {:>10} {:>6} {:>7} {:>7}  {:<6} {:<8} note",
                "", "status", "latency", "ttft", "events", "in", "out", "usage", "finish"
            );
            for c in chosen {
                let a = c.answer.as_ref();
                let num = |v: Option<u32>| v.map_or_else(dash, |n| n.to_string());
                let _ = writeln!(
                    o,
                    "  {:<10}  {:>6} {:>10} {:>10} {:>6} {:>7} {:>7}  {:<6} {:<8} {}",
                    if c.stream { "stream" } else { "non-stream" },
                    a.map_or_else(dash, |a| a.status.to_string()),
                    c.latency.map_or_else(dash, ms),
                    a.and_then(|a| a.ttft).map_or_else(dash, ms),
                    a.filter(|a| a.sse)
                        .map_or_else(dash, |a| a.output_events.to_string()),
                    num(a.and_then(|a| a.prompt_tokens)),
                    num(a.and_then(|a| a.completion_tokens)),
                    match a {
                        Some(a) if a.ok() && a.completion_tokens.is_some() => "yes",
                        Some(a) if a.ok() => "no",
                        _ => "-",
                    },
                    a.and_then(|a| a.finish).map_or("-", Finish::name),
                    // The columns say it all for a working request.
                    match a {
                        Some(a) if classify(a, model) == Class::Works && (!c.stream || a.sse) => {
                            String::new()
                        }
                        _ => note(c, model),
                    }
                );
            }
        }

        o.push('\n');
        for v in &self.verdicts {
            let _ = writeln!(o, "{}: {}", v.level.name(), v.text);
        }
        // Empty last columns leave trailing blanks, and absent sections
        // leave blank lines in a row.
        let mut out = String::with_capacity(o.len());
        for line in o.lines().map(str::trim_end) {
            if !(line.is_empty() && out.ends_with("\n\n")) {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// The JSON document of `--json`.
    pub(super) fn to_json(&self) -> Value {
        let model = self.model.as_deref().unwrap_or("");
        let verdict = |v: &Verdict| json!({"level": v.level.name(), "message": v.text});
        let checks: Vec<Value> = self
            .checks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let a = c.answer.as_ref();
                let mut j = json!({
                    "name": c.kind.name(),
                    "method": if c.method.is_empty() { Value::Null } else { json!(c.method) },
                    "path": if c.path.is_empty() { Value::Null } else { json!(c.path) },
                    "api": c.protocol.map(|p| p.name()),
                    "stream": c.stream,
                    "max_tokens": c.max_tokens,
                    "status": a.map(|a| a.status),
                    "latency_ms": ms_json(c.latency),
                    "ttft_ms": ms_json(a.and_then(|a| a.ttft)),
                    "content_type": a.and_then(|a| a.content_type.clone()),
                    "events": a.filter(|a| a.sse).map(|a| a.output_events),
                    "output": a.filter(|a| a.ok() && c.protocol.is_some()).map(|a| a.output),
                    "usage": a.filter(|a| a.completion_tokens.is_some() || a.prompt_tokens.is_some())
                        .map(|a| json!({
                            "prompt_tokens": a.prompt_tokens,
                            "completion_tokens": a.completion_tokens,
                        })),
                    "finish": a.and_then(|a| a.finish).map(Finish::name),
                    "error": a.and_then(|a| a.in_band.clone().or_else(|| a.message.clone())),
                    "failure": c.failure.as_ref().map(|f| f.why.clone()),
                    "note": match c.kind {
                        Kind::Path | Kind::NonStream | Kind::Stream => json!(note(c, model)),
                        _ => Value::Null,
                    },
                    "verdicts": self.verdicts.iter().filter(|v| v.check == Some(i)).map(verdict).collect::<Vec<_>>(),
                });
                if c.kind == Kind::Connect {
                    j["addr"] = json!(self.addr);
                }
                let setup = c.setup.as_ref();
                j["tls_handshake_ms"] = ms_json(setup.and_then(|s| s.tls_handshake));
                j["tls_resumed"] = json!(setup.and_then(|s| s.tls.as_ref()).map(|t| t.resumed));
                if c.kind == Kind::Models {
                    j["models"] = json!(c.models);
                }
                j
            })
            .collect();
        json!({
            "tool": "llmload",
            "command": "probe",
            "version": env!("CARGO_PKG_VERSION"),
            "endpoint": self.url,
            "api": self.api,
            "addr": self.addr,
            "model": self.model,
            "model_source": self.model_source.map(|s| s.name()),
            "timeout_ms": ms_json(Some(self.timeout)),
            "tls": self.tls_json(),
            "result": self.result(),
            "exit_code": self.exit_code,
            "checks": checks,
            "verdicts": self.verdicts.iter().map(verdict).collect::<Vec<_>>(),
        })
    }
}

impl Report {
    /// The `tls` object of the JSON document: `null` for an http endpoint;
    /// for https what the connect's handshake negotiated (nulls when it
    /// failed) and how many later connections resumed the session.
    fn tls_json(&self) -> Value {
        let Some(insecure) = self.insecure else {
            return Value::Null;
        };
        let connect = self.checks.iter().find(|c| c.kind == Kind::Connect);
        let setup = connect.and_then(|c| c.setup.as_ref());
        let tls = setup.and_then(|s| s.tls.as_ref());
        // The connect comes first; every later check made its own connection.
        let (resumed, conns) = resumptions(self.checks.get(1..).unwrap_or(&[]));
        json!({
            "insecure": insecure,
            "verified": tls.map(|t| !t.insecure),
            "protocol_version": tls.map(|t| t.version.clone()),
            "cipher_suite": tls.map(|t| t.cipher_suite.clone()),
            "alpn": tls.and_then(|t| t.alpn.clone()),
            "tcp_connect_ms": ms_json(setup.map(|s| s.tcp_connect)),
            "tls_handshake_ms": ms_json(setup.and_then(|s| s.tls_handshake)),
            "certificate": tls.and_then(|t| t.cert.as_ref()).map(|c| json!({
                "subject": c.subject,
                "issuer": c.issuer,
                "not_after": c.not_after,
                "days_left": c.days_left,
            })),
            "later_connections": conns,
            "later_resumed": resumed,
            "failure": connect.and_then(|c| c.failure.as_ref()).filter(|f| f.handshake).map(|f| f.why.clone()),
        })
    }
}

/// The models table's note when there is no list: why not, in a few words.
fn note_models(c: &Check) -> String {
    match (&c.answer, &c.models_error) {
        (Some(_), Some(e)) => format!("not a model list: {e}"),
        (Some(a), None) => a
            .message
            .as_deref()
            .map(|m| m.chars().take(60).collect())
            .unwrap_or_default(),
        (None, _) => String::new(),
    }
}

impl Report {
    /// The `result` of the JSON document, named for the exit status.
    fn result(&self) -> &'static str {
        match self.exit_code {
            0 => "ready",
            2 => "non_stream_only",
            _ => "not_ready",
        }
    }
}
