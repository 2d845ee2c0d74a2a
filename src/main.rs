//! The `llmload` binary: parse the command line, dispatch to a subcommand,
//! turn its outcome into an exit status. Everything else lives in the library.

fn main() {
    let top: llmload::cli::Top = argh::from_env();
    std::process::exit(llmload::cli::run(top));
}
