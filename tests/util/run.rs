//! `llmload` runs: a command line of the binary under test with its output
//! piped, run to its end under a hard time limit or started to be finished
//! later, and what it left (`Run`).

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{Server, bin, children, temp_dir, vm_hwm_kib};

/// The limit of a run that names none.
const LIMIT: Duration = Duration::from_secs(30);

/// The outcome of one `llmload` run.
pub(crate) struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// Its results directory (empty when it has none).
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
            "llmload failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
    }
}

/// A command line of the binary under test, its stdout and stderr piped;
/// finished by `run` or `output` (killed, and the test failed, after its
/// limit: 30 s unless `limit` says), or started by `spawn`.
pub(crate) struct Llmload {
    cmd: Command,
    out: PathBuf,
    limit: Duration,
}

/// `llmload ARGS`.
pub(crate) fn llmload(args: &[&str]) -> Llmload {
    let mut cmd = Command::new(bin());
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    Llmload {
        cmd,
        out: PathBuf::new(),
        limit: LIMIT,
    }
}

impl Llmload {
    pub(crate) fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.cmd.args(args);
        self
    }

    pub(crate) fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub(crate) fn envs(mut self, vars: &[(&str, &str)]) -> Self {
        self.cmd.envs(vars.iter().copied());
        self
    }

    pub(crate) fn env_remove(mut self, key: &str) -> Self {
        self.cmd.env_remove(key);
        self
    }

    pub(crate) fn current_dir(mut self, dir: &Path) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// `--out DIR` with a fresh directory (named with `tag`): the run's
    /// `out`.
    pub(crate) fn fresh_out(mut self, tag: &str) -> Self {
        let out = temp_dir(tag);
        self.cmd.arg("--out").arg(&out);
        self.out = out;
        self
    }

    /// The results directory its own arguments name: the run's `out`.
    pub(crate) fn out(mut self, dir: &Path) -> Self {
        self.out = dir.to_path_buf();
        self
    }

    pub(crate) fn limit(mut self, limit: Duration) -> Self {
        self.limit = limit;
        self
    }

    /// Starts it; `wait_run` finishes it. The results directory comes along.
    pub(crate) fn spawn(mut self) -> (Child, PathBuf) {
        let child = self.cmd.spawn().expect("spawn llmload");
        (child, self.out)
    }

    /// Runs it to its end.
    pub(crate) fn run(self) -> Run {
        let limit = self.limit;
        let (child, out) = self.spawn();
        wait_run(child, out, limit)
    }

    /// Runs it to its end; its output as bytes.
    pub(crate) fn output(mut self) -> Output {
        let child = self.cmd.spawn().expect("spawn llmload");
        let (status, stdout, stderr, _) = finish(child, self.limit);
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

/// Runs `llmload bench ARGS --out <fresh dir> --quiet`, killed after `limit`.
pub(crate) fn bench(args: &[&str], limit: Duration) -> Run {
    run_quiet(&["bench"], args, limit)
}

/// `llmload COMMAND… ARGS --out <fresh dir> --quiet`, killed after `limit`.
pub(crate) fn run_quiet(command: &[&str], args: &[&str], limit: Duration) -> Run {
    llmload(command)
        .args(args)
        .fresh_out(command[0])
        .args(["--quiet"])
        .limit(limit)
        .run()
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

/// Starts `llmload bench ARGS --quiet --out <fresh dir>` without waiting;
/// finish it with `wait_run`.
pub(crate) fn spawn_bench(args: &[&str]) -> (Child, PathBuf) {
    let mut all = args.to_vec();
    all.push("--quiet");
    spawn_bench_live(&all)
}

/// `spawn_bench` without `--quiet`: the live lines reach stderr (the report
/// goes to the piped stdout).
pub(crate) fn spawn_bench_live(args: &[&str]) -> (Child, PathBuf) {
    llmload(&["bench"]).args(args).fresh_out("bench").spawn()
}

/// Waits for a spawned run with a hard limit, collecting its output.
pub(crate) fn wait_run(child: Child, out: PathBuf, limit: Duration) -> Run {
    let (status, stdout, stderr, elapsed) = finish(child, limit);
    Run {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        out,
        elapsed,
    }
}

/// Waits for `child` to exit, reading its piped stdout and stderr as it
/// goes; kills it and fails the test after `limit`.
pub(super) fn finish(
    mut child: Child,
    limit: Duration,
) -> (ExitStatus, Vec<u8>, Vec<u8>, Duration) {
    let start = Instant::now();
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let so = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let se = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "llmload did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&so.join().unwrap()),
                String::from_utf8_lossy(&se.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (
        status,
        so.join().unwrap(),
        se.join().unwrap(),
        start.elapsed(),
    )
}

/// `wait_run`, sampling the peak resident set (`VmHWM`) of the child's own
/// children (a bench's workers) every 10 ms meanwhile: the run, and the
/// largest peak seen in KiB (`None` when no child was ever seen).
pub(crate) fn wait_run_watching(child: Child, out: PathBuf, limit: Duration) -> (Run, Option<u64>) {
    let pid = child.id() as i32;
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut peak = None;
            while !done.load(Ordering::Relaxed) {
                for c in children(pid) {
                    if let Some(kib) = vm_hwm_kib(c) {
                        peak = Some(peak.unwrap_or(0).max(kib));
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        })
    };
    let run = wait_run(child, out, limit);
    done.store(true, Ordering::Relaxed);
    (run, sampler.join().unwrap())
}
