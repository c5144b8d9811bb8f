//! The result of one load level: every window measured, the merged last windows that are
//! reported, and whether they met the stability rule.

use super::request_log::RequestLog;
use super::window::WindowStats;
pub use crate::config::LoadLevel;

/// Why measuring a level ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelEnd {
    /// The last windows met the stability rule.
    Stable,
    /// `--max-trials` windows without meeting it.
    Unstable,
    /// A single-window measurement (`--request-count`), stable by definition.
    SingleWindow,
    /// The stabilizing latency reached `-l`.
    OverLatencyLimit,
    /// A window missed a `--slo` condition.
    MissedSlo,
    /// The run was interrupted (Ctrl-C) during this level.
    Interrupted,
}

/// Everything measured at one load level.
#[derive(Debug, Clone)]
pub struct LevelResult {
    pub level: LoadLevel,
    /// The windows that are reported, merged (the last three, or fewer if fewer ran).
    pub merged: WindowStats,
    /// Every window measured at this level, in order.
    pub windows: Vec<WindowStats>,
    pub end: LevelEnd,
    /// What the driver said about the level beside its figures, one sentence each.
    pub notes: Vec<String>,
    /// Every request of the level, when a per-request export was asked for
    /// (`--artifact-dir`); the profiler drops it once the level has been handed on.
    pub requests: Option<RequestLog>,
    /// AIPerf's `--slice-duration`: the measurement dealt into slices, in order (else
    /// empty).
    pub slices: super::slices::SliceSet,
}

impl LevelResult {
    /// True when the reported numbers come from a stable measurement.
    pub fn is_stable(&self) -> bool {
        matches!(self.end, LevelEnd::Stable | LevelEnd::SingleWindow)
    }

    /// True when the level counts for a search: measured stable, and no window reached `-l`
    /// or missed `--slo` (every window is checked, so the merged figures meet them too).
    pub fn met_criteria(&self) -> bool {
        self.is_stable()
    }
}
