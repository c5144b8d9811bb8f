//! What the profiler tells a live progress display, as plain numbers: which level it is
//! measuring and where that level stands among the run's levels, then after every window cut that
//! window's figures and how close the last windows are to the stability rule. The display
//! itself (a terminal line) is a report's business; the profiler only calls the hook, at
//! level starts and window cuts, never on the hot path.

use super::plan::Plan;
use crate::config::{LoadLevel, LoadMode, MeasureConfig};
use crate::measure::stability::{spread, STABILITY_WINDOWS};
use crate::measure::window::WindowStats;

/// Most levels counted ahead to say "level 3 of N"; a longer run is shown without N.
const MAX_COUNTED: usize = 100_000;

/// Where a level stands among its run's levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A linear range's `number`-th level (from 1), of `of` levels when the range is
    /// bounded; `at_most` when `-l` or `--slo` may stop it earlier.
    Level {
        number: usize,
        of: Option<usize>,
        at_most: bool,
    },
    /// The `number`-th level a `--binary-search` measures (from 1).
    SearchStep(usize),
}

impl Place {
    /// The place of the `number`-th level (from 1) measured by the run of `plan`.
    pub fn of(plan: &Plan, number: usize) -> Place {
        let searchable = matches!(
            plan.load.mode,
            LoadMode::Concurrency | LoadMode::RequestRate { .. }
        );
        if plan.load.binary_search && searchable {
            return Place::SearchStep(number);
        }
        let count = plan.load.levels().take(MAX_COUNTED).count();
        Place::Level {
            number,
            of: (count < MAX_COUNTED).then_some(count),
            at_most: plan.measure.latency_threshold_ms.is_some() || !plan.measure.slo.is_empty(),
        }
    }
}

/// A level about to be measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelStart {
    pub place: Place,
    pub level: LoadLevel,
    /// `-r`: the most windows the level may take (1 for a run of one window).
    pub max_windows: u32,
}

/// The figures of the window just cut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowDone {
    /// Windows cut so far at this level (from 1).
    pub number: u32,
    /// Inferences per second.
    pub throughput: f64,
    /// 99th percentile of the window's latency, µs (0 without a success).
    pub p99_us: f64,
    pub ok: u64,
    pub errors: u64,
    /// How many of the last windows the spread covers (at most 3).
    pub judged: usize,
    /// Windows the rule needs (3).
    pub needed: usize,
    /// Spread of the last windows (0.04 for 4%), as the rule measures it; None before two
    /// windows with throughput.
    pub spread: Option<f64>,
    /// `-s / 100`.
    pub limit: f64,
}

impl WindowDone {
    /// The figures of the last of `windows`, judged as the rule of `measure` judges them.
    pub fn of(measure: &MeasureConfig, windows: &[WindowStats]) -> Option<WindowDone> {
        let last = windows.last()?;
        Some(WindowDone {
            number: windows.len() as u32,
            throughput: last.throughput(),
            p99_us: if last.ok > 0 {
                last.percentile_us(99.0)
            } else {
                0.0
            },
            ok: last.ok,
            errors: last.error_count(),
            judged: windows.len().min(STABILITY_WINDOWS),
            needed: STABILITY_WINDOWS,
            spread: spread(windows, measure.percentile),
            limit: measure.stability_percentage / 100.0,
        })
    }

    /// Whether the last windows are enough and within `-s`.
    pub fn within(&self) -> bool {
        self.judged >= self.needed && self.spread.is_some_and(|s| s <= self.limit)
    }
}

/// A live display of a run's levels. Called at the start of each level, after each window cut,
/// and when the level ends (before its report is printed).
pub trait Progress: Send {
    fn level_started(&mut self, start: &LevelStart);
    fn window_cut(&mut self, window: &WindowDone);
    fn level_finished(&mut self);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use clap::Parser;

    fn test_config_from(flags: &[&str]) -> Config {
        let mut args = vec!["inferperf", "profile", "-m", "test"];
        args.extend_from_slice(flags);
        let cli = crate::cli::Cli::try_parse_from(args).expect("flags parse");
        let crate::cli::Command::Profile(args) = cli.command else {
            unreachable!("the profile subcommand was given");
        };
        Config::from_args(&args).expect("flags are valid")
    }

    #[test]
    fn a_level_knows_its_place_among_the_levels() {
        let cfg = test_config_from(&["--concurrency-range", "1:36:5"]);
        assert_eq!(
            Place::of(&Plan::new(&cfg.load, &cfg.measure), 3),
            Place::Level {
                number: 3,
                of: Some(8),
                at_most: false
            }
        );
        let cfg = test_config_from(&["--concurrency-range", "1:0:5", "-l", "20"]);
        assert_eq!(
            Place::of(&Plan::new(&cfg.load, &cfg.measure), 2),
            Place::Level {
                number: 2,
                of: None,
                at_most: true
            }
        );
        let cfg = test_config_from(&["--concurrency-range", "1:64", "--binary-search", "-l", "9"]);
        assert_eq!(
            Place::of(&Plan::new(&cfg.load, &cfg.measure), 4),
            Place::SearchStep(4)
        );
        let cfg = test_config_from(&["--request-rate-range", "10:50:10", "--slo", "p99<=5ms"]);
        assert_eq!(
            Place::of(&Plan::new(&cfg.load, &cfg.measure), 1),
            Place::Level {
                number: 1,
                of: Some(5),
                at_most: true
            }
        );
    }
}
