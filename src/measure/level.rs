//! The result of one load level: every window measured, the merged last windows that are
//! reported, and whether they met the stability rule.

use super::window::WindowStats;

/// The load a level applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadLevel {
    /// Closed loop: this many requests in flight.
    Concurrency(u32),
    /// Open loop: this many requests per second.
    Rate(f64),
}

impl LoadLevel {
    /// The value as perf_analyzer prints it in the CSV's first column.
    pub fn csv_value(&self) -> String {
        match self {
            LoadLevel::Concurrency(c) => c.to_string(),
            LoadLevel::Rate(r) => format_rate(*r),
        }
    }
}

/// Prints a rate without a trailing ".0" for whole numbers (`100`, `12.5`).
pub fn format_rate(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{}", rate as u64)
    } else {
        format!("{rate}")
    }
}

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
