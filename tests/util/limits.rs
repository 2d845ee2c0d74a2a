//! The binary under a memory cap as well as a time limit: `prlimit --as`
//! bounds its address space, so a child that would allocate what a file
//! declares fails (abort, or an error) instead of growing until the host
//! runs out.

use std::ffi::OsStr;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
/// (the test then fails, naming the args).
pub(crate) fn capped<S: AsRef<OsStr>>(args: &[S], mib: u64, limit: Duration) -> Capped {
    let mut cmd = if have("prlimit") {
        let mut c = Command::new("prlimit");
        c.arg(format!("--as={}", mib << 20)).arg("--").arg(bin());
        c
    } else {
        eprintln!("no prlimit (util-linux): llmload runs without a memory cap");
        Command::new(bin())
    };
    let mut child = cmd
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload");
    let mut stderr = child.stderr.take().expect("piped");
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            let args: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
            panic!("llmload {args:?} ran past {limit:?} under a {mib} MiB cap: {stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Capped {
        code: status.code(),
        stderr: err.join().unwrap_or_default(),
        elapsed: start.elapsed(),
    }
}
