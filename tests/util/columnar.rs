//! Columnar dataset files made in the test with the Arrow crates' writers
//! (pyarrow is not in CI): Parquet files, Arrow IPC streams in a
//! `save_to_disk` directory, and the hostile variants the fault tests load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// A batch of one `prompt` column.
pub(crate) fn prompts<S: AsRef<str>>(rows: impl IntoIterator<Item = S>) -> RecordBatch {
    let col: ArrayRef = Arc::new(StringArray::from_iter_values(rows));
    RecordBatch::try_from_iter([("prompt", col)]).unwrap()
}

/// A batch of one float `prompt` column.
pub(crate) fn float_prompts(rows: &[f64]) -> RecordBatch {
    let col: ArrayRef = Arc::new(Float64Array::from(rows.to_vec()));
    RecordBatch::try_from_iter([("prompt", col)]).unwrap()
}

/// Writes `batch` as Parquet, zstd, without dictionary pages.
pub(crate) fn parquet(path: &Path, batch: &RecordBatch) {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_dictionary_enabled(false)
        .build();
    let f = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(f, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// A Parquet file of `prompt` and `answer` columns whose first column
/// chunk's data page offset the footer gives as -1: one changed footer
/// byte, which reached an assertion in the parquet crate.
pub(crate) fn negative_offset_parquet(path: &Path) {
    let answer: ArrayRef = Arc::new(StringArray::from(vec!["A", "B"]));
    let batch = prompts(["hello world 0", "hello world 1"]);
    let batch =
        RecordBatch::try_from_iter([("prompt", batch.column(0).clone()), ("answer", answer)])
            .unwrap();
    parquet(path, &batch);
    let mut bytes = std::fs::read(path).unwrap();
    let n = bytes.len();
    let footer = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let start = n - 8 - footer;
    // Field 9 (data_page_offset, an i64) after field 7 in compact thrift:
    // header 0x26, then 4 (after "PAR1") as a zigzag varint, 0x08.
    let at = start
        + bytes[start..n - 8]
            .windows(2)
            .position(|w| w == [0x26, 0x08])
            .expect("the data page offset in the footer");
    bytes[at + 1] = 0x01;
    std::fs::write(path, bytes).unwrap();
}

/// A `save_to_disk` directory `dir` whose one data file holds `bytes`.
pub(crate) fn hf_dir(dir: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("state.json"),
        r#"{"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"}"#,
    )
    .unwrap();
    let file = dir.join("data-00000-of-00001.arrow");
    std::fs::write(&file, bytes).unwrap();
    file
}

/// `batch` as an Arrow IPC stream, as `datasets` writes it.
pub(crate) fn arrow_stream(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &batch.schema()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
    drop(w);
    out
}

/// `stream` with its first record batch's `bodyLength` set to `body`.
pub(crate) fn with_body_length(stream: &[u8], body: i64) -> Vec<u8> {
    let mut pos = 0;
    loop {
        let len = i32::from_le_bytes(stream[pos + 4..pos + 8].try_into().unwrap()) as usize;
        let meta = &stream[pos + 8..pos + 8 + len];
        let m = arrow_ipc::root_as_message(meta).unwrap();
        let declared = m.bodyLength();
        if m.header_as_record_batch().is_some() {
            let at = pos
                + 8
                + meta
                    .windows(8)
                    .position(|w| w == declared.to_le_bytes())
                    .unwrap();
            let mut out = stream.to_vec();
            out[at..at + 8].copy_from_slice(&body.to_le_bytes());
            return out;
        }
        pos += 8 + len + declared as usize;
    }
}
