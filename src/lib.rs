//! inferperf: measure how fast an inference server serves a model.
//!
//! Data moves one way: flags → [`config`] → target discovery ([`backend`], [`model`]) →
//! request payloads ([`data`], encoded by [`wire`]) → the load driver ([`load`]) → samples,
//! windows and stability ([`measure`]) → the results file ([`results`]) → reports
//! ([`report`]), with the live progress line beside them ([`ui`]); the [`commands`] drive
//! it. [`server`] is the embedded reference server used as a default target and a ground
//! truth.

pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;
pub mod data;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod load;
pub mod measure;
pub mod model;
pub mod number;
pub mod prometheus;
pub mod proto;
pub mod report;
pub mod results;
pub mod server;
pub mod shm;
pub mod ui;
pub mod wire;
