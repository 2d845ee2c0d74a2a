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
