//! The integration tests, one module per concern, built as one test binary: one binary links
//! the library once, where a binary per file linked it some fifty times (most of the test
//! build's time). Each module runs the real `inferperf` binary or the embedded server.

mod common;
mod fault_proxy;
mod server_util;

mod aiperf_cli;
mod bad_inputs;
mod bls;
mod checked_answers;
mod client;
mod compare;
mod datatypes;
mod demo;
mod dynamic_grpc;
mod faults;
mod fuzz_regressions;
mod html_report;
mod input_data;
mod interrupt;
mod layering;
mod llm;
mod llm_artifacts;
mod llm_bad_answers;
mod llm_tokens;
mod merge;
mod number_walk;
mod number_walk_files;
mod pa_flags;
mod pa_options;
mod profile;
mod profile_export;
mod progress;
mod rate;
mod replicas;
mod responses;
mod results;
mod results_cli;
mod search;
mod sequences;
mod server_breakdown;
mod server_fail_modes;
mod server_llm;
mod server_protocol;
mod server_scheduling;
mod server_stats;
mod server_stream;
mod shards;
mod shared_memory;
mod streaming;
mod sweep;
mod tfserving;
mod timeline;
mod tls;
mod torchserve;
