//! The settings of an LLM workload beyond independent prompts (`--custom-dataset-type`,
//! shared prefixes, the slice and speed of a trace replay), checked once: every rule about
//! these flags is here, and the dataset reads only the result.

use std::path::PathBuf;

use super::datasets::DatasetSettings;
use super::synthesis::Synthesis;
use crate::cli::{ProfileArgs, WorkloadArgs};
use inferperf_wire::error::{RunError, RunResult};

/// Largest prefix, system prompt or block, in tokens.
const MOST_TOKENS: u32 = 1_000_000;
/// The slowest and fastest replays.
const MIN_SPEEDUP: f64 = 0.001;
const MAX_SPEEDUP: f64 = 1e6;
/// Most distinct shared prefixes.
const MOST_PREFIXES: u32 = 10_000;

/// The formats of AIPerf's `--custom-dataset-type` inferperf reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    SingleTurn,
    MultiTurn,
    MooncakeTrace,
    ShareGpt,
    InputsJson,
    RandomPool,
    RawPayload,
    BailianTrace,
    BurstGptTrace,
    SagemakerDataCapture,
    /// SPEED-Bench's JSON Lines; the name says which category, if one.
    SpeedBench(&'static str),
}

/// AIPerf's SPEED-Bench types: all rows of a split, or one category's.
const SPEED_BENCH: [&str; 27] = [
    "speed_bench_qualitative",
    "speed_bench_coding",
    "speed_bench_humanities",
    "speed_bench_math",
    "speed_bench_multilingual",
    "speed_bench_qa",
    "speed_bench_rag",
    "speed_bench_reasoning",
    "speed_bench_roleplay",
    "speed_bench_stem",
    "speed_bench_summarization",
    "speed_bench_writing",
    "speed_bench_throughput_1k",
    "speed_bench_throughput_2k",
    "speed_bench_throughput_8k",
    "speed_bench_throughput_16k",
    "speed_bench_throughput_32k",
    "speed_bench_throughput_1k_low_entropy",
    "speed_bench_throughput_1k_mixed",
    "speed_bench_throughput_1k_high_entropy",
    "speed_bench_throughput_2k_low_entropy",
    "speed_bench_throughput_2k_mixed",
    "speed_bench_throughput_2k_high_entropy",
    "speed_bench_throughput_8k_low_entropy",
    "speed_bench_throughput_8k_mixed",
    "speed_bench_throughput_8k_high_entropy",
    "speed_bench_throughput_16k_low_entropy",
];

/// The rest of AIPerf's SPEED-Bench tiers (kept apart so the list above stays short).
const SPEED_BENCH_MORE: [&str; 5] = [
    "speed_bench_throughput_16k_mixed",
    "speed_bench_throughput_16k_high_entropy",
    "speed_bench_throughput_32k_low_entropy",
    "speed_bench_throughput_32k_mixed",
    "speed_bench_throughput_32k_high_entropy",
];

/// AIPerf's formats inferperf does not read, each with why.
const REFUSED_FORMATS: [(&str, &str); 4] = [
    ("baseten_trace", "is a Parquet or Arrow IPC export replayed with Baseten's open-loop timing model, which inferperf does not read: convert it to mooncake_trace lines (timestamp, text_input, output_length)"),
    ("dag_jsonl", "runs conversations that fork and spawn child sessions, which inferperf's sessions do not model: flatten it to multi_turn"),
    ("tracelab", "rebuilds agentic sessions with concurrent subagents from gzipped TraceLab rounds, which inferperf's sessions do not model: convert it to mooncake_trace lines"),
    ("weka_trace", "replays agentic sessions whose subagents run as concurrent child sessions, which inferperf's sessions do not model: convert it to mooncake_trace lines"),
];

impl FileFormat {
    pub const ALL: [FileFormat; 10] = [
        FileFormat::SingleTurn,
        FileFormat::MultiTurn,
        FileFormat::MooncakeTrace,
        FileFormat::ShareGpt,
        FileFormat::InputsJson,
        FileFormat::RandomPool,
        FileFormat::RawPayload,
        FileFormat::BailianTrace,
        FileFormat::BurstGptTrace,
        FileFormat::SagemakerDataCapture,
    ];

    /// AIPerf's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::SingleTurn => "single_turn",
            FileFormat::MultiTurn => "multi_turn",
            FileFormat::MooncakeTrace => "mooncake_trace",
            FileFormat::ShareGpt => "sharegpt",
            FileFormat::InputsJson => "inputs_json",
            FileFormat::RandomPool => "random_pool",
            FileFormat::RawPayload => "raw_payload",
            FileFormat::BailianTrace => "bailian_trace",
            FileFormat::BurstGptTrace => "burst_gpt_trace",
            FileFormat::SagemakerDataCapture => "sagemaker_data_capture",
            FileFormat::SpeedBench(name) => name,
        }
    }

    /// Tokens per hash id when `--isl-block-size` is not given: AIPerf's loader's default
    /// (16 for Bailian's traces, 512 for the others).
    pub fn default_block_size(self) -> u32 {
        match self {
            FileFormat::BailianTrace => 16,
            _ => 512,
        }
    }

    /// Whether the format is one of AIPerf's traces, which `--synthesis-*` rebuilds.
    pub fn is_trace(self) -> bool {
        matches!(
            self,
            FileFormat::MooncakeTrace
                | FileFormat::BailianTrace
                | FileFormat::BurstGptTrace
                | FileFormat::SagemakerDataCapture
        )
    }

    /// Whether `--input-file` may be a folder (random_pool's pools, raw_payload's
    /// sessions, SageMaker's capture files).
    pub fn reads_folders(self) -> bool {
        matches!(
            self,
            FileFormat::RandomPool | FileFormat::RawPayload | FileFormat::SagemakerDataCapture
        )
    }

    /// The SPEED-Bench category a type keeps (`None`: every row of the split).
    pub fn speed_bench_category(self) -> Option<&'static str> {
        let FileFormat::SpeedBench(name) = self else {
            return None;
        };
        let rest = name.trim_start_matches("speed_bench_");
        if rest == "qualitative" {
            return None;
        }
        match rest.strip_prefix("throughput_") {
            Some(tier) => tier.split_once("k_").map(|(_, category)| category),
            None => Some(rest),
        }
    }
}

/// Shared prefixes: `count` prefixes of exactly `tokens` tokens each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedPrefixes {
    pub tokens: u32,
    pub count: u32,
}

/// Which part of a trace is replayed, how fast, and which requests are too long to send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSlice {
    pub start_ms: Option<f64>,
    pub end_ms: Option<f64>,
    /// Timestamps and delays are divided by it (1: as recorded).
    pub speedup: f64,
    pub max_context: Option<u32>,
}

/// The workload settings of the dataset box.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkloadConfig {
    /// `--input-file` in an AIPerf format.
    pub file: Option<(PathBuf, FileFormat)>,
    pub block_size: Option<u32>,
    pub prefixes: Option<SharedPrefixes>,
    pub system_prompt_tokens: Option<u32>,
    pub slice: TraceSlice,
    /// AIPerf's dataset and prompt flags (public datasets, sampling, system prompt, ...).
    pub dataset: DatasetSettings,
    /// How a trace file is rebuilt before it is replayed (`--synthesis-*`).
    pub synthesis: Synthesis,
}

impl WorkloadConfig {
    /// Reads the workload flags of a `profile` command line.
    pub fn parse(profile: &ProfileArgs) -> RunResult<WorkloadConfig> {
        let args = &profile.workload;
        let input_file = profile.llm.input_file.as_ref();
        let format = args
            .custom_dataset_type
            .as_deref()
            .map(parse_format)
            .transpose()?;
        let file = match (format, input_file) {
            (Some(format), Some(path)) => Some((path.clone(), format)),
            (Some(format), None) => {
                return Err(RunError::bad_option(format!(
                    "--custom-dataset-type {} reads --input-file: give the file.",
                    format.name()
                )))
            }
            (None, _) => None,
        };
        let mut dataset =
            DatasetSettings::parse(&args.datasets, profile.sessions.conversation_num)?;
        // A streamed public dataset is read only as far as the run needs.
        if let Some(public) = &mut dataset.public {
            public.rows = super::datasets::streamed_rows(profile);
        }
        let from_elsewhere = input_file.is_some() || dataset.public.is_some();
        if from_elsewhere && args.prefix_prompt_length.is_some_and(|n| n > 0) {
            return Err(RunError::bad_option(
                "--prefix-prompt-length puts shared prefixes before synthetic prompts: drop --input-file (or --public-dataset), or drop the prefix flags.",
            ));
        }
        if matches!(file, Some((_, FileFormat::RandomPool))) {
            dataset.pool_media = pool_media(&profile.media);
        }
        let synthesis = Synthesis::parse(&args.synthesis)?;
        check_synthesis(&synthesis, file.as_ref().map(|(_, format)| *format))?;
        let workload = WorkloadConfig {
            file,
            block_size: tokens(args.isl_block_size, "--isl-block-size")?,
            prefixes: prefixes(args)?,
            system_prompt_tokens: tokens(
                args.shared_system_prompt_length,
                "--shared-system-prompt-length",
            )?,
            slice: slice(args)?.in_rebuilt_time(&synthesis),
            dataset,
            synthesis,
        };
        check_dataset(&workload, profile)?;
        Ok(workload)
    }

    /// Whether any flag of this section was given (they apply to OpenAI runs only).
    pub fn given(&self) -> bool {
        *self != WorkloadConfig::default()
    }
}

impl TraceSlice {
    /// The first of the slice's flags that was given, for messages.
    pub fn first_flag(&self) -> Option<&'static str> {
        [
            (self.start_ms.is_some(), "--fixed-schedule-start-offset"),
            (self.end_ms.is_some(), "--fixed-schedule-end-offset"),
            (self.speedup != 1.0, "--replay-speedup"),
            (self.max_context.is_some(), "--max-context-length"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }
}

impl TraceSlice {
    /// The slice's offsets, given in the trace's own time, in the time of the trace
    /// `synthesis` rebuilds (AIPerf slices before it rebuilds).
    fn in_rebuilt_time(self, synthesis: &Synthesis) -> TraceSlice {
        let scaled = |ms: Option<f64>| ms.map(|ms| (ms / synthesis.speedup).trunc());
        TraceSlice {
            start_ms: scaled(self.start_ms),
            end_ms: scaled(self.end_ms),
            ..self
        }
    }
}

impl Default for TraceSlice {
    /// The whole trace at its own speed.
    fn default() -> TraceSlice {
        TraceSlice {
            start_ms: None,
            end_ms: None,
            speedup: 1.0,
            max_context: None,
        }
    }
}

fn parse_format(text: &str) -> RunResult<FileFormat> {
    let key = text.trim().replace('-', "_");
    if let Some(format) = FileFormat::ALL.into_iter().find(|f| f.name() == key) {
        return Ok(format);
    }
    if let Some(name) = SPEED_BENCH
        .iter()
        .chain(&SPEED_BENCH_MORE)
        .find(|n| **n == key)
    {
        return Ok(FileFormat::SpeedBench(name));
    }
    if let Some((name, why)) = REFUSED_FORMATS.iter().find(|(n, _)| *n == key) {
        return Err(RunError::bad_option(format!(
            "--custom-dataset-type {name} {why}."
        )));
    }
    let names: Vec<&str> = FileFormat::ALL.iter().map(|f| f.name()).collect();
    Err(RunError::bad_option(format!(
        "--custom-dataset-type '{text}' is not a format inferperf reads: use {}, or speed_bench_*.",
        names.join(", ")
    )))
}

fn tokens(value: Option<u32>, flag: &str) -> RunResult<Option<u32>> {
    match value {
        Some(n) if n == 0 || n > MOST_TOKENS => Err(RunError::bad_option(format!(
            "{flag} {n} must be between 1 and {MOST_TOKENS} tokens."
        ))),
        other => Ok(other),
    }
}

fn prefixes(args: &WorkloadArgs) -> RunResult<Option<SharedPrefixes>> {
    let length = args.prefix_prompt_length.filter(|&n| n > 0);
    let count = args.num_prefix_prompts.filter(|&n| n > 0);
    let prefixes = match (length, count) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(RunError::bad_option(
                "--prefix-prompt-length needs --num-prefix-prompts K: how many distinct prefixes prompts draw from.",
            ))
        }
        (None, Some(_)) => {
            return Err(RunError::bad_option(
                "--num-prefix-prompts needs --prefix-prompt-length L: the tokens of each prefix.",
            ))
        }
        (Some(tokens), Some(count)) => SharedPrefixes { tokens, count },
    };
    tokens(Some(prefixes.tokens), "--prefix-prompt-length")?;
    if prefixes.count > MOST_PREFIXES {
        return Err(RunError::bad_option(format!(
            "--num-prefix-prompts {} must be at most {MOST_PREFIXES}.",
            prefixes.count
        )));
    }
    if args.shared_system_prompt_length.is_some() {
        return Err(RunError::bad_option(
            "--shared-system-prompt-length and --prefix-prompt-length both put a shared start before prompts: give one of them, as AIPerf takes one.",
        ));
    }
    Ok(Some(prefixes))
}

fn slice(args: &WorkloadArgs) -> RunResult<TraceSlice> {
    let offset = |value: Option<f64>, flag: &str| -> RunResult<Option<f64>> {
        value
            .map(|ms| inferperf_wire::number::within(flag, ms, 0.0, 1e12, "ms"))
            .transpose()
    };
    let start_ms = offset(
        args.fixed_schedule_start_offset,
        "--fixed-schedule-start-offset",
    )?;
    let end_ms = offset(
        args.fixed_schedule_end_offset,
        "--fixed-schedule-end-offset",
    )?;
    if let (Some(start), Some(end)) = (start_ms, end_ms) {
        if start > end {
            return Err(RunError::bad_option(format!(
                "--fixed-schedule-start-offset {start} is after --fixed-schedule-end-offset {end}: the slice would be empty."
            )));
        }
    }
    if args.fixed_schedule_auto_offset && start_ms.is_some() {
        return Err(RunError::bad_option(
            "--fixed-schedule-auto-offset and --fixed-schedule-start-offset both say where the replay starts: give one.",
        ));
    }
    let speedup = match args.replay_speedup {
        Some(x) if !(MIN_SPEEDUP..=MAX_SPEEDUP).contains(&x) => {
            return Err(RunError::bad_option(format!(
                "--replay-speedup {x} must be a factor from {MIN_SPEEDUP} to {MAX_SPEEDUP} (2 replays twice as fast)."
            )))
        }
        Some(x) => x,
        None => 1.0,
    };
    Ok(TraceSlice {
        start_ms,
        end_ms,
        speedup,
        max_context: tokens(args.max_context_length, "--max-context-length")?,
    })
}

/// Refuses `--synthesis-*` where there is no trace to rebuild (AIPerf ignores them there).
fn check_synthesis(synthesis: &Synthesis, file: Option<FileFormat>) -> RunResult<()> {
    let Some(flag) = synthesis.first_flag() else {
        return Ok(());
    };
    let what = match file {
        Some(format) if format.is_trace() => return Ok(()),
        Some(format) => format!("--custom-dataset-type {} is not a trace", format.name()),
        None => "there is no --input-file".to_string(),
    };
    Err(RunError::bad_option(format!(
        "{flag} rebuilds a trace file, and {what}: give --input-file FILE --custom-dataset-type mooncake_trace (or bailian_trace, burst_gpt_trace, sagemaker_data_capture), or drop {flag}."
    )))
}

/// The media batch sizes typed, which a random_pool draws per request.
fn pool_media(media: &crate::cli::MediaArgs) -> super::datasets::PoolMedia {
    super::datasets::PoolMedia {
        images: media.image_batch_size,
        audios: media.audio_batch_size,
        videos: media.video_batch_size,
    }
}

/// The rules between AIPerf's dataset flags and the other flags of a run.
fn check_dataset(workload: &WorkloadConfig, profile: &ProfileArgs) -> RunResult<()> {
    let d = &workload.dataset;
    let input = profile.llm.input_file.is_some();
    if d.public.is_some() && input {
        return Err(RunError::bad_option(
            "--public-dataset and --input-file both give the prompts: give one.",
        ));
    }
    let from_data = input || d.public.is_some();
    let pool = matches!(workload.file, Some((_, FileFormat::RandomPool)));
    for (flag, given) in d.synthetic_only() {
        let pooled = flag == "--prompt-batch-size" && pool;
        if given && from_data && !pooled {
            return Err(RunError::bad_option(format!(
                "{flag} shapes synthetic prompts, and the prompts come from a dataset here: drop {flag}, or drop --input-file/--public-dataset (AIPerf refuses the pair too)."
            )));
        }
    }
    if !from_data {
        let flag = match (d.ignore_trace_delays, d.delay_cap_ms) {
            (true, _) => Some("--ignore-trace-delays"),
            (false, Some(_)) => Some("--inter-turn-delay-cap-seconds"),
            _ => None,
        };
        if let Some(flag) = flag {
            return Err(RunError::bad_option(format!(
                "{flag} applies to the recorded delays of a dataset: add --input-file FILE --custom-dataset-type TYPE (or --public-dataset)."
            )));
        }
    }
    if d.seq_dist.is_some() && d.range_ratio.is_some() {
        return Err(RunError::bad_option(
            "--seq-dist and --random-range-ratio both draw the lengths: give one.",
        ));
    }
    let typed = profile.llm.synthetic_input_tokens_mean.is_some()
        && profile.llm.output_tokens_mean.is_some();
    if d.range_ratio.is_some() && !typed {
        return Err(RunError::bad_option(
            "--random-range-ratio draws lengths around --isl and --osl: give both.",
        ));
    }
    check_prompts(workload, profile.llm.endpoint.as_deref())
}

/// The system and context prompts: one shared start at most, for the APIs that take them.
fn check_prompts(workload: &WorkloadConfig, endpoint: Option<&str>) -> RunResult<()> {
    let d = &workload.dataset;
    let prefixed = workload.prefixes.is_some();
    if d.system_prompt.is_some() && (prefixed || workload.system_prompt_tokens.is_some()) {
        return Err(RunError::bad_option(
            "--system-prompt and --shared-system-prompt-length (or --prefix-prompt-length) both put a shared start before prompts: give one, as AIPerf takes one.",
        ));
    }
    if d.user_context_tokens.is_some() && prefixed {
        return Err(RunError::bad_option(
            "--user-context-prompt-length and --prefix-prompt-length both put a start before prompts: give one, as AIPerf takes one.",
        ));
    }
    let chat_like = matches!(
        endpoint.map(|e| e.trim().trim_matches('/')),
        None | Some("v1/chat/completions" | "chat" | "v1/responses" | "responses")
    );
    let flag = match (&d.system_prompt, d.user_context_tokens) {
        (Some(_), _) => "--system-prompt",
        (None, Some(_)) => "--user-context-prompt-length",
        (None, None) => return Ok(()),
    };
    if !chat_like {
        return Err(RunError::bad_option(format!(
            "{flag} sends a message of its own, which only chat and responses requests carry: use --endpoint-type chat or responses, or drop {flag}."
        )));
    }
    Ok(())
}
