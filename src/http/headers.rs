//! Which request headers carry credentials: one rule for everything that
//! writes a configuration or an exchange out (the run summary, the probe's
//! report), so a header masked in one is masked in all. The rule reads the
//! name only; a secret under an innocuous name cannot be told apart.

/// What a masked credential becomes.
pub(crate) const REDACTED: &str = "<redacted>";

/// Words whose presence in a header name marks its value a credential
/// (`Authorization`, `X-API-Key`, `X-Auth-Token`, `Cookie`, …). Broad on
/// purpose: masking a harmless value costs a reader little, printing a key
/// costs its owner a lot.
const SECRET_WORDS: [&str; 6] = ["auth", "key", "token", "secret", "cookie", "password"];

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
            "cookie",
            "X-Auth-Token",
            "my-secret",
            "X-Db-Password",
            "x-tenant-key",
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
}
