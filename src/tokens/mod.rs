//! Token counting with a HuggingFace `tokenizer.json` loaded from disk (never
//! from the network), through the `tokenizers` crate behind the default-on
//! `tokenizer` cargo feature. Without the feature the crate still builds and
//! `--tokenizer` says how to get it. Tokenizing never runs on a worker: input
//! is counted in the parent before the run, output on a parent thread.
//!
//! `--tokenizer` may name a file, a model directory or a Hugging Face model
//! id in the local cache (`locate`); a model's chat template, when its
//! `tokenizer_config.json` has one, counts message prompts as MLPerf does
//! (`chat`).

use std::path::Path;

#[cfg(feature = "tokenizer")]
pub mod chat;
pub mod locate;

/// A loaded tokenizer.
pub struct Tokenizer {
    #[cfg(feature = "tokenizer")]
    inner: tokenizers::Tokenizer,
    /// The model's chat template, when it has one.
    #[cfg(feature = "tokenizer")]
    chat: Option<chat::ChatTemplate>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokenizer")
    }
}

impl Tokenizer {
    /// Loads what `--tokenizer` names: a `tokenizer.json`, a directory
    /// holding one, or a model id in the Hugging Face cache; with the chat
    /// template of the `tokenizer_config.json` beside it.
    pub fn load(spec: &Path) -> Result<Tokenizer, String> {
        Self::load_files(&locate::locate(spec)?)
    }

    #[cfg(feature = "tokenizer")]
    pub fn load_files(files: &locate::TokenizerFiles) -> Result<Tokenizer, String> {
        let mut t = Self::load_file(&files.tokenizer)?;
        t.chat = chat::ChatTemplate::load(files.config.as_deref(), files.chat_template.as_deref())?;
        Ok(t)
    }

    #[cfg(not(feature = "tokenizer"))]
    pub fn load_files(files: &locate::TokenizerFiles) -> Result<Tokenizer, String> {
        Self::load_file(&files.tokenizer)
    }

    #[cfg(feature = "tokenizer")]
    fn load_file(file: &Path) -> Result<Tokenizer, String> {
        // One text at a time needs no thread pool, and bench forks its
        // workers after tokenizing the prompts: a pool started then (padding
        // runs on rayon) would make the forked workers copies of a
        // multithreaded process.
        tokenizers::utils::parallelism::set_parallelism(false);
        let bytes = crate::capped_read::bytes(file, crate::capped_read::LARGE)
            .map_err(|e| format!("--tokenizer {}: cannot read: {e}", file.display()))?;
        let inner = tokenizers::Tokenizer::from_bytes(bytes).map_err(|e| {
            format!(
                "--tokenizer {}: not a usable tokenizer.json: {e}",
                file.display()
            )
        })?;
        Ok(Tokenizer { inner, chat: None })
    }

    #[cfg(not(feature = "tokenizer"))]
    fn load_file(file: &Path) -> Result<Tokenizer, String> {
        Err(format!(
            "--tokenizer {}: this llmload was built without the `tokenizer` feature",
            file.display()
        ))
    }

    /// Token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        #[cfg(feature = "tokenizer")]
        {
            self.inner
                .encode_fast(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default()
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = text;
            unreachable!("no tokenizer can be loaded without the feature")
        }
    }

    /// Number of tokens in `text`, without special tokens.
    pub fn count(&self, text: &str) -> usize {
        self.encode(text).len()
    }

    /// Whether the model has a chat template.
    pub fn has_chat_template(&self) -> bool {
        #[cfg(feature = "tokenizer")]
        {
            self.chat.is_some()
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            false
        }
    }

    /// Why the chat template was refused for every prompt (it went past
    /// its work or output budget on one), naming the template.
    pub fn chat_template_refused(&self) -> Option<&str> {
        #[cfg(feature = "tokenizer")]
        {
            self.chat.as_ref()?.refused()
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            None
        }
    }

    /// Tokens of `messages` (role, content) rendered through the chat
    /// template with the generation prompt, as `apply_chat_template(...,
    /// add_generation_prompt=True)` counts them (the template writes the
    /// special tokens, so none are added); `None` without a template.
    pub fn count_chat(&self, messages: &[(&str, &str)]) -> Option<Result<usize, String>> {
        #[cfg(feature = "tokenizer")]
        {
            let chat = self.chat.as_ref()?;
            Some(chat.render(messages).map(|text| self.count(&text)))
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = messages;
            None
        }
    }

    /// The text of `ids`.
    pub fn decode(&self, ids: &[u32]) -> String {
        #[cfg(feature = "tokenizer")]
        {
            self.inner.decode(ids, true).unwrap_or_default()
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            let _ = ids;
            unreachable!("no tokenizer can be loaded without the feature")
        }
    }

    /// Vocabulary size, special tokens included.
    pub fn vocab_size(&self) -> usize {
        #[cfg(feature = "tokenizer")]
        {
            self.inner.get_vocab_size(true)
        }
        #[cfg(not(feature = "tokenizer"))]
        {
            unreachable!("no tokenizer can be loaded without the feature")
        }
    }
}

/// A small word-level tokenizer.json (whitespace pre-tokenizer, one token
/// per word of `words`, `[UNK]` for the rest), for tests and examples.
pub fn word_level_json(words: &[&str]) -> String {
    let mut vocab = serde_json::Map::new();
    vocab.insert("[UNK]".to_string(), 0.into());
    for (i, w) in words.iter().enumerate() {
        vocab.insert((*w).to_string(), (i + 1).into());
    }
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": false, "lstrip": false,
                          "rstrip": false, "normalized": false, "special": true}],
        "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    })
    .to_string()
}

#[cfg(all(test, feature = "tokenizer"))]
mod tests {
    use super::*;

    #[test]
    fn word_level_fixture_counts_words() {
        let dir = std::env::temp_dir().join(format!("llmload-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("tokenizer.json");
        std::fs::write(&p, word_level_json(&["hello", "world", "the"])).unwrap();
        let t = Tokenizer::load(&dir).unwrap();
        assert_eq!(t.count("hello world"), 2);
        assert_eq!(t.count("hello unknown world the"), 4);
        assert_eq!(t.encode("world hello"), vec![2, 1]);
        assert_eq!(t.decode(&[1, 2]), "hello world");
        assert_eq!(t.vocab_size(), 4);
        assert!(Tokenizer::load(&dir.join("missing.json")).is_err());
        std::fs::write(dir.join("bad.json"), "{").unwrap();
        assert!(
            Tokenizer::load(&dir.join("bad.json"))
                .unwrap_err()
                .contains("not a usable")
        );
    }

    #[test]
    fn the_fixture_model_counts_a_chat_through_its_template() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-chat");
        let t = Tokenizer::load(&dir).unwrap();
        assert!(t.has_chat_template());
        // <s> <|im_start|> system Be brief . <|im_end|> <|im_start|> user
        // hello world <|im_end|> <|im_start|> assistant
        let chat = [("system", "Be brief."), ("user", "hello world")];
        assert_eq!(t.count_chat(&chat), Some(Ok(14)));
        // The same text without the template.
        assert_eq!(t.count("Be brief.") + t.count("hello world"), 5);
        let e = t
            .count_chat(&[("user", "a"), ("system", "b")])
            .unwrap()
            .unwrap_err();
        assert!(e.contains("system message must come first"), "{e}");
        // The tokenizer.json alone has no template.
        let bare = Tokenizer::load(&dir.join("tokenizer.json")).unwrap();
        assert!(
            bare.has_chat_template(),
            "the config beside the file is read"
        );
        let only = std::env::temp_dir().join(format!("llmload-bare-{}", std::process::id()));
        std::fs::create_dir_all(&only).unwrap();
        std::fs::copy(dir.join("tokenizer.json"), only.join("tokenizer.json")).unwrap();
        let bare = Tokenizer::load(&only).unwrap();
        assert!(!bare.has_chat_template());
        assert_eq!(bare.count_chat(&chat), None);
        let _ = std::fs::remove_dir_all(&only);
    }
}
