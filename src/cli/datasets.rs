//! `llmload datasets list|show NAME`: MLPerf's predefined datasets, what
//! each needs (file, columns, preset) and whether the local cache has it.
//! The registry is `dataset::predefined`; this file only prints.

use argh::FromArgs;

use crate::cli::{errln, out};
use crate::dataset::predefined;

/// List MLPerf's predefined datasets, or show what one needs.
#[derive(FromArgs, Debug)]
#[argh(
    subcommand,
    name = "datasets",
    note = "Configs may name a predefined dataset instead of a path (name: \
            cnn_dailymail::llama3_8b). llmload never downloads one: it reads the file MLPerf's \
            download leaves, from --datasets-dir DIR, $LLMLOAD_DATASETS_DIR, ./dataset_cache or \
            $HF_HOME/llmload-datasets, laid out as DIR/<file shown>."
)]
pub(crate) struct DatasetsArgs {
    #[argh(subcommand)]
    command: Command,
    /// a cache directory to look in first (MLPerf's --datasets-dir)
    #[argh(option)]
    datasets_dir: Option<String>,
}

#[derive(FromArgs, Debug)]
#[argh(subcommand)]
enum Command {
    List(ListArgs),
    Show(ShowArgs),
}

/// Every predefined dataset, its presets and whether it is cached.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "list")]
struct ListArgs {}

/// One dataset: its file, columns, source, presets and where it is looked for.
#[derive(FromArgs, Debug)]
#[argh(subcommand, name = "show")]
struct ShowArgs {
    /// the dataset, as a config names it (gpqa or gpqa::gptoss)
    #[argh(positional)]
    name: String,
}

/// Prints the list or one dataset; 1 for a name that is none of them.
pub(crate) fn run(args: DatasetsArgs) -> i32 {
    if let Some(dir) = args.datasets_dir {
        predefined::set_dir(dir.into());
    }
    match args.command {
        Command::List(_) => {
            out!("{}", predefined::list());
            0
        }
        Command::Show(s) => match predefined::show(&s.name) {
            Ok(text) => {
                out!("{text}");
                0
            }
            Err(e) => {
                errln!("llmload datasets: {e}");
                1
            }
        },
    }
}
