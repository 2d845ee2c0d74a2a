//! What a finished run produced, before anyone renders it: per stage and
//! scenario blocks, the run's totals, generator health and whether the run
//! was complete. The engine fills it; `report` reads it. Why the generator
//! limited a run and why a run is incomplete are enums carrying the raw
//! facts, so the engine formats nothing and the English lives in `report`.
//!
//! Every type here is its own serde form: summary.json's `state` is a
//! `RunResult` as serde writes it, which `llmload merge` reads back whole.
//! Times are CLOCK_MONOTONIC ns of the run's host; `run_start_ns` and
//! `started_wall_ns` are one instant, the anchor a merge rebases them by.

use serde::{Deserialize, Serialize};

use super::block::Block;
use super::dec128;
use super::endpoints::EndpointStats;
use super::errors::ErrorClass;
use super::series::Rollup;
use super::thresholds::{ThresholdName, Verdict};
use super::timeline::RunTimeline;
use crate::plan::Load;
use crate::sys::process::Exit;

/// Generator health: how the load generator itself coped.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct GeneratorStats {
    pub workers: usize,
    /// Requests that found their worker's issue ring full.
    pub ring_full: u64,
    /// Open-loop arrivals held back by `openloop_max_inflight`.
    pub held_back: u64,
    pub waited_for_connection: u64,
    pub completion_ring_full: u64,
    pub itl_truncated: u64,
    pub connections_opened: u64,
    pub stale_retries: u64,
    /// Busiest worker's share of wall time spent handling events (0..1).
    pub worker_busy_max: f64,
    /// Completion records that could not be read; each stopped its worker.
    pub corrupt_records: u64,
    /// Most conversations in flight at once.
    pub max_inflight: u64,
    /// Each worker's peak resident set, KiB, from its reaping (0 when it
    /// could not be read).
    pub worker_max_rss_kib: Vec<u64>,
    /// Reasons the generator, not the endpoint, limited the run.
    pub limits: Vec<Limit>,
}

impl GeneratorStats {
    /// Adds another generator's counters (a shard's): counts add up, the
    /// busiest worker is the busiest of both, workers are listed after
    /// ours. `limits` are left for `Limit::find` on the merged run.
    pub(crate) fn merge(&mut self, o: &GeneratorStats) {
        self.workers += o.workers;
        self.ring_full += o.ring_full;
        self.held_back += o.held_back;
        self.waited_for_connection += o.waited_for_connection;
        self.completion_ring_full += o.completion_ring_full;
        self.itl_truncated += o.itl_truncated;
        self.connections_opened += o.connections_opened;
        self.stale_retries += o.stale_retries;
        self.worker_busy_max = self.worker_busy_max.max(o.worker_busy_max);
        self.corrupt_records += o.corrupt_records;
        self.max_inflight += o.max_inflight;
        self.worker_max_rss_kib.extend(&o.worker_max_rss_kib);
    }
}

/// How a run's connections were opened and how long opening took.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct ConnectionStats {
    /// Connections ready for requests (TCP connected and, for https, the
    /// TLS handshake done), warm-up connections included.
    pub opened: u64,
    /// Of those, TLS handshakes that resumed a session.
    pub resumed: u64,
    /// Attempts that ended without a usable connection (connect or
    /// handshake failed, or timed out).
    pub failed: u64,
    /// Opened during the measured window: what connects/s counts.
    pub opened_in_window: u64,
    /// Some endpoint was https.
    pub tls: bool,
    /// Every endpoint reused its connections (no `--keep-alive false`).
    pub keep_alive: bool,
    pub tcp_connect: ConnTimes,
    pub tls_handshake: ConnTimes,
}

impl ConnectionStats {
    /// Adds another run's connections (a shard's): counts and times add
    /// up; TLS if either had it, keep-alive only if both kept connections.
    pub(crate) fn merge(&mut self, o: &ConnectionStats) {
        self.opened += o.opened;
        self.resumed += o.resumed;
        self.failed += o.failed;
        self.opened_in_window += o.opened_in_window;
        self.tls |= o.tls;
        self.keep_alive &= o.keep_alive;
        self.tcp_connect.merge(&o.tcp_connect);
        self.tls_handshake.merge(&o.tls_handshake);
    }
}

/// Durations kept as bucket counts (the workers' fixed log-linear
/// histograms, merged): each non-empty bucket's middle value and count,
/// ascending, beside the exact count, sum, minimum and maximum. Percentiles
/// are within a bucket's width (under 1.6 %) of the true ones; the exact
/// fields are exact.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct ConnTimes {
    /// (value ns, count), ascending by value.
    pub buckets: Vec<(u64, u64)>,
    pub count: u64,
    #[serde(with = "dec128")]
    #[cfg_attr(test, schemars(schema_with = "dec128::schema"))]
    pub sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl ConnTimes {
    /// Adds `o`'s durations: the same fixed buckets, so exactly.
    pub(crate) fn merge(&mut self, o: &ConnTimes) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = o.clone();
            return;
        }
        self.count += o.count;
        self.sum_ns += o.sum_ns;
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        // Both ascending: the stable sort finds the two runs and merges
        // them in one pass, whatever their lengths.
        self.buckets.extend_from_slice(&o.buckets);
        self.buckets.sort_by_key(|&(v, _)| v);
        self.buckets.dedup_by(|next, kept| {
            next.0 == kept.0 && {
                kept.1 += next.1;
                true
            }
        });
    }

    /// The `q` quantile (0..=1) in ns, the nearest-rank bucket's middle
    /// clamped into the exact `[min, max]`; `None` when empty.
    pub(crate) fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        let mut value = self.max_ns;
        for &(v, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                value = v;
                break;
            }
        }
        Some(value.clamp(self.min_ns, self.max_ns))
    }

    /// The summary's rollup, in `unit` ns (1e6 for milliseconds).
    pub(crate) fn rollup(&self, unit: f64) -> Rollup {
        let at = |q: f64| self.quantile_ns(q).map(|v| v as f64 / unit);
        let some = self.count > 0;
        // No sum of squares is kept for connection times: no std_dev.
        let exact = (
            some.then(|| self.min_ns as f64 / unit),
            some.then(|| self.sum_ns as f64 / self.count as f64 / unit),
            None,
            some.then(|| self.max_ns as f64 / unit),
        );
        Rollup::with_grid(self.count, exact, at)
    }
}

/// One way the generator, not the endpoint, set the pace of a run. Each
/// carries its evidence: the count and what it is a share of (`of`, 0 in
/// summaries written before it was kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Limit {
    /// Requests that found their worker's issue ring full.
    RingFull {
        n: u64,
        #[serde(default)]
        of: u64,
    },
    /// Requests that waited for a free connection.
    WaitedForConnection {
        n: u64,
        #[serde(default)]
        of: u64,
    },
    /// Open-loop arrivals held back by `openloop_max_inflight`.
    HeldBack {
        n: u64,
        #[serde(default)]
        of: u64,
    },
    /// Times a worker's completion records waited for the parent.
    CompletionRingFull { n: u64 },
    /// The busiest worker's share of wall time handling events (0..1).
    WorkerBusy { share: f64 },
    /// Requests left the generator late: the run's p99 send lateness, and
    /// how many of `of` sends were later than `LATE_P99_NS`.
    SendLateness {
        p99_ns: u64,
        #[serde(default)]
        late: u64,
        #[serde(default)]
        of: u64,
    },
    /// Connects that failed for lack of file descriptors or local ports.
    Descriptors { fds: u64, ports: u64 },
}

/// A worker busier than this share of wall time could not keep up.
pub(crate) const BUSY_SHARE: f64 = 0.9;
/// Send lateness p99 above this means the generator did not send on time.
pub(crate) const LATE_P99_NS: u64 = 1_000_000;
/// A queueing count (ring full, waited for a connection, held back, late
/// sends) is a limit only from this share of the run's requests: one late
/// send is noise, not a generator that could not keep up.
pub(crate) const QUEUED_SHARE: f64 = 0.01;

impl Limit {
    /// Every limit `g` and the run's `total` show, in report order.
    /// `offline`: every stage is offline, so every request is due at once
    /// and waiting for a ring slot or a connection is the load asked for,
    /// not a limit. When most requests failed, the endpoint's failures set
    /// the pace (a refused connect frees its slot at once, a queue of them
    /// is no generator's fault), so queueing is not a limit either.
    pub(crate) fn find(g: &GeneratorStats, total: &Block, offline: bool) -> Vec<Limit> {
        let mut out = Vec::new();
        let of = total.issued;
        let failing = total.failed > 0 && total.failed * 2 >= total.issued;
        let queueing = !offline && !failing;
        let enough = |n: u64| n > 0 && n as f64 >= QUEUED_SHARE * of as f64;
        let counts = [
            (
                queueing && enough(g.ring_full),
                Limit::RingFull { n: g.ring_full, of },
            ),
            (
                queueing && enough(g.waited_for_connection),
                Limit::WaitedForConnection {
                    n: g.waited_for_connection,
                    of,
                },
            ),
            (
                !failing && enough(g.held_back),
                Limit::HeldBack { n: g.held_back, of },
            ),
            (
                g.completion_ring_full > 0,
                Limit::CompletionRingFull {
                    n: g.completion_ring_full,
                },
            ),
        ];
        out.extend(counts.into_iter().filter(|(is, _)| *is).map(|(_, l)| l));
        if g.worker_busy_max > BUSY_SHARE {
            out.push(Limit::WorkerBusy {
                share: g.worker_busy_max,
            });
        }
        let sends = total.send_lateness.count();
        let late: u64 = total
            .send_lateness
            .recorded()
            .filter(|&(v, _)| v > LATE_P99_NS)
            .map(|(_, n)| n)
            .sum();
        if let Some(p99_ns) = total.send_lateness.quantile_ns(0.99)
            && p99_ns > LATE_P99_NS
            && queueing
            && enough(late)
            && late > 1
        {
            out.push(Limit::SendLateness {
                p99_ns,
                late,
                of: sends,
            });
        }
        let fds = total.errors.get(ErrorClass::FdExhausted);
        let ports = total.errors.get(ErrorClass::PortsExhausted);
        if fds + ports > 0 {
            out.push(Limit::Descriptors { fds, ports });
        }
        out
    }
}

/// A stage broke a threshold and `abort_on_fail` skipped the stages after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct ThresholdAbort {
    pub stage: String,
    /// The thresholds it broke.
    pub broken: Vec<ThresholdName>,
}

/// The total length of `intervals` once overlaps are counted once: how
/// long a union of measured windows lasted, ns.
pub(crate) fn union_ns(intervals: &[(u64, u64)]) -> u64 {
    let mut v: Vec<(u64, u64)> = intervals.iter().filter(|(a, b)| b > a).copied().collect();
    v.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for (a, b) in v {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            _ => {
                total += cur.map_or(0, |(ca, cb)| cb - ca);
                cur = Some((a, b));
            }
        }
    }
    total + cur.map_or(0, |(a, b)| b - a)
}

/// `intervals` as their union: disjoint and ascending; an empty interval
/// (`from == to`) is kept only when nothing else is, so a window that
/// measured nothing still says where it began.
pub(crate) fn union(intervals: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = intervals.iter().filter(|(a, b)| b > a).copied().collect();
    if v.is_empty() {
        return intervals.iter().min().copied().into_iter().collect();
    }
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The first requests all failed alike for a reason load cannot change,
/// and the run stopped (`--fail-fast`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct FailedFast {
    /// How many first completions all failed so.
    pub first: u64,
    /// Their error, as the report keys it (`connect_refused`, `http_404`).
    pub error: String,
    /// The URL the first of them went to.
    pub endpoint: Option<String>,
    /// What the server or the connection said of the first of them.
    pub message: Option<String>,
    /// The cause and its fix, in `probe`'s words, when the command that
    /// ran knows them.
    pub cause: Option<String>,
}

/// Why a run is incomplete: something it was asked to measure was not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Incomplete {
    /// SIGINT, SIGTERM or SIGHUP stopped the run.
    Interrupted,
    /// SIGINT, SIGTERM or SIGHUP came while the run waited for
    /// `--start-at`: it never began, and nothing was sent.
    InterruptedBeforeStart,
    /// The run stopped early: its first requests could not succeed.
    FailedFast(FailedFast),
    /// A worker process died with conversations in flight on it.
    WorkerDied {
        worker: usize,
        pid: i32,
        #[serde(rename = "exit")]
        how: Exit,
        /// Conversations in flight on it, counted as `worker_lost`.
        lost: u64,
    },
    /// A worker wrote a completion record that could not be read, so it was
    /// stopped.
    CorruptRecord {
        worker: usize,
        pid: i32,
        /// Conversations in flight on it, counted as `worker_lost`.
        lost: u64,
    },
    /// Conversations still in flight after the abort that no worker reported.
    NeverReported { lost: u64 },
    /// The later stages were skipped.
    ThresholdAbort(ThresholdAbort),
    /// The accuracy phase could not run, and why.
    AccuracyPhase { why: String },
    /// A merged run lacks shard `index` of `count`: no summary was found.
    ShardMissing { index: u32, count: u32 },
    /// Shard `index` of `count` of a merged run was itself incomplete, for
    /// its summary's `reasons`.
    ShardPartial {
        index: u32,
        count: u32,
        reasons: Vec<String>,
    },
    /// Shard `index` of `count` was left out of a merged run: its state
    /// contradicts itself (`why` names the field), so adding it would give
    /// numbers no run measured.
    ShardInconsistent { index: u32, count: u32, why: String },
}

/// A scenario's results within a stage (or the whole run).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct ScenarioResult {
    pub name: String,
    pub block: Block,
}

/// A stage's results.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct StageResult {
    pub name: String,
    pub load: Load,
    /// Every scenario together.
    pub block: Block,
    pub scenarios: Vec<ScenarioResult>,
    /// Measured window of the stage, ns: the length of `measured`.
    pub window_ns: u64,
    /// The measured window itself, CLOCK_MONOTONIC ns `[from, to]`: the
    /// stage's measured start to its last end; a merged run's is the union
    /// of its shards' (disjoint, ascending).
    pub measured: Vec<(u64, u64)>,
    pub thresholds: Vec<Verdict>,
}

/// What a run produced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub(crate) struct RunResult {
    /// CLOCK_REALTIME ns at `run_start_ns`, read with it.
    pub started_wall_ns: u64,
    /// CLOCK_MONOTONIC ns when the parent's loop began (after the fork):
    /// time zero of the timeline and of the server metrics' points.
    pub run_start_ns: u64,
    pub stages: Vec<StageResult>,
    /// All measured requests (warmup excluded).
    pub total: Block,
    /// Per scenario over the whole run.
    pub scenarios: Vec<ScenarioResult>,
    /// Every stage met every threshold.
    pub thresholds_passed: bool,
    /// Stopped early because a stage broke a threshold (`abort_on_fail`).
    pub aborted_on_threshold: Option<ThresholdAbort>,
    pub total_window_ns: u64,
    /// The run's measured window, as `StageResult::measured`: the end of
    /// warm-up to the last end.
    pub measured: Vec<(u64, u64)>,
    /// The limits each stage was judged by.
    pub thresholds: crate::plan::Thresholds,
    pub warmup: Block,
    pub generator: GeneratorStats,
    pub connections: ConnectionStats,
    pub interrupted: bool,
    /// Every issued request was accounted for and no worker was lost.
    pub complete: bool,
    /// Why not, in the order the report lists them.
    #[serde(rename = "incomplete")]
    pub incomplete_reasons: Vec<Incomplete>,
    /// Start of run to first request on the wire, ns (a `--start-at` wait
    /// left out).
    pub startup_ns: u64,
    /// Each endpoint's share of the measured requests, in the order of
    /// `Plan::endpoints`.
    pub endpoints: Vec<EndpointStats>,
    /// What ended in each second of the run, warm-up included.
    pub timeline: RunTimeline,
    /// `--slo`, so the summary can report goodput against the bounds the
    /// blocks were judged by.
    pub slo: crate::plan::Slo,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::block::RequestSample;

    #[test]
    fn connection_times_roll_up_from_buckets_with_exact_extremes() {
        assert_eq!(ConnTimes::default().rollup(1e6), Rollup::default());
        // 100 connects: 90 near 1 ms, 9 near 5 ms, one of 40 ms.
        let t = ConnTimes {
            buckets: vec![(1_003_520, 90), (5_013_504, 9), (40_108_032, 1)],
            count: 100,
            sum_ns: 90 * 1_000_000 + 9 * 5_000_000 + 40_000_000,
            min_ns: 990_000,
            max_ns: 40_000_000,
        };
        assert_eq!(t.quantile_ns(0.0), Some(1_003_520));
        assert_eq!(t.quantile_ns(0.5), Some(1_003_520));
        assert_eq!(t.quantile_ns(0.9), Some(1_003_520));
        assert_eq!(t.quantile_ns(0.95), Some(5_013_504));
        assert_eq!(t.quantile_ns(0.99), Some(5_013_504));
        // The top bucket's middle is past the exact max: clamped to it.
        assert_eq!(t.quantile_ns(1.0), Some(40_000_000));
        let r = t.rollup(1e6);
        assert_eq!(r.count, 100);
        assert_eq!((r.min, r.max), (Some(0.99), Some(40.0)));
        assert_eq!(r.mean, Some(1.75));
        assert_eq!(r.p999, Some(40.0));
    }

    #[test]
    fn generators_and_connections_add_up() {
        let mut g = GeneratorStats {
            workers: 2,
            ring_full: 1,
            worker_busy_max: 0.4,
            worker_max_rss_kib: vec![10, 11],
            limits: vec![Limit::RingFull { n: 1, of: 0 }],
            ..Default::default()
        };
        g.merge(&GeneratorStats {
            workers: 1,
            ring_full: 2,
            stale_retries: 3,
            worker_busy_max: 0.7,
            worker_max_rss_kib: vec![12],
            ..Default::default()
        });
        assert_eq!((g.workers, g.ring_full, g.stale_retries), (3, 3, 3));
        assert_eq!(g.worker_busy_max, 0.7);
        assert_eq!(g.worker_max_rss_kib, [10, 11, 12]);
        assert_eq!(
            g.limits,
            [Limit::RingFull { n: 1, of: 0 }],
            "found again, not added"
        );
        let times = |v: u64, n: u64| ConnTimes {
            buckets: vec![(v, n)],
            count: n,
            sum_ns: u128::from(v * n),
            min_ns: v,
            max_ns: v,
        };
        let mut c = ConnectionStats {
            opened: 4,
            keep_alive: true,
            tcp_connect: times(1_000, 4),
            ..Default::default()
        };
        let other = ConnectionStats {
            opened: 2,
            failed: 1,
            tls: true,
            keep_alive: false,
            tcp_connect: times(3_000, 2),
            tls_handshake: times(9_000, 2),
            ..Default::default()
        };
        c.merge(&other);
        assert_eq!(
            (c.opened, c.failed, c.tls, c.keep_alive),
            (6, 1, true, false)
        );
        assert_eq!(c.tcp_connect.buckets, [(1_000, 4), (3_000, 2)]);
        assert_eq!((c.tcp_connect.count, c.tcp_connect.sum_ns), (6, 10_000));
        assert_eq!((c.tcp_connect.min_ns, c.tcp_connect.max_ns), (1_000, 3_000));
        assert_eq!(c.tls_handshake, other.tls_handshake);
        // Interleaved buckets keep their order; a shared one adds.
        let mut a = ConnTimes {
            buckets: vec![(1, 1), (5, 2), (9, 3)],
            count: 6,
            sum_ns: 38,
            min_ns: 1,
            max_ns: 9,
        };
        a.merge(&ConnTimes {
            buckets: vec![(0, 1), (5, 4), (7, 1), (12, 2)],
            count: 8,
            sum_ns: 51,
            min_ns: 0,
            max_ns: 12,
        });
        assert_eq!(a.buckets, [(0, 1), (1, 1), (5, 6), (7, 1), (9, 3), (12, 2)]);
    }

    #[test]
    fn windows_overlapping_count_once() {
        assert_eq!(union_ns(&[]), 0);
        assert_eq!(union_ns(&[(10, 20), (15, 30), (40, 45), (50, 50)]), 25);
        assert_eq!(union(&[(40, 45), (10, 20), (15, 30)]), [(10, 30), (40, 45)]);
        assert_eq!(union(&[(7, 7), (5, 5)]), [(5, 5)]);
        assert_eq!(union(&[(20, 10)]), [(20, 10)]);
    }

    #[test]
    fn limits_in_report_order_with_their_facts() {
        assert_eq!(
            Limit::find(&GeneratorStats::default(), &Block::default(), false),
            []
        );
        let g = GeneratorStats {
            ring_full: 3,
            held_back: 2,
            completion_ring_full: 1,
            worker_busy_max: 0.95,
            ..Default::default()
        };
        let mut total = Block::default();
        let late = RequestSample {
            t_sched: 1,
            t_send: 1 + 2_000_000,
            t_end: 3_000_000,
            ..Default::default()
        };
        total.record(&late, []);
        total.record(&late, []);
        let on_time = RequestSample {
            t_sched: 1,
            t_send: 2,
            t_end: 3_000_000,
            ..Default::default()
        };
        total.record(&on_time, []);
        total.record(&on_time, []);
        let no_fd = RequestSample {
            error: Some(ErrorClass::FdExhausted),
            ..Default::default()
        };
        total.record(&no_fd, []);
        total.record(&no_fd, []);
        let limits = Limit::find(&g, &total, false);
        assert_eq!(limits.len(), 6, "{limits:?}");
        assert_eq!(limits[0], Limit::RingFull { n: 3, of: 6 });
        assert_eq!(limits[1], Limit::HeldBack { n: 2, of: 6 });
        assert_eq!(limits[2], Limit::CompletionRingFull { n: 1 });
        assert_eq!(limits[3], Limit::WorkerBusy { share: 0.95 });
        // The p99 of four sends is the latest.
        assert_eq!(
            limits[4],
            Limit::SendLateness {
                p99_ns: 2_000_000,
                late: 2,
                of: 4
            }
        );
        assert_eq!(limits[5], Limit::Descriptors { fds: 2, ports: 0 });
        // At the thresholds themselves the generator kept up.
        let g = GeneratorStats {
            worker_busy_max: BUSY_SHARE,
            ..Default::default()
        };
        assert_eq!(Limit::find(&g, &Block::default(), false), []);
    }

    #[test]
    fn queueing_is_no_limit_offline_when_failing_or_once() {
        let g = GeneratorStats {
            ring_full: 50,
            waited_for_connection: 50,
            ..Default::default()
        };
        let late = |t_send| RequestSample {
            t_sched: 1,
            t_send,
            t_end: t_send + 1,
            ..Default::default()
        };
        let mut ok = Block::default();
        for _ in 0..100 {
            ok.record(&late(3_000_000), []);
        }
        assert_eq!(Limit::find(&g, &ok, false).len(), 3);
        assert_eq!(Limit::find(&g, &ok, true), [], "everything due at once");
        let mut refused = Block::default();
        for _ in 0..100 {
            refused.record(
                &RequestSample {
                    error: Some(ErrorClass::ConnectRefused),
                    ..late(3_000_000)
                },
                [],
            );
        }
        assert_eq!(
            Limit::find(&g, &refused, false),
            [],
            "the endpoint set the pace"
        );
        // One late send in 1000 is under the share, and so is one waiter.
        let mut one = Block::default();
        one.record(&late(5_000_000), []);
        for _ in 0..999 {
            one.record(&late(2), []);
        }
        let g = GeneratorStats {
            waited_for_connection: 1,
            ..Default::default()
        };
        assert_eq!(Limit::find(&g, &one, false), []);
    }
}
