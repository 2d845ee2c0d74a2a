//! `llmload bench`'s command line: the flags `config::settings` declares
//! ([`BenchFlags`], generated there with the profile they turn into), parsed
//! by argh, with `--help` rendered from the same declarations (grouped by
//! topic, each default filled in; `help`), which argh cannot do itself.

use std::ops::Deref;

use argh::{EarlyExit, FromArgs, SubCommand};

use crate::config::settings::BenchFlags;

/// The flags given to `bench` (and to the commands made of bench runs).
#[derive(Debug, Default)]
pub(crate) struct BenchArgs(pub BenchFlags);

impl Deref for BenchArgs {
    type Target = BenchFlags;

    fn deref(&self) -> &BenchFlags {
        &self.0
    }
}

impl SubCommand for BenchArgs {
    const COMMAND: &'static argh::CommandInfo = BenchFlags::COMMAND;
}

impl FromArgs for BenchArgs {
    fn from_args(command_name: &[&str], args: &[&str]) -> Result<Self, EarlyExit> {
        match BenchFlags::from_args(command_name, args) {
            Ok(flags) => Ok(BenchArgs(flags)),
            // argh decides what asks for help; the text is ours.
            Err(e) if e.status.is_ok() => Err(EarlyExit {
                output: super::help::render(&e.output),
                status: Ok(()),
            }),
            Err(e) => Err(e),
        }
    }
}
