//! The share of one `-u` server in a window when a run spreads its load over several
//! (`-u a,b,c`): what it answered, what failed, and its latency distribution. A window keeps
//! one per server beside its whole figures, so that the report can show each server's own
//! throughput and latency; with one server it keeps none and costs nothing.

use super::distribution::{Compaction, Distribution};
use super::sample::Sample;

/// One server's requests in a window (or in merged windows). Latencies are in ns, from the
/// scheduled send, as the window's own `latency`.
#[derive(Debug, Clone, Default)]
pub struct ReplicaWindow {
    /// Requests that succeeded.
    pub ok: u64,
    /// Requests that failed, of any kind.
    pub failed: u64,
    pub latency: Distribution,
}

impl ReplicaWindow {
    /// Adds one finished request of this server.
    pub fn add(&mut self, sample: &Sample) {
        if sample.error.is_some() {
            self.failed += 1;
            return;
        }
        self.ok += 1;
        self.latency
            .record(sample.latency_from_schedule_ns().max(1));
    }

    pub fn merge(&mut self, other: &ReplicaWindow) {
        self.ok += other.ok;
        self.failed += other.failed;
        self.latency.merge(&other.latency);
    }

    pub fn compact(&mut self, keep: &Compaction) {
        self.latency.compact(keep);
    }

    /// Requests that finished, failed or not.
    pub fn completed(&self) -> u64 {
        self.ok + self.failed
    }

    /// Latency at percentile `p` (0 < p < 100) in µs.
    pub fn percentile_us(&self, p: f64) -> f64 {
        self.latency.percentile(p) / 1000.0
    }
}

/// Adds `theirs` into `mine` server by server, growing `mine` to as many servers.
pub fn merge_replicas(mine: &mut Vec<ReplicaWindow>, theirs: &[ReplicaWindow]) {
    if mine.len() < theirs.len() {
        mine.resize_with(theirs.len(), ReplicaWindow::default);
    }
    for (m, t) in mine.iter_mut().zip(theirs) {
        m.merge(t);
    }
}
