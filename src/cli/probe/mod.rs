//! `llmload probe`: whether an endpoint can serve a benchmark, found with
//! about ten blocking requests and no load: a connect (with the TLS
//! handshake for https, reported: version, cipher suite, ALPN, the
//! server's certificate and its expiry), `GET /v1/models`, a
//! tiny request to every known API's default path (`protocol::ALL`, so a
//! new format is probed with no change here), then the chosen API
//! non-streamed and streamed, read as a benchmark reads them (TTFT, usage,
//! finish reason, in-band errors).
//!
//! The trade-off is plainness over certainty: each finding is inferred from
//! one response and printed as one `ok:` / `warning:` / `error:` line that
//! says what was seen and what to try; the exit status says only ready (0),
//! works only non-streamed (2) or not ready (1).
//!
//! `exchange` makes the requests and records what came back; `diagnose`
//! turns those records into findings with no I/O (table-tested in `tests`);
//! `render` prints them as text or `--json`; `http::redact` masks the API
//! key and secret-looking header values in everything printed, server
//! echoes too.

mod diagnose;
mod exchange;
mod mlperf;
mod render;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use argh::FromArgs;

use crate::cli::{errln, out};
use crate::config::duration::duration_flag;
use crate::config::resolve::read_key_file;
use crate::config::settings::{flag_struct, with_auth_settings};
use crate::http::endpoint::{Endpoint, redact_url};
use crate::http::headers::{is_secret_header, parse_header_flag};
use crate::protocol::errors::printable;
use crate::protocol::{self, Protocol};
use crate::tls::{TlsClient, TlsSettings};

use crate::http::redact::{redact, secrets};
use diagnose::{Asked, ModelSource, Verdict};
use exchange::{Check, Kind};

/// What `probe` does when a flag is not given; its help shows them.
pub(crate) mod defaults {
    use std::time::Duration;

    use crate::config::settings::defaults;

    defaults! {
        /// The model asked for when /v1/models names none.
        PROBE_MODEL: &str = "default";
        /// Each request's bound, connect included.
        PROBE_TIMEOUT: Duration = Duration::from_secs(10);
        /// MLPerf's probe: how many requests it sends.
        MLPERF_REQUESTS: u32 = 10;
        /// MLPerf's probe: what each request asks.
        MLPERF_PROMPT: &str = "Please write me a joke in 30 words.";
    }
}

// The TLS and authentication flags are `bench`'s own declarations
// (`config::settings::with_auth_settings`), so the two commands spell and
// explain them alike.
with_auth_settings! { flag_struct! {
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
            malformed HTTP, a failed TLS handshake and server errors; when only streaming\n\
            works the status is 0, with a warning. Over https the report gives the TLS version,\n\
            cipher suite, ALPN, the certificate's subject, issuer and expiry (a warning within\n\
            30 days), and the TCP connect and TLS handshake times. The API key,\n\
            secret-looking header values and key files are never printed.",
    example = "{command_name} --endpoint http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct",
    example = "{command_name} --endpoint https://gateway.example/v1/chat/completions --ca-cert corp-ca.pem",
    error_code(
        0,
        "ready: the chosen API works streamed and non-streamed (warnings allowed)"
    ),
    error_code(
        1,
        "not ready: the endpoint cannot serve the chosen API (or a bad flag)"
    ),
    error_code(2, "works only non-streamed: benchmark with --no-stream"),
    error_code(
        3,
        "MLPerf's form (--endpoints, --requests, --prompt, --api-type): the probe could not be set up"
    ),
    error_code(
        4,
        "MLPerf's form: fewer than half of the requests succeeded (2: a bad flag value)"
    )
)]
    struct ProbeArgs {
        /// endpoint URL, http://host:port[/path] or https://host[:port][/path]
        /// (default path from --api)
        #[argh(option)]
        pub endpoint: Option<String>,

        /// MLPerf's probe: endpoint URL(s), comma-separated or repeated;
        /// sends --requests non-streamed requests and reports successes and
        /// latency as inference-endpoint's probe does
        #[argh(option)]
        pub endpoints: Vec<String>,

        /// MLPerf's probe: how many requests (default {MLPERF_REQUESTS})
        #[argh(option)]
        pub requests: Option<String>,

        /// MLPerf's probe: the prompt each request sends (default
        /// {MLPERF_PROMPT})
        #[argh(option)]
        pub prompt: Option<String>,

        /// MLPerf's probe: openai, openai_completions or sglang; openai when
        /// not given
        #[argh(option)]
        pub api_type: Option<String>,

        /// wire format to check, an --api name `llmload bench` knows
        /// (default {API})
        #[argh(option, default = "String::from(crate::config::profile::defaults::API)")]
        pub api: String,

        /// model name (default: the first model listed at /v1/models, else
        /// "{PROBE_MODEL}")
        #[argh(option)]
        pub model: Option<String>,

        /// bound on each request, connect included (default {PROBE_TIMEOUT})
        #[argh(option, from_str_fn(duration_flag), default = "defaults::PROBE_TIMEOUT")]
        pub timeout: Duration,

        /// print one JSON document instead of the report
        #[argh(switch)]
        pub json: bool,
    }
    fields:
} {} }

/// Output tokens asked of each path-discovery request.
const DISCOVERY_TOKENS: u32 = 8;
/// Output tokens asked of the chosen API's two requests.
const CHOSEN_TOKENS: u32 = 16;
const PROMPT: &str = "Say hello in a few words.";
const MODELS_PATH: &str = "/v1/models";

/// The validated flags.
struct Config {
    url: String,
    /// What each request of the chosen API asks.
    prompt: String,
    protocol: &'static dyn Protocol,
    model: Option<String>,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    json: bool,
    /// For an https endpoint.
    tls: TlsSettings,
    /// Strings masked in everything printed.
    secrets: Vec<String>,
    /// The key is `$OPENAI_API_KEY`'s, taken because none was given.
    api_key_from_env: bool,
}

/// The flags that make a probe MLPerf's (`inference-endpoint probe`).
pub(crate) const MLPERF_FLAGS: &[&str] = &["--endpoints", "--requests", "--prompt", "--api-type"];

/// Runs the probe, prints the report (or JSON) and returns the exit status.
pub(crate) fn run(args: ProbeArgs) -> i32 {
    if !args.endpoints.is_empty()
        || args.requests.is_some()
        || args.prompt.is_some()
        || args.api_type.is_some()
    {
        return mlperf::run(args);
    }
    let cfg = match resolve(args) {
        Ok(c) => c,
        Err(e) => {
            errln!("llmload probe: {e}");
            return 1;
        }
    };
    let report = match probe(&cfg) {
        Ok(r) => r,
        Err(e) => {
            errln!("llmload probe: {e}");
            return 1;
        }
    };
    let out = if cfg.json {
        let mut s = serde_json::to_string_pretty(&report.to_json())
            .expect("a JSON value always serializes");
        s.push('\n');
        s
    } else {
        report.render()
    };
    // Masked, then cleared of control characters: model ids, messages and
    // header values come from the server, and must not drive the terminal.
    out!("{}", printable(&redact(&out, &cfg.secrets)));
    report.exit_code
}

fn resolve(a: ProbeArgs) -> Result<Config, String> {
    let Some(url) = a.endpoint else {
        return Err("--endpoint URL is required".into());
    };
    let protocol = protocol::find(&a.api)?;
    let headers = a
        .header
        .iter()
        .map(|h| parse_header_flag(h))
        .collect::<Result<Vec<_>, _>>()?;
    let from_file = match (&a.api_key, &a.api_key_file) {
        (Some(_), Some(_)) => {
            return Err("--api-key and --api-key-file are alternatives; give one".into());
        }
        (None, Some(path)) => Some(read_key_file(path).map_err(|e| format!("--api-key-file {e}"))?),
        _ => None,
    };
    let given = a.api_key.is_some() || from_file.is_some();
    let api_key = a
        .api_key
        .or(from_file)
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
    let secrets = secrets(api_key.as_deref(), &headers, &[&url]);
    Ok(Config {
        api_key_from_env: api_key.is_some() && !given,
        url,
        prompt: PROMPT.to_string(),
        protocol,
        model: a.model,
        api_key,
        headers,
        timeout: a.timeout,
        json: a.json,
        tls: TlsSettings {
            ca_cert: a.ca_cert,
            insecure: a.insecure,
            server_name: a.tls_server_name,
            client_cert: a.client_cert,
            client_key: a.client_key,
        },
        secrets,
    })
}

/// Everything the probe found.
struct Report {
    url: String,
    api: &'static str,
    addr: Option<String>,
    model: Option<String>,
    model_source: Option<ModelSource>,
    timeout: Duration,
    /// For an https endpoint: whether verification was off (`--insecure`).
    insecure: Option<bool>,
    checks: Vec<Check>,
    verdicts: Vec<Verdict>,
    exit_code: i32,
}

/// Runs every check, then draws the conclusions from what they observed.
/// An error is a TLS setting that cannot be used (a file, a name).
fn probe(cfg: &Config) -> Result<Report, String> {
    let mut r = Report {
        url: redact_url(&cfg.url),
        api: cfg.protocol.name(),
        addr: None,
        model: None,
        model_source: None,
        timeout: cfg.timeout,
        insecure: None,
        checks: Vec::new(),
        verdicts: Vec::new(),
        exit_code: 1,
    };
    let endpoint = match Endpoint::parse(&cfg.url, cfg.protocol.default_path()) {
        Ok(e) => e,
        Err(e) => {
            r.verdicts.push(Verdict::error(None, e));
            return Ok(r);
        }
    };
    let tls = if endpoint.tls {
        r.insecure = Some(cfg.tls.insecure);
        Some(TlsClient::new(&cfg.tls, &endpoint.hostname)?)
    } else {
        if let Some(flags) = tls_flags(&cfg.tls) {
            errln!(
                "llmload probe: warning: {flags} apply to https:// endpoints only; ignored for {}",
                r.url
            );
        }
        None
    };
    r.addr = Some(endpoint.addr.to_string());
    if let Some(w) = cleartext_warning(cfg, &endpoint) {
        errln!("llmload probe: warning: {w}");
    }
    let connect = exchange::connect(cfg, &endpoint, tls.as_ref());
    let connected = connect.failure.is_none();
    r.checks.push(connect);
    if connected {
        run_checks(cfg, &endpoint, tls.as_ref(), &mut r);
    }
    let asked = Asked {
        api: cfg.protocol.name(),
        url: &r.url,
        path: &endpoint.path,
        addr: endpoint.addr,
        model: r.model.as_deref().unwrap_or(""),
        model_source: r.model_source,
        credentials: cfg.api_key.is_some() || !cfg.headers.is_empty(),
        tls_flags: diagnose::tls_flags(&cfg.tls),
    };
    let findings = diagnose::diagnose(&asked, &r.checks);
    r.verdicts = findings.verdicts;
    r.exit_code = findings.exit_code;
    Ok(r)
}

/// The TLS flags given, named, when there are any.
fn tls_flags(t: &TlsSettings) -> Option<String> {
    let given: Vec<&str> = [
        ("--ca-cert", t.ca_cert.is_some()),
        ("--insecure", t.insecure),
        ("--tls-server-name", t.server_name.is_some()),
        ("--client-cert", t.client_cert.is_some()),
        ("--client-key", t.client_key.is_some()),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(name, _)| *name)
    .collect();
    (!given.is_empty()).then(|| given.join(", "))
}

/// The warning to give when a credential will travel in clear text to a
/// host off this machine (bench gives the same one).
fn cleartext_warning(cfg: &Config, endpoint: &Endpoint) -> Option<String> {
    if endpoint.tls || endpoint.is_loopback() {
        return None;
    }
    let mut what: Vec<String> = Vec::new();
    if cfg.api_key.is_some() {
        what.push(if cfg.api_key_from_env {
            "the API key from $OPENAI_API_KEY".to_string()
        } else {
            "the API key".to_string()
        });
    }
    what.extend(
        cfg.headers
            .iter()
            .filter(|(k, _)| is_secret_header(k))
            .map(|(k, _)| format!("header {k}")),
    );
    (!what.is_empty()).then(|| {
        format!(
            "{} will be sent in clear text (plain http) to {}; anyone on the network path can read it",
            what.join(", "),
            endpoint.host
        )
    })
}

/// The checks after a successful connect: the model list, every known API
/// path, then the chosen API non-streamed and streamed. A failure every
/// request would meet (a refused handshake, TLS on an http:// URL) ends
/// them at the model list.
fn run_checks(cfg: &Config, endpoint: &Endpoint, tls: Option<&TlsClient>, r: &mut Report) {
    let mut models = exchange::list_models(cfg, endpoint, tls);
    if models.failure.as_ref().is_some_and(|f| f.handshake) {
        // The client's side of a TLS 1.3 handshake ends before the server
        // has judged it (its client certificate): a refusal arrives with
        // the first request, and belongs to the connect.
        let connect = &mut r.checks[0];
        connect.failure = models.failure.take();
        return;
    }
    if models.failure.as_ref().is_some_and(|f| f.every_request) {
        r.checks.push(models);
        return;
    }
    let (model, source) = match (&cfg.model, models.models.as_ref().and_then(|l| l.first())) {
        (Some(m), _) => (m.clone(), ModelSource::Flag),
        (None, Some(first)) => (first.clone(), ModelSource::Listed),
        (None, None) => (defaults::PROBE_MODEL.to_string(), ModelSource::Default),
    };
    r.checks.push(models);
    r.model = Some(model.clone());
    r.model_source = Some(source);

    for (p, path) in targets(cfg.protocol, &endpoint.path) {
        let c = exchange::send(cfg, endpoint, tls, Kind::Path, p, &path, &model, false);
        r.checks.push(c);
    }
    for (kind, stream) in [(Kind::NonStream, false), (Kind::Stream, true)] {
        let c = exchange::send(
            cfg,
            endpoint,
            tls,
            kind,
            cfg.protocol,
            &endpoint.path,
            &model,
            stream,
        );
        r.checks.push(c);
    }
}

/// The path-discovery requests: the URL's own path with the chosen API
/// first, then every protocol's default path that is not that same pair.
fn targets(chosen: &'static dyn Protocol, path: &str) -> Vec<(&'static dyn Protocol, String)> {
    let mut targets = vec![(chosen, path.to_string())];
    for &p in protocol::ALL {
        if !targets
            .iter()
            .any(|(q, path)| q.name() == p.name() && path == p.default_path())
        {
            targets.push((p, p.default_path().to_string()));
        }
    }
    targets
}
