//! Where every loader hands its rows: a valid sample goes straight to the
//! caller (who serializes it and drops it, so nothing accumulates here), an
//! invalid one fails the load with its location or, under `skip_invalid`,
//! is counted with the first few reasons kept for the report.

use super::columns::ResolvedColumns;
use super::{LoadStats, Sample};

/// Skip reasons kept for the report.
const SKIP_EXAMPLES: usize = 5;

/// Where a row is in its file.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loc {
    /// 1-based line (JSONL) or a CSV record's first line.
    Line(u64),
    /// 0-based index in a JSON array.
    Element(u64),
    /// 0-based row of a Parquet file or a Hugging Face split, as pandas and
    /// `datasets` index it.
    #[cfg_attr(not(feature = "columnar"), allow(dead_code))]
    Row(u64),
}

pub(crate) struct Sink<'a> {
    file: String,
    skip_invalid: bool,
    stats: LoadStats,
    /// Mapped fields met in any row.
    seen: u8,
    on_sample: &'a mut dyn FnMut(Sample) -> Result<(), String>,
}

impl<'a> Sink<'a> {
    pub(super) fn new(
        file: String,
        skip_invalid: bool,
        on_sample: &'a mut dyn FnMut(Sample) -> Result<(), String>,
    ) -> Sink<'a> {
        Sink {
            file,
            skip_invalid,
            stats: LoadStats::default(),
            seen: 0,
            on_sample,
        }
    }

    /// The file as errors name it.
    pub(super) fn file(&self) -> &str {
        &self.file
    }

    /// `file:line` or `file: element i`.
    pub(super) fn at(&self, loc: Loc) -> String {
        match loc {
            Loc::Line(n) => format!("{}:{n}", self.file),
            Loc::Element(i) => format!("{}: element {i}", self.file),
            Loc::Row(i) => format!("{}: row {i}", self.file),
        }
    }

    /// One parsed row: its sample goes to the caller, a reason is invalid.
    pub(super) fn row(
        &mut self,
        loc: Loc,
        sample: Result<Sample, String>,
        seen: u8,
    ) -> Result<(), String> {
        self.seen |= seen;
        match sample {
            Ok(s) => {
                (self.on_sample)(s)?;
                self.stats.loaded += 1;
                Ok(())
            }
            Err(reason) => self.invalid(loc, &reason),
        }
    }

    /// An invalid row: an error, or skipped and counted.
    pub(super) fn invalid(&mut self, loc: Loc, reason: &str) -> Result<(), String> {
        let msg = format!("{}: {reason}", self.at(loc));
        if !self.skip_invalid {
            return Err(msg);
        }
        self.stats.skipped += 1;
        if self.stats.skip_examples.len() < SKIP_EXAMPLES {
            self.stats.skip_examples.push(msg);
        }
        Ok(())
    }

    /// The totals, or an error for an empty dataset. With `mapped`, also an
    /// error for an optional column no row had (a misspelt mapping would
    /// otherwise be silently ignored); `first_columns` names what the first
    /// row had, to help spot the typo.
    pub(super) fn finish(
        self,
        mapped: Option<&ResolvedColumns>,
        first_columns: &[String],
    ) -> Result<LoadStats, String> {
        let file = &self.file;
        if self.stats.loaded == 0 {
            return Err(match self.stats.skip_examples.first() {
                Some(first) => format!(
                    "{file}: no valid samples ({} invalid skipped; the first: {first})",
                    self.stats.skipped
                ),
                None => format!("{file}: no samples (the dataset is empty)"),
            });
        }
        if let Some(cols) = mapped {
            for (field, name) in cols.optional() {
                if self.seen & field.bit() == 0 {
                    return Err(format!(
                        "{file}: {}={name}: no row has a field '{name}' (the first row has: {})",
                        field.key(),
                        first_columns.join(", ")
                    ));
                }
            }
        }
        Ok(self.stats)
    }
}
