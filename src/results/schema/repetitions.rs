//! `repetitions` of `results.json`: with `--num-profile-runs`, every profile run (its
//! levels whole, as its own results file holds them) and, per level, each figure's mean
//! and confidence interval over the runs that measured it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{LevelLoad, LevelRecord};
use crate::measure::confidence::Interval;

/// Every profile run of a repeated profile, and the figures over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repetitions {
    /// `--confidence-level` of the intervals.
    pub confidence_level: f64,
    /// The runs asked for (`--num-profile-runs`).
    pub asked: u32,
    /// `--profile-run-cooldown-seconds`: the pause between two runs.
    pub cooldown_s: f64,
    /// The runs, in the order they ran (fewer than asked when interrupted).
    pub runs: Vec<RepetitionRun>,
    /// Per level (in the first run's order), each figure over the runs that measured it.
    pub levels: Vec<RepeatedLevel>,
    /// `--convergence-metric`: the test that stops the runs once a figure has settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convergence: Option<ConvergenceRecord>,
}

/// The adaptive stop: what was judged, by which test, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvergenceRecord {
    /// AIPerf's name of the figure.
    pub metric: String,
    /// Its statistic (ci-width and cv; the distribution test takes every request).
    pub stat: String,
    /// `ci-width`, `cv` or `distribution`.
    pub mode: String,
    pub threshold: f64,
    /// Whether the figure settled, ending the runs before `asked` (or at it).
    pub converged: bool,
    /// The runs made when the test passed, else every run made.
    pub after_runs: usize,
    /// The test's last value, at the level furthest from passing: the interval's width as
    /// a share of the mean, the variation, or the p-value; `None` before it could be asked.
    pub value: Option<f64>,
    /// Why the test could not be asked, if it never was.
    pub note: Option<String>,
}

/// One profile run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepetitionRun {
    /// AIPerf's label: `run_0001`, …
    pub label: String,
    /// Its own results file, when one was written.
    pub results_file: Option<String>,
    /// Why it ended before measuring every level, if it did.
    pub error: Option<String>,
    /// The levels it measured.
    pub measured: usize,
    /// Its levels, as its results file holds them (empty without a results file).
    pub levels: Vec<LevelRecord>,
}

/// A level's figures over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatedLevel {
    pub load: LevelLoad,
    /// By AIPerf's name and statistic (`request_latency_p99`, `request_throughput_avg`, …).
    pub figures: BTreeMap<String, RepeatedFigure>,
}

/// A figure over the runs: each run's value and their interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatedFigure {
    pub unit: String,
    /// Each run's value, in run order (null where the run did not measure it).
    pub values: Vec<Option<f64>>,
    #[serde(flatten)]
    pub interval: Interval,
}

impl Repetitions {
    /// A level's figures, by its load.
    pub fn level(&self, load: LevelLoad) -> Option<&RepeatedLevel> {
        self.levels.iter().find(|l| l.load == load)
    }
}
