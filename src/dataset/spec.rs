//! The `--dataset PATH[,key=value...]` argument: file, format (by extension
//! or `format=`), column mapping and options, validated before any byte of
//! the file is read.

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

/// A parsed `--dataset` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatasetSpec {
    pub path: PathBuf,
    pub format: Format,
    pub columns: ColumnMap,
    /// Skip (and count) invalid lines instead of failing.
    pub skip_invalid: bool,
}

impl DatasetSpec {
    /// Parses `PATH[,key=value...]`. Keys: `format`, `prompt`, `system`,
    /// `messages`, `input_tokens`, `max_tokens`, `expected`, `skip_invalid`.
    pub fn parse(arg: &str) -> Result<DatasetSpec, String> {
        let _ = arg;
        todo!("dataset helper")
    }
}
