//! The column mapping resolved against a file: which column feeds which
//! sample field, the prompt column found by name when none is mapped, and
//! the assembly of one row's fields into a `Sample`. Detection looks at the
//! first valid row only (the header in CSV), so it costs nothing per row;
//! a file whose rows disagree about their columns gets per-row errors
//! instead of a guess.

use crate::protocol::Message;

use super::Sample;
use super::spec::ColumnMap;
use super::template::Template;

/// Names tried, in this order, for the prompt when no column is mapped
/// (the last three are MLPerf's).
pub(crate) const PROMPT_NAMES: [&str; 10] = [
    "prompt",
    "text",
    "text_input",
    "input",
    "question",
    "query",
    "instruction",
    "user_prompt",
    "input_text",
    "problem",
];

/// The system prompt's column when none is mapped (MLPerf's name).
pub(crate) const SYSTEM_NAME: &str = "system_prompt";

/// Names accepted as a conversation when no column is mapped (when they
/// hold message arrays).
pub(crate) const MESSAGE_NAMES: [&str; 2] = ["messages", "conversations"];

/// The sample fields a column can feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Prompt,
    Messages,
    InputTokens,
    System,
    MaxTokens,
    Expected,
}

impl Field {
    pub const ALL: [Field; 6] = [
        Field::Prompt,
        Field::Messages,
        Field::InputTokens,
        Field::System,
        Field::MaxTokens,
        Field::Expected,
    ];

    /// The `--dataset` key that maps it.
    pub fn key(self) -> &'static str {
        match self {
            Field::Prompt => "prompt",
            Field::Messages => "messages",
            Field::InputTokens => "input_tokens",
            Field::System => "system",
            Field::MaxTokens => "max_tokens",
            Field::Expected => "expected",
        }
    }

    /// What a valid value looks like, for error messages.
    pub fn expected(self) -> &'static str {
        match self {
            Field::Prompt => "a non-empty string",
            Field::Messages => "a non-empty array of {role, content} messages",
            Field::InputTokens => "a non-empty array of token ids (integers 0..=4294967295)",
            Field::System => "a string",
            Field::MaxTokens => "a positive integer",
            Field::Expected => "a value",
        }
    }

    /// This field's bit in a seen-fields mask.
    pub fn bit(self) -> u8 {
        1 << self as u8
    }

    /// Whether a row must have it (the prompt source) or may leave it out.
    fn required(self) -> bool {
        matches!(self, Field::Prompt | Field::Messages | Field::InputTokens)
    }
}

/// Which column each field reads, after detection. Holds at least one of
/// prompt, messages, input_tokens and a template, never two of prompt,
/// messages and a template, and no field column twice (a template may read
/// a column that also feeds a field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedColumns {
    names: [Option<String>; 6],
    template: Option<Template>,
    /// `sharegpt=whole`: ShareGPT rows are sent as recorded.
    sharegpt_whole: bool,
    /// The prompt column is also the reference answer's.
    expected_from_prompt: bool,
    /// A number in the prompt column is its text (`ColumnMap::number_prompts`).
    number_prompts: bool,
}

impl ResolvedColumns {
    /// The mapping as given, when it names a prompt source; `None` when the
    /// prompt column must be found in the file.
    pub fn from_map(map: &ColumnMap) -> Option<ResolvedColumns> {
        Self::build(map, None)
    }

    /// `from_map`, with `template` (if any) as the prompt source.
    fn build(map: &ColumnMap, template: Option<&Template>) -> Option<ResolvedColumns> {
        let prompt_sources = [
            map.prompt.is_some(),
            map.messages.is_some(),
            template.is_some(),
        ];
        if !prompt_sources.contains(&true) && map.input_tokens.is_none() {
            return None;
        }
        if prompt_sources.iter().filter(|s| **s).count() > 1 {
            return None;
        }
        // A column is read into one field; the reference copied from the
        // prompt needs no column of its own.
        let expected_from_prompt = map.expected.is_some() && map.expected == map.prompt;
        let names = [
            map.prompt.clone(),
            map.messages.clone(),
            map.input_tokens.clone(),
            map.system.clone(),
            map.max_tokens.clone(),
            map.expected.clone().filter(|_| !expected_from_prompt),
        ];
        for (i, a) in names.iter().enumerate() {
            if a.is_some() && names[..i].contains(a) {
                return None;
            }
        }
        Some(ResolvedColumns {
            names,
            template: template.cloned(),
            sharegpt_whole: map.sharegpt_whole,
            expected_from_prompt,
            number_prompts: map.number_prompts,
        })
    }

    /// Finds the prompt column among `found` — the first row's columns, each
    /// with whether it holds an array — unless the mapping or a template
    /// already names a prompt source. Exactly one common name must be present.
    pub fn detect(
        map: &ColumnMap,
        template: Option<&Template>,
        found: &[(String, bool)],
        file: &str,
    ) -> Result<ResolvedColumns, String> {
        let with_system;
        let map = if map.system.is_none()
            && map.mapped().all(|(_, c)| c != SYSTEM_NAME)
            && found.iter().any(|(c, array)| c == SYSTEM_NAME && !*array)
        {
            with_system = ColumnMap {
                system: Some(SYSTEM_NAME.to_string()),
                ..map.clone()
            };
            &with_system
        } else {
            map
        };
        if let Some(c) = ResolvedColumns::build(map, template) {
            return Ok(c);
        }
        if template.is_some() {
            return Err(format!(
                "{file}: a template cannot be combined with prompt= or messages="
            ));
        }
        let taken: Vec<&str> = map.mapped().map(|(_, c)| c).collect();
        let free = |name: &str| !taken.contains(&name);
        let mut hits: Vec<(Field, &str)> = Vec::new();
        for name in PROMPT_NAMES {
            if free(name) && found.iter().any(|(c, _)| c == name) {
                hits.push((Field::Prompt, name));
            }
        }
        for name in MESSAGE_NAMES {
            if free(name) && found.iter().any(|(c, array)| c == name && *array) {
                hits.push((Field::Messages, name));
            }
        }
        let columns = if found.is_empty() {
            "none".to_string()
        } else {
            found
                .iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let names = PROMPT_NAMES.join(", ");
        match hits[..] {
            [(field, name)] => {
                let mut m = map.clone();
                *match field {
                    Field::Prompt => &mut m.prompt,
                    _ => &mut m.messages,
                } = Some(name.to_string());
                ResolvedColumns::from_map(&m)
                    .ok_or_else(|| format!("{file}: column mapping is inconsistent"))
            }
            [] => {
                // A prompt-like column mapped to another field is why none
                // was found: say so rather than list it as missing.
                let elsewhere: Vec<String> = map
                    .mapped()
                    .filter(|(_, c)| {
                        found.iter().any(|(f, _)| f == c)
                            && (PROMPT_NAMES.contains(c) || MESSAGE_NAMES.contains(c))
                    })
                    .map(|(k, c)| format!("'{c}' is mapped to {k}={c}"))
                    .collect();
                Err(if elsewhere.is_empty() {
                    format!(
                        "{file}: no prompt column among {names} (or messages/conversations \
                         holding message arrays) — columns found: {columns}; map one with \
                         prompt=COL or messages=COL"
                    )
                } else {
                    format!(
                        "{file}: no column left for the prompt: {} — columns found: \
                         {columns}; name the prompt column with prompt=COL (or messages=COL)",
                        elsewhere.join(", ")
                    )
                })
            }
            _ => {
                let several: Vec<&str> = hits.iter().map(|(_, n)| *n).collect();
                Err(format!(
                    "{file}: several possible prompt columns ({}) — columns found: {columns}; \
                     choose one with prompt=COL or messages=COL",
                    several.join(", ")
                ))
            }
        }
    }

    /// The column `field` reads, if any.
    pub fn name(&self, field: Field) -> Option<&str> {
        self.names[field as usize].as_deref()
    }

    /// A number in the prompt column is read as its text.
    pub fn number_prompts(&self) -> bool {
        self.number_prompts
    }

    /// The prompt template, if the prompt is built from columns.
    pub fn template(&self) -> Option<&Template> {
        self.template.as_ref()
    }

    /// Every column a row is read from (fields, then template columns), each
    /// once.
    pub fn columns(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.names.iter().flatten().map(String::as_str).collect();
        for n in self.template.iter().flat_map(|t| t.names()) {
            if !all.contains(&n.as_str()) {
                all.push(n);
            }
        }
        all
    }

    /// The template column `name` fills, if any.
    pub fn slot_of(&self, name: &str) -> Option<usize> {
        self.template
            .as_ref()?
            .names()
            .iter()
            .position(|n| n == name)
    }

    /// The error for a row whose template column `slot` has no value.
    pub fn template_error(&self, slot: usize) -> String {
        let name = self
            .template
            .as_ref()
            .and_then(|t| t.names().get(slot))
            .map_or("", String::as_str);
        format!("template column '{name}': no such field in this row")
    }

    /// The field column `name` feeds, if any.
    pub fn field_of(&self, name: &str) -> Option<Field> {
        Field::ALL
            .into_iter()
            .find(|f| self.names[*f as usize].as_deref() == Some(name))
    }

    /// The mapped fields a row may leave out, with their columns.
    pub fn optional(&self) -> impl Iterator<Item = (Field, &str)> {
        Field::ALL
            .into_iter()
            .filter(|f| !f.required())
            .filter_map(|f| self.name(f).map(|n| (f, n)))
    }

    /// `field 'col': expected …, found {found}` — the column as named in the
    /// file, with the role it plays when that differs.
    pub fn field_error(&self, field: Field, found: &str) -> String {
        let name = self.name(field).unwrap_or(field.key());
        let role = if name == field.key() {
            String::new()
        } else {
            format!(" ({})", field.key())
        };
        format!(
            "field '{name}'{role}: expected {}, found {found}",
            field.expected()
        )
    }
}

/// One row's fields, converted but not yet checked as a whole.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub prompt: Option<String>,
    pub messages: Option<Vec<Message>>,
    pub input_tokens: Option<Vec<u32>>,
    pub system: Option<String>,
    pub max_tokens: Option<u32>,
    pub expected: Option<String>,
    /// The messages were ShareGPT's `{from, value}`.
    pub sharegpt: bool,
}

/// Tokens a ShareGPT reply is taken to be per word, when it sets a row's
/// output length: English text runs about four tokens to three words in
/// the common BPE vocabularies.
const TOKENS_PER_WORD: f64 = 4.0 / 3.0;

/// The output length a recorded reply stands for: its words × 4/3,
/// rounded up, at least 1.
pub(crate) fn reply_tokens(reply: &str) -> u32 {
    let words = reply.split_whitespace().count() as f64;
    ((words * TOKENS_PER_WORD).ceil() as u32).max(1)
}

impl Parts {
    /// The sample, or the first required field the row lacks. A leading
    /// system message becomes the sample's system prompt unless the row
    /// already has one from a system column.
    pub(crate) fn finish(self, cols: &ResolvedColumns) -> Result<Sample, String> {
        for (field, missing) in [
            (Field::Prompt, self.prompt.is_none()),
            (Field::Messages, self.messages.is_none()),
            (Field::InputTokens, self.input_tokens.is_none()),
        ] {
            if missing && cols.name(field).is_some() {
                return Err(cols.field_error(field, "nothing (no such field)"));
            }
        }
        let expected = match (&self.prompt, cols.expected_from_prompt) {
            (Some(p), true) => Some(p.clone()),
            _ => self.expected,
        };
        let mut system = self.system;
        let mut max_tokens = self.max_tokens;
        let from_messages = self.prompt.is_none() && self.messages.is_some();
        let messages = match (self.prompt, self.messages) {
            (Some(p), _) => vec![Message::user(p)],
            (None, Some(mut m)) => {
                if system.is_none() && m.first().is_some_and(|m| m.role == "system") {
                    system = Some(m.remove(0).content);
                }
                // ShareGPT: the first human turn is the prompt and the reply
                // recorded after it sets the output length, as vLLM's
                // `bench serve` and aiperf read it.
                if self.sharegpt
                    && !cols.sharegpt_whole
                    && let Some(first) = m.iter().position(|m| m.role == "user")
                {
                    let reply = m.get(first + 1).filter(|r| r.role == "assistant");
                    if max_tokens.is_none() {
                        max_tokens = reply.map(|r| reply_tokens(&r.content));
                    }
                    m.truncate(first + 1);
                    m.drain(..first);
                }
                if m.is_empty() {
                    return Err(cols
                        .field_error(Field::Messages, "only a system message (nothing to send)"));
                }
                m
            }
            (None, None) => Vec::new(),
        };
        Ok(Sample {
            system,
            messages,
            input_tokens: self.input_tokens,
            max_tokens,
            expected,
            from_messages,
        })
    }
}

/// Whether `s` is a usable prompt (not empty or only whitespace).
pub(crate) fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// A max_tokens value: a positive integer in u32, or an integral float
/// (pandas writes integer columns with gaps as floats).
pub(crate) fn max_tokens_from_f64(x: f64) -> Option<u32> {
    (x.fract() == 0.0 && x >= 1.0 && x <= f64::from(u32::MAX)).then_some(x as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(cols: &[&str]) -> Vec<(String, bool)> {
        cols.iter().map(|c| (c.to_string(), false)).collect()
    }

    #[test]
    fn mlperfs_system_prompt_column_is_found_unless_mapped() {
        let c = ResolvedColumns::detect(
            &ColumnMap::default(),
            None,
            &found(&["user_prompt", "system_prompt"]),
            "f",
        )
        .unwrap();
        assert_eq!(c.name(Field::Prompt), Some("user_prompt"));
        assert_eq!(c.name(Field::System), Some("system_prompt"));
        let mapped = ColumnMap {
            prompt: Some("q".into()),
            system: Some("sys".into()),
            ..ColumnMap::default()
        };
        let c = ResolvedColumns::detect(&mapped, None, &found(&["q", "sys", "system_prompt"]), "f")
            .unwrap();
        assert_eq!(c.name(Field::System), Some("sys"));
    }

    #[test]
    fn detects_each_common_name() {
        for name in PROMPT_NAMES {
            let c =
                ResolvedColumns::detect(&ColumnMap::default(), None, &found(&["id", name]), "f")
                    .unwrap();
            assert_eq!(c.name(Field::Prompt), Some(name));
            assert_eq!(c.field_of(name), Some(Field::Prompt));
        }
        for name in MESSAGE_NAMES {
            let c = ResolvedColumns::detect(
                &ColumnMap::default(),
                None,
                &[(name.to_string(), true), ("id".to_string(), false)],
                "f",
            )
            .unwrap();
            assert_eq!(c.name(Field::Messages), Some(name));
            assert_eq!(c.name(Field::Prompt), None);
        }
    }

    #[test]
    fn detection_errors_list_the_columns() {
        let e = ResolvedColumns::detect(
            &ColumnMap::default(),
            None,
            &found(&["id", "body"]),
            "d.jsonl",
        )
        .unwrap_err();
        assert!(
            e.starts_with("d.jsonl: no prompt column among prompt, text,"),
            "{e}"
        );
        assert!(e.contains("columns found: id, body"), "{e}");
        assert!(e.contains("prompt=COL"), "{e}");
        let e = ResolvedColumns::detect(
            &ColumnMap::default(),
            None,
            &found(&["question", "text", "id"]),
            "d.jsonl",
        )
        .unwrap_err();
        assert!(
            e.contains("several possible prompt columns (text, question)"),
            "{e}"
        );
        assert!(e.contains("columns found: question, text, id"), "{e}");
        // A messages column that is not an array does not count.
        let e = ResolvedColumns::detect(
            &ColumnMap::default(),
            None,
            &found(&["messages"]),
            "d.jsonl",
        )
        .unwrap_err();
        assert!(e.contains("no prompt column"), "{e}");
        let e = ResolvedColumns::detect(&ColumnMap::default(), None, &[], "d.csv").unwrap_err();
        assert!(e.contains("columns found: none"), "{e}");
    }

    #[test]
    fn detection_skips_columns_mapped_elsewhere() {
        let map = ColumnMap {
            expected: Some("text".into()),
            ..ColumnMap::default()
        };
        let c = ResolvedColumns::detect(&map, None, &found(&["text", "question"]), "f").unwrap();
        assert_eq!(c.name(Field::Prompt), Some("question"));
        assert_eq!(c.name(Field::Expected), Some("text"));
        // An explicit source skips detection entirely.
        let map = ColumnMap {
            input_tokens: Some("ids".into()),
            ..ColumnMap::default()
        };
        let c = ResolvedColumns::detect(&map, None, &found(&["prompt", "text"]), "f").unwrap();
        assert_eq!(c.name(Field::Prompt), None);
        assert_eq!(c.name(Field::InputTokens), Some("ids"));
    }

    #[test]
    fn field_errors_name_column_and_role() {
        let c = ResolvedColumns::from_map(&ColumnMap {
            prompt: Some("body".into()),
            max_tokens: Some("max_tokens".into()),
            ..ColumnMap::default()
        })
        .unwrap();
        assert_eq!(
            c.field_error(Field::Prompt, "a number"),
            "field 'body' (prompt): expected a non-empty string, found a number"
        );
        assert_eq!(
            c.field_error(Field::MaxTokens, "0"),
            "field 'max_tokens': expected a positive integer, found 0"
        );
    }

    #[test]
    fn system_message_moves_unless_a_system_column_gave_one() {
        let c = ResolvedColumns::from_map(&ColumnMap {
            messages: Some("m".into()),
            ..ColumnMap::default()
        })
        .unwrap();
        let msgs = vec![
            Message {
                role: "system".into(),
                content: "be brief".into(),
            },
            Message::user("hi"),
        ];
        let s = Parts {
            messages: Some(msgs.clone()),
            ..Parts::default()
        }
        .finish(&c)
        .unwrap();
        assert_eq!(s.system.as_deref(), Some("be brief"));
        assert_eq!(s.messages, vec![Message::user("hi")]);
        let s = Parts {
            messages: Some(msgs.clone()),
            system: Some("column".into()),
            ..Parts::default()
        }
        .finish(&c)
        .unwrap();
        assert_eq!(s.system.as_deref(), Some("column"));
        assert_eq!(s.messages, msgs);
        let e = Parts {
            messages: Some(msgs[..1].to_vec()),
            ..Parts::default()
        }
        .finish(&c)
        .unwrap_err();
        assert!(e.contains("only a system message"), "{e}");
        let e = Parts::default().finish(&c).unwrap_err();
        assert!(
            e.contains("field 'm' (messages)") && e.contains("no such field"),
            "{e}"
        );
    }

    #[test]
    fn max_tokens_floats() {
        assert_eq!(max_tokens_from_f64(256.0), Some(256));
        assert_eq!(max_tokens_from_f64(2.5), None);
        assert_eq!(max_tokens_from_f64(0.0), None);
        assert_eq!(max_tokens_from_f64(-3.0), None);
        assert_eq!(max_tokens_from_f64(1e12), None);
        assert_eq!(max_tokens_from_f64(f64::NAN), None);
    }
}
