//! A request's prompt as text, for `serve --echo` and `--answers`: the
//! content of the last user message (chat, Anthropic; a string, or the
//! `text` of each part of a content array, concatenated), the `prompt` of a
//! text completion (of a batch, the first), SGLang's `text`. A prompt sent
//! as token ids reads as the ids in decimal, joined by single spaces.
//!
//! This is a second parse of a body the format's own parser has accepted,
//! and unlike that one it copies text: it runs only when a reply is taken
//! from the prompt, so the ordinary path never pays for it. It is as
//! lenient as the first parse about shapes it does not read.

use std::fmt::{self, Write};

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::Format;

/// The prompt of a request body in `format`; `""` when it has none (no
/// user message), or the parser's message when the body is not one the
/// format accepts.
pub fn extract(format: Format, body: &[u8]) -> Result<String, String> {
    let text = match format {
        Format::Chat | Format::Messages => {
            serde_json::from_slice::<Conversation>(body).map(|c| c.messages.0)
        }
        Format::Completions => serde_json::from_slice::<Completion>(body).map(|c| c.prompt.0),
        Format::Generate => serde_json::from_slice::<Generate>(body).map(|g| match g.text {
            Some(t) => t,
            None => g.input_ids.0,
        }),
    };
    text.map_err(|e| format!("invalid JSON body: {e}"))
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    messages: LastUser,
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    prompt: PromptText,
}

#[derive(Deserialize)]
struct Generate {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    input_ids: PromptText,
}

/// The content of the last message whose role is `user`.
#[derive(Default)]
struct LastUser(String);

impl<'de> Deserialize<'de> for LastUser {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LastUser;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LastUser, A::Error> {
                let mut last = String::new();
                while let Some(m) = seq.next_element::<Message>()? {
                    if m.role.0 {
                        last = m.content.0;
                    }
                }
                Ok(LastUser(last))
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    role: IsUser,
    #[serde(default)]
    content: Content,
}

/// Whether a role is `user`; any other value is not.
#[derive(Default)]
struct IsUser(bool);

impl<'de> Deserialize<'de> for IsUser {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IsUser;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a role")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<IsUser, E> {
                Ok(IsUser(s == "user"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<IsUser, E> {
                Ok(IsUser(false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<IsUser, E> {
                Ok(IsUser(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<IsUser, E> {
                Ok(IsUser(false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<IsUser, E> {
                Ok(IsUser(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<IsUser, E> {
                Ok(IsUser(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IsUser, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IsUser(false))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IsUser, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IsUser(false))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Content,
}

/// A content value as text: a string as it is, `null` as nothing, an array
/// of parts (OpenAI content parts, Anthropic blocks) as the `text` of each
/// part concatenated, a lone part object as nothing (as the word count
/// reads them).
#[derive(Default)]
struct Content(String);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, null, or an array of content parts")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Content, E> {
                Ok(Content(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Content, E> {
                Ok(Content(s))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut all = String::new();
                while let Some(p) = seq.next_element::<Part>()? {
                    all.push_str(&p.text.0);
                }
                Ok(Content(all))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// A completion prompt as text: a string as it is; an array of strings,
/// its first; token ids (flat, or the first of an array of arrays) as
/// decimal ids joined by spaces.
#[derive(Default)]
struct PromptText(String);

impl<'de> Deserialize<'de> for PromptText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PromptText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, an array of strings, or an array of token ids")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<PromptText, E> {
                Ok(PromptText(s.to_owned()))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<PromptText, E> {
                Ok(PromptText(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PromptText, A::Error> {
                let mut ids = Ids::default();
                let first = match seq.next_element::<Item>()? {
                    None => return Ok(PromptText::default()),
                    Some(Item::Id(id)) => {
                        ids.push(id);
                        while let Some(id) = seq.next_element::<u64>()? {
                            ids.push(id);
                        }
                        return Ok(PromptText(ids.0));
                    }
                    Some(Item::Text(s)) => s,
                    Some(Item::Ids(s)) => s,
                };
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(PromptText(first))
            }
        }
        d.deserialize_any(V)
    }
}

/// Decimal token ids joined by single spaces.
#[derive(Default)]
struct Ids(String);

impl Ids {
    fn push(&mut self, id: u64) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        // Writing to a String cannot fail.
        let _ = write!(self.0, "{id}");
    }
}

/// The first element of a prompt array, which decides what the array is.
enum Item {
    Text(String),
    Id(u64),
    /// An array of ids, already joined.
    Ids(String),
}

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a token id, or an array of token ids")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Item, E> {
                Ok(Item::Text(s.to_owned()))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Item, E> {
                Ok(Item::Id(n))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item, A::Error> {
                let mut ids = Ids::default();
                while let Some(id) = seq.next_element::<u64>()? {
                    ids.push(id);
                }
                Ok(Item::Ids(ids.0))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(format: Format, body: &str) -> String {
        extract(format, body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    #[test]
    fn chat_takes_the_last_user_message() {
        let body = r#"{"model":"m","messages":[
            {"role":"system","content":"be terse"},
            {"role":"user","content":"first question"},
            {"role":"assistant","content":"an answer"},
            {"content":[{"type":"text","text":"two "},{"type":"image_url","image_url":{"url":"x"}},
                        {"type":"text","text":"parts\n"}],"role":"user"},
            {"role":"assistant","content":null,"tool_calls":[]}]}"#;
        assert_eq!(p(Format::Chat, body), "two parts\n");
        let escaped = r#"{"messages":[{"role":"user","content":"q\"uote\\ \u00e9\u65e5 \ud83e\udd80\n\ttab"}]}"#;
        assert_eq!(p(Format::Chat, escaped), "q\"uote\\ é日 🦀\n\ttab");
        assert_eq!(
            p(
                Format::Chat,
                r#"{"messages":[{"role":"system","content":"x"}]}"#
            ),
            ""
        );
        assert_eq!(
            p(
                Format::Chat,
                r#"{"messages":[{"role":"user","content":null}]}"#
            ),
            ""
        );
        let odd = r#"{"messages":[{"role":"us\u0065r","content":"esc"},{"role":7,"content":"no"},
            {"role":["user"],"content":"no"},{"role":{"a":1},"content":"no"}]}"#;
        assert_eq!(p(Format::Chat, odd), "esc");
        assert_eq!(
            p(
                Format::Chat,
                r#"{"messages":[{"role":"user","content":{"type":"text"}}]}"#
            ),
            ""
        );
    }

    #[test]
    fn anthropic_ignores_the_system_prompt() {
        let body = r#"{"system":"sys words","max_tokens":5,"messages":[
            {"role":"user","content":[{"type":"text","text":"what is 2+2?"}]}]}"#;
        assert_eq!(p(Format::Messages, body), "what is 2+2?");
    }

    #[test]
    fn completions_prompt_in_every_shape() {
        assert_eq!(p(Format::Completions, r#"{"prompt":"a  b\n"}"#), "a  b\n");
        assert_eq!(
            p(Format::Completions, r#"{"prompt":["first","second"]}"#),
            "first"
        );
        assert_eq!(
            p(Format::Completions, r#"{"prompt":[101, 7, 0]}"#),
            "101 7 0"
        );
        assert_eq!(p(Format::Completions, r#"{"prompt":[[5,6],[7]]}"#), "5 6");
        assert_eq!(p(Format::Completions, r#"{"prompt":[]}"#), "");
    }

    #[test]
    fn sglang_text_or_ids() {
        assert_eq!(
            p(Format::Generate, r#"{"text":"x y","sampling_params":{}}"#),
            "x y"
        );
        assert_eq!(p(Format::Generate, r#"{"input_ids":[3,2,1]}"#), "3 2 1");
    }

    #[test]
    fn bad_bodies_are_errors() {
        assert!(extract(Format::Chat, b"{").is_err());
        assert!(extract(Format::Completions, br#"{"prompt":[1,"x"]}"#).is_err());
    }
}
