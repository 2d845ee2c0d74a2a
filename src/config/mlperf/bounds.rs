//! The limits a YAML config is held to before it is loaded. yaml-rust2's
//! loader copies an anchor's node at every alias and builds the tree (and
//! later drops it) recursively, so a small file can ask for billions of
//! nodes (nested aliases) or overflow the stack (deep nesting). One pass
//! over the parser's events, which keeps only a count per open node and a
//! size per anchor, measures both first; the trade-off is parsing a config
//! twice, which for files of kilobytes costs nothing worth keeping.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};

/// Deepest nesting of lists and mappings accepted; MLPerf's schema uses 4.
pub(crate) const MAX_DEPTH: usize = 64;

/// Most nodes the loaded document may hold, every alias counted as the
/// whole node it copies; MLPerf's own configs hold a few hundred.
pub(crate) const MAX_NODES: u64 = 100_000;

/// Checks `text` against [`MAX_DEPTH`] and [`MAX_NODES`]. A syntax error is
/// left for the loader to report; the error is the message, with the line
/// where the limit was passed.
pub(crate) fn check(text: &str) -> Result<(), String> {
    let mut parser = Parser::new_from_str(text);
    // One entry per open list or mapping: its anchor and the nodes so far.
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    let mut counted: u64 = 0;
    loop {
        let Ok((event, mark)) = parser.next_token() else {
            return Ok(());
        };
        let line = mark.line();
        let done = match event {
            Event::StreamEnd => return Ok(()),
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if open.len() >= MAX_DEPTH {
                    return Err(format!(
                        "line {line}: lists and mappings nested deeper than {MAX_DEPTH} levels"
                    ));
                }
                open.push((anchor, 1));
                counted += 1;
                None
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop(),
            Event::Scalar(_, _, anchor, _) => {
                counted += 1;
                Some((anchor, 1))
            }
            // An alias to an anchor still open (or unknown) loads as one
            // bad value.
            Event::Alias(id) => {
                let nodes = anchors.get(&id).copied().unwrap_or(1);
                counted = counted.saturating_add(nodes);
                Some((0, nodes))
            }
            _ => None,
        };
        let Some((anchor, nodes)) = done else {
            continue;
        };
        if anchor != 0 {
            anchors.insert(anchor, nodes);
        }
        if let Some((_, parent)) = open.last_mut() {
            *parent = parent.saturating_add(nodes);
        }
        if counted > MAX_NODES {
            return Err(format!(
                "line {line}: more than {MAX_NODES} values once anchors are expanded \
                 (each alias counts as the whole node it repeats)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `levels` of anchors, each a list of ten aliases to the one before.
    fn laughs(levels: usize) -> String {
        let mut s = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for i in 1..=levels {
            let items = vec![format!("*a{}", i - 1); 10].join(", ");
            s += &format!("a{i}: &a{i} [{items}]\n");
        }
        s
    }

    #[test]
    fn aliases_count_as_the_nodes_they_repeat() {
        // 10^4 leaves: under the budget, so a legitimate alias still loads.
        assert_eq!(check(&laughs(3)), Ok(()));
        assert_eq!(check("a: &m x\nb: *m\n"), Ok(()));
        let e = check(&laughs(9)).unwrap_err();
        assert!(e.contains("more than 100000 values"), "{e}");
        // Refused at the line that passed the budget, long before the end.
        assert!(e.starts_with("line 5:"), "{e}");
    }

    #[test]
    fn many_plain_values_are_bounded_too() {
        let many: String = (0..MAX_NODES).map(|i| format!("k{i}: 1\n")).collect();
        let e = check(&many).unwrap_err();
        assert!(e.contains("more than 100000 values"), "{e}");
    }

    #[test]
    fn nesting_is_bounded_in_block_and_flow_style() {
        let ok = format!("x:\n{}1\n", "- ".repeat(MAX_DEPTH - 1));
        assert_eq!(check(&ok), Ok(()));
        let deep = format!("x:\n{}1\n", "- ".repeat(MAX_DEPTH));
        let e = check(&deep).unwrap_err();
        assert!(e.contains("deeper than 64 levels"), "{e}");
        assert!(e.starts_with("line 2:"), "{e}");
        let e = check(&format!("x: {}", "[".repeat(100))).unwrap_err();
        assert!(e.contains("deeper than 64"), "{e}");
        let maps: String = (0..100)
            .map(|i| format!("{}k:\n", "  ".repeat(i)))
            .collect();
        assert!(check(&maps).unwrap_err().contains("deeper than 64"));
    }

    #[test]
    fn a_very_deep_file_is_refused_without_exhausting_the_stack() {
        let e = check(&format!("x:\n{}1\n", "- ".repeat(100_000))).unwrap_err();
        assert!(e.contains("deeper than"), "{e}");
    }

    #[test]
    fn syntax_errors_are_left_to_the_loader() {
        assert_eq!(check("a: [1, 2\nb: 3\n"), Ok(()));
    }
}

#[cfg(test)]
mod seeds {
    use super::super::fuzzing::read;

    /// The fuzz target's committed seeds: MLPerf's templates load, and the
    /// hostile ones are refused by the limits.
    #[test]
    fn the_fuzz_seeds_load_or_are_refused_as_expected() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/mlperf_config");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let (bounded, result) = read(&std::fs::read_to_string(&path).unwrap());
            let hostile = name.starts_with("deep") || name.starts_with("laughs");
            assert_eq!(bounded, !hostile, "{name}");
            if hostile {
                assert!(result.is_err(), "{name}");
            } else if name.contains("template") {
                assert!(result.is_ok(), "{name}: {result:?}");
            }
            seen += 1;
        }
        assert_eq!(seen, 8);
    }
}
