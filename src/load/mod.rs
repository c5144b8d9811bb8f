//! Load drivers: how requests are put in flight. The closed loop keeps exactly N requests
//! outstanding; the open loop sends on a schedule whatever the answers do. Each in-flight
//! request has its own connection; connections live on the client's own threads
//! (`client_threads`). `timeline` plans load that changes over time, `search`
//! picks the next level of a sweep from the results so far; `progress` is what a live
//! display is told.

pub mod answer_tokens;
pub mod caller;
pub mod client_threads;
pub mod closed_loop;
pub mod curve;
pub mod driver;
pub mod gate;
pub mod interrupt;
pub mod open_loop;
pub mod periodic;
pub mod plan;
pub mod profiler;
pub mod progress;
pub mod ramps;
pub mod rate_ramps;
pub mod schedule;
pub mod search;
pub mod sequences;
pub mod sessions;
mod slot_set;
pub mod ties;
pub mod timeline;
mod timer;
pub mod warm_up;
