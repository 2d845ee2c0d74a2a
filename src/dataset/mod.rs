//! Prompts a run sends: a JSONL file, or the built-in prompt set.
