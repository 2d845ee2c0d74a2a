//! The endpoint's own metrics (`--server-metrics`): its Prometheus
//! `/metrics` read every interval during the run by one thread of the
//! parent — never a worker, and started only after the workers are forked,
//! so each still begins as a copy of a single-threaded process.
//!
//! Each scrape goes through the blocking client (`http::blocking`: TLS and
//! one deadline), is parsed strictly (`parse`), and keeps, per metric name
//! any server's table reads (`names`), the sum over its label sets with
//! the monotonic time of the scrape. Which server it is, which names are
//! kept, and what the points are (a gauge's values; a counter's rate per
//! second between scrapes, an interval with a reset left out; a ratio of
//! two counters' increases) is decided after the run (`Scraped::found`),
//! so a name that appears late still counts. A failed scrape is counted
//! and its reason kept (the first); it never stops the run.
//!
//! The trade-off is memory for simplicity: every scrape's sums are kept
//! (a few hundred bytes each, under 1 MiB for an hour at 1 s).

#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod names;
pub(crate) mod parse;

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::clock::now_ns;
use crate::http::blocking;
use crate::http::endpoint::Endpoint;
use crate::tls::TlsClient;
pub(crate) use names::Kind;

/// Where and how to scrape.
#[derive(Clone)]
pub(crate) struct Target {
    /// Its `path` is the metrics path (and query).
    pub endpoint: Endpoint,
    /// The run's headers (credentials included: never echoed).
    pub headers: Vec<(String, String)>,
    pub tls: Option<TlsClient>,
}

impl Target {
    /// The URL as echoed: query values masked.
    pub(crate) fn shown(&self) -> String {
        self.endpoint.display()
    }

    /// One scrape within `timeout`: the sum of each of `watched`'s names
    /// over its label sets (`None`: the name is absent), and how many
    /// samples the text had.
    fn scrape(
        &self,
        watched: &HashMap<&'static str, usize>,
        timeout: Duration,
    ) -> Result<(Vec<Option<f64>>, usize), String> {
        let mut headers: Vec<(&str, &str)> = vec![("Accept", "text/plain;version=0.0.4")];
        headers.extend(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let resp = blocking::get(
            &self.endpoint,
            &self.endpoint.path,
            &headers,
            timeout,
            self.tls.as_ref(),
        )
        .map_err(|e| e.to_string())?;
        if resp.status != 200 {
            return Err(format!("HTTP {}", resp.status));
        }
        // Sums over a prefix would be counted as the server's whole state.
        if resp.truncated {
            return Err(format!(
                "the body is longer than {} MiB: not read, its sums would be partial",
                blocking::MAX_BODY >> 20
            ));
        }
        let text = std::str::from_utf8(&resp.body)
            .map_err(|e| format!("not Prometheus text: not UTF-8 at byte {}", e.valid_up_to()))?;
        let mut sums = vec![None; watched.len()];
        let n = parse::parse(text, |s| {
            if let Some(&i) = watched.get(s.name) {
                let sum: &mut Option<f64> = &mut sums[i];
                *sum = Some(sum.unwrap_or(0.0) + s.value);
            }
        })
        .map_err(|e| format!("not Prometheus text: {e}"))?;
        Ok((sums, n))
    }
}

/// Whether `target` answers 200 with Prometheus text holding at least one
/// sample, within `timeout`: what `--server-metrics auto` asks before it
/// uses an endpoint's `/metrics`.
pub(crate) fn probe(target: &Target, timeout: Duration) -> Result<(), String> {
    let (_, n) = target.scrape(&HashMap::new(), timeout)?;
    if n == 0 {
        return Err("no samples".to_string());
    }
    Ok(())
}

/// One successful scrape: when, and the sums of the watched names.
#[derive(Clone, Debug)]
struct Row {
    t_ns: u64,
    values: Vec<Option<f64>>,
}

/// What the scraper thread saw.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scraped {
    /// As echoed: query values masked.
    pub url: String,
    pub interval_ns: u64,
    /// Scrapes tried.
    pub scrapes: u64,
    /// Of those, the ones that failed (no answer, not 200, not Prometheus
    /// text).
    pub failures: u64,
    /// The first failure's reason.
    pub error: Option<String>,
    rows: Vec<Row>,
    watched: Vec<&'static str>,
}

impl Scraped {
    /// A scrape that never started (the URL did not resolve): one failure.
    pub(crate) fn failed(url: String, interval_ns: u64, why: String) -> Scraped {
        Scraped {
            url,
            interval_ns,
            failures: 1,
            error: Some(why),
            ..Scraped::default()
        }
    }

    fn record(&mut self, got: Result<Vec<Option<f64>>, String>, t_ns: u64) {
        self.scrapes += 1;
        match got {
            Ok(values) => self.rows.push(Row { t_ns, values }),
            Err(e) => {
                self.failures += 1;
                self.error.get_or_insert(e);
            }
        }
    }
}

/// The scraper thread: stopped (and joined) by `stop`.
pub(crate) struct Scraper {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Scraped>,
}

/// The longest one scrape may take, however long the interval: a stuck
/// server must not hold the end of the run.
const MAX_TIMEOUT: Duration = Duration::from_secs(5);
/// And the shortest, however short the interval: a loaded machine's
/// loopback is not that slow, but a real server's `/metrics` can be.
const MIN_TIMEOUT: Duration = Duration::from_secs(1);

impl Scraper {
    /// Starts scraping `target` now and then every `interval_ns` (ticks
    /// missed behind a slow scrape are skipped, not bunched).
    pub(crate) fn start(target: Target, interval_ns: u64) -> Result<Scraper, String> {
        let (stop, stopped) = mpsc::channel::<()>();
        let watched = names::watched();
        let mut out = Scraped {
            url: target.shown(),
            interval_ns,
            watched: watched.clone(),
            ..Scraped::default()
        };
        let index: HashMap<&'static str, usize> =
            watched.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let interval_ns = interval_ns.max(1);
        let timeout = Duration::from_nanos(interval_ns).clamp(MIN_TIMEOUT, MAX_TIMEOUT);
        let thread = std::thread::Builder::new()
            .name("llmload-scrape".into())
            .spawn(move || {
                let start = now_ns();
                let mut tick: u64 = 0;
                let mut last_ok;
                loop {
                    let got = target.scrape(&index, timeout).map(|(v, _)| v);
                    last_ok = got.is_ok();
                    out.record(got, now_ns());
                    let now = now_ns();
                    tick = tick.max((now - start) / interval_ns) + 1;
                    let wait = (start + tick * interval_ns).saturating_sub(now);
                    match stopped.recv_timeout(Duration::from_nanos(wait)) {
                        Err(RecvTimeoutError::Timeout) => {}
                        // Stopped: one last scrape, so counters cover the
                        // run's end — unless the last one failed, when
                        // another would only hold the run's end up.
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                            if last_ok {
                                let got = target.scrape(&index, MIN_TIMEOUT).map(|(v, _)| v);
                                out.record(got, now_ns());
                            }
                            return out;
                        }
                    }
                }
            })
            .map_err(|e| format!("cannot start the metrics scraper thread: {e}"))?;
        Ok(Scraper { stop, thread })
    }

    /// Stops the thread (after its last scrape) and returns what it saw.
    pub(crate) fn stop(self) -> Scraped {
        let _ = self.stop.send(());
        match self.thread.join() {
            Ok(s) => s,
            Err(_) => Scraped {
                error: Some("the metrics scraper thread panicked".to_string()),
                ..Scraped::default()
            },
        }
    }
}

/// The server found and its kept series.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Found {
    /// `vllm`, `sglang`, `tgi`, `llmload`, or `unknown`.
    pub server: &'static str,
    pub series: Vec<Series>,
}

/// One kept metric over the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Series {
    pub key: &'static str,
    /// The server's name for it (`hits / queries` for a ratio).
    pub name: String,
    pub kind: Kind,
    /// `[seconds since zero, value]`.
    pub points: Vec<[f64; 2]>,
    /// A gauge's mean over its points; a counter's increase over the
    /// time it covers; a ratio's increases over each other.
    pub mean: Option<f64>,
    pub max: Option<f64>,
}

impl Scraped {
    /// The server and its series, times in seconds from `zero_ns` (the
    /// run's start). A gauge's points before zero are left out; a counter's
    /// interval that ends after zero is kept whole.
    pub(crate) fn found(&self, zero_ns: u64) -> Found {
        let present = |name: &str| {
            self.watched
                .iter()
                .position(|w| *w == name)
                .is_some_and(|i| self.rows.iter().any(|r| r.values[i].is_some()))
        };
        let Some(server) = names::detect(&present) else {
            return Found {
                server: "unknown",
                series: Vec::new(),
            };
        };
        let column = |name: &str| -> Vec<(u64, f64)> {
            let Some(i) = self.watched.iter().position(|w| *w == name) else {
                return Vec::new();
            };
            self.rows
                .iter()
                .filter_map(|r| r.values[i].map(|v| (r.t_ns, v)))
                .collect()
        };
        let series = names::chosen(server, &present)
            .into_iter()
            .map(|k| match k.kind {
                Kind::Gauge => gauge(k.key, k.name, &column(k.name), zero_ns),
                Kind::Counter => counter(k.key, k.name, &column(k.name), zero_ns),
                Kind::Ratio { per } => {
                    ratio(k.key, k.name, per, &self.rows, &self.watched, zero_ns)
                }
            })
            .collect();
        Found {
            server: server.name,
            series,
        }
    }
}

fn secs(t_ns: u64, zero_ns: u64) -> f64 {
    (t_ns as f64 - zero_ns as f64) / 1e9
}

fn max_of(points: &[[f64; 2]]) -> Option<f64> {
    points.iter().map(|p| p[1]).reduce(f64::max)
}

fn gauge(key: &'static str, name: &str, col: &[(u64, f64)], zero_ns: u64) -> Series {
    let points: Vec<[f64; 2]> = col
        .iter()
        .filter(|(t, v)| *t >= zero_ns && v.is_finite())
        .map(|&(t, v)| [secs(t, zero_ns), v])
        .collect();
    let mean = (!points.is_empty())
        .then(|| points.iter().map(|p| p[1]).sum::<f64>() / points.len() as f64);
    Series {
        key,
        name: name.to_string(),
        kind: Kind::Gauge,
        max: max_of(&points),
        points,
        mean,
    }
}

/// Rates between consecutive values; a decrease is a reset (the server
/// restarted), and that interval is left out.
fn counter(key: &'static str, name: &str, col: &[(u64, f64)], zero_ns: u64) -> Series {
    let (mut grown, mut span_ns) = (0.0, 0u64);
    let mut points = Vec::new();
    for w in col.windows(2) {
        let ((t0, v0), (t1, v1)) = (w[0], w[1]);
        let dv = v1 - v0;
        let grew = dv.is_finite() && dv >= 0.0;
        if t1 <= zero_ns || t1 <= t0 || !grew {
            continue;
        }
        grown += dv;
        span_ns += t1 - t0;
        points.push([secs(t1, zero_ns), dv * 1e9 / (t1 - t0) as f64]);
    }
    Series {
        key,
        name: name.to_string(),
        kind: Kind::Counter,
        max: max_of(&points),
        mean: (span_ns > 0).then(|| grown * 1e9 / span_ns as f64),
        points,
    }
}

/// `name`'s increase over `per`'s between consecutive scrapes that have
/// both; intervals with a reset or no increase of `per` are left out.
fn ratio(
    key: &'static str,
    name: &str,
    per: &'static str,
    rows: &[Row],
    watched: &[&'static str],
    zero_ns: u64,
) -> Series {
    let at = |n: &str| watched.iter().position(|w| *w == n);
    let both: Vec<(u64, f64, f64)> = match (at(name), at(per)) {
        (Some(a), Some(b)) => rows
            .iter()
            .filter_map(|r| Some((r.t_ns, r.values[a]?, r.values[b]?)))
            .collect(),
        _ => Vec::new(),
    };
    let (mut num, mut den) = (0.0, 0.0);
    let mut points = Vec::new();
    for w in both.windows(2) {
        let ((t0, a0, b0), (t1, a1, b1)) = (w[0], w[1]);
        let (da, db) = (a1 - a0, b1 - b0);
        let grew = da.is_finite() && da >= 0.0 && db.is_finite() && db > 0.0;
        if t1 <= zero_ns || t1 <= t0 || !grew {
            continue;
        }
        num += da;
        den += db;
        points.push([secs(t1, zero_ns), da / db]);
    }
    Series {
        key,
        name: format!("{name} / {per}"),
        kind: Kind::Ratio { per },
        max: max_of(&points),
        mean: (den > 0.0).then(|| num / den),
        points,
    }
}

#[cfg(test)]
mod tests;
