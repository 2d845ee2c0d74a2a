//! Secrets out of what llmload prints of a server's words: the API key,
//! the values of headers whose names suggest credentials and the values in
//! the endpoint URLs' query, masked raw and JSON-escaped, since a server may
//! echo them in an error message. `probe` masks its whole output text once,
//! after rendering, so no code path can forget it; `bench` masks each
//! message a server sent (a request's error, model discovery's refusal)
//! where it becomes text, before it reaches any output; the cost is that a secret
//! too short to mask safely is not masked at all. (The URL itself is shown
//! redacted already; this catches a server's echo of a query value.)

use crate::http::headers::{REDACTED as MASK, is_secret_header};

/// Secrets shorter than this are not masked: they would mask ordinary text,
/// and they are never printed deliberately anyway.
const MIN_SECRET: usize = 4;

/// The API key, the values of headers whose names suggest credentials
/// (with the token after a scheme such as `Bearer` on its own too, since a
/// server may echo just that part), and the query values of `urls`, each
/// also in its JSON-escaped spelling when that differs: made once per run,
/// so masking a message is only searching it.
pub(crate) fn secrets(
    api_key: Option<&str>,
    headers: &[(String, String)],
    urls: &[&str],
) -> Vec<String> {
    let mut out: Vec<String> = api_key.into_iter().map(str::to_string).collect();
    for url in urls {
        if let Some((_, query)) = url.split_once('?') {
            for pair in query.split(['&', '#']) {
                let v = pair.split_once('=').map_or(pair, |(_, v)| v);
                out.push(v.to_string());
            }
        }
    }
    for (name, value) in headers {
        if is_secret_header(name) {
            out.push(value.clone());
            if let Some((_, token)) = value.split_once(' ') {
                out.push(token.trim().to_string());
            }
        }
    }
    spellings(out)
}

/// `values` as `redact` takes them: each long enough to mask safely, also
/// in its JSON-escaped spelling, longest first.
pub(crate) fn spellings(mut out: Vec<String>) -> Vec<String> {
    out.retain(|s| s.len() >= MIN_SECRET);
    let escaped: Vec<String> = out
        .iter()
        .map(|s| serde_json::to_string(s).expect("a string always serializes"))
        .map(|q| q[1..q.len() - 1].to_string())
        .collect();
    out.extend(escaped);
    // Longest first, so a secret containing another is masked whole.
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// `text` with every one of `secrets` (as `secrets` makes them) replaced
/// by `MASK`.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), MASK);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_masks_raw_and_escaped_forms() {
        let headers = vec![
            ("X-Api-Key".to_string(), "hdr-secret-1".to_string()),
            ("Authorization".to_string(), "Bearer tok-2345".to_string()),
            ("X-Trace".to_string(), "visible".to_string()),
        ];
        let s = secrets(
            Some("sk-\"q\"-99"),
            &headers,
            &["http://h/p?key=qry-secret-3&v=1", "http://g/?k=second-q-4"],
        );
        let text = r#"key sk-"q"-99 json "sk-\"q\"-99" hdr-secret-1 tok-2345 qry-secret-3 visible"#;
        let out = redact(text, &s);
        assert!(!out.contains("sk-"), "{out}");
        assert!(!out.contains("qry-secret"), "{out}");
        assert_eq!(redact("second-q-4", &s), "<redacted>");
        assert!(out.contains("<redacted>"), "{out}");
        assert!(!out.contains("hdr-secret"), "{out}");
        assert!(!out.contains("tok-2345"), "{out}");
        assert!(out.contains("visible"));
        assert!(
            secrets(Some("ab"), &[], &["http://h/?v=1"]).is_empty(),
            "too short to mask"
        );
    }
}
