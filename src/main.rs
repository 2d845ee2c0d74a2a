//! The `llmload` binary: parse the command line, dispatch to a subcommand,
//! turn its outcome into an exit status. Everything else lives in the library.

use argh::FromArgs;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cmd = args
        .first()
        .map_or("llmload", |a| a.rsplit('/').next().unwrap_or(a));
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let top = match llmload::cli::Top::from_args(&[cmd], &rest) {
        Ok(top) => top,
        Err(early) => {
            // --help prints and succeeds; a usage error exits 2, which
            // scripts tell apart from a run's own outcomes (1: failed run).
            if early.status.is_ok() {
                println!("{}", llmload::cli::help_with_defaults(&early.output));
                std::process::exit(0);
            }
            eprintln!("{}", early.output);
            std::process::exit(2);
        }
    };
    std::process::exit(llmload::cli::run(top));
}
