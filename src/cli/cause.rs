//! The causes of a setup that cannot work, each one line with its fix:
//! `probe` says them of its checks, and `bench` of the first requests that
//! stopped a run (`--fail-fast`), in the same words. Pure text; what was
//! seen is the caller's to tell.

use std::net::SocketAddr;

/// Nothing accepted the TCP connection.
pub(crate) fn refused(addr: impl std::fmt::Display) -> String {
    format!(
        "connection refused at {addr}: nothing is listening; is the server running and the port right?"
    )
}

/// No route to the host.
pub(crate) fn unreachable(addr: impl std::fmt::Display, why: &str) -> String {
    format!("{addr} is unreachable ({why}): check the host name and the network route")
}

/// The TLS handshake failed for `why`; a certificate out of its dates
/// gets the way out, since no flag names it.
pub(crate) fn tls_handshake(addr: SocketAddr, why: &str) -> String {
    let hint = if why.starts_with("expired") || why.starts_with("not yet valid") {
        "; renew the server's certificate (or pass --insecure to probe past it)"
    } else {
        ""
    };
    format!("TLS handshake with {addr} failed: {why}{hint}")
}

/// 404 or 405 for the API's path.
pub(crate) fn not_served(api: &str) -> String {
    format!("this server does not serve {api} at that path")
}

/// The server does not know the model; `served` when its list was read.
pub(crate) fn unknown_model(model: &str, served: Option<&[String]>) -> String {
    format!(
        "model '{model}' is not served{}",
        served
            .map(|l| format!("; served: {}", served_list(l)))
            .unwrap_or_default()
    )
}

/// 401 or 403; `credentials`: an API key or a header was sent.
pub(crate) fn auth(credentials: bool) -> &'static str {
    if credentials {
        "authentication failed with the credentials given: check --api-key or --header"
    } else {
        "authentication failed: pass --api-key or --header"
    }
}

/// A model list for a message.
pub(crate) fn served_list(l: &[String]) -> String {
    if l.is_empty() {
        "none".to_string()
    } else {
        list_some(l, 20)
    }
}

/// At most `most` items, and how many there are when that is not all.
pub(crate) fn list_some(items: &[String], most: usize) -> String {
    if items.len() <= most {
        items.join(", ")
    } else {
        format!("{}, … ({} in all)", items[..most].join(", "), items.len())
    }
}

/// Whether an error message is about the model: a 404 that names it, or any
/// message with the word "model" and a phrase of absence. Names match only
/// as whole tokens, so model `m` is not found inside "chat/completions".
pub(crate) fn mentions_model(msg: &str, model: &str, status: u16) -> bool {
    const ABSENT: [&str; 6] = [
        "not exist",
        "not found",
        "unknown",
        "not served",
        "invalid",
        "no such",
    ];
    let lower = msg.to_ascii_lowercase();
    let name = model.to_ascii_lowercase();
    let in_name = |c: char| c.is_alphanumeric() || "-_./:".contains(c);
    if status == 404 && has_token(&lower, &name, in_name) {
        return true;
    }
    has_token(&lower, "model", char::is_alphanumeric) && ABSENT.iter().any(|p| lower.contains(p))
}

/// `needle` occurs in `text` with no `part_of_word` character on either side.
fn has_token(text: &str, needle: &str, part_of_word: impl Fn(char) -> bool) -> bool {
    let Some(first) = needle.chars().next() else {
        return false;
    };
    let mut from = 0;
    while let Some(i) = text[from..].find(needle) {
        let (s, e) = (from + i, from + i + needle.len());
        let before = text[..s]
            .chars()
            .next_back()
            .is_none_or(|c| !part_of_word(c));
        let after = text[e..].chars().next().is_none_or(|c| !part_of_word(c));
        if before && after {
            return true;
        }
        from = s + first.len_utf8();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_mentions() {
        let vllm = "The model `x-7b` does not exist.";
        assert!(mentions_model(vllm, "x-7b", 404));
        assert!(
            mentions_model(vllm, "other", 400),
            "word and phrase suffice"
        );
        let mock = "unknown path; this server has POST /v1/chat/completions and GET /v1/models";
        assert!(!mentions_model(mock, "m", 404));
        assert!(!mentions_model("Not Found", "m", 404));
        assert!(mentions_model("no model named m", "m", 404));
        assert!(
            !mentions_model("no model named m", "m", 400),
            "a name alone is a 404's"
        );
        assert!(!mentions_model(
            "This model's maximum context length is 4096 tokens",
            "x",
            400
        ));
        assert!(mentions_model("Unknown model: gpt-x.", "gpt-x", 400));
    }
}
