use super::*;

const ROWS: &str = include_str!("../../../tests/fixtures/accuracy/rouge-20.jsonl");
const EXPECTED: &str = include_str!("../../../tests/fixtures/accuracy/rouge-20.expected.json");
const KEYS: [&str; 4] = ["rouge1", "rouge2", "rougeL", "rougeLsum"];

fn get(s: &RougeScores, key: &str) -> f64 {
    match key {
        "rouge1" => s.rouge1,
        "rouge2" => s.rouge2,
        "rougeL" => s.rouge_l,
        _ => s.rouge_lsum,
    }
}

fn fixture() -> (Vec<(String, String)>, serde_json::Value) {
    let rows = ROWS
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                v["prediction"].as_str().unwrap().to_string(),
                v["reference"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (rows, serde_json::from_str(EXPECTED).unwrap())
}

#[test]
fn each_row_matches_rouge_score() {
    let (rows, expected) = fixture();
    assert_eq!(rows.len(), 20);
    for (i, (p, r)) in rows.iter().enumerate() {
        let got = score_pair(p, r);
        for key in KEYS {
            let want = expected["rows"][i][key].as_f64().unwrap();
            assert!(
                (get(&got, key) - want).abs() < 1e-6,
                "row {i} {key}: {} vs {want}",
                get(&got, key)
            );
        }
    }
}

#[test]
fn aggregate_matches_mlperf() {
    let (rows, expected) = fixture();
    let preds: Vec<&str> = rows.iter().map(|(p, _)| p.as_str()).collect();
    let refs: Vec<&str> = rows.iter().map(|(_, r)| r.as_str()).collect();
    let got = score(&preds, &refs);
    for key in KEYS {
        let mlperf = expected["mlperf"][key].as_f64().unwrap();
        assert!(
            (get(&got, key) - mlperf).abs() < 0.005,
            "{key}: {} vs {mlperf}",
            get(&got, key)
        );
        // The unrounded mean, to the last bit numpy's summation gives.
        assert_eq!(
            get(&got, key),
            expected["mean_x100"][key].as_f64().unwrap(),
            "{key}"
        );
        assert_eq!((get(&got, key) * 1e4).round() / 1e4, mlperf, "{key}");
    }
}

#[test]
fn empty_input_and_empty_texts_score_zero() {
    assert_eq!(score(&[], &[]), RougeScores::default());
    assert_eq!(score_pair("", "Some reference."), RougeScores::default());
    assert_eq!(
        score_pair("Some prediction.", "  \n"),
        RougeScores::default()
    );
    assert_eq!(score_pair("", ""), RougeScores::default());
}

#[test]
fn identical_texts_score_one() {
    let s = score_pair("The cat sat. It purred!", "The cat sat. It purred!");
    assert_eq!(
        s,
        RougeScores {
            rouge1: 1.0,
            rouge2: 1.0,
            rouge_l: 1.0,
            rouge_lsum: 1.0
        }
    );
}

#[test]
fn rouge_score_readme_example() {
    // rouge_score's docstring pair with use_stemmer=True (scripts/rouge-fixture.py
    // computes the same way): 'The quick brown fox jumps over the lazy dog'
    // against 'The quick brown dog jumps on the log.'.
    let s = score_pair(
        "The quick brown dog jumps on the log.",
        "The quick brown fox jumps over the lazy dog",
    );
    assert!((s.rouge1 - 2.0 * (6.0 / 8.0) * (6.0 / 9.0) / (6.0 / 8.0 + 6.0 / 9.0)).abs() < 1e-12);
}

#[test]
fn pairwise_sum_follows_numpy_blocks() {
    let a: Vec<f64> = (0..300).map(|i| 0.1 * i as f64 + 1e-3).collect();
    let naive: f64 = a.iter().sum();
    assert!((pairwise_sum(&a) - naive).abs() < 1e-9);
    assert_eq!(pairwise_sum(&[0.5; 7]), 3.5);
    assert_eq!(pairwise_sum(&[]), 0.0);
}

#[test]
#[ignore = "speed check: cargo test --release --lib accuracy::rouge -- --ignored --nocapture"]
fn thousand_pairs_of_hundred_words() {
    let (rows, _) = fixture();
    let long = |i: usize| {
        (0..5)
            .map(|k| rows[(i + k) % rows.len()].1.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let refs: Vec<String> = (0..1000).map(long).collect();
    let preds: Vec<String> = (0..1000).map(|i| long(i + 3)).collect();
    let r: Vec<&str> = refs.iter().map(String::as_str).collect();
    let p: Vec<&str> = preds.iter().map(String::as_str).collect();
    let start = std::time::Instant::now();
    let s = score(&p, &r);
    eprintln!(
        "1000 pairs of ~{} words: {:?} ({s:?})",
        refs[0].split_whitespace().count(),
        start.elapsed()
    );
}
