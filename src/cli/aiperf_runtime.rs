//! AIPerf's flags for how the client runs and what it writes, beside the load and the
//! data: its logging and worker settings (which map onto inferperf's verbosity and client
//! threads), its transport and connection reuse, the session header, and its output files'
//! level, prefix and plots. `config::aiperf::runtime` reads them.

use clap::Args;

/// AIPerf's runtime and output flags.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "AIPerf flags (LLM runs)")]
pub struct AiperfRuntimeArgs {
    /// AIPerf's logging level: debug or trace give inferperf's per-window detail (-v, -vv);
    /// info, notice, warning, success, error and critical change nothing.
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// AIPerf's -vv: perf_analyzer's extra verbose output (-v -v).
    #[arg(long)]
    pub extra_verbose: bool,
    /// AIPerf's most worker processes: caps inferperf's client threads (--client-threads).
    #[arg(long, visible_alias = "max-workers", value_name = "N")]
    pub workers_max: Option<usize>,
    /// AIPerf's seconds between live statistics: inferperf's progress line shows each
    /// window as it ends, so the interval changes nothing.
    #[arg(long, value_name = "SECONDS")]
    pub stats_interval: Option<f64>,
    /// AIPerf's transport: http, the only one (inferperf's own HTTP/1.1 client).
    #[arg(long, visible_alias = "transport-type", value_name = "TRANSPORT")]
    pub transport: Option<String>,
    /// AIPerf's choice among several --url: round-robin, the only one (each request to the
    /// next server; a session stays on one).
    #[arg(long, value_name = "STRATEGY")]
    pub url_strategy: Option<String>,
    /// AIPerf's connection reuse: pooled or sticky-user-sessions (inferperf keeps one
    /// connection per request slot, reused, and a session keeps its slot's), or never (a
    /// new connection for every request, its opening timed apart from the request).
    #[arg(long, value_name = "STRATEGY")]
    pub connection_reuse_strategy: Option<String>,
    /// AIPerf's name of the header that carries a session's id on each of its turns
    /// (default X-Correlation-ID).
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,
    /// AIPerf's: ask the server for usage on every streamed chunk
    /// (stream_options.continuous_usage_stats); needs --use-server-token-count,
    /// --streaming and the chat endpoint.
    #[arg(long)]
    pub per_chunk_usage: bool,
    /// AIPerf's files: summary (the AIPerf and GenAI-Perf summaries), records (also every
    /// request, the default) or raw (AIPerf's raw requests and answers, which inferperf does
    /// not keep: refused).
    #[arg(long, visible_alias = "profile-export-level", value_name = "LEVEL")]
    pub export_level: Option<String>,
    /// AIPerf's base name of its files: P.csv and P.json instead of
    /// profile_export_aiperf.csv and .json, and P.jsonl for the records.
    #[arg(long, value_name = "PREFIX")]
    pub profile_export_prefix: Option<std::path::PathBuf>,
    /// AIPerf's plots after the run: inferperf writes its HTML report (results.json,
    /// results.csv and report.html) into the artifact folder.
    #[arg(long)]
    pub auto_plot: bool,
    /// No plots after the run (the default).
    #[arg(long)]
    pub no_auto_plot: bool,
    /// With --auto-plot, a report that cannot be written fails the run (it always does).
    #[arg(long)]
    pub plot_required: bool,
    /// AIPerf's formats of the server-metrics export: json and csv (written with
    /// --server-metrics); jsonl and parquet are refused.
    #[arg(long, value_name = "FORMAT", num_args = 1.., value_delimiter = ',')]
    pub server_metrics_formats: Vec<String>,
}
