//! The validated run configuration. Every rule about how flags combine lives here: after
//! `Config::from_args` succeeds, the rest of the program never re-checks a flag.

mod aiperf;
mod api;
mod arrival;
pub mod bounds;
pub mod cache_bust;
pub mod convergence;
mod data;
pub mod endpoint_options;
pub mod endpoints;
mod load;
mod load_modes;
mod load_section;
mod measure;
pub mod media;
mod metrics;
mod openai;
mod output;
mod parse;
pub mod rate_series;
pub mod repeats;
mod request_options;
pub mod sessions;
pub mod shard;
pub mod sweep;
pub mod synthesis;
mod target;
pub mod tfserving;
pub mod torchserve;

pub use aiperf::OpenAiWire;
pub use api::{ApiSettings, DynamicGrpcSettings, KserveSettings, LocalSettings, OpenAiSettings};
pub use arrival::RequestCancellation;
pub use data::DataConfig;
pub use load_modes::{LoadModes, PhaseShape, Prefill, UserCentric};
pub use load_section::LoadConfig;
pub use measure::{GoodputLimits, MeasureConfig};
pub use metrics::{Engine, GpuTelemetry, MetricAggregation, MetricSpec, MetricsConfig};
pub use openai::{Endpoint, OpenAiConfig, PromptSource};
pub use output::OutputConfig;
pub use output::{repetition_label, REPORT_CSV_NAME, RESULTS_FILE_NAME};
pub(crate) use parse::whole_range;
use parse::*;
pub use parse::{parse_concurrency_range, parse_headers, parse_shapes};
pub use request_options::{GrpcCompression, ParameterValue, RequestParameter};
pub use target::TargetConfig;
pub mod datasets;
pub mod public_datasets;
pub mod sequence;
mod server_hooks;
pub mod shm;
mod slo;
mod timeline;
mod tls;
mod warm_up;
pub use server_hooks::{ControlCall, Probe, Readiness, ServerHooks};
pub mod workload;
pub use request_options::TritonCApiSettings;
pub use tls::{TlsFile, TlsFlags, TlsSettings};
pub use warm_up::{WarmUp, WarmUpShape};

use std::path::PathBuf;

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

/// The validated settings of one profiling run: a section per box of the path (docs/architecture.md's
/// Config → Target → Dataset → Driver → Windows → Results → Reports), and the command line
/// as given. Only the commands take the whole of it; each box takes its own section.
#[derive(Debug, Clone)]
pub struct Config {
    /// Which server and model, over which API, and how each request travels.
    pub target: TargetConfig,
    /// Where request data comes from and how it is shaped and batched.
    pub data: DataConfig,
    /// The load plan and how the load is sent.
    pub load: LoadConfig,
    /// How windows are taken and judged.
    pub measure: MeasureConfig,
    /// Where the reports go and how much they say.
    pub output: OutputConfig,
    /// The command line after the program's name, header values hidden: what the results
    /// file records so that `inferperf merge` can rebuild the run's settings.
    pub arguments: Vec<String>,
    /// Whose command line it is: AIPerf's defaults filled in what it left out, or
    /// perf_analyzer's (see `cli::Dialect`).
    pub dialect: crate::cli::Dialect,
}

use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

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
        let (load, mut concurrency) = load::parse_load(args)?;
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
        let gpu_telemetry = metrics::parse_gpu_telemetry(args)?;
        let streaming = parse_streaming(args.streaming, protocol, service_kind)?;
        let validation_tolerance = parse_tolerance(args.validation_tolerance)?;
        let llm = parse_llm(args, service_kind, protocol)?;
        let workload = parse_workload(args, service_kind, &load)?;
        let (llm, wire, rankings) = endpoint_options::apply(
            llm,
            lowered.wire.clone(),
            args,
            workload.system_prompt_tokens,
        )?;
        let (sessions, session_concurrency) = sessions::parse(args, service_kind, llm.as_ref())?;
        let pooled = matches!(workload.file, Some((_, workload::FileFormat::RandomPool)));
        let media = media::parse(&args.media, service_kind, llm.as_ref(), &input_data, pooled)?;
        sessions::apply_concurrency(session_concurrency, args, &load, &mut concurrency)?;
        let warm_up = warm_up::parse(args, &load, &concurrency)?;
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
                wire,
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
            target: TargetConfig {
                model_name,
                model_version: args.model_version.trim().to_string(),
                url: urls[0].clone(),
                urls,
                tls,
                api,
                protocol,
                headers,
                request_timeout,
                max_response_bytes,
                grpc_connection_share,
                grpc_compression,
                streaming,
                input_format,
                output_format,
                validation_tolerance,
                server_in_process: false,
                cancellation: arrival::parse_cancellation(args)?,
                hooks: server_hooks::parse(&args.aiperf_server)?,
                connection_per_request: lowered.runtime.connection_per_request,
            },
            data: DataConfig {
                batch_size,
                input_data,
                shapes,
                string_length,
                string_data: args.string_data.clone(),
                input_datatypes,
                workload,
                sessions,
                media,
                rankings,
            },
            load: LoadConfig {
                mode: load,
                concurrency,
                max_concurrency: args.max_concurrency.filter(|&n| n > 0),
                seed: args.seed.unwrap_or(0),
                client_threads,
                send_slack,
                warmup_request_count,
                warm_up,
                request_count: (args.request_count > 0).then_some(args.request_count),
                session_count: args.sessions.conversation_num.filter(|&n| n > 0),
                binary_search: args.binary_search,
                async_mode: args.async_mode,
                shard: shard::parse_shard(args)?,
                sequence: sequence::parse(&args.sequence)?,
                session_concurrency,
                modes: LoadModes::default(),
            },
            measure: MeasureConfig {
                measurement_mode,
                measurement_interval,
                measurement_request_count,
                stability_percentage,
                max_trials,
                percentile,
                latency_threshold_ms,
                slo,
                goodput: lowered.goodput.clone(),
                benchmark_duration: lowered.benchmark_duration,
                benchmark_grace: lowered.benchmark_grace,
                metrics,
                gpu_telemetry,
                repeats: repeats::parse(&args.aiperf_repeats)?,
            },
            output: OutputConfig {
                csv_file: args.csv_file.clone(),
                report_dir,
                results_file,
                profile_export_file,
                per_url_csv: args.per_url_csv.clone(),
                verbose: args.verbose,
                verbose_csv: args.verbose_csv,
                progress: !args.no_progress,
                dashboard_asked: args.aiperf.ui_type.as_deref().map(str::trim) == Some("dashboard"),
                aiperf_export_prefix: lowered.runtime.export_prefix.clone(),
                summary_only: lowered.runtime.summary_only,
            },
            arguments: Vec::new(),
            dialect: args.dialect.clone(),
        };
        let dcgm = match config.measure.gpu_telemetry.as_mut() {
            Some(GpuTelemetry::Dcgm(page)) => Some(page),
            _ => None,
        };
        for metrics in config.measure.metrics.iter_mut().chain(dcgm) {
            if metrics.url.starts_with("https://") {
                metrics.tls = Some(
                    config
                        .target
                        .tls
                        .clone()
                        .unwrap_or_else(TlsSettings::system_default),
                );
            }
        }
        load_modes::apply(&mut config, args)?;
        aiperf::default_artifact_dir(&mut config);
        if args.aiperf_runtime.auto_plot && config.output.report_dir.is_none() {
            config.output.report_dir = config.target.llm().and_then(|l| l.artifact_dir.clone());
        }
        config.check_hooks()?;
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
        config.check_repeats()?;
        config.shard_outputs();
        Ok(config)
    }

    /// Repeated runs repeat levels, on this machine alone.
    fn check_repeats(&self) -> RunResult<()> {
        if !self.measure.repeats.repeated() {
            return Ok(());
        }
        if self.load.mode.timeline().is_some() {
            return Err(RunError::bad_option(
                "--num-profile-runs repeats levels, and a --ramp or --load-steps plan has none: repeat the plan with separate runs, or give levels (--concurrency-range, --request-rate-range).",
            ));
        }
        if self.load.shard.is_some() {
            return Err(RunError::bad_option(
                "--num-profile-runs is not taken with shards (--enable-mpi, --shard): run the sharded profile several times and compare the merged results.",
            ));
        }
        Ok(())
    }

    /// The control calls are HTTP calls on an OpenAI-compatible server.
    fn check_hooks(&self) -> RunResult<()> {
        if self.target.hooks.any() && self.target.service_kind() != ServiceKind::OpenAi {
            return Err(RunError::bad_option(
                "--wait-for-model-timeout, --reset-kv-cache and --server-profiler call an OpenAI-compatible server: add --endpoint-type (or --service-kind openai).",
            ));
        }
        Ok(())
    }

    /// Several URLs need servers reached over the network, and a load the replicas can share.
    fn check_replicas(&self) -> RunResult<()> {
        if self.target.urls.len() < 2 {
            return Ok(());
        }
        if matches!(
            self.target.service_kind(),
            ServiceKind::Local | ServiceKind::TritonCApi
        ) {
            return Err(RunError::bad_option(format!(
                "--service-kind {} runs the models in this process: give a single -u (or none).",
                self.target.service_kind().label().to_ascii_lowercase()
            )));
        }
        if matches!(self.load.mode, LoadMode::Periodic(_)) {
            return Err(RunError::bad_option(
                "--periodic-concurrency-range drives one server: give a single -u.",
            ));
        }
        if self.target.urls.len() > u16::MAX as usize {
            return Err(RunError::bad_option("-u lists more than 65535 servers."));
        }
        Ok(())
    }

    /// `--request-count N`, as perf_analyzer: one count window of exactly N requests, at a
    /// single concurrency, request rate, or over the `--request-intervals` gaps.
    fn check_request_count(&self) -> RunResult<()> {
        let Some(count) = self.load.request_count else {
            return Ok(());
        };
        match &self.load.mode {
            LoadMode::Concurrency => self.check_count_concurrency(count),
            LoadMode::RequestRate { range, .. } => {
                check_count_rate(count, range, self.dialect.is_aiperf())
            }
            LoadMode::Intervals { .. } => Ok(()),
            LoadMode::FixedSchedule => Err(RunError::bad_option(
                "--request-count does not apply to --fixed-schedule, which sends every input-data entry once: drop --request-count.",
            )),
            _ => Ok(()),
        }
    }

    /// AIPerf's `--benchmark-duration`: one window at a single concurrency or request rate.
    fn check_benchmark_duration(&self) -> RunResult<()> {
        if self.measure.benchmark_duration.is_none() {
            return Ok(());
        }
        let single = match &self.load.mode {
            LoadMode::Concurrency => {
                self.load.max_concurrency() == Some(self.load.concurrency.start)
            }
            LoadMode::RequestRate { range, .. } => range.end == range.start,
            // A replay at the trace's timestamps ends at the trace's end or the duration.
            LoadMode::Intervals { .. } | LoadMode::FixedSchedule => true,
            _ => false,
        };
        if !single || self.load.binary_search {
            return Err(RunError::bad_option(
                "--benchmark-duration measures one level: give a single --concurrency N or --request-rate R (no range, ramp, steps or search).",
            ));
        }
        Ok(())
    }

    fn check_count_concurrency(&self, count: u64) -> RunResult<()> {
        if self.load.max_concurrency() != Some(self.load.concurrency.start) {
            return Err(RunError::bad_option(
                "--request-count needs a single concurrency value: pass --concurrency-range N alone.",
            ));
        }
        // AIPerf sends its count whatever the concurrency (10 requests at --concurrency 100).
        if count < self.load.concurrency.start as u64 && !self.dialect.is_aiperf() {
            return Err(RunError::bad_option(format!(
                "--request-count {count} is smaller than the concurrency {}: ask for at least as many requests as are in flight.",
                self.load.concurrency.start
            )));
        }
        Ok(())
    }
}

/// perf_analyzer's rules for `--request-count` with `--request-rate-range`.
fn check_count_rate(count: u64, range: &RateRange, aiperf: bool) -> RunResult<()> {
    if range.end != range.start {
        return Err(RunError::bad_option(
            "--request-count needs a single request rate: pass --request-rate-range R alone.",
        ));
    }
    if (count as f64) < range.start.floor() && !aiperf {
        return Err(RunError::bad_option(format!(
            "--request-count {count} is smaller than the request rate {}: ask for at least a second's worth of requests.",
            format_rate(range.start)
        )));
    }
    Ok(())
}

/// The LLM flags: read for `--service-kind openai` (HTTP only), refused elsewhere.
/// The LLM workload flags: for OpenAI runs only, the trace slice for a fixed schedule only.
fn parse_workload(
    args: &ProfileArgs,
    kind: ServiceKind,
    load: &LoadMode,
) -> RunResult<workload::WorkloadConfig> {
    let workload = workload::WorkloadConfig::parse(args)?;
    if workload.given() && kind != ServiceKind::OpenAi {
        return Err(RunError::bad_option(
            "The LLM workload flags (--custom-dataset-type, --prefix-prompt-length, --shared-system-prompt-length, --fixed-schedule-*-offset, --replay-speedup, --max-context-length) apply to OpenAI-compatible servers: add --service-kind openai (or AIPerf's --endpoint-type).",
        ));
    }
    let reordered = matches!(
        workload.dataset.sampling,
        Some(datasets::Sampling::Random | datasets::Sampling::Shuffle)
    );
    if reordered && *load == LoadMode::FixedSchedule {
        return Err(RunError::bad_option(
            "--dataset-sampling-strategy random or shuffle reorders conversations, and --fixed-schedule sends each once at its timestamp: drop one of them.",
        ));
    }
    let slice = &workload.slice;
    if let Some(flag) = slice.first_flag().filter(|_| workload.file.is_none()) {
        return Err(RunError::bad_option(format!(
            "{flag} shapes the replay of an input file in an AIPerf format: add --input-file FILE --custom-dataset-type TYPE."
        )));
    }
    if (slice.start_ms.is_some() || slice.end_ms.is_some()) && *load != LoadMode::FixedSchedule {
        return Err(RunError::bad_option(
            "--fixed-schedule-start-offset and --fixed-schedule-end-offset pick a slice of a trace to replay: add --fixed-schedule.",
        ));
    }
    Ok(workload)
}

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
    let mut llm = OpenAiConfig::parse(&args.llm)?;
    if args.llm.num_prompts.is_none() {
        llm.num_prompts =
            openai::default_entries(args.sessions.conversation_num, args.request_count);
    }
    if args.streaming && !llm.endpoint.streams() {
        return Err(RunError::bad_option(match llm.endpoint {
            Endpoint::Embeddings => "--streaming does not apply to v1/embeddings (an embedding comes in one piece): drop --streaming.".to_string(),
            other => format!("--streaming does not apply to --endpoint-type {} (its answer comes in one piece): drop --streaming.", other.kind_name()),
        }));
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
