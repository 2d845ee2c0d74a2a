//! The documents' links lead somewhere: every relative link in the README,
//! CONTRIBUTING.md, perf/README.md, deploy/README.md and the guides names a
//! file that exists, and a `#anchor` into a Markdown file names one of its
//! headings (GitHub's slugs). The README links every guide, so any feature
//! is one click from it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Files another tool writes: a link to one is checked when it is there,
/// and only noted when it is not.
const GENERATED: &[&str] = &["docs/guide/settings.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "perf/README.md",
        "deploy/README.md",
    ]
    .iter()
    .map(|p| root().join(p))
    .collect();
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guides.sort();
    docs.extend(guides);
    docs
}

#[test]
fn every_link_in_the_documents_leads_somewhere() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(root()).unwrap().display().to_string();
        for (line, target) in links(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(path)
            };
            if !file.exists() {
                let rel = normalize(&file);
                if GENERATED.contains(&rel.as_str()) {
                    eprintln!("{name}:{line}: {target}: not generated yet");
                } else {
                    problems.push(format!("{name}:{line}: {target}: no such file"));
                }
                continue;
            }
            if !anchor.is_empty() && file.extension().is_some_and(|x| x == "md") {
                let slugs = slugs(&std::fs::read_to_string(&file).unwrap());
                if !slugs.contains(anchor) {
                    problems.push(format!(
                        "{name}:{line}: {target}: no heading with that anchor (there are {slugs:?})"
                    ));
                }
            }
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let linked: BTreeSet<String> = links(&readme).into_iter().map(|(_, t)| t).collect();
    for doc in documents() {
        let rel = normalize(&doc);
        if rel.starts_with("docs/guide/")
            && !linked.iter().any(|t| t.split('#').next() == Some(&rel))
        {
            problems.push(format!("README.md does not link {rel}"));
        }
    }
    assert!(checked > 40, "only {checked} relative links found");
    assert!(
        problems.is_empty(),
        "broken links:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn slugs_are_github_s() {
    let s = slugs(
        "# Top\n## Known answers: `--echo` and `--answers`\n## Metric definitions (one meaning everywhere)\n\
         ```sh\n# not a heading\n```\n## Top\n",
    );
    let want: BTreeSet<String> = [
        "top",
        "known-answers---echo-and---answers",
        "metric-definitions-one-meaning-everywhere",
        "top-1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(s, want);
    assert_eq!(
        links("see [a](x.md#b) and ![img](../img/r.png), `[not](code)`\n[c](y.md)"),
        [
            (1, "x.md#b".to_string()),
            (1, "../img/r.png".to_string()),
            (2, "y.md".to_string())
        ]
    );
}

/// A path made relative to the repository, `..` resolved.
fn normalize(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.strip_prefix(root()).unwrap_or(p).components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// `](target)` links outside code, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let outside_code: String = line
            .split('`')
            .enumerate()
            .map(|(k, part)| if k % 2 == 0 { part } else { "" })
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = outside_code.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// The anchors GitHub gives a document's headings: lower case, code marks
/// and punctuation dropped, spaces to hyphens, repeats numbered.
fn slugs(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        if fenced {
            continue;
        }
        let title = title.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while out.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        out.insert(unique);
    }
    out
}
