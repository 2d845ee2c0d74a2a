//! What went wrong with TLS, in words a user can act on: the reason kept as
//! a failed request's message and printed by probe. Called on failure only.

use std::borrow::Cow;
use std::io;

use rustls::{AlertDescription, CertificateError, Error};

use super::io::{FirstBytes, tls_error};

/// Why a handshake failed. `first` is what the peer sent first, which tells
/// a plain-HTTP server behind an `https://` URL from a broken TLS one.
pub(crate) fn handshake(e: &io::Error, first: &FirstBytes) -> Cow<'static, str> {
    if first.get().starts_with(b"HTTP/") {
        return "the server answered in plain HTTP, not TLS: use http:// for this endpoint".into();
    }
    match tls_error(e) {
        Some(err) => describe(err),
        None if e.kind() == io::ErrorKind::UnexpectedEof => {
            "the server closed the connection during the TLS handshake \
             (does it speak TLS on this port?)"
                .into()
        }
        None => format!("TLS handshake: {e}").into(),
    }
}

/// Why a connection failed after its handshake.
pub(crate) fn after_handshake(e: &io::Error) -> Cow<'static, str> {
    match tls_error(e) {
        Some(err) => describe(err),
        None => format!("TLS: {e}").into(),
    }
}

/// A rustls error as a reason.
pub(crate) fn describe(e: &Error) -> Cow<'static, str> {
    match e {
        Error::InvalidCertificate(c) => certificate(c),
        Error::AlertReceived(a) => alert(*a),
        Error::PeerIncompatible(p) => format!(
            "protocol version: the server offers no TLS version or cipher suite in common \
             (llmload speaks TLS 1.2 and 1.3): {p:?}"
        )
        .into(),
        Error::NoCertificatesPresented => "the server presented no certificate".into(),
        Error::InvalidMessage(_) => {
            "the server's bytes are not TLS (is this a plain-HTTP port? then use http://)".into()
        }
        Error::DecryptError => "a TLS record did not decrypt (corrupted in transit?)".into(),
        other => format!("TLS: {other}").into(),
    }
}

fn certificate(c: &CertificateError) -> Cow<'static, str> {
    match c {
        CertificateError::UnknownIssuer => {
            "unknown issuer: the server's certificate is not signed by a trusted CA \
             (add the CA with --ca-cert PATH, or skip verification with --insecure)"
                .into()
        }
        CertificateError::NotValidForName => {
            "name mismatch: the server's certificate is not valid for the host name \
             (check the URL, or set the expected name with --tls-server-name)"
                .into()
        }
        CertificateError::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "name mismatch: the server's certificate is not valid for {expected:?} \
             (it names {}); check the URL, or set the expected name with --tls-server-name",
            presented.join(", ")
        )
        .into(),
        CertificateError::Expired => "expired: the server's certificate has expired".into(),
        CertificateError::ExpiredContext { time, not_after } => format!(
            "expired: the server's certificate expired {} s ago",
            time.as_secs().saturating_sub(not_after.as_secs())
        )
        .into(),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "not yet valid: the server's certificate starts later (check this machine's clock)"
                .into()
        }
        CertificateError::Revoked => "revoked: the server's certificate is revoked".into(),
        CertificateError::BadSignature => "bad signature on the server's certificate".into(),
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "the server's certificate is not for TLS servers (wrong extended key usage)".into()
        }
        CertificateError::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
            CA_AS_LEAF.into()
        }
        other => format!("invalid certificate: {other:?}").into(),
    }
}

/// webpki's `CaUsedAsEndEntity`: what `openssl req -x509` makes by default
/// (basic constraints CA:TRUE) cannot be a server's own certificate, even
/// when trusted with --ca-cert. Short enough to survive the 200 characters
/// a failure message keeps, fix included.
const CA_AS_LEAF: &str = "the server's certificate is a CA's (CA:TRUE, the `openssl req -x509` \
     default), not a server's: give it a leaf signed by that CA (CA:FALSE), or use --insecure";

fn alert(a: AlertDescription) -> Cow<'static, str> {
    let hint = match a {
        AlertDescription::CertificateRequired => {
            ": the server requires a client certificate (--client-cert, --client-key)"
        }
        AlertDescription::UnknownCA | AlertDescription::BadCertificate => {
            ": the server did not accept the client certificate"
        }
        AlertDescription::ProtocolVersion => {
            ": protocol version: no TLS version in common with the server"
        }
        AlertDescription::HandshakeFailure => {
            ": no parameters in common with the server (version, cipher suite or ALPN)"
        }
        AlertDescription::UnrecognisedName => ": the server does not know the name sent as SNI",
        _ => "",
    };
    format!("alert received: {a:?}{hint}").into()
}

/// Whether a response's first bytes are a TLS record (a handshake or an
/// alert), as a TLS server answers a plain-HTTP request.
pub(crate) fn looks_like_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [0x15 | 0x16, 0x03, ..])
}

/// The message for a plain-HTTP request answered in TLS.
pub(crate) const TLS_ON_HTTP: &str =
    "the server answered in TLS, not plain HTTP: use https:// for this endpoint";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_http_answer_is_named_before_the_tls_error() {
        let mut first = FirstBytes::default();
        first.bytes[..5].copy_from_slice(b"HTTP/");
        first.len = 5;
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
        );
        assert!(handshake(&e, &first).contains("plain HTTP"));
        assert!(handshake(&e, &FirstBytes::default()).contains("not TLS"));
    }

    #[test]
    fn certificate_failures_say_which() {
        let e = |c| Error::InvalidCertificate(c);
        assert!(describe(&e(CertificateError::UnknownIssuer)).starts_with("unknown issuer"));
        assert!(describe(&e(CertificateError::NotValidForName)).starts_with("name mismatch"));
        assert!(describe(&e(CertificateError::Expired)).starts_with("expired"));
        assert!(
            describe(&Error::AlertReceived(AlertDescription::CertificateRequired))
                .contains("--client-cert")
        );
    }

    #[test]
    fn a_ca_certificate_as_a_servers_own_says_what_to_do() {
        /// Stands in for webpki's error, which rustls passes on as `Other`.
        #[derive(Debug)]
        enum Webpki {
            CaUsedAsEndEntity,
        }
        impl std::fmt::Display for Webpki {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{self:?}")
            }
        }
        impl std::error::Error for Webpki {}
        let other = rustls::OtherError(std::sync::Arc::new(Webpki::CaUsedAsEndEntity));
        let why = describe(&Error::InvalidCertificate(CertificateError::Other(other)));
        assert!(why.contains("is a CA's (CA:TRUE"), "{why}");
        assert!(
            why.contains("--insecure") && why.contains("CA:FALSE"),
            "{why}"
        );
        assert!(why.chars().count() <= 200, "{why}");
    }

    #[test]
    fn tls_records_are_recognized() {
        assert!(looks_like_tls(&[0x15, 0x03, 0x03, 0, 2]));
        assert!(looks_like_tls(&[0x16, 0x03, 0x01]));
        assert!(!looks_like_tls(b"HTTP/1.1 200 OK"));
    }
}
