//! Columnar datasets: Parquet files and Hugging Face datasets saved to disk
//! (Arrow IPC), both read as Arrow record batches. The schema plays the
//! part of the first row: the prompt column is found among its fields, and
//! only the columns the mapping and the template read are decoded. Each row
//! of a batch is then handed to `object::RowSeed` as a map of those
//! columns' values (`cell`), so column mapping, validation and error text
//! are the JSON loaders' own; the price is one small `Value` per cell,
//! which is far below the cost of decoding the pages. Rows are numbered
//! from 0, as pandas and `datasets` index them.

mod cell;
mod contained;
pub(super) mod hf;
#[cfg(test)]
mod hostile_tests;
mod ipc_bounds;
mod ipc_schema;
pub(super) mod parquet;
#[cfg(test)]
mod tests;
mod thrift;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::Schema;
use serde::de::DeserializeSeed;
use serde::de::value::MapDeserializer;
use serde_json::Value;

use super::columns::ResolvedColumns;
use super::object::RowSeed;
use super::sink::{Loc, Sink};
use super::spec::DatasetSpec;
use super::{LoadStats, MAX_RECORD, Sample};

/// Rows decoded per batch: large enough that per-batch costs vanish, small
/// enough that a batch of long prompts stays a few MB.
const BATCH_ROWS: usize = 4096;

/// What a load reads from a schema: the resolved mapping and the columns
/// it needs, each checked to exist and to have a type `cell` converts.
struct Plan {
    cols: ResolvedColumns,
    /// Every column read, each once.
    needed: Vec<String>,
    /// All the schema's columns, for errors.
    all: Vec<String>,
}

impl Plan {
    fn new(spec: &DatasetSpec, schema: &Schema, file: &str) -> Result<Plan, String> {
        let found: Vec<(String, bool)> = schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), cell::is_list(f.data_type())))
            .collect();
        let all: Vec<String> = found.iter().map(|(n, _)| n.clone()).collect();
        let template = spec.parsed_template()?;
        let cols = ResolvedColumns::detect(&spec.columns, template.as_ref(), &found, file)?;
        let roles: Vec<(String, &str)> = cols
            .columns()
            .into_iter()
            .map(|name| {
                let role = match cols.field_of(name) {
                    Some(f) => f.key(),
                    None => "template",
                };
                (name.to_string(), role)
            })
            .collect();
        for (name, role) in &roles {
            let Some(field) = schema.fields().iter().find(|f| f.name() == name) else {
                let what = if *role == "template" {
                    format!("template column '{name}'")
                } else {
                    format!("{role}={name}")
                };
                return Err(format!(
                    "{file}: {what}: no such column — columns found: {}",
                    all.join(", ")
                ));
            };
            if !cell::supported(field.data_type()) {
                return Err(format!(
                    "{file}: column '{name}' ({role}) has type {}, which llmload does not read \
                     (it reads strings, numbers, booleans, and lists and structs of them)",
                    field.data_type()
                ));
            }
        }
        Ok(Plan {
            cols,
            needed: roles.into_iter().map(|(n, _)| n).collect(),
            all,
        })
    }

    /// The schema positions of the needed columns (for a projection).
    fn indices(&self, schema: &Schema, file: &str) -> Result<Vec<usize>, String> {
        self.needed
            .iter()
            .map(|n| {
                schema
                    .index_of(n)
                    .map_err(|_| format!("{file}: has no column '{n}' (an earlier file had it)"))
            })
            .collect()
    }
}

/// A row's error, with "found null" said as what it was when the null came
/// from a float column's NaN (which has no JSON form, so reads as null).
/// Only the column the error is about counts: a NaN in another column
/// (an optional number read as absent) is not what was found.
fn nan_named(e: String, columns: &[(&str, &ArrayRef)], i: usize) -> String {
    let nan = columns
        .iter()
        .find(|(name, c)| cell::is_nan(c.as_ref(), i) && e.contains(&format!("field '{name}'")));
    match nan {
        Some((name, c)) if e.contains("found null") => e.replacen(
            "found null",
            &format!(
                "found NaN (column '{name}' holds {} numbers)",
                c.data_type()
            ),
            1,
        ),
        _ => e,
    }
}

/// Feeds batches row by row through `RowSeed` into the sink.
struct Rows<'a> {
    plan: Plan,
    sink: Sink<'a>,
    /// The next row's number.
    row: u64,
}

impl<'a> Rows<'a> {
    fn new(
        plan: Plan,
        file: String,
        skip_invalid: bool,
        on_sample: &'a mut dyn FnMut(Sample) -> Result<(), String>,
    ) -> Rows<'a> {
        Rows {
            plan,
            sink: Sink::new(file, skip_invalid, on_sample),
            row: 0,
        }
    }

    fn batch(&mut self, batch: &RecordBatch, file: &str) -> Result<(), String> {
        let mut columns = Vec::with_capacity(self.plan.needed.len());
        for name in &self.plan.needed {
            let c = batch
                .column_by_name(name)
                .ok_or_else(|| format!("{file}: a batch lacks column '{name}'"))?;
            columns.push((name.as_str(), c));
        }
        for i in 0..batch.num_rows() {
            let loc = Loc::Row(self.row);
            self.row += 1;
            let mut entries: Vec<(&str, Value)> = Vec::with_capacity(columns.len());
            let mut bad = None;
            for (name, c) in &columns {
                let mut budget = MAX_RECORD;
                match cell::value(c.as_ref(), i, &mut budget) {
                    Ok(v) => entries.push((name, v)),
                    Err(e) => {
                        bad = Some(format!("column '{name}': {e}"));
                        break;
                    }
                }
            }
            if let Some(reason) = bad {
                self.sink.invalid(loc, &reason)?;
                continue;
            }
            let map = MapDeserializer::<_, serde_json::Error>::new(entries.into_iter());
            // Built values cannot fail to deserialize; an error here would
            // be a bug, reported as the row's problem rather than a panic.
            match RowSeed(&self.plan.cols).deserialize(map) {
                Ok(r) => {
                    let sample = r.sample.map_err(|e| nan_named(e, &columns, i));
                    self.sink.row(loc, sample, r.seen)?
                }
                Err(e) => self.sink.invalid(loc, &e.to_string())?,
            }
        }
        Ok(())
    }

    /// Where the next row is, for errors met while decoding it.
    fn at(&self) -> String {
        self.sink.at(Loc::Row(self.row))
    }

    fn finish(self) -> Result<LoadStats, String> {
        self.sink.finish(Some(&self.plan.cols), &self.plan.all)
    }
}
