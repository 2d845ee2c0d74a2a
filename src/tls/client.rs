//! The client side's configuration: trust anchors (the system store, plus
//! `--ca-cert`), the name checked and sent as SNI, a client certificate for
//! mTLS, ALPN, and the session cache resumption draws on. Built once per
//! (endpoint, settings) before workers fork; errors name the file or field.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::client::Resumption;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::sessions::SessionStore;
use super::{ALPN_HTTP11, provider};

/// TLS 1.3 tickets the client keeps per server, per process; a ticket is
/// used once, so this bounds how many resumptions can be ready at once (a
/// pool of this many connections opens without a full handshake each).
const SESSION_CACHE: usize = 4096;

/// The TLS settings of one endpoint, as flags and profile fields give them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct TlsSettings {
    /// PEM file of extra trust anchors (may hold several).
    pub ca_cert: Option<PathBuf>,
    /// Skip certificate verification (the report says so).
    pub insecure: bool,
    /// The name verified and sent as SNI instead of the URL's host.
    pub server_name: Option<String>,
    /// Client certificate chain (PEM) and its key, for mTLS.
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

/// A ready client configuration and the name it connects as.
#[derive(Clone, Debug)]
pub(crate) struct TlsClient {
    pub config: Arc<ClientConfig>,
    pub server_name: ServerName<'static>,
    /// Verification is off (`--insecure`).
    pub insecure: bool,
    /// The sessions `config` resumes from (shared with it).
    pub sessions: Arc<SessionStore>,
}

impl TlsClient {
    /// The configuration for an https endpoint on `host` (the URL's host,
    /// which `settings.server_name` overrides).
    pub(crate) fn new(settings: &TlsSettings, host: &str) -> Result<TlsClient, String> {
        let name = settings.server_name.as_deref().unwrap_or(host);
        // An IPv6 literal comes from the URL in brackets.
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        let server_name = ServerName::try_from(bare.to_string())
            .map_err(|_| format!("'{name}' is not a valid TLS server name"))?;
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup: {e}"))?;
        let builder = if settings.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification::new()))
        } else {
            builder.with_root_certificates(roots(settings.ca_cert.as_deref())?)
        };
        let mut config = match (&settings.client_cert, &settings.client_key) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(read_certs(cert, "--client-cert")?, read_key(key)?)
                .map_err(|e| {
                    format!(
                        "--client-cert '{}' and --client-key '{}' do not go together: {e}",
                        cert.display(),
                        key.display()
                    )
                })?,
            (None, None) => builder.with_no_client_auth(),
            (Some(_), None) => return Err("--client-cert needs --client-key".into()),
            (None, Some(_)) => return Err("--client-key needs --client-cert".into()),
        };
        config.alpn_protocols = vec![ALPN_HTTP11.to_vec()];
        let sessions = Arc::new(SessionStore::new(SESSION_CACHE));
        config.resumption = Resumption::store(sessions.clone());
        Ok(TlsClient {
            config: Arc::new(config),
            server_name,
            insecure: settings.insecure,
            sessions,
        })
    }

    /// TLS 1.3 tickets ready for this endpoint's server.
    pub(crate) fn tickets(&self) -> usize {
        self.sessions.tickets(&self.server_name)
    }

    /// A new client connection to this endpoint.
    pub(crate) fn connect(&self) -> Result<rustls::ClientConnection, rustls::Error> {
        rustls::ClientConnection::new(self.config.clone(), self.server_name.clone())
    }
}

/// The system's trust anchors, read once per process.
fn system_roots() -> &'static Result<Vec<CertificateDer<'static>>, String> {
    static ROOTS: OnceLock<Result<Vec<CertificateDer<'static>>, String>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            let why = found
                .errors
                .first()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            return Err(format!(
                "no trusted CA certificates found in the system store{why}: looked at \
                 $SSL_CERT_FILE and $SSL_CERT_DIR, then the usual files, e.g. \
                 /etc/ssl/certs/ca-certificates.crt (Debian, Ubuntu, Alpine), \
                 /etc/pki/tls/certs/ca-bundle.crt (RHEL, Fedora), /etc/ssl/cert.pem; \
                 install the CA bundle (ca-certificates), set SSL_CERT_FILE, \
                 or give --ca-cert PATH"
            ));
        }
        Ok(found.certs)
    })
}

/// The system store plus `ca_cert`'s certificates. With `ca_cert`, a system
/// store that cannot be found is not an error: the given anchors suffice.
fn roots(ca_cert: Option<&Path>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match (system_roots(), ca_cert) {
        (Ok(certs), _) => {
            // Anchors the parser rejects are skipped, as every client does:
            // a store often carries a few odd ones.
            let _ = store.add_parsable_certificates(certs.iter().cloned());
        }
        (Err(e), None) => return Err(e.clone()),
        (Err(_), Some(_)) => {}
    }
    if let Some(path) = ca_cert {
        for cert in read_certs(path, "--ca-cert")? {
            store.add(cert).map_err(|e| {
                format!(
                    "--ca-cert '{}': a certificate is not a usable trust anchor: {e}",
                    path.display()
                )
            })?;
        }
    }
    Ok(store)
}

/// Every certificate in the PEM file `path`; errors name the flag and file.
pub(crate) fn read_certs(path: &Path, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let bytes = crate::capped_read::bytes(path, crate::capped_read::CONFIG)
        .map_err(|e| format!("{flag} '{shown}': cannot read: {e}"))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag} '{shown}': not a PEM certificate file: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} '{shown}': no certificate in it (expected PEM, -----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(certs)
}

/// The private key in the PEM file `path` (PKCS#8, PKCS#1 or SEC1). Errors
/// name the file, never its contents.
pub(crate) fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let shown = path.display();
    let bytes = crate::capped_read::bytes(path, crate::capped_read::CONFIG)
        .map_err(|e| format!("key file '{shown}': cannot read: {e}"))?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| {
        format!("key file '{shown}': no private key in it (expected PEM: PKCS#8, PKCS#1 or SEC1)")
    })
}

/// `--insecure`: any certificate is accepted, as `curl -k` does; the
/// handshake's own signatures are still checked, so the connection is
/// encrypted to whoever holds the presented key.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl NoVerification {
    fn new() -> NoVerification {
        NoVerification(provider())
    }
}

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
