//! Scoring one accuracy dataset's replies as MLPerf's scorers do
//! (`evaluation/scoring.py`): `pass_at_1` (the extracted answer equals the
//! reference exactly), `string_match` (equal once both are stripped of
//! surrounding whitespace) and `rouge` (the whole reply against the
//! reference, `rouge_score`'s four measures). The denominator is every
//! request issued: a request that failed, was never answered or whose text
//! was cut at the kept-text cap scores as wrong (ROUGE: as an empty reply).

use super::extract::Extractor;
use super::rouge::{self, RougeScores};

/// How replies are compared with the reference answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scorer {
    StringMatch,
    PassAt1,
    Rouge,
}

impl Scorer {
    /// Our names and MLPerf's (`exact_match` is its alias of `pass_at_1`).
    pub(crate) fn parse(name: &str) -> Result<Scorer, String> {
        match name {
            "string_match" => Ok(Scorer::StringMatch),
            "pass_at_1" | "exact_match" => Ok(Scorer::PassAt1),
            "rouge" => Ok(Scorer::Rouge),
            "code_bench_scorer"
            | "shopify_category_f1"
            | "agentic_inference_inline"
            | "vbench"
            | "bfcl_v4"
            | "legacy_mlperf_deepseek_r1"
            | "swe_bench_scorer" => Err(format!(
                "scorer '{name}': MLPerf runs it in external services (sandboxes, containers); \
                 llmload scores string_match, pass_at_1 and rouge"
            )),
            _ => Err(format!(
                "scorer '{name}': expected string_match, pass_at_1 (exact_match) or rouge"
            )),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Scorer::StringMatch => "string_match",
            Scorer::PassAt1 => "pass_at_1",
            Scorer::Rouge => "rouge",
        }
    }
}

/// What became of one issued request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reply {
    /// It succeeded and its whole text is here.
    Text(String),
    /// It failed (an error, a timeout, an empty reply).
    Failed,
    /// Its text went past the kept-text cap, so it cannot be scored.
    Truncated,
}

/// One dataset's replies, scored.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Scored {
    /// Requests issued (the denominator).
    pub issued: u64,
    /// Replies judged right (match scorers).
    pub correct: u64,
    /// Replies with text that were scored.
    pub scored: u64,
    pub failed: u64,
    pub truncated: u64,
    /// Requests expected but never answered (the run stopped first).
    pub missing: u64,
    /// `correct / issued`, or ROUGE-1's mean (0–1) for `rouge`; `None` when nothing
    /// was issued.
    pub score: Option<f64>,
    pub rouge: Option<RougeScores>,
    /// Characters of the replies ROUGE read (MLPerf's `gen_len`).
    pub gen_len: u64,
}

/// One reply's verdict under a match scorer, and the answer extracted.
pub(crate) fn judge(
    scorer: Scorer,
    extractor: Extractor,
    text: &str,
    expected: &str,
) -> (Option<String>, bool) {
    let value = extractor.extract(text);
    let right = match (&value, scorer) {
        (Some(v), Scorer::PassAt1) => v == expected,
        (Some(v), Scorer::StringMatch) => py_strip(v) == py_strip(expected),
        (None, _) | (_, Scorer::Rouge) => false,
    };
    (value, right)
}

/// Scores `replies` (`(row, reply)` per issued request) against `expected`
/// (each row's reference); `planned` is how many requests the phase meant
/// to issue, the ones it did not being `missing`.
pub(crate) fn score(
    scorer: Scorer,
    extractor: Extractor,
    expected: &[String],
    replies: &[(usize, Reply)],
    planned: u64,
) -> Scored {
    let mut s = Scored {
        issued: planned.max(replies.len() as u64),
        missing: planned.saturating_sub(replies.len() as u64),
        ..Scored::default()
    };
    for (_, r) in replies {
        match r {
            Reply::Text(_) => s.scored += 1,
            Reply::Failed => s.failed += 1,
            Reply::Truncated => s.truncated += 1,
        }
    }
    if s.issued == 0 {
        return s;
    }
    match scorer {
        Scorer::Rouge => {
            let mut predictions: Vec<&str> = Vec::with_capacity(s.issued as usize);
            let mut references: Vec<&str> = Vec::with_capacity(s.issued as usize);
            for (row, r) in replies {
                predictions.push(match r {
                    Reply::Text(t) => t,
                    Reply::Failed | Reply::Truncated => "",
                });
                references.push(&expected[*row]);
            }
            // Requests never answered: empty replies to the rows they would
            // have asked, in order.
            for k in 0..s.missing as usize {
                predictions.push("");
                references.push(&expected[(replies.len() + k) % expected.len().max(1)]);
            }
            s.gen_len = predictions
                .iter()
                .map(|p| py_strip(p).chars().count() as u64)
                .sum();
            let r = rouge::score(&predictions, &references);
            // ROUGE-1 is the headline, as MLPerf's scorer means to report
            // it ("return only rouge1 for now to align with other scorers").
            s.score = Some(r.rouge1 / 100.0);
            s.rouge = Some(r);
        }
        Scorer::PassAt1 | Scorer::StringMatch => {
            for (row, r) in replies {
                if let Reply::Text(t) = r
                    && judge(scorer, extractor, t, &expected[*row]).1
                {
                    s.correct += 1;
                }
            }
            s.score = Some(s.correct as f64 / s.issued as f64);
        }
    }
    s
}

/// Python's `str.strip()`: Unicode whitespace plus the ASCII separators
/// (0x1C–0x1F) Python counts as space.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// `f"{round(x, 4)}"` as Python prints it: rounded half-even on the exact
/// binary value, then the shortest repr, always with a decimal point.
pub(crate) fn py_round4(x: f64) -> String {
    let rounded: f64 = format!("{x:.4}").parse().unwrap_or(x);
    py_float(rounded)
}

/// A float as Python's `repr` writes it for values of ordinary size.
pub(crate) fn py_float(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn six_of_ten_is_exactly_point_six_and_failures_count_as_wrong() {
        let expected = texts(&["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
        let mut replies: Vec<(usize, Reply)> = (0..10)
            .map(|i| {
                let t = if i < 6 {
                    expected[i].clone()
                } else {
                    "x".into()
                };
                (i, Reply::Text(format!("  {t}\n")))
            })
            .collect();
        let s = score(
            Scorer::StringMatch,
            Extractor::Identity,
            &expected,
            &replies,
            10,
        );
        assert_eq!(s.score, Some(0.6));
        assert_eq!((s.correct, s.issued, s.scored), (6, 10, 10));
        // Exact match does not strip.
        let s = score(
            Scorer::PassAt1,
            Extractor::Identity,
            &expected,
            &replies,
            10,
        );
        assert_eq!(s.score, Some(0.0));
        // Two right answers lost to failures, one to the cap, one never sent.
        replies[0].1 = Reply::Failed;
        replies[1].1 = Reply::Truncated;
        replies.pop();
        let s = score(
            Scorer::StringMatch,
            Extractor::Identity,
            &expected,
            &replies,
            10,
        );
        assert_eq!(s.score, Some(0.4));
        assert_eq!((s.failed, s.truncated, s.missing, s.issued), (1, 1, 1, 10));
    }

    #[test]
    fn python_strip_and_float_printing() {
        assert_eq!(py_strip("\x1c\u{a0} a b \t\n"), "a b");
        assert_eq!(py_round4(0.5), "0.5");
        assert_eq!(py_round4(50.0), "50.0");
        assert_eq!(py_round4(45.123_456), "45.1235");
        assert_eq!(py_round4(0.0), "0.0");
        assert_eq!(py_round4(2.0 / 3.0 * 100.0), "66.6667");
        // Half-even on the exact binary value, as Python's round().
        assert_eq!(py_round4(0.000_05), "0.0001");
        assert_eq!(py_round4(1.000_05), "1.0001");
        assert_eq!(py_round4(0.123_45), "0.1235");
    }

    #[test]
    fn scorer_names() {
        assert_eq!(Scorer::parse("exact_match"), Ok(Scorer::PassAt1));
        assert!(Scorer::parse("bfcl_v4").unwrap_err().contains("external"));
        for s in [Scorer::StringMatch, Scorer::PassAt1, Scorer::Rouge] {
            assert_eq!(Scorer::parse(s.name()), Ok(s));
        }
    }
}
