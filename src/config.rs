//! The validated run configuration. Every rule about how flags combine lives here: after
//! `Config::from_args` succeeds, the rest of the program never re-checks a flag.

mod aiperf;
mod api;
pub mod bounds;
mod load;
mod metrics;
mod openai;
mod output;
mod parse;
mod request_options;
pub mod shard;
pub mod sweep;
pub mod tfserving;
pub mod torchserve;

pub use aiperf::OpenAiWire;
pub use api::{ApiSettings, DynamicGrpcSettings, KserveSettings, LocalSettings, OpenAiSettings};
pub use metrics::{MetricAggregation, MetricSpec, MetricsConfig};
pub use openai::{Endpoint, OpenAiConfig, PromptSource};
pub use output::{REPORT_CSV_NAME, RESULTS_FILE_NAME};
pub(crate) use parse::whole_range;
use parse::*;
pub use parse::{parse_concurrency_range, parse_headers, parse_shapes};
pub use request_options::{GrpcCompression, ParameterValue, RequestParameter};
pub mod sequence;
pub mod shm;
mod slo;
mod timeline;
mod tls;
pub use request_options::TritonCApiSettings;
pub use tls::{TlsFile, TlsFlags, TlsSettings};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Which kind of backend answers (`--service-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceKind {
    /// Any KServe v2 server (Triton, KServe, MLServer, the embedded server).
    Triton,
    /// The built-in models, called in this process.
    Local,
    /// An OpenAI-compatible server (vLLM, SGLang, llama.cpp, …).
    OpenAi,
    /// TF Serving's PredictionService (gRPC) or REST API.
    TfServing,
    /// TorchServe's HTTP inference API (`POST /predictions/M[/V]`).
    TorchServe,
    /// Any gRPC method (`--grpc-method`), called with the messages a generator prints.
    DynamicGrpc,
    /// Triton started in this process and called through its C API.
    TritonCApi,
}

impl ServiceKind {
    /// The name the settings block prints.
    pub fn label(self) -> &'static str {
        match self {
            ServiceKind::Triton => "TRITON",
            ServiceKind::Local => "LOCAL",
            ServiceKind::OpenAi => "OPENAI",
            ServiceKind::TfServing => "TFSERVING",
            ServiceKind::TorchServe => "TORCHSERVE",
            ServiceKind::DynamicGrpc => "DYNAMIC_GRPC",
            ServiceKind::TritonCApi => "TRITON_C_API",
        }
    }
}

/// Wire protocol to the server (`-i`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http,
    Grpc,
}

/// How tensors travel in HTTP bodies (`--input-tensor-format`, `--output-tensor-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorFormat {
    Binary,
    Json,
}

/// Window type (`--measurement-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasurementMode {
    TimeWindows,
    CountWindows,
}

/// Where request tensors come from (`--input-data`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputData {
    Random,
    Zero,
    /// perf_analyzer's JSON input-data files, their entries concatenated in order.
    Json(Vec<PathBuf>),
    /// A directory with one raw data file per input.
    Directory(PathBuf),
}

pub use load::{
    format_rate, Distribution, LoadLevel, LoadMode, PeriodicRange, RateRange,
    DEFAULT_REQUEST_PERIOD,
};
pub use slo::{
    parse_slo, SloCondition, SloFigure, SloMetric, LLM_PERCENTILES, STANDARD_PERCENTILES,
};
pub use timeline::{Segment, Timeline, TimelineKind};

/// An inclusive `start:end:step` sweep of concurrency values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencyRange {
    pub start: u32,
    /// 0 means "keep increasing until the latency limit is hit".
    pub end: u32,
    pub step: u32,
}

/// The validated settings of one profiling run.
#[derive(Debug, Clone)]
pub struct Config {
    pub model_name: String,
    /// `-x`; empty lets the server choose.
    pub model_version: String,
    /// `host:port` (a scheme, if the user gave one, is removed); the first of `urls`.
    pub url: String,
    /// Every `-u` server as `host:port`, in order (one unless several were given): the
    /// replicas the load is spread over.
    pub urls: Vec<String>,
    /// `--per-url-csv`: a row per level and URL.
    pub per_url_csv: Option<PathBuf>,
    /// TLS to the server (`https://`, `grpcs://` or the `--ssl-*` flags); `None`: plain.
    pub tls: Option<TlsSettings>,
    /// `--service-kind` and the settings only that API takes.
    pub api: ApiSettings,
    pub protocol: Protocol,
    pub batch_size: u32,
    pub concurrency: ConcurrencyRange,
    /// Which load the levels apply (concurrency uses `concurrency`).
    pub load: LoadMode,
    /// `--max-concurrency`: the in-flight cap of the open-loop modes.
    pub max_concurrency: Option<u32>,
    /// `--seed` of the Poisson schedule.
    pub seed: u64,
    pub measurement_mode: MeasurementMode,
    pub measurement_interval: Duration,
    pub measurement_request_count: u64,
    /// `-s` as a percentage (10 means max/min ≤ 1.10).
    pub stability_percentage: f64,
    pub max_trials: u32,
    /// `--percentile`, when latency is stabilized and limited by a percentile, not the mean.
    pub percentile: Option<f64>,
    /// `-l` in milliseconds; `None` for no limit.
    pub latency_threshold_ms: Option<f64>,
    /// `--binary-search`: bisect the range instead of walking it.
    pub binary_search: bool,
    /// `--slo` conditions; every window of a level that counts must meet them all.
    pub slo: Vec<SloCondition>,
    /// `--request-count`: exactly this many requests in one window.
    pub request_count: Option<u64>,
    pub warmup_request_count: u64,
    pub input_data: InputData,
    /// `--shape NAME:dims`, without the batch dimension.
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub string_length: usize,
    pub string_data: Option<String>,
    /// `None`: binary when the server lists the binary tensor extension, else JSON.
    pub input_format: Option<TensorFormat>,
    pub output_format: Option<TensorFormat>,
    /// `--input-datatype NAME:TYPE`, for inputs the server's metadata does not declare.
    pub input_datatypes: BTreeMap<String, DataType>,
    /// `-H` headers, sent with every HTTP request and as gRPC metadata.
    pub headers: Vec<(String, String)>,
    pub csv_file: Option<PathBuf>,
    /// `--report-dir`: the folder of `results.json`, the CSV and the reports built on them.
    pub report_dir: Option<PathBuf>,
    /// `--results-file`: the results file alone.
    pub results_file: Option<PathBuf>,
    /// `--profile-export-file`: perf_analyzer's per-request export.
    pub profile_export_file: Option<PathBuf>,
    pub verbose: u8,
    /// Longest wait for one answer before it counts as a timeout.
    pub request_timeout: Duration,
    /// `--max-response-bytes`.
    pub max_response_bytes: usize,
    /// Threads the load is sent from (`--client-threads`).
    pub client_threads: usize,
    /// How late an open-loop send may go to share a wake-up (`--send-slack`).
    pub send_slack: Duration,
    /// In-flight gRPC requests per HTTP/2 connection (`--grpc-connection-share`).
    pub grpc_connection_share: usize,
    /// `--async` was given (reported in the settings; the driver is always asynchronous).
    pub async_mode: bool,
    /// `--verbose-csv`: perf_analyzer's extra CSV columns and one per `--metric`.
    pub verbose_csv: bool,
    /// Prometheus scraping (`--collect-metrics`, `--metric`), when asked for.
    pub metrics: Option<MetricsConfig>,
    /// `--streaming`: every request over gRPC's `ModelStreamInfer`.
    pub streaming: bool,
    /// `--validation-tolerance`: how far a float output may be from `validation_data`.
    pub validation_tolerance: f64,
    /// AIPerf's `--benchmark-duration`: each level is one window of this length, without
    /// stability check.
    pub benchmark_duration: Option<Duration>,
    /// `--grpc-compression-algorithm`: how gRPC request messages are compressed.
    pub grpc_compression: Option<GrpcCompression>,
    /// Live progress on standard error when it is a terminal (off with `--no-progress`).
    pub progress: bool,
    /// The server runs in this process (`inferperf demo`): the client CPU the report shows
    /// is the client's and the server's together, so it cannot say the client was the limit.
    /// Set by the caller, not by a flag.
    pub server_in_process: bool,
    /// This process's part of a sharded run (`--shard`, MPI, an Indexed Job).
    pub shard: Option<shard::ShardPlan>,
    /// How sequences are played when the model is a sequence model.
    pub sequence: sequence::SequenceConfig,
    /// The command line after the program's name, header values hidden: what the results
    /// file records so that `inferperf merge` can rebuild the run's settings.
    pub arguments: Vec<String>,
}

use crate::cli::ProfileArgs;
use crate::error::{RunError, RunResult};
use crate::model::DataType;

impl Config {
    /// Checks every flag and flag combination; the error names the flag and the fix.
    pub fn from_args(args: &ProfileArgs) -> RunResult<Config> {
        let lowered = aiperf::lower(args)?;
        let args = &lowered.args;
        let service_kind = parse_service_kind(args.service_kind.as_deref().unwrap_or("triton"))?;
        let protocol = match (parse_protocol(&args.protocol)?, service_kind) {
            // perf_analyzer's dynamic gRPC forces gRPC.
            (_, ServiceKind::DynamicGrpc) => Protocol::Grpc,
            (protocol, _) => protocol,
        };
        let grpc_method = request_options::parse_grpc_method(args, service_kind)?;
        let shm = shm::parse(args, service_kind)?;
        let torchserve = torchserve::parse(args, service_kind, protocol)?;
        request_options::refuse_session_concurrency(&args.pa, service_kind)?;
        let (load, concurrency) = load::parse_load(args)?;
        let (report_dir, results_file) = output::parse_outputs(args)?;
        let profile_export_file = output::parse_profile_export(args, &load)?;
        let default_url = tfserving::default_url(service_kind, protocol)
            .or(torchserve::default_url(service_kind));
        let (urls, secure_url) = match default_url {
            Some(default) if args.url.is_empty() => parse_urls(&[default.to_string()], protocol)?,
            _ => parse_urls(&args.url, protocol)?,
        };
        // Read in the order the flags have always been checked, so that of two bad flags the
        // same one is named.
        let model_name = match &grpc_method {
            Some(method) if args.model_name.trim().is_empty() => method.clone(),
            _ => non_empty(&args.model_name, "-m")?,
        };
        let tls = tls::parse_tls(args, protocol, service_kind, secure_url)?;
        let local_models = parse_local_models(service_kind, &args.local_models)?;
        let batch_size = positive(args.batch_size as u64, "-b")? as u32;
        let measurement_mode = parse_measurement_mode(&args.measurement_mode)?;
        let measurement_interval = bounds::window_ms(args.measurement_interval)?;
        let measurement_request_count = positive(
            args.measurement_request_count,
            "--measurement-request-count",
        )?;
        let stability_percentage = parse_stability(args.stability_percentage)?;
        let max_trials = positive(args.max_trials as u64, "-r")? as u32;
        let percentile = args.percentile.map(parse_percentile).transpose()?;
        let latency_threshold_ms = parse_latency_threshold(args.latency_threshold)?;
        let slo = parse_slo(&args.slo)?;
        let warmup_request_count = bounds::warmup_requests(args.warmup_request_count)?;
        let input_data = parse_input_data(&input_data_args(args)?)?;
        let shapes = parse_shapes(&args.shapes)?;
        let string_length = positive(args.string_length as u64, "--string-length")? as usize;
        let input_format = args
            .input_tensor_format
            .as_deref()
            .map(|f| parse_tensor_format(f, "--input-tensor-format"))
            .transpose()?;
        let output_format = args
            .output_tensor_format
            .as_deref()
            .map(|f| parse_tensor_format(f, "--output-tensor-format"))
            .transpose()?;
        let input_datatypes = parse_input_datatypes(&args.input_datatypes)?;
        let headers = parse_headers(&args.headers)?;
        let request_timeout = bounds::request_timeout(args.request_timeout)?;
        let max_response_bytes = bounds::max_response_bytes(args.max_response_bytes)?;
        let client_threads = request_options::cap_client_threads(
            parse_client_threads(args.client_threads)?,
            &args.pa,
        )?;
        let send_slack = bounds::send_slack(args.send_slack)?;
        let grpc_connection_share = parse_connection_share(args.grpc_connection_share, protocol)?;
        let metrics = metrics::parse_metrics(args, service_kind)?;
        let streaming = parse_streaming(args.streaming, protocol, service_kind)?;
        let validation_tolerance = parse_tolerance(args.validation_tolerance)?;
        let llm = parse_llm(args, service_kind, protocol)?;
        let tfserving = tfserving::parse(args, service_kind)?;
        let trace_settings =
            request_options::parse_trace_settings(&args.pa, protocol, service_kind)?;
        let grpc_compression =
            request_options::parse_grpc_compression(&args.pa, protocol, service_kind)?;
        let request_parameters =
            request_options::parse_request_parameters(&args.pa.request_parameters)?;
        let bls_composing_models =
            request_options::parse_bls_composing_models(&args.pa, service_kind)?;
        let triton_c_api =
            request_options::parse_triton_c_api(&args.pa, service_kind, args.verbose >= 1)?;
        let api = ApiSettings::assemble(
            service_kind,
            api::ApiFlags {
                local_models,
                llm,
                wire: lowered.wire,
                tfserving,
                torchserve,
                grpc_method,
                triton_c_api,
                request_parameters,
                bls_composing_models,
                shm,
                trace_settings,
            },
        )?;
        let mut config = Config {
            model_name,
            model_version: args.model_version.trim().to_string(),
            url: urls[0].clone(),
            urls,
            per_url_csv: args.per_url_csv.clone(),
            tls,
            api,
            protocol,
            batch_size,
            concurrency,
            load,
            max_concurrency: args.max_concurrency.filter(|&n| n > 0),
            seed: args.seed,
            measurement_mode,
            measurement_interval,
            measurement_request_count,
            stability_percentage,
            max_trials,
            percentile,
            latency_threshold_ms,
            binary_search: args.binary_search,
            slo,
            request_count: (args.request_count > 0).then_some(args.request_count),
            warmup_request_count,
            input_data,
            shapes,
            string_length,
            string_data: args.string_data.clone(),
            input_format,
            output_format,
            input_datatypes,
            headers,
            csv_file: args.csv_file.clone(),
            report_dir,
            results_file,
            profile_export_file,
            verbose: args.verbose,
            request_timeout,
            max_response_bytes,
            client_threads,
            send_slack,
            grpc_connection_share,
            async_mode: args.async_mode,
            verbose_csv: args.verbose_csv,
            metrics,
            streaming,
            validation_tolerance,
            benchmark_duration: lowered.benchmark_duration,
            grpc_compression,
            progress: !args.no_progress,
            server_in_process: false,
            shard: shard::parse_shard(args)?,
            sequence: sequence::parse(&args.sequence)?,
            arguments: Vec::new(),
        };
        if let Some(metrics) = config.metrics.as_mut() {
            if metrics.url.starts_with("https://") {
                metrics.tls = Some(
                    config
                        .tls
                        .clone()
                        .unwrap_or_else(TlsSettings::system_default),
                );
            }
        }
        config.check_request_count()?;
        config.check_benchmark_duration()?;
        config.check_request_parameters()?;
        config.check_dynamic_grpc()?;
        config.check_periodic()?;
        config.check_search()?;
        config.check_timeline()?;
        config.check_llm_slo()?;
        config.check_shard()?;
        config.check_replicas()?;
        config.check_sequence_ids()?;
        config.shard_outputs();
        Ok(config)
    }

    /// The concurrency values of the sweep, in order. An open end (0) sweeps on until the
    /// latency limit stops it; the iterator is then unbounded.
    pub fn concurrency_levels(&self) -> Box<dyn Iterator<Item = u32>> {
        let ConcurrencyRange { start, end, step } = self.concurrency;
        let values = (0u32..).map(move |i| start.saturating_add(i.saturating_mul(step)));
        if end == 0 {
            Box::new(values)
        } else {
            Box::new(values.take_while(move |&c| c <= end))
        }
    }

    /// Highest concurrency the sweep can reach, if bounded.
    pub fn max_concurrency(&self) -> Option<u32> {
        let ConcurrencyRange { start, end, step } = self.concurrency;
        (end != 0).then(|| start + (end - start) / step * step)
    }

    /// Several URLs need servers reached over the network, and a load the replicas can share.
    fn check_replicas(&self) -> RunResult<()> {
        if self.urls.len() < 2 {
            return Ok(());
        }
        if matches!(
            self.service_kind(),
            ServiceKind::Local | ServiceKind::TritonCApi
        ) {
            return Err(RunError::bad_option(format!(
                "--service-kind {} runs the models in this process: give a single -u (or none).",
                self.service_kind().label().to_ascii_lowercase()
            )));
        }
        if matches!(self.load, LoadMode::Periodic(_)) {
            return Err(RunError::bad_option(
                "--periodic-concurrency-range drives one server: give a single -u.",
            ));
        }
        if self.urls.len() > u16::MAX as usize {
            return Err(RunError::bad_option("-u lists more than 65535 servers."));
        }
        Ok(())
    }

    /// `--request-count N`, as perf_analyzer: one count window of exactly N requests, at a
    /// single concurrency, request rate, or over the `--request-intervals` gaps.
    fn check_request_count(&self) -> RunResult<()> {
        let Some(count) = self.request_count else {
            return Ok(());
        };
        match &self.load {
            LoadMode::Concurrency => self.check_count_concurrency(count),
            LoadMode::RequestRate { range, .. } => check_count_rate(count, range),
            LoadMode::Intervals { .. } => Ok(()),
            LoadMode::FixedSchedule => Err(RunError::bad_option(
                "--request-count does not apply to --fixed-schedule, which sends every input-data entry once: drop --request-count.",
            )),
            _ => Ok(()),
        }
    }

    /// AIPerf's `--benchmark-duration`: one window at a single concurrency or request rate.
    fn check_benchmark_duration(&self) -> RunResult<()> {
        if self.benchmark_duration.is_none() {
            return Ok(());
        }
        let single = match &self.load {
            LoadMode::Concurrency => self.max_concurrency() == Some(self.concurrency.start),
            LoadMode::RequestRate { range, .. } => range.end == range.start,
            LoadMode::Intervals { .. } => true,
            _ => false,
        };
        if !single || self.binary_search {
            return Err(RunError::bad_option(
                "--benchmark-duration measures one level: give a single --concurrency N or --request-rate R (no range, ramp, steps or search).",
            ));
        }
        Ok(())
    }

    fn check_count_concurrency(&self, count: u64) -> RunResult<()> {
        if self.max_concurrency() != Some(self.concurrency.start) {
            return Err(RunError::bad_option(
                "--request-count needs a single concurrency value: pass --concurrency-range N alone.",
            ));
        }
        if count < self.concurrency.start as u64 {
            return Err(RunError::bad_option(format!(
                "--request-count {count} is smaller than the concurrency {}: ask for at least as many requests as are in flight.",
                self.concurrency.start
            )));
        }
        Ok(())
    }
}

/// perf_analyzer's rules for `--request-count` with `--request-rate-range`.
fn check_count_rate(count: u64, range: &RateRange) -> RunResult<()> {
    if range.end != range.start {
        return Err(RunError::bad_option(
            "--request-count needs a single request rate: pass --request-rate-range R alone.",
        ));
    }
    if (count as f64) < range.start.floor() {
        return Err(RunError::bad_option(format!(
            "--request-count {count} is smaller than the request rate {}: ask for at least a second's worth of requests.",
            format_rate(range.start)
        )));
    }
    Ok(())
}

/// The LLM flags: read for `--service-kind openai` (HTTP only), refused elsewhere.
fn parse_llm(
    args: &ProfileArgs,
    kind: ServiceKind,
    protocol: Protocol,
) -> RunResult<Option<OpenAiConfig>> {
    if kind != ServiceKind::OpenAi {
        openai::refuse_without_openai(&args.llm)?;
        aiperf::refuse_without_openai(&args.aiperf)?;
        return Ok(None);
    }
    if protocol != Protocol::Http {
        return Err(RunError::bad_option(
            "--service-kind openai speaks HTTP: drop -i grpc (and give the HTTP port in -u).",
        ));
    }
    if args.batch_size != 1 {
        return Err(RunError::bad_option(
            "--service-kind openai sends one prompt per request: drop -b (or use -b 1).",
        ));
    }
    let llm = OpenAiConfig::parse(&args.llm)?;
    if args.streaming && !llm.endpoint.generates() {
        return Err(RunError::bad_option(
            "--streaming does not apply to v1/embeddings (an embedding comes in one piece): drop --streaming.",
        ));
    }
    Ok(Some(llm))
}

/// perf_analyzer's defaults, as `Config::from_args` builds them for `-m test`.
#[cfg(test)]
pub(crate) fn test_config() -> Config {
    use clap::Parser;
    let cli = crate::cli::Cli::try_parse_from(["inferperf", "profile", "-m", "test"])
        .expect("default flags parse");
    let crate::cli::Command::Profile(args) = cli.command else {
        unreachable!("the profile subcommand was given");
    };
    Config::from_args(&args).expect("default flags are valid")
}

#[cfg(test)]
mod tests;
