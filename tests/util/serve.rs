//! `llmload serve` as a child process: started on 127.0.0.1 port 0, its
//! address read from its first line, stopped (SIGTERM, then SIGKILL) on
//! drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use super::{bin, children, signal};

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
        let (child, addr, tls, _) = spawn(Command::new(bin()), args);
        Server { child, addr, tls }
    }

    /// `http://ADDR`, or `https://ADDR` when the server speaks TLS.
    pub(crate) fn url(&self) -> String {
        scheme_url(self.tls, self.addr)
    }
}

/// Starts `CMD serve --listen 127.0.0.1:0 ARGS` and reads its address from
/// its first line; the later lines come through the receiver (which may
/// be dropped: the pipe is drained all the same, so the server never
/// blocks on it).
fn spawn(mut cmd: Command, args: &[&str]) -> (Child, SocketAddr, bool, Receiver<String>) {
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
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("serve printed its address within 10 s");
    let (addr, tls) = parse_first_line(&line);
    (child, addr, tls, rx)
}

impl Drop for Server {
    fn drop(&mut self) {
        terminate(&mut self.child);
    }
}

/// SIGTERM, and SIGKILL if the child is still there 5 s later; reaped.
fn terminate(child: &mut Child) {
    signal(child, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `llmload serve --tls-cert CERT --tls-key KEY --ttft 1ms EXTRA`: https,
/// its URL (`url`) by address; the test certificates name both 127.0.0.1
/// and localhost. The first token waits 1 ms, so a TTFT is never zero.
pub(crate) fn tls_server(cert: &Path, key: &Path, extra: &[&str]) -> Server {
    let path = |p: &'_ Path| p.to_str().expect("a UTF-8 temp path").to_string();
    let (cert, key) = (path(cert), path(key));
    let mut args = vec!["--tls-cert", &cert, "--tls-key", &key, "--ttft", "1ms"];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn scheme_url(tls: bool, addr: SocketAddr) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{addr}")
}

/// A `llmload serve` started under a command prefix (such as `prlimit
/// --nofile=64:64`) whose last stdout line, the final counters, is kept:
/// `stop` returns them. Stopped (SIGTERM, then SIGKILL) on drop.
pub(crate) struct ServeProcess {
    child: Child,
    pub addr: SocketAddr,
    /// It printed an `https://` address (`--tls-cert`).
    pub tls: bool,
    rest: Receiver<String>,
}

impl ServeProcess {
    pub(crate) fn start(prefix: &[&str], args: &[&str]) -> ServeProcess {
        let cmd = match prefix.split_first() {
            Some((first, more)) => {
                let mut c = Command::new(first);
                c.args(more).arg(bin());
                c
            }
            None => Command::new(bin()),
        };
        let (child, addr, tls, rest) = spawn(cmd, args);
        ServeProcess {
            child,
            addr,
            tls,
            rest,
        }
    }

    /// `http://ADDR`, or `https://ADDR` when the server speaks TLS.
    pub(crate) fn url(&self) -> String {
        scheme_url(self.tls, self.addr)
    }

    /// SIGTERM, then the final counters line as JSON (within 10 s); the
    /// server must then exit with status 0 (within 5 s).
    pub(crate) fn stop(mut self) -> serde_json::Value {
        signal(&self.child, libc::SIGTERM);
        let line = self
            .rest
            .recv_timeout(Duration::from_secs(10))
            .expect("serve printed its counters after SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait for serve") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "serve still runs 5 s after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        assert!(status.success(), "serve exited {status:?}");
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
        terminate(&mut self.child);
    }
}
