//! The client's session store: what resumption draws on. rustls's own
//! `ClientSessionMemoryCache` keeps at most 8 TLS 1.3 tickets per server,
//! and a TLS 1.3 ticket is used once, so a run opening hundreds of
//! connections to one server at once would resume 8 and pay full handshakes
//! for the rest. This store keeps up to a bound of tickets per server (the
//! oldest dropped first), and says how many are ready, so the worker's
//! warm-up can open each wave of connections once the previous wave's
//! tickets have arrived.
//!
//! One store per `TlsClient`, built before workers fork: each worker process
//! then has its own copy. The lock is taken once or twice per handshake and
//! per ticket, never per request.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rustls::NamedGroup;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;

/// What is remembered about one server.
#[derive(Debug, Default)]
struct Server {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    /// Oldest first; each is taken once.
    tls13: VecDeque<Tls13ClientSessionValue>,
}

/// Sessions per server name, up to `max_tickets` TLS 1.3 tickets each.
#[derive(Debug)]
pub(crate) struct SessionStore {
    servers: Mutex<HashMap<ServerName<'static>, Server>>,
    max_tickets: usize,
}

impl SessionStore {
    pub(crate) fn new(max_tickets: usize) -> SessionStore {
        SessionStore {
            servers: Mutex::new(HashMap::new()),
            max_tickets,
        }
    }

    /// TLS 1.3 tickets ready for `name`: how many connections can resume now.
    pub(crate) fn tickets(&self, name: &ServerName<'_>) -> usize {
        self.with(|s| s.get(name).map_or(0, |d| d.tls13.len()))
    }

    /// A poisoned lock only means another thread panicked while holding it;
    /// the map is still consistent (every edit is one call), so it is used.
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<ServerName<'static>, Server>) -> T) -> T {
        let mut guard = match self.servers.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }
}

impl ClientSessionStore for SessionStore {
    fn set_kx_hint(&self, name: ServerName<'static>, group: NamedGroup) {
        self.with(|s| s.entry(name).or_default().kx_hint = Some(group));
    }

    fn kx_hint(&self, name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(|s| s.get(name).and_then(|d| d.kx_hint))
    }

    fn set_tls12_session(&self, name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(|s| s.entry(name).or_default().tls12 = Some(value));
    }

    fn tls12_session(&self, name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.with(|s| s.get(name).and_then(|d| d.tls12.clone()))
    }

    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.with(|s| {
            if let Some(d) = s.get_mut(name) {
                d.tls12 = None;
            }
        });
    }

    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        if self.max_tickets == 0 {
            return;
        }
        self.with(|s| {
            let d = s.entry(name).or_default();
            if d.tls13.len() >= self.max_tickets {
                d.tls13.pop_front();
            }
            d.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        // The newest: the one furthest from its expiry.
        self.with(|s| s.get_mut(name).and_then(|d| d.tls13.pop_back()))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rustls::{ClientConnection, HandshakeKind, ServerConnection};

    use crate::tls::{TlsClient, TlsSettings, server};

    /// A CA-less setup: a self-signed leaf for `localhost`, trusted as its
    /// own anchor. Returns the directory and the cert and key paths.
    fn files(tag: &str) -> (PathBuf, PathBuf, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("llmload-sessions-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = crate::tls::self_signed_localhost();
        let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&c, cert).unwrap();
        std::fs::write(&k, key).unwrap();
        (dir, c, k)
    }

    /// Runs a handshake (and the tickets after it) in memory.
    fn handshake(client: &mut ClientConnection, server: &mut ServerConnection) {
        loop {
            let mut moved = false;
            while client.wants_write() {
                let mut buf = Vec::new();
                client.write_tls(&mut buf).unwrap();
                server.read_tls(&mut &buf[..]).unwrap();
                server.process_new_packets().unwrap();
                moved = true;
            }
            while server.wants_write() {
                let mut buf = Vec::new();
                server.write_tls(&mut buf).unwrap();
                client.read_tls(&mut &buf[..]).unwrap();
                client.process_new_packets().unwrap();
                moved = true;
            }
            if !moved {
                return;
            }
        }
    }

    #[test]
    fn a_pool_wider_than_eight_resumes_from_the_tickets_of_the_wave_before() {
        let (dir, cert, key) = files("pool");
        let srv = server::config(&cert, &key, None, true).unwrap();
        let settings = TlsSettings {
            ca_cert: Some(cert.clone()),
            ..TlsSettings::default()
        };
        let client = TlsClient::new(&settings, "localhost").unwrap();
        assert_eq!(client.tickets(), 0);
        // Each wave opens as many connections as there are tickets: one
        // full handshake, then 4, then 16 resumed ones, all at once.
        let mut wave = 1;
        for round in 0..3 {
            let mut pairs: Vec<_> = (0..wave)
                .map(|_| {
                    (
                        client.connect().unwrap(),
                        ServerConnection::new(srv.clone()).unwrap(),
                    )
                })
                .collect();
            assert_eq!(client.tickets(), 0, "round {round}: every ticket taken");
            for (c, s) in &mut pairs {
                handshake(c, s);
                let want = if round == 0 {
                    HandshakeKind::Full
                } else {
                    HandshakeKind::Resumed
                };
                assert_eq!(c.handshake_kind(), Some(want), "round {round}");
            }
            // rustls's own cache would stop at 8.
            assert_eq!(client.tickets(), wave * 4, "round {round}");
            wave = client.tickets();
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_oldest_tickets_go_past_the_bound() {
        let (dir, cert, key) = files("bound");
        let srv = server::config(&cert, &key, None, true).unwrap();
        let settings = TlsSettings {
            ca_cert: Some(cert.clone()),
            ..TlsSettings::default()
        };
        let client = TlsClient::new(&settings, "localhost").unwrap();
        let store = super::SessionStore::new(6);
        let mut config = (*client.config).clone();
        let store = std::sync::Arc::new(store);
        config.resumption = rustls::client::Resumption::store(store.clone());
        let config = std::sync::Arc::new(config);
        for _ in 0..3 {
            let mut c = ClientConnection::new(config.clone(), client.server_name.clone()).unwrap();
            let mut s = ServerConnection::new(srv.clone()).unwrap();
            handshake(&mut c, &mut s);
        }
        // 4 tickets per handshake, less the 2 the later handshakes used.
        assert_eq!(store.tickets(&client.server_name), 6);
        let _ = std::fs::remove_dir_all(dir);
    }
}
