//! MLPerf's `probe` (`inference-endpoint probe --endpoints URL --model M
//! [--requests N] [--prompt TEXT] [--api-type T] [--insecure]`): N
//! non-streamed requests with the prompt, spread over the endpoints, then
//! how many succeeded and their latency, with MLPerf's exit statuses: 0
//! when at least half succeeded, 4 otherwise, 3 when the probe could not be
//! set up (a URL or TLS setting that cannot be used), 2 for videogen (which
//! MLPerf's probe refuses), 1 for a refused flag. The requests are the
//! full probe's (`exchange::send`), so both read answers alike.

use super::defaults::{MLPERF_PROMPT, MLPERF_REQUESTS};
use super::exchange::{self, Kind};
use super::{Config, ProbeArgs, resolve};
use crate::cli::mlperf_status;
use crate::cli::{errln, outln};
use crate::http::endpoint::{Endpoint, redact_url};
use crate::http::redact::redact;
use crate::printable::printable;
use crate::tls::TlsClient;

/// The `--api` name of an MLPerf `--api-type`.
fn api_of(api_type: &str) -> Result<&'static str, (i32, String)> {
    if let Some(api) = crate::config::mlperf::api_of(api_type) {
        return Ok(api);
    }
    match api_type {
        "videogen" => Err((
            mlperf_status::INPUT,
            "Probe does not support api_type=videogen (per-request latencies exceed the probe \
             timeout); use a benchmark from-config run instead"
                .into(),
        )),
        other => Err((
            mlperf_status::FAILED,
            format!("--api-type '{other}': expected openai, openai_completions or sglang"),
        )),
    }
}

/// Runs MLPerf's probe; returns MLPerf's exit status.
pub(super) fn run(mut args: ProbeArgs) -> i32 {
    match plan(&mut args) {
        Ok((urls, requests, prompt)) => {
            args.endpoint = urls.first().cloned();
            let mut cfg = match resolve(args) {
                Ok(c) => c,
                Err(e) => {
                    errln!("llmload probe: {e}");
                    return mlperf_status::FAILED;
                }
            };
            cfg.prompt = prompt;
            probe(&cfg, &urls, requests)
        }
        Err((status, e)) => {
            errln!("llmload probe: {e}");
            status
        }
    }
}

/// The endpoints, the request count and the prompt; `args.api` set from
/// `--api-type`. An error carries its exit status.
fn plan(args: &mut ProbeArgs) -> Result<(Vec<String>, u32, String), (i32, String)> {
    let refused = |e: String| (mlperf_status::FAILED, e);
    let mut urls: Vec<String> = args
        .endpoints
        .iter()
        .flat_map(|e| e.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(String::from)
        .collect();
    if let Some(u) = args.endpoint.take() {
        urls.push(u);
    }
    if urls.is_empty() {
        return Err(refused("Required: --endpoints".into()));
    }
    if args.model.as_deref().is_none_or(str::is_empty) {
        return Err(refused("Required: --model".into()));
    }
    if let Some(t) = &args.api_type {
        args.api = api_of(t)?.to_string();
    }
    let requests = match &args.requests {
        None => MLPERF_REQUESTS,
        Some(n) => match n.parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(refused(format!(
                    "--requests '{n}': expected a whole number ≥ 1"
                )));
            }
        },
    };
    let prompt = args
        .prompt
        .clone()
        .unwrap_or_else(|| MLPERF_PROMPT.to_string());
    Ok((urls, requests, prompt))
}

/// One endpoint, ready to send to.
struct Target {
    endpoint: Endpoint,
    tls: Option<TlsClient>,
}

/// Sends the requests and reports them as MLPerf's probe does.
fn probe(cfg: &Config, urls: &[String], requests: u32) -> i32 {
    let mut targets = Vec::with_capacity(urls.len());
    let shown: Vec<String> = urls.iter().map(|u| redact_url(u)).collect();
    outln!(
        "Probing: {}",
        printable(&redact(&shown.join(","), &cfg.secrets))
    );
    for url in urls {
        let endpoint = match Endpoint::parse(url, cfg.protocol.default_path()) {
            Ok(e) => e,
            Err(e) => return setup_failed(cfg, &e),
        };
        let tls = if endpoint.tls {
            match TlsClient::new(&cfg.tls, &endpoint.hostname) {
                Ok(t) => Some(t),
                Err(e) => return setup_failed(cfg, &e),
            }
        } else {
            None
        };
        targets.push(Target { endpoint, tls });
    }
    let model = cfg.model.clone().unwrap_or_default();
    outln!("Sending {requests} requests...");
    let mut latencies_ms: Vec<f64> = Vec::with_capacity(requests as usize);
    let mut errors: Vec<String> = Vec::new();
    for i in 0..requests {
        let t = &targets[i as usize % targets.len()];
        let c = exchange::send(
            cfg,
            &t.endpoint,
            t.tls.as_ref(),
            Kind::NonStream,
            cfg.protocol,
            &t.endpoint.path,
            &model,
            false,
        );
        match (&c.answer, &c.failure) {
            (Some(a), _) if a.ok() && a.in_band.is_none() => {
                latencies_ms.push(c.latency.unwrap_or_default().as_secs_f64() * 1e3);
            }
            (Some(a), _) => errors.push(format!(
                "probe-{i}: HTTP {}{}",
                a.status,
                a.message
                    .as_deref()
                    .or(a.in_band.as_deref())
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            )),
            (None, Some(f)) => errors.push(format!("probe-{i}: {}", f.short)),
            (None, None) => errors.push(format!("probe-{i}: no answer")),
        }
    }
    let ok = latencies_ms.len() as u32;
    outln!("Completed: {ok}/{requests} successful");
    if !latencies_ms.is_empty() {
        let avg = latencies_ms.iter().sum::<f64>() / latencies_ms.len() as f64;
        let min = latencies_ms.iter().copied().fold(f64::INFINITY, f64::min);
        let max = latencies_ms.iter().copied().fold(0.0, f64::max);
        outln!("Avg latency: {avg:.0}ms");
        outln!("Range: {min:.0}ms - {max:.0}ms");
    }
    if !errors.is_empty() {
        errln!("Errors: {}", errors.len());
        for e in errors.iter().take(3) {
            errln!("  {}", printable(&redact(e, &cfg.secrets)));
        }
        if errors.len() > 3 {
            errln!("  ... +{} more", errors.len() - 3);
        }
    }
    // MLPerf's rule: at least half the requests must succeed.
    if f64::from(ok) < f64::from(requests) * 0.5 {
        errln!("llmload probe: Probe failed: only {ok}/{requests} requests successful");
        return mlperf_status::EXECUTION;
    }
    outln!("Probe successful");
    mlperf_status::OK
}

fn setup_failed(cfg: &Config, e: &str) -> i32 {
    errln!(
        "llmload probe: Probe setup failed: {}",
        printable(&redact(e, &cfg.secrets))
    );
    mlperf_status::SETUP
}
