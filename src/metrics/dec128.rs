//! 128-bit sums as decimal strings, for `#[serde(with = "dec128")]`: JSON
//! readers (JavaScript, Python's `json` into floats, jq) lose integers past
//! 2^53, and an exact sum of squared nanoseconds passes that within seconds
//! of a run.

use serde::{Deserialize, Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
    let text = String::deserialize(d)?;
    text.parse()
        .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a decimal integer")))
}

/// The schema of such a field: a string of decimal digits.
#[cfg(test)]
pub(crate) fn schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "pattern": "^[0-9]+$",
        "description": "An unsigned 128-bit integer in decimal (JSON readers lose integers past 2^53).",
    })
}
