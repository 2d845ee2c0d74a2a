//! Profile values with more than one JSON shape: durations (`"60s"`,
//! `"250ms"` or a number of seconds), sizes (`"4MiB"` or a number of
//! bytes), turns (a number or `{"min", "max"}`),
//! and whole numbers written without a trailing `.0`. Each reads every shape
//! and writes the shortest one, so a written profile reads like a
//! hand-written one.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::config::bytes::{format_bytes, parse_bytes};
use crate::config::duration::{format_duration, parse_duration};

/// A duration written as `"60s"`, `"250ms"`, `"1.5m"` or a number of
/// seconds; written back in the shortest exact unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HumanDuration(pub Duration);

/// A size in bytes written as `"4MiB"`, `"512KiB"` or a number of bytes;
/// written back in the largest exact unit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HumanBytes(pub u64);

/// Turns per conversation: a fixed number, or `{"min": a, "max": b}` drawn
/// uniformly per conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Turns {
    Fixed(u32),
    Range { min: u32, max: u32 },
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"60s\" or \"250ms\", or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HumanDuration, E> {
                parse_duration(s).map(HumanDuration).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<HumanDuration, E> {
                Ok(HumanDuration(Duration::from_secs(n)))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<HumanDuration, E> {
                u64::try_from(n)
                    .map(|n| HumanDuration(Duration::from_secs(n)))
                    .map_err(|_| E::custom(format!("{n}: a duration cannot be negative")))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<HumanDuration, E> {
                Duration::try_from_secs_f64(x)
                    .map(HumanDuration)
                    .map_err(|_| E::custom(format!("{x}: expected a number of seconds ≥ 0")))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for HumanBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HumanBytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as \"4MiB\" or \"512KiB\", or a number of bytes")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<HumanBytes, E> {
                parse_bytes(s).map(HumanBytes).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<HumanBytes, E> {
                Ok(HumanBytes(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<HumanBytes, E> {
                u64::try_from(n)
                    .map(HumanBytes)
                    .map_err(|_| E::custom(format!("{n}: a size cannot be negative")))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for HumanBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnBounds {
    min: u32,
    max: u32,
}

impl<'de> Deserialize<'de> for Turns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Turns;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of turns or {\"min\": a, \"max\": b}")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Turns, E> {
                u32::try_from(n)
                    .map(Turns::Fixed)
                    .map_err(|_| E::custom(format!("{n} turns: too many")))
            }
            // Delegating to a derived struct keeps serde_path_to_error's
            // key tracking, so `turns.mni` is named as such.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Turns, A::Error> {
                let b = TurnBounds::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Turns::Range {
                    min: b.min,
                    max: b.max,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Turns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match *self {
            Turns::Fixed(n) => s.serialize_u32(n),
            Turns::Range { min, max } => {
                let mut st = s.serialize_struct("Turns", 2)?;
                st.serialize_field("min", &min)?;
                st.serialize_field("max", &max)?;
                st.end()
            }
        }
    }
}

/// Writes whole numbers without a trailing `.0`, so a written profile reads
/// like a hand-written one (`"rate": 50`).
pub(crate) fn ser_num<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match *v {
        Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => s.serialize_some(&(x as i64)),
        Some(x) => s.serialize_some(&x),
        None => s.serialize_none(),
    }
}

/// A field that takes text or a bare number (`start_at`: RFC 3339 or Unix
/// seconds), kept as text for the one parser to read.
pub(crate) fn text_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(de::Error::custom(format!(
                "expected a string or a number, found {other}"
            )));
        }
    })
}
