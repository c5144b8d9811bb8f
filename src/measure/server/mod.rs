//! The server's side of a measurement, read beside the client's samples: its statistics
//! extension's counters ([`stats`]), the Prometheus pages it serves ([`metrics`]), what an
//! LLM engine says on them ([`engine_metrics`], [`engine_figures`]), and its GPUs
//! ([`gpu_series`], [`gpu_figures`], read from DCGM's page or this machine's [`nvml`]).

pub mod engine_figures;
pub mod engine_metrics;
pub mod gpu_figures;
pub mod gpu_series;
pub mod metrics;
pub mod nvml;
pub mod stats;
