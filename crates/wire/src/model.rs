//! What inferperf knows about the model under test: its tensors, datatypes, shapes and
//! batching, gathered once from the server's metadata (and configuration where there is one)
//! and then read by the dataset builder and the reports. Nothing here talks to the network.

use std::fmt;
use std::str::FromStr;

/// A KServe v2 tensor datatype (the `datatype` string of the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    Bool,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Int8,
    Int16,
    Int32,
    Int64,
    Fp16,
    Bf16,
    Fp32,
    Fp64,
    Bytes,
}

impl DataType {
    /// Every datatype of the protocol, for tests and help texts.
    pub const ALL: [DataType; 14] = [
        DataType::Bool,
        DataType::Uint8,
        DataType::Uint16,
        DataType::Uint32,
        DataType::Uint64,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Fp16,
        DataType::Bf16,
        DataType::Fp32,
        DataType::Fp64,
        DataType::Bytes,
    ];

    /// The protocol's name for the datatype.
    pub fn as_str(self) -> &'static str {
        match self {
            DataType::Bool => "BOOL",
            DataType::Uint8 => "UINT8",
            DataType::Uint16 => "UINT16",
            DataType::Uint32 => "UINT32",
            DataType::Uint64 => "UINT64",
            DataType::Int8 => "INT8",
            DataType::Int16 => "INT16",
            DataType::Int32 => "INT32",
            DataType::Int64 => "INT64",
            DataType::Fp16 => "FP16",
            DataType::Bf16 => "BF16",
            DataType::Fp32 => "FP32",
            DataType::Fp64 => "FP64",
            DataType::Bytes => "BYTES",
        }
    }

    /// Bytes per element, or `None` for the variable-length BYTES type.
    pub fn element_size(self) -> Option<usize> {
        match self {
            DataType::Bool | DataType::Uint8 | DataType::Int8 => Some(1),
            DataType::Uint16 | DataType::Int16 | DataType::Fp16 | DataType::Bf16 => Some(2),
            DataType::Uint32 | DataType::Int32 | DataType::Fp32 => Some(4),
            DataType::Uint64 | DataType::Int64 | DataType::Fp64 => Some(8),
            DataType::Bytes => None,
        }
    }

    /// The datatype for Triton's model-configuration enum value (`TYPE_FP32` = 11, ...).
    pub fn from_config_enum(value: i32) -> Option<DataType> {
        Some(match value {
            1 => DataType::Bool,
            2 => DataType::Uint8,
            3 => DataType::Uint16,
            4 => DataType::Uint32,
            5 => DataType::Uint64,
            6 => DataType::Int8,
            7 => DataType::Int16,
            8 => DataType::Int32,
            9 => DataType::Int64,
            10 => DataType::Fp16,
            11 => DataType::Fp32,
            12 => DataType::Fp64,
            13 => DataType::Bytes,
            14 => DataType::Bf16,
            _ => return None,
        })
    }

    /// Triton's model-configuration enum value for the datatype.
    pub fn config_enum(self) -> i32 {
        match self {
            DataType::Bool => 1,
            DataType::Uint8 => 2,
            DataType::Uint16 => 3,
            DataType::Uint32 => 4,
            DataType::Uint64 => 5,
            DataType::Int8 => 6,
            DataType::Int16 => 7,
            DataType::Int32 => 8,
            DataType::Int64 => 9,
            DataType::Fp16 => 10,
            DataType::Fp32 => 11,
            DataType::Fp64 => 12,
            DataType::Bytes => 13,
            DataType::Bf16 => 14,
        }
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DataType {
    type Err = String;

    /// Accepts the protocol names and Triton's config spellings (`TYPE_FP32`, `STRING`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let upper = s.trim().to_ascii_uppercase();
        let name = upper.strip_prefix("TYPE_").unwrap_or(&upper);
        let name = if name == "STRING" { "BYTES" } else { name };
        DataType::ALL
            .iter()
            .copied()
            .find(|t| t.as_str() == name)
            .ok_or_else(|| format!("unknown datatype '{s}'"))
    }
}

/// One input or output tensor as the model declares it. A dimension of -1 is variable.
/// For a batching model the shape excludes the batch dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    pub name: String,
    pub datatype: DataType,
    pub shape: Vec<i64>,
}

impl TensorSpec {
    /// True when every dimension is known (no -1).
    pub fn is_fixed(&self) -> bool {
        self.shape.iter().all(|&d| d >= 0)
    }
}

/// Scheduling Triton reports for the model; decides how results are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scheduler {
    #[default]
    None,
    Dynamic,
    Sequence,
    Ensemble,
}

/// Everything the run needs to know about the model under test.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelSpec {
    pub name: String,
    /// The version requested with `-x`, or empty for the server's choice.
    pub version: String,
    pub platform: String,
    pub inputs: Vec<TensorSpec>,
    pub outputs: Vec<TensorSpec>,
    /// 0 when the model does not batch (or the server has no configuration to tell).
    pub max_batch_size: u32,
    pub scheduler: Scheduler,
    pub decoupled: bool,
    pub response_cache: bool,
    /// The models an ensemble's steps call, in step order, or the models a BLS model calls
    /// (`--bls-composing-models`, `MODEL` or `MODEL:VERSION`); empty for other models.
    pub composing_models: Vec<String>,
    /// Whether the server answered the Triton model-configuration request.
    pub has_config: bool,
    /// Extensions the server lists in its metadata (`binary_tensor_data`, `statistics`, ...).
    pub server_extensions: Vec<String>,
    /// A sequence model whose correlation ids are strings (its `CORRID` control is
    /// `TYPE_STRING`); numbers otherwise.
    pub string_sequence_ids: bool,
}

impl ModelSpec {
    pub fn batches(&self) -> bool {
        self.max_batch_size > 0
    }

    /// Whether the model keeps state across the requests of a sequence (Triton's
    /// `sequence_batching`), so requests carry a correlation id and start/end flags.
    pub fn is_sequence(&self) -> bool {
        self.scheduler == Scheduler::Sequence
    }

    /// Takes `--bls-composing-models` (`MODEL` or `MODEL:VERSION`) as the models this model
    /// calls; `Err` is the sentence for an ensemble, whose composing models are its steps.
    pub fn with_bls_calls(mut self, calls: &[String]) -> Result<ModelSpec, String> {
        if calls.is_empty() {
            return Ok(self);
        }
        if self.scheduler == Scheduler::Ensemble {
            return Err(format!(
                "--bls-composing-models names the models a BLS model calls, but '{}' is an ensemble, whose composing models come from its configuration: leave the flag out.",
                self.name
            ));
        }
        self.composing_models = calls.to_vec();
        Ok(self)
    }

    /// Whether the composing models are a BLS model's calls, which run inside its compute
    /// (not an ensemble's steps, whose times add up to the ensemble's).
    pub fn calls_composing(&self) -> bool {
        self.scheduler != Scheduler::Ensemble && !self.composing_models.is_empty()
    }

    pub fn server_has_extension(&self, name: &str) -> bool {
        self.server_extensions.iter().any(|e| e == name)
    }
}

/// One request's place in a sequence: the correlation id it carries and whether it starts
/// or ends the sequence. Protocol-free; each API writes it its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SequenceStep {
    pub id: u64,
    pub start: bool,
    pub end: bool,
    /// The model takes string correlation ids (the id is sent as its decimal text).
    pub string_id: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatype_names_round_trip() {
        for t in DataType::ALL {
            assert_eq!(t.as_str().parse::<DataType>().unwrap(), t);
            assert_eq!(DataType::from_config_enum(t.config_enum()), Some(t));
        }
        assert_eq!("TYPE_STRING".parse::<DataType>().unwrap(), DataType::Bytes);
        assert!("FP8".parse::<DataType>().is_err());
    }
}
