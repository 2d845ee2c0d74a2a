//! Parquet files and `save_to_disk` directories written here with the Arrow
//! crates' own writers, then loaded back through `dataset::load`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::OffsetBufferBuilder;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, DictionaryArray, Float64Array, Int32Array, Int64Array,
    LargeStringArray, ListArray, RecordBatch, StringArray, StringViewArray, StructArray,
};
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::{DataType, Field, Fields};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::dataset::testutil::{TempDir, load_all};
use crate::dataset::{LoadStats, Sample};
use crate::protocol::Message;

pub(super) fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

pub(super) fn strings(v: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(v.to_vec()))
}

/// Writes `batches` as a Parquet file, `rows_per_group` rows a row group.
pub(super) fn parquet(
    path: &Path,
    batches: &[RecordBatch],
    codec: Compression,
    rows_per_group: usize,
) {
    let props = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_row_count(Some(rows_per_group))
        .build();
    let f = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(f, batches[0].schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

fn load(arg: &str) -> Result<(Vec<Sample>, LoadStats), String> {
    load_all(arg)
}

/// `n` rows: prompt `p{i}`, expected `i`, max_tokens `i % 7 + 1`, token ids
/// `[i, i + 1]`.
pub(super) fn numbered(from: usize, n: usize) -> RecordBatch {
    let range = from..from + n;
    batch(vec![
        (
            "prompt",
            Arc::new(StringArray::from_iter_values(
                range.clone().map(|i| format!("p{i}")),
            )),
        ),
        (
            "answer",
            Arc::new(Int64Array::from_iter_values(
                range.clone().map(|i| i as i64),
            )),
        ),
        (
            "n",
            Arc::new(Int32Array::from_iter_values(
                range.clone().map(|i| (i % 7 + 1) as i32),
            )),
        ),
        (
            "ids",
            Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
                range.map(|i| Some(vec![Some(i as i64), Some(i as i64 + 1)])),
            )),
        ),
    ])
}

#[test]
fn parquet_every_codec_loads_exact_counts() {
    let d = TempDir::new("pq-codecs");
    for (name, codec) in [
        ("plain", Compression::UNCOMPRESSED),
        ("snappy", Compression::SNAPPY),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
    ] {
        let p = d.path().join(format!("{name}.parquet"));
        // Several row groups, and batches that straddle them.
        parquet(&p, &[numbered(0, 6000), numbered(6000, 3001)], codec, 2500);
        let (got, stats) = load(&format!(
            "{},prompt=prompt,expected=answer,max_tokens=n,input_tokens=ids",
            p.display()
        ))
        .unwrap();
        assert_eq!(stats.loaded, 9001, "{name}");
        assert_eq!(got.len(), 9001);
        for i in [0usize, 2499, 2500, 4096, 9000] {
            assert_eq!(
                got[i],
                Sample {
                    messages: vec![Message::user(format!("p{i}"))],
                    input_tokens: Some(vec![i as u32, i as u32 + 1]),
                    max_tokens: Some((i % 7 + 1) as u32),
                    expected: Some(i.to_string()),
                    ..Sample::default()
                },
                "{name} row {i}"
            );
        }
    }
}

#[test]
fn parquet_string_kinds_and_mlperf_names() {
    let d = TempDir::new("pq-strings");
    let keys = Int32Array::from(vec![1, 0, 1]);
    let dict =
        DictionaryArray::<Int32Type>::try_new(keys, strings(&[Some("red"), Some("blue")])).unwrap();
    let b = batch(vec![
        ("user_prompt", strings(&[Some("a"), Some("b"), Some("c")])),
        ("system_prompt", strings(&[Some("S"), None, Some("")])),
        (
            "large",
            Arc::new(LargeStringArray::from(vec!["l0", "l1", "l2"])),
        ),
        (
            "view",
            Arc::new(StringViewArray::from(vec![
                "v0",
                "v1",
                "a longer string than 12 bytes",
            ])),
        ),
        ("colour", Arc::new(dict)),
    ]);
    let p = d.path().join("s.parquet");
    parquet(&p, &[b], Compression::SNAPPY, 1000);
    // MLPerf's column names are found, the system prompt with them.
    let (got, _) = load(p.to_str().unwrap()).unwrap();
    let prompts: Vec<_> = got.iter().map(|s| s.messages[0].content.as_str()).collect();
    assert_eq!(prompts, ["a", "b", "c"]);
    let systems: Vec<_> = got.iter().map(|s| s.system.as_deref()).collect();
    assert_eq!(systems, [Some("S"), None, None]);
    for (col, want) in [
        ("large", ["l0", "l1", "l2"]),
        ("view", ["v0", "v1", "a longer string than 12 bytes"]),
        ("colour", ["blue", "red", "blue"]),
    ] {
        let arg = match col {
            "colour" => format!("{},prompt=colour", p.display()),
            _ => format!("{},prompt={col},expected=colour", p.display()),
        };
        let (got, _) = load(&arg).unwrap();
        let prompts: Vec<_> = got.iter().map(|s| s.messages[0].content.as_str()).collect();
        assert_eq!(prompts, want, "{col}");
        if col != "colour" {
            assert_eq!(got[0].expected.as_deref(), Some("blue"));
        }
    }
}

/// A `list<struct{role, content}>` column, as `datasets` stores chats.
fn chats(rows: &[&[(&str, &str)]]) -> ArrayRef {
    let mut offsets = OffsetBufferBuilder::<i32>::new(rows.len());
    let (mut roles, mut contents) = (Vec::new(), Vec::new());
    for r in rows {
        offsets.push_length(r.len());
        for (role, content) in *r {
            roles.push(*role);
            contents.push(*content);
        }
    }
    let fields = Fields::from(vec![
        Field::new("content", DataType::Utf8, true),
        Field::new("role", DataType::Utf8, true),
    ]);
    let values = StructArray::new(
        fields.clone(),
        vec![
            Arc::new(StringArray::from(contents)) as ArrayRef,
            Arc::new(StringArray::from(roles)),
        ],
        None,
    );
    let item = Arc::new(Field::new("item", DataType::Struct(fields), true));
    Arc::new(ListArray::new(
        item,
        offsets.finish(),
        Arc::new(values),
        None,
    ))
}

#[test]
fn parquet_nested_messages_and_token_ids() {
    let d = TempDir::new("pq-nested");
    let b = batch(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 2]))),
        (
            "messages",
            chats(&[
                &[("system", "be brief"), ("user", "hi")],
                &[("user", "q"), ("assistant", "a"), ("user", "q2")],
            ]),
        ),
    ]);
    let p = d.path().join("m.parquet");
    parquet(&p, &[b], Compression::ZSTD(ZstdLevel::default()), 1000);
    let (got, _) = load(p.to_str().unwrap()).unwrap();
    assert_eq!(
        got[0],
        Sample {
            system: Some("be brief".into()),
            messages: vec![Message::user("hi")],
            from_messages: true,
            ..Sample::default()
        }
    );
    assert_eq!(got[1].messages.len(), 3);
    assert_eq!(got[1].messages[1].role, "assistant");
    assert_eq!(got[1].messages[2].content, "q2");
}

#[test]
fn parquet_errors_name_file_row_and_column() {
    let d = TempDir::new("pq-errors");
    let b = batch(vec![
        ("prompt", strings(&[Some("a"), Some("b"), None, Some(" ")])),
        (
            "ids",
            Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(vec![
                Some(vec![Some(1)]),
                Some(vec![Some(-1)]),
                Some(vec![Some(2)]),
                Some(vec![]),
            ])),
        ),
        ("day", Arc::new(Date32Array::from(vec![1, 2, 3, 4]))),
        (
            "flag",
            Arc::new(BooleanArray::from(vec![true, false, true, false])),
        ),
    ]);
    let p = d.path().join("e.parquet");
    parquet(&p, &[b], Compression::SNAPPY, 1000);
    let f = p.display();
    let e = load(&f.to_string()).unwrap_err();
    assert_eq!(
        e,
        format!("{f}: row 2: field 'prompt': expected a non-empty string, found null")
    );
    let (got, stats) = load(&format!("{f},skip_invalid=true")).unwrap();
    assert_eq!((got.len(), stats.skipped), (2, 2));
    assert_eq!(
        stats.skip_examples[1],
        format!("{f}: row 3: field 'prompt': expected a non-empty string, found a blank string")
    );
    let e = load(&format!("{f},input_tokens=ids")).unwrap_err();
    assert!(
        e.starts_with(&format!(
            "{f}: row 1: field 'ids' (input_tokens): expected a non-empty array of token ids"
        )) && e.ends_with("found an array whose element 0 is a number (-1)"),
        "{e}"
    );
    let e = load(&format!("{f},expected=gold")).unwrap_err();
    assert_eq!(
        e,
        format!("{f}: expected=gold: no such column — columns found: prompt, ids, day, flag")
    );
    let e = load(&format!("{f},expected=day")).unwrap_err();
    assert!(
        e.starts_with(&format!("{f}: column 'day' (expected) has type Date32")),
        "{e}"
    );
    let e = load(&format!("{f},prompt=flag")).unwrap_err();
    assert_eq!(
        e,
        format!("{f}: row 0: field 'flag' (prompt): expected a non-empty string, found a boolean")
    );
    let junk = d.file("junk.parquet", "not parquet at all");
    let e = load(junk.to_str().unwrap()).unwrap_err();
    assert!(
        e.starts_with(&format!("{}: not a readable Parquet file", junk.display())),
        "{e}"
    );
    let empty = d.path().join("empty.parquet");
    parquet(&empty, &[numbered(0, 0)], Compression::SNAPPY, 10);
    let e = load(empty.to_str().unwrap()).unwrap_err();
    assert!(e.ends_with("no samples (the dataset is empty)"), "{e}");
}

#[test]
fn templates_render_columns_as_python_would() {
    let d = TempDir::new("pq-template");
    let b = batch(vec![
        ("question", strings(&[Some("Why?"), Some("How?")])),
        ("n", Arc::new(Int64Array::from(vec![Some(3), None]))),
        ("x", Arc::new(Float64Array::from(vec![0.5, 2.0]))),
        ("ok", Arc::new(BooleanArray::from(vec![true, false]))),
        ("answer", strings(&[Some("A"), Some("B")])),
    ]);
    let p = d.path().join("t.parquet");
    parquet(&p, &[b], Compression::SNAPPY, 1000);
    let f = p.display();
    let (got, _) = load(&format!(
        "{f},expected=answer,template={{question}} n={{n}} x={{x}} ok={{ok}} {{{{answer}}}}"
    ))
    .unwrap();
    assert_eq!(
        got[0].messages[0].content,
        "Why? n=3 x=0.5 ok=True {answer}"
    );
    assert_eq!(
        got[1].messages[0].content,
        "How? n=None x=2.0 ok=False {answer}"
    );
    assert_eq!(got[1].expected.as_deref(), Some("B"));
    // A template column may also feed a field.
    let (got, _) = load(&format!("{f},expected=answer,template=[{{answer}}]")).unwrap();
    assert_eq!(got[1].messages[0].content, "[B]");
    assert_eq!(got[1].expected.as_deref(), Some("B"));
    let e = load(&format!("{f},template={{question}} {{choice1}}")).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{f}: template column 'choice1': no such column — columns found: question, n, x, ok, answer"
        )
    );
}

/// Writes `batches` as an Arrow IPC stream (what `save_to_disk` writes).
pub(super) fn ipc(path: &Path, batches: &[RecordBatch]) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = StreamWriter::try_new(f, &batches[0].schema()).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
}

/// A `save_to_disk` split directory holding `files` (listed in
/// `state.json` in the given order).
pub(super) fn split(dir: &Path, split: &str, files: &[(&str, Vec<RecordBatch>)]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut listed = Vec::new();
    for (name, batches) in files {
        ipc(&dir.join(name), batches);
        listed.push(serde_json::json!({ "filename": name }));
    }
    let state = serde_json::json!({
        "_data_files": listed,
        "_fingerprint": "0123456789abcdef",
        "_format_columns": null,
        "_format_kwargs": {},
        "_format_type": null,
        "_output_all_columns": false,
        "_split": split,
    });
    std::fs::write(dir.join("state.json"), state.to_string()).unwrap();
    std::fs::write(dir.join("dataset_info.json"), "{}").unwrap();
    dir.to_path_buf()
}

fn dict(dir: &Path, splits: &[&str]) {
    let v = serde_json::json!({ "splits": splits });
    std::fs::write(dir.join("dataset_dict.json"), v.to_string()).unwrap();
}

#[test]
fn hf_dataset_dict_chooses_a_split() {
    let d = TempDir::new("hf-dict");
    let root = d.path().join("ds");
    // Listed out of name order: state.json's order is the row order.
    split(
        &root.join("train"),
        "train",
        &[
            ("data-00001-of-00002.arrow", vec![numbered(0, 3)]),
            (
                "data-00000-of-00002.arrow",
                vec![numbered(3, 1000), numbered(1003, 2)],
            ),
        ],
    );
    split(
        &root.join("test"),
        "test",
        &[("data-00000-of-00001.arrow", vec![numbered(0, 4)])],
    );
    dict(&root, &["train", "test"]);
    let r = root.display();
    // The format is found from the directory's contents.
    let (got, stats) = load(&format!("{r},expected=answer")).unwrap();
    assert_eq!(stats.loaded, 1005);
    assert_eq!(got[0].messages[0].content, "p0");
    assert_eq!(got[3].messages[0].content, "p3");
    assert_eq!(got[1004].expected.as_deref(), Some("1004"));
    let (got, _) = load(&format!("{r},format=hf,split=test")).unwrap();
    assert_eq!(got.len(), 4);
    let e = load(&format!("{r},split=validation")).unwrap_err();
    assert_eq!(
        e,
        format!("{r}: no split 'validation' (splits: train, test)")
    );
    // Errors name the split's directory and the row in the split.
    let e = load(&format!("{r},input_tokens=ids,max_tokens=answer")).unwrap_err();
    assert_eq!(
        e,
        format!(
            "{}: row 0: field 'answer' (max_tokens): expected a positive integer, found a number (0)",
            root.join("train").display()
        )
    );
    dict(&root, &["test", "other"]);
    std::fs::create_dir_all(root.join("other")).unwrap();
    let e = load(&r.to_string()).unwrap_err();
    assert!(
        e.contains("several splits and none is 'train' (test, other)"),
        "{e}"
    );
    dict(&root, &["test"]);
    assert_eq!(load(&r.to_string()).unwrap().0.len(), 4);
}

#[test]
fn hf_single_dataset_and_ipc_file_format() {
    let d = TempDir::new("hf-single");
    let root = split(
        &d.path().join("one"),
        "train",
        &[("data-00000-of-00001.arrow", vec![numbered(0, 5)])],
    );
    let r = root.display();
    assert_eq!(load(&format!("{r},format=huggingface")).unwrap().0.len(), 5);
    assert_eq!(load(&format!("{r},split=train")).unwrap().0.len(), 5);
    let e = load(&format!("{r},split=test")).unwrap_err();
    assert!(
        e.contains("a single dataset (split train), not a DatasetDict"),
        "{e}"
    );
    // The IPC file format (ARROW1 magic) reads too.
    let f = std::fs::File::create(root.join("data-00000-of-00001.arrow")).unwrap();
    let b = numbered(0, 7);
    let mut w = FileWriter::try_new(f, &b.schema()).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    assert_eq!(load(&r.to_string()).unwrap().0.len(), 7);
    // A directory that save_to_disk did not write.
    let plain = d.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let e = load(&format!("{},format=hf", plain.display())).unwrap_err();
    assert!(e.contains("not a dataset saved with save_to_disk"), "{e}");
    let e = load(&plain.display().to_string()).unwrap_err();
    assert!(
        e.contains("is a directory") && e.contains("format=huggingface"),
        "{e}"
    );
    std::fs::write(
        root.join("state.json"),
        r#"{"_data_files": [{"filename": "../x"}]}"#,
    )
    .unwrap();
    let e = load(&r.to_string()).unwrap_err();
    assert!(e.contains("'../x' is not a file name"), "{e}");
}

/// Files written by pyarrow, pandas and `datasets` themselves
/// (`scripts/columnar-fixtures.py`).
fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/columnar")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn pyarrow_files_load_with_each_codec() {
    for codec in ["none", "snappy", "zstd", "gzip"] {
        let f = fixture(&format!("rows-{codec}.parquet"));
        let (got, _) = load(&format!("{f},prompt=user_prompt,expected=answer")).unwrap();
        assert_eq!(got.len(), 10, "{codec}");
        assert_eq!(
            got[4],
            Sample {
                system: Some("Answer with a number.".into()),
                messages: vec![Message::user("Question 4: what is 4 + 4?")],
                expected: Some("8".into()),
                ..Sample::default()
            },
            "{codec}"
        );
        assert_eq!(got[5].system, None);
        let (got, _) = load(&format!("{f},messages=messages,input_tokens=ids")).unwrap();
        assert_eq!(got[9].messages, vec![Message::user("hi 9")]);
        assert_eq!(got[9].system.as_deref(), Some("Be brief."));
        assert_eq!(got[9].input_tokens, Some(vec![109, 209, 309]));
    }
    let f = fixture("rows-lz4.parquet");
    let e = load(&format!("{f},prompt=user_prompt")).unwrap_err();
    assert!(
        e.starts_with(&format!("{f}: column 'user_prompt' is compressed with LZ4")),
        "{e}"
    );
}

#[test]
fn pandas_categories_and_nan() {
    let f = fixture("pandas.parquet");
    let (got, _) = load(&format!("{f},expected=label,max_tokens=max_tokens")).unwrap();
    assert_eq!(got.len(), 10);
    assert_eq!(got[1].messages[0].content, "Question 1: what is 1 + 1?");
    assert_eq!(got[1].expected.as_deref(), Some("B"));
    assert_eq!(got[2].max_tokens, Some(10));
    // pandas' NaN for a missing number reads as absent.
    assert_eq!(got[3].max_tokens, None);
}

#[test]
fn datasets_save_to_disk_output_loads() {
    let f = fixture("hf-dict");
    let (got, _) = load(&format!("{f},prompt=user_prompt,expected=answer")).unwrap();
    assert_eq!(got.len(), 6);
    assert_eq!(got[2].messages[0].content, "Question 2: what is 2 + 2?");
    assert_eq!(got[2].system.as_deref(), Some("Answer with a number."));
    assert_eq!(got[2].expected.as_deref(), Some("4"));
    // The system_prompt column, when set, wins over the chat's own.
    let (got, _) = load(&format!("{f},messages=messages")).unwrap();
    assert_eq!(got[0].messages.len(), 2);
    assert_eq!(got[1].messages, vec![Message::user("hi 1")]);
    assert_eq!(got[1].system.as_deref(), Some("Be brief."));
    let (got, _) = load(&format!(
        "{f},split=test,expected=answer,template={{question}}\n(A) {{choice1}}\n(B) {{choice2}}"
    ))
    .unwrap();
    assert_eq!(got.len(), 4);
    assert_eq!(got[3].messages[0].content, "Q3\n(A) x\n(B) y");
    assert_eq!(got[3].expected.as_deref(), Some("A"));
}

/// The load rate recorded in perf/RESULTS.md: 1 M rows of ~200-byte
/// prompts and an expected column, snappy (pyarrow's default), loaded
/// through `dataset::load` as a run loads it.
/// `cargo test --release --lib parquet_load_rate -- --ignored --nocapture`
/// (with `PARQUET_RATE_FILE=PATH`, the file is written there and kept, to
/// time the binary on it).
#[test]
#[ignore = "a measurement: writes and reads a 66 MB file"]
fn parquet_load_rate() {
    const ROWS: usize = 1_000_000;
    const WORDS: [&str; 16] = [
        "alpha", "bridge", "cloud", "delta", "engine", "forest", "garden", "harbor", "island",
        "jungle", "kettle", "lantern", "meadow", "north", "orange", "planet",
    ];
    let d = TempDir::new("pq-rate");
    let p = match std::env::var_os("PARQUET_RATE_FILE") {
        Some(p) => PathBuf::from(p),
        None => d.path().join("rate.parquet"),
    };
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut prompt = |i: usize| {
        let mut s = format!("Row {i}:");
        while s.len() < 200 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(' ');
            s.push_str(WORDS[(seed % 16) as usize]);
        }
        s
    };
    let f = std::fs::File::create(&p).unwrap();
    let chunk = 65_536;
    let mut w = None;
    for start in (0..ROWS).step_by(chunk) {
        let range = start..(start + chunk).min(ROWS);
        let b = batch(vec![
            (
                "prompt",
                Arc::new(StringArray::from_iter_values(
                    range.clone().map(&mut prompt),
                )),
            ),
            (
                "expected",
                Arc::new(StringArray::from_iter_values(
                    range.map(|i| format!("answer {i}")),
                )),
            ),
        ]);
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let w = w.get_or_insert_with(|| {
            ArrowWriter::try_new(f.try_clone().unwrap(), b.schema(), Some(props)).unwrap()
        });
        w.write(&b).unwrap();
    }
    w.unwrap().close().unwrap();
    let size = std::fs::metadata(&p).unwrap().len();
    let spec =
        crate::dataset::DatasetSpec::parse(&format!("{},expected=expected", p.display())).unwrap();
    let started = std::time::Instant::now();
    let (mut n, mut bytes) = (0u64, 0usize);
    let stats = crate::dataset::load(&spec, &mut |s| {
        n += 1;
        bytes += s.messages[0].content.len();
        Ok(())
    })
    .unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!((stats.loaded, n), (ROWS as u64, ROWS as u64));
    println!(
        "parquet load rate: {ROWS} rows ({:.1} MB file, {:.1} MB of prompts) in {took:.2} s = {:.0} rows/s",
        size as f64 / 1e6,
        bytes as f64 / 1e6,
        ROWS as f64 / took
    );
}
