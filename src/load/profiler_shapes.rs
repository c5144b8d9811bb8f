//! The profiler's part in AIPerf's load shapes (`config::load_modes`): a level put on the
//! server with its ramps started from the measurement's start, the ramps moved as the
//! measurement goes, its slices begun, and `--failed-request-threshold` watched. A child
//! of `profiler`, split off so the measurement loops read alone.

use std::time::Instant;

use super::Profiler;
use crate::config::LoadLevel;
use crate::load::ramps::LevelRamps;
use crate::measure::slices::Slices;
use crate::measure::window::WindowStats;
use inferperf_wire::error::RunResult;

impl Profiler<'_> {
    /// Puts the level's load on the server: a ramped concurrency from 1 (AIPerf's ramps).
    pub(super) fn apply_level(&mut self, level: LoadLevel) -> RunResult<()> {
        self.ramps = LevelRamps::of(self.plan.load, level);
        let first = self.ramps.as_ref().map_or(level, |r| r.first_level(level));
        self.driver.apply(self.plan.load, &self.dataset, first)
    }

    /// The measurement starts at `start`: the ramps' clock, and the slices' origin.
    pub(super) fn start_shapes(&mut self, start: Instant) {
        if let Some(ramps) = &mut self.ramps {
            ramps.start();
        }
        let empty = self.plan.window(self.replica_count);
        self.slices = (self.plan.load.modes.slice).map(|width| Slices::new(start, width, empty));
    }

    /// Moves the ramps to the values due now; when the next one is due.
    pub(super) fn follow_ramps(&mut self) -> Option<Instant> {
        let ramps = self.ramps.as_mut()?;
        ramps.follow(&mut self.driver);
        ramps.next_change()
    }

    /// AIPerf's `--failed-request-threshold`: once max(concurrency, 10) requests are done,
    /// whether the share that failed is above it (the sentence kept, sending stopped).
    pub(super) fn over_failure_threshold(
        &mut self,
        level: LoadLevel,
        window: &WindowStats,
    ) -> bool {
        let Some(limit) = self.plan.load.modes.failed_threshold else {
            return false;
        };
        let concurrency = match level {
            LoadLevel::Concurrency(c) => c,
            LoadLevel::Rate(_) => self.plan.load.max_concurrency.unwrap_or(1),
        };
        let failed = window.error_count() + window.cancelled;
        let done = window.completed() + window.cancelled;
        let share = failed as f64 / done.max(1) as f64;
        if done < u64::from(concurrency.max(10)) || share <= limit {
            return false;
        }
        self.failed_stop = Some(format!(
            "--failed-request-threshold {limit}: {failed} of the first {done} requests failed ({:.1}%), so the run stopped there and ends in an error; the reports show those {done}.",
            share * 100.0
        ));
        self.driver.stop_sending();
        true
    }
}
