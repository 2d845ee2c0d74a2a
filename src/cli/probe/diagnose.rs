//! What the probe's observations mean: each check's outcome classified
//! for the API that was asked, one `ok:` / `warning:` / `error:` line per
//! finding, and the exit status. Pure: checks in, findings out, no I/O and
//! no clock, so every diagnosis is table-tested (`probe/tests.rs`). The
//! trade-off is that each finding is inferred from a single response; the
//! lines say what was seen and what to try rather than claim a cause.

use std::net::SocketAddr;

use super::exchange::{Answer, Check, Kind};
use super::render::ms;
use super::{CHOSEN_TOKENS, MODELS_PATH};
use crate::cli::cause::{self, list_some, mentions_model, served_list as served};
use crate::http::blocking::{MAX_BODY, TlsInfo};

/// A certificate that expires within this many days is warned about.
pub(super) const EXPIRY_WARNING_DAYS: i64 = 30;

/// How a finding reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Level {
    Ok,
    Warning,
    Error,
}

impl Level {
    pub(super) fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// One finding, about one check (or the run as a whole).
#[derive(Debug)]
pub(super) struct Verdict {
    pub(super) level: Level,
    /// The index of the check it is about.
    pub(super) check: Option<usize>,
    pub(super) text: String,
}

impl Verdict {
    pub(super) fn error(check: Option<usize>, text: String) -> Verdict {
        Verdict {
            level: Level::Error,
            check,
            text,
        }
    }
}

/// Where the model sent came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ModelSource {
    /// `--model`.
    Flag,
    /// The first id `/v1/models` listed.
    Listed,
    /// Neither: the placeholder "default".
    Default,
}

impl ModelSource {
    pub(super) fn name(self) -> &'static str {
        match self {
            ModelSource::Flag => "flag",
            ModelSource::Listed => "listed",
            ModelSource::Default => "default",
        }
    }
}

/// What was asked of the endpoint, as the findings name it.
pub(super) struct Asked<'a> {
    /// The chosen API's name.
    pub(super) api: &'static str,
    /// `--endpoint` as given.
    pub(super) url: &'a str,
    /// The path the chosen API's requests went to.
    pub(super) path: &'a str,
    pub(super) addr: SocketAddr,
    /// The model sent (empty when no request was sent).
    pub(super) model: &'a str,
    pub(super) model_source: Option<ModelSource>,
    /// `--api-key` or `--header` was given.
    pub(super) credentials: bool,
    /// The TLS flags probe was given, as the bench command must repeat
    /// them (` --ca-cert ca.pem`), or empty.
    pub(super) tls_flags: String,
}

/// The TLS flags of `tls` as a command line gives them, each with a
/// leading space; empty when none was given.
pub(super) fn tls_flags(tls: &crate::tls::TlsSettings) -> String {
    let path = |p: &std::path::Path| shell_word(&p.display().to_string());
    let mut out = String::new();
    if let Some(p) = &tls.ca_cert {
        out.push_str(&format!(" --ca-cert {}", path(p)));
    }
    if tls.insecure {
        out.push_str(" --insecure");
    }
    if let Some(n) = &tls.server_name {
        out.push_str(&format!(" --tls-server-name {}", shell_word(n)));
    }
    if let Some(p) = &tls.client_cert {
        out.push_str(&format!(" --client-cert {}", path(p)));
    }
    if let Some(p) = &tls.client_key {
        out.push_str(&format!(" --client-key {}", path(p)));
    }
    out
}

/// The findings, in the order they are printed, and the exit status.
pub(super) struct Findings {
    pub(super) verdicts: Vec<Verdict>,
    /// 0 ready, 2 only non-streamed requests work, 1 not ready.
    pub(super) exit_code: i32,
}

impl Findings {
    fn say(&mut self, level: Level, check: Option<usize>, text: impl Into<String>) {
        self.verdicts.push(Verdict {
            level,
            check,
            text: text.into(),
        });
    }
}

/// What a response means for the API that was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    Works,
    /// A success status, but nothing this protocol reads as output.
    NoOutput,
    InBand,
    NotServed,
    UnknownModel,
    Auth,
    Redirect,
    Rejected,
    ServerError,
}

pub(super) fn classify(a: &Answer, model: &str) -> Class {
    let msg = a.message.as_deref().unwrap_or("");
    match a.status {
        200..=299 if a.in_band.is_some() || a.stream_error.is_some() => Class::InBand,
        200..=299 if a.output => Class::Works,
        200..=299 => Class::NoOutput,
        401 | 403 => Class::Auth,
        400 | 404 | 422 if mentions_model(msg, model, a.status) => Class::UnknownModel,
        404 | 405 => Class::NotServed,
        300..=399 => Class::Redirect,
        400..=499 => Class::Rejected,
        _ => Class::ServerError,
    }
}

/// The URL's scheme and authority, and whether it named a path.
fn base_url(url: &str) -> (String, bool) {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (scheme, rest),
        None => ("http", url),
    };
    match rest.find('/') {
        Some(i) => (
            format!("{scheme}://{}", &rest[..i]),
            !matches!(&rest[i..], "" | "/"),
        ),
        None => (format!("{scheme}://{rest}"), false),
    }
}

/// What the chosen API's lines need to know beyond their own check.
struct Context<'a> {
    api: &'static str,
    model: &'a str,
    /// The `/v1/models` ids, when they could be read.
    listed: Option<&'a [String]>,
    /// Where else the server answered, as a clause (empty when nowhere was tried).
    alternatives: String,
    /// Some other path or API did answer.
    answered_elsewhere: bool,
    /// `--api-key` or `--header` was given.
    credentials: bool,
}

/// Draws the findings from the checks (in the order the probe makes them:
/// connect, then models, paths and the chosen API's two requests).
pub(super) fn diagnose(asked: &Asked<'_>, checks: &[Check]) -> Findings {
    let mut r = Findings {
        verdicts: Vec::new(),
        exit_code: 1,
    };
    let at = |kind: Kind| checks.iter().position(|c| c.kind == kind);
    let Some(connect_at) = at(Kind::Connect) else {
        return r;
    };
    let connect = &checks[connect_at];
    if let Some(f) = &connect.failure {
        r.say(Level::Error, Some(connect_at), f.why.clone());
        return r;
    }
    if let Some(took) = connect.latency {
        r.say(
            Level::Ok,
            Some(connect_at),
            format!("connected to {} in {}", asked.addr, ms(took)),
        );
    }
    let setup = connect.setup.as_ref();
    if let (Some(tls), Some(took)) = (
        setup.and_then(|s| s.tls.as_ref()),
        setup.and_then(|s| s.tls_handshake),
    ) {
        for (level, text) in tls_lines(tls, took, &checks[connect_at + 1..]) {
            r.say(level, Some(connect_at), text);
        }
    }
    // A failure every request meets ends the probe at the model list.
    if let Some(models_at) = at(Kind::Models)
        && let Some(f) = checks[models_at]
            .failure
            .as_ref()
            .filter(|f| f.every_request)
    {
        r.say(
            Level::Error,
            Some(models_at),
            format!("GET {MODELS_PATH}: {}", f.why),
        );
        return r;
    }
    let (Some(models_at), Some(ns_at), Some(st_at)) =
        (at(Kind::Models), at(Kind::NonStream), at(Kind::Stream))
    else {
        return r;
    };
    let (api, model) = (asked.api, asked.model);
    if let Some((level, text)) = models_line(&checks[models_at]) {
        r.say(level, Some(models_at), text);
    }
    match asked.model_source {
        Some(ModelSource::Listed) => r.say(
            Level::Ok,
            Some(models_at),
            format!("using model '{model}', the first listed (pass --model to choose)"),
        ),
        Some(ModelSource::Default) => r.say(
            Level::Warning,
            Some(models_at),
            format!("no model named and none listed: sending '{model}'; pass --model"),
        ),
        _ => {}
    }

    let listed = checks[models_at].models.as_deref();
    let (alternatives, answered_elsewhere) = alternatives(checks, asked);
    let ctx = Context {
        api,
        model,
        listed,
        alternatives,
        answered_elsewhere,
        credentials: asked.credentials,
    };

    let mut model_reported = false;
    let mut works = [false, false];
    for (n, at) in [ns_at, st_at].into_iter().enumerate() {
        let c = &checks[at];
        // A streamed request refused like the non-streamed one is said once.
        let same_as_non_stream = n == 1
            && match (&c.failure, &c.answer, &checks[ns_at]) {
                (Some(f), _, ns) => ns.failure.as_ref().is_some_and(|g| g.why == f.why),
                (None, Some(a), ns) => {
                    !a.ok() && ns.answer.as_ref().is_some_and(|b| b.status == a.status)
                }
                (None, None, _) => true,
            };
        if same_as_non_stream {
            continue;
        }
        let (level, text) = match (&c.failure, &c.answer) {
            (Some(f), _) => (Level::Error, format!("{}: {}", c.label(), f.why)),
            (None, Some(a)) => {
                let class = classify(a, model);
                works[n] = class == Class::Works && (!c.stream || a.sse);
                model_reported |= class == Class::UnknownModel;
                chosen_line(c, a, class, &ctx)
            }
            (None, None) => continue,
        };
        r.say(level, Some(at), text);
    }

    // Answers that work but will not count well.
    for (n, at) in [ns_at, st_at].into_iter().enumerate() {
        let Some(a) = checks[at].answer.as_ref().filter(|_| works[n]) else {
            continue;
        };
        let mut lines = Vec::new();
        if a.completion_tokens.is_none() {
            lines.push(if n == 1 {
                "no usage in streamed responses: output tokens will be counted from events; \
                 pass --tokenizer for exact counts"
                    .to_string()
            } else {
                "no usage in non-streamed responses: output tokens are not counted unless you \
                 pass --tokenizer"
                    .to_string()
            });
        }
        if a.truncated {
            lines.push(format!(
                "the response passed {} KiB for max_tokens {CHOSEN_TOKENS}: does the server ignore max_tokens?",
                MAX_BODY >> 10
            ));
        }
        if n == 0 && a.sse {
            lines.push(
                "asked for a whole response, got an event stream: the server streams even \
                 with \"stream\": false"
                    .to_string(),
            );
        }
        for text in lines {
            r.say(Level::Warning, Some(at), text);
        }
    }

    // A model the list does not show, when no answer has said so already.
    if let (Some(l), Some(ModelSource::Flag)) = (listed, asked.model_source)
        && !l.is_empty()
        && !l.iter().any(|m| m == model)
        && !model_reported
    {
        let answered = checks.iter().any(|c| {
            c.protocol.is_some()
                && c.answer
                    .as_ref()
                    .is_some_and(|a| classify(a, model) == Class::Works)
        });
        if answered {
            r.say(
                Level::Warning,
                Some(models_at),
                format!(
                    "model '{model}' is not listed at {MODELS_PATH} (served: {}), but the server answered for it",
                    served(l)
                ),
            );
        } else {
            r.say(
                Level::Error,
                Some(models_at),
                cause::unknown_model(model, Some(l)),
            );
        }
    }

    let mut command = format!(
        "llmload bench --endpoint {} --api {api} --model {}{}",
        asked.url,
        shell_word(model),
        asked.tls_flags
    );
    if ctx.credentials {
        command.push_str(" (with your --api-key / --header)");
    }
    let (level, text, code) = match works {
        [true, true] => (Level::Ok, format!("ready to benchmark: {command}"), 0),
        [false, true] => (
            Level::Warning,
            format!(
                "only streamed requests work: benchmark streamed (the default), not with --no-stream: {command}"
            ),
            0,
        ),
        [true, false] => (
            Level::Warning,
            format!("only non-streamed requests work: {command} --no-stream"),
            2,
        ),
        [false, false] => (
            Level::Error,
            format!("not ready: {api} at {} does not work", asked.url),
            1,
        ),
    };
    r.say(level, None, text);
    r.exit_code = code;
    r
}

/// The findings about an https connection: the handshake, the
/// certificate (and whether it was verified), its expiry, and whether the
/// `later` checks' connections resumed the session.
fn tls_lines(tls: &TlsInfo, took: std::time::Duration, later: &[Check]) -> Vec<(Level, String)> {
    let mut lines = vec![(
        Level::Ok,
        format!(
            "TLS handshake in {}: {}, {}, ALPN {}",
            ms(took),
            tls.version,
            tls.cipher_suite,
            tls.alpn.as_deref().unwrap_or("none")
        ),
    )];
    let cert = tls.cert.as_ref().map(|c| {
        format!(
            "subject {}; issuer {}; expires {} ({})",
            c.subject,
            c.issuer,
            c.not_after,
            days_left(c.days_left)
        )
    });
    let cert = cert.as_deref().unwrap_or("none that could be read");
    lines.push(if tls.insecure {
        (
            Level::Warning,
            format!(
                "certificate verification is OFF (--insecure): the server's identity was not checked; certificate: {cert}"
            ),
        )
    } else {
        (Level::Ok, format!("certificate verified: {cert}"))
    });
    if let Some(c) = &tls.cert {
        if c.days_left < 0 {
            lines.push((
                Level::Warning,
                format!(
                    "the server's certificate expired on {} ({} days ago)",
                    c.not_after, -c.days_left
                ),
            ));
        } else if c.days_left < EXPIRY_WARNING_DAYS {
            lines.push((
                Level::Warning,
                format!(
                    "the server's certificate expires in {} on {}: renew it before clients start failing",
                    days(c.days_left),
                    c.not_after
                ),
            ));
        }
    }
    let (resumed, conns) = resumptions(later);
    if conns > 0 {
        lines.push(if resumed > 0 {
            (
                Level::Ok,
                format!("TLS session resumption works: {resumed} of {conns} later connections resumed"),
            )
        } else {
            (
                Level::Warning,
                format!(
                    "no later connection resumed the TLS session (0 of {conns}): every new connection pays a full handshake"
                ),
            )
        });
    }
    lines
}

/// Of the connections `checks` made over TLS, how many resumed a session,
/// and how many there were.
pub(super) fn resumptions(checks: &[Check]) -> (usize, usize) {
    let tls: Vec<&TlsInfo> = checks
        .iter()
        .filter_map(|c| c.setup.as_ref()?.tls.as_ref())
        .collect();
    (tls.iter().filter(|t| t.resumed).count(), tls.len())
}

fn days(n: i64) -> String {
    format!("{n} day{}", if n == 1 { "" } else { "s" })
}

/// `365 days left`, `expired 3 days ago`.
pub(super) fn days_left(n: i64) -> String {
    if n < 0 {
        format!("expired {} ago", days(-n))
    } else {
        format!("{} left", days(n))
    }
}

/// The finding about `GET /v1/models`.
fn models_line(c: &Check) -> Option<(Level, String)> {
    if let Some(f) = &c.failure {
        return Some((Level::Warning, format!("GET {MODELS_PATH}: {}", f.why)));
    }
    let a = c.answer.as_ref()?;
    Some(match (&c.models, &c.models_error) {
        (Some(ids), _) if ids.is_empty() => (
            Level::Warning,
            format!("GET {MODELS_PATH} → 200, but it lists no model"),
        ),
        (Some(ids), _) => (
            Level::Ok,
            format!(
                "GET {MODELS_PATH} lists {} model{}: {}",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" },
                list_some(ids, 10)
            ),
        ),
        (None, Some(e)) => (
            Level::Warning,
            format!("GET {MODELS_PATH} → 200, but the body is not a model list ({e})"),
        ),
        (None, None) if matches!(a.status, 401 | 403) => (
            Level::Warning,
            format!("GET {MODELS_PATH} → {}: authentication failed", a.status),
        ),
        (None, None) => (
            Level::Warning,
            format!(
                "GET {MODELS_PATH} → {}: no model list{}",
                a.status,
                clause(" (", a.message.as_deref(), ")")
            ),
        ),
    })
}

/// Where discovery found a working API other than the chosen one at the
/// URL's path, as a clause with what to try; and whether it found any.
fn alternatives(checks: &[Check], asked: &Asked<'_>) -> (String, bool) {
    let (api, model) = (asked.api, asked.model);
    let (base, explicit_path) = base_url(asked.url);
    let mut found = Vec::new();
    let mut tried = Vec::new();
    for c in checks.iter().filter(|c| c.kind == Kind::Path) {
        let (Some(p), Some(a)) = (c.protocol, &c.answer) else {
            continue;
        };
        if p.name() == api && c.path == asked.path {
            continue;
        }
        tried.push(c.path.as_str());
        if classify(a, model) != Class::Works {
            continue;
        }
        let hint = if p.name() == api {
            format!("try --endpoint {base}{}", c.path)
        } else if c.path == asked.path || (!explicit_path && c.path == p.default_path()) {
            format!("try --api {}", p.name())
        } else {
            format!("try --api {} --endpoint {base}{}", p.name(), c.path)
        };
        found.push(format!("{} ({hint})", c.path));
    }
    if !found.is_empty() {
        (format!("it answered at {}", found.join(" and ")), true)
    } else if !tried.is_empty() {
        (
            format!("no other known API path answered ({})", tried.join(", ")),
            false,
        )
    } else {
        (String::new(), false)
    }
}

/// The finding about one of the chosen API's requests that got an answer.
fn chosen_line(c: &Check, a: &Answer, class: Class, ctx: &Context<'_>) -> (Level, String) {
    let (api, model) = (ctx.api, ctx.model);
    let prefix = format!("{} → {}", c.label(), a.status);
    let server = clause(" (server: ", a.message.as_deref(), ")");
    let stream_asked = c.stream;
    match class {
        Class::Works if stream_asked && !a.sse => (
            Level::Warning,
            format!(
                "asked for a stream, got {}: TTFT cannot be measured; benchmark with --no-stream",
                media_type(a)
            ),
        ),
        Class::Works => (Level::Ok, works_line(c, a)),
        Class::NoOutput if stream_asked && a.sse => (
            Level::Warning,
            format!(
                "{prefix}: the event stream carried no output ({} event{}): TTFT cannot be measured; is --api right?",
                a.events,
                if a.events == 1 { "" } else { "s" }
            ),
        ),
        Class::NoOutput if stream_asked => (
            Level::Warning,
            format!(
                "asked for a stream, got {} with no {api} output: TTFT cannot be measured",
                media_type(a)
            ),
        ),
        Class::NoOutput => (
            Level::Error,
            format!(
                "{prefix}, but the body is not an {api} response (no output found): is --api right?{}",
                if ctx.answered_elsewhere {
                    format!(" {}", ctx.alternatives)
                } else {
                    String::new()
                }
            ),
        ),
        Class::InBand => match (&a.stream_error, &a.in_band) {
            (Some(e), _) => (
                Level::Error,
                format!("{prefix}, but the event stream is malformed ({e})"),
            ),
            (None, m) => (
                Level::Error,
                format!(
                    "{prefix} with an in-band error: {}",
                    m.as_deref().unwrap_or("")
                ),
            ),
        },
        Class::NotServed => (
            Level::Error,
            format!(
                "{prefix}: {}{}",
                cause::not_served(api),
                clause(
                    "; ",
                    Some(ctx.alternatives.as_str()).filter(|s| !s.is_empty()),
                    ""
                )
            ),
        ),
        Class::UnknownModel => (
            Level::Error,
            format!(
                "{prefix}: {}{server}",
                cause::unknown_model(model, ctx.listed)
            ),
        ),
        Class::Auth => (
            Level::Error,
            format!("{prefix}: {}{server}", cause::auth(ctx.credentials)),
        ),
        Class::Redirect => (
            Level::Error,
            format!(
                "{prefix}: redirected to {}: llmload does not follow redirects; probe the final URL",
                a.location.as_deref().unwrap_or("nowhere (no Location)")
            ),
        ),
        Class::Rejected => (
            Level::Error,
            format!(
                "{prefix}: the server rejected the request{}{}",
                clause(": ", a.message.as_deref(), ""),
                if ctx.answered_elsewhere {
                    format!("; {}", ctx.alternatives)
                } else {
                    String::new()
                }
            ),
        ),
        Class::ServerError => (
            Level::Error,
            format!(
                "{prefix}: the server failed{}",
                clause(": ", a.message.as_deref(), "")
            ),
        ),
    }
}

/// `before`, `text`, `after` when there is a text; else nothing.
fn clause(before: &str, text: Option<&str>, after: &str) -> String {
    text.map(|t| format!("{before}{t}{after}"))
        .unwrap_or_default()
}

/// The media type of an answer (no parameters), for messages.
fn media_type(a: &Answer) -> &str {
    a.content_type
        .as_deref()
        .map(|t| t.split(';').next().unwrap_or(t).trim())
        .unwrap_or("no Content-Type")
}

/// The line for a working request of the chosen API.
fn works_line(c: &Check, a: &Answer) -> String {
    let lat = c.latency.map(ms).unwrap_or_default();
    let tokens = match a.completion_tokens {
        Some(n) => format!("{n} output tokens (usage)"),
        None => "output found, no usage".to_string(),
    };
    if c.stream {
        format!(
            "streamed: {} in {lat}, TTFT {}, {} output events, {tokens}",
            a.status,
            a.ttft.map(ms).unwrap_or_default(),
            a.output_events
        )
    } else {
        format!("non-streamed: {} in {lat}, {tokens}", a.status)
    }
}

/// `model` quoted for a shell when it needs it.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What a discovery or chosen request found, in a few words.
pub(super) fn note(c: &Check, model: &str) -> String {
    if let Some(f) = &c.failure {
        return f.short.clone();
    }
    let Some(a) = &c.answer else {
        return String::new();
    };
    let api = c.protocol.map_or("", |p| p.name());
    let msg = |m: &Option<String>| {
        m.as_deref()
            .map(|m| format!(": {}", m.chars().take(60).collect::<String>()))
            .unwrap_or_default()
    };
    match classify(a, model) {
        Class::Works if c.stream && !a.sse => format!("not a stream: {}", media_type(a)),
        Class::Works => {
            let usage = if a.completion_tokens.is_some() {
                "usage"
            } else {
                "no usage"
            };
            format!("output, {usage}")
        }
        Class::NoOutput => format!("no {api} output"),
        Class::InBand if a.stream_error.is_some() => "malformed event stream".to_string(),
        Class::InBand => format!("in-band error{}", msg(&a.in_band)),
        Class::NotServed => "not served here".to_string(),
        Class::UnknownModel => "unknown model".to_string(),
        Class::Auth => "authentication failed".to_string(),
        Class::Redirect => format!("redirect to {}", a.location.as_deref().unwrap_or("nowhere")),
        Class::Rejected => format!("rejected{}", msg(&a.message)),
        Class::ServerError => format!("server error{}", msg(&a.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(base_url("http://h:1"), ("http://h:1".to_string(), false));
        assert_eq!(base_url("http://h:1/"), ("http://h:1".to_string(), false));
        assert_eq!(
            base_url("http://h:1/nope"),
            ("http://h:1".to_string(), true)
        );
        assert_eq!(
            base_url("https://h/v1/chat/completions"),
            ("https://h".to_string(), true)
        );
    }

    #[test]
    fn shell_words() {
        assert_eq!(
            shell_word("meta-llama/Llama-3.1-8B"),
            "meta-llama/Llama-3.1-8B"
        );
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
