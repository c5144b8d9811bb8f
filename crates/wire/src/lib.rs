//! The KServe v2 (Open Inference Protocol) wire formats, shared by the load generator's
//! backends and the embedded server so that both sides agree byte for byte.
//!
//! A tensor travels as [`Tensor`]: its data is always the raw little-endian, row-major
//! element bytes (BOOL one byte per element, BYTES as 4-byte little-endian length + bytes per
//! element, the binary tensor extension's layout). [`json`] turns requests and responses into
//! HTTP bodies (plain JSON or JSON followed by binary tensor data) and back; [`grpc`] does the
//! same for the protobuf messages. Every decoder validates shapes and sizes and reports a
//! problem as a [`WireError`] naming the tensor; nothing here panics on bad input.
//!
//! Under the messages, how a server's bytes are cut into them: [`http1`] (a response's head,
//! chunks and trailers), [`grpc_frames`] (gRPC's length-prefixed messages, compressed or not)
//! and [`sse`] (server-sent events). The client's connections do the I/O and feed them; the
//! fuzz targets CI builds (`fuzzing`) exercise them with this crate alone.

// Inside the crate `pub(crate)` is the default: `pub` is what other crates use.
#![warn(unreachable_pub)]

pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod grpc_frames;
pub mod http1;
pub mod model;
pub mod number;
pub mod proto;
pub mod shm;
pub mod sse;

mod grpc;
mod json;
mod json_data;
#[cfg(test)]
mod tests;
pub mod tf_json;
pub mod tfserving;

use bytes::{BufMut, Bytes, BytesMut};

use crate::model::DataType;

pub use grpc::{
    from_grpc_request, from_grpc_response, to_grpc_request, to_grpc_response, to_typed_contents,
};
pub use json::{
    decode_http_request, decode_http_request_bytes, decode_http_response,
    decode_http_response_bytes, encode_http_request, encode_http_response, tensor_values_json,
};

/// The HTTP header that carries the length of the JSON part of a binary-extension body.
pub const HEADER_CONTENT_LENGTH: &str = "Inference-Header-Content-Length";

/// One tensor with its data in the binary extension's layout (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub datatype: DataType,
    pub shape: Vec<i64>,
    pub data: Bytes,
}

/// An output the client asks for, and whether it wants it as binary data (HTTP only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestedOutput {
    pub name: String,
    pub binary: bool,
}

/// An inference request, protocol-neutral.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InferRequest {
    /// Echoed by the server; empty means "no id".
    pub id: String,
    pub inputs: Vec<Tensor>,
    /// Empty asks the server for every output.
    pub outputs: Vec<RequestedOutput>,
    /// The request-level `binary_data_output` parameter: all outputs in binary (HTTP only).
    pub binary_output: bool,
    /// Other request-level parameters (sequence id, priority, ...), passed through.
    pub parameters: serde_json::Map<String, serde_json::Value>,
}

/// An inference response, protocol-neutral.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InferResponse {
    pub model_name: String,
    pub model_version: String,
    pub id: String,
    pub outputs: Vec<Tensor>,
}

/// An encoded HTTP body. `header_len` is the value of the `Inference-Header-Content-Length`
/// header when binary tensor data follows the JSON, `None` for a pure JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpBody {
    pub body: Bytes,
    pub header_len: Option<usize>,
}

/// Why a message could not be encoded or decoded; each message names the tensor at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error("the body is not a valid KServe v2 {what} in JSON: {detail}")]
    Json { what: &'static str, detail: String },
    #[error("tensor '{tensor}' has unknown datatype '{datatype}'")]
    UnknownDatatype { tensor: String, datatype: String },
    #[error("tensor '{tensor}' has a negative dimension in its shape {shape:?}")]
    NegativeDim { tensor: String, shape: Vec<i64> },
    #[error("tensor '{tensor}' has shape {shape:?}, whose element count is too large")]
    ShapeOverflow { tensor: String, shape: Vec<i64> },
    #[error(
        "tensor '{tensor}' has {actual} bytes of data, but {datatype} with shape {shape:?} needs {expected}"
    )]
    DataSize {
        tensor: String,
        datatype: DataType,
        shape: Vec<i64>,
        expected: usize,
        actual: usize,
    },
    #[error("tensor '{tensor}' has {actual} elements, but its shape {shape:?} needs {expected}")]
    ElementCount {
        tensor: String,
        shape: Vec<i64>,
        expected: usize,
        actual: usize,
    },
    #[error("BYTES tensor '{tensor}' has malformed data: {detail}")]
    BadBytes { tensor: String, detail: String },
    #[error("element {index} of tensor '{tensor}' is not a valid {datatype} value: {value}")]
    BadValue {
        tensor: String,
        datatype: DataType,
        index: usize,
        value: String,
    },
    #[error(
        "element {index} of BYTES tensor '{tensor}' is not UTF-8, so JSON cannot carry it; use the binary tensor format"
    )]
    NotUtf8 { tensor: String, index: usize },
    #[error(
        "element {index} of {datatype} tensor '{tensor}' is {value}, which JSON cannot carry; use the binary tensor format"
    )]
    NotFinite {
        tensor: String,
        datatype: DataType,
        index: usize,
        value: String,
    },
    #[error(
        "Inference-Header-Content-Length is {header_len}, but the body has only {body_len} bytes"
    )]
    HeaderLength { header_len: usize, body_len: usize },
    #[error(
        "tensor '{tensor}' declares {size} bytes of binary data, but only {available} remain in the body"
    )]
    BinaryMissing {
        tensor: String,
        size: u64,
        available: usize,
    },
    #[error("the body has {extra} bytes of binary data that no tensor claims")]
    TrailingBinary { extra: usize },
    #[error("tensor '{tensor}' has neither 'data' nor a 'binary_data_size' parameter")]
    MissingData { tensor: String },
    #[error("tensor '{tensor}' has both 'data' and a 'binary_data_size' parameter")]
    BothData { tensor: String },
    #[error("the gRPC message has {raw} raw tensor contents for {tensors} tensors")]
    RawCount { raw: usize, tensors: usize },
    #[error("tensor '{tensor}' has typed contents, but the message uses raw contents; use one or the other")]
    MixedContents { tensor: String },
    #[error(
        "{datatype} tensor '{tensor}' cannot use typed gRPC contents; send it as raw contents"
    )]
    TypedUnsupported { tensor: String, datatype: DataType },
    #[error("tensor '{tensor}' is not a valid TF Serving JSON value: {detail}")]
    TfJson { tensor: String, detail: String },
    #[error("the server answered with an error: {0}")]
    Server(String),
}

/// Parses a datatype string of the protocol, naming the tensor when it is unknown.
pub fn parse_datatype(tensor: &str, datatype: &str) -> Result<DataType, WireError> {
    let known = DataType::ALL.iter().find(|t| t.as_str() == datatype);
    known.copied().ok_or_else(|| WireError::UnknownDatatype {
        tensor: tensor.to_string(),
        datatype: datatype.to_string(),
    })
}

/// The number of elements of a shape: dimensions must be ≥ 0 and the product must fit.
pub fn element_count(tensor: &str, shape: &[i64]) -> Result<usize, WireError> {
    let mut count: usize = 1;
    for &dim in shape {
        let dim = usize::try_from(dim).map_err(|_| WireError::NegativeDim {
            tensor: tensor.to_string(),
            shape: shape.to_vec(),
        })?;
        count = count
            .checked_mul(dim)
            .ok_or_else(|| WireError::ShapeOverflow {
                tensor: tensor.to_string(),
                shape: shape.to_vec(),
            })?;
    }
    Ok(count)
}

impl Tensor {
    /// A tensor read from the wire, once its data is found to match its shape and datatype
    /// ([`Tensor::validate`]).
    pub fn checked(
        name: String,
        datatype: DataType,
        shape: Vec<i64>,
        data: Bytes,
    ) -> Result<Tensor, WireError> {
        let tensor = Tensor {
            name,
            datatype,
            shape,
            data,
        };
        tensor.validate()?;
        Ok(tensor)
    }

    /// Checks that the data matches the shape and datatype (BYTES: well-formed prefixes and
    /// exactly one element per position of the shape).
    pub fn validate(&self) -> Result<(), WireError> {
        check_data(&self.name, self.datatype, &self.shape, &self.data)
    }

    /// The number of elements the shape holds.
    pub fn element_count(&self) -> Result<usize, WireError> {
        element_count(&self.name, &self.shape)
    }

    /// The elements of a BYTES tensor (without their length prefixes).
    pub fn bytes_elements(&self) -> Result<Vec<&[u8]>, WireError> {
        split_bytes_elements(&self.name, &self.data)
    }
}

/// Checks raw tensor data against its shape and datatype.
pub fn check_data(
    tensor: &str,
    datatype: DataType,
    shape: &[i64],
    data: &[u8],
) -> Result<(), WireError> {
    let count = element_count(tensor, shape)?;
    match datatype.element_size() {
        Some(size) => {
            let expected = count
                .checked_mul(size)
                .ok_or_else(|| WireError::ShapeOverflow {
                    tensor: tensor.to_string(),
                    shape: shape.to_vec(),
                })?;
            if expected != data.len() {
                return Err(WireError::DataSize {
                    tensor: tensor.to_string(),
                    datatype,
                    shape: shape.to_vec(),
                    expected,
                    actual: data.len(),
                });
            }
        }
        None => {
            let actual = count_bytes_elements(tensor, data)?;
            if actual != count {
                return Err(WireError::ElementCount {
                    tensor: tensor.to_string(),
                    shape: shape.to_vec(),
                    expected: count,
                    actual,
                });
            }
        }
    }
    Ok(())
}

/// Walks BYTES data, calling `each` on every element; errors on a truncated prefix or element.
fn walk_bytes_elements<'a>(
    tensor: &str,
    data: &'a [u8],
    mut each: impl FnMut(&'a [u8]),
) -> Result<(), WireError> {
    let mut rest = data;
    while !rest.is_empty() {
        let offset = data.len() - rest.len();
        let bad = |detail: String| WireError::BadBytes {
            tensor: tensor.to_string(),
            detail,
        };
        let (prefix, tail) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| bad(format!("a length prefix at byte {offset} is cut short")))?;
        let len = u32::from_le_bytes(*prefix) as usize;
        if tail.len() < len {
            return Err(bad(format!(
                "the element at byte {offset} declares {len} bytes, but only {} remain",
                tail.len()
            )));
        }
        let (element, after) = tail.split_at(len);
        each(element);
        rest = after;
    }
    Ok(())
}

/// Counts the elements of BYTES data.
pub fn count_bytes_elements(tensor: &str, data: &[u8]) -> Result<usize, WireError> {
    let mut count = 0;
    walk_bytes_elements(tensor, data, |_| count += 1)?;
    Ok(count)
}

/// Splits BYTES data into its elements.
pub fn split_bytes_elements<'a>(tensor: &str, data: &'a [u8]) -> Result<Vec<&'a [u8]>, WireError> {
    let mut out = Vec::new();
    walk_bytes_elements(tensor, data, |e| out.push(e))?;
    Ok(out)
}

/// Builds BYTES data (length-prefixed elements) from its elements. An element longer than
/// 4 GiB cannot be expressed in the format and is an error.
pub fn encode_bytes_elements<I, T>(tensor: &str, elements: I) -> Result<Bytes, WireError>
where
    I: IntoIterator<Item = T>,
    T: AsRef<[u8]>,
{
    let mut out = BytesMut::new();
    for (index, element) in elements.into_iter().enumerate() {
        let element = element.as_ref();
        let len = u32::try_from(element.len()).map_err(|_| WireError::BadBytes {
            tensor: tensor.to_string(),
            detail: format!("element {index} is longer than 4 GiB"),
        })?;
        out.put_u32_le(len);
        out.put_slice(element);
    }
    Ok(out.freeze())
}
