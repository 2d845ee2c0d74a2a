//! The `--dataset PATH[,key=value...]` argument: file, format (by extension
//! or `format=`), column mapping and options, validated before any byte of
//! the file is read. The first comma ends the path, so a path that itself
//! contains a comma cannot be given; that keeps the syntax one flag instead
//! of a family of them.

use std::path::PathBuf;

use super::template::Template;

/// File formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// One JSON array of objects.
    Json,
    /// Comma-separated values with a header row.
    Csv,
    /// An Apache Parquet file (the `columnar` feature).
    Parquet,
    /// A directory written by Hugging Face `datasets`' `save_to_disk` (the
    /// `columnar` feature).
    HuggingFace,
}

impl Format {
    fn parse(s: &str) -> Option<Format> {
        match s {
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "parquet" => Some(Format::Parquet),
            "huggingface" | "hf" => Some(Format::HuggingFace),
            _ => None,
        }
    }

    /// Why this build cannot read the format, if it cannot.
    fn unavailable(self) -> Option<&'static str> {
        let name = match self {
            Format::Parquet => "Parquet files (format=parquet)",
            Format::HuggingFace => "Hugging Face datasets (format=huggingface)",
            _ => return None,
        };
        (!cfg!(feature = "columnar")).then_some(name)
    }
}

/// Files in a directory that `save_to_disk` writes: one names the splits
/// of a `DatasetDict`, the other describes a single `Dataset`.
pub(crate) const HF_DICT: &str = "dataset_dict.json";
pub(crate) const HF_STATE: &str = "state.json";

/// Which column holds which field; `None` means "find it" (prompt) or "absent".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnMap {
    pub prompt: Option<String>,
    pub system: Option<String>,
    pub messages: Option<String>,
    pub input_tokens: Option<String>,
    pub max_tokens: Option<String>,
    pub expected: Option<String>,
    /// A ShareGPT row (`conversations` of `from`/`value`) is sent whole, as
    /// recorded (`sharegpt=whole`), rather than as its first human turn
    /// with the first reply's length as the output length.
    pub sharegpt_whole: bool,
    /// A number in the prompt column is sent as its text (Python's `str`),
    /// as MLPerf reads rows; set by MLPerf mode, not by the spec string.
    pub number_prompts: bool,
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

/// The path prefix naming one of MLPerf's predefined datasets
/// (`predefined:cnn_dailymail::llama3_8b`).
pub(crate) const PREDEFINED: &str = "predefined:";

/// The spec of MLPerf's predefined dataset `name`: its cached file (or
/// the first place looked, when none has it) and its preset's prompt.
fn predefined_spec(
    name: &str,
    mut columns: ColumnMap,
    skip_invalid: Option<bool>,
    template: Option<String>,
) -> Result<DatasetSpec, String> {
    let r = super::predefined::resolve(name).map_err(|e| format!("--dataset: {e}"))?;
    if let Some(what) = r.format.unavailable() {
        return Err(format!(
            "--dataset: predefined dataset '{name}': this build of llmload cannot read {what}: \
             it was built without the `columnar` feature (rebuild with default features)"
        ));
    }
    let path = r.path.unwrap_or_else(|| {
        super::predefined::cache_dirs(&|k| std::env::var(k).ok())[0]
            .join(super::predefined::lookup(name).map_or("", |(d, _)| d.file))
    });
    if columns.prompt.is_none() && columns.messages.is_none() && template.is_none() {
        columns.prompt = r.prompt.map(str::to_string);
    }
    if columns.system.is_none() {
        columns.system = r.system.map(str::to_string);
    }
    let preset_template = (columns.prompt.is_none() && columns.messages.is_none())
        .then(|| r.template.map(str::to_string))
        .flatten();
    DatasetSpec {
        path,
        format: r.format,
        columns,
        skip_invalid: skip_invalid.unwrap_or(false),
        split: None,
        template: None,
        limit: None,
        predefined: Some(name.to_string()),
    }
    .with_template(template.or(preset_template))
}

/// A parsed `--dataset` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetSpec {
    pub path: PathBuf,
    pub format: Format,
    pub columns: ColumnMap,
    /// Skip (and count) invalid lines instead of failing.
    pub skip_invalid: bool,
    /// The split of a Hugging Face `DatasetDict` (`split=`); `None` takes
    /// `train`, or the only split.
    pub split: Option<String>,
    /// A prompt template over the row's columns (`template=`, see
    /// `template::Template`), used instead of a prompt column.
    pub template: Option<String>,
    /// Use only the first this many rows (MLPerf's `samples`).
    pub limit: Option<u64>,
    /// The MLPerf predefined dataset this file is (`predefined:NAME`):
    /// a missing file is then an error naming the dataset and every
    /// cache directory looked in, raised when the run loads it.
    pub predefined: Option<String>,
}

impl DatasetSpec {
    /// Parses `[perf:]PATH[,key=value...]`. Keys: `format`, `prompt`,
    /// `system`, `messages`, `input_tokens`, `max_tokens`, `expected`,
    /// `skip_invalid`, `split`, `template`, and MLPerf's spellings
    /// `parser.prompt` and `parser.system`. The path is everything before
    /// the first comma; the file (a directory for `format=huggingface`)
    /// must exist. A template cannot hold a comma here: see `with_template`.
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
        let mut split = None;
        let mut template = None;
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
                        format!(
                            "--dataset format='{value}': expected jsonl, json, csv, parquet or \
                             huggingface"
                        )
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
                "sharegpt" => {
                    columns.sharegpt_whole = match value {
                        "first" => false,
                        "whole" => true,
                        _ => {
                            return Err(format!(
                                "--dataset sharegpt='{value}': expected first or whole"
                            ));
                        }
                    };
                    continue;
                }
                "split" | "template" => {
                    let slot = if key == "split" {
                        &mut split
                    } else {
                        &mut template
                    };
                    if value.is_empty() {
                        return Err(format!("--dataset {key}=: expected a value"));
                    }
                    if slot.replace(value.to_string()).is_some() {
                        return Err(format!("--dataset: {key}= given twice"));
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
                         input_tokens, max_tokens, expected, skip_invalid, split, template, \
                         sharegpt, parser.prompt or parser.system)"
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
            // A prompt that is its own reference (an echo or identity
            // check) reads one column twice, as MLPerf allows.
            let shared = |other: &str| other == "prompt" && *key == "expected";
            if let Some((other, _)) = mapped[..i].iter().find(|(o, c)| c == col && !shared(o)) {
                return Err(format!(
                    "--dataset: column '{col}' is mapped twice ({other}= and {key}=)"
                ));
            }
        }
        if let Some(name) = path.strip_prefix(PREDEFINED) {
            return predefined_spec(name, columns, skip_invalid, template);
        }
        let path = PathBuf::from(path);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(format!("--dataset {}: no such file", path.display()));
            }
            Err(e) => return Err(format!("--dataset {}: {e}", path.display())),
        };
        let saved_dataset =
            meta.is_dir() && (path.join(HF_DICT).is_file() || path.join(HF_STATE).is_file());
        let format = match format {
            Some(f) => f,
            None if saved_dataset => Format::HuggingFace,
            None if meta.is_dir() => return Err(not_a_file(&path)),
            None => path
                .extension()
                .and_then(|e| e.to_str())
                .and_then(|e| Format::parse(&e.to_ascii_lowercase()))
                .filter(|f| *f != Format::HuggingFace)
                .ok_or_else(|| {
                    format!(
                        "--dataset {}: cannot tell the format from the extension \
                         (.jsonl, .ndjson, .json, .csv, .parquet); add \
                         format=jsonl|json|csv|parquet|huggingface",
                        path.display()
                    )
                })?,
        };
        if let Some(what) = format.unavailable() {
            return Err(format!(
                "--dataset {}: this build of llmload cannot read {what}: it was built without \
                 the `columnar` feature (rebuild with default features)",
                path.display()
            ));
        }
        match (format == Format::HuggingFace, meta.is_dir()) {
            (true, false) => {
                return Err(format!(
                    "--dataset {}: format=huggingface expects the directory that \
                     save_to_disk wrote, not a file",
                    path.display()
                ));
            }
            (false, true) => return Err(not_a_file(&path)),
            _ => {}
        }
        if split.is_some() && format != Format::HuggingFace {
            return Err(
                "--dataset: split= chooses a split of a Hugging Face dataset (format=huggingface)"
                    .to_string(),
            );
        }
        let spec = DatasetSpec {
            path,
            format,
            columns,
            skip_invalid: skip_invalid.unwrap_or(false),
            split,
            template: None,
            limit: None,
            predefined: None,
        };
        spec.with_template(template)
    }

    /// The spec with `template` as its prompt template (`None` leaves it
    /// as it is): for a template that holds commas, which `--dataset`
    /// cannot carry. A template is the prompt source, so it cannot be given
    /// with `prompt=` or `messages=`, nor twice.
    pub fn with_template(self, template: Option<String>) -> Result<DatasetSpec, String> {
        let Some(text) = template else {
            return Ok(self);
        };
        if self.template.is_some() {
            return Err("--dataset: a prompt template is given twice".to_string());
        }
        for (key, col) in [
            ("prompt", &self.columns.prompt),
            ("messages", &self.columns.messages),
        ] {
            if col.is_some() {
                return Err(format!(
                    "--dataset: a template builds the prompt, so {key}= cannot be given with it"
                ));
            }
        }
        Template::parse(&text).map_err(|e| format!("--dataset template '{text}': {e}"))?;
        Ok(DatasetSpec {
            template: Some(text),
            ..self
        })
    }

    /// The prompt template, parsed.
    pub(crate) fn parsed_template(&self) -> Result<Option<Template>, String> {
        self.template
            .as_deref()
            .map(|t| Template::parse(t).map_err(|e| format!("--dataset template '{t}': {e}")))
            .transpose()
    }
}

fn not_a_file(path: &std::path::Path) -> String {
    format!(
        "--dataset {}: is a directory, expected a file (a Hugging Face dataset saved with \
         save_to_disk has {HF_DICT} or {HF_STATE}; add format=huggingface)",
        path.display()
    )
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
                sharegpt_whole: false,
                number_prompts: false,
            }
        );
        let s = DatasetSpec::parse(&format!("{},messages=conv", p.display())).unwrap();
        assert_eq!(s.columns.messages.as_deref(), Some("conv"));
    }

    #[test]
    fn a_prompt_may_be_its_own_reference() {
        let d = TempDir::new("spec-shared");
        let p = d.file("a.csv", "q\nfour\n");
        let s = DatasetSpec::parse(&format!("{},prompt=q,expected=q", p.display())).unwrap();
        assert_eq!(s.columns.prompt, s.columns.expected);
        let mut samples = Vec::new();
        crate::dataset::load(&s, &mut |x| {
            samples.push(x);
            Ok(())
        })
        .unwrap();
        assert_eq!(samples[0].expected.as_deref(), Some("four"));
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
                format!("{p},prompt=a,system=a"),
                "column 'a' is mapped twice",
            ),
            (
                format!("{p},expected=a,max_tokens=a"),
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

    #[test]
    fn split_and_template_keys() {
        let d = TempDir::new("spec-tpl");
        let p = d.file("a.jsonl", "");
        let p = p.display();
        let s = DatasetSpec::parse(&format!("{p},template=Q: {{question}}=?,expected=a")).unwrap();
        assert_eq!(s.template.as_deref(), Some("Q: {question}=?"));
        assert_eq!(s.split, None);
        for (arg, want) in [
            (
                format!("{p},template={{q}},prompt=x"),
                "prompt= cannot be given with it",
            ),
            (
                format!("{p},messages=m,template={{q}}"),
                "messages= cannot be given with it",
            ),
            (
                format!("{p},template={{q}},template={{r}}"),
                "template= given twice",
            ),
            (format!("{p},template="), "template=: expected a value"),
            (
                format!("{p},template={{q"),
                "template '{q': '{' at byte 0 is not closed",
            ),
            (
                format!("{p},split=test"),
                "split= chooses a split of a Hugging Face dataset",
            ),
        ] {
            let e = DatasetSpec::parse(&arg).unwrap_err();
            assert!(e.contains(want), "{arg}: {e}");
        }
        // A template with commas comes from elsewhere.
        let s = DatasetSpec::parse(&p.to_string()).unwrap();
        let t = s
            .clone()
            .with_template(Some("{a}, then {b}".into()))
            .unwrap();
        assert_eq!(t.template.as_deref(), Some("{a}, then {b}"));
        assert_eq!(s.clone().with_template(None).unwrap(), s);
        let e = t.with_template(Some("{c}".into())).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
        let s = DatasetSpec::parse(&format!("{p},prompt=q")).unwrap();
        assert!(s.with_template(Some("{a}".into())).is_err());
    }

    #[test]
    fn columnar_formats_by_extension_and_directory() {
        let d = TempDir::new("spec-columnar");
        let pq = d.file("a.PARQUET", "");
        let hf = d.path().join("saved");
        std::fs::create_dir_all(&hf).unwrap();
        std::fs::write(hf.join(HF_DICT), "{}").unwrap();
        let parsed = [
            DatasetSpec::parse(pq.to_str().unwrap()),
            DatasetSpec::parse(&format!("{},split=test", hf.display())),
            DatasetSpec::parse(&format!("{},format=hf", hf.display())),
        ];
        if cfg!(feature = "columnar") {
            let [pq, hf, hf2] = parsed.map(Result::unwrap);
            assert_eq!(pq.format, Format::Parquet);
            assert_eq!(hf.format, Format::HuggingFace);
            assert_eq!(hf.split.as_deref(), Some("test"));
            assert_eq!(hf2.format, Format::HuggingFace);
            let e = DatasetSpec::parse(&format!("{},format=huggingface", pq.path.display()))
                .unwrap_err();
            assert!(
                e.contains("expects the directory that save_to_disk wrote"),
                "{e}"
            );
        } else {
            for r in parsed {
                let e = r.unwrap_err();
                assert!(e.contains("built without the `columnar` feature"), "{e}");
            }
        }
    }
}
