//! Every command in README.md and docs/guide/*.md runs, as rustdoc runs
//! examples. The rules, which a document must follow:
//!
//! - A ```` ```sh ```` block is run. ```` ```sh no-run ```` opts a block out
//!   (for what needs a GPU cluster, Kubernetes or Slurm); opt-outs are
//!   counted and listed, and more than [`MAX_OPT_OUTS`] fail the test. A
//!   `bash`, `shell`, `console`, `zsh` or unlabelled block holding an
//!   `llmload` line fails: it would escape the test. ```` ```json NAME ````
//!   and ```` ```yaml NAME ```` blocks write file NAME for the blocks after.
//! - A document's blocks run in order, in one fresh directory that holds the
//!   fixtures the documents name ([`make_fixtures`]: prompts.jsonl, a CA,
//!   a tokenizer in a Hugging Face cache…), with `HOME` set to it and
//!   `OPENAI_API_KEY` set.
//! - A line (`\` continuations joined, `#` comments dropped) is one of:
//!   `llmload …`, run, with `&` at its end run in the background until
//!   `wait`, and `NAME=value` words before it set in its environment;
//!   `NAME=value` (or `export NAME=value`), a variable for later lines;
//!   `wait`; or a line of another program in [`SKIPPED`] (cargo, kubectl,
//!   scripts/…), skipped and listed. Anything else, and pipes, redirections
//!   and `;`, fail: a document's commands are simple.
//! - Words are expanded by bash (quotes, `$VAR`, `$(…)`, `~`).
//! - Each command must exit 0, or one of the statuses a trailing
//!   `# exit N[, or M…]` comment gives.
//! - The rewrites, every one printed beside the command it changed:
//!   - placeholder endpoints ([`PLACEHOLDERS`]: `http://10.0.0.5:8000`,
//!     `http://10.0.0.6:8000`, `https://gateway.internal`) become `llmload
//!     serve`s this test started on 127.0.0.1 (the last with TLS, its CA
//!     being the fixture `corp-ca.pem`), and the source addresses
//!     `10.0.0.20-10.0.0.23` become `127.0.0.1-127.0.0.4`; the same in the
//!     files blocks write. Any other host fails the test: nothing leaves
//!     the machine.
//!   - `llmload serve` runs in the background until its block ends, where
//!     it must still be up and stop cleanly; it listens on port 0, and its
//!     `--listen` address (default `127.0.0.1:8000`) in the block's later
//!     lines becomes the address it got.
//!   - Lengths are capped ([`CAPS`]): durations at 1 s, request and sample
//!     counts at 20, concurrency at 64; the durations of a JSON profile
//!     a command reads (`--profile FILE.json`) likewise, in place.
//!   - `bench`, `benchmark offline` and `benchmark online` without a run
//!     length get `--duration 1s` (their defaults are 10 s and 600 s); a
//!     `bench` with `--profile`, `--config` or `--phase acc` keeps the
//!     length those give.
//!
//! So a document shows commands as a user would run them, at a user's
//! lengths, and the whole module stays within about a minute and a half.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::pki::Pki;
use crate::shards::SCHEDULER_VARS;
use crate::util::{Server, bin, parse_first_line, signal, temp_dir, wait_run};

/// More opt-outs than this fail the test: examples that do not run rot.
const MAX_OPT_OUTS: usize = 3;

/// The bound on one command (a capped run takes a few seconds).
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// The key the documents' `$OPENAI_API_KEY` holds.
const API_KEY: &str = "sk-docs-test";

/// Programs a runnable block may name besides llmload, skipped: building,
/// installing, deploying. A path under one of the `…/` entries counts too.
const SKIPPED: &[&str] = &[
    "cargo", "scripts/", "perf/", "kubectl", "sbatch", "srun", "docker", "podman", "curl", "sudo",
    "apt-get", "git", "ulimit",
];

#[derive(Clone, Copy)]
enum Target {
    A,
    B,
    Tls,
}

/// Endpoints the documents write, and the test server each stands for.
const PLACEHOLDERS: &[(&str, Target)] = &[
    ("http://10.0.0.5:8000", Target::A),
    ("http://10.0.0.6:8000", Target::B),
    ("https://gateway.internal", Target::Tls),
];

/// Source addresses the documents write, and the local ones they become.
const ADDRESSES: &[(&str, &str)] = &[("10.0.0.20-10.0.0.23", "127.0.0.1-127.0.0.4")];

enum Cap {
    /// Seconds; a bare number is seconds (milliseconds for `benchmark`).
    Duration(f64),
    Count(u64),
}

/// The longest value each flag keeps.
const CAPS: &[(&str, Cap)] = &[
    ("--duration", Cap::Duration(1.0)),
    ("--warmup", Cap::Duration(1.0)),
    ("--min-duration", Cap::Duration(1.0)),
    ("--max-duration", Cap::Duration(1.0)),
    ("--requests", Cap::Count(20)),
    ("--min-requests", Cap::Count(20)),
    ("--num-samples", Cap::Count(20)),
    ("--runtime.n-samples-to-issue", Cap::Count(20)),
    ("--warmup-requests", Cap::Count(20)),
    ("--samples", Cap::Count(20)),
    ("--audit-samples", Cap::Count(20)),
    ("--concurrency", Cap::Count(64)),
    ("--runtime.min-duration-ms", Cap::Count(1000)),
    ("--runtime.max-duration-ms", Cap::Count(1000)),
];

/// Profile keys holding durations, capped as `--duration` is.
const PROFILE_DURATIONS: &[&str] = &["duration", "warmup", "min_duration", "max_duration"];

#[test]
fn every_command_in_the_readme_and_guides_runs() {
    let started = Instant::now();
    let pki = Pki::new(&temp_dir("docs-pki"));
    let pace = ["--ttft", "5ms", "--tpot", "100us"];
    let tls_args: Vec<&str> = [
        "--tls-cert",
        pki.cert.to_str().unwrap(),
        "--tls-key",
        pki.key.to_str().unwrap(),
    ]
    .into_iter()
    .chain(pace)
    .collect();
    let servers = Servers {
        a: Server::start(&pace),
        b: Server::start(&pace),
        tls: Server::start(&tls_args),
    };
    let ctx = Ctx {
        servers: Some(&servers),
        pki: Some(&pki),
    };
    let mut all = Outcome::default();
    for path in documents() {
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let t = Instant::now();
        let out = run_document(&name, &text, &ctx);
        eprintln!(
            "{name}: {} commands in {:.1} s",
            out.run,
            t.elapsed().as_secs_f64()
        );
        all.add(out);
    }
    eprintln!(
        "documents: {} commands run, {} lines skipped, {} blocks opted out, {:.1} s",
        all.run,
        all.skipped.len(),
        all.opt_outs.len(),
        started.elapsed().as_secs_f64()
    );
    for s in &all.skipped {
        eprintln!("  skipped  {s}");
    }
    for s in &all.opt_outs {
        eprintln!("  no-run   {s}");
    }
    assert!(
        all.failures.is_empty(),
        "{} of the documents' commands failed:\n\n{}",
        all.failures.len(),
        all.failures.join("\n\n")
    );
    assert!(
        all.opt_outs.len() <= MAX_OPT_OUTS,
        "{} blocks opt out (at most {MAX_OPT_OUTS}): {:#?}",
        all.opt_outs.len(),
        all.opt_outs
    );
    assert!(
        all.run >= 30,
        "only {} commands ran: are the blocks still ```sh?",
        all.run
    );
}

/// The runner itself: each kind of mistake a document can make is caught,
/// so the test above cannot pass by running nothing.
#[test]
fn the_runner_fails_what_is_wrong_and_lists_what_it_skips() {
    let doc = "# t\n\n```sh\n\
               llmload validate missing.json\n\
               llmload info  # exit 3\n\
               frobnicate --now\n\
               llmload probe --endpoint http://192.0.2.1:8000\n\
               llmload info | head\n\
               cargo build\n\
               v=$(( 2 + 3 ))\n\
               llmload info --json  # exit 0, or $v\n\
               ```\n\n\
               ```bash\nllmload info\n```\n\n\
               ```sh no-run\nllmload bench --endpoint http://10.0.0.5:8000\n```\n";
    let out = run_document(
        "t.md",
        doc,
        &Ctx {
            servers: None,
            pki: None,
        },
    );
    let expect = [
        ("t.md:4: llmload validate missing.json", "expected 0"),
        ("t.md:5: llmload info", "exit status 0, expected 3"),
        ("t.md:6: frobnicate --now", "not an llmload line"),
        ("t.md:7:", "http://192.0.2.1:8000"),
        ("t.md:8: llmload info | head", "pipes, redirections"),
        ("t.md:14:", "```bash"),
    ];
    assert_eq!(
        out.failures.len(),
        expect.len(),
        "failures: {:#?}",
        out.failures
    );
    for ((at, what), got) in expect.iter().zip(&out.failures) {
        assert!(
            got.starts_with(at) && got.contains(what),
            "expected {at:?} … {what:?}, got:\n{got}"
        );
    }
    assert_eq!(out.run, 3, "validate, info and info --json ran");
    assert_eq!(out.skipped, ["t.md:9: cargo build"]);
    assert_eq!(out.opt_outs.len(), 1, "{:?}", out.opt_outs);
}

struct Servers {
    a: Server,
    b: Server,
    tls: Server,
}

impl Servers {
    fn url(&self, t: Target) -> String {
        match t {
            Target::A => self.a.url(),
            Target::B => self.b.url(),
            Target::Tls => self.tls.url(),
        }
    }
}

struct Ctx<'a> {
    servers: Option<&'a Servers>,
    pki: Option<&'a Pki>,
}

#[derive(Default)]
struct Outcome {
    run: usize,
    skipped: Vec<String>,
    opt_outs: Vec<String>,
    failures: Vec<String>,
}

impl Outcome {
    fn add(&mut self, o: Outcome) {
        self.run += o.run;
        self.skipped.extend(o.skipped);
        self.opt_outs.extend(o.opt_outs);
        self.failures.extend(o.failures);
    }
}

fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guides.sort();
    std::iter::once(root.join("README.md"))
        .chain(guides)
        .collect()
}

/// A fenced block: the fence's info string and its lines, numbered from 1.
struct Block {
    line: usize,
    info: String,
    body: Vec<(usize, String)>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let fence = line.trim_start().starts_with("```");
        match open.take() {
            Some(b) if fence => out.push(b),
            Some(mut b) => {
                b.body.push((n, line.to_string()));
                open = Some(b);
            }
            None if fence => {
                open = Some(Block {
                    line: n,
                    info: line.trim_start()[3..].trim().to_string(),
                    body: Vec::new(),
                })
            }
            None => {}
        }
    }
    out
}

/// Runs one document's blocks in order in a fresh directory.
fn run_document(name: &str, text: &str, ctx: &Ctx) -> Outcome {
    let dir = temp_dir(&format!(
        "docs-{}",
        name.replace(['/', '.'], "-").to_lowercase()
    ));
    make_fixtures(&dir, ctx);
    let mut out = Outcome::default();
    let mut doc = DocRun {
        name,
        dir: &dir,
        ctx,
        vars: BTreeMap::new(),
        out: &mut out,
    };
    for b in blocks(text) {
        let mut words = b.info.split_whitespace();
        let lang = words.next().unwrap_or("");
        let attrs: Vec<&str> = words.collect();
        let has_llmload = b
            .body
            .iter()
            .any(|(_, l)| l.trim_start().starts_with("llmload "));
        match (lang, attrs.as_slice()) {
            ("sh", []) => doc.run_block(&b),
            ("sh", ["no-run"]) => {
                let first = b.body.first().map(|(_, l)| l.trim()).unwrap_or("");
                doc.out.opt_outs.push(format!("{name}:{}: {first}", b.line));
            }
            ("sh", other) => doc.out.failures.push(format!(
                "{name}:{}: ```sh {}: the only marker is no-run",
                b.line,
                other.join(" ")
            )),
            ("json" | "yaml", [file]) => doc.write_file(&b, file),
            ("bash" | "shell" | "console" | "zsh" | "", _) if has_llmload => {
                doc.out.failures.push(format!(
                    "{name}:{}: ```{lang} holds an llmload command: write ```sh so it is run \
                     (or ```sh no-run)",
                    b.line
                ))
            }
            _ => {}
        }
    }
    if out.failures.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("{name}: its directory is kept: {}", dir.display());
    }
    out
}

struct DocRun<'a> {
    name: &'a str,
    dir: &'a Path,
    ctx: &'a Ctx<'a>,
    /// Shell variables set by earlier lines.
    vars: BTreeMap<String, String>,
    out: &'a mut Outcome,
}

/// A command started with `&`, waited for by `wait` or the block's end.
struct Background {
    at: String,
    child: Child,
    expect: Vec<i32>,
}

impl DocRun<'_> {
    fn run_block(&mut self, b: &Block) {
        let mut serves: Vec<DocServe> = Vec::new();
        let mut background: Vec<Background> = Vec::new();
        for (n, line) in logical_lines(&b.body) {
            let at = format!("{}:{n}", self.name);
            if let Err(e) = self.run_line(&at, &line, &mut serves, &mut background) {
                self.out.failures.push(format!("{at}: {line}\n  {e}"));
            }
        }
        self.wait(&mut background);
        for s in serves {
            if let Err(e) = s.stop() {
                self.out.failures.push(e);
            }
        }
    }

    fn run_line(
        &mut self,
        at: &str,
        line: &str,
        serves: &mut Vec<DocServe>,
        background: &mut Vec<Background>,
    ) -> Result<(), String> {
        let parsed = parse_line(line)?;
        let text = parsed.command.trim();
        let text = text.strip_prefix("export ").unwrap_or(text);
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some(llmload) = words.iter().position(|w| *w == "llmload") else {
            if let Some((name, value)) = assignment(text) {
                let v = self.shell_value(name, value)?;
                self.vars.insert(name.to_string(), v);
                return Ok(());
            }
            if text == "wait" {
                self.wait(background);
                return Ok(());
            }
            let program = words.first().copied().unwrap_or("");
            if SKIPPED
                .iter()
                .any(|s| program == *s || (s.ends_with('/') && program.starts_with(s)))
            {
                self.out.skipped.push(format!("{at}: {text}"));
                return Ok(());
            }
            return Err(format!(
                "not an llmload line, a variable, `wait`, or a program the test skips \
                 ({SKIPPED:?})"
            ));
        };
        let mut env = Vec::new();
        for w in &words[..llmload] {
            let (k, v) = assignment(w).ok_or_else(|| {
                format!("{w:?} before llmload: only NAME=value words may come first")
            })?;
            env.push((k.to_string(), self.shell_value(k, v)?));
        }
        let start = text.find("llmload").unwrap();
        let argv = self.expand(&text[start..], &env)?;
        if argv.first().map(String::as_str) != Some("llmload") {
            return Err(format!("expanded to {argv:?}"));
        }
        let (argv, notes) = self.rewrite(argv, serves)?;
        let shown = argv[1..].join(" ");
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!("  [{}]", notes.join("; "))
        };
        if argv.get(1).map(String::as_str) == Some("serve") {
            let s = DocServe::start(at, self.command(&env), &argv[1..], self.dir)?;
            eprintln!("{at}: llmload {shown}{notes} → listening at {}", s.url);
            serves.push(s);
            self.out.run += 1;
            return Ok(());
        }
        let child = self
            .command(&env)
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        self.out.run += 1;
        if parsed.background {
            eprintln!("{at}: llmload {shown}{notes} &");
            background.push(Background {
                at: format!("{at}: llmload {shown}"),
                child,
                expect: parsed.expect,
            });
            return Ok(());
        }
        let run = wait_run(child, self.dir.to_path_buf(), COMMAND_LIMIT);
        let code = run.status.code();
        eprintln!(
            "{at}: llmload {shown}{notes} → {} in {:.1} s",
            code.map_or("a signal".to_string(), |c| format!("exit {c}")),
            run.elapsed.as_secs_f64()
        );
        check_status(code, &parsed.expect, &run.stdout, &run.stderr)
            .map_err(|e| format!("ran: llmload {shown}{notes}\n  {e}"))
    }

    /// Waits for the background commands, recording each one's failure.
    fn wait(&mut self, background: &mut Vec<Background>) {
        for b in background.drain(..) {
            let run = wait_run(b.child, self.dir.to_path_buf(), COMMAND_LIMIT);
            let code = run.status.code();
            eprintln!("{} → {code:?}", b.at);
            if let Err(e) = check_status(code, &b.expect, &run.stdout, &run.stderr) {
                self.out
                    .failures
                    .push(format!("{} (in the background)\n  {e}", b.at));
            }
        }
    }

    /// A process in the document's directory and environment.
    fn command(&self, env: &[(String, String)]) -> Command {
        let mut c = Command::new(bin());
        environment(&mut c, self.dir, &self.vars, env);
        c
    }

    /// The words of `text` as bash splits and expands them.
    fn expand(&self, text: &str, env: &[(String, String)]) -> Result<Vec<String>, String> {
        let out = self.bash(&format!("printf '%s\\0' {text}"), env)?;
        Ok(out.split_terminator('\0').map(str::to_string).collect())
    }

    /// The value bash gives `NAME=value`.
    fn shell_value(&self, name: &str, value: &str) -> Result<String, String> {
        self.bash(&format!("{name}={value}; printf %s \"${name}\""), &[])
    }

    /// What `script` prints, run by bash in the document's environment.
    fn bash(&self, script: &str, env: &[(String, String)]) -> Result<String, String> {
        let mut c = Command::new("bash");
        environment(&mut c, self.dir, &self.vars, env);
        let out = c
            .arg("-c")
            .arg(script)
            .output()
            .map_err(|e| format!("bash: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "bash could not run `{script}`: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        String::from_utf8(out.stdout).map_err(|e| e.to_string())
    }

    /// The rewrites of the module doc, each described in the notes.
    fn rewrite(
        &self,
        mut argv: Vec<String>,
        serves: &[DocServe],
    ) -> Result<(Vec<String>, Vec<String>), String> {
        let mut notes = Vec::new();
        for w in argv.iter_mut() {
            let before = w.clone();
            for s in serves {
                for scheme in ["http://", "https://"] {
                    *w = w.replace(&format!("{scheme}{}", s.listen), &s.url);
                }
            }
            *w = self.rewrite_text(w);
            if *w != before {
                notes.push(format!("{before} → {w}"));
            }
        }
        let sub = argv.get(1).cloned().unwrap_or_default();
        let benchmark = sub == "benchmark";
        let mut i = 2;
        while i < argv.len() {
            let (flag, value, joined) = match argv[i].split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), v.to_string(), true),
                _ => (
                    argv[i].clone(),
                    argv.get(i + 1).cloned().unwrap_or_default(),
                    false,
                ),
            };
            if let Some((_, cap)) = CAPS.iter().find(|(f, _)| *f == flag)
                && let Some(capped) = capped(cap, &value, benchmark)
            {
                notes.push(format!("{flag} {value} → {capped}"));
                if joined {
                    argv[i] = format!("{flag}={capped}");
                } else {
                    argv[i + 1] = capped;
                }
            }
            if flag == "--profile" && value.ends_with(".json") {
                notes.extend(cap_profile(&self.dir.join(&value))?);
            }
            i += 1;
        }
        let has = |flags: &[&str]| {
            argv.iter()
                .any(|a| flags.contains(&a.split('=').next().unwrap()))
        };
        let lengthless = match (sub.as_str(), argv.get(2).map(String::as_str)) {
            ("bench", _) => {
                !has(&[
                    "--duration",
                    "--requests",
                    "--min-duration",
                    "--min-requests",
                    "--profile",
                    "--config",
                ]) && !argv.windows(2).any(|w| w[0] == "--phase" && w[1] == "acc")
            }
            ("benchmark", Some("offline" | "online")) => !has(&[
                "--duration",
                "--num-samples",
                "--runtime.min-duration-ms",
                "--runtime.n-samples-to-issue",
            ]),
            _ => false,
        };
        if lengthless {
            argv.extend(["--duration".to_string(), "1s".to_string()]);
            notes.push("+ --duration 1s".to_string());
        }
        if let Some(w) = argv.iter().find(|w| foreign_host(w)) {
            return Err(format!(
                "{w}: a host this test has no stand-in for (placeholders: {:?})",
                PLACEHOLDERS.iter().map(|(p, _)| *p).collect::<Vec<_>>()
            ));
        }
        Ok((argv, notes))
    }

    /// Placeholder endpoints and addresses in `text` made this test's.
    fn rewrite_text(&self, text: &str) -> String {
        let mut t = text.to_string();
        if let Some(servers) = self.ctx.servers {
            for (p, target) in PLACEHOLDERS {
                t = t.replace(p, &servers.url(*target));
            }
        }
        for (p, local) in ADDRESSES {
            t = t.replace(p, local);
        }
        t
    }

    /// A ```json NAME / ```yaml NAME block, written with its placeholders
    /// rewritten.
    fn write_file(&mut self, b: &Block, file: &str) {
        let body: String = b.body.iter().map(|(_, l)| format!("{l}\n")).collect();
        let text = self.rewrite_text(&body);
        if let Err(e) = std::fs::write(self.dir.join(file), &text) {
            self.out
                .failures
                .push(format!("{}:{}: writing {file}: {e}", self.name, b.line));
        }
        eprintln!("{}:{}: wrote {file}", self.name, b.line);
    }
}

/// `c` in the document's directory, `HOME` and environment: the shell
/// variables set so far and the command's own `NAME=value` words.
fn environment(
    c: &mut Command,
    dir: &Path,
    vars: &BTreeMap<String, String>,
    env: &[(String, String)],
) {
    c.current_dir(dir)
        .env("HOME", dir)
        .env("OPENAI_API_KEY", API_KEY);
    // The fixture tokenizer is found through HOME's cache, and shards are
    // given on the command line, not by a scheduler around the test.
    let caches = [
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_HOME",
        "XDG_CACHE_HOME",
    ];
    for k in caches.iter().chain(SCHEDULER_VARS) {
        c.env_remove(k);
    }
    c.envs(vars).envs(env.iter().map(|(k, v)| (k, v)));
}

/// Whether `w` holds a URL whose host is not this machine.
fn foreign_host(w: &str) -> bool {
    w.match_indices("://").any(|(i, _)| {
        let authority = w[i + 3..].split(['/', ',', '?']).next().unwrap();
        let host = match authority.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => authority,
        };
        host != "127.0.0.1" && host != "localhost"
    })
}

/// The line without its trailing comment, what that comment expects, and
/// whether it ends with `&`; pipes, redirections and `;` are refused.
struct Line {
    command: String,
    expect: Vec<i32>,
    background: bool,
}

fn parse_line(line: &str) -> Result<Line, String> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut end = line.len();
    let mut prev = ' ';
    let mut amps = Vec::new();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' && !single {
            escaped = true;
        } else if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        } else if !single && !double {
            if c == '#' && prev.is_whitespace() {
                end = i;
                break;
            }
            if matches!(c, '|' | ';' | '<' | '>') {
                return Err("pipes, redirections and `;` are not run: one command a line".into());
            }
            if c == '&' {
                amps.push(i);
            }
        }
        prev = c;
    }
    let comment = line[end..].trim_start_matches('#').trim();
    let mut command = line[..end].trim_end().to_string();
    let background = match amps.as_slice() {
        [] => false,
        [i] if *i + 1 == command.len() => true,
        _ => return Err("`&` only once, at the end of a line".into()),
    };
    if background {
        command.pop();
    }
    let mut expect = Vec::new();
    if let Some(rest) = comment.strip_prefix("exit ") {
        for w in rest.split_whitespace() {
            match w.trim_end_matches(',').parse() {
                Ok(n) => expect.push(n),
                Err(_) if w == "or" => {}
                Err(_) => break,
            }
        }
    }
    if expect.is_empty() {
        expect.push(0);
    }
    Ok(Line {
        command,
        expect,
        background,
    })
}

/// `NAME=value` as a shell assignment: the name and the unexpanded value.
fn assignment(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once('=')?;
    let ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    ok.then_some((name, value))
}

/// A block's lines with `\` continuations joined and comment lines dropped,
/// each numbered by its first line.
fn logical_lines(body: &[(usize, String)]) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (n, line) in body {
        let (start, mut text) = match open.take() {
            Some((s, t)) => (s, t + " " + line.trim()),
            None => (*n, line.trim().to_string()),
        };
        if let Some(t) = text.strip_suffix('\\') {
            text = t.trim_end().to_string();
            open = Some((start, text));
            continue;
        }
        if !text.is_empty() && !text.starts_with('#') {
            out.push((start, text));
        }
    }
    out.extend(open);
    out
}

fn check_status(
    code: Option<i32>,
    expect: &[i32],
    stdout: &str,
    stderr: &str,
) -> Result<(), String> {
    if code.is_some_and(|c| expect.contains(&c)) {
        return Ok(());
    }
    let tail = |s: &str| {
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n    ")
    };
    Err(format!(
        "exit status {}, expected {}\n  stdout (end):\n    {}\n  stderr (end):\n    {}",
        code.map_or("none (a signal)".to_string(), |c| c.to_string()),
        expect
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" or "),
        tail(stdout),
        tail(stderr)
    ))
}

/// The capped value, when `value` is over the cap.
fn capped(cap: &Cap, value: &str, benchmark: bool) -> Option<String> {
    match cap {
        Cap::Count(max) => {
            let n: u64 = value.parse().ok()?;
            (n > *max).then(|| max.to_string())
        }
        Cap::Duration(max) => {
            let s = seconds(value, benchmark)?;
            (s > *max).then(|| format!("{max}s"))
        }
    }
}

/// A duration as the documents write them (`60s`, `10m`, `500ms`).
fn seconds(value: &str, bare_ms: bool) -> Option<f64> {
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (num, unit) = value.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match unit {
        "" if bare_ms => 1e-3,
        "" | "s" => 1.0,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Some(n * scale)
}

/// Caps the durations of a JSON profile in place; the notes say which.
fn cap_profile(path: &Path) -> Result<Vec<String>, String> {
    fn walk(v: &mut serde_json::Value, at: &str, notes: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    let here = format!("{at}.{k}");
                    if PROFILE_DURATIONS.contains(&k.as_str())
                        && let Some(s) = x.as_str()
                        && let Some(c) = capped(&Cap::Duration(1.0), s, false)
                    {
                        notes.push(format!("{} {s} → {c}", &here[1..]));
                        *x = serde_json::Value::String(c);
                    } else {
                        walk(x, &here, notes);
                    }
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter_mut().enumerate() {
                    walk(x, &format!("{at}[{i}]"), notes);
                }
            }
            _ => {}
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut notes = Vec::new();
    walk(&mut v, "", &mut notes);
    if !notes.is_empty() {
        std::fs::write(path, serde_json::to_string_pretty(&v).unwrap())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(notes)
}

/// A `llmload serve` a block started, listening where the block said.
struct DocServe {
    child: Child,
    at: String,
    /// The `--listen` the document gave (or serve's default).
    listen: String,
    url: String,
    stderr: PathBuf,
}

impl DocServe {
    fn start(at: &str, mut c: Command, args: &[String], dir: &Path) -> Result<DocServe, String> {
        let mut listen = "127.0.0.1:8000".to_string();
        let mut rest = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "--listen" {
                listen = it.next().cloned().unwrap_or_default();
            } else if let Some(v) = a.strip_prefix("--listen=") {
                listen = v.to_string();
            } else {
                rest.push(a.clone());
            }
        }
        let stderr = dir.join(format!("serve-{}.stderr", at.replace([':', '/', '.'], "-")));
        let mut child = c
            .arg(&rest[0])
            .args(["--listen", "127.0.0.1:0"])
            .args(&rest[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next().and_then(Result::ok).unwrap_or_default());
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let first = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        if first.trim().is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "serve printed no address within 10 s: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            ));
        }
        let (addr, tls) = parse_first_line(&first);
        let url = format!("{}://{addr}", if tls { "https" } else { "http" });
        Ok(DocServe {
            child,
            at: at.to_string(),
            listen,
            url,
            stderr,
        })
    }

    /// The block is over: the server must still be up, and stop cleanly on
    /// SIGTERM.
    fn stop(mut self) -> Result<(), String> {
        let why = |what: String| {
            format!(
                "{}: llmload serve {what}; its stderr:\n{}",
                self.at,
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            )
        };
        if let Ok(Some(s)) = self.child.try_wait() {
            return Err(why(format!("exited before its block ended ({s})")));
        }
        signal(&self.child, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return if s.success() {
                    Ok(())
                } else {
                    Err(why(format!("ended with {s} on SIGTERM")))
                };
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(why("did not stop within 10 s of SIGTERM".to_string()));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The files the documents name, in `dir`: small, so a command over them
/// is quick. Certificates and the MLPerf config need the test's PKI and
/// servers; the runner's own test has neither.
fn make_fixtures(dir: &Path, ctx: &Ctx) {
    let w = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let copy = |from: &str, to: &str| {
        let to = dir.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(fixtures.join(from), to).unwrap();
    };
    let lines = |n: usize, f: &dyn Fn(usize) -> serde_json::Value| -> String {
        (0..n).map(|i| format!("{}\n", f(i))).collect()
    };
    w(
        "prompts.jsonl",
        &lines(
            64,
            &|i| serde_json::json!({"prompt": format!("Question {i}: what is {i} plus {i}?")}),
        ),
    );
    w(
        "q.jsonl",
        &lines(
            8,
            &|i| serde_json::json!({"prompt": format!("What is {i} plus {i}?")}),
        ),
    );
    w(
        "known.jsonl",
        &lines(
            4,
            &|i| serde_json::json!({"prompt": format!("What is {i} plus {i}?"), "reply": (2 * i).to_string()}),
        ),
    );
    w(
        "chats.jsonl",
        &lines(8, &|i| {
            serde_json::json!({"messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": format!("hi {i}")}
            ]})
        }),
    );
    w(
        "gpqa.jsonl",
        &lines(
            4,
            &|i| serde_json::json!({"question": format!("Q{i}: A, B, C or D?"), "gt": "choice1"}),
        ),
    );
    w(
        "news.jsonl",
        &lines(3, &|i| {
            serde_json::json!({
                "article": format!("Story {i}. The council met on Tuesday. It approved the budget."),
                "highlights": "The council approved the budget."
            })
        }),
    );
    let mut csv = String::from("question,len\n");
    for i in 0..8 {
        let _ = writeln!(csv, "\"What is {i} times {i}?\",{}", 8 + i);
    }
    w("qa.csv", &csv);
    copy("columnar/rows-snappy.parquet", "questions.parquet");
    for split in ["train", "test"] {
        for f in [
            "data-00000-of-00001.arrow",
            "dataset_info.json",
            "state.json",
        ] {
            copy(
                &format!("columnar/hf-dict/{split}/{f}"),
                &format!("gpqa-hf/{split}/{f}"),
            );
        }
    }
    copy(
        "columnar/hf-dict/dataset_dict.json",
        "gpqa-hf/dataset_dict.json",
    );
    copy("tiny-chat/tokenizer.json", "tokenizer.json");
    let model = ".cache/huggingface/hub/models--meta-llama--Llama-3.1-8B-Instruct";
    w(&format!("{model}/refs/main"), "docs\n");
    copy(
        "tiny-chat/tokenizer.json",
        &format!("{model}/snapshots/docs/tokenizer.json"),
    );
    w(".config/llm-key", &format!("{API_KEY}\n"));
    if let Some(pki) = ctx.pki {
        for (from, to) in [
            (&pki.ca, "corp-ca.pem"),
            (&pki.cert, "server.pem"),
            (&pki.key, "server.key"),
            (&pki.client_cert, "client.pem"),
            (&pki.client_key, "client.key"),
        ] {
            std::fs::copy(from, dir.join(to)).unwrap();
        }
    }
    if let Some(servers) = ctx.servers {
        w(
            "run.yaml",
            &format!(
                "name: docs\ntype: offline\nmodel_params:\n  name: llama\n\
                 datasets:\n- name: perf\n  type: performance\n  path: prompts.jsonl\n  \
                 parser:\n    prompt: prompt\nsettings:\n  runtime:\n    n_samples_to_issue: 64\n\
                 endpoint_config:\n  endpoints:\n  - {}\n",
                servers.a.url()
            ),
        );
    }
}
