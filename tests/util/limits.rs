//! The binary under a memory cap as well as a time limit: `prlimit --as`
//! bounds its address space, so a child that would allocate what a file
//! declares fails (abort, or an error) instead of growing until the host
//! runs out.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::run::finish;
use super::{bin, have};

/// What a capped run ended with.
pub(crate) struct Capped {
    /// `None` when a signal ended it (an abort on a failed allocation).
    pub code: Option<i32>,
    pub stderr: String,
    pub elapsed: Duration,
}

/// `llmload ARGS` (stdout discarded) with its address space capped at
/// `mib` MiB where util-linux's `prlimit` is installed, killed after `limit`
/// (the test then fails).
pub(crate) fn capped<S: AsRef<OsStr>>(args: &[S], mib: u64, limit: Duration) -> Capped {
    let mut cmd = if have("prlimit") {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={}", mib << 20)).arg("--").arg(bin());
        c
    } else {
        eprintln!("no prlimit (util-linux): llmload runs without a memory cap");
        Command::new(bin())
    };
    let child = cmd
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload");
    let (status, _, stderr, elapsed) = finish(child, limit);
    Capped {
        code: status.code(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed,
    }
}
