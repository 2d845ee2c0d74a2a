//! Helpers: start `llmload serve`, run `llmload bench`, read its summary, all
//! with hard time limits so a hung process fails a test instead of CI.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_llmload")
}

/// A fresh, empty directory under the system temp dir.
pub(crate) fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "llmload-it-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Serve's first stdout line: its address, bare or as an `http://` or
/// `https://` URL; true when https (the server speaks TLS).
pub(crate) fn parse_first_line(line: &str) -> (SocketAddr, bool) {
    let line = line.trim();
    let (rest, tls) = match line.strip_prefix("https://") {
        Some(rest) => (rest, true),
        None => (line.trim_start_matches("http://"), false),
    };
    let addr = rest
        .parse()
        .unwrap_or_else(|_| panic!("serve's first line is an address: {line:?}"));
    (addr, tls)
}

/// A running `llmload serve`; stopped (SIGTERM, then SIGKILL) on drop.
pub(crate) struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// It printed an `https://` address (`--tls-cert`).
    pub tls: bool,
}

impl Server {
    pub(crate) fn start(args: &[&str]) -> Server {
        let mut child = Command::new(bin())
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn llmload serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut r = BufReader::new(stdout);
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            // Keep draining so the server never blocks on a full pipe.
            let mut sink = Vec::new();
            let _ = r.read_to_end(&mut sink);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("serve printed its address within 10 s");
        let (addr, tls) = parse_first_line(&line);
        Server { child, addr, tls }
    }

    /// `http://ADDR`, or `https://ADDR` when the server speaks TLS.
    pub(crate) fn url(&self) -> String {
        scheme_url(self.tls, self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        signal(&self.child, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scheme_url(tls: bool, addr: SocketAddr) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{addr}")
}

/// The outcome of one `llmload bench`.
pub(crate) struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub out: PathBuf,
    pub elapsed: Duration,
}

impl Run {
    pub(crate) fn summary(&self) -> serde_json::Value {
        let p = self.out.join("summary.json");
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| {
            panic!(
                "{}: {e}\nstdout:\n{}\nstderr:\n{}",
                p.display(),
                self.stdout,
                self.stderr
            )
        });
        serde_json::from_str(&text).expect("summary.json is JSON")
    }

    pub(crate) fn assert_success(&self) {
        assert!(
            self.status.success(),
            "bench failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
    }
}

/// Runs `llmload bench ARGS --out <fresh dir> --quiet`, killed after `limit`.
pub(crate) fn bench(args: &[&str], limit: Duration) -> Run {
    run_quiet(&["bench"], args, limit)
}

/// `llmload COMMAND… ARGS --out <fresh dir> --quiet`, killed after `limit`.
pub(crate) fn run_quiet(command: &[&str], args: &[&str], limit: Duration) -> Run {
    let out = temp_dir(command[0]);
    let child = Command::new(bin())
        .args(command)
        .args(args)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload");
    wait_run(child, out, limit)
}

/// Waits for a spawned bench with a hard limit, collecting its output.
pub(crate) fn wait_run(mut child: Child, out: PathBuf, limit: Duration) -> Run {
    let start = Instant::now();
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t1 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t2 = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "llmload bench did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                t1.join().unwrap(),
                t2.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        status,
        stdout: t1.join().unwrap(),
        stderr: t2.join().unwrap(),
        out,
        elapsed: start.elapsed(),
    }
}

pub(crate) fn u(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

pub(crate) fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// issued == completed + failed, and the errors add up to failed.
pub(crate) fn assert_accounted(requests: &serde_json::Value) {
    let issued = u(&requests["issued"]);
    let completed = u(&requests["completed"]);
    let failed = u(&requests["failed"]);
    assert_eq!(issued, completed + failed, "{requests}");
    let errors: u64 = requests["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(u)
        .sum();
    assert_eq!(errors, failed, "{requests}");
}

/// Reads a file, or "" when it does not exist.
pub(crate) fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// Sends `sig` to a child this test spawned.
pub(crate) fn signal(child: &Child, sig: i32) {
    let sig = nix::sys::signal::Signal::try_from(sig).expect("a signal number");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig)
        .expect("kill a child this test spawned and has not reaped");
}

/// Runs bench against `server` with model `m` and `args`.
pub(crate) fn bench_at(server: &Server, args: &[&str], limit: Duration) -> Run {
    let url = server.url();
    let mut all = vec!["--endpoint", url.as_str(), "--model", "m"];
    all.extend_from_slice(args);
    bench(&all, limit)
}

/// Runs bench against `server` (model `m`) with `profile`, written to a
/// file of its own, and `args`.
pub(crate) fn bench_profile(
    server: &Server,
    profile: &serde_json::Value,
    args: &[&str],
    limit: Duration,
) -> Run {
    let path = temp_dir("profile").join("run.json");
    std::fs::write(&path, profile.to_string()).unwrap();
    let mut all = vec!["--profile", path.to_str().expect("a UTF-8 temp path")];
    all.extend_from_slice(args);
    bench_at(server, &all, limit)
}

/// A `llmload serve` started under a command prefix (such as `prlimit
/// --nofile=64:64`) whose last stdout line, the final counters, is kept:
/// `stop` returns them. Stopped (SIGTERM, then SIGKILL) on drop.
pub(crate) struct ServeProcess {
    child: Child,
    pub addr: SocketAddr,
    /// It printed an `https://` address (`--tls-cert`).
    pub tls: bool,
    rest: std::sync::mpsc::Receiver<String>,
}

impl ServeProcess {
    pub(crate) fn start(prefix: &[&str], args: &[&str]) -> ServeProcess {
        let mut cmd = match prefix.split_first() {
            Some((first, more)) => {
                let mut c = Command::new(first);
                c.args(more).arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        let mut child = cmd
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn llmload serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("serve printed its address within 10 s");
        let (addr, tls) = parse_first_line(&line);
        ServeProcess {
            child,
            addr,
            tls,
            rest: rx,
        }
    }

    /// `http://ADDR`, or `https://ADDR` when the server speaks TLS.
    pub(crate) fn url(&self) -> String {
        scheme_url(self.tls, self.addr)
    }

    /// SIGTERM, then the final counters line as JSON (within 10 s).
    pub(crate) fn stop(mut self) -> serde_json::Value {
        signal(&self.child, libc::SIGTERM);
        let line = self
            .rest
            .recv_timeout(Duration::from_secs(10))
            .expect("serve printed its counters after SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("counters line: {line:?}"))
    }

    /// SIGKILL to its workers and to itself, then reap: the server dies
    /// without a word (a worker told by its parent's death would close its
    /// connections in order instead).
    pub(crate) fn kill(&mut self) {
        let pid = self.child.id() as i32;
        for w in children(pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(w),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        signal(&self.child, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the util-linux `prlimit` binary can run here.
pub(crate) fn have_prlimit() -> bool {
    Command::new("prlimit")
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

/// The children of `pid`, from /proc: each thread's `children` list where
/// the kernel has them, else every process whose parent is `pid`.
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

/// Starts `llmload bench ARGS --out <fresh dir> --quiet` without waiting;
/// finish it with `wait_run`.
pub(crate) fn spawn_bench(args: &[&str]) -> (Child, PathBuf) {
    let mut all = args.to_vec();
    all.push("--quiet");
    spawn_bench_live(&all)
}

/// `spawn_bench` without `--quiet`: the live lines reach stderr (the report
/// goes to the piped stdout).
pub(crate) fn spawn_bench_live(args: &[&str]) -> (Child, PathBuf) {
    let out = temp_dir("bench");
    let child = Command::new(bin())
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn llmload bench");
    (child, out)
}
