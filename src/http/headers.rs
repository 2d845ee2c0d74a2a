//! Which request headers carry credentials: one rule for everything that
//! writes a configuration or an exchange out (the run summary, the probe's
//! report), so a header masked in one is masked in all, and one mask string.
//! The rule reads the name only; a secret under an innocuous name cannot be
//! told apart. Also the one parser of `--header 'Name: value'` flags, whose
//! errors never quote the value.

/// What a masked credential becomes, wherever it is masked.
pub(crate) const REDACTED: &str = "<redacted>";

/// Words whose presence in a header name marks its value a credential
/// (`Authorization`, `X-API-Key`, `X-Goog-Api-Key`,
/// `Ocp-Apim-Subscription-Key`, `X-Auth-Token`, `Cookie`, `X-Amz-Signature`,
/// …). Broad on purpose: masking a harmless value costs a reader little,
/// printing a key costs its owner a lot.
const SECRET_WORDS: [&str; 8] = [
    "auth",
    "key",
    "token",
    "secret",
    "cookie",
    "password",
    "signature",
    "credential",
];

/// Whether a header's value must never be written out.
pub(crate) fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| n.contains(w))
}

/// Whether a header already carries an API key, so that one from
/// `--api-key` is not added beside it. Narrower than [`is_secret_header`]:
/// a cookie or a session token is not the API's key.
pub(crate) fn is_auth_header(name: &str) -> bool {
    name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("x-api-key")
}

/// A `--header` flag, `Name: value`, split and trimmed. A typo such as
/// `Authorization Bearer sk-…` (no colon) is common, and error messages end
/// up in CI logs, so an error names at most the first word of the flag, and
/// only when more follows it (a lone word may be the key itself).
pub(crate) fn parse_header_flag(flag: &str) -> Result<(String, String), String> {
    let Some((k, v)) = flag.split_once(':') else {
        return Err(match first_word(flag) {
            Some(w) => format!(
                "--header '{w} …': expected 'Name: value', found no ':' (the rest is not shown: it may be a credential)"
            ),
            None => "--header: expected 'Name: value', found no ':' (the value is not shown: it may be a credential)".to_string(),
        });
    };
    let (k, v) = (k.trim(), v.trim());
    if k.is_empty() || k.bytes().any(|b| !b.is_ascii_graphic()) {
        return Err(match first_word(k) {
            Some(w) => format!("--header '{w} …': bad header name (visible ASCII, no spaces)"),
            None if k.is_empty() => "--header: empty header name before ':'".to_string(),
            None => format!("--header '{k}': bad header name (visible ASCII, no spaces)"),
        });
    }
    if v.bytes().any(|b| b == b'\r' || b == b'\n') {
        return Err(format!("--header '{k}': the value contains a line break"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// The first word of `text` when another follows it; `None` for one word.
fn first_word(text: &str) -> Option<&str> {
    let t = text.trim();
    let (w, rest) = t.split_once(char::is_whitespace)?;
    (!rest.trim().is_empty()).then_some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_are_recognized() {
        for h in [
            "Authorization",
            "Proxy-Authorization",
            "X-API-Key",
            "api-key",
            "apikey",
            "X-Goog-Api-Key",
            "Ocp-Apim-Subscription-Key",
            "X-Auth-Key",
            "cookie",
            "Set-Cookie",
            "X-Auth-Token",
            "my-secret",
            "X-Db-Password",
            "x-tenant-key",
            "X-Amz-Signature",
            "X-Amz-Credential",
        ] {
            assert!(is_secret_header(h), "{h}");
        }
        for h in ["x-request-id", "accept", "x-tenant", "x-api-version"] {
            assert!(!is_secret_header(h), "{h}");
        }
    }

    #[test]
    fn auth_headers_are_the_key_carriers() {
        for h in ["Authorization", "x-api-key", "X-API-KEY"] {
            assert!(is_auth_header(h), "{h}");
        }
        // Secret, but not where an API key goes.
        for h in ["cookie", "x-auth-token", "proxy-authorization"] {
            assert!(is_secret_header(h) && !is_auth_header(h), "{h}");
        }
    }

    #[test]
    fn header_flags_parse_and_errors_hide_values() {
        assert_eq!(
            parse_header_flag(" X-A :  b: c ").unwrap(),
            ("X-A".to_string(), "b: c".to_string())
        );
        for (flag, want) in [
            (
                "Authorization Bearer sk-SECRET",
                "--header 'Authorization …': expected 'Name: value'",
            ),
            ("sk-SECRET", "--header: expected 'Name: value'"),
            (
                "Authorization Bearer sk-SECRET: x",
                "--header 'Authorization …': bad header name",
            ),
            (": sk-SECRET", "--header: empty header name"),
        ] {
            let e = parse_header_flag(flag).unwrap_err();
            assert!(e.starts_with(want), "{flag}: {e}");
            assert!(!e.contains("SECRET"), "{flag}: {e}");
        }
        assert!(
            parse_header_flag("X-A: a\nb")
                .unwrap_err()
                .contains("line break")
        );
    }
}
