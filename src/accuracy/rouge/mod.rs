//! ROUGE as MLPerf's `RougeScorer` computes it: each text `strip()`ped,
//! split into sentences by nltk's Punkt (`punkt`) and re-joined one sentence
//! a line, then Google's `rouge_score` with `use_stemmer=True` (through
//! Hugging Face `evaluate`) — rouge1, rouge2, rougeL, and rougeLsum over
//! those lines — and each key's mean F-measure × 100.
//!
//! Everything that decides a score is reproduced rather than approximated:
//! the tokenizer (`tokenize`), nltk's Porter stemmer (`porter`), the LCS
//! tie-breaking that rougeLsum's union depends on (`lcs`), and numpy's
//! pairwise summation for the mean. Tokens are interned to ids per pair, so
//! the n-gram and LCS work compares integers.

mod lcs;
mod porter;
mod punkt;
mod tokenize;

use std::collections::HashMap;

/// ROUGE F-measures: per pair in 0..=1 ([`score_pair`]), or MLPerf's mean
/// × 100 over a dataset ([`score`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct RougeScores {
    pub rouge1: f64,
    pub rouge2: f64,
    pub rouge_l: f64,
    pub rouge_lsum: f64,
}

/// MLPerf's RougeScorer result over paired texts: each key's mean F-measure
/// × 100, NOT rounded (the caller rounds to 4 places as MLPerf does). Empty
/// input: all zero. Pairs beyond the shorter slice are ignored (`zip`).
pub(crate) fn score(predictions: &[&str], references: &[&str]) -> RougeScores {
    let pairs: Vec<RougeScores> = predictions
        .iter()
        .zip(references)
        .map(|(p, r)| score_pair(p, r))
        .collect();
    if pairs.is_empty() {
        return RougeScores::default();
    }
    let mean = |key: fn(&RougeScores) -> f64| {
        let values: Vec<f64> = pairs.iter().map(key).collect();
        pairwise_sum(&values) / values.len() as f64 * 100.0
    };
    RougeScores {
        rouge1: mean(|s| s.rouge1),
        rouge2: mean(|s| s.rouge2),
        rouge_l: mean(|s| s.rouge_l),
        rouge_lsum: mean(|s| s.rouge_lsum),
    }
}

/// One pair's F-measures (0..1), after the same sentence post-processing.
pub(crate) fn score_pair(prediction: &str, reference: &str) -> RougeScores {
    let mut vocab = HashMap::new();
    let pred = Summary::new(prediction, &mut vocab);
    let refr = Summary::new(reference, &mut vocab);
    let (p, r) = (pred.tokens(), refr.tokens());
    RougeScores {
        rouge1: ngram_f(&r, &p, 1),
        rouge2: ngram_f(&r, &p, 2),
        rouge_l: if p.is_empty() || r.is_empty() {
            0.0
        } else {
            let l = lcs::lcs_len(&r, &p) as f64;
            f_measure(l / p.len() as f64, l / r.len() as f64)
        },
        rouge_lsum: lsum_f(&refr.lines, &pred.lines, vocab.len()),
    }
}

/// A text as MLPerf hands it to `rouge_score`: stripped, one Punkt sentence
/// a line; kept as the token ids of each non-empty line.
struct Summary {
    lines: Vec<Vec<u32>>,
}

impl Summary {
    fn new(text: &str, vocab: &mut HashMap<String, u32>) -> Self {
        let joined = punkt::sent_tokenize(text.trim_matches(punkt::is_space)).join("\n");
        let mut words = Vec::new();
        let lines = joined
            .split('\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                words.clear();
                tokenize::tokenize(line, &mut words);
                words
                    .drain(..)
                    .map(|w| {
                        let next = vocab.len() as u32;
                        *vocab.entry(w).or_insert(next)
                    })
                    .collect()
            })
            .collect();
        Summary { lines }
    }

    /// The whole text's tokens: "\n" separates tokens like any other
    /// non-alphanumeric character, so they are the lines' tokens in order.
    fn tokens(&self) -> Vec<u32> {
        self.lines.concat()
    }
}

/// `rouge_score.scoring.fmeasure`.
fn f_measure(precision: f64, recall: f64) -> f64 {
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

/// rougeN: clipped n-gram overlap; an empty side divides by 1.
fn ngram_f(target: &[u32], prediction: &[u32], n: usize) -> f64 {
    fn grams(t: &[u32], n: usize) -> Vec<&[u32]> {
        let mut g: Vec<&[u32]> = t.windows(n).collect();
        g.sort_unstable();
        g
    }
    let (t, p) = (grams(target, n), grams(prediction, n));
    let (mut i, mut j, mut overlap) = (0, 0, 0usize);
    while i < t.len() && j < p.len() {
        match t[i].cmp(p[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                overlap += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let overlap = overlap as f64;
    f_measure(
        overlap / p.len().max(1) as f64,
        overlap / t.len().max(1) as f64,
    )
}

/// rougeLsum: summary-level union LCS over the lines.
fn lsum_f(target: &[Vec<u32>], prediction: &[Vec<u32>], vocab: usize) -> f64 {
    let m: usize = target.iter().map(Vec::len).sum();
    let n: usize = prediction.iter().map(Vec::len).sum();
    if m == 0 || n == 0 {
        return 0.0;
    }
    let hits = lcs::union_lcs_hits(target, prediction, vocab) as f64;
    f_measure(hits / n as f64, hits / m as f64)
}

/// numpy's pairwise summation (`np.mean` of a float64 array), so the mean
/// rounds as MLPerf's does to the last bit.
fn pairwise_sum(a: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    if a.len() < 8 {
        a.iter().fold(0.0, |s, &x| s + x)
    } else if a.len() <= BLOCK {
        let mut r = [0.0; 8];
        r.copy_from_slice(&a[..8]);
        let whole = a.len() - a.len() % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (acc, &x) in r.iter_mut().zip(chunk) {
                *acc += x;
            }
        }
        let mut s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[whole..] {
            s += x;
        }
        s
    } else {
        let half = a.len() / 2;
        let half = half - half % 8;
        pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
    }
}

#[cfg(test)]
mod tests;
