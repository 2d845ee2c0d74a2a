//! Every top-level setting declared once (`table.rs`), in the way ripgrep
//! declares a flag once with its doc, category and update function. One
//! declaration yields the `bench` flag (argh, with its help text), the
//! [`Profile`] field (serde, the same text as its doc comment), the rule that
//! puts a flag over a profile field, its line in `llmload init --full`, its
//! entry in the summary's `config` block, its row in the settings reference
//! (`docs/guide/settings.md`) and its place in `bench --help` (a topic, the
//! default it shows). What a setting means to the run is then one line of
//! `config::resolve`, which reads the field and the same typed default.
//! The special cases' conversions and merges are `flags.rs`'s, the
//! summary's derived entries `entries.rs`'s.
//!
//! argh cannot carry topics, defaults or a flag struct shared between
//! commands, so the structs are generated from the declarations by
//! `macro_rules!` (`macros.rs`) rather than derived; the trade-off is a
//! declaration syntax of our own, kept to one line per fact. Special cases
//! (a flag pair, a repeatable flag into a map, a comma list, a flag into a
//! nested field) name their conversion in the declaration.

mod entries;
mod flags;
mod macros;
mod shown;
mod table;

use std::cell::Cell;

pub(crate) use entries::ConfigContext;
pub(crate) use macros::{defaults, flag_struct};
pub(crate) use shown::{AsField, Shown};
pub(crate) use table::{BenchFlags, Profile, SETTINGS, config_entries, with_auth_settings};

/// The topics of `bench --help` and of the settings reference, in the order
/// they are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Group {
    Files,
    Endpoint,
    Auth,
    Load,
    Requests,
    Data,
    Timeouts,
    Checks,
    Outputs,
    Generator,
    Mlperf,
    Shards,
}

impl Group {
    pub(crate) const ALL: [Group; 12] = [
        Group::Files,
        Group::Endpoint,
        Group::Auth,
        Group::Load,
        Group::Requests,
        Group::Data,
        Group::Timeouts,
        Group::Checks,
        Group::Outputs,
        Group::Generator,
        Group::Mlperf,
        Group::Shards,
    ];

    pub(crate) fn heading(self) -> &'static str {
        match self {
            Group::Files => "Profiles",
            Group::Endpoint => "Endpoint",
            Group::Auth => "TLS and authentication",
            Group::Load => "Load and run length",
            Group::Requests => "Requests",
            Group::Data => "Data",
            Group::Timeouts => "Timeouts",
            Group::Checks => "Checks and accuracy",
            Group::Outputs => "Outputs",
            Group::Generator => "The load generator",
            Group::Mlperf => "MLPerf",
            Group::Shards => "Shards",
        }
    }
}

/// One declared setting, as help and the reference show it.
#[derive(Debug)]
pub(crate) struct Setting {
    /// The profile field; `None` for a flag that is not one (`--profile`).
    /// Read by the settings reference and the coverage tests.
    #[cfg_attr(not(test), allow(dead_code))]
    pub field: Option<&'static str>,
    /// The flag, as argh names it (`connect_timeout` for
    /// `--connect-timeout`); `None` for a profile-only field (`stages`).
    pub flag: Option<&'static str>,
    /// `true` for a switch (no value), else an option.
    pub switch: bool,
    pub group: Group,
    /// The help text, `{NAME}` placeholders unfilled.
    pub help: &'static str,
    /// Its default; `None` where the default is absent or derived (the
    /// help then says so in words).
    pub default: Option<DefaultShown>,
    /// A flag without a field of its own is shown after this flag.
    pub after: Option<&'static str>,
}

/// A setting's typed default, for help and the reference.
#[derive(Debug)]
pub(crate) struct DefaultShown {
    /// The constant's name in `profile::defaults` (`{NAME}` in help).
    pub name: &'static str,
    /// The constant as help shows it.
    pub shown: fn() -> String,
}

impl DefaultShown {
    pub(crate) fn text(&self) -> String {
        (self.shown)()
    }
}

impl Setting {
    /// `--connect-timeout`; empty for a profile-only field.
    pub(crate) fn flag_name(&self) -> String {
        self.flag
            .map_or(String::new(), |f| format!("--{}", f.replace('_', "-")))
    }

    /// The help text on one line, placeholders unfilled.
    pub(crate) fn help_line(&self) -> String {
        self.help.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// The declarations in the order help and the reference show them: by
/// topic, each topic in declaration order, a flag without a field of its
/// own right after the flag it names.
pub(crate) fn by_topic() -> Vec<&'static Setting> {
    let mut out: Vec<&Setting> = Vec::new();
    for g in Group::ALL {
        for s in SETTINGS
            .iter()
            .filter(|s| s.group == g && s.after.is_none())
        {
            out.push(s);
        }
    }
    for s in SETTINGS.iter().filter(|s| s.after.is_some()) {
        let at = out
            .iter()
            .position(|o| o.flag == s.after)
            .map_or(out.len(), |i| i + 1);
        out.insert(at, s);
    }
    out
}

thread_local! {
    /// Set while a profile is written with its unset fields as `null`.
    static SHOW_UNSET: Cell<bool> = const { Cell::new(false) };
}

/// The top-level fields' `skip_serializing_if`: an unset field is left out,
/// unless the full template is being written.
pub(crate) fn unset<T>(v: &Option<T>) -> bool {
    v.is_none() && !SHOW_UNSET.get()
}

/// `write()` with unset top-level fields written as `null` (serde gives a
/// skip predicate no other way to see how it was called).
pub(crate) fn showing_unset<R>(show: bool, write: impl FnOnce() -> R) -> R {
    SHOW_UNSET.set(show);
    let r = write();
    SHOW_UNSET.set(false);
    r
}

#[cfg(test)]
mod tests;
