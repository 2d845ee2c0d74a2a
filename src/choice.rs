//! Closed value sets (`--io epoll|uring|auto`, `--events`, `--mode` …)
//! declared once: [`choices!`] writes the enum, each variant's one
//! spelling (plus the aliases it also accepts), `parse` with an error that
//! lists the choices, `name`, `ALL` (every value in order), and serde in
//! the same spelling. A leaf: the engine's `plan` types and the profile's
//! both declare theirs here, and `config::resolve` reads every one of them
//! through the one generic [`Choice`] helper.
//!
//! The trade-off: an error lists the names in declaration order, so the
//! order a set is declared in is the order its users read it.

/// A closed set of named values.
pub(crate) trait Choice: Copy + 'static {
    fn name(self) -> &'static str;
    fn parse(s: &str) -> Result<Self, String>;
}

/// How a set's error lists its names: `a, b or c`, or, with `one_of`,
/// `one of a, b, c`.
pub(crate) fn expected(names: &[&str], one_of: bool) -> String {
    match names {
        _ if one_of => format!("one of {}", names.join(", ")),
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The doc comment among an item's attributes (as `stringify!` writes
/// them: `doc = r" text"`), its lines joined as schemars joins them.
#[cfg(test)]
pub(crate) fn doc_text(attrs: &[&str]) -> String {
    attrs
        .iter()
        .filter_map(|a| a.strip_prefix("doc"))
        .filter_map(|a| a.trim_start().strip_prefix('='))
        .filter_map(|lit| {
            // A doc comment reaches a macro as a raw string, `r" text"`.
            let lit = lit.trim();
            let raw = lit.strip_prefix('r').map(|r| r.trim_matches('#'));
            match raw {
                Some(r) => r.strip_prefix('"')?.strip_suffix('"').map(str::to_string),
                None => serde_json::from_str::<String>(lit).ok(),
            }
        })
        .map(|line| line.trim().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Declares a closed set: the enum (attributes and variant docs pass
/// through), `NAME = "spelling" | "alias" …` per variant, and optionally
/// `[one_of]` after the enum's name for errors worded `expected one of a,
/// b, c`.
macro_rules! choices {
    (
        $(#[$($meta:tt)*])*
        $vis:vis enum $name:ident $([$style:ident])? {
            $(
                $(#[$($vmeta:tt)*])*
                $variant:ident = $text:literal $(| $alias:literal)*
            ),+ $(,)?
        }
    ) => {
        $(#[$($meta)*])*
        $vis enum $name {
            $( $(#[$($vmeta)*])* $variant, )+
        }

        impl $name {
            /// Every value, in the order errors and help list them.
            #[allow(dead_code)]
            pub(crate) const ALL: &'static [$name] = &[$($name::$variant),+];

            pub(crate) fn parse(s: &str) -> Result<$name, String> {
                match s {
                    $( $text $(| $alias)* => Ok($name::$variant), )+
                    _ => Err(format!(
                        "'{s}': expected {}",
                        $crate::choice::expected(
                            &[$($text),+],
                            stringify!($($style)?) == "one_of"
                        )
                    )),
                }
            }

            pub(crate) fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl $crate::choice::Choice for $name {
            fn name(self) -> &'static str {
                $name::name(self)
            }
            fn parse(s: &str) -> Result<$name, String> {
                $name::parse(s)
            }
        }

        // Files (summary.json, its state) spell a value as flags do.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let text = <String as serde::Deserialize>::deserialize(d)?;
                $name::parse(&text).map_err(<D::Error as serde::de::Error>::custom)
            }
        }

        #[cfg(test)]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema =
                    schemars::json_schema!({ "type": "string", "enum": [$($text),+] });
                let doc = $crate::choice::doc_text(&[$(stringify!($($meta)*)),*]);
                if !doc.is_empty() {
                    schema.insert("description".into(), doc.into());
                }
                schema
            }
        }
    };
}

pub(crate) use choices;

#[cfg(test)]
mod tests {
    use super::*;

    choices! {
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        enum Speed {
            Slow = "slow",
            #[default]
            Fast = "fast" | "quick",
        }
    }

    choices! {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Dial [one_of] {
            Low = "low",
            High = "high",
        }
    }

    #[test]
    fn one_spelling_each_and_errors_list_every_name() {
        for s in Speed::ALL {
            assert_eq!(Speed::parse(s.name()), Ok(*s));
        }
        assert_eq!(Speed::parse("quick"), Ok(Speed::Fast));
        assert_eq!(Speed::Fast.name(), "fast");
        assert_eq!(Speed::default(), Speed::Fast);
        assert_eq!(
            Speed::parse("warp").unwrap_err(),
            "'warp': expected slow or fast"
        );
        assert_eq!(
            Dial::parse("mid").unwrap_err(),
            "'mid': expected one of low, high"
        );
        assert_eq!(Dial::High.name(), "high");
        assert_eq!(expected(&["a", "b", "c"], false), "a, b or c");
        assert_eq!(expected(&["a"], false), "a");
    }
}
