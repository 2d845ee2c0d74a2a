//! Parquet files, through the Apache Arrow project's reader: only the
//! columns the load reads are decoded (a projection), row group after row
//! group in batches of `BATCH_ROWS`, so memory stays at one batch of those
//! columns whatever the file's size. The codecs a column uses are checked
//! against the ones built in (snappy, zstd, gzip) before any page is read,
//! so an LZ4 or Brotli file fails with the column named rather than with a
//! decoder's message.

use std::fs::File;

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::Compression;

use super::{BATCH_ROWS, Plan, Rows};
use crate::dataset::spec::DatasetSpec;
use crate::dataset::{LoadStats, Sample};

pub(crate) fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
) -> Result<LoadStats, String> {
    let file = spec.path.display().to_string();
    let f = File::open(&spec.path).map_err(|e| format!("{file}: {e}"))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| format!("{file}: not a readable Parquet file ({e})"))?;
    let plan = Plan::new(spec, builder.schema(), &file)?;
    let roots = plan.indices(builder.schema(), &file)?;
    for rg in builder.metadata().row_groups() {
        for chunk in rg.columns() {
            let root = chunk
                .column_path()
                .parts()
                .first()
                .map_or("", String::as_str);
            if !plan.needed.iter().any(|n| n == root) {
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
                    "{file}: column '{root}' is compressed with {codec}, which this build does \
                     not decode (it reads snappy, zstd, gzip and uncompressed files)"
                ));
            }
        }
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| format!("{file}: {e}"))?;
    let mut rows = Rows::new(plan, file.clone(), spec.skip_invalid, on_sample);
    for batch in reader {
        let batch = batch.map_err(|e| format!("{}: cannot decode: {e}", rows.at()))?;
        rows.batch(&batch, &file)?;
    }
    rows.finish()
}
