//! Which level a run measures next. A linear range walks the range in order and stops
//! after a level that hit `-l` or missed `--slo`; a binary search (`--binary-search`) does
//! what perf_analyzer does: it measures the range's start and end, then bisects between the
//! highest level that met the criteria and the lowest that did not, until they are no more
//! than a step apart.

use crate::config::{ConcurrencyRange, LoadConfig, LoadLevel, LoadMode};
use crate::measure::level::{LevelEnd, LevelResult};

/// The order in which a run visits its levels.
pub enum Search {
    Linear(Box<dyn Iterator<Item = LoadLevel>>),
    Binary(Bisection),
}

impl Search {
    /// The order a configuration's run visits its levels in: linear, or bisection with
    /// `--binary-search`.
    pub fn of(load: &LoadConfig) -> Search {
        match (&load.mode, load.binary_search) {
            (LoadMode::Concurrency, true) => {
                let ConcurrencyRange { start, end, step } = load.concurrency;
                Search::Binary(Bisection::concurrency(start, end, step))
            }
            (LoadMode::RequestRate { range, .. }, true) => {
                Search::Binary(Bisection::rate(range.start, range.end, range.step))
            }
            _ => Search::Linear(load.levels()),
        }
    }

    /// The next level to measure, given the result of the previous one (None at the start).
    pub fn next(&mut self, last: Option<&LevelResult>) -> Option<LoadLevel> {
        if last.is_some_and(|r| r.end == LevelEnd::Interrupted) {
            return None;
        }
        match self {
            Search::Linear(levels) => {
                let hit_limit = last.is_some_and(|r| {
                    matches!(r.end, LevelEnd::OverLatencyLimit | LevelEnd::MissedSlo)
                });
                if hit_limit {
                    None
                } else {
                    levels.next()
                }
            }
            Search::Binary(bisection) => bisection.next(last.map(LevelResult::met_criteria)),
        }
    }
}

/// Where a binary search stands.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Start,
    End,
    Bisect,
    Done,
}

/// Bisection over concurrency values (whole numbers) or request rates.
#[derive(Debug, Clone)]
pub struct Bisection {
    /// Highest value known to meet the criteria (the start until measured).
    low: f64,
    /// Lowest value known to miss them (the end until measured).
    high: f64,
    step: f64,
    whole: bool,
    /// The value being measured.
    current: f64,
    phase: Phase,
}

impl Bisection {
    /// A search over concurrency `start..=end`, to within `step`.
    pub fn concurrency(start: u32, end: u32, step: u32) -> Bisection {
        Bisection::new(start as f64, end as f64, step as f64, true)
    }

    /// A search over request rates `start..=end`, to within `step`.
    pub fn rate(start: f64, end: f64, step: f64) -> Bisection {
        Bisection::new(start, end, step, false)
    }

    fn new(low: f64, high: f64, step: f64, whole: bool) -> Bisection {
        Bisection {
            low,
            high,
            step,
            whole,
            current: low,
            phase: Phase::Start,
        }
    }

    fn level(&self, value: f64) -> LoadLevel {
        if self.whole {
            LoadLevel::Concurrency(value as u32)
        } else {
            LoadLevel::Rate(value)
        }
    }

    /// The next level, given whether the previous one met the criteria.
    fn next(&mut self, last_met: Option<bool>) -> Option<LoadLevel> {
        let met = last_met.unwrap_or(false);
        match (self.phase, last_met) {
            (Phase::Start, None) => {
                self.current = self.low;
            }
            (Phase::Start, Some(_)) if !met => self.phase = Phase::Done,
            (Phase::Start, Some(_)) => {
                self.phase = Phase::End;
                self.current = self.high;
            }
            (Phase::End, _) if met => self.phase = Phase::Done,
            (Phase::End, _) => {
                self.phase = Phase::Bisect;
                self.bisect();
            }
            (Phase::Bisect, _) => {
                if met {
                    self.low = self.current;
                } else {
                    self.high = self.current;
                }
                self.bisect();
            }
            (Phase::Done, _) => {}
        }
        (self.phase != Phase::Done).then(|| self.level(self.current))
    }

    fn bisect(&mut self) {
        if self.high - self.low <= self.step {
            self.phase = Phase::Done;
            return;
        }
        let middle = (self.low + self.high) / 2.0;
        self.current = if self.whole { middle.floor() } else { middle };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a bisection against a level that meets the criteria up to `capacity`.
    fn visited(mut search: Bisection, capacity: f64) -> Vec<f64> {
        let mut seen = Vec::new();
        let mut last = None;
        while let Some(level) = search.next(last) {
            let value = match level {
                LoadLevel::Concurrency(c) => c as f64,
                LoadLevel::Rate(r) => r,
            };
            seen.push(value);
            last = Some(value <= capacity);
            assert!(seen.len() < 50, "the search must end");
        }
        seen
    }

    #[test]
    fn concurrency_search_measures_the_ends_then_bisects() {
        assert_eq!(
            visited(Bisection::concurrency(1, 16, 1), 4.0),
            vec![1.0, 16.0, 8.0, 4.0, 6.0, 5.0]
        );
        assert_eq!(
            visited(Bisection::concurrency(1, 16, 1), 20.0),
            vec![1.0, 16.0]
        );
        assert_eq!(visited(Bisection::concurrency(2, 16, 1), 1.0), vec![2.0]);
        // The step is the resolution.
        assert_eq!(
            visited(Bisection::concurrency(1, 64, 8), 20.0),
            vec![1.0, 64.0, 32.0, 16.0, 24.0]
        );
    }

    #[test]
    fn rate_search_ends_within_a_step_of_the_capacity() {
        let seen = visited(Bisection::rate(50.0, 150.0, 10.0), 97.0);
        assert_eq!(&seen[..3], &[50.0, 150.0, 100.0]);
        let best = seen
            .iter()
            .copied()
            .filter(|&v| v <= 97.0)
            .fold(0.0, f64::max);
        let worst = seen
            .iter()
            .copied()
            .filter(|&v| v > 97.0)
            .fold(f64::MAX, f64::min);
        assert!(worst - best <= 10.0, "{seen:?}");
        assert!(97.0 - best <= 10.0);
    }
}
