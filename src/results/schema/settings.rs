//! The `settings` object of `results.json`: every flag that shaped what was measured and
//! how it was reported, one struct per object, as the reports read them back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The run's settings: every flag that shapes what was measured. `-H` headers appear by
/// name only (a value may be a credential).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub model_name: String,
    pub model_version: String,
    /// The first (usually only) `-u` server.
    pub url: String,
    /// Every `-u` server in order, when the run spread its load over several.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    pub service_kind: String,
    pub protocol: String,
    pub local_models: Vec<String>,
    pub batch_size: u32,
    pub load: LoadSettings,
    pub max_concurrency: Option<u32>,
    pub seed: u64,
    pub measurement_mode: String,
    pub measurement_interval_ms: u64,
    pub measurement_request_count: u64,
    pub stability_percentage: f64,
    pub max_trials: u32,
    pub percentile: Option<f64>,
    pub latency_threshold_ms: Option<f64>,
    pub binary_search: bool,
    pub slo: Vec<String>,
    /// AIPerf's `--goodput` pairs as given (`time_to_first_token:370`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goodput: Vec<String>,
    pub request_count: Option<u64>,
    pub warmup_request_count: u64,
    pub input_data: InputDataSettings,
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub string_length: usize,
    pub string_data: Option<String>,
    pub input_tensor_format: Option<String>,
    pub output_tensor_format: Option<String>,
    pub input_datatypes: BTreeMap<String, String>,
    pub header_names: Vec<String>,
    pub streaming: bool,
    pub validation_tolerance: f64,
    pub request_timeout_s: f64,
    pub client_threads: usize,
    /// `--send-slack` in µs (absent in files of versions before it).
    #[serde(default)]
    pub send_slack_us: u64,
    pub grpc_connection_share: usize,
    pub metrics: Option<MetricsSettings>,
    /// `--gpu-telemetry`: the DCGM exporter's URL, or `nvml`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_telemetry: Option<String>,
    pub llm: Option<LlmSettings>,
    /// The percentiles the console and CSV report, ascending.
    pub reported_percentiles: Vec<f64>,
    pub csv_files: Vec<String>,
    /// This process's part of a sharded run (`--shard`, MPI, an Indexed Job).
    #[serde(default)]
    pub shard: Option<ShardRecord>,
    /// TLS to the server (null: plain text).
    #[serde(default)]
    pub tls: Option<TlsRecord>,
    /// `--shared-memory` (`none` or `system`; absent in files written before it existed).
    #[serde(default)]
    pub shared_memory: Option<String>,
    /// `--output-shared-memory-size`: bytes of each output's region per batch item.
    #[serde(default)]
    pub output_shared_memory_size: Option<u64>,
    /// The command line after the program's name, `-H` values hidden as `Name: <hidden>`:
    /// what `inferperf merge` rebuilds the run's settings from.
    #[serde(default)]
    pub arguments: Vec<String>,
    /// Whose command line the run's was, and so whose defaults filled in what it left out
    /// (absent in files written before it: perf_analyzer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<CommandLineRecord>,
    /// `--benchmark-duration` in ms: each level is one window this long (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_duration_ms: Option<u64>,
    /// `--grpc-method` of a `dynamic_grpc` run (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_method: Option<String>,
    /// The server ran in the client's process (`inferperf demo`), so the process's CPU is
    /// theirs together (absent when it did not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_in_process: bool,
    /// `--request-cancellation-rate` and `--request-cancellation-delay` (absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_cancellation: Option<CancellationRecord>,
    /// Where the reports went and how much they say, beyond `csv_files` (absent when no
    /// such flag was given): what the reports are rendered from, with the rest of these
    /// settings, so that a run merged from its shards is reported as a run measured whole.
    #[serde(default, skip_serializing_if = "OutputsRecord::is_empty")]
    pub outputs: OutputsRecord,
}

/// The report flags of a run, each absent when not given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputsRecord {
    /// `-v`, once or more.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verbose: u8,
    /// `--verbose-csv`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verbose_csv: bool,
    /// `--report-dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_dir: Option<String>,
    /// `--results-file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results_file: Option<String>,
    /// `--per-url-csv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_url_csv: Option<String>,
    /// `--profile-export-file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_export_file: Option<String>,
    /// AIPerf's `--profile-export-prefix`: the base name of its files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aiperf_export_prefix: Option<String>,
    /// AIPerf's `--export-level summary`: no per-request file among the artifacts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary_only: bool,
}

impl OutputsRecord {
    /// No report flag was given.
    pub fn is_empty(&self) -> bool {
        *self == OutputsRecord::default()
    }
}

fn is_zero(n: &u8) -> bool {
    *n == 0
}

/// How the run's TLS verified the server and which identity it showed. Paths only: no
/// certificate or key content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsRecord {
    /// The file of trusted authorities; null: the system's roots.
    pub ca_file: Option<String>,
    /// The client certificate shown (mTLS); null: none.
    pub client_certificate_file: Option<String>,
    /// false: `--ssl-https-verify-peer 0`, any certificate accepted.
    pub verify_peer: bool,
    /// false: `--ssl-https-verify-host 0`, the certificate's name not checked.
    pub verify_host: bool,
    /// `--ssl-target-name`: the name checked instead of the host.
    pub target_name: Option<String>,
}

/// Which shard of how many a results file holds, and what said so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub index: u32,
    pub count: u32,
    /// `flag`, `mpi` or `kubernetes`.
    pub source: String,
    /// `--start-at`, RFC 3339, when given.
    pub start_at: Option<String>,
}

/// The requests the client cancelled on purpose: the percent picked, and the seconds from
/// the send to the cancellation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancellationRecord {
    pub rate_percent: f64,
    pub delay_s: f64,
}

/// Whose command line a run's was: `aiperf` when it named a flag only AIPerf has and none
/// only perf_analyzer has (`because`: the first such flag), else `perf_analyzer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandLineRecord {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub because: Option<String>,
}

impl CommandLineRecord {
    /// Whether AIPerf's defaults applied.
    pub fn is_aiperf(&self) -> bool {
        self.tool == "aiperf"
    }
}

/// The load the run applied, by mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LoadSettings {
    /// `--concurrency-range start:end:step` (end 0: until `-l` or `--slo` stops it).
    Concurrency {
        start: u32,
        end: u32,
        step: u32,
    },
    RequestRate {
        start: f64,
        end: f64,
        step: f64,
        distribution: String,
        /// Gamma's shape (`--arrival-smoothness`), with the gamma distribution.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arrival_smoothness: Option<f64>,
    },
    /// `--request-intervals`: the gaps' count and the rate they make.
    Intervals {
        count: usize,
        rate: f64,
    },
    FixedSchedule,
    /// `--periodic-concurrency-range` with `--request-period`.
    Periodic {
        start: u32,
        end: u32,
        step: u32,
        request_period: u32,
    },
    /// `--ramp` / `--load-steps`: the plan's segments.
    Timeline {
        kind: String,
        distribution: String,
        /// Gamma's shape (`--arrival-smoothness`), with the gamma distribution.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arrival_smoothness: Option<f64>,
        segments: Vec<SegmentRecord>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentRecord {
    pub from: f64,
    pub to: f64,
    pub duration_s: f64,
}

/// `--input-data`: `random`, `zero`, `json` (the files) or `directory`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputDataSettings {
    pub kind: String,
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsSettings {
    pub url: String,
    /// The other pages of `--server-metrics`, whose series were added to `url`'s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_urls: Vec<String>,
    pub interval_ms: u64,
    pub standard: bool,
    pub metrics: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmSettings {
    pub endpoint: String,
    pub input_tokens_mean: u32,
    pub input_tokens_stddev: f64,
    pub output_tokens_mean: Option<u32>,
    pub output_tokens_stddev: f64,
    pub output_tokens_deterministic: bool,
    pub extra_inputs: Vec<String>,
    pub prompt_source: String,
    pub num_prompts: usize,
    pub artifact_dir: Option<String>,
    /// `--tokenizer`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// AIPerf's name of the endpoint type, when `endpoint` (its path) does not name it: a
    /// path several types share, or none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_type: Option<String>,
}
