//! What OpenAI chat and text completions share: response ids and the
//! `id`/`object`/`created`/`model` head of every body and chunk, the `usage`
//! object, the error object, and the `/v1/models` list. All of it is
//! appended as fixed byte strings and decimal numbers, never through `fmt`.

use super::Identity;
use super::text::push_json_str;
use crate::ascii::push_u64;

/// What the in-band error fault sends in an OpenAI stream or body.
pub(crate) const INBAND_ERROR: &[u8] =
    br#"{"error":{"message":"injected in-band error","type":"server_error","code":500}}"#;

/// Appends `{"id":"<id_prefix>W-S","object":"<object>","created":T,"model":M`.
pub(crate) fn push_id_model(out: &mut Vec<u8>, id: &Identity<'_>, id_prefix: &[u8], object: &[u8]) {
    out.extend_from_slice(b"{\"id\":\"");
    out.extend_from_slice(id_prefix);
    push_u64(out, u64::from(id.worker));
    out.push(b'-');
    push_u64(out, id.seq);
    out.extend_from_slice(b"\",\"object\":\"");
    out.extend_from_slice(object);
    out.extend_from_slice(b"\",\"created\":");
    push_u64(out, id.created);
    out.extend_from_slice(b",\"model\":");
    push_json_str(out, id.model);
}

/// Appends `"usage":{…}`; `reasoning` tokens, when there are any, are also
/// reported apart (`completion_tokens_details.reasoning_tokens`), as OpenAI
/// does for reasoning models. They are part of `completion` either way.
pub(crate) fn push_usage(out: &mut Vec<u8>, prompt: u64, completion: u64, reasoning: u32) {
    out.extend_from_slice(b"\"usage\":{\"prompt_tokens\":");
    push_u64(out, prompt);
    out.extend_from_slice(b",\"completion_tokens\":");
    push_u64(out, completion);
    out.extend_from_slice(b",\"total_tokens\":");
    push_u64(out, prompt + completion);
    if reasoning > 0 {
        out.extend_from_slice(b",\"completion_tokens_details\":{\"reasoning_tokens\":");
        push_u64(out, u64::from(reasoning));
        out.push(b'}');
    }
    out.push(b'}');
}

/// An OpenAI-style error body.
pub(crate) fn error_body(out: &mut Vec<u8>, message: &str, kind: &str, code: u16) {
    out.extend_from_slice(b"{\"error\":{\"message\":");
    push_json_str(out, message);
    out.extend_from_slice(b",\"type\":");
    push_json_str(out, kind);
    out.extend_from_slice(b",\"code\":");
    push_u64(out, u64::from(code));
    out.extend_from_slice(b"}}");
}

/// The `/v1/models` body listing `names`.
pub(crate) fn models_body(out: &mut Vec<u8>, names: &[&str], created: u64) {
    out.extend_from_slice(b"{\"object\":\"list\",\"data\":[");
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"id\":");
        push_json_str(out, name);
        out.extend_from_slice(b",\"object\":\"model\",\"created\":");
        push_u64(out, created);
        out.extend_from_slice(b",\"owned_by\":\"llmload\"}");
    }
    out.extend_from_slice(b"]}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn bodies_are_valid_json() {
        let mut out = Vec::new();
        error_body(&mut out, "bad \"thing\"", "invalid_request_error", 400);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["error"]["message"], "bad \"thing\"");
        assert_eq!(v["error"]["code"], 400);

        out.clear();
        models_body(&mut out, &["a", "b\"c"], 7);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["data"][1]["id"], "b\"c");
        assert_eq!(v["data"][0]["created"], 7);

        let v: Value = serde_json::from_slice(INBAND_ERROR).unwrap();
        assert_eq!(v["error"]["code"], 500);

        out.clear();
        out.push(b'{');
        push_usage(&mut out, 3, 5, 2);
        out.push(b'}');
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["usage"]["total_tokens"], 8);
        assert_eq!(
            v["usage"]["completion_tokens_details"]["reasoning_tokens"],
            2
        );
    }
}
