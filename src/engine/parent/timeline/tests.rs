use super::*;
use crate::metrics::goodput::judge;
use crate::metrics::hdr;
use crate::metrics::timeline::BOUNDS;
use crate::plan::Slo;

const S: u64 = INTERVAL_NS;
const MS: u64 = 1_000_000;
/// Time zero of the test runs: any CLOCK_MONOTONIC-like value.
const T0: u64 = 1_000 * S;

/// A streamed success ending at `end` (from T0) after `e2e`, its first
/// token `ttft` after the send, with `out` output tokens.
fn ok(end: u64, e2e: u64, ttft: u64, out: u32) -> RequestSample {
    let t_end = T0 + end;
    RequestSample {
        t_sched: t_end - e2e,
        t_send: t_end - e2e,
        t_first_token: t_end - e2e + ttft,
        t_last_token: t_end,
        t_end,
        completion_tokens: Some(out),
        input_tokens: Some(10),
        streamed: true,
        status: 200,
        ..RequestSample::default()
    }
}

fn failed(end: u64, class: ErrorClass, status: u16) -> RequestSample {
    RequestSample {
        t_sched: T0 + end - MS,
        t_end: T0 + end,
        error: Some(class),
        status,
        ..RequestSample::default()
    }
}

fn buckets(stages: usize, scenarios: usize) -> TimelineBuckets {
    let mut t = TimelineBuckets::new(stages, scenarios, false);
    t.start(T0);
    t
}

fn names(n: usize, prefix: &str) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn finish(t: &mut TimelineBuckets, at: u64, scenarios: usize) -> RunTimeline {
    t.finish(T0 + at, 1, 0, names(1, "stage"), &names(scenarios, "sc"))
}

/// (interval, stage, completed, failed) of each bucket.
fn shape(s: &TimelineSlice) -> Vec<(u32, Option<u16>, u64, u64)> {
    s.buckets
        .iter()
        .map(|b| (b.interval, b.stage, b.completed, b.failed))
        .collect()
}

#[test]
fn out_of_order_records_land_in_their_own_second_with_latencies() {
    let mut t = buckets(1, 1);
    t.tick(T0, 1, 0);
    // Arrive newest first, all within the open window.
    t.record(&ok(2 * S + 500 * MS, 40 * MS, 4 * MS, 7), Some(0), 0, false);
    t.record(&ok(S + 200 * MS, 20 * MS, 2 * MS, 5), Some(0), 0, false);
    t.record(&ok(300 * MS, 10 * MS, MS, 3), Some(0), 0, false);
    t.record(&ok(310 * MS, 30 * MS, 3 * MS, 3), Some(0), 0, false);
    t.tick(T0 + 3 * S, 1, 2);
    assert_eq!(t.first_open, 1, "interval 0 closed 2 s after its end");
    let r = finish(&mut t, 3 * S + 100 * MS, 1);
    assert_eq!(r.stragglers, 0);
    assert_eq!(r.slices.len(), 1, "one scenario: the whole run only");
    let all = &r.slices[0];
    assert_eq!(
        shape(all),
        [
            (0, Some(0), 2, 0),
            (1, Some(0), 1, 0),
            (2, Some(0), 1, 0),
            (3, Some(0), 0, 0),
        ]
    );
    let b0 = &all.buckets[0];
    assert_eq!((b0.output_tokens, b0.input_tokens), (6, 20));
    let near = |got: Option<u64>, want: u64| {
        let got = got.unwrap() as f64;
        assert!(
            (got - want as f64).abs() <= want as f64 * 0.01,
            "{got} vs {want}"
        );
    };
    near(b0.e2e_p50_ns, 10 * MS);
    near(b0.e2e_p99_ns, 30 * MS);
    near(b0.ttft_p50_ns, MS);
    near(b0.ttft_p99_ns, 3 * MS);
    near(all.buckets[2].e2e_p99_ns, 40 * MS);
    assert_eq!(
        all.buckets[3].e2e_p50_ns, None,
        "an idle second has no latency"
    );
    assert_eq!(
        r.in_flight,
        [2, 2, 2, 0],
        "ended before the tick at 3 s: 2; the run's end: 0"
    );
    assert_eq!(r.interval_ns, S);
    // Every histogram went back to the pool, reset.
    assert_eq!(t.pool.free.len(), t.pool.hists.len());
    assert!(
        t.pool
            .hists
            .iter()
            .all(|h| h.e2e.is_empty() && h.ttft.is_empty())
    );
}

#[test]
fn a_straggler_counts_exactly_in_its_closed_second_without_latency() {
    let mut t = buckets(2, 1);
    t.tick(T0, 1, 0);
    t.record(&ok(S + 100 * MS, 10 * MS, MS, 4), Some(0), 0, false);
    t.tick(T0 + 5 * S, 2, 0);
    assert_eq!(t.first_open, 3);
    // A record for second 1 (closed), and one for idle second 2 of stage 1.
    t.record(&ok(S + 900 * MS, 500 * MS, MS, 6), Some(0), 0, false);
    t.record(
        &failed(S + 950 * MS, ErrorClass::HttpStatus, 503),
        Some(1),
        0,
        false,
    );
    t.record(&ok(2 * S + 10 * MS, 10 * MS, MS, 1), Some(1), 0, false);
    let r = finish(&mut t, 5 * S, 1);
    assert_eq!(r.stragglers, 3);
    let all = &r.slices[0];
    assert_eq!(
        shape(all),
        [
            (0, Some(0), 0, 0),
            (1, Some(0), 2, 0),
            (1, Some(1), 0, 1),
            (2, Some(1), 1, 0),
            (3, Some(1), 0, 0),
            (4, Some(1), 0, 0),
            (5, Some(1), 0, 0),
        ]
    );
    let b1 = &all.buckets[1];
    assert_eq!(b1.output_tokens, 10);
    // The percentiles are those of the request that arrived in time.
    assert!(b1.e2e_p99_ns.unwrap() < 11 * MS, "{:?}", b1.e2e_p99_ns);
    assert_eq!(all.buckets[2].errors, [(ErrorClass::HttpStatus, 503, 1)]);
    assert_eq!(all.buckets[3].e2e_p50_ns, None);
}

#[test]
fn warm_up_and_a_stage_ending_in_one_second_get_a_bucket_each() {
    let mut t = buckets(1, 1);
    t.tick(T0, 0, 0);
    t.record(&ok(200 * MS, 10 * MS, MS, 2), None, 0, false);
    // Measuring began at 1 s; a warm-up request ends after it.
    t.tick(T0 + S, 1, 3);
    t.record(&ok(S + 5 * MS, 30 * MS, MS, 2), None, 0, false);
    t.record(&ok(S + 50 * MS, 10 * MS, MS, 2), Some(0), 0, false);
    t.record(&ok(S + 60 * MS, 10 * MS, MS, 2), Some(0), 0, false);
    let r = finish(&mut t, S + 500 * MS, 1);
    assert_eq!(
        shape(&r.slices[0]),
        [(0, None, 1, 0), (1, None, 1, 0), (1, Some(0), 2, 0)]
    );
    assert_eq!(r.in_flight, [3, 0]);
}

#[test]
fn idle_seconds_are_zero_buckets_under_the_stage_then_running() {
    let mut t = buckets(2, 1);
    t.tick(T0, 0, 0);
    t.tick(T0 + S + MS, 1, 5);
    t.tick(T0 + 2 * S + MS, 2, 6);
    t.record(&ok(4 * S + 1, 10 * MS, MS, 2), Some(1), 0, false);
    let r = t.finish(T0 + 4 * S + 2, 2, 0, names(2, "stage"), &names(1, "sc"));
    assert_eq!(
        shape(&r.slices[0]),
        [
            (0, None, 0, 0),
            (1, Some(0), 0, 0),
            (2, Some(1), 0, 0),
            // Not seen by a tick: the slot running at the end.
            (3, Some(1), 0, 0),
            (4, Some(1), 1, 0),
        ]
    );
    // Seconds 2 and 3 ended with no tick to see them: the next look (the
    // run's end) stands in.
    assert_eq!(r.in_flight, [5, 6, 0, 0, 0]);
}

#[test]
fn scenarios_past_the_cap_count_in_the_whole_run_only() {
    let n = MAX_SCENARIO_SERIES + 4;
    let mut t = buckets(1, n);
    t.tick(T0, 1, 0);
    t.record(&ok(100 * MS, 10 * MS, MS, 2), Some(0), 0, false);
    t.record(&ok(100 * MS, 10 * MS, MS, 2), Some(0), n - 1, false);
    t.record(&failed(200 * MS, ErrorClass::Reset, 0), Some(0), 1, false);
    let r = finish(&mut t, 500 * MS, n);
    assert_eq!(r.slices.len(), 1 + MAX_SCENARIO_SERIES);
    assert_eq!(r.scenarios_left_out, 4);
    assert_eq!(r.slices[0].scenario, None);
    assert_eq!(r.slices[1].scenario.as_deref(), Some("sc0"));
    assert_eq!(shape(&r.slices[0]), [(0, Some(0), 2, 1)]);
    assert_eq!(shape(&r.slices[1]), [(0, Some(0), 1, 0)]);
    assert_eq!(shape(&r.slices[2]), [(0, Some(0), 0, 1)]);
    // A scenario with nothing in a second still has its zero point.
    assert_eq!(shape(&r.slices[3]), [(0, Some(0), 0, 0)]);
    assert_eq!(r.slices[0].buckets[0].errors, [(ErrorClass::Reset, 0, 1)]);
    // Two scenarios each keep a series; one has none of its own.
    let one = buckets(1, 1);
    assert_eq!(one.slices, 1);
    assert_eq!(buckets(1, 2).slices, 3);
}

#[test]
fn good_counts_only_with_an_slo_and_lost_requests_count_where_noticed() {
    let slo = Slo {
        ttft_ns: Some(5 * MS),
        ..Slo::default()
    };
    let mut t = TimelineBuckets::new(1, 1, true);
    t.start(T0);
    for s in [
        ok(100 * MS, 10 * MS, MS, 2),
        ok(100 * MS, 10 * MS, 9 * MS, 2),
    ] {
        t.record(&s, Some(0), 0, judge(&slo, &s).good);
    }
    t.record_lost(T0 + 1500 * MS, Some(0), 0, 3);
    let r = finish(&mut t, 2 * S, 1);
    assert!(r.slo);
    let all = &r.slices[0].buckets;
    assert_eq!((all[0].completed, all[0].good), (2, 1));
    assert_eq!(all[1].errors, [(ErrorClass::WorkerLost, 0, 3)]);
    assert_eq!(all[1].failed, 3);
    let mut plain = buckets(1, 1);
    plain.record(&ok(100 * MS, 10 * MS, MS, 2), Some(0), 0, false);
    assert!(!finish(&mut plain, S, 1).slo);
}

#[test]
fn a_record_far_ahead_of_the_ticks_closes_what_it_must() {
    let mut t = buckets(1, 1);
    t.record(&ok(100 * MS, 10 * MS, MS, 2), Some(0), 0, false);
    // No tick for 10 s (a long final drain): the window moves on.
    t.record(&ok(10 * S, 10 * MS, MS, 2), Some(0), 0, false);
    assert_eq!(t.first_open, 10 + 1 - OPEN);
    t.record(&ok(9 * S, 10 * MS, MS, 2), Some(0), 0, false);
    let r = finish(&mut t, 10 * S + 1, 1);
    let all = &r.slices[0];
    assert_eq!(all.buckets.len(), 11);
    assert_eq!(all.buckets.iter().map(|b| b.completed).sum::<u64>(), 3);
    assert_eq!(r.stragglers, 0);
    assert_eq!(r.in_flight.len(), 11);
}

/// A closed bucket keeps its histograms as text: decoded, they give the
/// bucket's percentiles, and a bucket of failures only has none.
#[test]
fn closed_buckets_keep_their_histograms() {
    let mut t = buckets(1, 1);
    t.tick(T0, 1, 0);
    for i in 1..=50 {
        t.record(
            &ok(100 * MS + i * MS, i * MS, i * 100_000, 3),
            Some(0),
            0,
            false,
        );
    }
    t.record(
        &failed(S + 10 * MS, ErrorClass::Reset, 0),
        Some(0),
        0,
        false,
    );
    let r = finish(&mut t, 2 * S + 100 * MS, 1);
    let b = &r.slices[0].buckets;
    let h = |text: &Option<String>| -> Histogram<u32> {
        hdr::from_text(text.as_deref().expect("a histogram"), BOUNDS).unwrap()
    };
    let (ttft, e2e) = (h(&b[0].ttft_hist), h(&b[0].e2e_hist));
    assert_eq!((ttft.len(), e2e.len()), (50, 50));
    assert_eq!(Some(ttft.value_at_quantile(0.99)), b[0].ttft_p99_ns);
    assert_eq!(Some(e2e.value_at_quantile(0.5)), b[0].e2e_p50_ns);
    assert_eq!(
        (b[1].failed, &b[1].ttft_hist, &b[1].e2e_hist),
        (1, &None, &None)
    );
}

/// Closing a second in the loop encodes nothing there: its bucket gets its
/// percentiles and histogram text from the encoder thread, by the run's end.
#[test]
fn a_closed_second_is_encoded_off_the_loop() {
    let mut t = buckets(1, 1);
    t.tick(T0, 1, 0);
    t.record(&ok(100 * MS, 10 * MS, MS, 2), Some(0), 0, false);
    t.tick(T0 + 3 * S, 1, 0);
    let b = &t.closed[0][0];
    assert_eq!((b.interval, b.completed), (0, 1));
    assert_eq!(
        (&b.e2e_hist, b.e2e_p50_ns),
        (&None, None),
        "not in the loop"
    );
    let r = finish(&mut t, 3 * S + 1, 1);
    let b = &r.slices[0].buckets[0];
    let e2e: Histogram<u32> = hdr::from_text(b.e2e_hist.as_deref().unwrap(), BOUNDS).unwrap();
    assert_eq!(
        (e2e.len(), b.e2e_p50_ns),
        (1, Some(e2e.value_at_quantile(0.5)))
    );
}

/// The encoder's thread and the loop encode alike.
#[test]
fn the_loop_encodes_as_the_thread_does_when_there_is_none() {
    let run = |thread: bool| {
        let mut t = TimelineBuckets::new(1, 2, false);
        t.run_start = T0;
        t.next_tick = T0;
        if thread {
            t.encoder.start();
        }
        for i in 1..=20 {
            t.record(
                &ok(i * 50 * MS, i * MS, i * 10_000, 2),
                Some(0),
                (i % 2) as usize,
                false,
            );
        }
        finish(&mut t, 5 * S, 2)
    };
    assert_eq!(run(true), run(false));
}

/// The live view's tally: running totals of measured requests (stragglers
/// included, warm-up not), and latency of the seconds since its last look.
#[test]
fn the_live_view_reads_totals_and_latency_off_the_cells() {
    let mut t = buckets(1, 1);
    t.watch_live(T0);
    t.tick(T0, 1, 0);
    t.record(&ok(100 * MS, 10 * MS, MS, 2), None, 0, false);
    t.record(&ok(200 * MS, 20 * MS, 2 * MS, 3), Some(0), 0, false);
    let mut late = failed(300 * MS, ErrorClass::Reset, 0);
    late.t_send = late.t_sched + 7 * MS;
    t.record(&late, Some(0), 0, false);
    let m = t.measured();
    assert_eq!((m.completed, m.failed, m.output_tokens), (1, 1, 3));
    let l = t.live_latency(T0 + 500 * MS);
    let near = |got: Option<u64>, want: u64| {
        let got = got.unwrap() as f64;
        assert!(
            (got - want as f64).abs() <= want as f64 * 0.01,
            "{got} vs {want}"
        );
    };
    near(l.e2e.0, 20 * MS);
    near(l.ttft.1, 2 * MS);
    near(l.late_p99, 7 * MS);
    // Second 0 stays in the next look (it is still under way); second 1's
    // request too, and second 0 closes (with its latencies kept) before.
    t.record(&ok(S + 100 * MS, 40 * MS, MS, 1), Some(0), 0, false);
    t.tick(T0 + 3 * S, 1, 0);
    let l = t.live_latency(T0 + 3 * S);
    near(l.e2e.0, 20 * MS);
    near(l.e2e.1, 40 * MS);
    // Then only seconds from 3 on: nothing yet.
    assert_eq!(t.live_latency(T0 + 3 * S + 1), LiveLatency::default());
    // A straggler counts in the totals.
    t.record(&failed(100 * MS, ErrorClass::Reset, 0), Some(0), 0, false);
    let m = t.measured();
    assert_eq!((m.completed, m.failed), (2, 2));
    assert_eq!(m.errors, [(ErrorClass::Reset, 0, 2)]);
}
