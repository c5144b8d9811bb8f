//! inferperf: measure how fast an inference server serves a model.
//!
//! Data moves one way: flags → [`config`] → target discovery ([`backend`], [`model`]) →
//! request payloads ([`data`], encoded by [`wire`]) → the load driver ([`load`]) → samples,
//! windows and stability ([`measure`]) → the results file ([`results`]), with the shards of
//! a run tied and merged by [`scale_out`] → reports ([`report`]), with the live progress
//! line beside them ([`ui`]); the [`commands`] drive it. [`apis`] lists every API once,
//! with what each can do, for all of them to ask. [`server`] is the embedded reference
//! server used as a default target and a ground truth.

pub mod apis;
pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;
pub mod data;
#[doc(hidden)]
pub mod fuzzing;
pub mod load;
pub mod measure;
pub mod prometheus;
pub mod report;
pub mod results;
pub mod scale_out;
pub mod ui;
