//! The columnar readers (`format=parquet`, `format=hf`) on any bytes: the
//! file is written to a scratch directory and loaded as a run loads it. No
//! panic, no allocation past what the file holds (libFuzzer's `-rss_limit_mb`
//! catches one), a load that succeeds has samples, none with a cell over
//! the cap. The first byte chooses the format (bit 0: an Arrow file in a
//! `save_to_disk` directory, else Parquet) and a column mapping (bits 1–2);
//! the rest is the file. Seeds: valid Parquet files (each codec, pandas')
//! and Arrow streams written by `datasets` (`fuzz/seeds/columnar_dataset/`).

#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use llmload::dataset::{DatasetSpec, MAX_RECORD, load};

/// A directory of this process's own, with a `save_to_disk` layout.
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let d = base.join(format!("llmload-fuzz-columnar-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("state.json"),
            r#"{"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"}"#,
        )
        .unwrap();
        d
    })
}

const MAPPINGS: [&str; 4] = [
    "",
    ",expected=answer",
    ",template={prompt} {answer},skip_invalid=true",
    ",prompt=user_prompt,expected=answer",
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, file)) = data.split_first() else {
        return;
    };
    let dir = scratch();
    let (path, format) = if sel & 1 == 1 {
        (dir.join("data-00000-of-00001.arrow"), "hf")
    } else {
        (dir.join("data.parquet"), "parquet")
    };
    std::fs::write(&path, file).unwrap();
    let target = if format == "hf" { dir.clone() } else { path };
    let arg = format!(
        "{},format={format}{}",
        target.display(),
        MAPPINGS[usize::from(sel >> 1) & 3]
    );
    let spec = DatasetSpec::parse(&arg).unwrap();
    let mut samples = 0u64;
    let result = load(&spec, &mut |s| {
        for m in &s.messages {
            assert!(m.content.len() <= MAX_RECORD, "a prompt over the cell cap");
        }
        samples += 1;
        Ok(())
    });
    match result {
        Ok(stats) => {
            assert!(stats.loaded > 0);
            assert_eq!(stats.loaded, samples);
        }
        Err(e) => assert!(!e.is_empty()),
    }
});
