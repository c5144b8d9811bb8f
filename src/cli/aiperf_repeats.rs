//! AIPerf's repeated runs: the whole profile run several times, each figure given with its
//! mean, spread and confidence interval over the runs. Kept apart from the other AIPerf
//! flags so each file stays one subject; `config::repeats` checks them.

use clap::Args;

/// AIPerf's `--num-profile-runs` and its companions.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf flags (LLM runs)")]
pub struct AiperfRepeatArgs {
    /// AIPerf's: run the whole profile this many times (1 to 10, default 1), one run after
    /// the other, each into profile_runs/run_NNNN, and give each figure's mean, spread and
    /// confidence interval over the runs.
    #[arg(long, value_name = "N")]
    pub num_profile_runs: Option<u32>,
    /// AIPerf's: seconds of pause between two profile runs (default 0).
    #[arg(long, value_name = "SECONDS")]
    pub profile_run_cooldown_seconds: Option<f64>,
    /// AIPerf's: the confidence level of the intervals, between 0 and 1 (default 0.95).
    #[arg(long, value_name = "LEVEL")]
    pub confidence_level: Option<f64>,
    /// AIPerf's: only the first profile run warms up (the default).
    #[arg(long)]
    pub profile_run_disable_warmup_after_first: bool,
    /// AIPerf's: every profile run warms up.
    #[arg(long)]
    pub no_profile_run_disable_warmup_after_first: bool,
    /// AIPerf's: every profile run sends the same workload (the default): --random-seed,
    /// else 42.
    #[arg(long)]
    pub set_consistent_seed: bool,
    /// AIPerf's: without --random-seed, the profile runs keep inferperf's default seed.
    #[arg(long)]
    pub no_set_consistent_seed: bool,
    /// AIPerf's: each profile run draws its workload with a seed of its own (the seed plus
    /// the run's index), so the intervals hold the workload's variation too.
    #[arg(long)]
    pub vary_seed_per_trial: bool,
    /// AIPerf's: every profile run shares the seed (the default).
    #[arg(long)]
    pub no_vary_seed_per_trial: bool,
}
