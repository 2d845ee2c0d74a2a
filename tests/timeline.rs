//! The per-second timeline and the distributions of a real run: an open
//! loop at a fixed rate over a warm-up and two stages, two scenarios. The
//! timeline's counts add up exactly to the summary's, second by second
//! they follow the rate, and timeline.csv holds the same rows.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::report::assert_valid;
use crate::util::*;

const RATE: f64 = 50.0;

/// Sums `key` over the points of `series` whose stage passes `keep`.
fn sum(series: &serde_json::Value, key: &str, keep: impl Fn(&str) -> bool) -> u64 {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| keep(p["stage"].as_str().unwrap()))
        .map(|p| u(&p[key]))
        .sum()
}

#[test]
fn timeline_adds_up_to_the_summary_and_follows_the_rate() {
    let server = Server::start(&["--ttft", "5ms", "--tpot", "1ms"]);
    let json = serde_json::json!({
        "warmup": "1s",
        "arrival": "uniform",
        "live_interval": "0",
        "max_tokens": 8,
        "stages": [
            {"name": "first", "rate": RATE, "duration": "1s"},
            {"name": "second", "rate": RATE, "duration": "1s"}
        ],
        "scenarios": [{"name": "a", "weight": 50}, {"name": "b", "weight": 50}]
    });
    let run = bench_profile(&server, &json, &[], Duration::from_secs(60));
    run.assert_success();
    let s = run.summary();
    assert_valid(&s);
    let t = &s["timeline"];
    assert_eq!(f(&t["interval_s"]), 1.0);
    let series = t["series"].as_array().unwrap();
    let names: Vec<&serde_json::Value> = series.iter().map(|x| &x["scenario"]).collect();
    assert_eq!(names, [&serde_json::Value::Null, &"a".into(), &"b".into()]);
    let all = &series[0];
    let measured = |st: &str| st != "warmup";
    assert_eq!(
        sum(all, "completed", measured),
        u(&s["requests"]["completed"])
    );
    assert_eq!(sum(all, "failed", measured), u(&s["requests"]["failed"]));
    assert_eq!(
        sum(all, "output_tokens", measured),
        u(&s["tokens"]["output_total"])
    );
    assert_eq!(
        sum(all, "input_tokens", measured),
        u(&s["tokens"]["input_total"])
    );
    assert_eq!(
        sum(all, "completed", |st| st == "warmup"),
        u(&s["warmup"]["completed"])
    );
    for (i, stage) in ["first", "second"].into_iter().enumerate() {
        assert_eq!(
            sum(all, "completed", |st| st == stage),
            u(&s["stages"][i]["requests"]["completed"]),
            "{stage}"
        );
    }
    for (i, sc) in series[1..].iter().enumerate() {
        assert_eq!(
            sum(sc, "output_tokens", measured),
            u(&s["scenarios"][i]["tokens"]["output_total"])
        );
    }
    // Second by second, none skipped; the full seconds run at the rate.
    let mut per_second: BTreeMap<u64, u64> = BTreeMap::new();
    for p in all["points"].as_array().unwrap() {
        *per_second.entry(f(&p["t_s"]) as u64).or_default() += u(&p["completed"]);
        if u(&p["completed"]) > 0 {
            // The server is never early.
            assert!(f(&p["ttft_p50_ms"]) >= 5.0, "{p}");
            assert!(f(&p["e2e_p99_ms"]) >= f(&p["e2e_p50_ms"]), "{p}");
        }
    }
    let seconds: Vec<u64> = per_second.keys().copied().collect();
    assert_eq!(seconds, (0..seconds.len() as u64).collect::<Vec<_>>());
    assert!(seconds.len() >= 3, "{per_second:?}");
    for k in 0..3 {
        let n = per_second[&k] as f64;
        assert!((RATE * 0.7..=RATE * 1.3).contains(&n), "second {k}: {n}");
    }
    // timeline.csv: a row per point per series, the same numbers.
    let text = read(&run.out.join("timeline.csv"));
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let points: Vec<(&serde_json::Value, &serde_json::Value)> = series
        .iter()
        .flat_map(|x| x["points"].as_array().unwrap().iter().map(move |p| (x, p)))
        .collect();
    assert_eq!(rows.len(), points.len());
    for (row, (x, p)) in rows.iter().zip(points) {
        assert_eq!(&row[1], p["stage"].as_str().unwrap());
        assert_eq!(&row[2], x["scenario"].as_str().unwrap_or("all"));
        assert_eq!(row[3].parse::<u64>().unwrap(), u(&p["completed"]));
        assert_eq!(row[6].parse::<u64>().unwrap(), u(&p["output_tokens"]));
    }
    // The distributions: CDFs rising to 1, length bins holding every success.
    let d = &s["distributions"];
    let cdf = d["ttft_ms"].as_array().unwrap();
    assert!(!cdf.is_empty() && cdf.len() <= 120);
    assert_eq!(f(&cdf[cdf.len() - 1][1]), 1.0);
    assert_eq!(
        f(&cdf[cdf.len() - 1][0]),
        f(&s["latency_ms"]["ttft"]["max"])
    );
    for key in ["isl", "osl"] {
        let n: f64 = d[key].as_array().unwrap().iter().map(|b| f(&b[2])).sum();
        assert_eq!(n as u64, u(&s["requests"]["completed"]), "{key}");
    }
    assert!(
        !s["stages"][1]["scenarios"][0]["distributions"]["e2e_ms"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
