//! Where `--tokenizer` points: a `tokenizer.json` file, a directory holding
//! one (a model checkout), or a Hugging Face model id (`org/name`) found in
//! the local Hugging Face cache, the way `huggingface_hub` lays it out. It
//! never reaches the network: a model that is not in the cache is an error
//! that says where it looked and how to fetch it. The trade-off is that a
//! run never downloads on its own, so what it counts with is what is on disk.

use std::path::{Path, PathBuf};

/// The files of one tokenizer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenizerFiles {
    /// The `tokenizer.json` to load.
    pub tokenizer: PathBuf,
    /// `tokenizer_config.json` beside it, when there is one (special tokens
    /// and the chat template).
    pub config: Option<PathBuf>,
    /// `chat_template.jinja` beside it, where newer checkouts keep the chat
    /// template instead of in the config.
    pub chat_template: Option<PathBuf>,
}

/// The environment a lookup reads, apart so tests can give their own.
#[derive(Clone, Debug, Default)]
pub(crate) struct CacheEnv {
    pub hf_hub_cache: Option<PathBuf>,
    pub huggingface_hub_cache: Option<PathBuf>,
    pub hf_home: Option<PathBuf>,
    pub xdg_cache_home: Option<PathBuf>,
    pub home: Option<PathBuf>,
}

impl CacheEnv {
    pub(crate) fn from_process() -> CacheEnv {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        CacheEnv {
            hf_hub_cache: var("HF_HUB_CACHE"),
            huggingface_hub_cache: var("HUGGINGFACE_HUB_CACHE"),
            hf_home: var("HF_HOME"),
            xdg_cache_home: var("XDG_CACHE_HOME"),
            home: var("HOME"),
        }
    }

    /// The hub cache directory and the setting it came from, in
    /// `huggingface_hub`'s order: `HF_HUB_CACHE` (or its older name
    /// `HUGGINGFACE_HUB_CACHE`), `$HF_HOME/hub`,
    /// `$XDG_CACHE_HOME/huggingface/hub`, `~/.cache/huggingface/hub`.
    fn hub(&self) -> Option<(PathBuf, &'static str)> {
        if let Some(p) = &self.hf_hub_cache {
            return Some((p.clone(), "HF_HUB_CACHE"));
        }
        if let Some(p) = &self.huggingface_hub_cache {
            return Some((p.clone(), "HUGGINGFACE_HUB_CACHE"));
        }
        if let Some(p) = &self.hf_home {
            return Some((p.join("hub"), "HF_HOME"));
        }
        if let Some(p) = &self.xdg_cache_home {
            return Some((p.join("huggingface/hub"), "XDG_CACHE_HOME"));
        }
        let home = self.home.as_ref()?;
        Some((home.join(".cache/huggingface/hub"), "HOME"))
    }
}

/// Finds the tokenizer `spec` names, from the process environment.
pub fn locate(spec: &Path) -> Result<TokenizerFiles, String> {
    locate_in(spec, &CacheEnv::from_process())
}

pub(crate) fn locate_in(spec: &Path, env: &CacheEnv) -> Result<TokenizerFiles, String> {
    let shown = spec.display();
    if spec.is_file() {
        let dir = spec.parent().unwrap_or(Path::new("."));
        return Ok(beside(spec.to_path_buf(), dir));
    }
    if spec.is_dir() {
        return from_dir(spec).map_err(|e| format!("--tokenizer {shown}: {e}"));
    }
    let Some(id) = spec.to_str().filter(|s| is_model_id(s)) else {
        return Err(format!(
            "--tokenizer {shown}: no such file or directory (expected a tokenizer.json, \
             a directory holding one, or a Hugging Face model id such as org/name)"
        ));
    };
    let Some((hub, from)) = env.hub() else {
        return Err(format!(
            "--tokenizer {id}: not a file or directory, and no Hugging Face cache to look in \
             (none of HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME, HOME is set)"
        ));
    };
    let repo = hub.join(format!("models--{}", id.replace('/', "--")));
    let snapshot = snapshot(&repo).map_err(|why| {
        format!(
            "--tokenizer {id}: not a file or directory, and not in the Hugging Face cache: \
             {why} (cache {} from {from}); llmload never downloads: fetch it with \
             `huggingface-cli download {id} tokenizer.json tokenizer_config.json`, \
             or give a path",
            hub.display()
        )
    })?;
    from_dir(&snapshot).map_err(|e| format!("--tokenizer {id}: {e}"))
}

/// A directory's tokenizer files.
fn from_dir(dir: &Path) -> Result<TokenizerFiles, String> {
    let file = dir.join("tokenizer.json");
    if file.is_file() {
        return Ok(beside(file, dir));
    }
    let what = if dir.join("tokenizer_config.json").is_file() {
        "has tokenizer_config.json but no tokenizer.json (a tokenizer without a fast \
         tokenizer.json, such as a bare sentencepiece model, cannot be read)"
    } else {
        "holds no tokenizer.json"
    };
    Err(format!("{} {what}", dir.display()))
}

fn beside(tokenizer: PathBuf, dir: &Path) -> TokenizerFiles {
    let existing = |name: &str| Some(dir.join(name)).filter(|p| p.is_file());
    TokenizerFiles {
        tokenizer,
        config: existing("tokenizer_config.json"),
        chat_template: existing("chat_template.jinja"),
    }
}

/// The snapshot directory of a cached model repository: the revision
/// `refs/main` names, else the only snapshot holding a tokenizer.json, else
/// the most recently modified such snapshot.
fn snapshot(repo: &Path) -> Result<PathBuf, String> {
    if !repo.is_dir() {
        return Err(format!("no {}", repo.display()));
    }
    let snapshots = repo.join("snapshots");
    if let Ok(rev) = crate::capped_read::text(&repo.join("refs/main"), crate::capped_read::CONFIG) {
        let dir = snapshots.join(rev.trim());
        if dir.join("tokenizer.json").is_file() {
            return Ok(dir);
        }
    }
    let entries =
        std::fs::read_dir(&snapshots).map_err(|e| format!("{}: {e}", snapshots.display()))?;
    let newest = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("tokenizer.json").is_file())
        .max_by_key(|p| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH)
        });
    newest.ok_or_else(|| {
        format!(
            "no snapshot under {} holds a tokenizer.json",
            snapshots.display()
        )
    })
}

/// `org/name` or `name`: the characters the Hub allows, no path tricks.
fn is_model_id(s: &str) -> bool {
    let part_ok = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '-'])
            && !p.contains("..")
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    let mut parts = s.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(a), None, None) => part_ok(a),
        (Some(a), Some(b), None) => part_ok(a) && part_ok(b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let p =
                std::env::temp_dir().join(format!("llmload-locate-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Scratch(p)
        }
        fn file(&self, rel: &str, text: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            p
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn hub_env(hub: &Path) -> CacheEnv {
        CacheEnv {
            hf_hub_cache: Some(hub.to_path_buf()),
            ..CacheEnv::default()
        }
    }

    #[test]
    fn a_file_or_a_directory_is_taken_as_it_is() {
        let s = Scratch::new("plain");
        let tok = s.file("m/tokenizer.json", "{}");
        let env = CacheEnv::default();
        let got = locate_in(&tok, &env).unwrap();
        assert_eq!((got.tokenizer, got.config), (tok.clone(), None));
        let cfg = s.file("m/tokenizer_config.json", "{}");
        let jinja = s.file("m/chat_template.jinja", "x");
        let got = locate_in(&s.0.join("m"), &env).unwrap();
        assert_eq!(got.tokenizer, tok);
        assert_eq!(got.config, Some(cfg.clone()));
        assert_eq!(got.chat_template, Some(jinja));
        // A file's config is the one beside it.
        assert_eq!(locate_in(&tok, &env).unwrap().config, Some(cfg));
        s.file("only-config/tokenizer_config.json", "{}");
        let e = locate_in(&s.0.join("only-config"), &env).unwrap_err();
        assert!(e.contains("no tokenizer.json"), "{e}");
        std::fs::create_dir_all(s.0.join("empty")).unwrap();
        let e = locate_in(&s.0.join("empty"), &env).unwrap_err();
        assert!(e.contains("holds no tokenizer.json"), "{e}");
    }

    #[test]
    fn a_model_id_is_found_in_the_hub_cache_by_its_main_ref() {
        let s = Scratch::new("hub");
        let repo = "models--acme--tiny-chat";
        s.file(&format!("hub/{repo}/refs/main"), "abc123\n");
        let tok = s.file(&format!("hub/{repo}/snapshots/abc123/tokenizer.json"), "{}");
        s.file(&format!("hub/{repo}/snapshots/old999/tokenizer.json"), "{}");
        let cfg = s.file(
            &format!("hub/{repo}/snapshots/abc123/tokenizer_config.json"),
            "{}",
        );
        let id = Path::new("acme/tiny-chat");
        let got = locate_in(id, &hub_env(&s.0.join("hub"))).unwrap();
        assert_eq!((got.tokenizer, got.config), (tok.clone(), Some(cfg)));
        // HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub and ~/.cache/huggingface/hub
        // lead to the same layout.
        for env in [
            CacheEnv {
                hf_home: Some(s.0.clone()),
                ..CacheEnv::default()
            },
            CacheEnv {
                xdg_cache_home: Some(s.0.join("xdg")),
                ..CacheEnv::default()
            },
            CacheEnv {
                home: Some(s.0.join("home")),
                ..CacheEnv::default()
            },
        ] {
            let (hub, _) = env.hub().unwrap();
            let moved = hub.join(repo);
            std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
            if !moved.exists() {
                copy_dir(&s.0.join("hub").join(repo), &moved);
            }
            let got = locate_in(id, &env).unwrap();
            assert_eq!(got.tokenizer, moved.join("snapshots/abc123/tokenizer.json"));
        }
        // HF_HUB_CACHE wins over HF_HOME.
        let env = CacheEnv {
            hf_hub_cache: Some(s.0.join("hub")),
            hf_home: Some(s.0.join("nowhere")),
            ..CacheEnv::default()
        };
        assert_eq!(locate_in(id, &env).unwrap().tokenizer, tok);
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dest = to.join(e.file_name());
            if e.path().is_dir() {
                copy_dir(&e.path(), &dest);
            } else {
                std::fs::copy(e.path(), dest).unwrap();
            }
        }
    }

    #[test]
    fn without_a_main_ref_the_snapshot_with_a_tokenizer_is_taken() {
        let s = Scratch::new("noref");
        let repo = "hub/models--acme--m";
        s.file(&format!("{repo}/snapshots/aaa/config.json"), "{}");
        let tok = s.file(&format!("{repo}/snapshots/bbb/tokenizer.json"), "{}");
        let got = locate_in(Path::new("acme/m"), &hub_env(&s.0.join("hub"))).unwrap();
        assert_eq!(got.tokenizer, tok);
    }

    #[test]
    fn a_missing_model_says_where_it_looked() {
        let s = Scratch::new("missing");
        let hub = s.0.join("hub");
        let e = locate_in(Path::new("acme/absent"), &hub_env(&hub)).unwrap_err();
        assert!(e.contains("--tokenizer acme/absent"), "{e}");
        assert!(e.contains("models--acme--absent"), "{e}");
        assert!(e.contains("HF_HUB_CACHE"), "{e}");
        assert!(e.contains("never downloads"), "{e}");
        s.file("hub/models--acme--bare/snapshots/x/config.json", "{}");
        let e = locate_in(Path::new("acme/bare"), &hub_env(&hub)).unwrap_err();
        assert!(e.contains("no snapshot"), "{e}");
        // Not a model id: a path that does not exist.
        let e = locate_in(Path::new("./nope/tokenizer.json"), &hub_env(&hub)).unwrap_err();
        assert!(e.contains("no such file or directory"), "{e}");
        let e = locate_in(Path::new("acme/x"), &CacheEnv::default()).unwrap_err();
        assert!(e.contains("no Hugging Face cache"), "{e}");
    }

    #[test]
    fn model_ids_are_org_and_name() {
        for ok in ["gpt2", "meta-llama/Llama-3.1-8B-Instruct", "a_b/c.d"] {
            assert!(is_model_id(ok), "{ok}");
        }
        for bad in [
            "",
            "/abs",
            "a/b/c",
            "../x",
            "a/..",
            "a//b",
            ".hidden/x",
            "a b/c",
        ] {
            assert!(!is_model_id(bad), "{bad}");
        }
    }
}
