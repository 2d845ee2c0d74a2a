//! Hostile columnar files, made from valid ones written here: a changed
//! footer byte, sizes past the file's end, cells over the cap. Each must be
//! an error naming the file, never a panic or an allocation of what the
//! file declares.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, LargeStringArray};
use parquet::basic::{Compression, ZstdLevel};

use super::cell;
use super::tests::{batch, ipc, numbered, parquet, split, strings};
use crate::dataset::MAX_RECORD;
use crate::dataset::spec::DatasetSpec;
use crate::dataset::testutil::{TempDir, load_all};

/// Loads `arg`, turning a panic into a failure that names `what`.
fn no_panic(arg: &str, what: &str) -> Result<u64, String> {
    std::panic::catch_unwind(|| load_all(arg).map(|(got, _)| got.len() as u64))
        .unwrap_or_else(|_| panic!("a panic loading {what}"))
}

/// `bytes` with `value` written at `at`, as `path`.
fn patched(path: &Path, bytes: &[u8], at: usize, value: &[u8]) {
    let mut b = bytes.to_vec();
    b[at..at + value.len()].copy_from_slice(value);
    std::fs::write(path, b).unwrap();
}

#[test]
fn no_changed_footer_byte_panics() {
    let d = TempDir::new("footer-bytes");
    let ok = d.path().join("ok.parquet");
    parquet(&ok, &[numbered(0, 100)], Compression::UNCOMPRESSED, 100);
    let bytes = std::fs::read(&ok).unwrap();
    let n = bytes.len();
    let footer = u32::from_le_bytes(bytes[n - 8..n - 4].try_into().unwrap()) as usize;
    let bad = d.path().join("bad.parquet");
    let arg = format!("{},expected=answer", bad.display());
    let mut placed_outside = 0;
    for at in n - 8 - footer..n - 8 {
        for v in [0x00, 0x01, 0x7f, 0x80, 0xff] {
            patched(&bad, &bytes, at, &[v]);
            if let Err(e) = no_panic(&arg, &format!("byte {at} set to {v:#x}")) {
                assert!(e.starts_with(&bad.display().to_string()), "{e}");
                placed_outside += usize::from(e.contains("the file's footer puts"));
            }
        }
    }
    // The changes that once reached the reader's assertion are refused by
    // the layout check.
    assert!(placed_outside > 0);
}

#[test]
fn a_page_over_the_cell_cap_is_refused_before_it_is_decoded() {
    let d = TempDir::new("page-cap");
    let big = "x".repeat(MAX_RECORD + 1);
    let rows: Vec<Option<&str>> = vec![Some("a"), Some("b"), Some(&big)];
    let p = d.path().join("big.parquet");
    // Row groups of two rows: the big cell starts the second one.
    parquet(
        &p,
        &[batch(vec![("prompt", strings(&rows))])],
        Compression::ZSTD(ZstdLevel::default()),
        2,
    );
    assert!(std::fs::metadata(&p).unwrap().len() < 1 << 20);
    let e = load_all(&p.display().to_string()).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: column 'prompt': the page from row 2 holds {} bytes uncompressed, over the \
             {MAX_RECORD} bytes one cell may hold (as one JSONL line may)",
            p.display(),
            MAX_RECORD + 1 + 4
        )
    );
}

#[test]
fn a_cell_over_the_cap_is_named_by_row_and_column() {
    let a: ArrayRef = Arc::new(LargeStringArray::from(vec!["abcdef"]));
    // Each value costs 8 bytes beside its text.
    let mut budget = 14;
    assert!(cell::value(a.as_ref(), 0, &mut budget).is_ok());
    let mut budget = 13;
    let e = cell::value(a.as_ref(), 0, &mut budget).unwrap_err();
    assert_eq!(
        e,
        format!(
            "a value over {MAX_RECORD} bytes, more than one cell may hold (as one JSONL line may)"
        )
    );
    // Through a Hugging Face split, whose files hold cells uncompressed.
    let d = TempDir::new("cell-cap");
    let big = "y".repeat(MAX_RECORD + 1);
    let rows: Vec<Option<&str>> = vec![Some("a"), Some(&big)];
    let dir = split(
        &d.path().join("ds"),
        "train",
        &[(
            "data-00000-of-00001.arrow",
            vec![batch(vec![("prompt", strings(&rows))])],
        )],
    );
    let e = load_all(&format!("{},format=hf", dir.display())).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: row 1: column 'prompt': a value over {MAX_RECORD} bytes, more than one cell \
             may hold (as one JSONL line may)",
            dir.display()
        )
    );
}

/// A one-file split whose data file is `bytes`.
fn hf_with(d: &TempDir, name: &str, bytes: &[u8]) -> String {
    let dir = d.path().join(name);
    split(&dir, "train", &[("d.arrow", vec![numbered(0, 1)])]);
    std::fs::write(dir.join("d.arrow"), bytes).unwrap();
    format!("{},format=hf", dir.display())
}

#[test]
fn ipc_lengths_past_the_file_are_refused_before_allocating() {
    let d = TempDir::new("ipc-lengths");
    // The review's 72 bytes: a continuation marker and 0x7ffffff0.
    let mut b = vec![0xff; 4];
    b.extend_from_slice(&0x7fff_fff0_i32.to_le_bytes());
    b.extend_from_slice(&[0; 64]);
    let e = no_panic(&hf_with(&d, "meta", &b), "a huge metadata length").unwrap_err();
    assert!(
        e.ends_with(
            "d.arrow: at byte 0: a message declares 2147483632 bytes of metadata, with 64 bytes \
             left (the file is cut or corrupt)"
        ),
        "{e}"
    );
    // A valid stream whose batch declares a body of 2^40 bytes.
    let ok = d.path().join("ok.arrow");
    ipc(&ok, &[numbered(0, 100)]);
    let bytes = std::fs::read(&ok).unwrap();
    let (at, body) = batch_body_length(&bytes);
    let mut b = bytes.clone();
    b[at..at + 8].copy_from_slice(&(1i64 << 40).to_le_bytes());
    let e = no_panic(&hf_with(&d, "body", &b), "bodyLength 2^40").unwrap_err();
    assert!(
        e.contains("a message declares a body of 1099511627776 bytes"),
        "{e}"
    );
    assert!(body > 0);
    // Every byte of the stream changed: errors or loads, never a panic.
    let arg = hf_with(&d, "each", &bytes);
    let file = d.path().join("each").join("d.arrow");
    for at in 0..bytes.len() {
        for v in [0x00, 0x7f, 0x80, 0xff] {
            patched(&file, &bytes, at, &[v]);
            let _ = no_panic(&arg, &format!("stream byte {at} set to {v:#x}"));
        }
    }
}

/// Where the first record batch's `bodyLength` lies in an IPC stream, and
/// its value: found as the little-endian bytes of the length the message
/// declares, inside its metadata.
fn batch_body_length(bytes: &[u8]) -> (usize, i64) {
    let mut pos = 0;
    loop {
        let len = i32::from_le_bytes(bytes[pos + 4..pos + 8].try_into().unwrap()) as usize;
        let meta = &bytes[pos + 8..pos + 8 + len];
        let m = arrow_ipc::root_as_message(meta).unwrap();
        let body = m.bodyLength();
        if m.header_as_record_batch().is_some() {
            let at = meta
                .windows(8)
                .position(|w| w == body.to_le_bytes())
                .unwrap();
            return (pos + 8 + at, body);
        }
        pos += 8 + len + body as usize;
    }
}

#[test]
fn ipc_file_blocks_past_the_footer_are_refused() {
    let d = TempDir::new("ipc-blocks");
    let ok = d.path().join("ok.arrow");
    let f = std::fs::File::create(&ok).unwrap();
    let b = numbered(0, 100);
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &b.schema()).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&ok).unwrap();
    let n = bytes.len();
    let footer_len = i32::from_le_bytes(bytes[n - 10..n - 6].try_into().unwrap()) as usize;
    let footer_at = n - 10 - footer_len;
    let footer = arrow_ipc::root_as_footer(&bytes[footer_at..n - 10]).unwrap();
    let body = footer.recordBatches().unwrap().get(0).bodyLength();
    let at = footer_at
        + bytes[footer_at..n - 10]
            .windows(8)
            .position(|w| w == body.to_le_bytes())
            .unwrap();
    // A negative body length reached an unwrap in the reader.
    for v in [-1i64, 1 << 40] {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        let e = no_panic(&hf_with(&d, &format!("block{v}"), &b), "a block's body").unwrap_err();
        assert!(e.contains("the footer lists a block at offset"), "{e}");
    }
    for at in footer_at..n {
        for v in [0x00, 0x7f, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[at] = v;
            let _ = no_panic(
                &hf_with(&d, "each", &b),
                &format!("file byte {at} set to {v:#x}"),
            );
        }
    }
}

#[test]
fn a_nan_prompt_is_called_nan() {
    let d = TempDir::new("nan");
    let p = d.path().join("nan.parquet");
    let col: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
    parquet(
        &p,
        &[batch(vec![("prompt", col)])],
        Compression::UNCOMPRESSED,
        10,
    );
    let e = load_all(&p.display().to_string()).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: row 0: field 'prompt': expected a non-empty string, found NaN (column 'prompt' \
             holds Float64 numbers)",
            p.display()
        )
    );
}

#[test]
fn a_null_prompt_beside_a_nan_elsewhere_is_called_null() {
    let d = TempDir::new("nan-beside");
    let p = d.path().join("nan.parquet");
    let n: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
    parquet(
        &p,
        &[batch(vec![("prompt", strings(&[None])), ("n", n)])],
        Compression::UNCOMPRESSED,
        10,
    );
    let e = load_all(&format!("{},max_tokens=n", p.display())).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: row 0: field 'prompt': expected a non-empty string, found null",
            p.display()
        )
    );
}

#[test]
fn the_only_prompt_column_mapped_elsewhere_is_said() {
    let d = TempDir::new("taken");
    let p = d.path().join("only.parquet");
    parquet(
        &p,
        &[batch(vec![("prompt", strings(&[Some("a")]))])],
        Compression::UNCOMPRESSED,
        10,
    );
    let e = load_all(&format!("{},expected=prompt", p.display())).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: no column left for the prompt: 'prompt' is mapped to expected=prompt — columns \
             found: prompt; name the prompt column with prompt=COL (or messages=COL)",
            p.display()
        )
    );
}

#[test]
fn a_limit_stops_before_the_next_row() {
    let d = TempDir::new("limit");
    let p = d.path().join("two.parquet");
    parquet(
        &p,
        &[batch(vec![("prompt", strings(&[Some("a"), None]))])],
        Compression::UNCOMPRESSED,
        10,
    );
    let mut spec = DatasetSpec::parse(&p.display().to_string()).unwrap();
    assert!(crate::dataset::load(&spec, &mut |_| Ok(())).is_err());
    spec.limit = Some(1);
    let stats = crate::dataset::load(&spec, &mut |_| Ok(())).unwrap();
    assert_eq!(stats.loaded, 1);
}

/// Found by fuzzing: the Arrow schema a writer embeds in a Parquet file
/// (`ARROW:schema`) declared an integer of width 0, and arrow-ipc panicked
/// converting it. The Parquet schema alone decides the cells' types.
#[test]
fn a_hostile_embedded_arrow_schema_is_not_read() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/columnar/hostile-arrow-schema.parquet");
    let arg = format!(
        "{},format=parquet,prompt=user_prompt,expected=answer",
        file.display()
    );
    if let Err(e) = no_panic(&arg, "an embedded schema with a 0-bit integer") {
        assert!(e.starts_with(&file.display().to_string()), "{e}");
    }
}
