//! Command-line flags with perf_analyzer's names and meanings. This module only describes
//! and parses flags; `config` decides whether they make sense together.
//!
//! `inferperf -m M ...` and `inferperf profile -m M ...` are the same command; `serve`
//! starts the embedded reference server.

use clap::{Args, CommandFactory, Parser, Subcommand};

mod aiperf;
mod aiperf_flags;
mod aiperf_load;
mod aiperf_load_modes;
mod aiperf_repeats;
mod aiperf_runtime;
mod aiperf_server;
mod dialect;
mod endpoints;
mod media;
mod merge;
mod openai;
mod request_options;
mod sentences;
mod sequence;
mod sessions;
mod sweep;
mod sweep_lists;
mod tls;
mod workload;
pub use aiperf::{refuse_aiperf_only, AiperfArgs, AIPERF_ALIASES, AIPERF_HELP};
pub use aiperf_flags::{aiperf_flag, AiperfFlag, Taken, AIPERF_FLAGS};
pub use aiperf_load::AiperfLoadArgs;
pub use aiperf_load_modes::AiperfLoadModeArgs;
pub use aiperf_repeats::AiperfRepeatArgs;
pub use aiperf_runtime::AiperfRuntimeArgs;
pub use aiperf_server::AiperfServerArgs;
pub use dialect::{dialect_of, is_aiperf_only, Dialect};
pub use endpoints::EndpointArgs;
pub use media::MediaArgs;
pub use merge::{MergeArgs, MERGE_HELP};
pub use openai::OpenAiArgs;
pub use request_options::RequestOptionArgs;
pub use sentences::{clap_sentence, top_help};
pub use sequence::SequenceArgs;
pub use sessions::SessionArgs;
pub use sweep::{SweepArgs, SWEEP_HELP};
pub use sweep_lists::{expand as expand_sweep, Sweep, Variation};
pub use tls::TlsArgs;
pub use workload::{DatasetArgs, SynthesisArgs, WorkloadArgs};

/// The float tolerance of `validation_data` unless `--validation-tolerance` says otherwise:
/// `|got − expected| ≤ tolerance × max(1, |expected|)`.
pub const DEFAULT_VALIDATION_TOLERANCE: f64 = 1e-5;

/// Top-level command line.
#[derive(Debug, Parser)]
#[command(
    name = "inferperf",
    version,
    override_usage = "inferperf [profile] -m <MODEL> [OPTIONS]\n       inferperf <COMMAND> [OPTIONS]",
    about = "Measure the throughput and latency of an inference server (perf_analyzer-compatible).",
    after_help = "`inferperf -m MODEL ...` is `inferperf profile -m MODEL ...`; its flags follow. \
                  `inferperf help COMMAND` or `inferperf COMMAND --help` for another command."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Profile a model on a running server (the default command). As with perf_analyzer
    /// (getopt), a repeated option takes its last value (list options such as -u and -H add
    /// up) and an unambiguous prefix of a long option is that option.
    #[command(
        version,
        args_override_self = true,
        infer_long_args = true,
        after_long_help = AIPERF_HELP,
        override_usage = "inferperf profile [OPTIONS] -m <MODEL>\n       inferperf profile [OPTIONS] --service-kind dynamic_grpc --grpc-method <PACKAGE.SERVICE/METHOD>"
    )]
    Profile(Box<ProfileArgs>),
    /// Run the embedded KServe v2 reference server.
    Serve(ServeArgs),
    /// Start the embedded server in-process, profile a short sweep, print the report and
    /// write the CSVs: a full report with one command and nothing else installed.
    Demo(DemoArgs),
    /// Compare results files level by level: the change of each figure against the first
    /// run, better, worse or within noise, a regression gate (--fail-on), and with -o one
    /// HTML page with the runs' curves and distributions drawn over each other.
    #[command(after_help = COMPARE_RULE)]
    Compare(CompareArgs),
    /// Rebuild the HTML report from a results file: `inferperf report RESULTS -o FILE.html`.
    Report(ReportArgs),
    /// Run a server command once per --param setting, profile each, and compare them in a
    /// table and one HTML page.
    #[command(after_help = SWEEP_HELP)]
    Sweep(SweepArgs),
    /// Merge the results files of a run's shards (--shard I/N) into the one run they
    /// measured together, and write its every report.
    #[command(after_help = MERGE_HELP)]
    Merge(MergeArgs),
}

/// The noise rule of `inferperf compare`, as its `--help` states it.
pub const COMPARE_RULE: &str = "\
Levels are matched by their load (the same concurrency or request rate); a level present in \
only one run is listed as unmatched. Figures: throughput, the client latency's p50 and p99, the \
baseline's --percentile, and any figure a --fail-on limit names. Change = (B - A) / A for each \
figure of the level's merged windows. Noise rule: a run's noise for a figure at a level is the relative half-range \
of that figure across the windows merged into the level, (max - min) / 2 / mean; a level \
measured in one window has no spread to read, so its noise is the run's stability \
percentage (-s, 10% by default). A change is beyond noise when |change| > noise(A) + \
noise(B); then it is better (throughput up, latency down) or worse, else within noise. \
Where both runs were repeated (--num-profile-runs), each figure is the mean of the runs and \
the noise is half of Welch's t interval of the change at the baseline's --confidence-level \
(the runs' own variation); with a single run on either side the run-to-run variation is \
unknown, the window rule applies and compare says so. --fail-on exits 1 when a figure moved past its limit and beyond noise, 0 otherwise. A run \
that is not whole (ended on an error, interrupted or cut off, lacking a level the baseline \
measured, or with a level in which no request succeeded) fails the comparison (exit 1) \
unless --allow-partial accepts it. A \
results file that cannot be read or a bad --fail-on is exit 3. -o FILE.html also writes the \
comparison as one self-contained page (no script, nothing fetched) and prints its path; it \
is written whether the gate passes or not, and an -o path that cannot be written is exit 99.";

/// Flags of `inferperf compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Results files (results.json) or --report-dir folders; the first is the baseline,
    /// each other run is compared with it.
    #[arg(value_name = "RUN", num_args = 2.., required = true)]
    pub runs: Vec<std::path::PathBuf>,
    /// Limits that fail the comparison (exit 1) when a figure moves past them beyond noise,
    /// comma-separated: FIGURE<-N% for a drop, FIGURE>+N% for a rise; FIGURE is
    /// throughput, avg (mean latency) or pNN (latency percentile: p50, p90, p95, p99, p99.9).
    /// E.g. 'throughput<-5%,p99>+10%'.
    #[arg(long, value_name = "LIMITS")]
    pub fail_on: Option<String>,
    /// Compare a run that is not whole on what it measured, instead of failing (exit 1): a
    /// run that ended on an error, was interrupted or cut off, lacks a level the baseline
    /// measured, or had a level in which no request succeeded.
    #[arg(long)]
    pub allow_partial: bool,
    /// Also write the comparison as one HTML page: the runs, the settings that differ, the
    /// verdicts, and the runs' throughput-latency curves and latency distributions drawn
    /// over each other (a colour per run). Written whole (a temporary file renamed), its
    /// path printed after the table.
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    pub output: Option<std::path::PathBuf>,
}

/// Flags of `inferperf report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results.json, or a --report-dir folder holding one.
    #[arg(value_name = "RESULTS")]
    pub results: std::path::PathBuf,
    /// The HTML file to write.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE.html",
        default_value = "report.html"
    )]
    pub output: std::path::PathBuf,
}

/// Flags of `inferperf demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory for the CSV reports.
    #[arg(long, value_name = "DIR", default_value = "inferperf-demo")]
    pub out: std::path::PathBuf,
    /// Length of a measurement window in milliseconds.
    #[arg(
        short = 'p',
        long = "measurement-interval",
        value_name = "MS",
        default_value_t = 700
    )]
    pub measurement_interval: u64,
    /// No live progress line on standard error (see `inferperf profile --help`).
    #[arg(long)]
    pub no_progress: bool,
}

/// Flags of `inferperf serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// HTTP port (0 picks a free port and prints it).
    #[arg(long, default_value_t = 8000)]
    pub http_port: u16,
    /// gRPC port (0 picks a free port and prints it).
    #[arg(long, default_value_t = 8001)]
    pub grpc_port: u16,
    /// Prometheus metrics port (0 picks a free port; without it, the page is only at /metrics on the HTTP port).
    #[arg(long, value_name = "PORT")]
    pub metrics_port: Option<u16>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// A model to serve, NAME=KIND[:key=value,...]; repeatable. KIND is identity, add_sub,
    /// echo, sleep, fail (mode=error|bad_body|wrong_values), stream (decoupled:
    /// responses=N, first_ms=F, interval_ms=M), noop, llm (OpenAI /v1/chat/completions and
    /// /v1/completions, continuous batching: ttft_ms, itl_ms, output_tokens,
    /// prefill_us_per_token, tokens_per_event, instances, max_batch) or embeddings
    /// (/v1/embeddings and rerank routes: dims, ms, us_per_token). Without it: identity, add_sub and noop. --help gives
    /// every kind's defaults.
    #[arg(
        long = "model",
        value_name = "NAME=KIND[:OPTS]",
        long_help = inferperf_server::kinds_help()
    )]
    pub models: Vec<String>,
    /// Neither list nor answer the statistics extension (as KServe and MLServer): to see
    /// how a profile reports a server without it.
    #[arg(long)]
    pub no_statistics: bool,
    /// Serve HTTPS and gRPC over TLS on the same ports, with this certificate chain (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<std::path::PathBuf>,
    /// Require client certificates signed by this CA (PEM): mTLS.
    #[arg(long, value_name = "FILE")]
    pub tls_client_ca: Option<std::path::PathBuf>,
}

/// Flags of `inferperf profile`, named as perf_analyzer names them.
#[derive(Debug, Args, Clone)]
pub struct ProfileArgs {
    /// Name of the model to profile (with --service-kind dynamic_grpc, only a label; the
    /// method --grpc-method names by default). AIPerf's --model-names and --model NAME (see
    /// below) are this flag; inferperf profiles one model per run.
    #[arg(
        short = 'm',
        value_name = "MODEL",
        required_unless_present_any = ["grpc_method", "local_models"],
        default_value = ""
    )]
    pub model_name: String,
    /// Model version (default: the server's choice, usually the latest).
    #[arg(short = 'x', value_name = "VERSION", default_value = "")]
    pub model_version: String,
    /// Server address, host:port (https://host:port for HTTPS, grpcs://host:port for gRPC
    /// over TLS). Default localhost:8000 for HTTP, localhost:8001 for gRPC (with
    /// --service-kind tfserving: 8501 for HTTP, 8500 for gRPC, TF Serving's ports; with
    /// --service-kind torchserve: 8080, TorchServe's inference port).
    /// Several servers (replicas of one model): `-u a,b,c` or -u repeated; the load is
    /// spread over them round-robin and the report has a line per URL. --url is AIPerf's
    /// name, which also takes several URLs after one flag (--url A B).
    #[arg(short = 'u', long = "url", value_name = "URL", num_args = 1..)]
    pub url: Vec<String>,
    /// Protocol: http or grpc.
    #[arg(short = 'i', value_name = "PROTOCOL", default_value = "http")]
    pub protocol: String,
    /// Backend kind: `triton` (any KServe v2 server, over -i http|grpc), `tfserving` (TF
    /// Serving: gRPC PredictionService on port 8500, or its REST API on 8501 with -i http),
    /// `torchserve` (TorchServe's HTTP inference API on 8080: POST /predictions/M[/V]),
    /// `openai` (an OpenAI-compatible server, see --endpoint), `dynamic_grpc` (any gRPC
    /// method, see --grpc-method), `triton_c_api` (Triton started in this process and called
    /// through its C API; see --triton-server-directory and --model-repository) or `local`
    /// (the built-in models called in this process, no network; see --model). Default:
    /// triton, or openai when AIPerf's --endpoint-type or --custom-endpoint is given.
    #[arg(long, value_name = "KIND")]
    pub service_kind: Option<String>,
    /// With --service-kind tfserving: the model's signature to call (default
    /// serving_default); its inputs and outputs are read from GetModelMetadata.
    #[arg(long, value_name = "NAME")]
    pub model_signature_name: Option<String>,
    /// With --service-kind tfserving -i http: the predict body's form, `inputs` (columnar,
    /// {"inputs": {name: nested list}}; the default) or `instances` (row-wise, one row per
    /// element of the first dimension).
    #[arg(long, value_name = "FORM")]
    pub tfserving_rest_format: Option<String>,
    /// With --service-kind torchserve: TorchServe's management API, host:port, where the
    /// model is described (GET /models/M). Default: port 8081 on the host of -u, then -u.
    #[arg(long, value_name = "URL")]
    pub torchserve_management_url: Option<String>,
    /// With --service-kind local: a built-in model, NAME=KIND[:key=value,...]; repeatable
    /// (kinds as in `inferperf serve --help`). Without it: identity and add_sub. A value
    /// without '=' is AIPerf's --model: the model's name, as -m.
    #[arg(long = "model", value_name = "NAME=KIND[:OPTS]")]
    pub local_models: Vec<String>,
    /// Batch size of each request.
    #[arg(short = 'b', value_name = "N", default_value_t = 1)]
    pub batch_size: u32,
    /// Closed loop: keep N requests in flight, sweeping start[:end[:step]] (end 0: until -l).
    #[arg(long, value_name = "START[:END[:STEP]]")]
    pub concurrency_range: Option<String>,
    /// Open loop: send this many requests per second, sweeping start[:end[:step]] (floats;
    /// end 0: until -l). Sends never wait for answers; latency counts from the scheduled send.
    #[arg(long, value_name = "START[:END[:STEP]]")]
    pub request_rate_range: Option<String>,
    /// Gaps between requests in request-rate mode: constant or poisson (or gamma, see
    /// --arrival-smoothness). Default: constant (poisson with AIPerf's --request-rate, as
    /// AIPerf).
    #[arg(long, value_name = "DIST")]
    pub request_distribution: Option<String>,
    /// Seed of everything drawn at random: the Poisson and gamma schedules, synthetic
    /// prompts and their lengths, cancellations (the same seed gives the same run). Default
    /// 0; on an AIPerf command line (see docs/aiperf.md) AIPerf's default: a seed drawn from
    /// the system's entropy, printed in the settings so the run can be repeated.
    #[arg(long, visible_alias = "random-seed", value_name = "N")]
    pub seed: Option<u64>,
    /// Open loop from a file of gaps between requests, in microseconds, one per line, looped.
    #[arg(long, value_name = "FILE")]
    pub request_intervals: Option<std::path::PathBuf>,
    /// Open loop replaying the `timestamp` (ms) of each --input-data entry once.
    #[arg(long)]
    pub fixed_schedule: bool,
    /// With a request rate: at most N requests in flight; sends that must wait are counted.
    #[arg(long, value_name = "N")]
    pub max_concurrency: Option<u32>,
    /// Periodic concurrency (perf_analyzer's LLM load mode, with --streaming on a decoupled
    /// model): START requests at once, then STEP more each time every request of the latest
    /// set has received --request-period answers, until END requests were started in all;
    /// the run ends when all are answered. Measured as one window, without stability check.
    #[arg(long, value_name = "START:END:STEP")]
    pub periodic_concurrency_range: Option<String>,
    /// With --periodic-concurrency-range: the answers each request of a set must receive
    /// before the next set starts.
    #[arg(long, value_name = "N")]
    pub request_period: Option<u64>,
    /// Load over time instead of stable levels: the concurrency or request rate rises
    /// linearly from the range's start to its end over DURATION (e.g. --ramp 30s with
    /// --concurrency-range 1:64 or --request-rate-range 100:2000; no step). Reported per
    /// second: target, sends, throughput, p50/p99 and errors. With -f the CSV is that time
    /// series, not perf_analyzer's layout: one row per second, columns Time (s), Target,
    /// Sent/Second (rate), Inferences/Second, Errors, the percentiles, Avg latency, Late Sends
    /// (rate). --request-distribution poisson applies to rate plans.
    #[arg(long, value_name = "DURATION")]
    pub ramp: Option<String>,
    /// Load over time as steps, reported per second like --ramp: comma-separated
    /// KIND=VALUE:DURATION with KIND rate or concurrency (one kind per run), e.g.
    /// 'rate=100:10s,rate=1000:5s,rate=100:10s'. VALUE may be FROM..TO for a linear ramp
    /// within the step, and 0 for a pause. Durations: 500ms, 10s, 2m. -f writes the
    /// per-second CSV described under --ramp.
    #[arg(long, value_name = "STEPS")]
    pub load_steps: Option<String>,
    /// Bisect the --concurrency-range or --request-rate-range between its start and end,
    /// with the step as resolution, for the highest level that meets -l and --slo (as
    /// perf_analyzer: start and end are measured first).
    #[arg(long)]
    pub binary_search: bool,
    /// A service-level objective, e.g. 'p99<=50ms', 'p99.9<=20ms', 'avg<5ms' (units us, ms,
    /// s); comma-separated or repeated, all must hold on a level's reported windows (a
    /// window over twice a limit ends the level at once). A linear sweep stops at the first
    /// level that misses it; --binary-search bisects for it. The report lists the levels
    /// measured and names the knee: the stable level of highest throughput that met it.
    #[arg(long = "slo", value_name = "CONDITION")]
    pub slo: Vec<String>,
    /// Deprecated perf_analyzer flag: the same as --concurrency-range N.
    #[arg(short = 't', value_name = "N", hide_short_help = true)]
    pub old_concurrency: Option<u32>,
    /// Deprecated perf_analyzer flag: the end of the concurrency range (-c N alone is
    /// --concurrency-range 1:N; with -t S it is S:N).
    #[arg(short = 'c', value_name = "N", hide_short_help = true)]
    pub old_max_concurrency: Option<u32>,
    /// Deprecated perf_analyzer flag: concurrency mode; without -c the sweep has no end
    /// and stops at -l (the same as --concurrency-range 1:0).
    #[arg(short = 'd', hide_short_help = true)]
    pub old_dynamic_concurrency: bool,
    /// Deprecated perf_analyzer flag: the same as --input-data zero.
    #[arg(short = 'z', hide_short_help = true)]
    pub old_zero_input: bool,
    /// Deprecated perf_analyzer flag: the same as --input-data DIR.
    #[arg(long = "data-directory", value_name = "DIR", hide_short_help = true)]
    pub old_data_directory: Option<String>,
    /// Length of a time window in milliseconds.
    #[arg(
        short = 'p',
        long = "measurement-interval",
        value_name = "MS",
        default_value_t = 5000
    )]
    pub measurement_interval: u64,
    /// time_windows or count_windows.
    #[arg(long, value_name = "MODE", default_value = "time_windows")]
    pub measurement_mode: String,
    /// Minimum requests per window in count_windows mode.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub measurement_request_count: u64,
    /// Stable when max/min of the last 3 windows is within this percentage.
    #[arg(
        short = 's',
        long = "stability-percentage",
        value_name = "PCT",
        default_value_t = 10.0
    )]
    pub stability_percentage: f64,
    /// Most windows per level before it is reported as unstable.
    #[arg(
        short = 'r',
        long = "max-trials",
        value_name = "N",
        default_value_t = 10
    )]
    pub max_trials: u32,
    /// Stabilize on and report this latency percentile (any value in (0,100), e.g. 99.9).
    #[arg(long, value_name = "P")]
    pub percentile: Option<f64>,
    /// Stop the sweep when the stabilizing latency reaches this many ms (0: no limit).
    #[arg(
        short = 'l',
        long = "latency-threshold",
        value_name = "MS",
        default_value_t = 0.0
    )]
    pub latency_threshold: f64,
    /// Send exactly N requests in one window (no stability check), as perf_analyzer's count
    /// window of N: at a single --concurrency-range N value (N requests at least), a single
    /// --request-rate-range R (at least R requests), or over --request-intervals. AIPerf's
    /// --request-count (and --num-requests) means the same.
    #[arg(
        long,
        visible_alias = "num-requests",
        value_name = "N",
        default_value_t = 0
    )]
    pub request_count: u64,
    /// Requests sent before measuring starts.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup_request_count: u64,
    /// Request data: random, zero, a JSON file in perf_analyzer's format (repeatable), or
    /// a directory with one raw data file per input.
    #[arg(long, value_name = "SOURCE", default_value = "random")]
    pub input_data: Vec<String>,
    /// Shape of a variable-sized input, without the batch dimension; repeatable.
    #[arg(long = "shape", value_name = "NAME:D1,D2,...")]
    pub shapes: Vec<String>,
    /// Length of random strings for BYTES inputs.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub string_length: usize,
    /// A fixed string for every BYTES element.
    #[arg(long, value_name = "TEXT")]
    pub string_data: Option<String>,
    /// HTTP request tensors: binary (binary tensor data extension) or json. Default: binary
    /// when the server lists the binary_tensor_data extension, json otherwise.
    #[arg(long, value_name = "FORMAT")]
    pub input_tensor_format: Option<String>,
    /// HTTP response tensors: binary or json. Default as for --input-tensor-format.
    #[arg(long, value_name = "FORMAT")]
    pub output_tensor_format: Option<String>,
    /// Datatype of an input the server's metadata does not declare (with --shape); repeatable.
    #[arg(long = "input-datatype", value_name = "NAME:TYPE")]
    pub input_datatypes: Vec<String>,
    /// Send every request over gRPC's bidirectional ModelStreamInfer (-i grpc), as
    /// perf_analyzer does; needed for decoupled models, whose every answer is then timed:
    /// first-response and inter-response latency, responses per request, response throughput.
    /// With --service-kind openai: ask for server-sent events, every event with content
    /// timed (time to first token, inter-token latency).
    #[arg(long)]
    pub streaming: bool,
    /// Float tolerance when answers are compared with the input data's validation_data:
    /// |got - expected| <= TOL x max(1, |expected|). Integers, BOOL and BYTES compare exactly.
    #[arg(
        long,
        value_name = "TOL",
        default_value_t = DEFAULT_VALIDATION_TOLERANCE,
        allow_negative_numbers = true
    )]
    pub validation_tolerance: f64,
    /// Extra header 'Name: value', sent on HTTP and as gRPC metadata; repeatable, or several
    /// after one -H (AIPerf's --header A B).
    #[arg(short = 'H', long = "header", value_name = "HEADER", num_args = 1..)]
    pub headers: Vec<String>,
    /// Write perf_analyzer's CSV report to this file.
    #[arg(short = 'f', value_name = "FILE")]
    pub csv_file: Option<std::path::PathBuf>,
    /// With several -u URLs: also write a CSV with a row per level (with --ramp or
    /// --load-steps, per second) and URL (throughput, p50 and p99 latency, requests, errors).
    #[arg(long, value_name = "FILE")]
    pub per_url_csv: Option<std::path::PathBuf>,
    /// A folder for this run's reports (created if missing): results.json — everything
    /// measured, every window with its latency histograms, rewritten after each level and
    /// completed on Ctrl-C (schema: docs/results.schema.json) — and perf_analyzer's CSV as
    /// results.csv (also when -f writes it elsewhere).
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<std::path::PathBuf>,
    /// Write the results file (results.json's content, see --report-dir) to this path alone.
    #[arg(long, value_name = "FILE")]
    pub results_file: Option<std::path::PathBuf>,
    /// Write perf_analyzer's profile export to this file: every request of every window
    /// (unstable ones too) with its send and answer times and its inputs, one experiment
    /// per level, plus the window boundaries. The path must not exist yet.
    #[arg(long, value_name = "FILE")]
    pub profile_export_file: Option<std::path::PathBuf>,
    /// Add perf_analyzer's extra CSV columns (Avg latency, request/response, response
    /// wait, the GPU metrics with --collect-metrics) and one column per --metric.
    #[arg(long)]
    pub verbose_csv: bool,
    /// Scrape the server's Prometheus metrics during each window: GPU utilization, power and
    /// memory per GPU (as perf_analyzer), and the server process's CPU and memory. Works
    /// with any server that has a metrics page.
    #[arg(long)]
    pub collect_metrics: bool,
    /// The metrics page. Default: port 8002 on the host of -u, path /metrics (with
    /// --service-kind torchserve: port 8082, where the Server: breakdown is read from).
    #[arg(long, value_name = "URL")]
    pub metrics_url: Option<String>,
    /// Milliseconds between scrapes of the metrics page.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub metrics_interval: u64,
    /// Read an LLM serving engine's own metrics (AIPerf's flag) at every window: per level
    /// its running and waiting requests, KV-cache usage, prefix-cache hit rate,
    /// preemptions, token rates and its TTFT, inter-token and end-to-end percentiles. The
    /// engine is recognised from its names (vLLM, SGLang, TGI, llama.cpp, Triton,
    /// TensorRT-LLM). Default URL: /metrics on the -u server (--metrics-url's default for
    /// Triton and TorchServe). Several URLs (an engine's replicas): every page is read at
    /// each scrape and their series are added together.
    #[arg(long, value_name = "URL", num_args = 0..)]
    pub server_metrics: Option<Vec<String>>,
    /// The engine whose names --server-metrics reads, instead of recognising it: vllm,
    /// sglang, tgi, llamacpp, triton or trtllm.
    #[arg(long, value_name = "ENGINE")]
    pub server_metrics_preset: Option<String>,
    /// GPU telemetry (AIPerf's flag) at every window: per GPU and level its utilization,
    /// memory used, power (avg, max), energy, and tokens per joule. A DCGM exporter's page
    /// (default http://localhost:9400/metrics), or `nvml` (AIPerf's `pynvml`) to read the
    /// NVIDIA driver here; AIPerf's `dashboard` keyword is the default page.
    #[arg(long, value_name = "URL|nvml", num_args = 0..)]
    pub gpu_telemetry: Option<Vec<String>>,
    /// Report any metric of the page: NAME[{label="value",...}][:avg|max|rate] (default avg;
    /// the values of all matching series are added). Repeatable; turns scraping on.
    #[arg(long = "metric", value_name = "NAME[:AGG]")]
    pub metrics: Vec<String>,
    /// More output; repeat for more.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Seconds to wait for one answer before it counts as a timeout error.
    #[arg(
        long,
        visible_alias = "request-timeout-seconds",
        value_name = "SECONDS",
        default_value_t = 30.0
    )]
    pub request_timeout: f64,
    /// The largest answer taken, in bytes (default 1 GiB): a bigger answer body or gRPC
    /// message counts as a `bad response (too large)` and its connection is dropped, so a
    /// runaway server cannot grow the client's memory.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    pub max_response_bytes: u64,
    /// Threads the client sends from, each with its own event loop and its share of the
    /// connections. One thread keeps up with about 100k small requests per second and
    /// costs the least CPU per request; add threads when the report says the client
    /// limited the load.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub client_threads: usize,
    /// Open loop: how late (in µs) a send may go out so that it shares a wake-up of its
    /// client thread (for an answer, say) instead of taking one of its own — a wake-up costs
    /// the client more CPU than a request. The send lag is reported, and latency still counts
    /// from the scheduled send; 0 sends each request at the earliest instant. Applies from
    /// 5,000 sends/s per client thread; below, sends always go at the earliest instant.
    #[arg(long, value_name = "USEC", default_value_t = 100)]
    pub send_slack: u64,
    /// Over gRPC, in-flight requests that share one HTTP/2 connection. Default: as
    /// perf_analyzer, whose client library shares a channel among up to 6 clients
    /// ($TRITON_CLIENT_GRPC_CHANNEL_MAX_SHARE_COUNT when set); 1 gives each its own.
    #[arg(long, value_name = "N")]
    pub grpc_connection_share: Option<usize>,
    /// Accepted for perf_analyzer compatibility. inferperf always sends asynchronously from a
    /// few threads: in concurrency mode exactly N requests are in flight, in rate mode sends
    /// never wait for answers.
    #[arg(short = 'a', long = "async")]
    pub async_mode: bool,
    /// Accepted for perf_analyzer compatibility, with the same load as --async. In
    /// perf_analyzer, sync + request rate delays sends behind slow answers (coordinated
    /// omission); inferperf never does.
    #[arg(long = "sync", conflicts_with = "async_mode")]
    pub sync_mode: bool,
    /// No live progress line. Without it, when standard error is a terminal, one line there
    /// shows the level being measured, its window out of -r, the last window's throughput,
    /// p99 and errors, and how far the last windows are from -s (or a --ramp/--load-steps
    /// plan's time left); it is cleared before each report. Nothing is written when standard
    /// error is not a terminal.
    #[arg(long)]
    pub no_progress: bool,
    /// Be shard I of N processes that apply the load together, each writing its own
    /// results for `inferperf merge`: a rate is split into N phase-shifted streams whose union
    /// is the asked one, a concurrency into N parts as even as integers allow, input data and
    /// a fixed schedule by entry. Without it, the shard comes from MPI (OMPI_COMM_WORLD_RANK /
    /// _SIZE, PMI_RANK / PMI_SIZE) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX with
    /// --shards).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The shard count of a Kubernetes Indexed Job (its completions); the index comes from
    /// JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// When the first window starts, as an RFC 3339 time (2026-11-24T10:00:00Z) or
    /// @UNIX_SECONDS: shards started apart still measure the same seconds. Discovery and
    /// warm-up happen before it.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Accepted as perf_analyzer's: under an MPI launcher the ranks are the shards and agree
    /// on stability (a level ends when every rank's windows are stable); this is so with or
    /// without the flag.
    #[arg(long)]
    pub enable_mpi: bool,
    #[command(flatten)]
    pub llm: OpenAiArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub sequence: SequenceArgs,
    #[command(flatten)]
    pub pa: RequestOptionArgs,
    #[command(flatten)]
    pub sessions: SessionArgs,
    #[command(flatten)]
    pub media: MediaArgs,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// Last: its help heading covers the flags after it.
    #[command(flatten)]
    pub aiperf: AiperfArgs,
    #[command(flatten)]
    pub aiperf_load: AiperfLoadArgs,
    #[command(flatten)]
    pub aiperf_modes: AiperfLoadModeArgs,
    #[command(flatten)]
    pub aiperf_repeats: AiperfRepeatArgs,
    #[command(flatten)]
    pub aiperf_server: AiperfServerArgs,
    #[command(flatten)]
    pub aiperf_runtime: AiperfRuntimeArgs,
    /// Whose command line this is (not a flag: read from the line by [`parse_command_line`]).
    #[arg(skip)]
    pub dialect: Dialect,
}

impl ProfileArgs {
    /// The first `-u` URL as given (the first item of a comma-separated list).
    pub fn first_url(&self) -> Option<&str> {
        let first = self.url.first()?;
        Some(first.split(',').next().unwrap_or(first).trim())
    }
}

/// Turns the bare form (`inferperf -m M`) into the subcommand form (`inferperf profile -m M`).
/// Any name of a subcommand (or `help`) is left alone.
pub fn normalize_args(mut args: Vec<String>) -> Vec<String> {
    let first = args.get(1).map(String::as_str);
    let is_subcommand = first.is_some_and(|a| a == "help" || subcommand_names().any(|n| n == a));
    let is_top_version = matches!(first, Some("-V" | "--version"));
    if !is_subcommand && !is_top_version {
        args.insert(1.min(args.len()), "profile".to_string());
    }
    if args.get(1).is_some_and(|a| a == "profile") {
        aiperf::rewrite_aliases(&mut args[2..]);
    }
    args
}

/// Parses a whole command line (program name first, as [`normalize_args`] leaves it), and
/// notes whose command line a `profile` one is ([`Dialect`]): every parse of a command line
/// that is run goes through here, so that a rerun from a results file reads it alike.
pub fn parse_command_line<T: Into<String>>(
    args: impl IntoIterator<Item = T>,
) -> Result<Cli, clap::Error> {
    let args: Vec<String> = args.into_iter().map(Into::into).collect();
    let mut cli = Cli::try_parse_from(&args)?;
    if let Command::Profile(profile) = &mut cli.command {
        let after = args
            .iter()
            .position(|a| a == "profile")
            .map_or(1, |i| i + 1);
        profile.dialect = dialect_of(&args[after.min(args.len())..]);
    }
    Ok(cli)
}

/// The names of the subcommands, as the `Command` enum declares them.
fn subcommand_names() -> impl Iterator<Item = String> {
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect::<Vec<_>>()
        .into_iter()
}

/// The command line with the value of every `-H` (`--header`) header and of `--api-key`
/// hidden: a header may carry a credential (`Authorization: Bearer …`), which must never be
/// written anywhere.
pub fn without_header_values(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let hide = |header: &str| match header.split_once(':') {
        Some((name, _)) => format!("{name}: <hidden>"),
        None => "<hidden>".to_string(),
    };
    let mut out = Vec::new();
    // -H takes every value up to the next flag (AIPerf's `--header A B`).
    let mut in_header = false;
    for arg in args {
        // --header, or a prefix of it that clap reads as --header (`--head`).
        let long = arg
            .strip_prefix("--")
            .map(|a| a.split('=').next().unwrap_or(a));
        let header_flag = long.is_some_and(|n| n.len() >= 3 && "header".starts_with(n));
        let shown = if in_header && !arg.starts_with('-') {
            hide(&arg)
        } else if let Some((flag, value)) = arg.split_once('=').filter(|_| header_flag) {
            format!("{flag}={}", hide(value))
        } else if let Some(attached) = arg.strip_prefix("-H").filter(|a| !a.is_empty()) {
            format!("-H{}", hide(attached))
        } else {
            arg.clone()
        };
        if arg.starts_with('-') {
            in_header = arg.starts_with("-H") || header_flag;
        }
        out.push(shown);
    }
    endpoints::without_api_key(out)
}

#[cfg(test)]
mod tests;
