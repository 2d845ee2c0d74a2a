//! The `llmload` binary: parse the command line, dispatch to a subcommand,
//! turn its outcome into an exit status. Everything else lives in the library.

use std::io::Write;

use argh::FromArgs;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cmd = args
        .first()
        .map_or("llmload", |a| a.rsplit('/').next().unwrap_or(a));
    let given: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    // MLPerf's spellings (-v anywhere, -h) made ours, so argh reads them.
    let normalized = llmload::cli::spelling::normalize(&given);
    let rest: Vec<&str> = normalized.iter().map(String::as_str).collect();
    // argh has no version flag: it would refuse these as unknown.
    if matches!(rest.as_slice(), ["--version"] | ["-V"]) {
        let _ = writeln!(std::io::stdout(), "llmload {}", env!("CARGO_PKG_VERSION"));
        std::process::exit(0);
    }
    if let Some(status) = llmload::cli::early(&rest) {
        std::process::exit(status);
    }
    let top = match llmload::cli::Top::from_args(&[cmd], &rest) {
        Ok(top) => top,
        Err(early) => {
            // --help prints and succeeds (a closed stdout, `| head`, is not
            // an error); a usage error exits with the subcommand's status
            // for one.
            if early.status.is_ok() {
                let help = llmload::cli::help_with_defaults(&early.output);
                let _ = writeln!(std::io::stdout(), "{help}");
                std::process::exit(0);
            }
            let message = llmload::cli::usage::message(cmd, &rest, &early.output);
            let _ = writeln!(std::io::stderr(), "{message}");
            std::process::exit(llmload::cli::usage_status(&rest));
        }
    };
    std::process::exit(llmload::cli::run(top));
}
