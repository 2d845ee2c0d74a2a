//! `--server-metrics`: which `/metrics` a run scrapes, the scraper started
//! after the workers fork and stopped when they are done, and what it saw
//! turned into the summary's `server_metrics` block.
//!
//! `auto` asks the first scenario's endpoint's origin once, before the
//! fork, within `PROBE_TIMEOUT`, and scrapes only an answer of 200 with
//! Prometheus text holding a sample; anything else leaves a note and no
//! block. A URL given is scraped whatever it answers: its failures are
//! counted in the block, and no failure stops the run. Requests carry the
//! first scenario's headers and key, which no output echoes.

use std::net::SocketAddr;
use std::time::Duration;

use crate::config::BenchConfig;
use crate::http::endpoint::{Endpoint, redact_url};
use crate::http::headers::is_auth_header;
use crate::plan::ServerMetrics;
use crate::report::summary::server::{ServerMetricsSummary, ServerSeries};
use crate::scrape::{self, Scraped, Scraper, Target};
use crate::tls::TlsClient;

/// How long `auto` waits for `/metrics` before the run.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What to scrape, decided before the fork.
pub(super) struct Watch {
    target: Option<Target>,
    /// A URL that could not be used: reported as a failed scrape.
    failed: Option<Scraped>,
    /// For the report's notes (`auto` found nothing).
    pub note: Option<String>,
    interval_ns: u64,
}

impl Watch {
    /// Nothing to scrape.
    pub(super) fn off() -> Watch {
        Watch {
            target: None,
            failed: None,
            note: None,
            interval_ns: 0,
        }
    }

    /// Resolves `cfg.server_metrics` (`builtin`: the built-in endpoint's
    /// address, when it runs); `auto` asks the endpoint once.
    pub(super) fn prepare(cfg: &BenchConfig, builtin: Option<SocketAddr>) -> Watch {
        let mut w = Watch::off();
        w.interval_ns = cfg.server_metrics_interval_ns;
        let Some(sc) = cfg.scenarios.first() else {
            return w;
        };
        let mut headers = sc.headers.clone();
        if let Some(key) = &cfg.api_key
            && !headers.iter().any(|(k, _)| is_auth_header(k))
        {
            headers.extend(sc.protocol.auth_headers(key));
        }
        let tls = |e: &Endpoint| -> Result<Option<TlsClient>, String> {
            e.tls
                .then(|| TlsClient::new(&sc.tls, &e.hostname))
                .transpose()
        };
        match &cfg.server_metrics {
            ServerMetrics::Off => {}
            ServerMetrics::Auto => {
                let first = match (&sc.endpoint, builtin) {
                    (Some(e), _) => e.clone(),
                    (None, Some(addr)) => Endpoint::local(addr, "/"),
                    (None, None) => return w,
                };
                let scheme = if first.tls { "https" } else { "http" };
                let endpoint = Endpoint {
                    url: format!("{scheme}://{}/metrics", first.host),
                    path: "/metrics".to_string(),
                    ..first
                };
                let shown = endpoint.display();
                let found = match tls(&endpoint) {
                    Ok(tls) if endpoint.resolved() => {
                        let target = Target {
                            endpoint,
                            headers,
                            tls,
                        };
                        scrape::probe(&target, PROBE_TIMEOUT).map(|()| target)
                    }
                    Ok(_) => Err("the host did not resolve".to_string()),
                    Err(e) => Err(e),
                };
                match found {
                    Ok(t) => w.target = Some(t),
                    Err(why) => {
                        w.note = Some(format!("server metrics: none found at {shown} ({why})"))
                    }
                }
            }
            ServerMetrics::Url(url) => {
                let parsed = Endpoint::parse(url, "/metrics")
                    .map_err(|e| e.replacen("--endpoint", "--server-metrics", 1))
                    .and_then(|e| Ok((tls(&e)?, e)));
                match parsed {
                    Ok((tls, endpoint)) => {
                        w.target = Some(Target {
                            endpoint,
                            headers,
                            tls,
                        })
                    }
                    Err(why) => {
                        w.failed = Some(Scraped::failed(redact_url(url), w.interval_ns, why))
                    }
                }
            }
        }
        w
    }

    /// Starts scraping (after the fork: this starts a thread).
    pub(super) fn start(self) -> Running {
        match self.target {
            Some(t) => {
                let url = t.shown();
                match Scraper::start(t, self.interval_ns) {
                    Ok(s) => Running::Scraping(s),
                    Err(why) => Running::Done(Some(Scraped::failed(url, self.interval_ns, why))),
                }
            }
            None => Running::Done(self.failed),
        }
    }
}

/// The scraper while the run goes on.
pub(super) enum Running {
    Scraping(Scraper),
    Done(Option<Scraped>),
}

impl Running {
    /// Stops scraping; what was seen, if anything was to be scraped.
    pub(super) fn stop(self) -> Option<Scraped> {
        match self {
            Running::Scraping(s) => Some(s.stop()),
            Running::Done(s) => s,
        }
    }
}

/// The summary's block: times from `run_start_ns`, the run's time zero.
pub(super) fn summary(s: &Scraped, run_start_ns: u64) -> ServerMetricsSummary {
    let found = s.found(run_start_ns);
    ServerMetricsSummary {
        url: s.url.clone(),
        server: found.server.to_string(),
        interval_s: s.interval_ns as f64 / 1e9,
        scrapes: s.scrapes,
        failures: s.failures,
        error: s.error.clone(),
        series: found
            .series
            .into_iter()
            .map(|x| ServerSeries {
                name: x.name,
                key: x.key.to_string(),
                kind: x.kind.name().to_string(),
                points: x.points,
                mean: x.mean,
                max: x.max,
            })
            .collect(),
    }
}
