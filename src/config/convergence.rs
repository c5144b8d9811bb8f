//! AIPerf's adaptive stop of repeated runs (`--convergence-metric` and its companions),
//! checked: which figure decides, by which test, and the threshold it must pass. The runs
//! stop as soon as the figure has settled, `--num-profile-runs` being the most.

use crate::cli::AiperfRepeatArgs;
use inferperf_wire::error::{RunError, RunResult};

/// The runs a test needs before it is asked (AIPerf's, from its command line).
pub const MIN_RUNS: u32 = 2;

/// How a figure is judged settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvergenceMode {
    /// The Student t interval of the runs' values, as a share of their mean, is narrower
    /// than the threshold.
    CiWidth,
    /// The runs' values vary less than the threshold (standard deviation / mean).
    Cv,
    /// The latest run's requests match the earlier runs' (Kolmogorov–Smirnov p-value
    /// above the threshold).
    Distribution,
}

/// The modes by AIPerf's names, with the threshold each takes when none is given.
const MODES: [(&str, ConvergenceMode, f64); 3] = [
    ("ci-width", ConvergenceMode::CiWidth, 0.10),
    ("cv", ConvergenceMode::Cv, 0.05),
    ("distribution", ConvergenceMode::Distribution, 0.05),
];

/// The statistics of a figure that `ci-width` and `cv` judge.
pub const STATS: [&str; 7] = ["avg", "p50", "p90", "p95", "p99", "min", "max"];

/// When repeated runs stop before `--num-profile-runs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Convergence {
    /// AIPerf's name of the figure (`request_latency`, `time_to_first_token`, …).
    pub metric: String,
    /// Its statistic (`avg`, `p99`, …); the distribution test takes every request.
    pub stat: String,
    pub mode: ConvergenceMode,
    /// The width, variation or p-value the test must pass, in (0, 1).
    pub threshold: f64,
}

impl ConvergenceMode {
    /// AIPerf's name of the mode.
    pub fn name(self) -> &'static str {
        MODES
            .iter()
            .find(|(_, m, _)| *m == self)
            .map_or("", |m| m.0)
    }
}

/// The adaptive stop the flags ask for, if `--convergence-metric` is given.
pub(super) fn parse(args: &AiperfRepeatArgs, runs: u32) -> RunResult<Option<Convergence>> {
    let Some(metric) = args.convergence_metric.clone() else {
        return Ok(None);
    };
    if metric.trim().is_empty() {
        return Err(RunError::bad_option(
            "--convergence-metric is empty: give AIPerf's name of a figure, e.g. request_latency or time_to_first_token.",
        ));
    }
    if runs < 2 {
        return Err(RunError::bad_option(
            "--convergence-metric stops repeated runs early: give --num-profile-runs 2 or more (the most runs to make).",
        ));
    }
    let (mode, default_threshold) = mode(args.convergence_mode.as_deref())?;
    let stat = stat(args.convergence_stat.as_deref())?;
    let threshold = args.convergence_threshold.unwrap_or(default_threshold);
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(RunError::bad_option(format!(
            "--convergence-threshold {threshold} is not between 0 and 1 (both left out): give e.g. 0.05."
        )));
    }
    Ok(Some(Convergence {
        metric,
        stat,
        mode,
        threshold,
    }))
}

/// The mode by name (AIPerf's `ci_width` spelling too, any case) and its default threshold.
fn mode(name: Option<&str>) -> RunResult<(ConvergenceMode, f64)> {
    let Some(name) = name else {
        return Ok((ConvergenceMode::CiWidth, MODES[0].2));
    };
    let wanted = name.to_ascii_lowercase().replace('_', "-");
    (MODES.iter())
        .find(|(n, _, _)| *n == wanted)
        .map(|&(_, mode, threshold)| (mode, threshold))
        .ok_or_else(|| {
            RunError::bad_option(format!(
                "--convergence-mode {name} is not a mode: give ci-width, cv or distribution."
            ))
        })
}

fn stat(name: Option<&str>) -> RunResult<String> {
    let Some(name) = name else {
        return Ok("avg".to_string());
    };
    let wanted = name.to_ascii_lowercase();
    if STATS.contains(&wanted.as_str()) {
        return Ok(wanted);
    }
    Err(RunError::bad_option(format!(
        "--convergence-stat {name} is not a statistic: give one of {}.",
        STATS.join(", ")
    )))
}
