//! `sample_idx_map.json`: `{"performance": {sample_uuid: dataset row}}`
//! for every measured request, the join MLPerf's tools make between
//! `events.jsonl` and the dataset. A request whose prompt is not a
//! dataset's row (synthetic, a pool, a later turn) maps to `null`.

use crate::ascii::push_u64;
use crate::report::events::SampleRow;
use crate::uuid::write_hex;

/// The file, indented as the reference writes it, entries in completion
/// order. Written by hand: a million entries through a JSON tree would cost
/// more than the rest of the report.
pub(crate) fn render(rows: &[SampleRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + rows.len() * 48);
    out.extend_from_slice(b"{\n  \"performance\": {");
    let mut hex = [0u8; 32];
    for (i, (id, row)) in rows.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"\n    \"" } else { b",\n    \"" });
        write_hex(id, &mut hex);
        out.extend_from_slice(&hex);
        out.extend_from_slice(b"\": ");
        match row {
            Some(r) => push_u64(&mut out, u64::from(*r)),
            None => out.extend_from_slice(b"null"),
        }
    }
    if !rows.is_empty() {
        out.extend_from_slice(b"\n  ");
    }
    out.extend_from_slice(b"}\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_map_of_hex_ids_to_rows() {
        let rows = [([0xab; 16], Some(776)), ([1; 16], None)];
        let v: Value = serde_json::from_slice(&render(&rows)).unwrap();
        assert_eq!(
            v,
            json!({"performance": {
                "abababababababababababababababab": 776,
                "01010101010101010101010101010101": null,
            }})
        );
        let empty: Value = serde_json::from_slice(&render(&[])).unwrap();
        assert_eq!(empty, json!({"performance": {}}));
    }
}
