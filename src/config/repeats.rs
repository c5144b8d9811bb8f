//! AIPerf's repeated runs (`--num-profile-runs` and its companions), checked: how many
//! times the whole profile runs, the pause between runs, the confidence level of the
//! intervals, whether later runs warm up and whether each run draws its own workload.

use std::time::Duration;

use super::convergence::Convergence;
use crate::cli::AiperfRepeatArgs;
use inferperf_wire::error::{RunError, RunResult};

/// AIPerf's bound on `--num-profile-runs`.
pub const MAX_RUNS: u32 = 10;
/// The longest pause between two runs: an hour.
const MAX_COOLDOWN_S: f64 = 3600.0;

/// How often the whole profile runs, and how the runs differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Repeats {
    /// Whole runs, one after the other (1: a single run).
    pub runs: u32,
    /// The pause between two runs.
    pub cooldown: Duration,
    /// The confidence level of the intervals, in (0, 1).
    pub confidence: f64,
    /// Whether the runs after the first warm up too.
    pub warm_up_after_first: bool,
    /// Whether each run draws its workload with a seed of its own (the seed plus its index).
    pub vary_seed: bool,
    /// The runs are one value's of a sweep: their folders are `trial_NNNN`, as AIPerf
    /// names them under a sweep's value (a single profile's are `run_NNNN`).
    pub in_sweep: bool,
    /// When the runs stop before `runs`: once a figure has settled.
    pub convergence: Option<Convergence>,
}

impl Default for Repeats {
    fn default() -> Repeats {
        Repeats {
            runs: 1,
            cooldown: Duration::ZERO,
            confidence: 0.95,
            warm_up_after_first: false,
            vary_seed: false,
            in_sweep: false,
            convergence: None,
        }
    }
}

impl Repeats {
    /// Whether the profile runs more than once.
    pub fn repeated(&self) -> bool {
        self.runs > 1
    }
}

/// The repeated-run flags, each within its bounds, and no pair that contradicts itself.
pub(super) fn parse(args: &AiperfRepeatArgs) -> RunResult<Repeats> {
    let runs = match args.num_profile_runs {
        None => 1,
        Some(n) if (1..=MAX_RUNS).contains(&n) => n,
        Some(n) => {
            return Err(RunError::bad_option(format!(
            "--num-profile-runs {n} is out of range: give 1 to {MAX_RUNS} runs, as AIPerf takes."
        )))
        }
    };
    let cooldown_s = args.profile_run_cooldown_seconds.unwrap_or(0.0);
    if !(0.0..=MAX_COOLDOWN_S).contains(&cooldown_s) {
        return Err(RunError::bad_option(format!(
            "--profile-run-cooldown-seconds {cooldown_s} is not a pause from 0 to {MAX_COOLDOWN_S} seconds (an hour)."
        )));
    }
    let confidence = args.confidence_level.unwrap_or(0.95);
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(RunError::bad_option(format!(
            "--confidence-level {confidence} is not between 0 and 1: give e.g. 0.90, 0.95 or 0.99."
        )));
    }
    let pairs = [
        (
            args.profile_run_disable_warmup_after_first,
            args.no_profile_run_disable_warmup_after_first,
            "profile-run-disable-warmup-after-first",
        ),
        (
            args.set_consistent_seed,
            args.no_set_consistent_seed,
            "set-consistent-seed",
        ),
        (
            args.vary_seed_per_trial,
            args.no_vary_seed_per_trial,
            "vary-seed-per-trial",
        ),
    ];
    if let Some((_, _, name)) = pairs.iter().find(|(yes, no, _)| *yes && *no) {
        return Err(RunError::bad_option(format!(
            "--{name} and --no-{name} contradict each other: give one."
        )));
    }
    Ok(Repeats {
        runs,
        cooldown: inferperf_wire::number::saturating_secs(cooldown_s),
        confidence,
        warm_up_after_first: args.no_profile_run_disable_warmup_after_first,
        vary_seed: args.vary_seed_per_trial,
        in_sweep: false,
        convergence: super::convergence::parse(args, runs)?,
    })
}
