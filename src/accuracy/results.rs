//! An accuracy phase's results as the outputs show them: the summary's
//! `accuracy` block, and MLPerf's `accuracy/accuracy_results.json`
//! (`commands/benchmark/accuracy.py`'s schema: one `accuracy_scores` entry
//! per dataset, `average_accuracy` the plain mean of the numeric scores).

use serde_json::{Map, Value, json};

use super::Phase;
use super::score::{Scored, Scorer, py_round4};
use super::spec::AccuracySpec;

/// One accuracy dataset, run and scored.
#[derive(Clone, Debug)]
pub(crate) struct DatasetResult {
    pub spec: AccuracySpec,
    /// The column the reference answers came from.
    pub expected_column: String,
    /// Rows in one pass (MLPerf's `unit_samples`).
    pub rows: u64,
    pub scored: Scored,
    /// Wall-clock of the dataset's phase.
    pub duration_s: f64,
    /// Every planned request was issued and reported.
    pub complete: bool,
    /// Why not, when it was not.
    pub incomplete: Vec<String>,
    /// End-to-end latency p50 and p99 of its requests (ms).
    pub latency_ms: Option<(f64, f64)>,
}

/// Every accuracy dataset of a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct AccuracyReport {
    pub phase: Phase,
    pub datasets: Vec<DatasetResult>,
}

impl AccuracyReport {
    /// The mean of the datasets' scores (0–1), as MLPerf averages them.
    pub(crate) fn average(&self) -> Option<f64> {
        let scores: Vec<f64> = self
            .datasets
            .iter()
            .filter(|d| d.spec.scorer != Scorer::Rouge)
            .filter_map(|d| d.scored.score)
            .collect();
        (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64)
    }

    pub(crate) fn complete(&self) -> bool {
        self.datasets.iter().all(|d| d.complete)
    }

    /// The summary's `accuracy` block.
    pub(crate) fn summary_json(&self) -> Value {
        let datasets: Vec<Value> = self
            .datasets
            .iter()
            .map(|d| {
                let s = &d.scored;
                let mut o = json!({
                    "name": d.spec.name,
                    "path": d.spec.dataset.path.display().to_string(),
                    "scorer": d.spec.scorer.name(),
                    "extractor": d.spec.extractor.name(),
                    "expected_column": d.expected_column,
                    "score": s.score,
                    "rows": d.rows,
                    "repeats": d.spec.repeats,
                    "issued": s.issued,
                    "scored": s.scored,
                    "correct": (d.spec.scorer != Scorer::Rouge).then_some(s.correct),
                    "failed": s.failed,
                    "truncated": s.truncated,
                    "missing": s.missing,
                    "duration_s": round3(d.duration_s),
                    "complete": d.complete,
                });
                if let Some(r) = &s.rouge {
                    o["rouge"] = json!({
                        "rouge1": r.rouge1,
                        "rouge2": r.rouge2,
                        "rougeL": r.rouge_l,
                        "rougeLsum": r.rouge_lsum,
                    });
                }
                if let Some((p50, p99)) = d.latency_ms {
                    o["latency_ms"] = json!({"p50": p50, "p99": p99});
                }
                if !d.incomplete.is_empty() {
                    o["incomplete_reasons"] = json!(d.incomplete);
                }
                o
            })
            .collect();
        json!({
            "phase": self.phase.name(),
            "average_accuracy": self.average(),
            "complete": self.complete(),
            "datasets": datasets,
        })
    }

    /// `accuracy/accuracy_results.json`, MLPerf's schema.
    pub(crate) fn mlperf_json(&self) -> Value {
        let entries: Vec<Value> = self.datasets.iter().map(mlperf_entry).collect();
        let mut o = Map::new();
        if let Some(avg) = self.average() {
            o.insert("average_accuracy".into(), avg.into());
        }
        o.insert("accuracy_scores".into(), entries.into());
        Value::Object(o)
    }
}

fn mlperf_entry(d: &DatasetResult) -> Value {
    let s = &d.scored;
    // ROUGE's score is MLPerf's dict of strings, each measure rounded to
    // four places; the others a plain fraction.
    let score = match (&s.rouge, s.score) {
        (Some(r), _) => json!({
            "rouge1": py_round4(r.rouge1),
            "rouge2": py_round4(r.rouge2),
            "rougeL": py_round4(r.rouge_l),
            "rougeLsum": py_round4(r.rouge_lsum),
            "gen_len": s.gen_len.to_string(),
            "gen_num": s.issued,
        }),
        (None, Some(x)) => x.into(),
        (None, None) => Value::Null,
    };
    json!({
        "dataset_name": d.spec.name,
        "extractor": d.spec.extractor.mlperf_class(),
        "ground_truth_column": d.expected_column,
        "score": score,
        "unit_samples": d.rows,
        "num_repeats": d.spec.repeats,
        "total_samples": d.rows * u64::from(d.spec.repeats),
        "duration_s": round3(d.duration_s),
        "complete": d.complete,
        "dataset_type": "accuracy",
        "response_counts": {
            "issued": s.issued,
            "scored": s.scored,
            "empty": s.failed + s.truncated,
            "missing": s.missing,
        },
        "scorer": d.spec.scorer.name(),
    })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accuracy::extract::Extractor;
    use crate::accuracy::rouge::RougeScores;
    use crate::dataset::DatasetSpec;

    fn result(name: &str, scorer: Scorer, scored: Scored) -> DatasetResult {
        let d = std::env::temp_dir().join(format!("llmload-accres-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(format!("{name}.jsonl"));
        std::fs::write(&p, "").unwrap();
        DatasetResult {
            spec: AccuracySpec {
                name: name.into(),
                dataset: DatasetSpec::parse(p.to_str().unwrap()).unwrap(),
                scorer,
                extractor: Extractor::Identity,
                repeats: 2,
                max_tokens: None,
                temperature: None,
                top_p: None,
                given: String::new(),
            },
            expected_column: "answer".into(),
            rows: 5,
            scored,
            duration_s: 1.23456,
            complete: true,
            incomplete: vec![],
            latency_ms: None,
        }
    }

    #[test]
    fn mlperf_schema_and_average() {
        let a = result(
            "a",
            Scorer::StringMatch,
            Scored {
                issued: 10,
                correct: 6,
                scored: 9,
                failed: 1,
                score: Some(0.6),
                ..Scored::default()
            },
        );
        let b = result(
            "b",
            Scorer::PassAt1,
            Scored {
                issued: 10,
                correct: 8,
                scored: 10,
                score: Some(0.8),
                ..Scored::default()
            },
        );
        let r = result(
            "sum",
            Scorer::Rouge,
            Scored {
                issued: 10,
                scored: 10,
                score: Some(0.4),
                rouge: Some(RougeScores {
                    rouge1: 40.0,
                    rouge2: 12.345_67,
                    rouge_l: 30.0,
                    rouge_lsum: 35.5,
                }),
                gen_len: 1234,
                ..Scored::default()
            },
        );
        let report = AccuracyReport {
            phase: Phase::Both,
            datasets: vec![a, b, r],
        };
        let v = report.mlperf_json();
        assert!((v["average_accuracy"].as_f64().unwrap() - 0.7).abs() < 1e-12);
        let e = &v["accuracy_scores"][0];
        assert_eq!(e["dataset_name"], "a");
        assert_eq!(e["extractor"], "IdentityExtractor");
        assert_eq!(e["ground_truth_column"], "answer");
        assert_eq!(e["score"], 0.6);
        assert_eq!(e["unit_samples"], 5);
        assert_eq!(e["num_repeats"], 2);
        assert_eq!(e["total_samples"], 10);
        assert_eq!(e["duration_s"], 1.235);
        assert_eq!(e["complete"], true);
        assert_eq!(e["dataset_type"], "accuracy");
        assert_eq!(e["response_counts"]["empty"], 1);
        let rouge = &v["accuracy_scores"][2]["score"];
        assert_eq!(rouge["rouge1"], "40.0");
        assert_eq!(rouge["rouge2"], "12.3457");
        assert_eq!(rouge["gen_len"], "1234");
        assert_eq!(rouge["gen_num"], 10);
        let s = report.summary_json();
        assert_eq!(s["phase"], "both");
        assert_eq!(s["datasets"][2]["rouge"]["rougeLsum"], 35.5);
        assert_eq!(s["datasets"][0]["correct"], 6);
        assert!(s["datasets"][2]["correct"].is_null());
    }
}
