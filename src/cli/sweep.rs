//! The flags of `inferperf sweep`: the server command with its `{NAME}` placeholders, the
//! parameters whose values fill them, how long to wait for the server, where the reports
//! go, and — after `--` — `inferperf profile`'s flags, kept as text so that placeholders
//! can be filled in them too. Only the flags live here; `config::sweep` checks them.

use clap::Args;

/// What `inferperf sweep --help` adds after the flags.
pub const SWEEP_HELP: &str = "\
Example: inferperf sweep --server 'inferperf serve --http-port {port} --grpc-port 0 \
--model m=sleep:ms=5,instances={instances}' --param instances=1,2,4 -- -m m \
--concurrency-range 1:16:4\n\n\
For each setting (each value, or each combination of values of several --param), the \
command runs with `sh -c` in its own process group, its output going to \
DIR/<setting>/server.log; {NAME} becomes the setting's value, {port} a free port \
(also {grpc_port} and {metrics_port} when named; {{ and }} are braces). inferperf waits \
until GET /v2/health/ready (/v1/models with --service-kind openai; /health with its \
huggingface_generate and hf_tei_rankings endpoint types, /v2/health/ready with generate) \
on {port} answers 200, \
profiles with the flags after -- (-u is 127.0.0.1:{port}, or {grpc_port} with -i grpc, \
unless given; placeholders work there too) into DIR/<setting>/, then stops the server \
(SIGTERM to its group, SIGKILL after --stop-grace). A server that exits, is not ready in \
time or dies while profiled is a row saying so, and the sweep goes on. At the end: a table \
of settings by load level and DIR/sweep.html comparing them. Exit code 0 when every \
setting was measured, 2 when a level was unstable, 99 when a server or a profile failed, \
3 for bad flags, 130 after Ctrl-C (the current server is stopped, what was measured is \
reported).";

/// Flags of `inferperf sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The server command, run with `sh -c` for each setting; {NAME} is the setting's value
    /// of --param NAME, {port} a free port (the HTTP port inferperf checks and profiles),
    /// {grpc_port} and {metrics_port} more free ports when named.
    #[arg(long = "server", value_name = "CMD", required = true)]
    pub server: String,
    /// A parameter and its values, NAME=V1,V2,...; repeatable: several parameters sweep
    /// every combination of their values.
    #[arg(long = "param", value_name = "NAME=V1,V2,...")]
    pub params: Vec<String>,
    /// Seconds to wait for a server to be ready before it counts as failed.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub ready_timeout: f64,
    /// Seconds a server has to exit after SIGTERM before it is killed (SIGKILL).
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
    pub stop_grace: f64,
    /// The sweep's folder: DIR/<setting>/ (e.g. instances=2/) holds each setting's
    /// results.json, results.csv, report.html and server.log; DIR/sweep.html compares them.
    #[arg(long, value_name = "DIR", default_value = "inferperf-sweep")]
    pub report_dir: std::path::PathBuf,
    /// After --: the flags of `inferperf profile` (see its --help), e.g. `-- -m MODEL
    /// --concurrency-range 1:16:4`.
    #[arg(last = true, value_name = "PROFILE FLAGS")]
    pub profile: Vec<String>,
}
