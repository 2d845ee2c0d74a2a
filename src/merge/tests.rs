use std::path::{Path, PathBuf};

use super::*;
use crate::metrics::block::{Block, RequestSample};
use crate::metrics::hdr;
use crate::metrics::run::{ScenarioResult, StageResult};
use crate::metrics::series::Series;
use crate::metrics::timeline::{self, Bucket, RunTimeline, TimelineSlice};
use crate::report::summary::shard::ShardSummary;
use crate::rng::{Rng, log_normal_ns};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("llmload-merge-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A request of `ns` end to end, scheduled at `t`.
fn sample(t: u64, ns: u64) -> RequestSample {
    RequestSample {
        t_sched: t,
        t_send: t + 1_000,
        t_first_token: t + 1_000 + ns / 3,
        t_last_token: t + ns,
        t_end: t + ns,
        status: 200,
        completion_tokens: Some(9),
        input_tokens: Some(5),
        streamed: true,
        ..RequestSample::default()
    }
}

/// Shard `index` of 3: its clock's zero at `mono0`, the same instant at
/// `wall0` Unix ns; `values` recorded one a millisecond from its start.
fn shard_run(mono0: u64, wall0: u64, values: &[u64]) -> RunResult {
    let mut b = Block::default();
    let mut h: hdrhistogram::Histogram<u32> = timeline::BOUNDS.histogram();
    for (i, &v) in values.iter().enumerate() {
        b.record(&sample(mono0 + 1_000_000 * i as u64 + 1, v), []);
        h.saturating_record(v.max(1));
    }
    let to = b.last_end;
    let from = mono0 + 1;
    let thresholds = crate::plan::Thresholds {
        p99_ms: Some(1e9),
        ..Default::default()
    };
    RunResult {
        started_wall_ns: wall0,
        run_start_ns: mono0,
        stages: vec![StageResult {
            name: "main".into(),
            load: crate::plan::Load::Closed { concurrency: 2 },
            block: b.clone(),
            scenarios: vec![ScenarioResult {
                name: "chat".into(),
                block: b.clone(),
            }],
            window_ns: to - from,
            measured: vec![(from, to)],
            thresholds: thresholds.evaluate(&b, to - from),
        }],
        scenarios: vec![ScenarioResult {
            name: "chat".into(),
            block: b.clone(),
        }],
        total: b,
        total_window_ns: to - from,
        measured: vec![(from, to)],
        thresholds,
        thresholds_passed: true,
        complete: true,
        timeline: RunTimeline {
            interval_ns: timeline::INTERVAL_NS,
            stage_names: vec!["main".into()],
            slices: vec![TimelineSlice {
                scenario: None,
                buckets: vec![Bucket {
                    interval: 0,
                    stage: Some(0),
                    completed: values.len() as u64,
                    e2e_hist: Some(hdr::to_text(&h)),
                    ..Bucket::default()
                }],
            }],
            in_flight: vec![2],
            ..RunTimeline::default()
        },
        ..RunResult::default()
    }
}

fn write_shard(dir: &Path, run: &RunResult, index: u32, run_id: &str) {
    write_shard_with(dir, run, index, run_id, None);
}

fn write_shard_with(
    dir: &Path,
    run: &RunResult,
    index: u32,
    run_id: &str,
    mlperf: Option<crate::report::mlperf::MlperfInfo>,
) {
    let mut info = crate::report::summary::tests::info();
    info.mlperf = mlperf;
    info.shard = Some(ShardSummary {
        index,
        count: 3,
        run_id: run_id.into(),
        start_at: Some("2026-01-01T00:00:00Z".into()),
        started_unix_ns: run.started_wall_ns,
        clock_error_ns: Some(500_000 * u64::from(index)),
        ..ShardSummary::default()
    });
    let errors = crate::report::render(run, &info).write(dir);
    assert!(errors.is_empty(), "{errors:?}");
    std::fs::write(dir.join("events.jsonl"), format!("{{\"shard\":{index}}}\n")).unwrap();
}

/// Three shards' values, each shard's run on its own clock.
fn three(root: &Path) -> (Vec<Vec<u64>>, Vec<RunResult>) {
    let mut rng = Rng::seeded(3);
    let values: Vec<Vec<u64>> = (0..3).map(|_| log_normal_ns(&mut rng, 2_000)).collect();
    // Monotonic zeros far apart (other hosts), walls 0.4 ms apart.
    let runs: Vec<RunResult> = (0..3)
        .map(|i| {
            let mono0 = 1_000_000_000_000 * (i as u64 + 1);
            let wall0 = 1_800_000_000_000_000_000 + 400_000 * i as u64;
            shard_run(mono0, wall0, &values[i])
        })
        .collect();
    for (i, r) in runs.iter().enumerate() {
        let d = root.join(format!("shard-{}", i + 1));
        write_shard(&d, r, i as u32 + 1, "run-a");
    }
    (values, runs)
}

#[test]
fn shards_merge_into_one_series_of_every_value() {
    let root = tmp("exact");
    let (values, runs) = three(&root);
    let m = load(std::slice::from_ref(&root), None).unwrap();
    let mut whole = Series::new();
    for v in values.iter().flatten() {
        whole.record(*v);
    }
    assert_eq!(m.run.total.e2e.histogram(), whole.histogram());
    assert_eq!(m.run.total.e2e.rollup(1e6), whole.rollup(1e6));
    assert_eq!(m.run.stages[0].block.e2e.rollup(1e6), whole.rollup(1e6));
    assert_eq!(m.run.scenarios[0].block.completed, 6_000);
    assert_eq!(m.run.total.completed, 6_000);
    // Each shard's window rebased onto the first's clock: 0.4 ms apart,
    // so the union is the longest shard's plus the stagger at most.
    let longest = runs.iter().map(|r| r.total_window_ns).max().unwrap();
    assert!(
        m.run.total_window_ns >= longest,
        "{}",
        m.run.total_window_ns
    );
    assert!(m.run.total_window_ns <= longest + 800_000);
    assert_eq!(m.run.stages[0].window_ns, m.run.total_window_ns);
    assert_eq!(
        m.run.stages[0].load,
        crate::plan::Load::Closed { concurrency: 6 }
    );
    assert!(m.run.complete && m.run.thresholds_passed);
    assert_eq!(m.run.stages[0].thresholds.len(), 1);
    // One bucket, its histogram the sum of the shards'.
    let b = &m.run.timeline.slices[0].buckets;
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].completed, 6_000);
    let mut h: hdrhistogram::Histogram<u32> = timeline::BOUNDS.histogram();
    for v in values.iter().flatten() {
        h.saturating_record(*v);
    }
    assert_eq!(b[0].e2e_p99_ns, Some(h.value_at_quantile(0.99)));
    assert_eq!(m.run.timeline.in_flight, [6]);
    let merged = m.info.merged.as_ref().unwrap();
    assert_eq!((merged.shards, &merged.merged[..]), (3, &[1, 2, 3][..]));
    assert!(merged.aligned);
    assert_eq!(merged.start_skew_ns, 800_000);
    assert_eq!(merged.max_clock_error_ns, Some(1_500_000));
    assert_eq!(m.run.started_wall_ns, 1_800_000_000_000_000_000);
    // Written, the merged summary is not taken for a shard by a later merge.
    let out = root.join("merged");
    assert!(
        crate::report::render(&m.run, &m.info)
            .write(&out)
            .is_empty()
    );
    assert_eq!(
        concat_events(&m.dirs, &out).unwrap(),
        Some(out.join("events.jsonl"))
    );
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    assert_eq!(events, "{\"shard\":1}\n{\"shard\":2}\n{\"shard\":3}\n");
    let again = load(std::slice::from_ref(&root), None).unwrap();
    assert_eq!(again.run.total.completed, 6_000);
    let text = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        text.contains("merged from 3 of 3 shards (run run-a)"),
        "{text}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_missing_or_incomplete_shard_makes_the_merge_incomplete() {
    let root = tmp("missing");
    three(&root);
    std::fs::remove_dir_all(root.join("shard-2")).unwrap();
    let mut r = shard_run(5, 1_800_000_000_000_000_000, &[1_000_000]);
    r.complete = false;
    r.interrupted = true;
    r.incomplete_reasons = vec![Incomplete::Interrupted];
    write_shard(&root.join("shard-3"), &r, 3, "run-a");
    let m = load(std::slice::from_ref(&root), None).unwrap();
    assert!(!m.run.complete && m.run.interrupted);
    let s = Summary::build(&m.run, &m.info);
    assert_eq!(
        s.incomplete_reasons,
        [
            "shard 2 of 3 missing: no summary.json found",
            "shard 3 of 3 incomplete: interrupted by a signal",
        ]
    );
    let merged = s.merged.unwrap();
    assert_eq!((merged.missing, merged.incomplete), (vec![2], vec![3]));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn what_is_not_one_run_s_shards_is_named() {
    let root = tmp("errors");
    three(&root);
    let other = root.join("other");
    write_shard(&other, &shard_run(5, 9, &[7]), 2, "run-b");
    let e = load(std::slice::from_ref(&root), None).err().unwrap();
    assert!(
        e.contains("not of one run") && e.contains("run-b") && e.contains("other"),
        "{e}"
    );
    std::fs::remove_dir_all(&other).unwrap();
    let dup = root.join("dup");
    write_shard(&dup, &shard_run(5, 9, &[7]), 2, "run-a");
    let e = load(std::slice::from_ref(&root), None).err().unwrap();
    assert!(
        e.contains("shard 2 of 3 appears twice") && e.contains("dup") && e.contains("shard-2"),
        "{e}"
    );
    // A directory that is itself a shard's works alone.
    let one = load(&[root.join("shard-1")], None).unwrap();
    assert_eq!(one.info.merged.as_ref().unwrap().missing, [2, 3]);
    // Not a shard; no state.
    let plain = tmp("plain");
    let r = shard_run(5, 9, &[7]);
    crate::report::render(&r, &crate::report::summary::tests::info()).write(&plain);
    let e = load(std::slice::from_ref(&plain), None).err().unwrap();
    assert!(
        e.contains("not a shard") && e.contains("summary.json"),
        "{e}"
    );
    let file = root.join("shard-1/summary.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    doc.as_object_mut().unwrap().remove("state");
    std::fs::write(&file, doc.to_string()).unwrap();
    let e = load(&[root.join("shard-1")], None).err().unwrap();
    assert!(e.contains("no \"state\"") && e.contains("shard-1"), "{e}");
    let e = load(&[root.join("nowhere")], None).err().unwrap();
    assert!(e.contains("no such directory"), "{e}");
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&plain).unwrap();
}

/// A shard another llmload wrote is refused by file and version before
/// anything of it is read; a state that does not decode says where.
#[test]
fn a_shard_of_another_version_or_a_broken_state_is_named() {
    let root = tmp("version");
    three(&root);
    let file = root.join("shard-2/summary.json");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&original).unwrap();
    doc["version"] = "0.0.1".into();
    doc["state"]["version"] = 1.into();
    // A layout this version cannot read, as another one's may be.
    doc["state"]["total"] = serde_json::json!({"issued": "many"});
    doc["requests"]["issued"] = "many".into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let e = load(std::slice::from_ref(&root), None).err().unwrap();
    assert!(e.contains("shard-2/summary.json"), "{e}");
    assert!(
        e.contains("written by llmload 0.0.1 (state version 1)")
            && e.contains(&format!(
                "reads state version {}",
                crate::report::state::VERSION
            )),
        "{e}"
    );
    let mut doc: serde_json::Value = serde_json::from_str(&original).unwrap();
    doc["state"]["stages"][0]["block"]["e2e"]["count"] = 7.into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let e = load(std::slice::from_ref(&root), None).err().unwrap();
    assert!(
        e.contains("shard-2/summary.json: state: stages[0].block.e2e: count 7"),
        "{e}"
    );
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn late_shards_buckets_move_by_whole_seconds() {
    let root = tmp("shift");
    let a = shard_run(10, 1_000_000_000_000, &[5_000, 6_000]);
    // Started 2.2 s later on its own clock: its second 0 is the merge's 2.
    let b = shard_run(77, 1_000_000_000_000 + 2_200_000_000, &[7_000]);
    write_shard(&root.join("a"), &a, 1, "x");
    write_shard(&root.join("b"), &b, 2, "x");
    write_shard(&root.join("c"), &a, 3, "x");
    let m = load(std::slice::from_ref(&root), None).unwrap();
    let buckets = &m.run.timeline.slices[0].buckets;
    let got: Vec<(u32, u64)> = buckets.iter().map(|b| (b.interval, b.completed)).collect();
    assert_eq!(got, [(0, 4), (1, 0), (2, 1)]);
    assert_eq!(buckets[1].stage, Some(0));
    assert_eq!(m.run.timeline.in_flight, [4, 0, 2]);
    assert_eq!(m.info.merged.as_ref().unwrap().start_skew_ns, 2_200_000_000);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn mlperf_shards_merge_into_mlperf_files() {
    use crate::report::mlperf::{MlperfInfo, RunConfig};
    let root = tmp("mlperf");
    for i in 1..=3u8 {
        let run = shard_run(10, 1_000_000_000_000, &[5_000_000; 4]);
        let m = MlperfInfo {
            run_config: RunConfig {
                scheduler_random_seed: 40 + u64::from(i),
                dataloader_random_seed: 7,
                ..RunConfig::default()
            },
            early_stopping: true,
            sample_rows: vec![([i; 16], Some(u32::from(i))), ([i + 10; 16], None)],
            performance: true,
            ..MlperfInfo::default()
        };
        write_shard_with(
            &root.join(format!("s{i}")),
            &run,
            u32::from(i),
            "m",
            Some(m),
        );
    }
    let m = load(std::slice::from_ref(&root), None).unwrap();
    let info = m.info.mlperf.as_ref().expect("MLPerf mode");
    assert_eq!(info.sample_rows.len(), 6);
    assert!(info.sample_rows.contains(&([2; 16], Some(2))));
    assert!(info.sample_rows.contains(&([13; 16], None)));
    assert_eq!(info.run_config.scheduler_random_seed, 41);
    assert_eq!(info.run_config.load_pattern.target_concurrency, Some(6));
    assert!(info.early_stopping);
    let out = root.join("merged");
    assert!(
        crate::report::render(&m.run, &m.info)
            .write(&out)
            .is_empty()
    );
    let rs: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("performance/result_summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rs["n_samples_issued"], 12);
    let map: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sample_idx_map.json")).unwrap())
            .unwrap();
    assert_eq!(map["performance"].as_object().unwrap().len(), 6);
    std::fs::remove_dir_all(&root).unwrap();
}

/// A link back into the tree (`self -> .`) or to a shard given twice
/// finds each summary once; a loop of links does not recurse to the cap.
#[test]
fn a_symlink_back_into_the_tree_finds_each_shard_once() {
    let root = tmp("selflink");
    three(&root);
    std::os::unix::fs::symlink(".", root.join("self")).unwrap();
    std::os::unix::fs::symlink("../shard-2", root.join("shard-1/twin")).unwrap();
    let m = load(std::slice::from_ref(&root), None).unwrap();
    assert_eq!(m.run.total.completed, 6_000);
    assert_eq!(m.info.merged.as_ref().unwrap().merged, [1, 2, 3]);
    // The same shard named twice on the command line, once through a link.
    let m = load(&[root.join("shard-3"), root.join("self/shard-3")], None).unwrap();
    assert_eq!(m.info.merged.as_ref().unwrap().merged, [3]);
    std::fs::remove_dir_all(&root).unwrap();
}

/// A shard whose counts contradict themselves is left out, named with the
/// field, and the merged run is the others' and incomplete.
#[test]
fn an_inconsistent_shard_is_left_out_and_named() {
    let root = tmp("inconsistent");
    let (_, runs) = three(&root);
    let file = root.join("shard-2/summary.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    doc["state"]["total"]["completed"] = u64::MAX.into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let m = load(std::slice::from_ref(&root), None).unwrap();
    assert!(!m.run.complete);
    assert_eq!(
        m.run.total.completed,
        runs[0].total.completed + runs[2].total.completed
    );
    let why = crate::report::summary::incomplete(&m.run.incomplete_reasons[0]);
    assert!(
        why.starts_with(
            "shard 2 of 3 left out: its state is inconsistent: total.completed 18446744073709551615"
        ),
        "{why}"
    );
    let merged = m.info.merged.as_ref().unwrap();
    assert_eq!(
        (&merged.merged[..], &merged.inconsistent[..]),
        (&[1, 3][..], &[2][..])
    );
    assert_eq!(m.dirs.len(), 2);
    std::fs::remove_dir_all(&root).unwrap();
}

/// A bucket past the shard's end, or a shard starting far past the
/// others, would size the merged timeline: refused before it is made.
#[test]
fn a_timeline_that_would_size_the_merge_is_refused() {
    let root = tmp("span");
    three(&root);
    let file = root.join("shard-3/summary.json");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&original).unwrap();
    doc["state"]["timeline"]["slices"][0]["buckets"][0]["interval"] = u32::MAX.into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let e = load(std::slice::from_ref(&root), None).err().unwrap();
    assert!(
        e.contains("shard-3/summary.json: state.timeline.slices[0].buckets[0].interval 4294967295: past the shard's end"),
        "{e}"
    );
    let mut doc: serde_json::Value = serde_json::from_str(&original).unwrap();
    let late = doc["state"]["started_wall_ns"].as_u64().unwrap() + 7 * 3_600_000_000_000;
    doc["state"]["started_wall_ns"] = late.into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let e = load(std::slice::from_ref(&root), None).err().unwrap();
    assert!(
        e.contains("shard-3/summary.json: state.started_wall_ns") && e.contains("25200 s after"),
        "{e}"
    );
    // Six hours apart is a queued shard, not a corrupted one.
    doc["state"]["started_wall_ns"] = (late - 3_600_000_000_000).into();
    std::fs::write(&file, doc.to_string()).unwrap();
    let m = load(std::slice::from_ref(&root), None).unwrap();
    assert_eq!(m.run.timeline.in_flight.len(), 21_601);
    std::fs::remove_dir_all(&root).unwrap();
}
