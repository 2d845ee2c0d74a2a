//! `llmload merge DIR… [--out DIR]`: a run's shards made one run. The
//! shards' summary.json files are found under the directories given, checked
//! to be one run's, merged exactly (`crate::merge`), and the merged run is
//! written as a single run writes its results.

use std::path::PathBuf;

use argh::FromArgs;

use crate::cli::{errln, out, outln};
use crate::report;

/// Merge the shards of one run (`bench --shard`) into one run's results
/// (generates no load).
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "merge",
    error_code(0, "merged, every shard present and complete"),
    error_code(
        1,
        "merged, but a shard is missing or incomplete, or a file could not be written"
    ),
    error_code(2, "the directories hold no shards of one run (named in the message)")
)]
pub(crate) struct MergeArgs {
    /// shard results directories, or a directory holding them (searched
    /// recursively for summary.json)
    #[argh(positional, arg_name = "DIR")]
    pub dirs: Vec<PathBuf>,

    /// where the merged results go (default: merged/ in the first DIR)
    #[argh(option)]
    pub out: Option<PathBuf>,

    /// do not print report.txt
    #[argh(switch)]
    pub quiet: bool,
}

/// Merges; returns 0, 1 or 2 (see `MergeArgs`).
pub(crate) fn run(args: MergeArgs) -> i32 {
    if args.dirs.is_empty() {
        errln!("llmload merge: name at least one DIR");
        return 2;
    }
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| args.dirs[0].join("merged"));
    let mut merged = match crate::merge::load(&args.dirs, Some(&out_dir)) {
        Ok(m) => m,
        Err(e) => {
            errln!("llmload merge: {e}");
            return 2;
        }
    };
    let mut errors = Vec::new();
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        errln!("llmload merge: --out {}: {e}", out_dir.display());
        return 1;
    }
    match crate::merge::concat_events(&merged.dirs, &out_dir) {
        Ok(Some(path)) => merged.info.events.path = path.display().to_string(),
        Ok(None) => merged.info.events.path = String::new(),
        Err(e) => errors.push(e),
    }
    let rendered = report::render(&merged.run, &merged.info);
    if !args.quiet {
        out!("{}", rendered.text);
    }
    errors.extend(rendered.write(&out_dir));
    // MLPerf mode's config.yaml describes the run, as the first shard's does.
    if merged.info.mlperf.is_some()
        && let Some(yaml) = merged.dirs.first().map(|d| d.join("config.yaml"))
        && yaml.is_file()
        && let Err(e) = std::fs::copy(&yaml, out_dir.join("config.yaml"))
    {
        errors.push(format!("{}: {e}", out_dir.join("config.yaml").display()));
    }
    outln!("results: {}", out_dir.display());
    for e in &errors {
        errln!("llmload merge: could not write {e}");
    }
    if !merged.run.complete {
        errln!("llmload merge: the merged run is incomplete (see the report)");
    }
    if errors.is_empty() && merged.run.complete {
        0
    } else {
        1
    }
}
