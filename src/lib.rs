//! llmload: a load generator and benchmark for LLM inference endpoints and
//! gateways. The binary (`src/main.rs`) is a thin argh front end over this
//! library; the library exists so that benchmarks (`bench/`), fuzz targets
//! (`fuzz/`) and integration tests reach the same parsers and rings the binary
//! runs. `docs/DESIGN.md` is the map of the modules below.

pub(crate) mod ascii;
pub mod cli;
pub mod clock;
pub mod config;
pub mod dataset;
pub mod engine;
pub mod http;
pub mod metrics;
pub mod plan;
pub mod protocol;
pub mod report;
pub mod rng;
pub mod server;
pub mod shm;
pub mod sys;
pub mod tokens;
pub mod uuid;
