//! A shard's summary.json as `llmload merge` reads it: no panic, no
//! allocation sized by what the file declares, and a shard that passes
//! the checks merges with itself without any count wrapping.
//!
//! The first byte picks the mode. Even: the rest is the file's text.
//! Odd: the rest mutates a real shard's summary (the committed seed):
//! each 11 bytes pick a number in its `state` (a u128 sum's decimal
//! string too) and what to put there — 0, u32::MAX, u64::MAX, 2^44 + 1,
//! 2^62 + 1, u128::MAX, the value doubled, or the next 8 bytes. The
//! shard is cut to what `read` decodes (tool, version, stages, state);
//! `seeds/merge_state/state-only.json` is that cut as text (even mode).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use llmload::merge_state_fuzzing::read;
use serde_json::Value;

const SEED: &str = include_str!("../seeds/merge_state/shard.json");

/// The paths of every number (and decimal string) under `state`.
fn leaves(v: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                path.push(Step::Key(k.clone()));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                path.push(Step::Index(i));
                leaves(x, path, out);
                path.pop();
            }
        }
        Value::Number(_) => out.push(path.clone()),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            out.push(path.clone())
        }
        _ => {}
    }
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

fn seed() -> &'static (Value, Vec<Vec<Step>>) {
    static SEEDED: OnceLock<(Value, Vec<Vec<Step>>)> = OnceLock::new();
    SEEDED.get_or_init(|| {
        let full: Value = serde_json::from_str(SEED).expect("the seed is JSON");
        // Only what `read` decodes: the shard's report fields are four
        // fifths of its bytes, printed and parsed again on every run.
        let doc = serde_json::json!({
            "tool": full["tool"],
            "version": full["version"],
            "stages": [{}],
            "state": full["state"],
        });
        let mut out = Vec::new();
        leaves(&doc["state"], &mut vec![Step::Key("state".into())], &mut out);
        (doc, out)
    })
}

fn mutate(data: &[u8]) -> String {
    let (doc, paths) = seed();
    let mut doc = doc.clone();
    for chunk in data.chunks_exact(11) {
        let path = &paths[usize::from(u16::from_le_bytes([chunk[0], chunk[1]])) % paths.len()];
        let raw = u64::from_le_bytes(chunk[3..11].try_into().unwrap());
        let v = at(&mut doc, path);
        let decimal = v.is_string();
        let old: u128 = match &*v {
            Value::String(s) => s.parse().unwrap_or(0),
            n => n.as_u64().map_or(0, u128::from),
        };
        let new: u128 = match chunk[2] % 8 {
            0 => 0,
            1 => u128::from(u32::MAX),
            2 => u128::from(u64::MAX),
            3 => (1 << 44) + 1,
            4 => (1 << 62) + 1,
            5 => u128::MAX,
            6 => old.saturating_mul(2),
            _ => u128::from(raw),
        };
        *v = if decimal {
            Value::String(new.to_string())
        } else {
            Value::from(u64::try_from(new).unwrap_or(u64::MAX))
        };
    }
    doc.to_string()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = if mode % 2 == 1 {
        mutate(rest)
    } else {
        let Ok(text) = std::str::from_utf8(rest) else {
            return;
        };
        text.to_string()
    };
    if let Ok(r) = read(&text)
        && r.consistent
    {
        assert_eq!(r.merged_completed, 2 * r.completed, "{text}");
        assert_eq!(r.merged_failed, 2 * r.failed, "{text}");
    }
});
