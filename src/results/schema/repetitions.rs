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
