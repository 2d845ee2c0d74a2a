//! Prompts a run sends: the user's file (JSONL, a JSON array, CSV, Parquet,
//! a Hugging Face dataset saved to disk) mapped onto samples by column or
//! through a prompt template, synthetic prompts of a chosen size, or the
//! built-in set. Loading happens once in the parent before any request is
//! serialized, streaming sample by sample into the request builder so a
//! large file is never held twice; every problem names the file, the line
//! (or row) and the field.

mod builtin;
#[cfg(feature = "columnar")]
mod columnar;
pub(crate) mod columns;
pub mod csv;
mod json;
pub mod jsonl;
mod messages;
mod object;
pub(crate) mod order;
pub(crate) mod predefined;
mod sink;
pub(crate) mod spec;
pub(crate) mod synthetic;
pub(crate) mod template;
#[cfg(test)]
mod testutil;
mod words;

use std::fs::File;
use std::io::{Cursor, Read};
use std::path::Path;

use crate::protocol::Message;
pub use columns::ResolvedColumns;
pub use order::{Order, Picker};
pub use spec::{ColumnMap, DatasetSpec, Format};
pub use synthetic::SyntheticSpec;
pub use template::Template;

/// A UTF-8 byte order mark, which editors on Windows put at the start of
/// text files; it is skipped wherever a file starts.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Read buffer per loader: large enough that reads are few, small enough
/// not to matter next to the request arena.
const READ_BUF: usize = 1 << 20;

/// Bytes one line (JSONL), element (JSON array) or record (CSV) may have.
/// A loader holds one of them at a time, so this bounds its memory: a file
/// with no line break (`/dev/zero`, a binary, a multi-GB dump) fails with
/// `file:line: line too long` instead of being read into memory whole. Far
/// above any prompt a server accepts.
pub const MAX_RECORD: usize = 64 << 20;

/// The bytes of `path` after a byte order mark, if it starts with one.
/// Only reads forward, so a pipe works too
/// (`--dataset <(zcat big.jsonl.gz),format=jsonl`).
fn open(path: &Path, file: &str) -> Result<impl Read + use<>, String> {
    let err = |e: std::io::Error| format!("{file}: {e}");
    let mut f = File::open(path).map_err(err)?;
    let mut head = Vec::with_capacity(BOM.len());
    (&mut f)
        .take(BOM.len() as u64)
        .read_to_end(&mut head)
        .map_err(err)?;
    if head == BOM {
        head.clear();
    }
    Ok(Cursor::new(head).chain(f))
}

/// One dataset entry, normalized.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// A per-sample system prompt (the `system` column).
    pub system: Option<String>,
    /// The conversation to send, oldest first, ending with the user turn to
    /// answer; a `prompt` column becomes one user message.
    pub messages: Vec<Message>,
    /// A pre-tokenized prompt (the `input_tokens` column).
    pub input_tokens: Option<Vec<u32>>,
    /// Output tokens to request for this sample (the `max_tokens` column).
    pub max_tokens: Option<u32>,
    /// The reference answer (the `expected` column), kept for scoring.
    pub expected: Option<String>,
    /// The row gave a message list (a `messages` column), not a plain
    /// prompt: its input length is counted through the model's chat
    /// template when it has one, as MLPerf counts it.
    pub from_messages: bool,
}

impl Sample {
    /// A sample with one user message.
    pub fn prompt(text: impl Into<String>) -> Sample {
        Sample {
            messages: vec![Message::user(text)],
            ..Sample::default()
        }
    }
}

/// What loading a file found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Samples handed to the caller.
    pub loaded: u64,
    /// Invalid lines or rows skipped under `skip_invalid=true`.
    pub skipped: u64,
    /// The first few skip reasons (`file:line: reason`), for the report.
    pub skip_examples: Vec<String>,
}

/// Loads `spec`, calling `on_sample` for each valid sample in file order.
/// An invalid line or row is an error naming `file:line` and the reason, or
/// with `skip_invalid` is skipped and counted; an empty dataset is an error.
/// Memory stays at one line or element (one batch of a Parquet row group or
/// Arrow file) plus what `on_sample` keeps.
///
/// Without a prompt, messages or input_tokens mapping or a template, the
/// prompt column is the one of `prompt`, `text`, `text_input`, `input`,
/// `question`, `query`, `instruction`, `user_prompt`, `input_text`,
/// `problem` — or `messages` / `conversations` holding message arrays —
/// present in the first valid row (the header, the schema); none or several
/// is an error listing the columns found.
///
/// With `spec.limit`, reading stops after that many samples.
pub fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
) -> Result<LoadStats, String> {
    if let Some(name) = &spec.predefined
        && !spec.path.is_file()
    {
        return Err(predefined::missing(name));
    }
    let Some(limit) = spec.limit else {
        return load_capped(spec, on_sample, MAX_RECORD);
    };
    // Stopped by an error only this closure returns, recognized by identity.
    const ENOUGH: &str = "\0enough rows";
    let mut taken = 0u64;
    let mut stats = LoadStats::default();
    let result = load_capped(
        spec,
        &mut |s| {
            // Stop at the last sample wanted, before reading another row
            // (a limit of 0 takes none).
            if taken < limit {
                taken += 1;
                on_sample(s)?;
            }
            if taken == limit {
                return Err(ENOUGH.to_string());
            }
            Ok(())
        },
        MAX_RECORD,
    );
    match result {
        Ok(s) => stats = s,
        Err(e) if e.ends_with(ENOUGH) => stats.loaded = taken,
        Err(e) => return Err(e),
    }
    Ok(stats)
}

/// `load` with `max` bytes per line, element or record (tests use a small one).
fn load_capped(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
    max: usize,
) -> Result<LoadStats, String> {
    match spec.format {
        Format::Jsonl => jsonl::load(spec, on_sample, max),
        Format::Json => json::load(spec, on_sample, max),
        Format::Csv => csv::load(spec, on_sample, max),
        #[cfg(feature = "columnar")]
        Format::Parquet => columnar::parquet::load(spec, on_sample),
        #[cfg(feature = "columnar")]
        Format::HuggingFace => columnar::hf::load(spec, on_sample),
        // `DatasetSpec::parse` refuses these formats in such a build.
        #[cfg(not(feature = "columnar"))]
        Format::Parquet | Format::HuggingFace => Err(format!(
            "{}: this build of llmload lacks the `columnar` feature",
            spec.path.display()
        )),
    }
}

/// The built-in prompt set: varied short instructions, so a default run
/// exercises different request sizes without any file.
pub fn builtin() -> Vec<Sample> {
    builtin::PROMPTS
        .iter()
        .map(|p| Sample::prompt(*p))
        .collect()
}

/// Loads `spec` and groups its samples into conversations by the
/// `conversation` column, in file order: each conversation's user turns.
///
/// The conversation id is read through the `expected` field's machinery (a
/// string or any JSON value rendered as text), so the two cannot be mapped
/// together here.
pub fn load_conversations(
    spec: &DatasetSpec,
    conversation: &str,
) -> Result<Vec<Vec<String>>, String> {
    if spec.columns.expected.is_some() {
        return Err(format!(
            "{}: expected= cannot be mapped in a dataset grouped by conversation",
            spec.path.display()
        ));
    }
    let mut by_id = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut grouped = spec.clone();
    grouped.columns.expected = Some(conversation.to_string());
    load(&grouped, &mut |s| {
        let id = s
            .expected
            .clone()
            .ok_or_else(|| format!("a row has no conversation id in column '{conversation}'"))?;
        let Some(turn) = s.messages.iter().rev().find(|m| m.role == "user") else {
            return Ok(());
        };
        let i = *index.entry(id).or_insert_with(|| {
            by_id.push(Vec::new());
            by_id.len() - 1
        });
        by_id[i].push(turn.content.clone());
        Ok(())
    })?;
    Ok(by_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testutil::TempDir;

    /// Samples loaded from `path` read as `format`, `max` bytes a record.
    fn capped(path: &Path, format: &str, max: usize) -> Result<u64, String> {
        let spec = DatasetSpec::parse(&format!("{},format={format}", path.display()))?;
        load_capped(&spec, &mut |_| Ok(()), max).map(|s| s.loaded)
    }

    #[test]
    fn a_line_or_record_over_the_cap_is_named() {
        let d = TempDir::new("cap");
        // 100 bytes of line content: the cap, not over it.
        let fits = format!("{{\"prompt\": \"{}\"}}", "x".repeat(86));
        assert_eq!(fits.len(), 100);
        let over = format!("{{\"prompt\": \"{}\"}}", "x".repeat(87));
        // The line's `\n` is not counted (a CRLF's `\r` is); nor is its absence.
        let p = d.file("a.jsonl", format!("{fits}\n\n{fits}"));
        assert_eq!(capped(&p, "jsonl", 100), Ok(2));
        let p = d.file("crlf.jsonl", format!("{fits}\r\n"));
        assert_eq!(capped(&p, "jsonl", 101), Ok(1));
        assert!(capped(&p, "jsonl", 100).is_err());
        let p = d.file("b.jsonl", format!("{fits}\n\n{over}\n{fits}\n"));
        let f = p.display();
        assert_eq!(
            capped(&p, "jsonl", 100),
            Err(format!("{f}:3: line too long (over 100 bytes)"))
        );
        // A JSON array: the element, counted from the comma before it.
        let p = d.file("c.json", format!("[{fits},\n{over}, {fits}]"));
        let f = p.display();
        assert_eq!(capped(&p, "json", 1000), Ok(3));
        assert_eq!(
            capped(&p, "json", 102),
            Err(format!("{f}: element 1: element too long (over 102 bytes)"))
        );
        let p = d.file("d.json", format!("{}[{fits}]", " ".repeat(300)));
        let f = p.display();
        assert_eq!(
            capped(&p, "json", 200),
            Err(format!("{f}: over 200 bytes before the array starts"))
        );
        let p = d.file("e.json", format!("[{fits}]{}", " ".repeat(300)));
        let f = p.display();
        assert_eq!(
            capped(&p, "json", 200),
            Err(format!("{f}: over 200 bytes after the array ends"))
        );
        // CSV: the record, named by its first line, quoted newlines and all.
        let cell = "y".repeat(60);
        let p = d.file(
            "f.csv",
            format!("prompt\n{cell}\n\"{cell}\n{cell}\"\n{cell}\n"),
        );
        let f = p.display();
        assert_eq!(capped(&p, "csv", 1000), Ok(3));
        assert_eq!(
            capped(&p, "csv", 100),
            Err(format!("{f}:3: record too long (over 100 bytes)"))
        );
    }

    #[test]
    fn an_endless_line_fails_without_reading_it_all() {
        // /dev/zero has no line break and no end: each loader must stop at
        // the cap (a read past it would never return).
        let zero = Path::new("/dev/zero");
        if !zero.exists() {
            return;
        }
        assert_eq!(
            capped(zero, "jsonl", 1 << 16),
            Err("/dev/zero:1: line too long (over 65536 bytes)".to_string())
        );
        assert_eq!(
            capped(zero, "csv", 1 << 16),
            Err("/dev/zero:1: record too long (over 65536 bytes)".to_string())
        );
        // Not JSON at its first byte.
        assert!(capped(zero, "json", 1 << 16).is_err());
    }

    #[test]
    fn a_template_builds_prompts_in_every_text_format() {
        let d = TempDir::new("template");
        let t = "template=Q{{{n}}}: {question} ({flag}/{x}/{none})";
        let jsonl = d.file(
            "a.jsonl",
            "{\"question\": \"why\", \"n\": 1, \"flag\": true, \"x\": 2.0, \"none\": null, \"a\": \"B\"}\n",
        );
        let json = d.file(
            "a.json",
            "[{\"question\": \"why\", \"n\": 1, \"flag\": true, \"x\": 2.0, \"none\": null, \"a\": \"B\"}]",
        );
        let csv = d.file("a.csv", "question,n,flag,x,none,a\nwhy,1,True,2.0,None,B\n");
        for p in [&jsonl, &json, &csv] {
            let (got, _) = testutil::load_all(&format!("{},{t},expected=a", p.display())).unwrap();
            assert_eq!(
                got,
                vec![Sample {
                    expected: Some("B".into()),
                    ..Sample::prompt("Q{1}: why (True/2.0/None)")
                }],
                "{}",
                p.display()
            );
        }
        // A row without a template column is named, as any bad row.
        let p = d.file("b.jsonl", "{\"question\": \"a\"}\n{\"q\": \"b\"}\n");
        let e = testutil::load_all(&format!("{},template={{question}}", p.display())).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}:2: template column 'question': no such field in this row",
                p.display()
            )
        );
        let p = d.file("b.csv", "q\na\n");
        let e = testutil::load_all(&format!("{},template={{question}}", p.display())).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{}: template column 'question': no such column — columns found: q",
                p.display()
            )
        );
        let p = d.file("c.jsonl", "{\"q\": \" \"}\n");
        let e = testutil::load_all(&format!("{},template={{q}}", p.display())).unwrap_err();
        assert!(
            e.ends_with(":1: the template renders a blank prompt"),
            "{e}"
        );
    }

    #[test]
    fn builtin_set_is_varied() {
        let b = builtin();
        assert!(b.len() >= 16);
        let lens: std::collections::BTreeSet<_> =
            b.iter().map(|s| s.messages[0].content.len()).collect();
        assert!(lens.len() > 8);
    }
}
