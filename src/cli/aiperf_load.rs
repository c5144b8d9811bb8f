//! AIPerf's flags for how the load starts and ends beyond the level itself: the warm-up
//! (its bounds, its shape, its grace) and the grace after `--benchmark-duration`. Kept apart
//! from `aiperf.rs` so each file stays one subject; `config::warm_up` checks them.

use clap::Args;

/// AIPerf's warm-up and end-of-run flags.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf flags (LLM runs)")]
pub struct AiperfLoadArgs {
    /// AIPerf's: warm up for this many seconds before measuring (with
    /// --warmup-request-count or --num-warmup-sessions, whichever ends first). Warm-up
    /// requests are in no figure.
    #[arg(long, value_name = "SECONDS")]
    pub warmup_duration: Option<f64>,
    /// AIPerf's: warm up with this many multi-turn sessions, each played whole.
    #[arg(long, value_name = "N")]
    pub num_warmup_sessions: Option<u64>,
    /// AIPerf's: requests in flight during the warm-up (default: the run's concurrency,
    /// or 1); beside a warm-up rate, the cap on requests in flight.
    #[arg(long, value_name = "N")]
    pub warmup_concurrency: Option<u32>,
    /// AIPerf's: send the warm-up at this rate (requests per second) instead of the run's.
    #[arg(long, value_name = "R")]
    pub warmup_request_rate: Option<f64>,
    /// AIPerf's: the gaps of a warm-up rate: constant, poisson or gamma (default: the run's).
    #[arg(long, value_name = "PATTERN")]
    pub warmup_arrival_pattern: Option<String>,
    /// AIPerf's: with --warmup-duration, how long after the warm-up's last send its answers
    /// are waited for (default: until every one is answered, at most the request timeout).
    #[arg(long, value_name = "SECONDS")]
    pub warmup_grace_period: Option<String>,
    /// AIPerf's: with --benchmark-duration, how long after the last send the answers still
    /// due count (default 30; `inf` waits for every one, at most the request timeout); the
    /// requests still unanswered then are cancelled and left out.
    #[arg(long, value_name = "SECONDS")]
    pub benchmark_grace_period: Option<String>,
    /// AIPerf's: how comma-separated lists make a sweep's runs: grid (every combination,
    /// the default) or zip (the lists paired by position).
    #[arg(long, value_name = "TYPE")]
    pub sweep_type: Option<String>,
    /// AIPerf's: every run of a sweep takes the same seed (--random-seed, else 42) instead
    /// of the seed plus its index.
    #[arg(long)]
    pub parameter_sweep_same_seed: bool,
    /// AIPerf's: every run of a sweep takes the seed plus its index (the default).
    #[arg(long)]
    pub no_parameter_sweep_same_seed: bool,
    /// AIPerf's: seconds of pause between two runs of a sweep (default 0).
    #[arg(long, value_name = "SECONDS")]
    pub parameter_sweep_cooldown_seconds: Option<f64>,
    /// AIPerf's: how a sweep's runs and repeated runs nest: repeated or independent. With
    /// one run per value (no --num-profile-runs) both are the same.
    #[arg(long, value_name = "MODE")]
    pub parameter_sweep_mode: Option<String>,
    /// AIPerf's: no table of the runs at the end of a sweep.
    #[arg(long)]
    pub no_sweep_table: bool,
}
