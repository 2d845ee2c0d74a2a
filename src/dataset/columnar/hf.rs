//! Hugging Face datasets saved with `save_to_disk`: a `Dataset` is a
//! directory of Arrow IPC stream files (`data-0000i-of-0000n.arrow`) listed,
//! in order, by `_data_files` in its `state.json`; a `DatasetDict` is a
//! directory with `dataset_dict.json` naming its splits, one such
//! directory per split. `split=` chooses one (default: `train`, else the
//! only split). Rows are numbered over the whole split, as `ds[i]` indexes
//! it, and errors name the split's directory. Files in the IPC file format
//! (`ARROW1` magic, as `pyarrow.feather` writes) are read too.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_ipc::reader::{FileReader, StreamReader};
use arrow_schema::{ArrowError, SchemaRef};
use serde_json::Value;

use super::contained::contained;
use super::{Plan, Rows, ipc_bounds};
use crate::dataset::spec::{DatasetSpec, HF_DICT, HF_STATE};
use crate::dataset::{LoadStats, Sample};

pub(crate) fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
) -> Result<LoadStats, String> {
    let dir = split_dir(&spec.path, spec.split.as_deref())?;
    let name = dir.display().to_string();
    let files = data_files(&dir)?;
    let Some(first) = files.first() else {
        return Err(format!("{name}: {HF_STATE} lists no data files"));
    };
    let schema = Ipc::open(first, None, true)?.schema();
    let plan = Plan::new(spec, &schema, &name)?;
    let mut rows = Rows::new(plan, name, spec.skip_invalid, on_sample);
    for path in &files {
        let shown = path.display().to_string();
        let schema = Ipc::open(path, None, path != first)?.schema();
        let projection = rows.plan.indices(&schema, &shown)?;
        let mut reader = Ipc::open(path, Some(projection), false)?;
        while let Some(batch) = contained(|| reader.next_batch())
            .map_err(|e| format!("{shown}: cannot decode ({}): {e}", rows.at()))?
        {
            let batch =
                batch.map_err(|e| format!("{shown}: cannot decode ({}): {e}", rows.at()))?;
            rows.batch(&batch, &shown)?;
        }
    }
    rows.finish()
}

/// The directory of the chosen split: `path` itself for a `Dataset`.
fn split_dir(path: &Path, split: Option<&str>) -> Result<PathBuf, String> {
    let shown = path.display();
    let dict = path.join(HF_DICT);
    if dict.is_file() {
        let v = read_json(&dict)?;
        let splits: Vec<&str> = v
            .get("splits")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if splits.is_empty() {
            return Err(format!(
                "{}: expected {{\"splits\": [names…]}}",
                dict.display()
            ));
        }
        let list = splits.join(", ");
        let chosen = match split {
            Some(s) if splits.contains(&s) => s,
            Some(s) => return Err(format!("{shown}: no split '{s}' (splits: {list})")),
            None if splits.contains(&"train") => "train",
            None if splits.len() == 1 => splits[0],
            None => {
                return Err(format!(
                    "{shown}: several splits and none is 'train' ({list}); choose one with split=NAME"
                ));
            }
        };
        // A split name is a directory name: refuse one that leaves `path`.
        if chosen.is_empty() || chosen.contains(['/', '\\']) || chosen == "." || chosen == ".." {
            return Err(format!(
                "{}: split name '{chosen}' is not a directory name",
                dict.display()
            ));
        }
        return Ok(path.join(chosen));
    }
    if path.join(HF_STATE).is_file() {
        if let Some(s) = split {
            let own = read_json(&path.join(HF_STATE))?
                .get("_split")
                .and_then(Value::as_str)
                .map(str::to_string);
            if own.as_deref() != Some(s) {
                return Err(format!(
                    "{shown}: split={s}, but this is a single dataset (split {}), not a \
                     DatasetDict; drop split=",
                    own.as_deref().unwrap_or("unnamed")
                ));
            }
        }
        return Ok(path.to_path_buf());
    }
    Err(format!(
        "{shown}: not a dataset saved with save_to_disk (no {HF_DICT} or {HF_STATE})"
    ))
}

/// The split's Arrow files, in `state.json` order.
fn data_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let state = dir.join(HF_STATE);
    let v = read_json(&state)?;
    let shown = state.display();
    let entries = v
        .get("_data_files")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{shown}: no _data_files list"))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let name = e
                .get("filename")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("{shown}: _data_files[{i}] has no filename"))?;
            if name.is_empty() || name.contains(['/', '\\']) || name == ".." {
                return Err(format!(
                    "{shown}: _data_files[{i}]: '{name}' is not a file name"
                ));
            }
            Ok(dir.join(name))
        })
        .collect()
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = crate::capped_read::text(path, crate::capped_read::CONFIG)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON ({e})", path.display()))
}

/// An Arrow IPC stream (what `datasets` writes) or file.
enum Ipc {
    Stream(StreamReader<BufReader<File>>),
    File(FileReader<BufReader<File>>),
}

impl Ipc {
    /// Opens `path`, first checking its framing against its length
    /// (`ipc_bounds`) when `check`: once per file is enough.
    fn open(path: &Path, projection: Option<Vec<usize>>, check: bool) -> Result<Ipc, String> {
        let shown = path.display();
        let err = |e: &dyn std::fmt::Display| format!("{shown}: {e}");
        let mut f = File::open(path).map_err(|e| err(&e))?;
        let mut magic = [0u8; 6];
        let is_file = f.read_exact(&mut magic).is_ok() && &magic == b"ARROW1";
        if check {
            ipc_bounds::check(path, is_file)?;
        }
        let f = File::open(path).map_err(|e| err(&e))?;
        let bad = |e: ArrowError| format!("{shown}: not a readable Arrow IPC file ({e})");
        let opened = contained(|| {
            Ok(if is_file {
                Ipc::File(FileReader::try_new(BufReader::new(f), projection).map_err(bad)?)
            } else {
                Ipc::Stream(StreamReader::try_new(BufReader::new(f), projection).map_err(bad)?)
            })
        });
        opened.map_err(|e| format!("{shown}: not a readable Arrow IPC file ({e})"))?
    }

    fn schema(&self) -> SchemaRef {
        match self {
            Ipc::Stream(r) => r.schema(),
            Ipc::File(r) => r.schema(),
        }
    }

    fn next_batch(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        match self {
            Ipc::Stream(r) => r.next(),
            Ipc::File(r) => r.next(),
        }
    }
}
