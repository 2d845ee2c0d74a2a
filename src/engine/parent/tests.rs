//! The parent against hand-made workers: real rings and real child
//! processes (which only sleep), with the records written here, so a dead or
//! corrupt worker can be staged exactly: what is lost, where it is charged,
//! and what stays in flight.

use std::time::{Duration, Instant};

use super::*;
use crate::engine::record::{CONV_END, Completion, FOLDED, SERIES, STREAMED, series_bytes};
use crate::engine::requests::RequestSet;
use crate::engine::{EndpointPlan, ScenarioPlan};
use crate::metrics::errors::ErrorClass;
use crate::metrics::series::Series;
use crate::plan::{Limits, Load, StagePlan, Thresholds};
use crate::shm::ring::ByteProducer;
use crate::sys::process::{Exit, fork_child};

const MS: u64 = 1_000_000;
const WORKERS: usize = 2;

fn scenario(name: &str) -> ScenarioPlan<'static> {
    ScenarioPlan::plain(
        name,
        crate::protocol::find("openai-chat").unwrap(),
        vec![0],
        RequestSet::default(),
    )
}

/// Two scenarios, two closed-loop stages of concurrency 4, two workers.
fn plan() -> Plan<'static> {
    let stage = |name: &str| StagePlan {
        name: name.into(),
        load: Load::Closed { concurrency: 4 },
        duration_ns: Some(1_000 * MS),
        requests: None,
        min_ns: None,
    };
    Plan {
        secrets: Vec::new(),
        endpoints: vec![EndpointPlan {
            url: "http://127.0.0.1:9".into(),
            addr: None,
            tls: None,
            keep_alive: true,
        }],
        scenarios: vec![scenario("a"), scenario("b")],
        stages: vec![stage("one"), stage("two")],
        warmup_ns: 0,
        warmup_requests: 0,
        workers: WORKERS,
        pin: false,
        connections: 4,
        openloop_max_inflight: None,
        limits: Limits {
            timeout_ns: 1_000 * MS,
            ttft_ns: None,
            connect_ns: 1_000 * MS,
            drain_ns: 1_000 * MS,
            max_gaps: 16,
            max_output_text: 1 << 20,
        },
        scheduler_seed: 1,
        dataloader_seed: 1,
        python_draws: None,
        keep_text: false,
        tokenizer: None,
        token_source: crate::plan::TokenPolicy::Auto,
        thresholds: Thresholds::default(),
        live_interval_ns: 0,
        fail_fast: None,
        slo: crate::plan::Slo::default(),
        io: Default::default(),
        start_at_unix_ns: None,
        uniform_phase: 0.0,
        partition: None,
    }
}

/// Children that only sleep, standing in for workers; killed and reaped
/// on drop.
struct Sleepers(Vec<Child>);

impl Sleepers {
    fn new() -> Sleepers {
        Sleepers(
            (0..WORKERS)
                .map(|_| {
                    fork_child(|| {
                        std::thread::sleep(Duration::from_secs(60));
                        0
                    })
                    .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for c in &self.0 {
            let _ = c.kill();
        }
        crate::sys::process::reap_all(&mut self.0, Instant::now());
    }
}

/// The parent over `shared`'s rings and `children`; returns it and the
/// workers' completion producers.
fn parent<'a>(
    plan: &'a Plan<'a>,
    shared: &'a Shared,
    children: &'a mut [Child],
) -> (Parent<'a, 'static, 'static>, Vec<ByteProducer>) {
    let mut producers = Vec::new();
    let ends = children
        .iter_mut()
        .enumerate()
        .map(|(k, child)| {
            let (issue, done) = shared.take_parent_ends(k).unwrap();
            producers.push(shared.take_worker_ends(k).unwrap().1);
            WorkerEnd::new(child, issue, done)
        })
        .collect();
    let mut p = Parent::new(plan, shared, ends, None, None);
    // Measurement begins at 1 s; stage "one" is under way.
    p.measure_start = 1_000 * MS;
    p.stage_starts[0] = 1_000 * MS;
    (p, producers)
}

/// Publishes the last record of a conversation of `scenario` issued with
/// `stage` (the `IssueSlot` field), due at `t_sched`.
fn report_end(p: &mut ByteProducer, stage: u16, scenario: u16, t_sched: u64) {
    let c = Completion {
        t_sched,
        t_send: t_sched,
        t_end: t_sched + MS,
        stage,
        scenario,
        turn: 1,
        status: 200,
        flags: CONV_END,
        ..Completion::default()
    };
    p.push_with(c.encoded_len(), |b| c.encode(&[], &[], &[], b))
        .unwrap();
}

fn lost(b: &Block) -> u64 {
    b.errors.get(ErrorClass::WorkerLost)
}

/// Waits until the parent has noticed that worker `k` is gone.
fn until_dead(p: &mut Parent<'_, '_, '_>, k: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.workers[k].alive {
        assert!(Instant::now() < deadline, "worker {k} never noticed dead");
        p.next_liveness = 0;
        p.check_workers();
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_dead_worker_loses_only_its_own_requests_each_in_its_own_block() {
    let plan = plan();
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    // Alternating workers (least loaded first): worker 0 gets a warmup
    // conversation of "a" and a measured one of "a"; worker 1 two measured
    // ones of "b".
    assert_ne!(p.issue(500 * MS, 0, 0), Issued::Full);
    assert_ne!(p.issue(1_500 * MS, 0, 1), Issued::Full);
    assert_ne!(p.issue(1_600 * MS, 0, 0), Issued::Full);
    assert_ne!(p.issue(1_700 * MS, 0, 1), Issued::Full);
    assert_eq!(p.inflight, 4);
    assert_eq!(p.counts.max_inflight, 4);
    // Worker 1 finishes one of its two.
    report_end(&mut producers[1], 0, 1, 1_500 * MS);
    assert_eq!(p.collect(), 1);
    assert_eq!(p.inflight_by_scenario, [2, 1]);

    p.workers[0].child.kill().unwrap();
    until_dead(&mut p, 0);
    // Worker 1's conversation is still in flight, and counted as such: a
    // closed loop refills only what worker 0 took with it.
    assert_eq!(p.inflight, 1);
    assert_eq!(p.inflight_by_scenario, [0, 1]);
    assert_eq!(p.workers[1].inflight, 1);
    // Worker 0's two losses: one in warmup, one in stage "one", both "a".
    assert_eq!(lost(&p.warmup), 1);
    assert_eq!(lost(&p.blocks[0][0]), 1);
    assert_eq!(lost(&p.blocks[0][1]), 0);
    assert_eq!(p.blocks[0][1].completed, 1);
    assert_eq!(
        p.incomplete,
        [Incomplete::WorkerDied {
            worker: 0,
            pid: p.workers[0].child.pid(),
            how: Exit::Signal(libc::SIGKILL),
            lost: 2,
        }]
    );
    // New conversations go to the survivor only.
    assert_ne!(p.issue(1_800 * MS, 0, 0), Issued::Full);
    assert_eq!(p.workers[1].inflight, 2);
    assert_eq!(p.workers[0].inflight, 0);
}

#[test]
fn a_corrupt_ring_stops_its_worker_and_the_run_goes_on() {
    let plan = plan();
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    for t in [1_100, 1_200, 1_300] {
        assert_ne!(p.issue(t * MS, 0, 1), Issued::Full);
    }
    // Worker 1 (one conversation) reports it, then scribbles its ring.
    report_end(&mut producers[1], 0, 1, 1_200 * MS);
    producers[1].push_corrupt().unwrap();
    assert_eq!(p.collect(), 1, "the good record before the bad one counts");
    assert!(!p.workers[1].alive);
    assert_eq!(p.counts.corrupt_records, 1);
    assert_eq!(p.blocks[0][1].completed, 1);
    assert_eq!(lost(&p.blocks[0][1]), 0, "its one conversation had ended");
    assert_eq!(
        p.incomplete,
        [Incomplete::CorruptRecord {
            worker: 1,
            pid: p.workers[1].child.pid(),
            lost: 0,
        }]
    );
    // It was killed; the liveness check no longer looks at it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match p.workers[1].child.try_wait().unwrap() {
            Some(exit) => break assert_eq!(exit, Exit::Signal(libc::SIGKILL)),
            None => assert!(Instant::now() < deadline, "never killed"),
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    p.next_liveness = 0;
    p.check_workers();
    assert_eq!(p.incomplete.len(), 1);
    // Worker 0 reports as usual.
    assert_eq!(p.inflight, 2);
    report_end(&mut producers[0], 0, 1, 1_100 * MS);
    assert_eq!(p.collect(), 1);
    assert_eq!(p.inflight, 1);
    assert!(p.workers[0].alive);
}

#[test]
fn records_that_do_not_decode_or_name_no_block_are_corrupt() {
    let plan = plan();
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    assert_ne!(p.issue(1_100 * MS, 0, 0), Issued::Full);
    assert_ne!(p.issue(1_200 * MS, 0, 0), Issued::Full);
    // Worker 0: a record shorter than its header.
    producers[0].push_with(5, |b| b.fill(0)).unwrap();
    // Worker 1: a stage the run does not have.
    report_end(&mut producers[1], 7, 0, 1_200 * MS);
    assert_eq!(p.collect(), 0);
    assert_eq!(p.counts.corrupt_records, 2);
    assert!(p.workers.iter().all(|w| !w.alive));
    // Each took its own conversation with it, none was dropped silently.
    assert_eq!(lost(&p.blocks[0][0]), 2);
    assert_eq!(p.inflight, 0);
    assert_eq!(p.inflight_by_scenario, [0, 0]);
}

#[test]
fn a_duplicate_end_cannot_push_counts_below_zero() {
    let plan = plan();
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    assert_ne!(p.issue(1_100 * MS, 0, 0), Issued::Full);
    assert_ne!(p.issue(1_200 * MS, 0, 1), Issued::Full);
    report_end(&mut producers[0], 0, 0, 1_100 * MS);
    report_end(&mut producers[0], 0, 0, 1_100 * MS);
    assert_eq!(p.collect(), 2);
    assert_eq!(p.inflight, 1);
    assert_eq!(p.inflight_by_scenario, [0, 1]);
    assert_eq!(p.workers[0].inflight, 0);
}

#[test]
fn a_normal_end_waits_at_most_the_drain_timeout_and_never_wraps() {
    use super::drain::normal_drain_ns;
    let half = u64::MAX / 2;
    // Turns × (timeout + think) past u64::MAX saturates to the drain timeout.
    assert_eq!(normal_drain_ns(65_535, half, half, half, 10 * MS), 10 * MS);
    assert_eq!(normal_drain_ns(3, half, half, half, half), half);
    // Limits shorter than the drain timeout still bound it.
    assert_eq!(
        normal_drain_ns(1, 100 * MS, 0, 50 * MS, 10_000 * MS),
        100 * MS + 50 * MS + 1_000 * MS
    );
}

#[test]
fn a_warmup_by_count_ends_after_its_last_request_and_not_before_its_time() {
    let mut plan = plan();
    plan.warmup_requests = 3;
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    // As `run` starts it: measuring waits for the count; the time warm-up
    // (none here) is already over.
    p.measure_start = u64::MAX;
    p.stage_starts[0] = 0;
    p.warm_until = 100 * MS;
    let bounds = p.bounds(0);
    assert_eq!((bounds.end, bounds.limit), (u64::MAX, u64::MAX));
    assert_eq!(p.issue(200 * MS, 0, 0), Issued::Warmup);
    assert_eq!(p.issue(300 * MS, 0, 1), Issued::Warmup);
    assert_eq!(p.issue(400 * MS, 0, 0), Issued::LastWarmup);
    assert_eq!(p.measure_start, 400 * MS + 1);
    assert_eq!(p.issue(400 * MS + 1, 0, 1), Issued::Measured);
    // Every warm-up record is kept apart, the measured one is not.
    report_end(&mut producers[0], WARMUP, 0, 400 * MS);
    report_end(&mut producers[1], 0, 1, 400 * MS + 1);
    assert_eq!(p.collect(), 2);
    assert_eq!(p.warmup.completed, 1);
    assert_eq!(p.blocks[0][1].completed, 1);
}

#[test]
fn a_longer_time_warmup_outlasts_the_warmup_count() {
    let mut plan = plan();
    plan.warmup_requests = 1;
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, _producers) = parent(&plan, &shared, &mut children.0);
    p.measure_start = u64::MAX;
    p.stage_starts[0] = 0;
    p.warm_until = 900 * MS;
    assert_eq!(p.issue(200 * MS, 0, 0), Issued::LastWarmup);
    assert_eq!(p.measure_start, 900 * MS);
    assert_eq!(p.issue(500 * MS, 0, 0), Issued::Warmup);
    assert_eq!(p.issue(900 * MS, 0, 0), Issued::Measured);
}

/// Publishes a successful single request of `scenario`, stage 0, with
/// `gaps`, or with none and flagged `FOLDED` (the worker kept them).
fn report_success(p: &mut ByteProducer, scenario: u16, t_sched: u64, gaps: &[u64], folded: bool) {
    let c = Completion {
        t_sched,
        t_send: t_sched,
        t_first_token: t_sched + MS,
        t_last_token: t_sched + 2 * MS,
        t_end: t_sched + 3 * MS,
        scenario,
        turn: 1,
        status: 200,
        text_events: gaps.len() as u32 + 1,
        flags: CONV_END | STREAMED | if folded { FOLDED } else { 0 },
        ..Completion::default()
    };
    let gaps = if folded { &[][..] } else { gaps };
    let mut c = c;
    c.n_gaps = gaps.len() as u32;
    p.push_with(c.encoded_len(), |b| c.encode(gaps, &[], &[], b))
        .unwrap();
}

/// Publishes a worker's folded series of (`stage`, `scenario`), or with
/// `None` its last record.
fn report_series(p: &mut ByteProducer, stage: u16, scenario: u16, series: Option<(u64, &Series)>) {
    let text = series.map_or_else(Vec::new, |(n, s)| series_bytes(n, s));
    let mut c = Completion {
        stage,
        scenario,
        flags: SERIES,
        ..Completion::default()
    };
    c.fit(0, 0, &text);
    p.push_with(c.encoded_len(), |b| c.encode(&[], &text, &[], b))
        .unwrap();
}

/// The same requests, their gaps recorded by the parent (scenario "a", on
/// worker 0) or folded by a worker and merged at the end (scenario "b", on
/// worker 1): the two blocks' ITL series are the same, bit for bit.
#[test]
fn gaps_folded_by_a_worker_merge_into_exactly_what_the_parent_records() {
    let plan = plan();
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    let mut rng = crate::rng::Rng::seeded(23);
    let mut folded = Series::new();
    for i in 0..200u64 {
        let t = 1_100 * MS + i * MS;
        assert_ne!(p.issue(t, 0, 0), Issued::Full);
        assert_ne!(p.issue(t, 0, 1), Issued::Full);
        let gaps: Vec<u64> = (0..rng.below(40))
            .map(|_| {
                let bits = rng.below(40);
                rng.below(1 << bits)
            })
            .collect();
        report_success(&mut producers[0], 0, t, &gaps, false);
        report_success(&mut producers[1], 1, t, &gaps, true);
        for &g in &gaps {
            folded.record(g);
        }
        p.collect();
    }
    assert_eq!(p.workers[1].unfolded[2 + 1], 200, "block (stage 0, b)");
    assert_eq!(p.blocks[0][1].itl.count(), 0, "nothing before the series");
    report_series(&mut producers[1], 0, 1, Some((200, &folded)));
    report_series(&mut producers[1], 0, 0, None);
    p.collect_series();
    assert!(p.workers[1].series_done);
    assert_eq!(p.workers[1].unfolded, [0; 6]);
    let (a, b) = (&p.blocks[0][0].itl, &p.blocks[0][1].itl);
    assert!(a.count() > 1000, "{}", a.count());
    assert_eq!(a.histogram(), b.histogram());
    assert_eq!(
        (a.count(), a.sum_ns(), a.sum_sq(), a.min_ns(), a.max_ns()),
        (b.count(), b.sum_ns(), b.sum_sq(), b.min_ns(), b.max_ns())
    );
    assert_eq!(p.blocks[0][0].completed, p.blocks[0][1].completed);
}

/// A worker that dies before it sends its series takes them with it: the
/// parent knows how many of its recorded requests lack their gaps.
#[test]
fn a_dead_worker_s_folded_gaps_are_missing_and_counted() {
    let plan = plan();
    let shared = Shared::new(WORKERS, 2).unwrap();
    let mut children = Sleepers::new();
    let (mut p, mut producers) = parent(&plan, &shared, &mut children.0);
    for i in 0..3 {
        assert_ne!(p.issue(1_100 * MS + i, 0, 0), Issued::Full);
    }
    // Worker 0 took two, worker 1 one.
    report_success(&mut producers[0], 0, 1_100 * MS, &[5, 6], true);
    report_success(&mut producers[0], 0, 1_100 * MS + 2, &[5, 6], true);
    report_success(&mut producers[1], 0, 1_100 * MS + 1, &[7], false);
    assert_eq!(p.collect(), 3);
    p.workers[0].child.kill().unwrap();
    until_dead(&mut p, 0);
    // Worker 1 had nothing to fold.
    report_series(&mut producers[1], 0, 0, None);
    let t = Instant::now();
    p.collect_series();
    assert!(t.elapsed() < Duration::from_secs(4), "no wait for the dead");
    assert_eq!(p.workers[0].unfolded[2], 2);
    assert_eq!(p.blocks[0][0].completed, 3);
    assert_eq!(p.blocks[0][0].itl.count(), 1, "the parent's own only");
}
