//! Integration tests: the real `llmload` binary against `llmload serve` on
//! 127.0.0.1, ephemeral ports, every process bounded in time. One test binary
//! with topic modules (ripgrep style).

mod pki;
mod util;

mod accuracy;
mod audit;
mod bench_modes;
mod browser;
mod compare;
mod crash;
mod datasets;
mod docs;
mod endpoints;
mod events;
mod failures;
mod faults;
mod goodput;
mod info;
mod interrupt;
mod io_matrix;
mod live;
mod memory;
mod merge;
mod mlperf_cli;
mod mlperf_config;
mod mlperf_files;
mod mlperf_rules;
mod mlperf_tokens;
mod predefined;
mod probe;
mod profile;
mod prom_check;
mod protocols;
mod regression;
mod report;
mod report_cmd;
mod scale;
mod scenarios;
mod secrets;
mod serve;
mod server_metrics;
mod shards;
mod timeline;
mod timing;
mod tls;
mod uring;
