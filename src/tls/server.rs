//! The server side's configuration for `serve --tls-cert --tls-key`
//! (and `--tls-client-ca` to require client certificates). Built once
//! before the server's workers fork, so they share one ticket key: a
//! session resumes whichever worker accepts the connection.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;

use super::client::{read_certs, read_key};
use super::{ALPN_HTTP11, provider};

/// TLS 1.3 tickets sent after each handshake: one per connection a client
/// might open next, a few at a time.
const TICKETS: usize = 4;

/// Bytes a ring ticket adds to its contents: key name, nonce and tag.
const TICKET_OVERHEAD: usize = 16 + 12 + 16;

/// The configuration for serving `cert` (a PEM chain, leaf first) with
/// `key`, optionally requiring a client certificate signed by `client_ca`.
/// Without `resumption` every handshake is a full one (no tickets, no
/// session cache): a server to measure full-handshake cost against.
pub(crate) fn config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    resumption: bool,
) -> Result<Arc<ServerConfig>, String> {
    let chain = read_certs(cert, "--tls-cert")?;
    let key_der = read_key(key)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?;
    let builder = match client_ca {
        Some(path) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in read_certs(path, "--tls-client-ca")? {
                roots.add(c).map_err(|e| {
                    format!("--tls-client-ca '{}': not a usable CA: {e}", path.display())
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| format!("--tls-client-ca '{}': {e}", path.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key_der).map_err(|e| {
        format!(
            "--tls-cert '{}' and --tls-key '{}' do not go together: {e}",
            cert.display(),
            key.display()
        )
    })?;
    config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
    if !resumption {
        config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
        return Ok(Arc::new(config));
    }
    config.ticketer =
        rustls::crypto::ring::Ticketer::new().map_err(|e| format!("TLS tickets: {e}"))?;
    // rustls's ticketer refuses any ticket longer than the longest it has
    // itself made, a count each forked process would start at zero: a
    // server worker could not resume a session until it had issued a ticket
    // of its own. One ticket of the largest size TLS allows, made here,
    // before anything forks, sets it for all.
    let largest = usize::from(u16::MAX) - TICKET_OVERHEAD;
    if config.ticketer.encrypt(&vec![0; largest]).is_none() {
        return Err("TLS tickets: cannot encrypt".to_string());
    }
    config.send_tls13_tickets = TICKETS;
    Ok(Arc::new(config))
}
