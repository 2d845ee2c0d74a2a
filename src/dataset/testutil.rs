//! Temporary files for the dataset tests, removed when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new(tag: &str) -> TempDir {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("llmload-dataset-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `name` with `contents` and returns its path.
    pub(super) fn file(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `s` with each U+0001 replaced by 0xFF, a byte UTF-8 never uses.
pub(super) fn invalid_utf8(s: &str) -> Vec<u8> {
    s.bytes().map(|b| if b == 1 { 0xFF } else { b }).collect()
}

/// Loads `arg` (a `--dataset` argument) into memory, checking the count.
pub(super) fn load_all(arg: &str) -> Result<(Vec<super::Sample>, super::LoadStats), String> {
    let spec = super::DatasetSpec::parse(arg)?;
    let mut got = Vec::new();
    let stats = super::load(&spec, &mut |s| {
        got.push(s);
        Ok(())
    })?;
    assert_eq!(stats.loaded as usize, got.len());
    Ok((got, stats))
}
