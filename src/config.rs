//! The validated run configuration. Every rule about how flags combine lives here: after
//! `Config::from_args` succeeds, the rest of the program never re-checks a flag.

mod aiperf;
mod api;
pub mod bounds;
pub mod cache_bust;
pub mod convergence;
mod data;
pub mod endpoint_options;
pub mod endpoints;
mod load;
mod measure;
pub mod media;
mod metrics;
mod openai;
mod output;
mod parse;
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
pub use data::DataConfig;
pub use load::aiperf_modes::{LoadModes, PhaseShape, Prefill, UserCentric};
pub use load::arrival::RequestCancellation;
pub use load::rate_series;
pub use load::LoadConfig;
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
pub use crate::apis::{Capabilities, ServerStatistics, ServiceKind, Streaming, SERVICE_KINDS};
mod server_hooks;
pub mod shm;
mod slo;
mod tls;
pub use server_hooks::{ControlCall, Probe, Readiness, ServerHooks};
pub mod workload;
pub use load::warm_up::{WarmUp, WarmUpShape};
pub use request_options::TritonCApiSettings;
pub use tls::{TlsFile, TlsFlags, TlsSettings};

use std::path::PathBuf;

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

pub use load::levels::{
    format_rate, ArrivalPattern, LoadLevel, LoadMode, PeriodicRange, RateRange,
    DEFAULT_REQUEST_PERIOD,
};
pub use load::timeline::{Segment, Timeline, TimelineKind};
pub use slo::{
    parse_slo, SloCondition, SloFigure, SloMetric, LLM_PERCENTILES, STANDARD_PERCENTILES,
};

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
        let own = target::OwnFlags::parse(args)?;
        let (service_kind, protocol) = (own.kind, own.protocol);
        let (mode, concurrency) = load::levels::parse_load(args)?;
        let output = OutputConfig::parse(args, &lowered, &mode)?;
        // The LLM flags shape the target's API and the dataset both: read once, here.
        let workload = data::parse_workload(args, service_kind, &mode)?;
        let (llm, wire, rankings) = endpoint_options::apply(
            target::parse_llm(args, service_kind, protocol)?,
            lowered.wire.clone(),
            args,
            workload.system_prompt_tokens,
        )?;
        let target = TargetConfig::parse(args, &lowered, own, llm, wire)?;
        let (data, session_concurrency) =
            DataConfig::parse(args, service_kind, workload, rankings, target.llm())?;
        let measure =
            MeasureConfig::parse(args, &lowered.measure, service_kind, target.tls.as_ref())?;
        let load = LoadConfig::parse(args, mode, concurrency, session_concurrency)?;
        let mut config = Config {
            target,
            data,
            load,
            measure,
            output,
            arguments: Vec::new(),
            dialect: args.dialect.clone(),
        };
        config.finish(args)?;
        Ok(config)
    }

    /// What needs the sections together: AIPerf's load modes, the artifacts' folder, and the
    /// checks of flags from different sections that do not combine.
    fn finish(&mut self, args: &ProfileArgs) -> RunResult<()> {
        load::aiperf_modes::apply(self, args)?;
        aiperf::default_artifact_dir(self);
        if args.aiperf_runtime.auto_plot && self.output.report_dir.is_none() {
            self.output.report_dir = self.target.llm().and_then(|l| l.artifact_dir.clone());
        }
        self.check_hooks()?;
        self.check_request_count()?;
        self.check_benchmark_duration()?;
        self.check_request_parameters()?;
        self.check_dynamic_grpc()?;
        self.check_periodic()?;
        self.check_search()?;
        self.check_timeline()?;
        self.check_llm_slo()?;
        self.check_shard()?;
        self.check_replicas()?;
        self.check_sequence_ids()?;
        self.check_repeats()?;
        self.shard_outputs();
        Ok(())
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
        if self.target.service_kind().in_process() {
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
