//! The settings of an LLM workload beyond independent prompts (`--custom-dataset-type`,
//! shared prefixes, the slice and speed of a trace replay), checked once: every rule about
//! these flags is here, and the dataset reads only the result.

use std::path::PathBuf;

use crate::cli::WorkloadArgs;
use crate::error::{RunError, RunResult};

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
}

impl FileFormat {
    pub const ALL: [FileFormat; 5] = [
        FileFormat::SingleTurn,
        FileFormat::MultiTurn,
        FileFormat::MooncakeTrace,
        FileFormat::ShareGpt,
        FileFormat::InputsJson,
    ];

    /// AIPerf's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::SingleTurn => "single_turn",
            FileFormat::MultiTurn => "multi_turn",
            FileFormat::MooncakeTrace => "mooncake_trace",
            FileFormat::ShareGpt => "sharegpt",
            FileFormat::InputsJson => "inputs_json",
        }
    }

    /// Tokens per hash id when `--isl-block-size` is not given: AIPerf's loader's default.
    pub fn default_block_size(self) -> u32 {
        512
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
}

impl WorkloadConfig {
    /// Reads the workload flags; `input_file` is `--input-file`.
    pub fn parse(args: &WorkloadArgs, input_file: Option<&PathBuf>) -> RunResult<WorkloadConfig> {
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
        if input_file.is_some() && args.prefix_prompt_length.is_some_and(|n| n > 0) {
            return Err(RunError::bad_option(
                "--prefix-prompt-length puts shared prefixes before synthetic prompts: drop --input-file, or drop the prefix flags.",
            ));
        }
        Ok(WorkloadConfig {
            file,
            block_size: tokens(args.isl_block_size, "--isl-block-size")?,
            prefixes: prefixes(args)?,
            system_prompt_tokens: tokens(
                args.shared_system_prompt_length,
                "--shared-system-prompt-length",
            )?,
            slice: slice(args)?,
        })
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
    let text = text.trim();
    FileFormat::ALL
        .into_iter()
        .find(|f| f.name() == text)
        .ok_or_else(|| {
            let names: Vec<&str> = FileFormat::ALL.iter().map(|f| f.name()).collect();
            RunError::bad_option(format!(
                "--custom-dataset-type '{text}' is not a format inferperf reads: use {}.",
                names.join(", ")
            ))
        })
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
            .map(|ms| crate::number::within(flag, ms, 0.0, 1e12, "ms"))
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
