//! The data section of the configuration: where request tensors come from and how they are
//! shaped and batched. The dataset is built from this section (and the model the target
//! described).

use std::collections::BTreeMap;

use super::endpoint_options::RankingsConfig;
use super::media::MediaConfig;
use super::parse::*;
use super::sessions::SessionData;
use super::workload::{self, WorkloadConfig};
use super::{datasets, media, sessions, InputData, LoadMode, OpenAiConfig, ServiceKind};
use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::DataType;

/// The settings of the dataset box.
#[derive(Debug, Clone)]
pub struct DataConfig {
    pub batch_size: u32,
    pub input_data: InputData,
    /// `--shape NAME:dims`, without the batch dimension.
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub string_length: usize,
    pub string_data: Option<String>,
    /// `--input-datatype NAME:TYPE`, for inputs the server's metadata does not declare.
    pub input_datatypes: BTreeMap<String, DataType>,
    /// An LLM workload's file format, shared prefixes and trace slice.
    pub workload: WorkloadConfig,
    /// Multi-turn chat sessions: synthetic ones to make, and the waits between turns
    /// (`None`: no session flag was given).
    pub sessions: Option<SessionData>,
    /// AIPerf's synthetic images, audio and videos for each synthetic prompt.
    pub media: MediaConfig,
    /// The query and passages of the rankings endpoint types' synthetic requests.
    pub rankings: RankingsConfig,
}

impl DataConfig {
    /// The dataset's flags, with the LLM workload read before (`workload`, `rankings`) and
    /// the run's OpenAI settings (`llm`). Also gives `--session-concurrency`, the sessions'
    /// load, which the load section takes.
    pub(super) fn parse(
        args: &ProfileArgs,
        kind: ServiceKind,
        workload: WorkloadConfig,
        rankings: RankingsConfig,
        llm: Option<&OpenAiConfig>,
    ) -> RunResult<(DataConfig, Option<u32>)> {
        let batch_size = positive(args.batch_size as u64, "-b")? as u32;
        let input_data = parse_input_data(&input_data_args(args)?)?;
        let shapes = parse_shapes(&args.shapes)?;
        let string_length = positive(args.string_length as u64, "--string-length")? as usize;
        let input_datatypes = parse_input_datatypes(&args.input_datatypes)?;
        let (sessions, session_concurrency) = sessions::parse(args, kind, llm)?;
        let pooled = matches!(workload.file, Some((_, workload::FileFormat::RandomPool)));
        let media = media::parse(&args.media, kind, llm, &input_data, pooled)?;
        let data = DataConfig {
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
        };
        Ok((data, session_concurrency))
    }
}

/// The LLM workload flags: for OpenAI runs only, the trace slice for a fixed schedule only.
pub(super) fn parse_workload(
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
