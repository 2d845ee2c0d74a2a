//! The built-in mock LLM endpoint (`llmload serve`, the default benchmark
//! target, and the peer of every integration test).

use std::net::SocketAddr;
use std::time::Duration;

/// Everything the server needs, resolved from flags.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub workers: usize,
    pub ttft: Duration,
    pub tpot: Duration,
    pub output_tokens: Option<u32>,
    pub error_rate: f64,
    pub malformed_rate: f64,
    pub reset_rate: f64,
    pub pin: Option<usize>,
}

/// A running built-in server (stub until the server module lands).
pub struct ServerHandle {
    pub addr: SocketAddr,
}

/// Counters of a stopped server.
#[derive(serde::Serialize, Default)]
pub struct ServerStats {
    pub requests: u64,
}

impl ServerHandle {
    pub fn stop(self) -> ServerStats {
        todo!("server helper")
    }
}

pub fn spawn(cfg: &ServerConfig) -> Result<ServerHandle, String> {
    let _ = cfg;
    todo!("server helper")
}
