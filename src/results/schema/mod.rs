//! The types of `results.json`, one struct per object of the file, so that what is written
//! and what is read back are the same definition. docs/results.schema.json describes every
//! field for readers in other languages; a test holds the two together. The rules of the
//! format: times are nanoseconds in distributions and seconds (`_s`) or microseconds (`_us`)
//! where the name says so; offsets are from the run's start; a field that does not apply is
//! `null`. Adding a field keeps `schema_version` (readers ignore fields they do not know);
//! removing, renaming or changing the meaning of one raises it.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::measure::level::LoadLevel;
use crate::measure::server::engine_figures::{CountCheck, EngineFigures};
use crate::measure::server::gpu_figures::GpuTelemetry;

mod repetitions;
mod settings;

pub use repetitions::*;
pub use settings::*;

/// The version of the layout this inferperf writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    pub schema_version: u32,
    pub tool: Tool,
    /// When the run started and ended, RFC 3339 in UTC; `ended_at` is null while it runs.
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_s: Option<f64>,
    /// True once the run ended as asked; false while it goes on (the file is rewritten after
    /// each level), and for a run ended by an error (`error`) or Ctrl-C (`interrupted`).
    pub finished: bool,
    /// The run was cut short with Ctrl-C; the levels finished until then are here.
    pub interrupted: bool,
    /// The error that ended the run, if one did.
    pub error: Option<String>,
    pub host: Host,
    pub settings: Settings,
    /// The model as the server described it (null when the run failed before that).
    pub model: Option<ModelRecord>,
    /// The levels in the order measured.
    pub levels: Vec<LevelRecord>,
    /// With `--slo` or `--binary-search`: the index in `levels` of the knee, the stable
    /// level of highest throughput that met every condition.
    pub knee: Option<usize>,
    /// The per-second buckets of a `--ramp` / `--load-steps` run.
    pub timeline: Option<TimelineRecord>,
    /// `inferperf merge`: the results files merged into this one, in shard order; empty
    /// for a run measured by one process.
    #[serde(default)]
    pub merged_from: Vec<String>,
    /// A shard under MPI: this host's clock minus rank 0's in seconds, as measured at the
    /// start (`started_at` and every window's offsets are on this host's clock).
    #[serde(default)]
    pub clock_offset_s: Option<f64>,
    /// `--num-profile-runs`: every profile run and each figure's interval over them; the
    /// file's `levels` are then the first run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<Repetitions>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// The machine the client ran on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub cores: usize,
    pub os: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    pub name: String,
    pub version: String,
    pub platform: String,
    pub inputs: Vec<TensorRecord>,
    pub outputs: Vec<TensorRecord>,
    /// Null when the server has no model configuration to tell.
    pub max_batch_size: Option<u32>,
    pub scheduler: String,
    pub decoupled: bool,
    pub response_cache: bool,
    pub composing_models: Vec<String>,
    pub has_config: bool,
    pub server_extensions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorRecord {
    pub name: String,
    pub datatype: String,
    pub shape: Vec<i64>,
}

/// One load level: every window measured, the merged ones reported, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelRecord {
    pub load: LevelLoad,
    pub end: LevelEndRecord,
    /// Why it ended so, in one sentence with the figures.
    pub why: String,
    /// Whether the reported figures come from a stable measurement.
    pub stable: bool,
    pub notes: Vec<String>,
    pub windows: Vec<WindowRecord>,
    /// Indices in `windows` of the windows merged into `merged`.
    pub merged_windows: Vec<usize>,
    pub merged: WindowRecord,
    /// AIPerf's `--slice-duration`, s, and the measurement's slices, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<WindowRecord>,
}

/// The load of a level: `{"concurrency": 4}` or `{"request_rate": 250.0}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelLoad {
    Concurrency(u32),
    RequestRate(f64),
}

impl From<LoadLevel> for LevelLoad {
    fn from(level: LoadLevel) -> LevelLoad {
        match level {
            LoadLevel::Concurrency(c) => LevelLoad::Concurrency(c),
            LoadLevel::Rate(rate) => LevelLoad::RequestRate(rate),
        }
    }
}

impl From<LevelLoad> for LoadLevel {
    fn from(load: LevelLoad) -> LoadLevel {
        match load {
            LevelLoad::Concurrency(c) => LoadLevel::Concurrency(c),
            LevelLoad::RequestRate(rate) => LoadLevel::Rate(rate),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelEndRecord {
    Stable,
    Unstable,
    SingleWindow,
    OverLatencyLimit,
    MissedSlo,
    Interrupted,
}

/// One window (or several merged): counts, rates, errors, distributions, client health,
/// and the server's side when known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRecord {
    /// Offsets from the run's start, s (null when unknown).
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    /// The measured length, s: what rates divide by (merged: the sum).
    pub duration_s: f64,
    /// How many windows this one merges.
    pub windows: u32,
    pub batch_size: u32,
    pub ok: u64,
    pub failed: u64,
    pub completed: u64,
    pub sent: u64,
    /// Successful inferences per second (requests × batch size).
    pub throughput: f64,
    pub request_throughput: f64,
    pub response_throughput: f64,
    /// A sequence model's run: sequences whose last request succeeded in the window, and
    /// their rate (perf_analyzer's sequence_per_sec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences_ended: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_throughput: Option<f64>,
    pub send_rate: f64,
    pub error_rate: f64,
    pub errors: Vec<ErrorRecord>,
    /// Requests the client closed on purpose (`--request-cancellation-rate`), counted
    /// apart from `ok` and `failed` (absent: none).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub cancelled: u64,
    pub latency: DistributionRecord,
    pub service: DistributionRecord,
    pub first_response: DistributionRecord,
    pub inter_response: DistributionRecord,
    pub responses: DistributionRecord,
    pub send_lag: DistributionRecord,
    pub client: ClientRecord,
    pub server: Option<ServerRecord>,
    pub metrics: Option<MetricsRecord>,
    /// What the serving engine did over the window by its own metrics (`--server-metrics`;
    /// absent without), computed from `metrics`' `engine:` series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineRecord>,
    /// The GPUs over the window (`--gpu-telemetry`; absent without), computed from
    /// `metrics`' `gpu:` series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_telemetry: Option<GpuTelemetry>,
    pub tokens: Option<TokensRecord>,
    /// A multi-turn sessions run's figures by turn number (absent for other runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<TurnsRecord>,
    /// Each `-u` server's share when the run spread its load over several (absent with one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaRecord>,
}

/// A sessions run's figures by turn number, and the turns not sent because an earlier
/// turn of their session failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnsRecord {
    pub by_turn: Vec<TurnRecord>,
    pub not_sent: u64,
}

/// The turns of one place in their sessions (turn 1, 2, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// The turn's number in its session, from 1.
    pub turn: u16,
    pub ok: u64,
    pub failed: u64,
    /// Time to first token of the successful turns (ns).
    pub first_response: DistributionRecord,
    /// Input tokens of the successful turns: the history sent and the prompt.
    pub input_tokens: DistributionRecord,
}

/// One `-u` server's share of a window: its requests, throughput and latency (from the
/// scheduled send, as the window's `latency`). Rates divide by the window's `duration_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaRecord {
    /// `host:port` as given to -u.
    pub url: String,
    pub ok: u64,
    pub failed: u64,
    /// Successful inferences per second (requests × batch size).
    pub throughput: f64,
    pub latency: DistributionRecord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    /// As the console prints it: `HTTP 503`, `bad response (missing output)`.
    pub kind: String,
    pub class: String,
    /// The HTTP status or gRPC code, for those classes.
    pub code: Option<i64>,
    pub count: u64,
    pub first_note: Option<String>,
}

/// What the client itself cost and how well it kept its schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientRecord {
    pub cpu_s: f64,
    pub cpu_cores: f64,
    pub cpu_us_per_request: Option<f64>,
    pub late_sends: u64,
    pub late_share: f64,
    pub max_concurrency_waits: u64,
    pub max_concurrency_wait_s: f64,
    pub send_ns_sum: u64,
    pub receive_ns_sum: u64,
}

/// The values of one figure: exact count, sum and extremes, the percentiles reported, and
/// the HDR histogram (HdrHistogram's V2 compressed format, base64) for any other percentile
/// and for merging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistributionRecord {
    /// `ns`, `count` or `milli_tokens_per_s`.
    pub unit: String,
    pub count: u64,
    pub sum: u64,
    pub sum_of_squares: f64,
    pub mean: f64,
    pub std: f64,
    pub min: u64,
    pub max: u64,
    pub percentiles: Percentiles,
    pub histogram: Option<String>,
}

/// Percentile → value, written `{"p50": …, "p99.9": …}` in ascending order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Percentiles(pub Vec<(f64, f64)>);

impl Percentiles {
    /// The value at `p`, when it was written.
    pub fn get(&self, p: f64) -> Option<f64> {
        self.0.iter().find(|(q, _)| *q == p).map(|(_, v)| *v)
    }
}

impl Serialize for Percentiles {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (p, value) in &self.0 {
            map.serialize_entry(&format!("p{p}"), value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Percentiles {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, f64>::deserialize(deserializer)?;
        let mut points = Vec::with_capacity(map.len());
        for (key, value) in map {
            let p = key
                .strip_prefix('p')
                .and_then(|p| p.parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p < 100.0)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("'{key}' is not a percentile such as p99.9"))
                })?;
            points.push((p, value));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(Percentiles(points))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub model: CountersRecord,
    pub composing: Vec<CountersRecord>,
    /// The composing models are a BLS model's calls, inside its compute.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bls: bool,
    pub breakdown_us: BreakdownRecord,
    /// The whole server's answers by status class, where the server counts them only for
    /// all models together (TorchServe's `Requests2XX/4XX/5XX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<AnswerCountsRecord>,
}

/// Answers by HTTP status class over the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerCountsRecord {
    pub status_2xx: u64,
    pub status_4xx: u64,
    pub status_5xx: u64,
}

/// The statistics extension's counters of one model over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CountersRecord {
    pub name: String,
    pub version: String,
    pub inference_count: u64,
    pub execution_count: u64,
    pub success: TimedRecord,
    pub fail: TimedRecord,
    pub queue: TimedRecord,
    pub compute_input: TimedRecord,
    pub compute_infer: TimedRecord,
    pub compute_output: TimedRecord,
    pub cache_hit: TimedRecord,
    pub cache_miss: TimedRecord,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimedRecord {
    pub count: u64,
    pub ns: u64,
}

/// Per-request averages of where the server spent its time, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BreakdownRecord {
    pub request: f64,
    pub queue: f64,
    pub compute_input: f64,
    pub compute_infer: f64,
    pub compute_output: f64,
    pub cache_hit: f64,
    pub cache_miss: f64,
    pub overhead: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricsRecord {
    pub scrapes: u64,
    pub failed_scrapes: u64,
    /// The longest a boundary's page was read after the boundary.
    #[serde(default)]
    pub read_late_s: f64,
    pub last_error: Option<String>,
    pub series: BTreeMap<String, SeriesRecord>,
}

/// The engine's figures of a window and its counts beside the client's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineRecord {
    #[serde(flatten)]
    pub figures: EngineFigures,
    pub counts: Vec<CountCheck>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesRecord {
    pub count: u64,
    pub sum: f64,
    pub max: f64,
    pub first: f64,
    pub increase: f64,
    pub seconds: f64,
    pub avg: Option<f64>,
    pub rate: Option<f64>,
}

/// The figures of text generation (LLM runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokensRecord {
    pub output_tokens: DistributionRecord,
    pub input_tokens: DistributionRecord,
    pub second_token: DistributionRecord,
    pub inter_token: DistributionRecord,
    pub per_user_throughput: DistributionRecord,
    pub http_connecting: DistributionRecord,
    pub http_sending: DistributionRecord,
    pub http_waiting: DistributionRecord,
    pub http_receiving: DistributionRecord,
    pub output_token_throughput: f64,
    pub goodput: f64,
    pub good: u64,
    pub counted_by_usage: u64,
    pub counted_by_tokenizer: u64,
    pub not_counted: u64,
    pub unstreamed: u64,
    pub reasoning_tokens: DistributionRecord,
    pub content_tokens: DistributionRecord,
    pub first_output: DistributionRecord,
    pub usage_input_tokens: DistributionRecord,
    /// Prompt tokens the server served from its cache, per request that said (absent in
    /// files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cached_tokens: Option<DistributionRecord>,
    pub usage_prompt_diff: DistributionRecord,
    pub usage_completion_diff: DistributionRecord,
    pub osl_mismatch: u64,
    pub osl_mismatch_diff: DistributionRecord,
    pub asked_tokens: u64,
    pub asked_produced: u64,
    pub coalesced: u64,
    /// What counted the tokens.
    #[serde(default)]
    pub counted_with: Option<String>,
}

impl TokensRecord {
    /// Whether any request generated text (embeddings and rankings count input tokens only).
    pub fn generates(&self) -> bool {
        self.counted_by_usage + self.counted_by_tokenizer + self.not_counted > 0
    }
}

/// A `--ramp` / `--load-steps` run: a bucket per second, and all of them merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineRecord {
    pub kind: String,
    pub buckets: Vec<BucketRecord>,
    /// Every bucket merged (null until the run ends).
    pub total: Option<WindowRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketRecord {
    /// Start of the bucket from the start of the plan, s.
    pub plan_offset_s: f64,
    /// The plan's load averaged over the bucket (0 after its end).
    pub target: f64,
    pub after_end: bool,
    pub window: WindowRecord,
}

/// A time as RFC 3339 in UTC with microseconds: `2026-11-24T00:06:12.567205Z`.
pub fn rfc3339(at: SystemTime) -> String {
    let at = at.max(UNIX_EPOCH);
    humantime::format_rfc3339_micros(at).to_string()
}

/// A count left out of the file when it is 0.
fn is_zero_count(n: &u64) -> bool {
    *n == 0
}
