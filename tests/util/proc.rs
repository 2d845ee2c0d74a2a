//! The processes a test started: their children, liveness and peak memory
//! from /proc, and signals to them.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::read;

/// Sends `sig` to a child this test spawned.
pub(crate) fn signal(child: &Child, sig: i32) {
    let sig = nix::sys::signal::Signal::try_from(sig).expect("a signal number");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig)
        .expect("kill a child this test spawned and has not reaped");
}

/// SIGKILL to `pid`, a process this test started or found among its
/// children.
pub(crate) fn sigkill(pid: i32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL a process this test started");
}

/// The children of `pid`, zombies included, from /proc: each thread's
/// `children` list where the kernel has them, else every process whose
/// parent is `pid`.
pub(crate) fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut listed = false;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                listed = true;
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    if !listed {
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let stat = read(&e.path().join("stat"));
            // The parent's pid is the second field after the name.
            let ppid = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if ppid == Some(pid) {
                out.push(child);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `pid` exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    let stat = read(Path::new(&format!("/proc/{pid}/stat")));
    // The state follows the command name's closing parenthesis.
    match stat.rfind(')') {
        Some(i) => !matches!(
            stat[i + 1..].trim_start().chars().next(),
            Some('Z' | 'X') | None
        ),
        None => false,
    }
}

/// A process's peak resident set (`VmHWM`) in KiB, while it lives.
pub(crate) fn vm_hwm_kib(pid: i32) -> Option<u64> {
    let status = read(Path::new(&format!("/proc/{pid}/status")));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Whether `program` (a util-linux tool: `prlimit`, `script`) can run
/// here.
pub(crate) fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Raises this process's descriptor limit to its hard limit; returns it.
pub(crate) fn raise_nofile() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) => {
            if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Err(_) => 1024,
    }
}
