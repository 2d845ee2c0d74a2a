//! One JSON object — a JSONL line or a JSON array element — read straight
//! into a sample's fields by a serde visitor: mapped keys are converted as
//! they are met, every other value is skipped without being built, so a
//! line costs one parse and one allocation per kept string instead of a
//! `serde_json::Value` tree. A wrong type is not a serde error but a value
//! (`Row::sample` is `Err`), so the parser still consumes the whole object
//! and a JSON array can carry on to the next element. The first row is the
//! exception: it is kept whole (`FirstRow`, keys in file order) because the
//! prompt column must be found among its keys before it can be read.

use std::fmt;

use serde::de::value::MapDeserializer;
use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;

use super::Sample;
use super::columns::{Field, MESSAGE_NAMES, Parts, ResolvedColumns, is_blank, max_tokens_from_f64};
use super::messages::{self, kind};
use super::template::python_str;

/// A parsed object: its sample or what is wrong with it, and which mapped
/// fields it had (to catch a mapped column no row has).
#[derive(Debug)]
pub(crate) struct Row {
    pub sample: Result<Sample, String>,
    pub seen: u8,
}

impl Row {
    fn not_object(found: &str) -> Row {
        Row {
            sample: Err(format!("expected a JSON object, found {found}")),
            seen: 0,
        }
    }
}

/// Deserializes one object into a `Row` under a column mapping.
pub(crate) struct RowSeed<'c>(pub &'c ResolvedColumns);

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = Row;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Row, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = Row;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let cols = self.0;
        let mut parts = Parts::default();
        let mut slots: Vec<Option<String>> = match cols.template() {
            Some(t) => vec![None; t.names().len()],
            None => Vec::new(),
        };
        let mut err = None;
        let mut seen = 0;
        while let Some((field, slot)) = map.next_key_seed(KeySeed(cols))? {
            let (field, wrong) = match (field, slot) {
                (None, None) => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                (None, Some(slot)) => {
                    slots[slot] = Some(python_str(map.next_value()?));
                    continue;
                }
                (Some(field), None) => (
                    field,
                    map.next_value_seed(FieldSeed(field, &mut parts, cols.number_prompts()))?,
                ),
                (Some(field), Some(slot)) => {
                    // A template column that also feeds a field.
                    let v: Value = map.next_value()?;
                    slots[slot] = Some(python_str(v.clone()));
                    let wrong = FieldSeed(field, &mut parts, cols.number_prompts())
                        .deserialize(v)
                        .map_err(de::Error::custom)?;
                    (field, wrong)
                }
            };
            seen |= field.bit();
            if let Some(found) = wrong {
                err.get_or_insert_with(|| cols.field_error(field, &found));
            }
        }
        if let (Some(t), None) = (cols.template(), &err) {
            match t.render(&slots) {
                Ok(p) if !is_blank(&p) => parts.prompt = Some(p),
                Ok(_) => err = Some("the template renders a blank prompt".to_string()),
                Err(slot) => err = Some(cols.template_error(slot)),
            }
        }
        let sample = match err {
            Some(e) => Err(e),
            None => parts.finish(cols),
        };
        Ok(Row { sample, seen })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Row, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Row::not_object("an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Row, E> {
        Ok(Row::not_object("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Row, E> {
        Ok(Row::not_object(&format!("a number ({n})")))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Row, E> {
        Ok(Row::not_object(&format!("a number ({n})")))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Row, E> {
        Ok(Row::not_object(&format!("a number ({n})")))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Row, E> {
        Ok(Row::not_object("a string"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Row, E> {
        Ok(Row::not_object("null"))
    }
}

/// The first object of a file, whole and in file order, or what was found
/// instead of an object.
#[derive(Debug)]
pub(crate) enum FirstRow {
    Object(Vec<(String, Value)>),
    Other(String),
}

impl FirstRow {
    /// Its keys, each with whether it holds an array (which is what lets
    /// `messages` / `conversations` count as a prompt source).
    pub(super) fn columns(&self) -> Vec<(String, bool)> {
        match self {
            FirstRow::Object(entries) => entries
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.is_array() && MESSAGE_NAMES.contains(&k.as_str()),
                    )
                })
                .collect(),
            FirstRow::Other(_) => Vec::new(),
        }
    }

    /// Reads it as any other row, once the mapping is known.
    pub(super) fn into_row(self, cols: &ResolvedColumns) -> Row {
        match self {
            FirstRow::Object(entries) => {
                let map = MapDeserializer::<_, serde_json::Error>::new(entries.into_iter());
                // A built map cannot fail to deserialize: every value is
                // already a Value.
                RowSeed(cols).deserialize(map).unwrap_or_else(|e| Row {
                    sample: Err(e.to_string()),
                    seen: 0,
                })
            }
            FirstRow::Other(found) => Row::not_object(&found),
        }
    }
}

impl<'de> Deserialize<'de> for FirstRow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FirstRow, D::Error> {
        d.deserialize_any(FirstRowVisitor)
    }
}

struct FirstRowVisitor;

impl<'de> Visitor<'de> for FirstRowVisitor {
    type Value = FirstRow;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FirstRow, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Value>()? {
            entries.push(entry);
        }
        Ok(FirstRow::Object(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstRow, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(FirstRow::Other("an array".to_string()))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<FirstRow, E> {
        Ok(FirstRow::Other("a boolean".to_string()))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<FirstRow, E> {
        Ok(FirstRow::Other(format!("a number ({n})")))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<FirstRow, E> {
        Ok(FirstRow::Other(format!("a number ({n})")))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<FirstRow, E> {
        Ok(FirstRow::Other(format!("a number ({n})")))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<FirstRow, E> {
        Ok(FirstRow::Other("a string".to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<FirstRow, E> {
        Ok(FirstRow::Other("null".to_string()))
    }
}

/// Reads one field's value into `Parts`; its value is what was found
/// instead of a valid value, if anything.
///
/// The third field: a number in the prompt column is read as its text.
struct FieldSeed<'p>(Field, &'p mut Parts, bool);

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        let FieldSeed(field, parts, numbers) = self;
        Ok(match field {
            Field::Prompt => match Scalar::deserialize(d)? {
                Scalar::Str(s) if !is_blank(&s) => {
                    parts.prompt = Some(s);
                    None
                }
                Scalar::U64(n) if numbers => {
                    parts.prompt = Some(n.to_string());
                    None
                }
                Scalar::I64(n) if numbers => {
                    parts.prompt = Some(n.to_string());
                    None
                }
                Scalar::F64(x) if numbers => {
                    parts.prompt = Some(super::template::python_float(x));
                    None
                }
                other => Some(other.describe()),
            },
            Field::System => match Scalar::deserialize(d)? {
                Scalar::Str(s) => {
                    parts.system = (!s.is_empty()).then_some(s);
                    None
                }
                Scalar::Null => None,
                other => Some(other.describe()),
            },
            Field::MaxTokens => {
                let v = Scalar::deserialize(d)?;
                let n = match v {
                    Scalar::U64(n) => u32::try_from(n).ok().filter(|n| *n > 0),
                    Scalar::F64(x) => max_tokens_from_f64(x),
                    _ => None,
                };
                match (n, v) {
                    (Some(n), _) => {
                        parts.max_tokens = Some(n);
                        None
                    }
                    (None, Scalar::Null) => None,
                    (None, other) => Some(other.describe()),
                }
            }
            Field::Messages => match messages::from_value(Value::deserialize(d)?) {
                Ok((m, sharegpt)) => {
                    parts.messages = Some(m);
                    parts.sharegpt = sharegpt;
                    None
                }
                Err(found) => Some(found),
            },
            Field::InputTokens => match tokens_from_value(Value::deserialize(d)?) {
                Ok(t) => {
                    parts.input_tokens = Some(t);
                    None
                }
                Err(found) => Some(found),
            },
            Field::Expected => {
                parts.expected = match Value::deserialize(d)? {
                    Value::Null => None,
                    Value::String(s) => Some(s),
                    v => Some(v.to_string()),
                };
                None
            }
        })
    }
}

/// Maps an object key to the field it feeds and the template column it
/// fills (both `None`: skip the value).
struct KeySeed<'c>(&'c ResolvedColumns);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = (Option<Field>, Option<usize>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = (Option<Field>, Option<usize>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok((self.0.field_of(key), self.0.slot_of(key)))
    }
}

/// A JSON value with containers skipped rather than built: what the
/// string and number fields need, and enough to say what was found instead.
#[derive(Debug)]
enum Scalar {
    Null,
    Bool,
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
    Array,
    Object,
}

impl Scalar {
    fn describe(&self) -> String {
        match self {
            Scalar::Null => "null".to_string(),
            Scalar::Bool => "a boolean".to_string(),
            Scalar::U64(n) => format!("a number ({n})"),
            Scalar::I64(n) => format!("a number ({n})"),
            Scalar::F64(x) => format!("a number ({x})"),
            Scalar::Str(s) if s.is_empty() => "an empty string".to_string(),
            Scalar::Str(s) if is_blank(s) => "a blank string".to_string(),
            Scalar::Str(_) => "a string".to_string(),
            Scalar::Array => "an array".to_string(),
            Scalar::Object => "an object".to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
        Ok(Scalar::U64(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Scalar, E> {
        Ok(match u64::try_from(n) {
            Ok(n) => Scalar::U64(n),
            Err(_) => Scalar::I64(n),
        })
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Scalar, E> {
        Ok(Scalar::F64(x))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Array)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Object)
    }
}

/// Token ids from a JSON array of integers, or what was found instead.
pub(crate) fn tokens_from_value(v: Value) -> Result<Vec<u32>, String> {
    let Value::Array(items) = v else {
        return Err(kind(&v));
    };
    if items.is_empty() {
        return Err("an empty array".to_string());
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| format!("an array whose element {i} is {}", kind(item)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::spec::ColumnMap;
    use crate::protocol::Message;

    fn cols(map: ColumnMap) -> ResolvedColumns {
        ResolvedColumns::from_map(&map).unwrap()
    }

    fn row(text: &str, c: &ResolvedColumns) -> Row {
        let mut de = serde_json::Deserializer::from_str(text);
        let r = RowSeed(c).deserialize(&mut de).unwrap();
        de.end().unwrap();
        // Reading it as a first row (kept whole, then mapped) agrees.
        let r2 = serde_json::from_str::<FirstRow>(text).unwrap().into_row(c);
        assert_eq!(r.sample, r2.sample, "{text}");
        assert_eq!(r.seen, r2.seen);
        r
    }

    #[test]
    fn every_field_kind() {
        let c = cols(ColumnMap {
            prompt: Some("p".into()),
            system: Some("s".into()),
            input_tokens: Some("ids".into()),
            max_tokens: Some("n".into()),
            expected: Some("e".into()),
            ..ColumnMap::default()
        });
        let r = row(
            r#"{"x": {"deep": [1, {"a": null}]}, "p": "hi \"you\"\n", "s": "sys",
                "ids": [1, 2, 4294967295], "n": 64, "e": {"k": [1, 2]}}"#,
            &c,
        );
        assert_eq!(
            r.sample.unwrap(),
            Sample {
                system: Some("sys".into()),
                messages: vec![Message::user("hi \"you\"\n")],
                input_tokens: Some(vec![1, 2, 4_294_967_295]),
                max_tokens: Some(64),
                expected: Some(r#"{"k":[1,2]}"#.into()),
                ..Sample::default()
            }
        );
        assert_eq!(r.seen, 0b111101);
        // Optional fields may be null, absent, or (max_tokens) integral floats.
        let r = row(
            r#"{"p": "x", "ids": [0], "n": 128.0, "s": null, "e": null}"#,
            &c,
        );
        let s = r.sample.unwrap();
        assert_eq!(
            (s.system, s.max_tokens, s.expected),
            (None, Some(128), None)
        );
    }

    #[test]
    fn mlperf_reads_a_number_prompt_as_its_text() {
        let map = ColumnMap {
            prompt: Some("a".into()),
            expected: Some("a".into()),
            ..ColumnMap::default()
        };
        let mlperf = cols(ColumnMap {
            number_prompts: true,
            ..map.clone()
        });
        for (cell, text) in [
            ("750", "750"),
            ("-3", "-3"),
            ("2.5", "2.5"),
            ("1e20", "1e+20"),
        ] {
            let s = row(&format!(r#"{{"a": {cell}}}"#), &mlperf).sample.unwrap();
            assert_eq!(s.messages, vec![Message::user(text)], "{cell}");
            // The prompt column is the reference column too.
            assert_eq!(s.expected.as_deref(), Some(text), "{cell}");
        }
        let e = row(r#"{"a": 750}"#, &cols(map)).sample.unwrap_err();
        assert!(e.contains("found a number (750)"), "{e}");
        let e = row(r#"{"a": true}"#, &mlperf).sample.unwrap_err();
        assert!(e.contains("found a boolean"), "{e}");
    }

    #[test]
    fn wrong_types_say_what_was_found() {
        let c = cols(ColumnMap {
            prompt: Some("prompt".into()),
            max_tokens: Some("max_tokens".into()),
            ..ColumnMap::default()
        });
        for (text, want) in [
            (
                r#"{"prompt": 5}"#,
                "field 'prompt': expected a non-empty string, found a number (5)",
            ),
            (r#"{"prompt": ""}"#, "found an empty string"),
            (r#"{"prompt": " \n"}"#, "found a blank string"),
            (r#"{"prompt": ["a"]}"#, "found an array"),
            (r#"{"prompt": {"a": 1}}"#, "found an object"),
            (r#"{"prompt": null}"#, "found null"),
            (
                r#"{"id": 1}"#,
                "field 'prompt': expected a non-empty string, found nothing",
            ),
            (
                r#"{"prompt": "a", "max_tokens": 0}"#,
                "field 'max_tokens': expected a positive integer, found a number (0)",
            ),
            (
                r#"{"prompt": "a", "max_tokens": -4}"#,
                "found a number (-4)",
            ),
            (
                r#"{"prompt": "a", "max_tokens": 1.5}"#,
                "found a number (1.5)",
            ),
            (r#"{"prompt": "a", "max_tokens": "64"}"#, "found a string"),
            (
                r#"{"prompt": "a", "max_tokens": 4294967296}"#,
                "found a number (4294967296)",
            ),
            ("[1, 2]", "expected a JSON object, found an array"),
            ("\"x\"", "expected a JSON object, found a string"),
            ("null", "expected a JSON object, found null"),
            ("3", "found a number (3)"),
        ] {
            let e = row(text, &c).sample.unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn first_row_keeps_key_order() {
        let f: FirstRow =
            serde_json::from_str(r#"{"z": 1, "messages": [], "a": "x", "conversations": "no"}"#)
                .unwrap();
        assert_eq!(
            f.columns(),
            vec![
                ("z".to_string(), false),
                ("messages".to_string(), true),
                ("a".to_string(), false),
                ("conversations".to_string(), false),
            ]
        );
        let f: FirstRow = serde_json::from_str("[1, {}]").unwrap();
        assert!(f.columns().is_empty());
        let c = cols(ColumnMap {
            prompt: Some("a".into()),
            ..ColumnMap::default()
        });
        let e = f.into_row(&c).sample.unwrap_err();
        assert_eq!(e, "expected a JSON object, found an array");
    }

    #[test]
    fn token_ids_must_be_u32_integers() {
        let c = cols(ColumnMap {
            input_tokens: Some("t".into()),
            ..ColumnMap::default()
        });
        let s = row(r#"{"t": [5, 6]}"#, &c).sample.unwrap();
        assert_eq!(s.input_tokens, Some(vec![5, 6]));
        assert!(s.messages.is_empty());
        for (text, want) in [
            (r#"{"t": [1, 2.5]}"#, "element 1 is a number (2.5)"),
            (r#"{"t": [-1]}"#, "element 0 is a number (-1)"),
            (
                r#"{"t": [4294967296]}"#,
                "element 0 is a number (4294967296)",
            ),
            (r#"{"t": ["1"]}"#, "element 0 is a string"),
            (r#"{"t": []}"#, "found an empty array"),
            (r#"{"t": "1 2"}"#, "found a string"),
        ] {
            let e = row(text, &c).sample.unwrap_err();
            assert!(
                e.contains("field 't' (input_tokens)") && e.contains(want),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn messages_field_and_first_error_wins() {
        let c = cols(ColumnMap {
            messages: Some("conversations".into()),
            system: Some("sys".into()),
            ..ColumnMap::default()
        });
        let s = row(
            r#"{"conversations": [{"from": "system", "value": "S"}, {"from": "human", "value": "Q"}]}"#,
            &c,
        )
        .sample
        .unwrap();
        assert_eq!(s.system.as_deref(), Some("S"));
        assert_eq!(s.messages, vec![Message::user("Q")]);
        // Keys in sorted order, so that a built Value (which sorts them)
        // meets the same first error as the stream.
        let e = row(r#"{"conversations": 2, "sys": 1}"#, &c)
            .sample
            .unwrap_err();
        assert!(e.starts_with("field 'conversations' (messages)"), "{e}");
    }
}
