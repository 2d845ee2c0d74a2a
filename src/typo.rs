//! The known name nearest a mistyped one (a profile field, a flag), for
//! "did you mean …" in an error.

/// The name of `known` closest to `typo` in edit distance, when close
/// enough to be a plausible typo: at most a third of its letters apart (at
/// least 2).
pub(crate) fn nearest<'a>(typo: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(typo, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_nearest() {
        assert_eq!(edit_distance("mni", "min"), 2);
        assert_eq!(edit_distance("--concurency", "--concurrency"), 1);
        assert_eq!(edit_distance("--duraton", "--duration"), 1);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(nearest("endpiont", &["endpoint", "api"]), Some("endpoint"));
        assert_eq!(nearest("zzzzzz", &["endpoint", "api"]), None);
    }
}
