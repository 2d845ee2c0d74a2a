//! Shards of one run (`--shard I/N`) against one server, started together.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Server, llmload};

/// `--start-at` `ms` from now: the flag's value (Unix seconds) and the same
/// instant in Unix nanoseconds.
pub(crate) fn start_in(ms: u64) -> (String, u64) {
    let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_millis(ms);
    (
        format!("{}.{:09}", at.as_secs(), at.subsec_nanos()),
        at.as_nanos() as u64,
    )
}

/// Starts shard `i`/`n` of the run `args` describe against `server`, with
/// one worker, quietly, writing into `out`.
pub(crate) fn spawn_shard(server: &Server, i: u32, n: u32, out: &Path, args: &[&str]) -> Child {
    let shard = format!("{i}/{n}");
    let (child, _) = llmload(&["bench", "--endpoint", &server.url(), "--model", "m"])
        .args(["--workers", "1", "--quiet", "--shard", &shard])
        .args([OsStr::new("--out"), out.as_os_str()])
        .args(args)
        .spawn();
    child
}

/// Starts shards 1..=`n` of one run, shard I writing into `root/shard-I`.
pub(crate) fn spawn_shards(
    server: &Server,
    n: u32,
    root: &Path,
    args: &[&str],
) -> Vec<(PathBuf, Child)> {
    (1..=n)
        .map(|i| {
            let dir = root.join(format!("shard-{i}"));
            let child = spawn_shard(server, i, n, &dir, args);
            (dir, child)
        })
        .collect()
}

/// A fresh copy (in a directory named with `tag`) of two real shards of one
/// 2-second run at 25 requests/s each, `shard-1` and `shard-2`: run once
/// per test binary, so a matrix of edits to them costs one run.
pub(crate) fn two_shards(tag: &str) -> PathBuf {
    static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let base = BASE.get_or_init(|| {
        let root = super::temp_dir("two-shards");
        let server = Server::start(&["--ttft", "1ms", "--tpot", "1ms"]);
        let (at, _) = start_in(500);
        let args = ["--rate", "25", "--duration", "2s", "--start-at", &at];
        for (dir, child) in spawn_shards(&server, 2, &root, &args) {
            let run = super::wait_run(child, dir, Duration::from_secs(30));
            run.assert_success();
        }
        root
    });
    let dir = super::temp_dir(tag);
    for i in 1..=2 {
        let (from, to) = (
            base.join(format!("shard-{i}")),
            dir.join(format!("shard-{i}")),
        );
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
    }
    dir
}

/// Edits `dir`'s summary.json through `edit` on its JSON.
pub(crate) fn edit_summary(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let file = dir.join("summary.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(&file, doc.to_string()).unwrap();
}
