//! Prompts a run sends: the user's file (JSONL, a JSON array, CSV) mapped
//! onto samples by column, synthetic prompts of a chosen size, or the
//! built-in set. Loading happens once in the parent before any request is
//! serialized, streaming sample by sample into the request builder so a
//! large file is never held twice; every problem names the file, the line
//! (or row) and the field.

mod builtin;
pub mod order;
pub mod spec;
pub mod synthetic;

use crate::protocol::Message;
pub use order::{Order, Picker};
pub use spec::{ColumnMap, DatasetSpec, Format};
pub use synthetic::SyntheticSpec;

/// One dataset entry, normalized.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// A per-sample system prompt (the `system` column).
    pub system: Option<String>,
    /// The conversation to send, oldest first, ending with the user turn to
    /// answer; a `prompt` column becomes one user message.
    pub messages: Vec<Message>,
    /// A pre-tokenized prompt (the `input_tokens` column).
    pub input_tokens: Option<Vec<u32>>,
    /// Output tokens to request for this sample (the `max_tokens` column).
    pub max_tokens: Option<u32>,
    /// The reference answer (the `expected` column), kept for scoring.
    pub expected: Option<String>,
}

impl Sample {
    /// A sample with one user message.
    pub fn prompt(text: impl Into<String>) -> Sample {
        Sample {
            messages: vec![Message::user(text)],
            ..Sample::default()
        }
    }
}

/// What loading a file found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Samples handed to the caller.
    pub loaded: u64,
    /// Invalid lines or rows skipped under `skip_invalid=true`.
    pub skipped: u64,
    /// The first few skip reasons (`file:line: reason`), for the report.
    pub skip_examples: Vec<String>,
}

/// Loads `spec`, calling `on_sample` for each valid sample in file order.
/// An invalid line or row is an error naming `file:line` and the reason, or
/// with `skip_invalid` is skipped and counted; an empty dataset is an error.
pub fn load(
    spec: &DatasetSpec,
    on_sample: &mut dyn FnMut(Sample) -> Result<(), String>,
) -> Result<LoadStats, String> {
    let _ = (spec, on_sample);
    todo!("dataset helper")
}

/// The built-in prompt set: varied short instructions, so a default run
/// exercises different request sizes without any file.
pub fn builtin() -> Vec<Sample> {
    builtin::PROMPTS
        .iter()
        .map(|p| Sample::prompt(*p))
        .collect()
}

/// Loads `spec` and groups its samples into conversations by the
/// `conversation` column, in file order: each conversation's user turns.
pub fn load_conversations(
    spec: &DatasetSpec,
    conversation: &str,
) -> Result<Vec<Vec<String>>, String> {
    let _ = (spec, conversation);
    Err("conversation datasets are not supported yet".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_set_is_varied() {
        let b = builtin();
        assert!(b.len() >= 16);
        let lens: std::collections::BTreeSet<_> =
            b.iter().map(|s| s.messages[0].content.len()).collect();
        assert!(lens.len() > 8);
    }
}
