//! TLS for https endpoints (the client side, in bench's workers, probe and
//! model discovery) and for `serve --tls-*` (the server side), over rustls.
//!
//! The TLS state sits between a socket and the buffers the HTTP code already
//! has: [`io`] moves bytes through a rustls connection on a non-blocking
//! socket, so the protocol, chunked and SSE code never knows whether TLS is
//! underneath. [`client`] and [`server`] build the configurations once per
//! run, before workers fork, so every connection of a process shares one
//! session cache (resumption) and every server worker one ticket key.
//! [`reason`] names what went wrong in words a user can act on.

pub(crate) mod client;
pub(crate) mod io;
pub(crate) mod reason;
pub(crate) mod server;
pub(crate) mod sessions;

pub(crate) use client::{TlsClient, TlsSettings};

/// The one application protocol offered and accepted: requests are HTTP/1.1.
pub(crate) const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The crypto provider every configuration uses: ring, which builds with
/// a C compiler alone and links into the static binary.
pub(crate) fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}

/// A self-signed certificate for `localhost` and its key, as PEM: its own
/// trust anchor, for tests that need one TLS identity and no CA.
#[cfg(test)]
pub(crate) fn self_signed_localhost() -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    (cert.pem(), key.serialize_pem())
}

#[cfg(test)]
mod tests;
