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
    /// AIPerf's: stop the profile runs early once this figure (AIPerf's name, e.g.
    /// request_latency) has settled; --num-profile-runs is the most runs.
    #[arg(long, value_name = "METRIC")]
    pub convergence_metric: Option<String>,
    /// AIPerf's: the statistic of the figure that ci-width and cv judge: avg (default), p50,
    /// p90, p95, p99, min or max.
    #[arg(long, value_name = "STAT")]
    pub convergence_stat: Option<String>,
    /// AIPerf's: the bound the test must pass, between 0 and 1: the interval's width as a
    /// share of the mean (ci-width, default 0.10), the variation (cv, default 0.05), or the
    /// p-value to exceed (distribution, default 0.05).
    #[arg(long, value_name = "FRACTION")]
    pub convergence_threshold: Option<f64>,
    /// AIPerf's: how the figure is judged settled: ci-width (default), cv or distribution
    /// (the latest run's requests against the earlier runs', Kolmogorov–Smirnov).
    #[arg(long, value_name = "MODE")]
    pub convergence_mode: Option<String>,
}
