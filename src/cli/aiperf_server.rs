//! AIPerf's flags that call the server around a run rather than load it: wait until the
//! model answers, reset the engine's KV cache before measuring, start and stop the
//! engine's profiler around the measurement. `config::server_hooks` checks them.

use clap::Args;

/// AIPerf's control calls around a run.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf flags (LLM runs)")]
pub struct AiperfServerArgs {
    /// AIPerf's: wait up to this many seconds for the server to answer before the run (0,
    /// the default: do not wait), probing it every --wait-for-model-interval seconds.
    #[arg(long, value_name = "SECONDS")]
    pub wait_for_model_timeout: Option<f64>,
    /// AIPerf's: how the wait probes the server: models (GET /v1/models lists the model),
    /// inference (one short request answers, the default) or both.
    #[arg(long, value_name = "MODE")]
    pub wait_for_model_mode: Option<String>,
    /// AIPerf's: seconds between two probes of the wait (default 5).
    #[arg(long, value_name = "SECONDS")]
    pub wait_for_model_interval: Option<f64>,
    /// AIPerf's: POST the server's KV-cache reset path (--reset-kv-cache-path, default
    /// /reset_prefix_cache, vLLM's and SGLang's) before measuring, after the warm-up.
    #[arg(long)]
    pub reset_kv_cache: bool,
    /// AIPerf's: the timeout of the KV-cache reset call (default 30 s); implies
    /// --reset-kv-cache.
    #[arg(long, value_name = "SECONDS")]
    pub reset_kv_cache_timeout_seconds: Option<f64>,
    /// AIPerf's: the KV-cache reset path (default /reset_prefix_cache); implies
    /// --reset-kv-cache.
    #[arg(long, value_name = "PATH")]
    pub reset_kv_cache_path: Option<String>,
    /// AIPerf's: POST the server's profiler start path before measuring and its stop path
    /// after (defaults /start_profile and /stop_profile, vLLM's and SGLang's).
    #[arg(long)]
    pub server_profiler: bool,
    /// AIPerf's: the timeout of the profiler calls (default 30 s); implies
    /// --server-profiler.
    #[arg(long, value_name = "SECONDS")]
    pub server_profiler_timeout_seconds: Option<f64>,
    /// AIPerf's: the profiler's start path (default /start_profile); implies
    /// --server-profiler.
    #[arg(long, value_name = "PATH")]
    pub server_profiler_start_path: Option<String>,
    /// AIPerf's: the profiler's stop path (default /stop_profile); implies
    /// --server-profiler.
    #[arg(long, value_name = "PATH")]
    pub server_profiler_stop_path: Option<String>,
}
