//! What the open loop's client threads and its driver share: the counters the profiler
//! reads at window ends, and how long the end of a run waits for the requests that end
//! cut-short sequences. Apart from both so that neither imports the other.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// Longest the end of a run waits for the requests that end cut-short sequences.
pub(super) const ENDING_WAIT: Duration = Duration::from_secs(2);

/// Counters the profiler reads at window ends.
#[derive(Debug, Default)]
pub struct OpenLoopCounters {
    /// Requests sent (measured ones).
    pub sent: AtomicU64,
    /// Requests answered (or failed) so far.
    pub done: AtomicU64,
    /// Sends that had to wait for the in-flight cap, and how long in total (ns).
    pub cap_waits: AtomicU64,
    pub cap_wait_ns: AtomicU64,
    /// Workers (connections) opened so far.
    pub workers: AtomicU64,
    /// Requests ending cut-short sequences that are queued or in flight.
    pub ending: AtomicU64,
}
