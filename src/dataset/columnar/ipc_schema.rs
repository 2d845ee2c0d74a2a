//! An Arrow IPC schema checked before the arrow-ipc crate converts it: its
//! conversion (`fb_to_schema`) unwraps and panics on what a corrupt file can
//! hold — a field without its type table, an integer 7 bits wide, a list
//! with two children, an unknown type code — so every field, nested ones
//! too, is held to exactly the conditions that conversion assumes. Then the
//! buffers a record batch must carry for that schema are counted, since the
//! reader skips an unread column's buffers with an unwrap.

use arrow_ipc::{
    DateUnit, Endianness, Field, IntervalUnit, Precision, Schema as FbSchema, TimeUnit, Type,
};
use arrow_schema::{DataType, Schema};

/// Nesting a field may have (the flatbuffer verifier's own depth bounds it
/// too; this keeps the recursion here small whatever that limit is).
const MAX_DEPTH: u32 = 64;

/// The arrow schema of `fb`, once every field is known to convert.
pub(super) fn convert(fb: FbSchema<'_>) -> Result<Schema, String> {
    if fb.endianness() != Endianness::Little {
        return Err("big-endian Arrow data, which llmload does not read".to_string());
    }
    let fields = fb
        .fields()
        .ok_or_else(|| "a schema without a field list".to_string())?;
    for f in fields {
        field(f, 0)?;
    }
    Ok(arrow_ipc::convert::fb_to_schema(fb))
}

fn field(f: Field<'_>, depth: u32) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("fields nested too deep".to_string());
    }
    let name = f.name().unwrap_or_default();
    let bad = |what: &str| Err(format!("field '{name}': {what}"));
    if let Some(d) = f.dictionary() {
        match d.indexType() {
            Some(i) if int_width(i.bitWidth()) => {}
            _ => return bad("a dictionary without a valid index type"),
        }
    }
    let children = |n: usize| -> Result<(), String> {
        match f.children() {
            Some(c) if c.len() == n => c.iter().try_for_each(|c| field(c, depth + 1)),
            _ => Err(format!("field '{name}': not {n} child field(s)")),
        }
    };
    let t = f.type_type();
    match t {
        Type::Null | Type::Bool | Type::Binary | Type::BinaryView | Type::LargeBinary => Ok(()),
        Type::Utf8 | Type::Utf8View | Type::LargeUtf8 => Ok(()),
        Type::Int => match f.type_as_int() {
            Some(i) if int_width(i.bitWidth()) => Ok(()),
            _ => bad("an integer type of no valid width"),
        },
        Type::FixedSizeBinary => match f.type_as_fixed_size_binary() {
            Some(_) => Ok(()),
            None => bad("a fixed-size binary without its width"),
        },
        Type::FloatingPoint => match f.type_as_floating_point().map(|p| p.precision()) {
            Some(Precision::HALF | Precision::SINGLE | Precision::DOUBLE) => Ok(()),
            _ => bad("a float of no valid precision"),
        },
        Type::Date => match f.type_as_date().map(|d| d.unit()) {
            Some(DateUnit::DAY | DateUnit::MILLISECOND) => Ok(()),
            _ => bad("a date of no valid unit"),
        },
        Type::Time => match f.type_as_time().map(|t| (t.bitWidth(), t.unit())) {
            Some((32, TimeUnit::SECOND | TimeUnit::MILLISECOND))
            | Some((64, TimeUnit::MICROSECOND | TimeUnit::NANOSECOND)) => Ok(()),
            _ => bad("a time of no valid width and unit"),
        },
        Type::Timestamp => match f.type_as_timestamp().map(|t| t.unit()) {
            Some(u) if time_unit(u) => Ok(()),
            _ => bad("a timestamp of no valid unit"),
        },
        Type::Duration => match f.type_as_duration().map(|t| t.unit()) {
            Some(u) if time_unit(u) => Ok(()),
            _ => bad("a duration of no valid unit"),
        },
        Type::Interval => match f.type_as_interval().map(|i| i.unit()) {
            Some(
                IntervalUnit::YEAR_MONTH | IntervalUnit::DAY_TIME | IntervalUnit::MONTH_DAY_NANO,
            ) => Ok(()),
            _ => bad("an interval of no valid unit"),
        },
        Type::List | Type::LargeList | Type::ListView | Type::LargeListView => children(1),
        Type::FixedSizeList => match f.type_as_fixed_size_list() {
            Some(_) => children(1),
            None => bad("a fixed-size list without its size"),
        },
        Type::Map => match f.type_as_map() {
            Some(_) => children(1),
            None => bad("a map without its table"),
        },
        Type::RunEndEncoded => children(2),
        Type::Struct_ => f
            .children()
            .into_iter()
            .flatten()
            .try_for_each(|c| field(c, depth + 1)),
        Type::Decimal => match f.type_as_decimal() {
            Some(d)
                if u8::try_from(d.precision()).is_ok()
                    && i8::try_from(d.scale()).is_ok()
                    && matches!(d.bitWidth(), 32 | 64 | 128 | 256) =>
            {
                Ok(())
            }
            _ => bad("a decimal of no valid width, precision or scale"),
        },
        // Unions carry type ids the conversion asserts on; llmload reads
        // none, and no dataset writer makes them.
        Type::Union => bad("a union type, which llmload does not read"),
        _ => bad(&format!("an unknown type code {}", t.0)),
    }
}

fn int_width(bits: i32) -> bool {
    matches!(bits, 8 | 16 | 32 | 64)
}

fn time_unit(u: TimeUnit) -> bool {
    matches!(
        u,
        TimeUnit::SECOND | TimeUnit::MILLISECOND | TimeUnit::MICROSECOND | TimeUnit::NANOSECOND
    )
}

/// What `check_batch` walks: a batch's nodes `(length, null_count)` and
/// buffer lengths in the reader's order, and its variadic buffer counts.
pub(super) struct Batch<'a> {
    pub nodes: &'a [(i64, i64)],
    pub buffers: &'a [i64],
    pub variadic: &'a [i64],
}

/// Walks a record batch of `schema` as the reader does — a node per field,
/// then that field's own buffers, then its children — and refuses what the
/// reader would panic on: fewer buffers than the fields need (it skips an
/// unread column's with an unwrap), or a validity buffer too short for its
/// node's length (it asserts on a struct's).
pub(super) fn check_batch(schema: &Schema, b: &Batch<'_>) -> Result<(), String> {
    let mut w = Walk {
        b,
        node: 0,
        buffer: 0,
        variadic: 0,
    };
    for f in schema.fields() {
        w.field(f.data_type())?;
    }
    if w.buffer > b.buffers.len() {
        return Err(format!(
            "a batch has {} buffers where its schema needs {}",
            b.buffers.len(),
            w.buffer
        ));
    }
    Ok(())
}

struct Walk<'a> {
    b: &'a Batch<'a>,
    node: usize,
    buffer: usize,
    variadic: usize,
}

impl Walk<'_> {
    fn field(&mut self, t: &DataType) -> Result<(), String> {
        use DataType as T;
        // A missing node is the reader's own error.
        let Some(&(len, nulls)) = self.b.nodes.get(self.node) else {
            return Ok(());
        };
        self.node += 1;
        // The element width of each buffer after the validity one: the
        // reader views them as slices of that type, which panics on a
        // length that is not a multiple of it.
        let widths: &[usize] = match t {
            T::Null | T::RunEndEncoded(..) => &[],
            T::Utf8 | T::Binary => &[4, 1],
            T::LargeUtf8 | T::LargeBinary => &[8, 1],
            T::List(_) | T::Map(..) => &[4],
            T::LargeList(_) => &[8],
            T::ListView(_) => &[4, 4],
            T::LargeListView(_) => &[8, 8],
            T::Utf8View | T::BinaryView => &[16],
            T::FixedSizeList(..) | T::Struct(_) => &[],
            T::Dictionary(k, _) => &[k.primitive_width().unwrap_or(1)],
            other => &[other.primitive_width().unwrap_or(1)],
        };
        let own = match t {
            T::Null | T::RunEndEncoded(..) => 0,
            T::Utf8View | T::BinaryView => {
                let n = self.b.variadic.get(self.variadic).copied().unwrap_or(0);
                self.variadic += 1;
                2usize.saturating_add(usize::try_from(n).unwrap_or(0))
            }
            _ => 1 + widths.len(),
        };
        for (k, &w) in widths.iter().enumerate() {
            let at = self.buffer.saturating_add(1 + k);
            if let Some(&n) = self.b.buffers.get(at)
                && n % w as i64 != 0
            {
                return Err(format!(
                    "a buffer of {n} bytes for a column of {t}, not a whole number of values"
                ));
            }
        }
        if own > 0 && nulls > 0 {
            let bits = self
                .b
                .buffers
                .get(self.buffer)
                .map_or(0, |&n| n.max(0).saturating_mul(8));
            if bits < len {
                return Err(format!(
                    "a column of {len} values with a validity buffer of {bits} bits"
                ));
            }
        }
        self.buffer = self.buffer.saturating_add(own);
        match t {
            T::List(f) | T::LargeList(f) | T::Map(f, _) => self.field(f.data_type()),
            T::ListView(f) | T::LargeListView(f) | T::FixedSizeList(f, _) => {
                self.field(f.data_type())
            }
            T::Struct(fields) => fields.iter().try_for_each(|f| self.field(f.data_type())),
            T::RunEndEncoded(a, b) => {
                self.field(a.data_type())?;
                self.field(b.data_type())
            }
            _ => Ok(()),
        }
    }
}
