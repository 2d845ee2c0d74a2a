//! `docs/summary.schema.json`, generated from the `Summary` type with
//! schemars, so the contract cannot drift from what is written: each
//! field's doc comment is its description, and a field is required unless
//! it is left out when empty. The free-form parts (`config`, `dataset`)
//! are described by hand here, as little as a reader relies on.
//!
//! The test fails when the committed file differs;
//! `LLMLOAD_BLESS=1 cargo test --lib summary::schema` writes it anew.

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{Schema, SchemaGenerator, json_schema};

use super::Summary;

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/summary.schema.json");

/// The schema of `Summary` as serialized.
pub(super) fn generate() -> Schema {
    let settings = SchemaSettings::draft2020_12()
        .for_serialize()
        // A default says how an older document reads, not what is written.
        .with_transform(RecursiveTransform(|s: &mut Schema| {
            s.remove("default");
        }));
    let mut schema = settings.into_generator().into_root_schema_for::<Summary>();
    schema.insert(
        "$id".into(),
        "https://llmload.dev/schema/summary.schema.json".into(),
    );
    schema.insert("title".into(), "llmload summary.json".into());
    schema
}

/// `config`: the resolved profile, secrets redacted; its shape is the
/// profile's, so only what every run has is required.
pub(super) fn config(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "The resolved configuration, secrets redacted: its shape is the profile's.",
        "required": ["endpoint", "api", "model", "mode", "stream", "max_tokens", "workers"],
        "properties": {
            "endpoint": {"type": "string"},
            "api_key": {
                "description": "`<redacted>`, or the `${NAME}` the key was read from.",
                "anyOf": [
                    {"enum": ["<redacted>", null]},
                    {"type": "string", "pattern": "^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$"},
                ]
            },
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "run_length": {
                "type": "object",
                "description": "Present when the count was derived (preset mlperf, min_requests/min_duration): the first stage's request count (0 with a minimum time alone) and how it came about.",
                "required": ["requests", "rule"],
                "properties": {
                    "requests": {"type": ["integer", "null"], "minimum": 0},
                    "rule": {"type": "string"},
                }
            },
        }
    })
}

/// `dataset`: where the prompts came from; its shape is the loader's.
pub(super) fn dataset(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "Where the prompts came from: its shape is the dataset loader's.",
        "required": ["source", "samples"],
        "properties": {
            "source": {"enum": ["builtin", "file", "synthetic"]},
            "samples": {"type": "integer", "minimum": 0},
            "skipped": {"type": "integer", "minimum": 0},
            "skip_examples": {"type": "array", "items": {"type": "string"}},
        }
    })
}

/// A transform requiring `key`: for a field always written but read
/// leniently (absent from an older document).
pub(super) fn require(key: &'static str) -> impl Fn(&mut Schema) {
    move |s: &mut Schema| {
        if let Some(serde_json::Value::Array(required)) = s.get_mut("required") {
            required.push(key.into());
        } else {
            s.insert("required".into(), serde_json::json!([key]));
        }
    }
}

/// Free-form, but an object.
pub(super) fn object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "object"})
}

/// Failures by key; a key is there only when it occurred.
pub(super) fn errors(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {"type": "integer", "minimum": 1},
    })
}

/// Up to three messages per failure key.
pub(super) fn error_messages(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    })
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let mut text = serde_json::to_string_pretty(&generate()).expect("a schema serializes");
    text.push('\n');
    if std::env::var_os("LLMLOAD_BLESS").is_some() {
        std::fs::write(PATH, &text).expect("write docs/summary.schema.json");
        return;
    }
    let committed = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        committed == text,
        "docs/summary.schema.json is not the schema of `Summary`: \
         run `LLMLOAD_BLESS=1 cargo test --lib summary::schema` and commit the file"
    );
}
