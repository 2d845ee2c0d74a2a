//! `llmload probe`: a quick, plain-spoken check of whether an endpoint can
//! serve a benchmark, before running one. It generates no load: about ten
//! blocking requests, one after another, each on its own connection and
//! bounded by `--timeout`. It connects, lists `/v1/models`, sends a tiny
//! request to every known protocol's default path (iterating
//! `protocol::ALL`, so a format added there is probed with no change here),
//! then sends the chosen API one non-streamed and one streamed request and
//! reads them as a benchmark would: TTFT at the first output-bearing SSE
//! event, tokens from `usage`, the finish reason, in-band errors.
//!
//! The trade-off is plainness over certainty: each diagnosis is inferred
//! from a single response, so every finding is one line (`ok:`, `warning:`
//! or `error:`) that says what was seen and what to try, and the exit status
//! separates only "ready", "ready without streaming" and "not ready".
//! Secrets never reach the output: the API key and secret-looking header
//! values are masked in everything printed, server echoes included.

use std::fmt::Write as _;
use std::time::Duration;

use argh::FromArgs;
use serde_json::{Value, json};

use crate::cli::http_client::{self, ConnectError, FetchError, Response};
use crate::cli::models;
use crate::config::duration::{duration_flag, format_duration};
use crate::http::endpoint::Endpoint;
use crate::http::request::write_request;
use crate::http::sse::SseSplitter;
use crate::protocol::{self, BodySpec, Finish, Message, Protocol, Sampling, StreamState};

/// Check whether an endpoint can serve a benchmark: a handful of requests, no load.
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "probe",
    note = "Connects, lists /v1/models, sends a tiny request to every known API path, then\n\
            sends the chosen API one non-streamed and one streamed request (status,\n\
            latency, TTFT, output events, usage, finish reason). Each finding is one line\n\
            starting with ok:, warning: or error:. Not ready (1) covers a refused or timed-out\n\
            connection, a wrong path (404), failed authentication (401/403), an unknown model,\n\
            malformed HTTP and server errors; when only streaming works the status is 0, with\n\
            a warning. The API key and secret-looking header values are never printed.",
    example = "{command_name} --endpoint http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct",
    error_code(
        0,
        "ready: the chosen API works streamed and non-streamed (warnings allowed)"
    ),
    error_code(
        1,
        "not ready: the endpoint cannot serve the chosen API (or a bad flag)"
    ),
    error_code(2, "works only non-streamed: benchmark with --no-stream")
)]
pub struct ProbeArgs {
    /// endpoint URL, http://host:port[/path] (default path from --api)
    #[argh(option)]
    pub endpoint: String,

    /// wire format to check: openai-chat (default), or another --api name
    /// `llmload bench` knows
    #[argh(option, default = "String::from(\"openai-chat\")")]
    pub api: String,

    /// model name (default: the first model listed at /v1/models, else
    /// "default")
    #[argh(option)]
    pub model: Option<String>,

    /// API key sent as the API's auth header (default: $OPENAI_API_KEY);
    /// never printed
    #[argh(option)]
    pub api_key: Option<String>,

    /// extra request header 'Name: value' (repeatable)
    #[argh(option)]
    pub header: Vec<String>,

    /// bound on each request, connect included (default 10s)
    #[argh(
        option,
        from_str_fn(duration_flag),
        default = "Duration::from_secs(10)"
    )]
    pub timeout: Duration,

    /// print one JSON document instead of the report
    #[argh(switch)]
    pub json: bool,
}

/// Output tokens asked of each path-discovery request.
const DISCOVERY_TOKENS: u32 = 8;
/// Output tokens asked of the chosen API's two requests.
const CHOSEN_TOKENS: u32 = 16;
const PROMPT: &str = "Say hello in a few words.";
const MODELS_PATH: &str = "/v1/models";
/// Largest SSE event read; the engine's limit.
const MAX_EVENT: usize = crate::engine::conn::MAX_EVENT;
/// Secrets shorter than this are not masked: they would mask ordinary text,
/// and they are never printed deliberately anyway.
const MIN_SECRET: usize = 4;
/// What a masked secret becomes.
const MASK: &str = "[redacted]";

/// The validated flags.
struct Config {
    url: String,
    protocol: &'static dyn Protocol,
    model: Option<String>,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    json: bool,
    /// Strings masked in everything printed.
    secrets: Vec<String>,
}

/// Runs the probe, prints the report (or JSON) and returns the exit status.
pub fn run(args: ProbeArgs) -> i32 {
    let cfg = match resolve(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("llmload probe: {e}");
            return 1;
        }
    };
    let report = probe(&cfg);
    let out = if cfg.json {
        let mut s = serde_json::to_string_pretty(&report.to_json(&cfg))
            .expect("a JSON value always serializes");
        s.push('\n');
        s
    } else {
        report.render()
    };
    print!("{}", redact(&out, &cfg.secrets));
    report.exit_code
}

fn resolve(a: ProbeArgs) -> Result<Config, String> {
    let protocol = protocol::find(&a.api)?;
    let mut headers = Vec::new();
    for h in &a.header {
        // The value may be a credential: messages name only the header.
        let (k, v) = h
            .split_once(':')
            .ok_or("--header: expected 'Name: value', found no ':'")?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || k.bytes().any(|b| !b.is_ascii_graphic()) {
            return Err(format!("--header '{k}': bad header name"));
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n') {
            return Err(format!("--header '{k}': the value contains a line break"));
        }
        headers.push((k.to_string(), v.to_string()));
    }
    let api_key = a
        .api_key
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
        .filter(|k| !k.is_empty());
    if let Some(k) = &api_key
        && k.bytes().any(|b| b == b'\r' || b == b'\n')
    {
        return Err("--api-key contains a line break".into());
    }
    if a.timeout.is_zero() {
        return Err("--timeout must be longer than 0".into());
    }
    let secrets = secrets(api_key.as_deref(), &headers);
    Ok(Config {
        url: a.endpoint,
        protocol,
        model: a.model,
        api_key,
        headers,
        timeout: a.timeout,
        json: a.json,
        secrets,
    })
}

/// The API key, and the values of headers whose names suggest credentials
/// (with the token after a scheme such as `Bearer` on its own too, since a
/// server may echo just that part).
fn secrets(api_key: Option<&str>, headers: &[(String, String)]) -> Vec<String> {
    const SECRET_NAMES: [&str; 6] = ["auth", "key", "token", "secret", "cookie", "password"];
    let mut out: Vec<String> = api_key.into_iter().map(str::to_string).collect();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        if SECRET_NAMES.iter().any(|s| name.contains(s)) {
            out.push(value.clone());
            if let Some((_, token)) = value.split_once(' ') {
                out.push(token.trim().to_string());
            }
        }
    }
    out.retain(|s| s.len() >= MIN_SECRET);
    // Longest first, so a secret containing another is masked whole.
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// `text` with every secret, raw or JSON-escaped, replaced by `MASK`.
fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        out = out.replace(s.as_str(), MASK);
        let escaped = serde_json::to_string(s).expect("a string always serializes");
        let escaped = &escaped[1..escaped.len() - 1];
        if escaped != s {
            out = out.replace(escaped, MASK);
        }
    }
    out
}

/// How a finding reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Ok,
    Warning,
    Error,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }
}

/// One finding, about one check (or the run as a whole).
struct Verdict {
    level: Level,
    check: Option<usize>,
    text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Connect,
    Models,
    /// A path-discovery request.
    Path,
    NonStream,
    Stream,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Connect => "connect",
            Kind::Models => "models",
            Kind::Path => "path",
            Kind::NonStream => "non_stream",
            Kind::Stream => "stream",
        }
    }
}

/// One request (or the bare connect) and what came of it.
struct Check {
    kind: Kind,
    method: &'static str,
    path: String,
    protocol: Option<&'static dyn Protocol>,
    stream: bool,
    max_tokens: Option<u32>,
    /// Connect time (connect check) or send-to-end latency.
    latency: Option<Duration>,
    answer: Option<Answer>,
    /// Why there is no answer: a short form for tables, a sentence for lines.
    failure: Option<(String, String)>,
    /// Model ids, for the models check.
    models: Option<Vec<String>>,
    /// Why the models body could not be read as a list.
    models_error: Option<String>,
}

impl Check {
    fn new(kind: Kind, method: &'static str, path: &str) -> Check {
        Check {
            kind,
            method,
            path: path.to_string(),
            protocol: None,
            stream: false,
            max_tokens: None,
            latency: None,
            answer: None,
            failure: None,
            models: None,
            models_error: None,
        }
    }

    /// `POST /path` or `POST /path (stream)`, the start of its lines.
    fn label(&self) -> String {
        let stream = if self.stream { " (stream)" } else { "" };
        format!("{} {}{stream}", self.method, self.path)
    }
}

/// A complete response, read as the check's protocol.
#[derive(Debug, Default)]
struct Answer {
    status: u16,
    content_type: Option<String>,
    location: Option<String>,
    /// Body was an event stream (and was split into events).
    sse: bool,
    ttft: Option<Duration>,
    /// SSE events in all, and those carrying output.
    events: u32,
    output_events: u32,
    /// Output found: text, reasoning or other output.
    output: bool,
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    finish: Option<Finish>,
    /// An in-band error in a successful response.
    in_band: Option<String>,
    /// The error message of an unsuccessful response.
    message: Option<String>,
    /// The event stream could not be split.
    stream_error: Option<String>,
    truncated: bool,
}

impl Answer {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// What a response means for the API that was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
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

fn classify(a: &Answer, model: &str) -> Class {
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

/// Whether an error message is about the model: a 404 that names it, or any
/// message with the word "model" and a phrase of absence. Names match only
/// as whole tokens, so model `m` is not found inside "chat/completions".
fn mentions_model(msg: &str, model: &str, status: u16) -> bool {
    const ABSENT: [&str; 6] = [
        "not exist",
        "not found",
        "unknown",
        "not served",
        "invalid",
        "no such",
    ];
    let lower = msg.to_ascii_lowercase();
    let name = model.to_ascii_lowercase();
    let in_name = |c: char| c.is_alphanumeric() || "-_./:".contains(c);
    if status == 404 && has_token(&lower, &name, in_name) {
        return true;
    }
    has_token(&lower, "model", char::is_alphanumeric) && ABSENT.iter().any(|p| lower.contains(p))
}

/// `needle` occurs in `text` with no `part_of_word` character on either side.
fn has_token(text: &str, needle: &str, part_of_word: impl Fn(char) -> bool) -> bool {
    let Some(first) = needle.chars().next() else {
        return false;
    };
    let mut from = 0;
    while let Some(i) = text[from..].find(needle) {
        let (s, e) = (from + i, from + i + needle.len());
        let before = text[..s]
            .chars()
            .next_back()
            .is_none_or(|c| !part_of_word(c));
        let after = text[e..].chars().next().is_none_or(|c| !part_of_word(c));
        if before && after {
            return true;
        }
        from = s + first.len_utf8();
    }
    false
}

/// Everything the probe found.
struct Report {
    url: String,
    api: &'static str,
    addr: Option<String>,
    model: Option<String>,
    /// `flag`, `listed` or `default`.
    model_source: &'static str,
    checks: Vec<Check>,
    verdicts: Vec<Verdict>,
    exit_code: i32,
}

impl Report {
    fn say(&mut self, level: Level, check: Option<usize>, text: impl Into<String>) {
        self.verdicts.push(Verdict {
            level,
            check,
            text: text.into(),
        });
    }

    fn push(&mut self, c: Check) -> usize {
        self.checks.push(c);
        self.checks.len() - 1
    }

    fn result(&self) -> &'static str {
        match self.exit_code {
            0 => "ready",
            2 => "non_stream_only",
            _ => "not_ready",
        }
    }
}

/// Runs every check and draws the conclusions.
fn probe(cfg: &Config) -> Report {
    let mut r = Report {
        url: cfg.url.clone(),
        api: cfg.protocol.name(),
        addr: None,
        model: None,
        model_source: "",
        checks: Vec::new(),
        verdicts: Vec::new(),
        exit_code: 1,
    };
    let endpoint = match Endpoint::parse(&cfg.url, cfg.protocol.default_path()) {
        Ok(e) => e,
        Err(e) => {
            r.say(Level::Error, None, e);
            return r;
        }
    };
    let addr = endpoint.addr;
    r.addr = Some(addr.to_string());

    let mut c = Check::new(Kind::Connect, "", "");
    match http_client::connect(addr, cfg.timeout) {
        Ok((_stream, took)) => {
            c.latency = Some(took);
            let i = r.push(c);
            r.say(
                Level::Ok,
                Some(i),
                format!("connected to {addr} in {}", ms(took)),
            );
        }
        Err(e) => {
            let e = FetchError::Connect(e);
            let why = describe(&e, addr, cfg.timeout);
            c.failure = Some((e.to_string(), why.clone()));
            let i = r.push(c);
            r.say(Level::Error, Some(i), why);
            return r;
        }
    }

    let models_at = r.push(list_models(cfg, &endpoint));
    let listed = r.checks[models_at].models.clone();
    let (model, source) = match (&cfg.model, listed.as_ref().and_then(|l| l.first())) {
        (Some(m), _) => (m.clone(), "flag"),
        (None, Some(first)) => (first.clone(), "listed"),
        (None, None) => ("default".to_string(), "default"),
    };
    r.model = Some(model.clone());
    r.model_source = source;

    // The URL's own path with the chosen API first, then every protocol's
    // default path that is not that same pair.
    let mut targets: Vec<(&'static dyn Protocol, String)> =
        vec![(cfg.protocol, endpoint.path.clone())];
    for &p in protocol::ALL {
        if !targets
            .iter()
            .any(|(q, path)| q.name() == p.name() && path == p.default_path())
        {
            targets.push((p, p.default_path().to_string()));
        }
    }
    for (p, path) in targets {
        let c = send(cfg, &endpoint, Kind::Path, p, &path, &model, false);
        r.push(c);
    }
    let non_stream = send(
        cfg,
        &endpoint,
        Kind::NonStream,
        cfg.protocol,
        &endpoint.path,
        &model,
        false,
    );
    let ns_at = r.push(non_stream);
    let stream = send(
        cfg,
        &endpoint,
        Kind::Stream,
        cfg.protocol,
        &endpoint.path,
        &model,
        true,
    );
    let st_at = r.push(stream);

    diagnose(&mut r, cfg, &endpoint, &model, models_at, ns_at, st_at);
    r
}

fn list_models(cfg: &Config, endpoint: &Endpoint) -> Check {
    let p = cfg.protocol;
    let auth = auth_headers(cfg, p);
    let headers = headers(cfg, p, &auth, "application/json");
    let mut c = Check::new(Kind::Models, "GET", MODELS_PATH);
    match http_client::get(endpoint, MODELS_PATH, &headers, cfg.timeout) {
        Ok(resp) => {
            c.latency = Some(resp.latency);
            let mut a = Answer {
                status: resp.status,
                content_type: resp.content_type.clone(),
                location: resp.location.clone(),
                truncated: resp.truncated,
                ..Answer::default()
            };
            if resp.status == 200 {
                match models::model_ids(&resp.body) {
                    Ok(ids) => c.models = Some(ids),
                    Err(e) => c.models_error = Some(e),
                }
            } else {
                a.message = error_message(p, &resp.body);
            }
            c.answer = Some(a);
        }
        Err(e) => c.failure = Some((e.to_string(), describe(&e, endpoint.addr, cfg.timeout))),
    }
    c
}

fn auth_headers(cfg: &Config, p: &dyn Protocol) -> Vec<(String, String)> {
    cfg.api_key
        .as_deref()
        .map(|k| p.auth_headers(k))
        .unwrap_or_default()
}

/// The headers of a request of protocol `p`, in the order a benchmark's
/// requests carry them (`engine::requests`), with `accept` when not empty.
fn headers<'a>(
    cfg: &'a Config,
    p: &dyn Protocol,
    auth: &'a [(String, String)],
    accept: &'static str,
) -> Vec<(&'a str, &'a str)> {
    let mut h: Vec<(&str, &str)> = vec![("User-Agent", "llmload/0.1")];
    if !accept.is_empty() {
        h.push(("Accept", accept));
    }
    h.extend(p.fixed_headers().iter().copied());
    h.extend(cfg.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    h.extend(auth.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    h
}

/// One POST of protocol `p` to `path`: a discovery request (`Kind::Path`,
/// `DISCOVERY_TOKENS`) or one of the chosen API's (`CHOSEN_TOKENS`). The
/// headers are the ones a benchmark's requests carry.
fn send(
    cfg: &Config,
    endpoint: &Endpoint,
    kind: Kind,
    p: &'static dyn Protocol,
    path: &str,
    model: &str,
    stream: bool,
) -> Check {
    let max_tokens = if kind == Kind::Path {
        DISCOVERY_TOKENS
    } else {
        CHOSEN_TOKENS
    };
    let mut body = Vec::new();
    p.build_body(
        &BodySpec {
            model,
            system: None,
            messages: &[Message::user(PROMPT)],
            input_tokens: None,
            max_tokens: Some(max_tokens),
            stream,
            sampling: &Sampling::default(),
            extra_body: None,
        },
        &mut body,
    );
    let auth = auth_headers(cfg, p);
    let accept = if stream { "text/event-stream" } else { "" };
    let headers = headers(cfg, p, &auth, accept);
    let mut req = Vec::new();
    write_request(&mut req, "POST", &endpoint.host, path, &headers, &body);

    let mut c = Check::new(kind, "POST", path);
    c.protocol = Some(p);
    c.stream = stream;
    c.max_tokens = Some(max_tokens);
    match http_client::fetch(endpoint.addr, &req, cfg.timeout) {
        Ok(resp) => {
            c.latency = Some(resp.latency);
            c.answer = Some(read_answer(&resp, p));
        }
        Err(e) => c.failure = Some((e.to_string(), describe(&e, endpoint.addr, cfg.timeout))),
    }
    c
}

/// Reads a response as protocol `p` reads it in a benchmark: an event
/// stream event by event, replaying each piece's arrival time so TTFT is
/// when the first output-bearing event was complete; a whole body at once.
fn read_answer(resp: &Response, p: &dyn Protocol) -> Answer {
    let mut a = Answer {
        status: resp.status,
        content_type: resp.content_type.clone(),
        location: resp.location.clone(),
        truncated: resp.truncated,
        ..Answer::default()
    };
    if !a.ok() {
        a.message = error_message(p, &resp.body);
        return a;
    }
    if resp.event_stream {
        a.sse = true;
        let mut splitter = SseSplitter::with_capacity(MAX_EVENT);
        let mut state = StreamState::default();
        let mut start = 0;
        for &(end, t) in &resp.pieces {
            let fed = splitter.feed(&resp.body[start..end], |ev| {
                let info = p.parse_event(&ev, &mut state);
                a.events += 1;
                if info.has_output() {
                    a.output_events += 1;
                    a.ttft.get_or_insert(t);
                }
                if info.prompt_tokens.is_some() {
                    a.prompt_tokens = info.prompt_tokens;
                }
                if info.completion_tokens.is_some() {
                    a.completion_tokens = info.completion_tokens;
                }
                if info.finish.is_some() {
                    a.finish = info.finish;
                }
                if let (None, Some(m)) = (&a.in_band, info.error) {
                    a.in_band = Some(json_text(m));
                }
            });
            if let Err(e) = fed {
                a.stream_error = Some(format!("{e:?}"));
                break;
            }
            start = end;
        }
        a.output = a.output_events > 0;
    } else {
        let info = p.parse_body(&resp.body);
        // Usage alone is not output: another format's body can carry it.
        a.output = !info.text.is_empty() || !info.reasoning.is_empty();
        a.prompt_tokens = info.prompt_tokens;
        a.completion_tokens = info.completion_tokens;
        a.finish = info.finish;
        a.in_band = info.error.map(json_text);
    }
    a
}

/// Raw JSON string bytes (escapes in place) as readable text.
fn json_text(raw: &[u8]) -> String {
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    let s = serde_json::from_slice::<String>(&quoted)
        .unwrap_or_else(|_| String::from_utf8_lossy(raw).into_owned());
    one_line(&s)
}

/// Whitespace collapsed, at most 300 characters: a message fit for one line.
fn one_line(s: &str) -> String {
    let mut out: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if out.chars().count() > 300 {
        out = out.chars().take(299).collect();
        out.push('…');
    }
    out
}

/// The message of an error response: the common JSON shapes
/// (`error.message`, `error`, `message`, `detail`), then the protocol's own
/// reading, then an HTML title or the first line of plain text.
fn error_message(p: &dyn Protocol, body: &[u8]) -> Option<String> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let candidates = [
            &v["error"]["message"],
            &v["error"],
            &v["message"],
            &v["detail"],
            &v["detail"][0]["msg"],
        ];
        if let Some(s) = candidates.iter().find_map(|c| c.as_str()) {
            return Some(one_line(s));
        }
    }
    if let Some(m) = p.parse_body(body).error {
        return Some(json_text(m));
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.starts_with('<') {
        let lower = text.to_ascii_lowercase();
        let start = lower.find("<title>")? + "<title>".len();
        let end = start + lower[start..].find("</title>")?;
        return Some(one_line(&text[start..end])).filter(|t| !t.is_empty());
    }
    text.lines().next().map(one_line).filter(|t| !t.is_empty())
}

/// A failure as a sentence that says what to check.
fn describe(e: &FetchError, addr: std::net::SocketAddr, timeout: Duration) -> String {
    let t = format_duration(timeout);
    match e {
        FetchError::Connect(ConnectError::Refused) => format!(
            "connection refused at {addr}: nothing is listening; is the server running and the port right?"
        ),
        FetchError::Connect(ConnectError::TimedOut) => format!(
            "connecting to {addr} timed out after {t}: the host is down or a firewall drops the packets; check the host and port"
        ),
        FetchError::Connect(ConnectError::Unreachable(e)) => {
            format!("{addr} is unreachable ({e}): check the host name and the network route")
        }
        FetchError::Connect(ConnectError::Other(e)) => format!("cannot connect to {addr}: {e}"),
        FetchError::Timeout { head: false } => format!(
            "no response within {t} (--timeout): the server accepted the connection but did not answer"
        ),
        FetchError::Timeout { head: true } => {
            format!("the response started but did not finish within {t} (--timeout)")
        }
        FetchError::Closed { head: false } => "the server closed the connection without answering: does it speak HTTP/1.1 on this port?".to_string(),
        FetchError::Closed { head: true } | FetchError::Reset { .. } | FetchError::Io(_) => {
            e.to_string()
        }
        FetchError::Malformed { what, start } => {
            let hint = if start.len() >= 2 && matches!(start[0], 0x15 | 0x16) && start[1] == 3 {
                "; the port speaks TLS: llmload needs plain http:// (put a TLS-terminating proxy in front)"
            } else if start.len() >= 9 && start[..3] != *b"HTT" && start[3] == 4 {
                "; the server speaks HTTP/2 only: llmload needs HTTP/1.1"
            } else {
                ""
            };
            format!(
                "malformed HTTP response ({what}); it began b\"{}\"{hint}",
                start.escape_ascii()
            )
        }
    }
}

/// The URL's scheme and authority, and whether it named a path.
fn base_url(url: &str) -> (String, bool) {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    match rest.find('/') {
        Some(i) => (
            format!("http://{}", &rest[..i]),
            !matches!(&rest[i..], "" | "/"),
        ),
        None => (format!("http://{rest}"), false),
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

/// Draws the `ok:` / `warning:` / `error:` lines and the exit status.
fn diagnose(
    r: &mut Report,
    cfg: &Config,
    endpoint: &Endpoint,
    model: &str,
    models_at: usize,
    ns_at: usize,
    st_at: usize,
) {
    let api = cfg.protocol.name();
    if let Some((level, text)) = models_line(&r.checks[models_at]) {
        r.say(level, Some(models_at), text);
    }
    match r.model_source {
        "listed" => r.say(
            Level::Ok,
            Some(models_at),
            format!("using model '{model}', the first listed (pass --model to choose)"),
        ),
        "default" => r.say(
            Level::Warning,
            Some(models_at),
            format!("no model named and none listed: sending '{model}'; pass --model"),
        ),
        _ => {}
    }

    let listed = r.checks[models_at].models.clone();
    let (alternatives, answered_elsewhere) = alternatives(&r.checks, cfg, endpoint, model);
    let ctx = Context {
        api,
        model,
        listed: listed.as_deref(),
        alternatives,
        answered_elsewhere,
        credentials: cfg.api_key.is_some() || !cfg.headers.is_empty(),
    };

    let mut model_reported = false;
    let mut works = [false, false];
    for (n, at) in [ns_at, st_at].into_iter().enumerate() {
        let c = &r.checks[at];
        // A streamed request refused like the non-streamed one is said once.
        let same_as_non_stream = n == 1
            && match (&c.failure, &c.answer, &r.checks[ns_at]) {
                (Some(f), _, ns) => ns.failure.as_ref().is_some_and(|g| g.1 == f.1),
                (None, Some(a), ns) => {
                    !a.ok() && ns.answer.as_ref().is_some_and(|b| b.status == a.status)
                }
                (None, None, _) => true,
            };
        if same_as_non_stream {
            continue;
        }
        let (level, text) = match (&c.failure, &c.answer) {
            (Some((_, why)), _) => (Level::Error, format!("{}: {why}", c.label())),
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
        let Some(a) = r.checks[at].answer.as_ref().filter(|_| works[n]) else {
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
                http_client::MAX_BODY >> 10
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
    if let (Some(l), "flag") = (&listed, r.model_source)
        && !l.is_empty()
        && !l.iter().any(|m| m == model)
        && !model_reported
    {
        let answered = r.checks.iter().any(|c| {
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
                format!("model '{model}' is not served; served: {}", served(l)),
            );
        }
    }

    let mut command = format!(
        "llmload bench --endpoint {} --api {api} --model {}",
        cfg.url,
        shell_word(model)
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
            format!("not ready: {api} at {} does not work", endpoint.url),
            1,
        ),
    };
    r.say(level, None, text);
    r.exit_code = code;
}

/// The finding about `GET /v1/models`.
fn models_line(c: &Check) -> Option<(Level, String)> {
    if let Some((_, why)) = &c.failure {
        return Some((Level::Warning, format!("GET {MODELS_PATH}: {why}")));
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
fn alternatives(
    checks: &[Check],
    cfg: &Config,
    endpoint: &Endpoint,
    model: &str,
) -> (String, bool) {
    let api = cfg.protocol.name();
    let (base, explicit_path) = base_url(&cfg.url);
    let mut found = Vec::new();
    let mut tried = Vec::new();
    for c in checks.iter().filter(|c| c.kind == Kind::Path) {
        let (Some(p), Some(a)) = (c.protocol, &c.answer) else {
            continue;
        };
        if p.name() == api && c.path == endpoint.path {
            continue;
        }
        tried.push(c.path.as_str());
        if classify(a, model) != Class::Works {
            continue;
        }
        let hint = if p.name() == api {
            format!("try --endpoint {base}{}", c.path)
        } else if c.path == endpoint.path || (!explicit_path && c.path == p.default_path()) {
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
                "{prefix}: this server does not serve {api} at that path{}",
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
                "{prefix}: model '{model}' is not served{}{server}",
                ctx.listed
                    .map(|l| format!("; served: {}", served(l)))
                    .unwrap_or_default()
            ),
        ),
        Class::Auth if ctx.credentials => (
            Level::Error,
            format!(
                "{prefix}: authentication failed with the credentials given: check --api-key or --header{server}"
            ),
        ),
        Class::Auth => (
            Level::Error,
            format!("{prefix}: authentication failed: pass --api-key or --header{server}"),
        ),
        Class::Redirect => (
            Level::Error,
            format!(
                "{prefix}: redirected to {}: llmload does not follow redirects; probe the final URL \
                 (https needs a TLS-terminating proxy)",
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

/// A model list for a message.
fn served(l: &[String]) -> String {
    if l.is_empty() {
        "none".to_string()
    } else {
        list_some(l, 20)
    }
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

fn list_some(items: &[String], most: usize) -> String {
    if items.len() <= most {
        items.join(", ")
    } else {
        format!("{}, … ({} in all)", items[..most].join(", "), items.len())
    }
}

/// Milliseconds with three significant digits or so, as the report prints them.
fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v < 10.0 {
        format!("{v:.2} ms")
    } else if v < 100.0 {
        format!("{v:.1} ms")
    } else {
        format!("{v:.0} ms")
    }
}

fn ms_json(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| {
        json!((d.as_secs_f64() * 1e6).round() / 1e3)
    })
}

/// What a discovery or chosen request found, in a few words.
fn note(c: &Check, model: &str) -> String {
    if let Some((short, _)) = &c.failure {
        return short.clone();
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

impl Report {
    /// The report a person reads.
    fn render(&self) -> String {
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
                        c.failure.as_ref().map_or("", |f| f.0.as_str())
                    );
                }
                Kind::Models => {
                    let what = match (&c.models, &c.failure) {
                        (Some(ids), _) => list_some(ids, 10),
                        (None, Some(f)) => f.0.clone(),
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
    fn to_json(&self, cfg: &Config) -> Value {
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
                    "failure": c.failure.as_ref().map(|f| f.1.clone()),
                    "note": match c.kind {
                        Kind::Path | Kind::NonStream | Kind::Stream => json!(note(c, model)),
                        _ => Value::Null,
                    },
                    "verdicts": self.verdicts.iter().filter(|v| v.check == Some(i)).map(verdict).collect::<Vec<_>>(),
                });
                if c.kind == Kind::Connect {
                    j["addr"] = json!(self.addr);
                }
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
            "model_source": if self.model_source.is_empty() { Value::Null } else { json!(self.model_source) },
            "timeout_ms": ms_json(Some(cfg.timeout)),
            "result": self.result(),
            "exit_code": self.exit_code,
            "checks": checks,
            "verdicts": self.verdicts.iter().map(verdict).collect::<Vec<_>>(),
        })
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::openai_chat::OpenAiChat;

    #[test]
    fn model_mentions() {
        let vllm = "The model `x-7b` does not exist.";
        assert!(mentions_model(vllm, "x-7b", 404));
        assert!(
            mentions_model(vllm, "other", 400),
            "word and phrase suffice"
        );
        let mock = "unknown path; this server has POST /v1/chat/completions and GET /v1/models";
        assert!(!mentions_model(mock, "m", 404));
        assert!(!mentions_model("Not Found", "m", 404));
        assert!(mentions_model("no model named m", "m", 404));
        assert!(
            !mentions_model("no model named m", "m", 400),
            "a name alone is a 404's"
        );
        assert!(!mentions_model(
            "This model's maximum context length is 4096 tokens",
            "x",
            400
        ));
        assert!(mentions_model("Unknown model: gpt-x.", "gpt-x", 400));
    }

    #[test]
    fn redaction_masks_raw_and_escaped_forms() {
        let headers = vec![
            ("X-Api-Key".to_string(), "hdr-secret-1".to_string()),
            ("Authorization".to_string(), "Bearer tok-2345".to_string()),
            ("X-Trace".to_string(), "visible".to_string()),
        ];
        let s = secrets(Some("sk-\"q\"-99"), &headers);
        let text = r#"key sk-"q"-99 json "sk-\"q\"-99" hdr-secret-1 tok-2345 visible"#;
        let out = redact(text, &s);
        assert!(!out.contains("sk-"), "{out}");
        assert!(!out.contains("hdr-secret"), "{out}");
        assert!(!out.contains("tok-2345"), "{out}");
        assert!(out.contains("visible"));
        assert!(secrets(Some("ab"), &[]).is_empty(), "too short to mask");
    }

    fn response(head_ct: &str, body: &[u8], pieces: &[(usize, u64)]) -> Response {
        Response {
            status: 200,
            content_type: Some(head_ct.to_string()),
            event_stream: head_ct == "text/event-stream",
            body: body.to_vec(),
            pieces: pieces
                .iter()
                .map(|&(end, t)| (end, Duration::from_millis(t)))
                .collect(),
            ..Response::default()
        }
    }

    #[test]
    fn ttft_is_the_arrival_of_the_first_output_event() {
        let role =
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
        let tok = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n";
        let fin = b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
        let mut body = Vec::new();
        body.extend_from_slice(role);
        let a = body.len();
        // The token event is split across two reads: it counts at the second.
        body.extend_from_slice(&tok[..10]);
        let b = body.len();
        body.extend_from_slice(&tok[10..]);
        let c = body.len();
        body.extend_from_slice(fin);
        let d = body.len();
        let resp = response(
            "text/event-stream",
            &body,
            &[(a, 5), (b, 20), (c, 30), (d, 40)],
        );
        let ans = read_answer(&resp, &OpenAiChat);
        assert!(ans.sse && ans.output);
        assert_eq!(ans.ttft, Some(Duration::from_millis(30)));
        assert_eq!((ans.events, ans.output_events), (4, 1));
        assert_eq!(
            (ans.prompt_tokens, ans.completion_tokens),
            (Some(3), Some(1))
        );
        assert_eq!(ans.finish, Some(Finish::Length));
        assert_eq!(classify(&ans, "m"), Class::Works);
    }

    #[test]
    fn bodies_and_errors() {
        let ok = br#"{"choices":[{"message":{"content":"hello"},"finish_reason":"stop"}]}"#;
        let ans = read_answer(
            &response("application/json", ok, &[(ok.len(), 9)]),
            &OpenAiChat,
        );
        assert!(ans.output && !ans.sse);
        assert_eq!(ans.completion_tokens, None);
        let inband = br#"{"error":{"message":"over\nloaded"}}"#;
        let ans = read_answer(
            &response("application/json", inband, &[(inband.len(), 1)]),
            &OpenAiChat,
        );
        assert_eq!(ans.in_band.as_deref(), Some("over loaded"));
        assert_eq!(classify(&ans, "m"), Class::InBand);

        let p = &OpenAiChat;
        assert_eq!(
            error_message(p, br#"{"detail":"Not Found"}"#).as_deref(),
            Some("Not Found")
        );
        assert_eq!(
            error_message(p, b"<html><head><title>404 Not Found</title></head></html>").as_deref(),
            Some("404 Not Found")
        );
        assert_eq!(
            error_message(p, b"plain words\nmore").as_deref(),
            Some("plain words")
        );
        assert_eq!(error_message(p, b""), None);
    }

    #[test]
    fn failures_say_what_to_check() {
        let addr = "127.0.0.1:9".parse().unwrap();
        let t = Duration::from_secs(10);
        let refused = describe(&FetchError::Connect(ConnectError::Refused), addr, t);
        assert_eq!(
            refused,
            "connection refused at 127.0.0.1:9: nothing is listening; is the server running and the port right?"
        );
        let tls = FetchError::Malformed {
            what: "x".into(),
            start: vec![0x15, 0x03, 0x01, 0x00, 0x02],
        };
        assert!(describe(&tls, addr, t).contains("speaks TLS"));
        let h2 = FetchError::Malformed {
            what: "x".into(),
            start: vec![0, 0, 0x12, 4, 0, 0, 0, 0, 0],
        };
        assert!(describe(&h2, addr, t).contains("HTTP/2"));
    }

    #[test]
    fn base_urls() {
        assert_eq!(base_url("http://h:1"), ("http://h:1".to_string(), false));
        assert_eq!(base_url("http://h:1/"), ("http://h:1".to_string(), false));
        assert_eq!(
            base_url("http://h:1/nope"),
            ("http://h:1".to_string(), true)
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
