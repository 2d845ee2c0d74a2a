//! Token counting with a HuggingFace `tokenizer.json` loaded from disk (never
//! from the network), through the `tokenizers` crate behind the default-on
//! `tokenizer` cargo feature. Without the feature the crate still builds and
//! `--tokenizer` says how to get it. Tokenizing never runs on a worker: input
//! is counted in the parent before the run, output on a parent thread.

use std::path::Path;

/// A loaded tokenizer.
pub struct Tokenizer {
    #[cfg(feature = "tokenizer")]
    inner: tokenizers::Tokenizer,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokenizer")
    }
}

impl Tokenizer {
    /// Loads `tokenizer.json` (or a directory holding one).
    pub fn load(path: &Path) -> Result<Tokenizer, String> {
        let file = if path.is_dir() {
            path.join("tokenizer.json")
        } else {
            path.to_path_buf()
        };
        Self::load_file(&file)
    }

    #[cfg(feature = "tokenizer")]
    fn load_file(file: &Path) -> Result<Tokenizer, String> {
        if !file.exists() {
            return Err(format!("--tokenizer {}: no such file", file.display()));
        }
        // One text at a time needs no thread pool, and bench forks its
        // workers after tokenizing the prompts: a pool started then (padding
        // runs on rayon) would make the forked workers copies of a
        // multithreaded process.
        tokenizers::utils::parallelism::set_parallelism(false);
        let inner = tokenizers::Tokenizer::from_file(file).map_err(|e| {
            format!(
                "--tokenizer {}: not a usable tokenizer.json: {e}",
                file.display()
            )
        })?;
        Ok(Tokenizer { inner })
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
}
