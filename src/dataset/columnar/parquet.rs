//! Parquet files, through the Apache Arrow project's reader: only the
//! columns the load reads are decoded (a projection), row group after row
//! group in batches of `BATCH_ROWS`, so memory stays at one batch of those
//! columns whatever the file's size. The codecs a column uses are checked
//! against the ones built in (snappy, zstd, gzip) before any page is read,
//! so an LZ4 or Brotli file fails with the column named rather than with a
//! decoder's message.
//!
//! The reader trusts the file: it asserts on a negative column chunk offset
//! and allocates the uncompressed size a page header declares. So before it
//! runs, every column chunk is checked to lie inside the file, and every
//! page header of the columns read is walked (`thrift`): each page must lie
//! inside its chunk and hold at most `MAX_RECORD` bytes uncompressed, the
//! cap one JSONL line has (a page that large holds a cell over it; writers
//! cut pages at about 1 MiB). The walk reads headers only, a few bytes a
//! page, and skips the page bodies.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::basic::Compression;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

use super::contained::contained;
use super::thrift::{self, DATA_PAGE, DATA_PAGE_V2};
use super::{BATCH_ROWS, Plan, Rows};
use crate::dataset::spec::DatasetSpec;
use crate::dataset::{LoadStats, MAX_RECORD, Sample};

pub(crate) fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
) -> Result<LoadStats, String> {
    let file = spec.path.display().to_string();
    let f = File::open(&spec.path).map_err(|e| format!("{file}: {e}"))?;
    let len = f.metadata().map_err(|e| format!("{file}: {e}"))?.len();
    let pages = f.try_clone().map_err(|e| format!("{file}: {e}"))?;
    // The Arrow schema a writer may embed (`ARROW:schema`) is decoded by
    // arrow-ipc, which panics on some hostile field types; the Parquet
    // schema says all the cells need, so the embedded one is not read.
    let options = ArrowReaderOptions::new().with_skip_arrow_metadata(true);
    let builder = contained(|| ParquetRecordBatchReaderBuilder::try_new_with_options(f, options))
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| format!("{file}: not a readable Parquet file ({e})"))?;
    let plan = Plan::new(spec, builder.schema(), &file)?;
    let roots = plan.indices(builder.schema(), &file)?;
    check_layout(builder.metadata(), len, &plan.needed, pages, &file)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| format!("{file}: {e}"))?;
    let mut rows = Rows::new(plan, file.clone(), spec.skip_invalid, on_sample);
    let mut reader = reader;
    while let Some(batch) =
        contained(|| reader.next()).map_err(|e| format!("{}: cannot decode: {e}", rows.at()))?
    {
        let batch = batch.map_err(|e| format!("{}: cannot decode: {e}", rows.at()))?;
        rows.batch(&batch, &file)?;
    }
    rows.finish()
}

/// The column a chunk belongs to (its top-level name).
fn root(chunk: &ColumnChunkMetaData) -> &str {
    chunk
        .column_path()
        .parts()
        .first()
        .map_or("", String::as_str)
}

/// Checks what the reader would otherwise trust: row counts, every column
/// chunk inside the file's `len` bytes, and for the `needed` columns their
/// codecs and each page header (`pages`).
fn check_layout(
    meta: &ParquetMetaData,
    len: u64,
    needed: &[String],
    pages: File,
    file: &str,
) -> Result<(), String> {
    let mut pages = BufReader::with_capacity(8 << 10, pages);
    let mut first_row = 0u64;
    for (g, rg) in meta.row_groups().iter().enumerate() {
        let rows = u64::try_from(rg.num_rows())
            .map_err(|_| format!("{file}: row group {g} has {} rows", rg.num_rows()))?;
        for chunk in rg.columns() {
            let name = root(chunk);
            let at = || format!("{file}: column '{name}', row group {g}");
            let start = chunk
                .dictionary_page_offset()
                .unwrap_or(chunk.data_page_offset());
            let size = chunk.compressed_size();
            let (Ok(start), Ok(size)) = (u64::try_from(start), u64::try_from(size)) else {
                return Err(format!(
                    "{}: the file's footer puts the column's data at offset {start}, \
                     {size} bytes (the file is corrupt)",
                    at()
                ));
            };
            if chunk.data_page_offset() < 0 || start.checked_add(size).is_none_or(|end| end > len) {
                return Err(format!(
                    "{}: the file's footer puts the column's data at bytes {start} to {}, past \
                     the end of the file ({len} bytes; the file is cut or corrupt)",
                    at(),
                    start.saturating_add(size)
                ));
            }
            if !needed.iter().any(|n| n == name) {
                continue;
            }
            let codec = chunk.compression();
            if !matches!(
                codec,
                Compression::UNCOMPRESSED
                    | Compression::SNAPPY
                    | Compression::GZIP(_)
                    | Compression::ZSTD(_)
            ) {
                return Err(format!(
                    "{file}: column '{name}' is compressed with {codec}, which this build does \
                     not decode (it reads snappy, zstd, gzip and uncompressed files)"
                ));
            }
            let flat = chunk.column_descr().max_rep_level() == 0;
            walk_pages(&mut pages, (start, size), flat, first_row).map_err(|e| match e {
                PageError::Corrupt(msg) => format!("{}: {msg}", at()),
                PageError::OverCap { row, bytes } => {
                    let page = match row {
                        Some(r) => format!("the page from row {r}"),
                        None => format!("a page of row group {g}"),
                    };
                    format!(
                        "{file}: column '{name}': {page} holds {bytes} bytes uncompressed, over \
                         the {MAX_RECORD} bytes one cell may hold (as one JSONL line may)"
                    )
                }
            })?;
        }
        first_row = first_row.saturating_add(rows);
    }
    Ok(())
}

/// A page that fails the walk.
enum PageError {
    Corrupt(String),
    /// Over the cell cap: its first row, when known, and its size.
    OverCap {
        row: Option<u64>,
        bytes: u64,
    },
}

impl From<std::io::Error> for PageError {
    fn from(e: std::io::Error) -> PageError {
        PageError::Corrupt(format!(
            "cannot read a page header ({e}; the file is cut or corrupt)"
        ))
    }
}

/// Walks the page headers of the column chunk at `start`, `size` bytes:
/// each page inside the chunk, none over the cell cap. `flat`: a column
/// that is not repeated, whose v1 pages count rows; `first_row`: the row
/// group's first row, for naming the row of a page over the cap.
fn walk_pages(
    r: &mut BufReader<File>,
    (start, size): (u64, u64),
    flat: bool,
    first_row: u64,
) -> Result<(), PageError> {
    r.seek(SeekFrom::Start(start))?;
    let mut left = size;
    let mut row = Some(first_row);
    while left > 0 {
        let mut chunk = r.by_ref().take(left);
        let h = thrift::page_header(&mut chunk)?;
        left = chunk.limit();
        let (Ok(compressed), Ok(uncompressed)) =
            (u64::try_from(h.compressed), u64::try_from(h.uncompressed))
        else {
            return Err(PageError::Corrupt(format!(
                "a page header declares negative sizes ({}, {}; the file is corrupt)",
                h.compressed, h.uncompressed
            )));
        };
        if compressed > left {
            return Err(PageError::Corrupt(format!(
                "a page of {compressed} bytes runs past the end of its column chunk ({left} \
                 bytes left; the file is corrupt)"
            )));
        }
        if uncompressed > MAX_RECORD as u64 {
            return Err(PageError::OverCap {
                row,
                bytes: uncompressed,
            });
        }
        r.seek_relative(compressed as i64)?;
        left -= compressed;
        row = match (h.kind, h.rows) {
            (DATA_PAGE, Some(n)) if flat => row.zip(u64::try_from(n).ok()).map(|(a, b)| a + b),
            (DATA_PAGE_V2, Some(n)) => row.zip(u64::try_from(n).ok()).map(|(a, b)| a + b),
            (DATA_PAGE | DATA_PAGE_V2, _) => None,
            _ => row,
        };
    }
    Ok(())
}
