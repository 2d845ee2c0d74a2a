//! The macros that turn the declarations into code. `settings!` reads the
//! whole table (`table.rs`) and writes everything a setting needs;
//! `flag_struct!` reads rows of the same table into another command's argh
//! struct (`probe` takes the TLS and authentication rows); `defaults!`
//! writes typed default constants and the lookup help fills `{NAME}` from.
//!
//! A declaration row (`fields:` section):
//!
//! ```text
//! /// help text, `{NAME}` for a constant's value
//! field: FieldType [as [serde attributes]]
//!     = flag: FlagType [argh attributes] in Group
//!     [default CONST] [via conversion] [overlay rule] [joint tag]
//!     [full {init --full value}] [config entry];
//! ```
//!
//! `via` names a `fn(&BenchFlags) -> Result<Option<FieldType>, String>`
//! (default: the flag's own value, `FlagValue`); `overlay` a
//! `fn(&mut Option<T>, &Option<T>)` (default: the flag replaces);
//! `joint` a tag shared by settings that are one in an overlay (a flag
//! setting any clears all); `full` the `init --full` value (default: the
//! default, else `null`); `config` a `ConfigEntry`, a function or a
//! closure (default: as given, else the default, else `null`).

/// The first of its parenthesized alternatives that is not empty:
/// `first!(() or (b) or (c))` is `b`.
macro_rules! first {
    (($($a:tt)+) $(or ($($rest:tt)*))*) => { $($a)+ };
    (() or $($rest:tt)+) => { first!($($rest)+) };
}

/// The settings table; see the module documentation for a row's syntax.
macro_rules! settings {
    (
        flags $(#[$($fattr:tt)*])* ;
        only_flags:
        $(
            $(#[doc = $chelp:tt])+
            $cflag:ident : $cty:ident $(<$cinner:ty>)? [$($cargh:tt)*] in $cgroup:ident
            $(after $cafter:ident)? ;
        )*
        fields:
        $(
            $(#[doc = $help:tt])+
            $field:ident : $pty:ty $(as [$($serde:tt)*])?
            = $flag:ident : $fty:ident $(<$finner:ty>)? [$($argh:tt)*] in $group:ident
            $(default $default:ident)?
            $(via $via:ident)?
            $(overlay $overlay:ident)?
            $(joint $joint:ident)?
            $(full $full:tt)?
            $(config $config:expr)? ;
        )*
        only_fields:
        $(
            $(#[doc = $bhelp:tt])+
            $bfield:ident : $bty:ty, in $bgroup:ident
            $(joint $bjoint:ident)? full $bfull:tt ;
        )*
    ) => {
        $(#[$($fattr)*])*
        pub(crate) struct BenchFlags {
            $(
                $(#[doc = $chelp])+
                #[argh($($cargh)*)]
                pub $cflag: $cty $(<$cinner>)?,
            )*
            $(
                $(#[doc = $help])+
                #[argh($($argh)*)]
                pub $flag: $fty $(<$finner>)?,
            )*
        }

        /// A run profile, as written in the file: every setting under its
        /// snake_case name, plus what flags cannot say well (stages,
        /// scenarios, thresholds). `None` everywhere means "not set": the
        /// default applies, and [`Profile::overlay`] can tell a flag that
        /// was given from one that was not.
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct Profile {
            $(
                $(#[doc = $help])+
                #[serde(skip_serializing_if = "unset" $(, $($serde)*)?)]
                pub $field: Option<$pty>,
            )*
            $(
                $(#[doc = $bhelp])+
                #[serde(skip_serializing_if = "unset")]
                pub $bfield: Option<$bty>,
            )*
            /// What an MLPerf YAML config says beyond the settings (notes
            /// for the report, what only a run refuses); never read from
            /// or written to a profile file.
            #[serde(skip)]
            pub mlperf: $crate::config::mlperf::Extras,
        }

        impl BenchFlags {
            /// The flags given, as a profile (everything else unset).
            pub(crate) fn to_profile(&self) -> Result<Profile, String> {
                Ok(Profile {
                    $(
                        $field: first!(
                            ($( $via(self) )?)
                            or (Ok::<_, String>(<$fty $(<$finner>)? as FlagValue<$pty>>::profile_value(&self.$flag)))
                        )?,
                    )*
                    $( $bfield: None, )*
                    mlperf: Default::default(),
                })
            }
        }

        impl Profile {
            /// Applies `flags` (the command line, as a profile) over
            /// `self`: every field set in `flags` replaces the profile's,
            /// except that settings declared `joint` are one (a flag giving
            /// any of them clears all of them from the profile first: the
            /// load shape, the key and its file, one endpoint or a list)
            /// and a field with an `overlay` rule merges (headers and body
            /// fields, by name).
            pub(crate) fn overlay(&mut self, flags: &Profile) {
                let mut joint: Vec<&'static str> = Vec::new();
                $($( if flags.$field.is_some() { joint.push(stringify!($joint)); } )?)*
                $($( if flags.$bfield.is_some() { joint.push(stringify!($bjoint)); } )?)*
                $($( if joint.contains(&stringify!($joint)) { self.$field = None; } )?)*
                $($( if joint.contains(&stringify!($bjoint)) { self.$bfield = None; } )?)*
                $(
                    first!(
                        ($( $overlay(&mut self.$field, &flags.$field); )?)
                        or (replace(&mut self.$field, &flags.$field);)
                    );
                )*
                $( replace(&mut self.$bfield, &flags.$bfield); )*
            }

            /// Every setting at its declared default, unset where it has
            /// none.
            pub(crate) fn with_defaults() -> Profile {
                Profile {
                    $( $field: first!(($( Some(AsField::as_field(&defaults::$default)) )?) or (None)), )*
                    $( $bfield: None, )*
                    mlperf: Default::default(),
                }
            }

            /// `llmload init --full`: every top-level field, each at its
            /// default or an example of its shape; a field whose default is
            /// absent or derived is `null`.
            pub(crate) fn full() -> Profile {
                Profile {
                    $(
                        $field: first!(
                            ($($full)?)
                            or ($( Some(AsField::as_field(&defaults::$default)) )?)
                            or (None)
                        ),
                    )*
                    $( $bfield: $bfull, )*
                    mlperf: Default::default(),
                }
            }
        }

        /// Every declaration, in declaration order: the flags without a
        /// field of their own, the settings, the profile-only fields.
        pub(crate) static SETTINGS: &[Setting] = &[
            $(
                Setting {
                    field: None,
                    flag: Some(stringify!($cflag)),
                    switch: matches!(stringify!($($cargh)*).as_bytes(), b"switch"),
                    group: Group::$cgroup,
                    help: concat!($($chelp, "\n"),+),
                    default: None,
                    after: first!(($( Some(stringify!($cafter)) )?) or (None)),
                },
            )*
            $(
                Setting {
                    field: Some(stringify!($field)),
                    flag: Some(stringify!($flag)),
                    switch: matches!(stringify!($($argh)*).as_bytes(), b"switch"),
                    group: Group::$group,
                    help: concat!($($help, "\n"),+),
                    default: first!(
                        ($( Some(DefaultShown { name: stringify!($default), shown: || Shown::shown(&defaults::$default) }) )?)
                        or (None)
                    ),
                    after: None,
                },
            )*
            $(
                Setting {
                    field: Some(stringify!($bfield)),
                    flag: None,
                    switch: false,
                    group: Group::$bgroup,
                    help: concat!($($bhelp, "\n"),+),
                    default: None,
                    after: None,
                },
            )*
        ];

        /// Each setting's entry in the summary's `config`, over `given`
        /// (the merged profile, serialized): its `config` rule's value, or
        /// as given, else its default, else `null`.
        pub(crate) fn config_entries(
            cfg: &BenchConfig,
            ctx: &ConfigContext,
            given: &mut serde_json::Map<String, serde_json::Value>,
        ) {
            let defaults = match serde_json::to_value(Profile::with_defaults()) {
                Ok(serde_json::Value::Object(o)) => o,
                _ => unreachable!("a profile serializes to an object"),
            };
            $(
                entry(
                    given,
                    stringify!($field),
                    &defaults,
                    first!(($( Some({ let rule: ConfigEntry = $config; rule }) )?) or (None)),
                    (cfg, ctx),
                );
            )*
            $( entry(given, stringify!($bfield), &defaults, None, (cfg, ctx)); )*
        }
    };
}

/// An argh struct of a command other than `bench`: the fields written in
/// braces, then one flag per declaration row (rows of `table.rs`, the same
/// syntax; only the flag, its type, argh attributes and help are read).
macro_rules! flag_struct {
    (
        $(#[$($sattr:tt)*])*
        struct $name:ident { $($own:tt)* }
        fields:
        $(
            $(#[doc = $help:tt])+
            $field:ident : $pty:ty $(as [$($serde:tt)*])?
            = $flag:ident : $fty:ident $(<$finner:ty>)? [$($argh:tt)*] in $group:ident
            $(default $default:ident)?
            $(via $via:ident)?
            $(overlay $overlay:ident)?
            $(joint $joint:ident)?
            $(full $full:tt)?
            $(config $config:expr)? ;
        )*
    ) => {
        $(#[$($sattr)*])*
        pub(crate) struct $name {
            $($own)*
            $(
                $(#[doc = $help])+
                #[argh($($argh)*)]
                pub $flag: $fty $(<$finner>)?,
            )*
        }
    };
}

/// Typed default constants, and `shown(name)`: the constant called `name`
/// as help shows it, for `{NAME}` in help text.
macro_rules! defaults {
    ($( $(#[doc = $doc:tt])* $name:ident : $ty:ty = $value:expr ; )*) => {
        $( $(#[doc = $doc])* pub(crate) const $name: $ty = $value; )*

        /// Every constant's name.
        #[cfg(test)]
        pub(crate) const NAMES: &[&str] = &[$(stringify!($name)),*];

        /// The constant called `name` here, as help shows it; `None` for
        /// a name that is not one.
        pub(crate) fn shown(name: &str) -> Option<String> {
            match name {
                $( stringify!($name) => Some($crate::config::settings::Shown::shown(&$name)), )*
                _ => None,
            }
        }
    };
}

pub(crate) use {defaults, first, flag_struct, settings};
