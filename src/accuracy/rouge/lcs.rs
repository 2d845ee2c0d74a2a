//! Longest common subsequences over token ids, for rougeL (the length) and
//! rougeLsum (the union of one LCS per candidate sentence, as ROUGE-1.5.5
//! and `rouge_score` compute it). Which of several equally long LCSs the
//! union takes changes the score, so the backtrack breaks ties as
//! `rouge_score` does: up (drop a reference token) unless left is strictly
//! longer.

/// The length of a longest common subsequence, in O(|b|) memory.
pub(super) fn lcs_len(a: &[u32], b: &[u32]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for &x in a {
        let mut diag = 0;
        for (j, &y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
    row[b.len()]
}

/// Marks in `hit` the positions in `reference` of one longest common
/// subsequence with `candidate`; `table` is scratch space.
pub(super) fn mark_lcs(
    reference: &[u32],
    candidate: &[u32],
    hit: &mut [bool],
    table: &mut Vec<u32>,
) {
    let cols = candidate.len() + 1;
    table.clear();
    table.resize((reference.len() + 1) * cols, 0);
    for (i, &x) in reference.iter().enumerate() {
        let (done, rest) = table.split_at_mut((i + 1) * cols);
        let above = &done[i * cols..];
        let row = &mut rest[..cols];
        for (j, &y) in candidate.iter().enumerate() {
            row[j + 1] = if x == y {
                above[j] + 1
            } else {
                above[j + 1].max(row[j])
            };
        }
    }
    let (mut i, mut j) = (reference.len(), candidate.len());
    while i > 0 && j > 0 {
        if reference[i - 1] == candidate[j - 1] {
            hit[i - 1] = true;
            i -= 1;
            j -= 1;
        } else if table[i * cols + j - 1] > table[(i - 1) * cols + j] {
            j -= 1;
        } else {
            i -= 1;
        }
    }
}

/// Summary-level LCS hits (ROUGE paper §3.2): for each reference sentence,
/// the union of its LCS with every candidate sentence, each token counted
/// at most as often as it occurs in both summaries. `vocab` bounds the ids.
pub(super) fn union_lcs_hits(
    reference: &[Vec<u32>],
    candidate: &[Vec<u32>],
    vocab: usize,
) -> usize {
    let mut left_r = vec![0u32; vocab];
    let mut left_c = vec![0u32; vocab];
    for &t in reference.iter().flatten() {
        left_r[t as usize] += 1;
    }
    for &t in candidate.iter().flatten() {
        left_c[t as usize] += 1;
    }
    let mut hits = 0;
    let mut hit = Vec::new();
    let mut table = Vec::new();
    for r in reference {
        hit.clear();
        hit.resize(r.len(), false);
        for c in candidate {
            mark_lcs(r, c, &mut hit, &mut table);
        }
        for (&t, _) in r.iter().zip(&hit).filter(|(_, h)| **h) {
            let t = t as usize;
            if left_c[t] > 0 && left_r[t] > 0 {
                hits += 1;
                left_c[t] -= 1;
                left_r[t] -= 1;
            }
        }
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(r: &[u32], c: &[u32]) -> Vec<usize> {
        let mut hit = vec![false; r.len()];
        mark_lcs(r, c, &mut hit, &mut Vec::new());
        hit.iter()
            .enumerate()
            .filter(|(_, h)| **h)
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn lengths() {
        assert_eq!(lcs_len(&[], &[1, 2]), 0);
        assert_eq!(lcs_len(&[1, 2], &[]), 0);
        assert_eq!(lcs_len(&[1, 2, 3, 4], &[1, 3, 4]), 3);
        assert_eq!(lcs_len(&[1, 2, 3], &[3, 2, 1]), 1);
        assert_eq!(lcs_len(&[1, 1, 1], &[1, 1]), 2);
    }

    #[test]
    fn backtrack_breaks_ties_like_rouge_score() {
        // rouge_score's lcs_ind: "a b" against "b a" → [0]; "a b a"
        // against "a" → [2]; "x a b" against "a x b" → [0, 2].
        assert_eq!(marked(&[1, 2], &[2, 1]), [0]);
        assert_eq!(marked(&[1, 2, 1], &[1]), [2]);
        assert_eq!(marked(&[9, 1, 2], &[1, 9, 2]), [0, 2]);
        assert_eq!(marked(&[1, 2, 3], &[1, 3]), [0, 2]);
        assert_eq!(marked(&[], &[1]), Vec::<usize>::new());
    }

    #[test]
    fn union_counts_each_token_once_per_occurrence() {
        // The paper's example: r = w1..w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5
        // → union {w1 w2 w3 w5}, 4 hits; w1 is in both summaries once.
        let r = vec![vec![1, 2, 3, 4, 5]];
        let c = vec![vec![1, 2, 6, 7, 8], vec![1, 3, 8, 9, 5]];
        assert_eq!(union_lcs_hits(&r, &c, 10), 4);
        // A token the candidate has once is hit once, even from two sentences.
        assert_eq!(union_lcs_hits(&[vec![1], vec![1]], &[vec![1]], 2), 1);
    }
}
