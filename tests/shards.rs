//! Shards of one run (`--shard I/N`, `--shard auto`, `--start-at`): three
//! shard processes against one `llmload serve`, started together, whose
//! union must be the run the flags describe — the arrival count of the
//! full rate, an evenly spaced uniform schedule, the configured
//! concurrency, exact counts, every dataset row once — and `auto` under
//! each scheduler's variables.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::util::*;

const SHARDS: u32 = 3;
const LIMIT: Duration = Duration::from_secs(40);

/// Every variable `--shard auto` reads, removed from the shard's
/// environment unless a test sets it.
pub(crate) const SCHEDULER_VARS: &[&str] = &[
    "JOB_COMPLETION_INDEX",
    "LLMLOAD_SHARDS",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
];

/// One shard of the run: its summary and its events.jsonl's lines.
struct ShardRun {
    summary: Value,
    events: Vec<Value>,
}

/// Runs the three shards of one run concurrently against `server`, all
/// given one `--start-at` 1.5 s ahead; each is checked to have completed
/// as its shard, with the run id the others have.
fn fleet(server: &Server, args: &[&str]) -> (Vec<ShardRun>, u64) {
    let (at, at_ns) = start_in(1_500);
    let mut all = vec!["--start-at", at.as_str()];
    all.extend_from_slice(args);
    let runs: Vec<ShardRun> = spawn_shards(server, SHARDS, &temp_dir("shards"), &all)
        .into_iter()
        .map(|(out, child)| {
            let run = wait_run(child, out, LIMIT);
            run.assert_success();
            ShardRun {
                summary: run.summary(),
                events: events(&run.out),
            }
        })
        .collect();
    for (i, r) in runs.iter().enumerate() {
        let sh = &r.summary["shard"];
        assert_eq!(u(&sh["index"]), i as u64 + 1, "{sh}");
        assert_eq!(u(&sh["count"]), u64::from(SHARDS));
        assert_eq!(sh["source"], "flag");
        assert_eq!(u(&sh["start_at_unix_ns"]), at_ns, "{sh}");
        assert_eq!(sh["run_id"], runs[0].summary["shard"]["run_id"]);
        assert_eq!(r.summary["complete"], true);
        crate::report::assert_valid(&r.summary);
    }
    (runs, at_ns)
}

fn events(out: &Path) -> Vec<Value> {
    read(&out.join("events.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("an events line is JSON"))
        .collect()
}

fn issued(runs: &[ShardRun]) -> Vec<u64> {
    runs.iter()
        .map(|r| u(&r.summary["requests"]["issued"]))
        .collect()
}

#[test]
fn poisson_shards_add_up_to_the_full_rate() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let (rate, secs) = (150.0, 2.0);
    let (runs, _) = fleet(
        &server,
        &["--rate", "150", "--duration", "2s", "--max-tokens", "2"],
    );
    for r in &runs {
        assert_eq!(f(&r.summary["stages"][0]["load"]["rate_from"]), rate / 3.0);
    }
    // The sum of three independent Poisson streams at rate/3 is Poisson
    // at the full rate: within 5 sigma of rate × duration.
    let total: u64 = issued(&runs).iter().sum();
    let mean = rate * secs;
    let sigma = f64::sqrt(mean);
    assert!(
        (total as f64 - mean).abs() <= 5.0 * sigma,
        "{total} arrivals, expected {mean} ± {}",
        5.0 * sigma
    );
    let seeds: std::collections::BTreeSet<u64> = runs
        .iter()
        .map(|r| u(&r.summary["shard"]["scheduler_seed"]))
        .collect();
    assert_eq!(seeds.len(), 3, "each shard its own schedule");
}

#[test]
fn uniform_shards_interleave_into_one_even_schedule() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let rate = 40.0;
    let (runs, at_ns) = fleet(
        &server,
        &[
            "--rate",
            "40",
            "--mode",
            "uniform",
            "--duration",
            "1500ms",
            "--max-tokens",
            "2",
        ],
    );
    let starts: Vec<u64> = runs
        .iter()
        .map(|r| u(&r.summary["shard"]["started_unix_ns"]))
        .collect();
    let skew = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert!(skew < 15_000_000, "shards started {skew} ns apart");
    assert!(
        starts.iter().all(|&s| s >= at_ns),
        "{starts:?} before {at_ns}"
    );
    let mut scheduled: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.events.iter().map(|e| f(&e["scheduled_ms"])))
        .collect();
    scheduled.sort_by(f64::total_cmp);
    // 60 arrivals in 1.5 s; the last, 25 ms before the end, may meet a
    // parent that woke after the end.
    assert!((57..=60).contains(&scheduled.len()), "{}", scheduled.len());
    let gap = 1000.0 / rate;
    for w in scheduled.windows(2) {
        let d = w[1] - w[0];
        assert!(
            (d - gap).abs() < gap / 2.0,
            "a gap of {d:.3} ms in the union, expected {gap} ms: {scheduled:?}"
        );
    }
    let first = scheduled[0] - at_ns as f64 / 1e6;
    assert!(
        (-1.0..gap / 2.0).contains(&first),
        "first arrival {first} ms after the start"
    );
}

#[test]
fn closed_loop_shards_split_the_concurrency() {
    // Slow first tokens keep every virtual user in flight at once.
    let server = Server::start(&["--ttft", "400ms", "--tpot", "0"]);
    let (runs, _) = fleet(
        &server,
        &[
            "--concurrency",
            "8",
            "--duration",
            "1s",
            "--max-tokens",
            "2",
        ],
    );
    let inflight: Vec<u64> = runs
        .iter()
        .map(|r| u(&r.summary["generator"]["max_inflight"]))
        .collect();
    assert_eq!(inflight, [3, 3, 2]);
}

#[test]
fn offline_shards_take_every_dataset_row_once() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let dir = temp_dir("shard-rows");
    let rows = 13;
    let text: String = (0..rows)
        .map(|i| format!("{{\"prompt\": \"question {i}\"}}\n"))
        .collect();
    let path = dir.join("rows.jsonl");
    std::fs::write(&path, text).unwrap();
    let (runs, _) = fleet(
        &server,
        &[
            "--mode",
            "offline",
            "--requests",
            "13",
            "--order",
            "shuffle",
            "--dataset",
            path.to_str().unwrap(),
            "--max-tokens",
            "2",
        ],
    );
    assert_eq!(issued(&runs), [5, 4, 4]);
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        for e in &r.events {
            let row = u(&e["row"]);
            assert_eq!(row % 3, i as u64, "shard {} sent row {row}", i + 1);
            *seen.entry(row).or_default() += 1;
        }
    }
    assert_eq!(seen.len(), rows, "{seen:?}");
    let ids: std::collections::BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| {
            r.events
                .iter()
                .map(|e| e["conversation_id"].as_str().unwrap())
        })
        .collect();
    assert_eq!(ids.len(), rows, "conversation ids are unique across shards");
    assert!(seen.values().all(|&n| n == 1), "{seen:?}");
}

/// `llmload bench ARGS` with the scheduler variables `env` (and no other).
fn bench_with_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = llmload(&["bench"])
        .args(args)
        .fresh_out("shard-auto")
        .args(["--quiet"]);
    for v in SCHEDULER_VARS {
        cmd = cmd.env_remove(v);
    }
    cmd.envs(env).limit(LIMIT).run()
}

/// Extra flags, the variables set, and the (index, count, source) expected.
type AutoCase<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], (u64, u64, &'a str));

#[test]
fn auto_reads_each_schedulers_variables() {
    let server = Server::start(&["--ttft", "0", "--tpot", "0"]);
    let url = server.url();
    let base = [
        "--endpoint",
        url.as_str(),
        "--model",
        "m",
        "--workers",
        "1",
        "--concurrency",
        "3",
        "--requests",
        "3",
        "--max-tokens",
        "2",
        "--shard",
        "auto",
    ];
    let cases: &[AutoCase<'_>] = &[
        (
            &["--shards", "3"],
            &[("JOB_COMPLETION_INDEX", "1")],
            (2, 3, "JOB_COMPLETION_INDEX"),
        ),
        (
            &[],
            &[("JOB_COMPLETION_INDEX", "0"), ("LLMLOAD_SHARDS", "3")],
            (1, 3, "JOB_COMPLETION_INDEX"),
        ),
        (
            &[],
            &[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "3")],
            (3, 3, "SLURM_PROCID"),
        ),
        (
            &[],
            &[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")],
            (1, 2, "OMPI_COMM_WORLD_RANK"),
        ),
        (
            &[],
            &[("PMI_RANK", "1"), ("PMI_SIZE", "2")],
            (2, 2, "PMI_RANK"),
        ),
    ];
    for (extra, env, (index, count, source)) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let run = bench_with_env(&args, env);
        run.assert_success();
        let s = run.summary();
        let sh = &s["shard"];
        assert_eq!(
            (u(&sh["index"]), u(&sh["count"]), sh["source"].as_str()),
            (*index, *count, Some(*source)),
            "{env:?}: {sh}"
        );
        assert_eq!(sh["start_at"], Value::Null);
        // Its share of the 3 requests.
        assert_eq!(
            u(&s["requests"]["issued"]),
            3 / count + u64::from(index - 1 < 3 % count)
        );
        let report = read(&run.out.join("report.txt"));
        assert!(
            report.contains(&format!("shard {index} of {count} ({source})")),
            "{report}"
        );
    }
    let run = bench_with_env(&base, &[]);
    assert_eq!(run.status.code(), Some(1));
    for name in [
        "no scheduler variable",
        "JOB_COMPLETION_INDEX",
        "SLURM_PROCID",
        "PMI_RANK",
    ] {
        assert!(run.stderr.contains(name), "{}", run.stderr);
    }
    let run = bench_with_env(&base, &[("SLURM_PROCID", "one"), ("SLURM_NTASKS", "3")]);
    assert_eq!(run.status.code(), Some(1));
    assert!(run.stderr.contains("$SLURM_PROCID"), "{}", run.stderr);
}

#[test]
fn bad_shard_and_start_flags_are_named() {
    let (far, _) = start_in(48 * 3600 * 1000);
    let two_rows = temp_dir("shard-two-rows").join("two.jsonl");
    std::fs::write(&two_rows, "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n").unwrap();
    let two_rows = two_rows.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--shard", "0/3"], "--shard"),
        (&["--shard", "4/3"], "--shard"),
        (&["--shard", "x"], "--shard"),
        (&["--shard", "1/3", "--shards", "4"], "--shards"),
        (&["--start-at", "tomorrow"], "--start-at"),
        (&["--start-at", "2026-13-01T00:00:00Z"], "--start-at"),
        (&["--start-at", far.as_str()], "24 h"),
        (&["--shard", "9/9", "--concurrency", "4"], "--shard"),
        (
            &["--shard", "1/3", "--dataset", two_rows],
            "2 dataset row(s)",
        ),
    ];
    for (args, named) in cases {
        let mut all = args.to_vec();
        all.extend(["--requests", "1", "--workers", "1"]);
        let run = bench(&all, LIMIT);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(named), "{args:?}: {}", run.stderr);
    }
}
