//! The `--dataset PATH[,key=value...]` argument: file, format (by extension
//! or `format=`), column mapping and options, validated before any byte of
//! the file is read. The first comma ends the path, so a path that itself
//! contains a comma cannot be given; that keeps the syntax one flag instead
//! of a family of them.

use std::path::PathBuf;

/// File formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// One JSON array of objects.
    Json,
    /// Comma-separated values with a header row.
    Csv,
}

impl Format {
    fn parse(s: &str) -> Option<Format> {
        match s {
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            _ => None,
        }
    }
}

/// Which column holds which field; `None` means "find it" (prompt) or "absent".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnMap {
    pub prompt: Option<String>,
    pub system: Option<String>,
    pub messages: Option<String>,
    pub input_tokens: Option<String>,
    pub max_tokens: Option<String>,
    pub expected: Option<String>,
}

impl ColumnMap {
    /// The mapped columns as `(key, column)`, in key order.
    pub fn mapped(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("prompt", &self.prompt),
            ("system", &self.system),
            ("messages", &self.messages),
            ("input_tokens", &self.input_tokens),
            ("max_tokens", &self.max_tokens),
            ("expected", &self.expected),
        ]
        .into_iter()
        .filter_map(|(k, c)| c.as_deref().map(|c| (k, c)))
    }
}

/// A parsed `--dataset` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetSpec {
    pub path: PathBuf,
    pub format: Format,
    pub columns: ColumnMap,
    /// Skip (and count) invalid lines instead of failing.
    pub skip_invalid: bool,
    /// Builds each prompt from the row's columns (`{column}`).
    pub template: Option<String>,
    /// Use only the first this many rows (MLPerf's `samples`).
    pub limit: Option<u64>,
}

impl DatasetSpec {
    /// Parses `[perf:]PATH[,key=value...]`. Keys: `format`, `prompt`,
    /// `system`, `messages`, `input_tokens`, `max_tokens`, `expected`,
    /// `skip_invalid`, and MLPerf's spellings `parser.prompt` and
    /// `parser.system`. The path is everything before the first comma; the
    /// file must exist.
    pub fn parse(arg: &str) -> Result<DatasetSpec, String> {
        let (path, options) = match arg.split_once(',') {
            Some((p, o)) => (p, Some(o)),
            None => (arg, None),
        };
        // MLPerf's dataset-type prefixes: a performance set is what we run.
        let path = path.strip_prefix("perf:").unwrap_or(path);
        if path.starts_with("acc:") {
            return Err(format!(
                "--dataset '{arg}': accuracy datasets (acc:) are not supported yet: \
                 accuracy runs are issue 11"
            ));
        }
        if path.is_empty() {
            return Err(format!("--dataset '{arg}': expected PATH[,key=value...]"));
        }
        let mut format = None;
        let mut skip_invalid = None;
        let mut columns = ColumnMap::default();
        for option in options.into_iter().flat_map(|o| o.split(',')) {
            let Some((key, value)) = option.split_once('=') else {
                return Err(format!(
                    "--dataset option '{option}': expected key=value (the path ends at the first comma)"
                ));
            };
            let slot = match key {
                "format" => {
                    let f = Format::parse(value).ok_or_else(|| {
                        format!("--dataset format='{value}': expected jsonl, json or csv")
                    })?;
                    if format.replace(f).is_some() {
                        return Err("--dataset: format= given twice".to_string());
                    }
                    continue;
                }
                "skip_invalid" => {
                    let b = match value {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(format!(
                                "--dataset skip_invalid='{value}': expected true or false"
                            ));
                        }
                    };
                    if skip_invalid.replace(b).is_some() {
                        return Err("--dataset: skip_invalid= given twice".to_string());
                    }
                    continue;
                }
                "prompt" | "parser.prompt" => &mut columns.prompt,
                "system" | "parser.system" => &mut columns.system,
                "messages" => &mut columns.messages,
                "input_tokens" => &mut columns.input_tokens,
                "max_tokens" => &mut columns.max_tokens,
                "expected" => &mut columns.expected,
                _ => {
                    return Err(format!(
                        "--dataset: unknown key '{key}' (expected format, prompt, system, messages, \
                         input_tokens, max_tokens, expected, skip_invalid, parser.prompt or \
                         parser.system)"
                    ));
                }
            };
            if value.is_empty() {
                return Err(format!("--dataset {key}=: expected a column name"));
            }
            if slot.replace(value.to_string()).is_some() {
                let key = key.trim_start_matches("parser.");
                return Err(format!("--dataset: {key}= given twice"));
            }
        }
        if columns.prompt.is_some() && columns.messages.is_some() {
            return Err(
                "--dataset: prompt= and messages= are alternatives; map one of them".to_string(),
            );
        }
        let mapped: Vec<_> = columns.mapped().collect();
        for (i, (key, col)) in mapped.iter().enumerate() {
            if let Some((other, _)) = mapped[..i].iter().find(|(_, c)| c == col) {
                return Err(format!(
                    "--dataset: column '{col}' is mapped twice ({other}= and {key}=)"
                ));
            }
        }
        let path = PathBuf::from(path);
        let format = match format {
            Some(f) => f,
            None => path
                .extension()
                .and_then(|e| e.to_str())
                .and_then(|e| Format::parse(&e.to_ascii_lowercase()))
                .ok_or_else(|| {
                    format!(
                        "--dataset {}: cannot tell the format from the extension \
                         (.jsonl, .ndjson, .json, .csv); add format=jsonl|json|csv",
                        path.display()
                    )
                })?,
        };
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => {
                return Err(format!(
                    "--dataset {}: is a directory, expected a file",
                    path.display()
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("--dataset {}: no such file", path.display()));
            }
            Err(e) => return Err(format!("--dataset {}: {e}", path.display())),
        }
        Ok(DatasetSpec {
            path,
            format,
            columns,
            skip_invalid: skip_invalid.unwrap_or(false),
            template: None,
            limit: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::testutil::TempDir;

    #[test]
    fn mlperf_spellings_and_prefixes() {
        let d = TempDir::new("spec-mlperf");
        let p = d.file("a.csv", "");
        let p = p.to_str().unwrap();
        let s = DatasetSpec::parse(&format!("perf:{p},parser.prompt=q,parser.system=s")).unwrap();
        assert_eq!(s.path.to_str(), Some(p));
        assert_eq!(s.columns.prompt.as_deref(), Some("q"));
        assert_eq!(s.columns.system.as_deref(), Some("s"));
        let plain = DatasetSpec::parse(&format!("{p},prompt=q,system=s")).unwrap();
        assert_eq!(s, plain);
        let e = DatasetSpec::parse(&format!("acc:{p}")).unwrap_err();
        assert!(e.contains("issue 11"), "{e}");
        let e = DatasetSpec::parse(&format!("{p},prompt=q,parser.prompt=r")).unwrap_err();
        assert_eq!(e, "--dataset: prompt= given twice");
    }

    #[test]
    fn format_by_extension_and_override() {
        let d = TempDir::new("spec-ext");
        for (name, want) in [
            ("a.jsonl", Format::Jsonl),
            ("a.NDJSON", Format::Jsonl),
            ("a.json", Format::Json),
            ("a.csv", Format::Csv),
        ] {
            let p = d.file(name, "");
            let s = DatasetSpec::parse(p.to_str().unwrap()).unwrap();
            assert_eq!(s.format, want, "{name}");
            assert_eq!(s.path, p);
            assert!(!s.skip_invalid);
            assert_eq!(s.columns, ColumnMap::default());
        }
        let p = d.file("data.txt", "");
        let s = DatasetSpec::parse(&format!("{},format=csv", p.display())).unwrap();
        assert_eq!(s.format, Format::Csv);
        let e = DatasetSpec::parse(p.to_str().unwrap()).unwrap_err();
        assert!(e.contains("data.txt") && e.contains("format="), "{e}");
    }

    #[test]
    fn columns_and_options() {
        let d = TempDir::new("spec-cols");
        let p = d.file("a.jsonl", "");
        let s = DatasetSpec::parse(&format!(
            "{},prompt=q,system=sys,input_tokens=ids,max_tokens=n,expected=answer,skip_invalid=true",
            p.display()
        ))
        .unwrap();
        assert!(s.skip_invalid);
        assert_eq!(
            s.columns,
            ColumnMap {
                prompt: Some("q".into()),
                system: Some("sys".into()),
                messages: None,
                input_tokens: Some("ids".into()),
                max_tokens: Some("n".into()),
                expected: Some("answer".into()),
            }
        );
        let s = DatasetSpec::parse(&format!("{},messages=conv", p.display())).unwrap();
        assert_eq!(s.columns.messages.as_deref(), Some("conv"));
    }

    #[test]
    fn errors_name_the_key_or_path() {
        let d = TempDir::new("spec-err");
        let p = d.file("a.jsonl", "");
        let p = p.display();
        for (arg, needle) in [
            (format!("{p},colour=red"), "unknown key 'colour'"),
            (format!("{p},format=xml"), "format='xml'"),
            (format!("{p},skip_invalid=yes"), "skip_invalid='yes'"),
            (format!("{p},prompt"), "option 'prompt'"),
            (format!("{p},prompt="), "prompt=: expected a column name"),
            (format!("{p},prompt=a,prompt=b"), "prompt= given twice"),
            (format!("{p},prompt=a,messages=b"), "alternatives"),
            (
                format!("{p},prompt=a,expected=a"),
                "column 'a' is mapped twice",
            ),
            (format!("{p},"), "option ''"),
            (",prompt=a".to_string(), "expected PATH"),
            (
                format!("{}/missing.jsonl", d.path().display()),
                "missing.jsonl: no such file",
            ),
            (
                format!("{},format=json", d.path().display()),
                "is a directory",
            ),
        ] {
            let e = DatasetSpec::parse(&arg).unwrap_err();
            assert!(e.contains(needle), "{arg}: {e}");
        }
    }
}
