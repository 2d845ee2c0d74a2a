use serde_json::json;

use super::*;
use crate::metrics::block::RequestSample;
use crate::metrics::errors::ErrorClass;
use crate::metrics::run::{ConnTimes, GeneratorStats, ScenarioResult, StageResult};
use crate::metrics::thresholds::ThresholdName;
use crate::plan::ArrivalKind;
use crate::report::fixture;
use crate::sys::info::PortRange;
use crate::sys::process::Exit;

/// A run with two stages (one closed, one a uniform ramp), two scenarios,
/// failures of two classes, a broken threshold and every reason the run
/// can be incomplete or generator-limited.
pub(crate) fn run() -> RunResult {
    let ok = |t: u64, ms: u64| RequestSample {
        t_sched: t,
        t_send: t + 20_000,
        t_first_token: t + ms * 300_000,
        t_last_token: t + ms * 1_000_000,
        t_end: t + ms * 1_000_000,
        status: 200,
        completion_tokens: Some(8),
        prompt_tokens: Some(20),
        input_tokens: Some(20),
        text_events: 8,
        text_bytes: 40,
        streamed: true,
        finish: Finish::Length as u8,
        ..RequestSample::default()
    };
    let failed = |class, status| RequestSample {
        t_sched: 5,
        t_send: 6,
        t_end: 1_000,
        error: Some(class),
        status,
        ..RequestSample::default()
    };
    let mut chat = Block::default();
    let mut qa = Block::default();
    for i in 0..40 {
        chat.record(&ok(1_000 + i * 7, 10 + i % 9), [2_000_000, 3_000_000]);
        qa.record(&ok(2_000 + i * 11, 30 + i % 5), []);
    }
    chat.record(&failed(ErrorClass::HttpStatus, 503), []);
    qa.record(&failed(ErrorClass::Reset, 0), []);
    chat.error_messages
        .insert("http_503".into(), vec!["overloaded".into()]);
    let mut stage = Block::default();
    stage.merge(&chat);
    stage.merge(&qa);
    let scenarios = vec![
        ScenarioResult {
            name: "chat".into(),
            block: chat,
        },
        ScenarioResult {
            name: "qa".into(),
            block: qa,
        },
    ];
    let verdict = |name, pass| Verdict {
        name,
        limit: 40.0,
        value: Some(37.5),
        pass,
    };
    let stages = vec![
        StageResult {
            name: "warm".into(),
            load: plan::Load::Closed { concurrency: 4 },
            block: stage.clone(),
            scenarios: scenarios.clone(),
            window_ns: 2_500_000_000,
            measured: vec![(900, 2_500_000_900)],
            thresholds: vec![verdict(ThresholdName::P99Ms, true)],
        },
        StageResult {
            name: "ramp".into(),
            load: plan::Load::Open {
                kind: ArrivalKind::Uniform,
                rate_from: 10.0,
                rate_to: 20.5,
            },
            block: stage.clone(),
            scenarios: scenarios.clone(),
            window_ns: 3_000_000_000,
            measured: vec![(2_500_000_900, 5_500_000_900)],
            thresholds: vec![
                verdict(ThresholdName::P99Ms, false),
                verdict(ThresholdName::MinRps, true),
            ],
        },
    ];
    let mut total = Block::default();
    total.merge(&stage);
    total.merge(&stage);
    let abort = ThresholdAbort {
        stage: "ramp".into(),
        broken: vec![ThresholdName::P99Ms, ThresholdName::ErrorRate],
    };
    RunResult {
        started_wall_ns: 1_700_000_000_000_000_000,
        run_start_ns: 0,
        stages,
        total,
        scenarios,
        thresholds_passed: false,
        aborted_on_threshold: Some(abort.clone()),
        total_window_ns: 5_500_000_000,
        measured: vec![(900, 5_500_000_900)],
        warmup: Block::default(),
        endpoints: Vec::new(),
        slo: Default::default(),
        generator: GeneratorStats {
            workers: 2,
            ring_full: 7,
            worker_busy_max: 0.937,
            limits: vec![
                Limit::RingFull { n: 7, of: 164 },
                Limit::WorkerBusy { share: 0.937 },
                Limit::SendLateness {
                    p99_ns: 1_234_567,
                    late: 3,
                    of: 160,
                },
                Limit::Descriptors { fds: 2, ports: 3 },
            ],
            ..GeneratorStats::default()
        },
        connections: ConnectionStats {
            opened: 12,
            resumed: 9,
            failed: 1,
            opened_in_window: 11,
            tls: true,
            keep_alive: false,
            tcp_connect: ConnTimes {
                buckets: vec![(100_000, 12)],
                count: 12,
                sum_ns: 1_200_000,
                min_ns: 90_000,
                max_ns: 110_000,
            },
            tls_handshake: ConnTimes {
                buckets: vec![(1_000_000, 11), (3_000_000, 1)],
                count: 12,
                sum_ns: 14_000_000,
                min_ns: 980_000,
                max_ns: 3_000_000,
            },
        },
        interrupted: true,
        complete: false,
        incomplete_reasons: vec![
            Incomplete::Interrupted,
            Incomplete::WorkerDied {
                worker: 1,
                pid: 4242,
                how: Exit::Signal(9),
                lost: 3,
            },
            Incomplete::WorkerDied {
                worker: 0,
                pid: 4241,
                how: Exit::Status(101),
                lost: 0,
            },
            Incomplete::NeverReported { lost: 2 },
            Incomplete::ThresholdAbort(abort),
        ],
        startup_ns: 12_345_678,
        ..RunResult::default()
    }
}

pub(crate) fn info() -> RunInfo {
    RunInfo {
        tls: None,
        mlperf: None,
        accuracy: None,
        server_metrics: None,
        metrics_preset: Default::default(),
        io: Default::default(),
        shard: None,
        merged: None,
        config: json!({"api": "openai-chat", "model": "m", "stream": true}),
        target: "http://127.0.0.1:8000/v1/chat/completions (openai-chat, model m)".into(),
        started_wall_ns: 1_700_000_000_000_000_000,
        fd_limit: 65_536,
        host: HostInfo {
            tool: "llmload".into(),
            version: "0.0.0".into(),
            cpus_online: Some(8),
            ephemeral_ports: Some(PortRange {
                low: 32768,
                high: 60999,
            }),
            ..HostInfo::default()
        },
        builtin_endpoint: Some(json!({"requests": 82})),
        dataset: json!({"source": "builtin", "samples": 16}),
        events: EventsStats {
            path: "out/events.jsonl".into(),
            written: 80,
            dropped: 2,
            error: None,
            ..EventsStats::default()
        },
        notes: vec!["a note".into()],
    }
}

#[test]
fn round_trips_through_json() {
    let built = Summary::build(&run(), &info());
    let text = serde_json::to_string_pretty(&built).unwrap();
    let back: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(back, built);
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
    // And through the reader `compare` uses.
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(Summary::from_value(doc).unwrap(), built);
    // Without a built-in endpoint the key is left out, not null.
    let mut i = info();
    i.builtin_endpoint = None;
    let v = serde_json::to_value(Summary::build(&run(), &i)).unwrap();
    assert!(v.get("builtin_endpoint").is_none());
    assert!(v["aborted_on_threshold"].is_string());
}

/// The reasons, byte for byte as the report has always written them.
#[test]
fn reasons_in_english() {
    let s = Summary::build(&run(), &info());
    assert_eq!(
        s.incomplete_reasons,
        [
            "interrupted by a signal",
            "worker 1 (pid 4242) was killed by signal 9; 3 conversation(s) in flight on it were lost",
            "worker 0 (pid 4241) exited with status 101; 0 conversation(s) in flight on it were lost",
            "2 conversation(s) were never reported by a worker after the abort",
            "stage 'ramp' broke p99_ms, error_rate; later stages were skipped (abort_on_fail)",
        ]
    );
    assert_eq!(
        s.aborted_on_threshold.as_deref(),
        Some("stage 'ramp' broke p99_ms, error_rate; later stages were skipped (abort_on_fail)")
    );
    assert!(s.generator.limited_by_generator);
    assert_eq!(
        s.generator.limits,
        [
            "7 of 164 request(s) (4.3%) found their worker's issue ring full (threshold 1% of requests): the workers could not keep up",
            "a worker was busy 94% of the time (threshold 90%): add --workers or cores",
            "send lateness p99 was 1.23 ms (threshold 1 ms), 3 of 160 send(s) (1.9%) later than 1 ms (threshold 1% of requests): requests left later than scheduled",
            "the generator ran out of file descriptors: 2 connect(s) failed (add --workers, or raise the limit: ulimit -n); the generator ran out of local ports: 3 connect(s) failed (each source address has one ephemeral range per destination; add addresses with --source-addrs)",
        ]
    );
    let more = [
        (
            Limit::WaitedForConnection { n: 4, of: 0 },
            "4 request(s) waited for a free connection (threshold 1% of requests): raise --connections",
        ),
        (
            Limit::HeldBack { n: 5, of: 100 },
            "5 of 100 arrival(s) (5.0%) were held back by openloop_max_inflight (threshold 1% of requests; charged from their scheduled time)",
        ),
        (
            Limit::CompletionRingFull { n: 6 },
            "completion records waited 6 time(s) for the parent to read them (threshold: any)",
        ),
    ];
    for (l, want) in more {
        assert_eq!(limit(&l), want);
    }
}

#[test]
fn numbers_and_shape() {
    let s = Summary::build(&run(), &info());
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["tool"], "llmload");
    assert_eq!(v["started_at"], "2023-11-14T22:13:20Z");
    assert_eq!(v["requests"]["issued"], 164);
    assert_eq!(v["requests"]["errors"], json!({"http_503": 2, "reset": 2}));
    assert_eq!(v["window_s"], 5.5);
    assert_eq!(v["throughput"]["requests_per_s"], 160.0 / 5.5);
    assert_eq!(v["tokens"]["finish_reasons"], json!({"length": 160}));
    assert_eq!(
        v["tokens"]["output_source_requests"],
        json!({"usage": 160, "tokenizer": 0, "events": 0, "unknown": 0})
    );
    assert_eq!(v["latency_ms"]["e2e"]["count"], 160);
    assert_eq!(v["latency_ms"]["e2e"]["min"], 10.0);
    assert_eq!(v["generator"]["send_lateness_us"]["p50"], 20.0);
    assert_eq!(v["generator"]["startup_ms"], 12.345678);
    assert_eq!(v["generator"]["stale_connection_retries"], 0);
    assert_eq!(
        v["stages"][0]["load"],
        json!({"mode": "concurrency", "concurrency": 4})
    );
    assert_eq!(
        v["stages"][1]["load"],
        json!({"mode": "uniform", "rate_from": 10.0, "rate_to": 20.5})
    );
    assert_eq!(v["stages"][1]["window_s"], 3.0);
    assert_eq!(v["stages"][1]["thresholds_passed"], false);
    assert_eq!(v["stages"][1]["scenarios"][1]["name"], "qa");
    assert_eq!(
        v["stages"][1]["scenarios"][1]["requests"]["errors"],
        json!({"reset": 1})
    );
    assert_eq!(v["stages"][0]["thresholds"][0]["name"], "p99_ms");
    assert_eq!(
        v["scenarios"][0]["error_messages"]["http_503"][0],
        "overloaded"
    );
    assert_eq!(v["events"]["dropped"], 2);
    assert_eq!(v["builtin_endpoint"]["requests"], 82);
    let c = &v["connections"];
    assert_eq!(
        (&c["opened"], &c["resumed"], &c["failed"], &c["keep_alive"]),
        (&json!(12), &json!(9), &json!(1), &json!(false))
    );
    assert_eq!(c["connects_per_s"], 2.0);
    assert_eq!(c["tcp_connect_ms"]["p50"], 0.1);
    assert_eq!(c["tcp_connect_ms"]["max"], 0.11);
    assert_eq!(c["tls_handshake_ms"]["p50"], 1.0);
    assert_eq!(c["tls_handshake_ms"]["p99"], 3.0);
    assert_eq!(c["tls_handshake_ms"]["count"], 12);
    // No https endpoint: no handshake numbers and no tls block.
    let mut plain = run();
    plain.connections.tls = false;
    let v = serde_json::to_value(Summary::build(&plain, &info())).unwrap();
    assert!(v["connections"].get("tls_handshake_ms").is_none(), "{v}");
    assert!(v.get("tls").is_none());
}

#[test]
fn insecure_tls_is_said_in_a_note_first() {
    let mut i = info();
    i.tls = Some(TlsSummary {
        insecure: true,
        endpoints: vec![TlsEndpoint {
            url: "https://10.0.0.1:8443".into(),
            server_name: "gw.example".into(),
            verify: false,
            ..TlsEndpoint::default()
        }],
    });
    let s = Summary::build(&run(), &i);
    assert_eq!(s.notes, [INSECURE_LINE, "a note"]);
    assert!(s.notes[0].starts_with("TLS verification OFF (--insecure)"));
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["tls"]["insecure"], true);
    assert_eq!(v["tls"]["endpoints"][0]["server_name"], "gw.example");
    assert!(v["tls"]["endpoints"][0].get("ca_cert").is_none());
    // Verified endpoints: no such note.
    i.tls.as_mut().unwrap().insecure = false;
    assert_eq!(Summary::build(&run(), &i).notes, ["a note"]);
}

#[test]
fn a_field_a_document_lacks_reads_as_its_default() {
    let s = fixture::read(json!({"tool": "llmload", "stages": [{"name": "main"}]}));
    assert!(s.complete && s.thresholds_passed && s.stages[0].thresholds_passed);
    assert_eq!(s.stages[0].load, None);
    assert_eq!(s.run.latency_ms.e2e, Rollup::default());
    assert_eq!(s.run.requests.error_rate(), None);
    // Fields this version does not know are ignored.
    let s = fixture::read(json!({"tool": "llmload", "stages": [], "later": {"x": 1}}));
    assert!(s.stages.is_empty());
}

#[test]
fn what_is_not_a_summary() {
    for (bad, reason) in [
        (json!([1]), "not a JSON object"),
        (json!({"tool": "oha"}), "no \"tool\": \"llmload\""),
        (json!({"tool": "llmload"}), "no \"stages\" array"),
        (
            json!({"tool": "llmload", "stages": [3]}),
            "stages[0] is not an object",
        ),
        (
            json!({"tool": "llmload", "stages": [], "complete": "yes"}),
            "complete: invalid type: string \"yes\", expected a boolean",
        ),
        (
            json!({"tool": "llmload", "stages": [{"load": {"mode": "sweep"}}]}),
            "stages[0].load.mode: unknown variant `sweep`, expected one of `concurrency`, `offline`, `poisson`, `uniform`",
        ),
        (
            json!({"tool": "llmload", "stages": [], "generator": {"ring_full": -1}}),
            "generator.ring_full: invalid value: integer `-1`, expected u64",
        ),
    ] {
        assert_eq!(
            Summary::from_value(bad.clone()),
            Err(reason.into()),
            "{bad}"
        );
    }
    // Inside a flattened block the path stops at the block.
    let bad = json!({"tool": "llmload", "stages": [], "requests": {"issued": "many"}});
    let e = Summary::from_value(bad).unwrap_err();
    assert!(e.contains("invalid type: string \"many\""), "{e}");
}
