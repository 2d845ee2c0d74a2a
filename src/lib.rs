//! llmload: a load generator and benchmark for LLM inference endpoints and
//! gateways. The binary (`src/main.rs`) is a thin argh front end over this
//! library; the library exists so that benchmarks (`bench/`), fuzz targets
//! (`fuzz/`) and integration tests reach the same parsers and rings the binary
//! runs. `docs/DESIGN.md` is the map of the modules below.

pub mod accuracy;
mod ascii;
mod capped_read;
mod choice;
pub mod cli;
pub mod clock;
mod config;
pub mod dataset;
mod engine;
pub mod http;
mod merge;
mod metrics;
mod plan;
mod printable;
pub mod protocol;
pub mod pyrandom;
mod report;
pub mod rng;
pub mod scrape;
pub mod server;
mod shard;
pub mod shm;
pub mod sys;
mod tls;
pub mod tokens;
mod typo;
mod uuid;

/// The MLPerf YAML config reader, for its fuzz target only.
#[doc(hidden)]
pub use config::mlperf::fuzzing as mlperf_config_fuzzing;

/// The profile reader, for its fuzz target only.
#[doc(hidden)]
pub use config::profile::fuzzing as profile_fuzzing;

/// The `merge` shard-state reader, for its fuzz target only.
#[doc(hidden)]
pub use merge::fuzzing as merge_state_fuzzing;
