//! Who may ask for what: the API key every request must carry when one is
//! configured, and the model names the server answers to. The key is kept
//! in a type whose `Debug` never shows it and is compared in time that does
//! not depend on where the first difference is, so neither a log line nor a
//! timing probe gives it away.

use std::fmt;

use super::formats::MODEL;

/// A configured API key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Box<[u8]>);

impl ApiKey {
    /// Accepts a key that can travel in a header unchanged: printable ASCII
    /// without spaces. The error never quotes the key.
    pub fn new(key: String) -> Result<ApiKey, String> {
        if key.is_empty() {
            return Err("--api-key must not be empty".to_string());
        }
        if !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(
                "--api-key must be printable ASCII without spaces (it is sent in a header)"
                    .to_string(),
            );
        }
        Ok(ApiKey(key.into_bytes().into_boxed_slice()))
    }

    /// Whether `presented` is the key.
    pub fn matches(&self, presented: &[u8]) -> bool {
        presented.len() == self.0.len()
            && presented
                .iter()
                .zip(self.0.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Whether one request header carries `key`: `Authorization: Bearer KEY`
/// (scheme in any case) or `x-api-key: KEY`.
pub(super) fn header_carries(key: &ApiKey, name: &str, value: &[u8]) -> bool {
    let name = name.as_bytes();
    let value = value.trim_ascii();
    if name.eq_ignore_ascii_case(b"authorization") {
        value.len() > 7
            && value[..7].eq_ignore_ascii_case(b"bearer ")
            && key.matches(value[7..].trim_ascii_start())
    } else if name.eq_ignore_ascii_case(b"x-api-key") {
        key.matches(value)
    } else {
        false
    }
}

/// The server's access rules, as each worker holds them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Access {
    pub key: Option<ApiKey>,
    /// Model names requests may ask for; empty means any.
    pub models: Vec<String>,
}

impl Access {
    /// Whether a request naming `model` is answered.
    pub(crate) fn serves(&self, model: &str) -> bool {
        self.models.is_empty() || self.models.iter().any(|m| m == model)
    }

    /// The model a response names when its request names none.
    pub(crate) fn default_model(&self) -> &str {
        self.models.first().map_or(MODEL, String::as_str)
    }

    /// What `/v1/models` lists.
    pub(crate) fn listed(&self) -> Vec<&str> {
        if self.models.is_empty() {
            vec![MODEL]
        } else {
            self.models.iter().map(String::as_str).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_never_shown() {
        let key = ApiKey::new("sk-test-123".to_string()).unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert!(key.matches(b"sk-test-123"));
        assert!(!key.matches(b"sk-test-124"));
        assert!(!key.matches(b"sk-test-12"));
        for bad in ["", "has space", "tab\there", "caf\u{e9}"] {
            let e = ApiKey::new(bad.to_string()).unwrap_err();
            assert!(e.starts_with("--api-key"), "{e}");
            assert!(bad.is_empty() || !e.contains(bad), "{e}");
        }
    }

    #[test]
    fn either_header_carries_the_key() {
        let key = ApiKey::new("k1".to_string()).unwrap();
        assert!(header_carries(&key, "Authorization", b"Bearer k1"));
        assert!(header_carries(&key, "authorization", b"bearer  k1 "));
        assert!(header_carries(&key, "X-Api-Key", b"k1"));
        assert!(!header_carries(&key, "Authorization", b"k1"));
        assert!(!header_carries(&key, "Authorization", b"Basic k1"));
        assert!(!header_carries(&key, "Authorization", b"Bearer k2"));
        assert!(!header_carries(&key, "x-api-key", b"Bearer k1"));
        assert!(!header_carries(&key, "x-other", b"k1"));
    }

    #[test]
    fn served_models() {
        let any = Access::default();
        assert!(any.serves("whatever"));
        assert_eq!(any.default_model(), MODEL);
        assert_eq!(any.listed(), [MODEL]);
        let some = Access {
            key: None,
            models: vec!["a".into(), "b".into()],
        };
        assert!(some.serves("b") && !some.serves("c") && !some.serves("A"));
        assert_eq!(some.default_model(), "a");
        assert_eq!(some.listed(), ["a", "b"]);
    }
}
