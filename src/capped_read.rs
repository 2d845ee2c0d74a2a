//! Whole files named on the command line (certificates, keys, profiles,
//! configs, templates, tokenizers, answer files) read with a size cap, so
//! that a path to `/dev/zero` or to the wrong, huge file fails at once with
//! its size instead of growing until memory runs out. Datasets are streamed
//! record by record and are not read here. Errors are `io::Error`s whose
//! text says the size and the cap, so each caller's own message (which
//! names the flag and the file) stays as it is.

use std::io::{self, Read};
use std::path::Path;

const MIB: u64 = 1024 * 1024;

/// Profiles, YAML configs, certificates, keys and templates: the largest
/// real ones (a CA bundle) are well under a MiB.
pub(crate) const CONFIG: u64 = 16 * MIB;

/// A `tokenizer_config.json`, which may carry the whole added vocabulary.
#[cfg(feature = "tokenizer")]
pub(crate) const TOKENIZER_CONFIG: u64 = 64 * MIB;

/// A `tokenizer.json` (large vocabularies reach tens of MiB) or a file of
/// canned answers.
pub(crate) const LARGE: u64 = 1024 * MIB;

/// The bytes of `path`, at most `cap` of them.
pub(crate) fn bytes(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let declared = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    if let Some(size) = declared.filter(|&s| s > cap) {
        return Err(too_big(Some(size), cap));
    }
    let mut out = Vec::with_capacity(declared.unwrap_or(0) as usize);
    file.take(cap + 1).read_to_end(&mut out)?;
    if out.len() as u64 > cap {
        return Err(too_big(None, cap));
    }
    Ok(out)
}

/// The text of `path` (UTF-8, a leading byte-order mark dropped, as editors
/// on Windows write one), at most `cap` bytes.
pub(crate) fn text(path: &Path, cap: u64) -> io::Result<String> {
    let mut text = String::from_utf8(bytes(path, cap)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

fn too_big(size: Option<u64>, cap: u64) -> io::Error {
    let cap = if cap.is_multiple_of(MIB) {
        format!("{} MiB", cap / MIB)
    } else {
        format!("{} KiB", cap / 1024)
    };
    let msg = match size {
        Some(s) => format!("{s} bytes, more than the {cap} this file may have"),
        None => format!("longer than the {cap} this file may have"),
    };
    io::Error::new(io::ErrorKind::FileTooLarge, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_refused_with_its_size() {
        let dir = std::env::temp_dir().join(format!("llmload-capped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("big");
        std::fs::write(&p, vec![b'x'; (MIB + 1) as usize]).unwrap();
        let e = bytes(&p, MIB).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(
            e.to_string(),
            "1048577 bytes, more than the 1 MiB this file may have"
        );
        assert_eq!(bytes(&p, 2 * MIB).unwrap().len(), (MIB + 1) as usize);
        std::fs::write(&p, "\u{feff}a: 1\n").unwrap();
        assert_eq!(text(&p, MIB).unwrap(), "a: 1\n");
        std::fs::write(&p, b"\xff\xfe").unwrap();
        assert_eq!(
            text(&p, MIB).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_endless_file_stops_at_the_cap() {
        let e = bytes(Path::new("/dev/zero"), MIB).unwrap_err();
        assert_eq!(e.to_string(), "longer than the 1 MiB this file may have");
    }
}
