//! AIPerf's flags that shape the load inside the measured phase — ramps of the concurrency,
//! the request rate and the prefill concurrency, a rate that follows a series of points,
//! user-centric rate, slices of the measurement and the failed-request threshold — kept
//! apart from `aiperf_load.rs` (warm-up and grace) so each file stays one subject.
//! `config::load_modes` checks them; `load` plays them.

use std::path::PathBuf;

use clap::Args;

/// AIPerf's load-shape flags.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf flags (LLM runs)")]
pub struct AiperfLoadModeArgs {
    /// AIPerf's: the concurrency rises from 1 to its target in whole steps over this many
    /// seconds at the start of the measurement; the requests of the ramp are measured.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub concurrency_ramp_duration: Option<f64>,
    /// AIPerf's: the request rate rises from R·0.1/SECONDS to R, updated every 0.1 s, over
    /// this many seconds at the start of the measurement (needs --request-rate).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub request_rate_ramp_duration: Option<f64>,
    /// AIPerf's: the warm-up's concurrency ramp (default: --concurrency-ramp-duration).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub warmup_concurrency_ramp_duration: Option<f64>,
    /// AIPerf's: the warm-up's rate ramp (needs a warm-up rate; default: the run's).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub warmup_request_rate_ramp_duration: Option<f64>,
    /// AIPerf's: at most this many requests waiting for their first token (needs
    /// --streaming; at most the concurrency).
    #[arg(long, value_name = "N")]
    pub prefill_concurrency: Option<u32>,
    /// AIPerf's: the prefill concurrency rises from 1 to its target over this many seconds.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub prefill_concurrency_ramp_duration: Option<f64>,
    /// AIPerf's: the warm-up's prefill concurrency (default: --prefill-concurrency).
    #[arg(long, value_name = "N")]
    pub warmup_prefill_concurrency: Option<u32>,
    /// AIPerf's: the warm-up's prefill ramp (default: --prefill-concurrency-ramp-duration).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub warmup_prefill_concurrency_ramp_duration: Option<f64>,
    /// AIPerf's user-centric rate: --num-users simulated users share this many requests
    /// per second, each sending its next turn num-users/rate seconds after its last one
    /// (multi-turn sessions: --conversation-turn-mean 2 or more).
    #[arg(long, value_name = "QPS", allow_negative_numbers = true)]
    pub user_centric_rate: Option<f64>,
    /// AIPerf's: the simulated users of --user-centric-rate.
    #[arg(long, value_name = "N")]
    pub num_users: Option<u32>,
    /// AIPerf's: the request rate follows this JSON file's points ([{"time_s": 0, "qps":
    /// 2}, …] or {"points": […]}), linearly between them, updated every 0.1 s, then held
    /// at the last one.
    #[arg(long, value_name = "FILE")]
    pub request_rate_series: Option<PathBuf>,
    /// AIPerf's: the measurement cut into slices of this many seconds, each slice's figures
    /// exported (profile_export_aiperf_timeslices.csv/.json, and `slices` in results.json).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub slice_duration: Option<f64>,
    /// AIPerf's: once max(concurrency, 10) requests are done, stop the run when the share
    /// that failed is above this (0 to 1), keeping what was measured; the run then ends
    /// in an error (exit 99).
    #[arg(long, value_name = "RATIO", allow_negative_numbers = true)]
    pub failed_request_threshold: Option<f64>,
}

impl AiperfLoadModeArgs {
    /// The flags given, by name (for the sentences that name what the user typed).
    pub fn given(&self) -> Vec<&'static str> {
        let flags = [
            (
                "--concurrency-ramp-duration",
                self.concurrency_ramp_duration.is_some(),
            ),
            (
                "--request-rate-ramp-duration",
                self.request_rate_ramp_duration.is_some(),
            ),
            (
                "--warmup-concurrency-ramp-duration",
                self.warmup_concurrency_ramp_duration.is_some(),
            ),
            (
                "--warmup-request-rate-ramp-duration",
                self.warmup_request_rate_ramp_duration.is_some(),
            ),
            ("--prefill-concurrency", self.prefill_concurrency.is_some()),
            (
                "--prefill-concurrency-ramp-duration",
                self.prefill_concurrency_ramp_duration.is_some(),
            ),
            (
                "--warmup-prefill-concurrency",
                self.warmup_prefill_concurrency.is_some(),
            ),
            (
                "--warmup-prefill-concurrency-ramp-duration",
                self.warmup_prefill_concurrency_ramp_duration.is_some(),
            ),
            ("--user-centric-rate", self.user_centric_rate.is_some()),
            ("--num-users", self.num_users.is_some()),
            ("--request-rate-series", self.request_rate_series.is_some()),
            ("--slice-duration", self.slice_duration.is_some()),
            (
                "--failed-request-threshold",
                self.failed_request_threshold.is_some(),
            ),
        ];
        flags.iter().filter(|f| f.1).map(|f| f.0).collect()
    }
}
