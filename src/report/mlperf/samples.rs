//! `sample_idx_map.json`: `{"performance": {sample_uuid: dataset row}}`
//! for every measured request, and one such map per accuracy dataset (by
//! its name): the join MLPerf's tools make between `events.jsonl` and the
//! dataset. A request whose prompt is not a dataset's row (synthetic, a
//! pool, a later turn) maps to `null`.

use crate::ascii::push_u64;
use crate::report::events::SampleRow;
use crate::uuid::write_hex;

/// The file, indented as the reference writes it, entries in completion
/// order: the performance phase's map (`None`: it did not run), then each
/// accuracy dataset's. Written by hand: a million entries through a JSON
/// tree would cost more than the rest of the report.
pub(crate) fn render(
    performance: Option<&[SampleRow]>,
    accuracy: &[(String, Vec<SampleRow>)],
) -> Vec<u8> {
    let total =
        performance.map_or(0, <[_]>::len) + accuracy.iter().map(|(_, r)| r.len()).sum::<usize>();
    let mut out = Vec::with_capacity(64 + total * 48);
    out.push(b'{');
    let phases = performance
        .map(|r| ("performance", r))
        .into_iter()
        .chain(accuracy.iter().map(|(name, r)| (name.as_str(), &r[..])));
    for (i, (name, rows)) in phases.enumerate() {
        out.extend_from_slice(if i == 0 { b"\n  " } else { b",\n  " });
        out.extend_from_slice(
            serde_json::to_string(name)
                .expect("a string serializes")
                .as_bytes(),
        );
        out.extend_from_slice(b": ");
        map(&mut out, rows);
    }
    out.extend_from_slice(b"\n}\n");
    out
}

/// One phase's `{uuid: row}` object.
fn map(out: &mut Vec<u8>, rows: &[SampleRow]) {
    out.push(b'{');
    let mut hex = [0u8; 32];
    for (i, (id, row)) in rows.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n    \"" } else { b",\n    \"" });
        write_hex(id, &mut hex);
        out.extend_from_slice(&hex);
        out.extend_from_slice(b"\": ");
        match row {
            Some(r) => push_u64(out, u64::from(*r)),
            None => out.extend_from_slice(b"null"),
        }
    }
    if !rows.is_empty() {
        out.extend_from_slice(b"\n  ");
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_map_of_hex_ids_to_rows() {
        let rows = [([0xab; 16], Some(776)), ([1; 16], None)];
        let v: Value = serde_json::from_slice(&render(Some(&rows), &[])).unwrap();
        assert_eq!(
            v,
            json!({"performance": {
                "abababababababababababababababab": 776,
                "01010101010101010101010101010101": null,
            }})
        );
        let empty: Value = serde_json::from_slice(&render(Some(&[]), &[])).unwrap();
        assert_eq!(empty, json!({"performance": {}}));
        let acc = vec![("gpqa".to_string(), vec![([2; 16], Some(3))])];
        let both: Value = serde_json::from_slice(&render(Some(&rows[..1]), &acc)).unwrap();
        assert_eq!(
            both,
            json!({"performance": {"abababababababababababababababab": 776},
                   "gpqa": {"02020202020202020202020202020202": 3}})
        );
        let only: Value = serde_json::from_slice(&render(None, &acc)).unwrap();
        assert_eq!(
            only,
            json!({"gpqa": {"02020202020202020202020202020202": 3}})
        );
    }
}
