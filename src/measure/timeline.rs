//! Load over time (`--ramp`, `--load-steps`): instead of levels held until stable, one plan
//! runs once (`load::timeline` drives it) and is cut into 1-second buckets, each with its target load, throughput,
//! latency percentiles and errors — the answer to "what happens during a spike". As in a
//! window, a request belongs to the bucket in which its answer arrives, and latency counts
//! from the scheduled send. After the plan ends, buckets go on while answers are still
//! arriving (up to the request timeout), so a backlog's tail shows; the last one ends with
//! the last answer.

use std::time::Duration;

use super::window::WindowStats;
use inferperf_wire::error::RunError;

/// Length of a bucket.
pub const BUCKET: Duration = Duration::from_secs(1);

/// One second of the run.
#[derive(Debug, Clone)]
pub struct Bucket {
    /// Start of the bucket, from the start of the plan.
    pub start: Duration,
    /// The plan's load averaged over the bucket (0 after the plan's end).
    pub target: f64,
    /// True for the buckets after the plan's end, while answers still arrive.
    pub after_end: bool,
    pub stats: WindowStats,
}

impl Bucket {
    /// End of the bucket, from the start of the plan.
    pub fn end(&self) -> Duration {
        self.start + self.stats.duration
    }
}

/// The buckets of a run (their histograms dropped once reported, see
/// [`WindowStats::compact`]), all of them merged, and the error that cut the run short.
#[derive(Debug)]
pub struct TimelineOutcome {
    pub buckets: Vec<Bucket>,
    pub total: WindowStats,
    pub error: Option<RunError>,
}
