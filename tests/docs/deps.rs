//! DESIGN.md's dependency list against the code. The list (one line per
//! top-level module of `src/`, `- report: accuracy, ascii, …`, after the
//! line that opens "Dependency direction") is compared with the edges the
//! non-test code makes: every `crate::NAME` path, in `use` lines and in
//! expressions, and `use crate::{a, b::c}` groups, where NAME is a top-level
//! module (or a `#[macro_export]` macro, counted for the module defining
//! it). Test code is left out: items under `#[cfg(test)]` (or
//! `cfg(all(test, …))`), and the files of modules declared that way. A
//! failure names each edge to add to or remove from the list, with a file
//! that makes it, and any cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn design_dependency_list_is_the_code_s() {
    let code = CodeGraph::read(&root().join("src"));
    let design = std::fs::read_to_string(root().join("docs/DESIGN.md")).unwrap();
    let listed = listed_graph(&design).unwrap_or_else(|e| panic!("docs/DESIGN.md: {e}"));

    let mut problems = Vec::new();
    for m in code.modules.iter() {
        if !listed.contains_key(m) {
            problems.push(format!("add a line for module `{m}`"));
        }
    }
    for m in listed.keys() {
        if !code.modules.contains(m) {
            problems.push(format!(
                "remove the line for `{m}`: src/ has no such module"
            ));
        }
    }
    for (from, tos) in &code.edges {
        for (to, file) in tos {
            if !listed.get(from).is_some_and(|l| l.contains(to)) {
                problems.push(format!("add edge {from} → {to} (src/{file})"));
            }
        }
    }
    for (from, tos) in &listed {
        for to in tos {
            if !code.edges.get(from).is_some_and(|c| c.contains_key(to)) {
                problems.push(format!(
                    "remove edge {from} → {to} (no non-test code in src/{from} uses crate::{to})"
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle(&code.graph()) {
        problems.push(format!("the code has a cycle: {}", cycle.join(" → ")));
    }
    assert!(
        problems.is_empty(),
        "docs/DESIGN.md's dependency list (\"Dependency direction\") is not the code's:\n  {}\n\
         the code's list, to paste:\n{}",
        problems.join("\n  "),
        render(&code.graph())
    );
}

/// The edges the scanner finds in code written for the purpose, so a
/// scanner that sees nothing cannot pass the test above by agreeing with an
/// empty list.
#[test]
fn the_scanner_sees_paths_groups_macros_and_skips_tests() {
    let src = crate::util::temp_dir("deps");
    let w = |p: &str, s: &str| {
        let p = src.join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    w("lib.rs", "mod a; mod b; mod c; mod d; mod e;\n");
    w(
        "a/mod.rs",
        "use crate::{b::X, c};\n\
         // crate::d in a comment\n\
         const S: &str = \"crate::d in a string\";\n\
         const Q: char = '{';\n\
         #[cfg(test)]\nmod tests { use crate::e::Y; fn f() { let _ = '}'; } }\n\
         #[cfg(test)]\nmod fixtures;\n\
         fn g() { crate::json_key!(); }\n",
    );
    w("a/fixtures.rs", "use crate::e::Z;\n");
    w(
        "b.rs",
        "pub struct X; fn h() -> u8 { crate::a::helper() }\n",
    );
    w("c.rs", "");
    w(
        "d/mod.rs",
        "#[macro_export]\nmacro_rules! json_key { () => {} }\n",
    );
    w(
        "e.rs",
        "#[cfg(all(test, feature = \"x\"))]\nuse crate::a::T;\n",
    );
    let g = CodeGraph::read(&src).graph();
    let want: Graph = [
        ("a", &["b", "c", "d"][..]),
        ("b", &["a"][..]),
        ("c", &[][..]),
        ("d", &[][..]),
        ("e", &[][..]),
    ]
    .iter()
    .map(|(m, to)| {
        (
            m.to_string(),
            to.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
        )
    })
    .collect();
    assert_eq!(g, want);
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );
    let listed = listed_graph(&format!(
        "Dependency direction (checked):\n\n{}\nAfter.\n",
        render(&g)
    ))
    .unwrap();
    assert_eq!(listed, g, "render and parse round-trip");
}

/// The top-level modules and, per edge, one file that makes it.
struct CodeGraph {
    modules: BTreeSet<String>,
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl CodeGraph {
    fn read(src: &Path) -> CodeGraph {
        let mut files = Vec::new();
        walk(src, &mut files);
        files.sort();
        let top = |p: &Path| -> String {
            let rel = p.strip_prefix(src).unwrap();
            let first = rel.components().next().unwrap().as_os_str();
            let first = first.to_str().unwrap();
            first.strip_suffix(".rs").unwrap_or(first).to_string()
        };
        let mut code = BTreeMap::new();
        let mut test_only: Vec<PathBuf> = Vec::new();
        let mut macros = BTreeMap::new();
        for p in &files {
            let text = std::fs::read_to_string(p).unwrap();
            let (kept, test_mods) = without_tests(&blank_literals(&text));
            let dir = module_dir(p);
            test_only.extend(test_mods.iter().map(|m| dir.join(m)));
            for name in exported_macros(&kept) {
                macros.insert(name, top(p));
            }
            code.insert(p.clone(), kept);
        }
        let modules: BTreeSet<String> = files
            .iter()
            .map(|p| top(p))
            .filter(|m| m != "lib" && m != "main")
            .collect();
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (p, kept) in &code {
            let from = top(p);
            if !modules.contains(&from) {
                continue;
            }
            let skipped = test_only
                .iter()
                .any(|t| p.starts_with(t) || *p == t.with_extension("rs"));
            if skipped {
                continue;
            }
            for name in crate_paths(kept) {
                let to = macros.get(&name).cloned().unwrap_or(name);
                if to != from && modules.contains(&to) {
                    let file = p.strip_prefix(src).unwrap().display().to_string();
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert(file);
                }
            }
        }
        CodeGraph { modules, edges }
    }

    fn graph(&self) -> Graph {
        self.modules
            .iter()
            .map(|m| {
                let to = self
                    .edges
                    .get(m)
                    .map(|e| e.keys().cloned().collect())
                    .unwrap_or_default();
                (m.clone(), to)
            })
            .collect()
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Where the child modules of the file `p` live: beside `mod.rs`, `lib.rs`
/// and `main.rs`, else in the folder named after the file.
fn module_dir(p: &Path) -> PathBuf {
    let parent = p.parent().unwrap();
    let stem = p.file_stem().unwrap().to_str().unwrap();
    if matches!(stem, "mod" | "lib" | "main") {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    }
}

/// The text with comments removed and the insides of string and character
/// literals blanked, lines kept, so braces and paths are only code's.
fn blank_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, &b[i..end]);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &b[i..j]);
            i = j;
        } else if let Some((hashes, open)) = raw_string_start(&b[i..])
            && (i == 0 || !ident(b[i - 1]))
        {
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = i + open;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| body + n + close.len());
            out.push(b'"');
            blank(&mut out, &b[i + 1..end - 1]);
            out.push(b'"');
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push(b'"');
            blank(&mut out, &b[i + 1..j.min(b.len())]);
            out.push(b'"');
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{7f}'); otherwise a lifetime.
            let len = if b.get(i + 1) == Some(&b'\\') {
                b[i + 3..].iter().position(|&c| c == b'\'').map(|n| n + 4)
            } else {
                text[i + 1..]
                    .chars()
                    .next()
                    .map(|c| 1 + c.len_utf8())
                    .filter(|&n| b.get(i + n) == Some(&b'\''))
                    .map(|n| n + 1)
            };
            match len {
                Some(n) => {
                    out.push(b'\'');
                    blank(&mut out, &b[i + 1..i + n - 1]);
                    out.push(b'\'');
                    i += n;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// `r"`, `r#"`, `br"`…: the number of hashes and the length of the opening.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let skip = if b.starts_with(b"br") {
        2
    } else if b.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = b[skip..].iter().take_while(|&&c| c == b'#').count();
    (b.get(skip + hashes) == Some(&b'"')).then_some((hashes, skip + hashes + 1))
}

/// The code with every item under a test-only `cfg` blanked, and the names
/// of the test-only modules it declares in files of their own.
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut s = code.to_string();
    let mut mods = Vec::new();
    while let Some(start) = ["#[cfg(test)]", "#[cfg(all(test,", "#[cfg(all(test ,"]
        .iter()
        .filter_map(|m| s.find(m))
        .min()
    {
        let attr_end = start + s[start..].find(']').unwrap() + 1;
        let b = s.as_bytes();
        let mut k = attr_end;
        while b[k] != b';' && b[k] != b'{' {
            k += 1;
        }
        let end = if b[k] == b';' {
            k + 1
        } else {
            let mut depth = 0;
            loop {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break k + 1;
                        }
                    }
                    _ => {}
                }
                k += 1;
            }
        };
        let item = &s[attr_end..end];
        if item.trim_end().ends_with(';')
            && let Some(name) = item.split_whitespace().skip_while(|w| *w != "mod").nth(1)
        {
            mods.push(name.trim_end_matches(';').to_string());
        }
        let blanked: String = s[start..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        s.replace_range(start..end, &blanked);
    }
    (s, mods)
}

fn exported_macros(code: &str) -> Vec<String> {
    code.match_indices("#[macro_export]")
        .filter_map(|(i, m)| {
            let rest = code[i + m.len()..].trim_start();
            let rest = rest.strip_prefix("macro_rules!")?.trim_start();
            Some(
                rest.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect(),
            )
        })
        .collect()
}

/// The first segment after every `crate::` (each member of a `{…}` group).
fn crate_paths(code: &str) -> BTreeSet<String> {
    let word = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for (i, m) in code.match_indices("crate::") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[i + m.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut member_start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(word(&group[member_start..j]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(word(&group[member_start..j]));
                        member_start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(word(rest));
        }
    }
    out.remove("");
    out
}

/// The list in DESIGN.md: the first run of `- module: a, b` lines after the
/// line beginning "Dependency direction" (and before the next heading).
/// `(leaf)` stands for no edges; text after ` — ` is a note.
fn listed_graph(design: &str) -> Result<Graph, String> {
    let mut lines = design
        .lines()
        .skip_while(|l| !l.starts_with("Dependency direction"));
    lines
        .next()
        .ok_or("no line starts with \"Dependency direction\"")?;
    let mut g = Graph::new();
    let list = lines
        .take_while(|l| !l.starts_with('#'))
        .skip_while(|l| !l.starts_with("- "));
    for line in list {
        let Some(item) = line.strip_prefix("- ") else {
            break;
        };
        let item = item.split(" — ").next().unwrap();
        let (name, deps) = item
            .split_once(':')
            .ok_or_else(|| format!("{line:?}: expected `- module: a, b`"))?;
        let name = name.trim().trim_matches('`').to_string();
        let deps: BTreeSet<String> = if deps.trim() == "(leaf)" {
            BTreeSet::new()
        } else {
            deps.split(',')
                .map(|d| d.trim().trim_matches('`').to_string())
                .collect()
        };
        if deps.iter().any(|d| d.is_empty() || d.contains(' ')) {
            return Err(format!("{line:?}: expected `- module: a, b` or `(leaf)`"));
        }
        if g.insert(name.clone(), deps).is_some() {
            return Err(format!("`{name}` is listed twice"));
        }
    }
    if g.is_empty() {
        return Err("no `- module: a, b` lines after \"Dependency direction\"".into());
    }
    Ok(g)
}

fn render(g: &Graph) -> String {
    g.iter()
        .map(|(m, to)| {
            let to = if to.is_empty() {
                "(leaf)".to_string()
            } else {
                to.iter().cloned().collect::<Vec<_>>().join(", ")
            };
            format!("- {m}: {to}\n")
        })
        .collect()
}

/// A path that comes back to where it started, if the graph has one.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        g: &Graph,
        m: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for to in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, to, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}
