//! `${VAR}`, `${VAR:-default}`, `$VAR` and `$$` in YAML string values, as
//! MLPerf's loader substitutes them: after parsing, in values only (never
//! keys), an unset variable without a default is an error, and `$$` becomes
//! `$` in the whole result (substituted text included), which is MLPerf's
//! order of operations and so keeps its configs meaning the same here.

/// Looks a variable up; the process environment in production, a table in
/// tests.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, as `Lookup`.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `text` with its references replaced, every value that came from the
/// environment (not from a default) pushed onto `from_env`: a config may
/// name any variable, so what it pulled in is kept out of everything
/// printed about it. `Err` names the unset variable.
pub(crate) fn substitute_noting(
    text: &str,
    env: Lookup<'_>,
    from_env: &mut Vec<String>,
) -> Result<String, String> {
    if !text.contains('$') {
        return Ok(text.to_string());
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        // A `$` right after another `$` never starts a reference: `$$` is
        // the escape.
        if b[i] != b'$' || (i > 0 && b[i - 1] == b'$') {
            i += 1;
            continue;
        }
        let Some((end, value, set)) = reference(text, i, env)? else {
            i += 1;
            continue;
        };
        if set {
            from_env.push(value.clone());
        }
        out.push_str(&text[copied..i]);
        out.push_str(&value);
        copied = end;
        i = end;
    }
    out.push_str(&text[copied..]);
    Ok(out.replace("$$", "$"))
}

/// The reference starting at `at` (a `$`): where it ends, its value and
/// whether the value came from the environment, or `None` when the text
/// there is not one.
fn reference(
    text: &str,
    at: usize,
    env: Lookup<'_>,
) -> Result<Option<(usize, String, bool)>, String> {
    let rest = &text[at + 1..];
    if let Some(inner) = rest.strip_prefix('{') {
        let name_len = name_len(inner);
        if name_len > 0 {
            let name = &inner[..name_len];
            let after = &inner[name_len..];
            if after.starts_with('}') {
                let end = at + 2 + name_len + 1;
                return match env(name) {
                    Some(v) => Ok(Some((end, v, true))),
                    None => Err(format!(
                        "environment variable ${{{name}}} is not set and has no default"
                    )),
                };
            }
            // The default ends at the first `}` and, as in MLPerf's pattern,
            // never spans a line break.
            if let Some(tail) = after.strip_prefix(":-")
                && let Some(close) = tail.find('}')
                && !tail[..close].contains('\n')
            {
                let end = at + 2 + name_len + 2 + close + 1;
                return Ok(Some(match env(name) {
                    Some(v) => (end, v, true),
                    None => (end, tail[..close].to_string(), false),
                }));
            }
        }
        return Ok(None);
    }
    let n = name_len(rest);
    if n == 0 {
        return Ok(None);
    }
    let name = &rest[..n];
    match env(name) {
        Some(v) => Ok(Some((at + 1 + n, v, true))),
        None => Err(format!("environment variable ${name} is not set")),
    }
}

/// The variable `text` is exactly a reference to (`${NAME}`), if it is one:
/// a secret field given so is kept as the reference, read from the
/// environment only when the run is resolved, so that what a run records
/// names the variable and never holds its value.
pub(crate) fn whole_reference(text: &str) -> Option<&str> {
    let name = text.strip_prefix("${")?.strip_suffix('}')?;
    (name_len(name) == name.len() && !name.is_empty()).then_some(name)
}

/// The length of the variable name `s` starts with: a letter or `_`, then
/// letters, digits or `_`; 0 when it starts with none.
fn name_len(s: &str) -> usize {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    for (i, c) in chars {
        if !(c.is_alphanumeric() || c == '_') {
            return i;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("h:1".into()),
            "EMPTY" => Some(String::new()),
            "DOLLARS" => Some("a$$b".into()),
            _ => None,
        }
    }

    fn sub(s: &str) -> Result<String, String> {
        substitute_noting(s, &env, &mut Vec::new())
    }

    #[test]
    fn braces_bare_and_defaults() {
        assert_eq!(sub("http://${HOST}/v1").unwrap(), "http://h:1/v1");
        assert_eq!(sub("http://$HOST/v1").unwrap(), "http://h:1/v1");
        assert_eq!(sub("${NOPE:-d}").unwrap(), "d");
        assert_eq!(sub("${HOST:-d}").unwrap(), "h:1");
        assert_eq!(sub("${NOPE:-}").unwrap(), "");
        assert_eq!(sub("${EMPTY:-d}").unwrap(), "", "set but empty is set");
        assert_eq!(sub("${NOPE:-a:b/c}x").unwrap(), "a:b/cx");
        assert_eq!(sub("no dollars").unwrap(), "no dollars");
    }

    #[test]
    fn unset_without_default_is_an_error_naming_it() {
        assert_eq!(
            sub("${NOPE}").unwrap_err(),
            "environment variable ${NOPE} is not set and has no default"
        );
        assert_eq!(
            sub("x $NOPE").unwrap_err(),
            "environment variable $NOPE is not set"
        );
    }

    #[test]
    fn double_dollar_escapes() {
        assert_eq!(sub("$$HOME").unwrap(), "$HOME");
        assert_eq!(sub("$${HOST}").unwrap(), "${HOST}");
        assert_eq!(sub("cost $$5").unwrap(), "cost $5");
        // The collapse runs over the substituted text too, as MLPerf's does.
        assert_eq!(sub("$DOLLARS").unwrap(), "a$b");
    }

    #[test]
    fn values_from_the_environment_are_noted_and_defaults_are_not() {
        let mut noted = Vec::new();
        let s = substitute_noting("${HOST}/${NOPE:-d}/$HOST", &env, &mut noted).unwrap();
        assert_eq!(s, "h:1/d/h:1");
        assert_eq!(noted, ["h:1", "h:1"]);
    }

    #[test]
    fn whole_references_are_only_exact_ones() {
        assert_eq!(whole_reference("${KEY_1}"), Some("KEY_1"));
        for s in [
            "$KEY", "${KEY}x", "x${KEY}", "${}", "${1A}", "${A:-b}", "${A}${B}",
        ] {
            assert_eq!(whole_reference(s), None, "{s}");
        }
    }

    #[test]
    fn text_that_is_no_reference_stays() {
        assert_eq!(sub("a $ b").unwrap(), "a $ b");
        assert_eq!(sub("${1X}").unwrap(), "${1X}");
        assert_eq!(sub("${HOST-x}").unwrap(), "${HOST-x}");
        assert_eq!(sub("${HOST").unwrap(), "${HOST");
        assert_eq!(sub("$").unwrap(), "$");
    }
}
