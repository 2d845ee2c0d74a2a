//! One Arrow cell as the `serde_json::Value` the JSON loaders would have
//! parsed from the same data, so a Parquet or Arrow row goes through the
//! same field conversion (`object::RowSeed`) and gets the same errors.
//! Only the columns a load reads are converted, one row at a time; a
//! string is copied once, into the `String` the sample keeps. Types with
//! no JSON counterpart (dates, decimals, maps, unions) are refused when the
//! schema is read, before any row (`supported`).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, OffsetSizeTrait};
use arrow_schema::DataType;
use serde_json::{Map, Number, Value};

use crate::dataset::MAX_RECORD;

/// Whether `t` converts (recursively, for lists and structs).
pub(super) fn supported(t: &DataType) -> bool {
    use DataType as T;
    match t {
        T::Null | T::Boolean | T::Float16 | T::Float32 | T::Float64 => true,
        T::Int8 | T::Int16 | T::Int32 | T::Int64 => true,
        T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64 => true,
        T::Utf8 | T::LargeUtf8 | T::Utf8View => true,
        T::Binary | T::LargeBinary | T::BinaryView | T::FixedSizeBinary(_) => true,
        T::List(f) | T::LargeList(f) | T::FixedSizeList(f, _) => supported(f.data_type()),
        T::Struct(fields) => fields.iter().all(|f| supported(f.data_type())),
        T::Dictionary(k, v) => k.is_integer() && supported(v),
        _ => false,
    }
}

/// Whether a column of type `t` holds arrays (a messages column may).
pub(super) fn is_list(t: &DataType) -> bool {
    match t {
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => true,
        DataType::Dictionary(_, v) => is_list(v),
        _ => false,
    }
}

/// Row `i` of `a`, or what makes it unreadable. `budget` is the bytes the
/// cell may still take (strings count their bytes, other values 8 each):
/// a cell over it is refused, as a JSONL line over `MAX_RECORD` is.
pub(super) fn value(a: &dyn Array, i: usize, budget: &mut usize) -> Result<Value, String> {
    use DataType as T;
    if a.is_null(i) {
        return Ok(Value::Null);
    }
    let wrong = || format!("a column whose data is not of its type {}", a.data_type());
    take(budget, 8)?;
    Ok(match a.data_type() {
        T::Null => Value::Null,
        T::Boolean => Value::Bool(a.as_boolean_opt().ok_or_else(wrong)?.value(i)),
        T::Int8 => int(a.as_primitive_opt::<Int8Type>().ok_or_else(wrong)?.value(i)),
        T::Int16 => int(a
            .as_primitive_opt::<Int16Type>()
            .ok_or_else(wrong)?
            .value(i)),
        T::Int32 => int(a
            .as_primitive_opt::<Int32Type>()
            .ok_or_else(wrong)?
            .value(i)),
        T::Int64 => int(a
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(wrong)?
            .value(i)),
        T::UInt8 => int(a
            .as_primitive_opt::<UInt8Type>()
            .ok_or_else(wrong)?
            .value(i)),
        T::UInt16 => int(a
            .as_primitive_opt::<UInt16Type>()
            .ok_or_else(wrong)?
            .value(i)),
        T::UInt32 => int(a
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(wrong)?
            .value(i)),
        T::UInt64 => Value::from(
            a.as_primitive_opt::<UInt64Type>()
                .ok_or_else(wrong)?
                .value(i),
        ),
        // Narrow floats by their own shortest digits (0.1f32 is 0.1, not
        // 0.10000000149011612), as numpy prints them.
        T::Float16 => {
            let x = a
                .as_primitive_opt::<Float16Type>()
                .ok_or_else(wrong)?
                .value(i);
            float(x.to_string().parse().unwrap_or(f64::NAN))
        }
        T::Float32 => {
            let x = a
                .as_primitive_opt::<Float32Type>()
                .ok_or_else(wrong)?
                .value(i);
            float(x.to_string().parse().unwrap_or(f64::NAN))
        }
        T::Float64 => float(
            a.as_primitive_opt::<Float64Type>()
                .ok_or_else(wrong)?
                .value(i),
        ),
        T::Utf8 => text(budget, a.as_string_opt::<i32>().ok_or_else(wrong)?.value(i))?,
        T::LargeUtf8 => text(budget, a.as_string_opt::<i64>().ok_or_else(wrong)?.value(i))?,
        T::Utf8View => text(budget, a.as_string_view_opt().ok_or_else(wrong)?.value(i))?,
        T::Binary => bytes(budget, a.as_binary_opt::<i32>().ok_or_else(wrong)?.value(i))?,
        T::LargeBinary => bytes(budget, a.as_binary_opt::<i64>().ok_or_else(wrong)?.value(i))?,
        T::BinaryView => bytes(budget, a.as_binary_view_opt().ok_or_else(wrong)?.value(i))?,
        T::FixedSizeBinary(_) => bytes(
            budget,
            a.as_fixed_size_binary_opt().ok_or_else(wrong)?.value(i),
        )?,
        T::List(_) => list(a.as_list_opt::<i32>().ok_or_else(wrong)?, i, budget)?,
        T::LargeList(_) => list(a.as_list_opt::<i64>().ok_or_else(wrong)?, i, budget)?,
        T::FixedSizeList(..) => {
            let items = a.as_fixed_size_list_opt().ok_or_else(wrong)?.value(i);
            array(items.as_ref(), budget)?
        }
        T::Struct(_) => {
            let s = a.as_struct_opt().ok_or_else(wrong)?;
            let mut obj = Map::new();
            for (name, col) in s.column_names().into_iter().zip(s.columns()) {
                take(budget, name.len())?;
                obj.insert(name.to_string(), value(col.as_ref(), i, budget)?);
            }
            Value::Object(obj)
        }
        T::Dictionary(..) => {
            let d = a.as_any_dictionary_opt().ok_or_else(wrong)?;
            let key = index(d.keys(), i).ok_or_else(wrong)?;
            if key >= d.values().len() {
                return Err(format!("a dictionary key ({key}) past its dictionary"));
            }
            value(d.values().as_ref(), key, budget)?
        }
        other => {
            return Err(format!(
                "a value of type {other}, which llmload does not read"
            ));
        }
    })
}

fn int(n: impl Into<i64>) -> Value {
    Value::from(n.into())
}

/// Whether row `i` of `a` is a float that is not a number (read as null).
pub(super) fn is_nan(a: &dyn Array, i: usize) -> bool {
    if a.is_null(i) {
        return false;
    }
    match a.data_type() {
        DataType::Float16 => a
            .as_primitive_opt::<Float16Type>()
            .is_some_and(|x| x.value(i).is_nan()),
        DataType::Float32 => a
            .as_primitive_opt::<Float32Type>()
            .is_some_and(|x| x.value(i).is_nan()),
        DataType::Float64 => a
            .as_primitive_opt::<Float64Type>()
            .is_some_and(|x| x.value(i).is_nan()),
        _ => false,
    }
}

/// NaN and infinities have no JSON form: they read as null (pandas writes
/// NaN for a missing number).
fn float(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// Takes `n` bytes from the cell's budget, or refuses the cell.
fn take(budget: &mut usize, n: usize) -> Result<(), String> {
    match budget.checked_sub(n) {
        Some(left) => {
            *budget = left;
            Ok(())
        }
        None => Err(format!(
            "a value over {MAX_RECORD} bytes, more than one cell may hold (as one JSONL line may)"
        )),
    }
}

fn text(budget: &mut usize, s: &str) -> Result<Value, String> {
    take(budget, s.len())?;
    Ok(Value::String(s.to_owned()))
}

fn bytes(budget: &mut usize, b: &[u8]) -> Result<Value, String> {
    match std::str::from_utf8(b) {
        Ok(s) => text(budget, s),
        Err(e) => Err(format!(
            "binary data that is not UTF-8 text (invalid at byte {})",
            e.valid_up_to() + 1
        )),
    }
}

fn list<O: OffsetSizeTrait>(
    l: &arrow_array::GenericListArray<O>,
    i: usize,
    budget: &mut usize,
) -> Result<Value, String> {
    array(l.value(i).as_ref(), budget)
}

fn array(items: &dyn Array, budget: &mut usize) -> Result<Value, String> {
    (0..items.len())
        .map(|j| value(items, j, budget))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// An integer key as an index (`None`: negative, or not an integer array).
fn index(keys: &dyn Array, i: usize) -> Option<usize> {
    use DataType as T;
    let n: i64 = match keys.data_type() {
        T::Int8 => keys.as_primitive_opt::<Int8Type>()?.value(i).into(),
        T::Int16 => keys.as_primitive_opt::<Int16Type>()?.value(i).into(),
        T::Int32 => keys.as_primitive_opt::<Int32Type>()?.value(i).into(),
        T::Int64 => keys.as_primitive_opt::<Int64Type>()?.value(i),
        T::UInt8 => keys.as_primitive_opt::<UInt8Type>()?.value(i).into(),
        T::UInt16 => keys.as_primitive_opt::<UInt16Type>()?.value(i).into(),
        T::UInt32 => keys.as_primitive_opt::<UInt32Type>()?.value(i).into(),
        T::UInt64 => i64::try_from(keys.as_primitive_opt::<UInt64Type>()?.value(i)).ok()?,
        _ => return None,
    };
    usize::try_from(n).ok()
}
