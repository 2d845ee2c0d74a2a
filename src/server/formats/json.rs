//! Serde pieces the request parsers share. Each reduces a part of a request
//! body to the number the server needs while it is being parsed — a word
//! count, a message count, a token-id count — so no request builds a tree
//! of JSON values or copies prompt text; only a model name with JSON
//! escapes in it is copied.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::text::count_words;

/// A model name borrowed from the body when it has no escapes (serde's
/// derived `Cow` support inside `Option` would always copy).
pub(crate) struct Model<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Model<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a str>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Model<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model name string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Model(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Model(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// An array of messages, reduced while parsing to a count and the word
/// total of their contents.
#[derive(Default)]
pub(crate) struct Messages {
    pub count: u32,
    pub words: u64,
}

impl<'de> Deserialize<'de> for Messages {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Messages;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of messages")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Messages, A::Error> {
                let mut m = Messages::default();
                while let Some(msg) = seq.next_element::<Message>()? {
                    m.count = m.count.saturating_add(1);
                    m.words += msg.content.0;
                }
                Ok(m)
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Words,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Words,
}

/// Word count of a content value: a string, `null`, or an array of parts
/// (OpenAI content parts and Anthropic content blocks alike), counting each
/// part's `text`.
#[derive(Default)]
pub(crate) struct Words(pub u64);

impl<'de> Deserialize<'de> for Words {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Words;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, null, or an array of content parts")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Words, E> {
                Ok(Words(count_words(s)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Words, E> {
                Ok(Words(0))
            }
            fn visit_none<E: de::Error>(self) -> Result<Words, E> {
                Ok(Words(0))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Words, A::Error> {
                let mut n = 0;
                while let Some(p) = seq.next_element::<Part>()? {
                    n += p.text.0;
                }
                Ok(Words(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Words, A::Error> {
                // A single part object where an array was expected: accepted
                // leniently, counting nothing, rather than failing the request.
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Words(0))
            }
        }
        d.deserialize_any(V)
    }
}

/// Word count of a value that must be a string.
pub(crate) struct Text(pub u64);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string (batched requests are not supported)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text, E> {
                Ok(Text(count_words(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Length of a flat array of token ids (non-negative integers).
pub(crate) struct TokenIds(pub u64);

impl<'de> Deserialize<'de> for TokenIds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TokenIds;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of token ids (batched requests are not supported)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TokenIds, A::Error> {
                let mut n = 0;
                while seq.next_element::<u64>()?.is_some() {
                    n += 1;
                }
                Ok(TokenIds(n))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A text-completion `prompt`: a string (its words), an array of strings
/// (the first one's words: a batch is answered for its first prompt only),
/// an array of token ids (their number), or an array of such arrays (the
/// first one's length).
pub(crate) struct Prompt(pub u64);

impl<'de> Deserialize<'de> for Prompt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Prompt;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, an array of strings, or an array of token ids")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Prompt, E> {
                Ok(Prompt(count_words(s)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Prompt, A::Error> {
                let Some(first) = seq.next_element::<PromptItem>()? else {
                    return Ok(Prompt(0));
                };
                match first {
                    PromptItem::Id => {
                        let mut n = 1;
                        while seq.next_element::<u64>()?.is_some() {
                            n += 1;
                        }
                        Ok(Prompt(n))
                    }
                    PromptItem::Text(n) | PromptItem::Ids(n) => {
                        while seq.next_element::<IgnoredAny>()?.is_some() {}
                        Ok(Prompt(n))
                    }
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// The first element of a prompt array, which decides what the array is.
enum PromptItem {
    Text(u64),
    Id,
    Ids(u64),
}

impl<'de> Deserialize<'de> for PromptItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PromptItem;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a token id, or an array of token ids")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<PromptItem, E> {
                Ok(PromptItem::Text(count_words(s)))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<PromptItem, E> {
                Ok(PromptItem::Id)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<PromptItem, A::Error> {
                let ids = TokenIds::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(PromptItem::Ids(ids.0))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(json: &str) -> Result<u64, String> {
        serde_json::from_str::<Prompt>(json)
            .map(|p| p.0)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn prompts_of_every_shape() {
        assert_eq!(prompt(r#""one two  three""#), Ok(3));
        assert_eq!(prompt(r#"["a b", "c d e f"]"#), Ok(2));
        assert_eq!(prompt("[1, 2, 3, 4]"), Ok(4));
        assert_eq!(prompt("[[5, 6], [7]]"), Ok(2));
        assert_eq!(prompt("[]"), Ok(0));
        assert!(prompt("[1, \"x\"]").is_err());
        assert!(prompt("[-1]").is_err());
        assert!(prompt("7").is_err());
        assert!(prompt("{}").is_err());
    }

    #[test]
    fn token_ids_and_text() {
        assert_eq!(serde_json::from_str::<TokenIds>("[1,2,3]").unwrap().0, 3);
        assert!(serde_json::from_str::<TokenIds>("[[1],[2]]").is_err());
        assert_eq!(serde_json::from_str::<Text>(r#""a b""#).unwrap().0, 2);
        assert!(serde_json::from_str::<Text>(r#"["a b"]"#).is_err());
    }

    #[test]
    fn messages_count_words_in_every_content_shape() {
        let m: Messages = serde_json::from_str(
            r#"[{"role":"user","content":"a b"},
                {"role":"user","content":[{"type":"text","text":"c"},{"type":"image"}]},
                {"role":"assistant","content":null},
                {"role":"user","content":{"type":"text","text":"ignored"}}]"#,
        )
        .unwrap();
        assert_eq!((m.count, m.words), (4, 3));
    }
}
