//! Conversation columns normalized to `Message`s: OpenAI-style
//! `{role, content}` where content is a string or an array of text parts,
//! and ShareGPT-style `{from, value}` (`human` → user, `gpt` → assistant),
//! since datasets named `conversations` are usually ShareGPT. Conversations
//! are small next to prompts, so they go through a `serde_json::Value`
//! rather than a hand-written visitor.

use serde_json::Value;

use crate::protocol::Message;

/// How a JSON value is described in "found …" errors.
pub(crate) fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(_) => "a boolean".to_string(),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) if s.is_empty() => "an empty string".to_string(),
        Value::String(_) => "a string".to_string(),
        Value::Array(a) if a.is_empty() => "an empty array".to_string(),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// The messages of `v` and whether any was ShareGPT's `{from, value}`
/// (`Parts::sharegpt`), or what was found instead (for "found …").
pub(crate) fn from_value(v: Value) -> Result<(Vec<Message>, bool), String> {
    let items = match v {
        Value::Array(items) if !items.is_empty() => items,
        other => return Err(kind(&other)),
    };
    let mut sharegpt = false;
    let messages = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let (m, from) = message(item).map_err(|e| format!("message {i} {e}"))?;
            sharegpt |= from;
            Ok(m)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((messages, sharegpt))
}

/// One message, and whether its role was ShareGPT's `from`.
fn message(item: Value) -> Result<(Message, bool), String> {
    let Value::Object(mut obj) = item else {
        return Err(format!("being {}", kind(&item)));
    };
    let (role, from) = match obj.remove("role") {
        Some(r) => (Some(r), false),
        None => (obj.remove("from"), true),
    };
    let role = match role {
        Some(Value::String(r)) if !r.is_empty() => match r.as_str() {
            "human" => "user".to_string(),
            "gpt" | "chatgpt" | "bard" | "model" => "assistant".to_string(),
            _ => r,
        },
        Some(other) => return Err(format!("with a role that is {}", kind(&other))),
        None => return Err("without a role (or from)".to_string()),
    };
    let content = match obj.remove("content").or_else(|| obj.remove("value")) {
        Some(Value::String(s)) => s,
        // Assistant turns that only call tools carry null content.
        Some(Value::Null) => String::new(),
        Some(Value::Array(parts)) => text_parts(parts)?,
        Some(other) => return Err(format!("with content that is {}", kind(&other))),
        None => return Err("without content (or value)".to_string()),
    };
    Ok((Message { role, content }, from))
}

/// Concatenates `[{type: "text", text}]` parts (bare strings too).
fn text_parts(parts: Vec<Value>) -> Result<String, String> {
    let mut out = String::new();
    for (j, part) in parts.into_iter().enumerate() {
        match part {
            Value::String(s) => out.push_str(&s),
            Value::Object(p) => {
                match p.get("type") {
                    None => {}
                    Some(Value::String(t)) if t == "text" => {}
                    Some(Value::String(t)) => {
                        return Err(format!(
                            "with content part {j} of type '{t}' (only text parts are supported)"
                        ));
                    }
                    Some(other) => {
                        return Err(format!(
                            "with content part {j} whose type is {}",
                            kind(other)
                        ));
                    }
                }
                match p.get("text") {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(other) => {
                        return Err(format!(
                            "with content part {j} whose text is {}",
                            kind(other)
                        ));
                    }
                    None => return Err(format!("with content part {j} without text")),
                }
            }
            other => return Err(format!("with content part {j} being {}", kind(&other))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(role: &str, content: &str) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }

    #[test]
    fn openai_and_sharegpt_shapes() {
        let v = json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": null},
            {"from": "human", "value": "q"},
            {"from": "gpt", "value": "r"},
            {"role": "tool", "content": ["x", {"text": "y"}]},
        ]);
        assert_eq!(
            from_value(v).unwrap(),
            (
                vec![
                    m("system", "sys"),
                    m("user", "ab"),
                    m("assistant", ""),
                    m("user", "q"),
                    m("assistant", "r"),
                    m("tool", "xy"),
                ],
                true
            )
        );
        let openai = json!([{"role": "user", "content": "a"}]);
        assert_eq!(from_value(openai).unwrap(), (vec![m("user", "a")], false));
    }

    #[test]
    fn what_was_found_instead() {
        for (v, want) in [
            (json!("hi"), "a string"),
            (json!([]), "an empty array"),
            (json!({"role": "user"}), "an object"),
            (json!([5]), "message 0 being a number (5)"),
            (
                json!([{"content": "x"}]),
                "message 0 without a role (or from)",
            ),
            (
                json!([{"role": 1, "content": "x"}]),
                "message 0 with a role that is a number (1)",
            ),
            (json!([{"role": "user"}]), "message 0 without content"),
            (
                json!([{"role": "user", "content": "a"}, {"role": "user", "content": 3}]),
                "message 1 with content that is a number (3)",
            ),
            (
                json!([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]),
                "message 0 with content part 0 of type 'image_url'",
            ),
            (
                json!([{"role": "user", "content": [{"type": "text"}]}]),
                "content part 0 without text",
            ),
        ] {
            let e = from_value(v.clone()).unwrap_err();
            assert!(e.contains(want), "{v}: {e}");
        }
    }
}
