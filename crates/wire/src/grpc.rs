//! KServe v2 gRPC messages ↔ the protocol-neutral request and response. Tensors are sent
//! in `raw_input_contents` / `raw_output_contents` (the binary layout, as Triton prefers);
//! received tensors may use raw contents or the typed `contents` field, never a mix.

use std::collections::HashMap;
use std::fmt::Display;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

use super::{
    element_count, encode_bytes_elements, parse_datatype, split_bytes_elements, InferRequest,
    InferResponse, RequestedOutput, Tensor, WireError,
};
use crate::model::DataType;
use crate::proto::infer_parameter::ParameterChoice;
use crate::proto::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use crate::proto::model_infer_response::InferOutputTensor;
use crate::proto::{InferParameter, InferTensorContents, ModelInferRequest, ModelInferResponse};

const BINARY_DATA: &str = "binary_data";
const BINARY_DATA_OUTPUT: &str = "binary_data_output";

/// A tensor as the protobuf messages describe it, inputs and outputs alike.
struct GrpcTensor {
    name: String,
    datatype: String,
    shape: Vec<i64>,
    contents: Option<InferTensorContents>,
}

/// Builds the gRPC request; tensor data goes in `raw_input_contents`.
pub fn to_grpc_request(model: &str, version: &str, req: &InferRequest) -> ModelInferRequest {
    let inputs = (req.inputs.iter())
        .map(|t| InferInputTensor {
            name: t.name.clone(),
            datatype: t.datatype.as_str().to_string(),
            shape: t.shape.clone(),
            parameters: HashMap::new(),
            contents: None,
        })
        .collect();
    let outputs = (req.outputs.iter())
        .map(|o| InferRequestedOutputTensor {
            name: o.name.clone(),
            parameters: HashMap::new(),
        })
        .collect();
    ModelInferRequest {
        model_name: model.to_string(),
        model_version: version.to_string(),
        id: req.id.clone(),
        parameters: params_to_grpc(&req.parameters),
        inputs,
        outputs,
        raw_input_contents: req.inputs.iter().map(|t| t.data.to_vec()).collect(),
    }
}

/// Reads a gRPC request whose tensors use raw contents or typed contents.
pub fn from_grpc_request(msg: ModelInferRequest) -> Result<InferRequest, WireError> {
    let tensors = (msg.inputs.into_iter())
        .map(|i| GrpcTensor {
            name: i.name,
            datatype: i.datatype,
            shape: i.shape,
            contents: i.contents,
        })
        .collect();
    let inputs = tensors_from_grpc(tensors, msg.raw_input_contents)?;
    let mut parameters = params_from_grpc(msg.parameters);
    let binary_output = matches!(
        parameters.remove(BINARY_DATA_OUTPUT),
        Some(Value::Bool(true))
    );
    let outputs = (msg.outputs.into_iter())
        .map(|o| {
            let flag = o.parameters.get(BINARY_DATA).map(param_from_grpc);
            RequestedOutput {
                name: o.name,
                binary: flag.and_then(|v| v.as_bool()).unwrap_or(binary_output),
            }
        })
        .collect();
    Ok(InferRequest {
        id: msg.id,
        inputs,
        outputs,
        binary_output,
        parameters,
    })
}

/// Builds the gRPC response; tensor data goes in `raw_output_contents`.
pub fn to_grpc_response(resp: &InferResponse) -> ModelInferResponse {
    let outputs = (resp.outputs.iter())
        .map(|t| InferOutputTensor {
            name: t.name.clone(),
            datatype: t.datatype.as_str().to_string(),
            shape: t.shape.clone(),
            parameters: HashMap::new(),
            contents: None,
        })
        .collect();
    ModelInferResponse {
        model_name: resp.model_name.clone(),
        model_version: resp.model_version.clone(),
        id: resp.id.clone(),
        parameters: HashMap::new(),
        outputs,
        raw_output_contents: resp.outputs.iter().map(|t| t.data.to_vec()).collect(),
    }
}

/// Reads a gRPC response whose tensors use raw contents or typed contents.
pub fn from_grpc_response(msg: ModelInferResponse) -> Result<InferResponse, WireError> {
    let tensors = (msg.outputs.into_iter())
        .map(|o| GrpcTensor {
            name: o.name,
            datatype: o.datatype,
            shape: o.shape,
            contents: o.contents,
        })
        .collect();
    Ok(InferResponse {
        model_name: msg.model_name,
        model_version: msg.model_version,
        id: msg.id,
        outputs: tensors_from_grpc(tensors, msg.raw_output_contents)?,
    })
}

/// Pairs tensors with their raw contents, or decodes their typed contents.
fn tensors_from_grpc(
    tensors: Vec<GrpcTensor>,
    raw: Vec<Vec<u8>>,
) -> Result<Vec<Tensor>, WireError> {
    if !raw.is_empty() && raw.len() != tensors.len() {
        return Err(WireError::RawCount {
            raw: raw.len(),
            tensors: tensors.len(),
        });
    }
    let mut raw = raw.into_iter();
    let mut out = Vec::with_capacity(tensors.len());
    for t in tensors {
        let datatype = parse_datatype(&t.name, &t.datatype)?;
        let data = match raw.next() {
            Some(_) if has_contents(&t.contents) => {
                return Err(WireError::MixedContents { tensor: t.name });
            }
            Some(bytes) => Bytes::from(bytes),
            None => from_typed(&t.name, datatype, &t.shape, t.contents.unwrap_or_default())?,
        };
        out.push(Tensor::checked(t.name, datatype, t.shape, data)?);
    }
    Ok(out)
}

fn has_contents(contents: &Option<InferTensorContents>) -> bool {
    contents
        .as_ref()
        .is_some_and(|c| *c != InferTensorContents::default())
}

/// Packs typed values into raw bytes, checking the count and each value's range.
fn pack<S: Copy + Display>(
    tensor: &str,
    datatype: DataType,
    shape: &[i64],
    values: &[S],
    put: impl Fn(&mut BytesMut, S) -> Option<()>,
) -> Result<Bytes, WireError> {
    let expected = element_count(tensor, shape)?;
    if values.len() != expected {
        return Err(WireError::ElementCount {
            tensor: tensor.to_string(),
            shape: shape.to_vec(),
            expected,
            actual: values.len(),
        });
    }
    let mut out = BytesMut::with_capacity(values.len() * datatype.element_size().unwrap_or(1));
    for (index, &value) in values.iter().enumerate() {
        put(&mut out, value).ok_or_else(|| WireError::BadValue {
            tensor: tensor.to_string(),
            datatype,
            index,
            value: value.to_string(),
        })?;
    }
    Ok(out.freeze())
}

/// Raw bytes from the typed `contents` field of the tensor's datatype.
fn from_typed(
    tensor: &str,
    datatype: DataType,
    shape: &[i64],
    c: InferTensorContents,
) -> Result<Bytes, WireError> {
    macro_rules! narrow {
        ($values:expr, $t:ty) => {
            pack(tensor, datatype, shape, &$values, |o, v| {
                o.put_slice(&<$t>::try_from(v).ok()?.to_le_bytes());
                Some(())
            })
        };
    }
    match datatype {
        DataType::Bool => narrow!(
            c.bool_contents
                .iter()
                .map(|&b| u8::from(b))
                .collect::<Vec<_>>(),
            u8
        ),
        DataType::Int8 => narrow!(c.int_contents, i8),
        DataType::Int16 => narrow!(c.int_contents, i16),
        DataType::Int32 => narrow!(c.int_contents, i32),
        DataType::Int64 => narrow!(c.int64_contents, i64),
        DataType::Uint8 => narrow!(c.uint_contents, u8),
        DataType::Uint16 => narrow!(c.uint_contents, u16),
        DataType::Uint32 => narrow!(c.uint_contents, u32),
        DataType::Uint64 => narrow!(c.uint64_contents, u64),
        DataType::Fp32 => narrow!(c.fp32_contents, f32),
        DataType::Fp64 => narrow!(c.fp64_contents, f64),
        DataType::Bytes => encode_bytes_elements(tensor, &c.bytes_contents),
        DataType::Fp16 | DataType::Bf16 if element_count(tensor, shape)? == 0 => Ok(Bytes::new()),
        DataType::Fp16 | DataType::Bf16 => Err(WireError::TypedUnsupported {
            tensor: tensor.to_string(),
            datatype,
        }),
    }
}

/// Fixed-size little-endian chunks of the data, as arrays.
fn chunks<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    data.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

/// The tensor's data as typed gRPC contents (for servers that want them). FP16 and BF16
/// have no typed field and are an error.
pub fn to_typed_contents(t: &Tensor) -> Result<InferTensorContents, WireError> {
    t.validate()?;
    let d = &t.data;
    let mut c = InferTensorContents::default();
    macro_rules! widen {
        ($field:ident, $t:ty) => {
            c.$field = chunks(d).map(|a| <$t>::from_le_bytes(a).into()).collect()
        };
    }
    match t.datatype {
        DataType::Bool => c.bool_contents = d.iter().map(|&b| b != 0).collect(),
        DataType::Int8 => widen!(int_contents, i8),
        DataType::Int16 => widen!(int_contents, i16),
        DataType::Int32 => widen!(int_contents, i32),
        DataType::Int64 => widen!(int64_contents, i64),
        DataType::Uint8 => widen!(uint_contents, u8),
        DataType::Uint16 => widen!(uint_contents, u16),
        DataType::Uint32 => widen!(uint_contents, u32),
        DataType::Uint64 => widen!(uint64_contents, u64),
        DataType::Fp32 => widen!(fp32_contents, f32),
        DataType::Fp64 => widen!(fp64_contents, f64),
        DataType::Bytes => {
            let elements = split_bytes_elements(&t.name, d)?;
            c.bytes_contents = elements.into_iter().map(<[u8]>::to_vec).collect();
        }
        DataType::Fp16 | DataType::Bf16 => {
            return Err(WireError::TypedUnsupported {
                tensor: t.name.clone(),
                datatype: t.datatype,
            })
        }
    }
    Ok(c)
}

fn params_to_grpc(map: &Map<String, Value>) -> HashMap<String, InferParameter> {
    let entries = map.iter().filter(|(k, _)| *k != BINARY_DATA_OUTPUT);
    entries
        .map(|(k, v)| (k.clone(), param_to_grpc(v)))
        .collect()
}

/// A JSON parameter as a protobuf one; arrays and objects travel as their JSON text.
fn param_to_grpc(value: &Value) -> InferParameter {
    let choice = match value {
        Value::Bool(b) => ParameterChoice::BoolParam(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => ParameterChoice::Int64Param(i),
            (None, Some(u)) => ParameterChoice::Uint64Param(u),
            _ => ParameterChoice::DoubleParam(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => ParameterChoice::StringParam(s.clone()),
        other => ParameterChoice::StringParam(other.to_string()),
    };
    InferParameter {
        parameter_choice: Some(choice),
    }
}

fn param_from_grpc(p: &InferParameter) -> Value {
    match &p.parameter_choice {
        Some(ParameterChoice::BoolParam(b)) => Value::Bool(*b),
        Some(ParameterChoice::Int64Param(i)) => Value::from(*i),
        Some(ParameterChoice::Uint64Param(u)) => Value::from(*u),
        Some(ParameterChoice::DoubleParam(d)) => {
            serde_json::Number::from_f64(*d).map_or(Value::Null, Value::Number)
        }
        Some(ParameterChoice::StringParam(s)) => Value::String(s.clone()),
        None => Value::Null,
    }
}

fn params_from_grpc(map: HashMap<String, InferParameter>) -> Map<String, Value> {
    map.iter()
        .map(|(k, p)| (k.clone(), param_from_grpc(p)))
        .collect()
}
