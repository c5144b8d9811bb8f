//! Measurement: samples recorded by the driver are cut into windows, windows are judged by
//! the stability rule, and a level's windows become its result. Load over time is cut into
//! 1-second buckets instead (`timeline`).

pub mod confidence;
pub mod cpu;
pub mod distribution;
pub mod level;
pub mod monitors;
pub mod replica;
pub mod request_log;
pub mod sample;
pub mod server;
pub mod slices;
pub mod slo;
pub mod stability;
pub mod timeline;
pub mod tokens;
pub mod turns;
pub mod two_sample;
pub mod window;
