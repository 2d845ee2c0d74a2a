//! Finding a run's shards: every `summary.json` under the given
//! directories (a tree the schedulers leave, one subdirectory per shard, or
//! shard directories themselves), read and checked to be shards of one run
//! before anything is merged. What is wrong is named with its file.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use super::check::{self, Clock};
use crate::metrics::run::RunResult;
use crate::report::events::EventsStats;
use crate::report::state::{self, RunState};
use crate::report::summary::Summary;
use crate::report::summary::shard::ShardSummary;

/// One shard's results directory, read: what the merge needs of its
/// summary, without its state (decoded one shard at a time, `Shard::run`).
pub(crate) struct Shard {
    pub dir: PathBuf,
    /// Its summary.json.
    pub file: PathBuf,
    pub shard: ShardSummary,
    pub complete: bool,
    pub incomplete_reasons: Vec<String>,
    pub events: EventsStats,
    /// Its place on the merged timeline, checked.
    pub clock: Clock,
}

/// The shards of one run, by index, and the indices missing.
pub(crate) struct Found {
    pub run_id: String,
    pub count: u32,
    /// Ascending by index.
    pub shards: Vec<Shard>,
    pub missing: Vec<u32>,
    /// The lowest-index shard's summary (without its state): the
    /// description of the run.
    pub first: Summary,
    /// Seconds the merged timeline spans.
    pub span_s: u64,
}

/// Directories are searched this deep at most (a scheduler's tree is two
/// or three levels; a symlink loop must not hang the merge).
const MAX_DEPTH: usize = 8;

/// Every `summary.json` under `dirs`, sorted, leaving out `skip` (the
/// merge's own output directory). Each file and directory counts once by
/// its canonical path, so a link back into the tree (`self -> .`) or a
/// shard named twice neither repeats a shard nor loops.
fn summaries(dirs: &[PathBuf], skip: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    let mut found = Seen::default();
    for d in dirs {
        if d.is_file() {
            found.file(d.clone());
            continue;
        }
        if !d.is_dir() {
            return Err(format!("{}: no such directory", d.display()));
        }
        walk(d, skip, 0, &mut found)?;
    }
    let mut out: Vec<PathBuf> = found.files.into_values().collect();
    out.sort();
    Ok(out)
}

/// What the search has seen, by canonical path.
#[derive(Default)]
struct Seen {
    dirs: HashSet<PathBuf>,
    /// Canonical path to the shortest path it was found by (the one
    /// through fewest links, as a person would name it).
    files: BTreeMap<PathBuf, PathBuf>,
}

impl Seen {
    fn file(&mut self, path: PathBuf) {
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        let known = self.files.entry(key).or_insert_with(|| path.clone());
        if (path.components().count(), &path) < (known.components().count(), &*known) {
            *known = path;
        }
    }

    /// False when `dir` was searched already.
    fn first_visit(&mut self, dir: &Path) -> bool {
        self.dirs
            .insert(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
    }
}

fn walk(dir: &Path, skip: Option<&Path>, depth: usize, found: &mut Seen) -> Result<(), String> {
    if depth > MAX_DEPTH || skip.is_some_and(|s| same(s, dir)) || !found.first_visit(dir) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut subdirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = entry.path();
        if path.is_dir() {
            subdirs.push(path);
        } else if entry.file_name() == "summary.json" {
            found.file(path);
        }
    }
    // Real directories before links, so a directory reached both ways is
    // searched (and its depth counted) along its own path.
    subdirs.sort_by_key(|d| (d.is_symlink(), d.clone()));
    for d in subdirs {
        walk(&d, skip, depth + 1, found)?;
    }
    Ok(())
}

fn same(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `file` read as JSON, refused by name when it is not an llmload summary
/// or its state is of another version.
fn read(file: &Path) -> Result<serde_json::Value, String> {
    let text = crate::capped_read::text(file, crate::capped_read::LARGE)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let doc = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not an llmload summary.json: not JSON: {e}",
            file.display()
        )
    })?;
    other_version(&doc).map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(doc)
}

/// The shards under `dirs`, checked to be one run: each summary a shard's
/// (merged outputs are passed over), one run id and count, each index once,
/// each with a state whose clocks and timeline fit the others'. Only what
/// the merge needs is kept of each; the runs are read later, one at a
/// time (`Shard::run`).
pub(crate) fn find(dirs: &[PathBuf], skip: Option<&Path>) -> Result<Found, String> {
    let files = summaries(dirs, skip)?;
    let mut shards: Vec<Shard> = Vec::new();
    let mut first: Option<Summary> = None;
    for file in files {
        let dir = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf();
        let mut summary = Summary::from_value(read(&file)?)
            .map_err(|e| format!("{}: not an llmload summary.json: {e}", file.display()))?;
        if summary.merged.is_some() {
            continue;
        }
        let Some(shard) = summary.shard.clone() else {
            return Err(format!(
                "{}: not a shard (no \"shard\"; was it run with --shard?)",
                file.display()
            ));
        };
        let Some(state) = summary.state.take() else {
            return Err(format!(
                "{}: no \"state\" (written by an llmload older than merge); rerun the shard",
                file.display()
            ));
        };
        state
            .readable()
            .map_err(|e| format!("{}: {e}", file.display()))?;
        let clock = check::clock(state.value()).map_err(|e| format!("{}: {e}", file.display()))?;
        drop(state);
        if first
            .as_ref()
            .and_then(|f| f.shard.as_ref())
            .is_none_or(|f| shard.index < f.index)
        {
            first = Some(summary.clone());
        }
        shards.push(Shard {
            dir,
            file,
            shard,
            complete: summary.complete,
            incomplete_reasons: summary.incomplete_reasons,
            events: summary.events,
            clock,
        });
    }
    check(shards, first)
}

impl Shard {
    /// The shard's run, read again from its summary and decoded: one
    /// shard's histograms in memory at a time. An error names the file and
    /// the field.
    pub(crate) fn run(&self) -> Result<RunResult, String> {
        let mut doc = read(&self.file)?;
        // Moved out of the document, not deserialized into a copy of it.
        let state = RunState::from_value(doc["state"].take());
        let run = state
            .to_run()
            .map_err(|e| format!("{}: state: {e}", self.file.display()))?;
        let clock =
            check::clock(state.value()).map_err(|e| format!("{}: {e}", self.file.display()))?;
        if clock != self.clock {
            return Err(format!(
                "{}: changed while the merge read it",
                self.file.display()
            ));
        }
        Ok(run)
    }
}

/// Refuses a shard whose state another llmload wrote, before anything
/// else is read of it: the types behind `state` may differ.
pub(super) fn other_version(doc: &serde_json::Value) -> Result<(), String> {
    let Some(v) = doc["state"]["version"].as_u64() else {
        return Ok(());
    };
    if v == state::VERSION {
        return Ok(());
    }
    let by = doc["version"].as_str().unwrap_or("unknown");
    Err(format!(
        "written by llmload {by} (state version {v}); this llmload {} reads state version {}: \
         merge shards with the llmload version that ran them",
        env!("CARGO_PKG_VERSION"),
        state::VERSION
    ))
}

/// `shards` checked to be one run's, ascending by index, with the span
/// of their merged timeline.
fn check(mut shards: Vec<Shard>, first_summary: Option<Summary>) -> Result<Found, String> {
    let Some(first) = shards.first() else {
        return Err("no shard's summary.json found".into());
    };
    let mut runs: BTreeMap<(&str, u32), Vec<String>> = BTreeMap::new();
    for s in &shards {
        runs.entry((s.shard.run_id.as_str(), s.shard.count))
            .or_default()
            .push(s.dir.display().to_string());
    }
    if runs.len() > 1 {
        let list: Vec<String> = runs
            .iter()
            .map(|((id, n), dirs)| format!("run {id} of {n} shards: {}", dirs.join(", ")))
            .collect();
        return Err(format!(
            "the summaries are not of one run: {}",
            list.join("; ")
        ));
    }
    let (run_id, count) = (first.shard.run_id.clone(), first.shard.count);
    if count == 0 || count > crate::shard::MAX_SHARDS {
        return Err(format!(
            "{}: shard.count {count}: a run has 1 to {} shards",
            first.file.display(),
            crate::shard::MAX_SHARDS
        ));
    }
    shards.sort_by_key(|s| s.shard.index);
    for w in shards.windows(2) {
        if w[0].shard.index == w[1].shard.index {
            return Err(format!(
                "shard {} of {count} appears twice: {} and {}",
                w[0].shard.index,
                w[0].dir.display(),
                w[1].dir.display()
            ));
        }
    }
    if let Some(s) = shards
        .iter()
        .find(|s| s.shard.index == 0 || s.shard.index > count)
    {
        return Err(format!(
            "{}: shard index {} is outside 1..={count}",
            s.dir.display(),
            s.shard.index
        ));
    }
    let missing = (1..=count)
        .filter(|i| shards.binary_search_by_key(i, |s| s.shard.index).is_err())
        .collect();
    let clocks: Vec<Clock> = shards.iter().map(|s| s.clock).collect();
    let span_s = check::merged_span(&clocks)
        .map_err(|(i, e)| format!("{}: {e}", shards[i].file.display()))?;
    Ok(Found {
        run_id,
        count,
        shards,
        missing,
        first: first_summary.expect("a shard was found"),
        span_s,
    })
}
