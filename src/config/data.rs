//! The data section of the configuration: where request tensors come from and how they are
//! shaped and batched. The dataset is built from this section (and the model the target
//! described).

use std::collections::BTreeMap;

use super::media::MediaConfig;
use super::sessions::SessionData;
use super::workload::WorkloadConfig;
use super::InputData;
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
    pub rankings: super::endpoint_options::RankingsConfig,
}
