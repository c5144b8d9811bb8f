//! HTTP bodies of the KServe v2 REST protocol: the JSON request and response objects, and
//! the binary tensor data extension (JSON header, then raw tensor bytes in tensor order, the
//! header's length sent in `Inference-Header-Content-Length`). Unknown JSON fields are
//! ignored, as real servers add their own (`content_type`, response `parameters`, ...).

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::json_data::{encode_error, scalars_to_bytes, DataView, EncodeErrors, FlatData};
use super::{
    element_count, parse_datatype, HttpBody, InferRequest, InferResponse, RequestedOutput, Tensor,
    WireError,
};

const BINARY_DATA_OUTPUT: &str = "binary_data_output";

// ---------------------------------------------------------------- writing

fn is_empty_str(s: &&str) -> bool {
    s.is_empty()
}

#[derive(Serialize)]
struct RequestOut<'a> {
    #[serde(skip_serializing_if = "is_empty_str")]
    id: &'a str,
    #[serde(skip_serializing_if = "RequestParams::is_empty")]
    parameters: RequestParams<'a>,
    inputs: Vec<TensorOut<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    outputs: Vec<OutputOut<'a>>,
}

/// The request's own parameters plus `binary_data_output` when it is set.
struct RequestParams<'a> {
    map: &'a Map<String, Value>,
    binary_output: bool,
}

impl RequestParams<'_> {
    fn entries(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.map.iter().filter(|(k, _)| *k != BINARY_DATA_OUTPUT)
    }

    fn is_empty(&self) -> bool {
        !self.binary_output && self.entries().next().is_none()
    }
}

impl Serialize for RequestParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.entries() {
            map.serialize_entry(k, v)?;
        }
        if self.binary_output {
            map.serialize_entry(BINARY_DATA_OUTPUT, &true)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct TensorOut<'a> {
    name: &'a str,
    datatype: &'static str,
    shape: &'a [i64],
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BinarySize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<DataView<'a>>,
}

#[derive(Serialize)]
struct BinarySize {
    binary_data_size: usize,
}

#[derive(Serialize)]
struct OutputOut<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BinaryFlag>,
}

#[derive(Serialize)]
struct BinaryFlag {
    binary_data: bool,
}

#[derive(Serialize)]
struct ResponseOut<'a> {
    model_name: &'a str,
    #[serde(skip_serializing_if = "is_empty_str")]
    model_version: &'a str,
    #[serde(skip_serializing_if = "is_empty_str")]
    id: &'a str,
    outputs: Vec<TensorOut<'a>>,
}

fn tensor_out<'a>(t: &'a Tensor, binary: bool, errors: &'a EncodeErrors) -> TensorOut<'a> {
    let (parameters, data) = if binary {
        let size = BinarySize {
            binary_data_size: t.data.len(),
        };
        (Some(size), None)
    } else {
        let view = DataView {
            tensor: &t.name,
            datatype: t.datatype,
            data: &t.data,
            errors,
        };
        (None, Some(view))
    };
    TensorOut {
        name: &t.name,
        datatype: t.datatype.as_str(),
        shape: &t.shape,
        parameters,
        data,
    }
}

/// A per-output `binary_data` flag is written only where it differs from the default the
/// request-level `binary_data_output` sets.
fn output_out(o: &RequestedOutput, binary_output: bool) -> OutputOut<'_> {
    let parameters = (o.binary || binary_output).then_some(BinaryFlag {
        binary_data: o.binary,
    });
    OutputOut {
        name: &o.name,
        parameters,
    }
}

/// Writes the JSON header and appends the binary parts after it.
fn assemble<'a>(
    header: &impl Serialize,
    errors: &EncodeErrors,
    any_binary: bool,
    parts: impl Iterator<Item = &'a Bytes> + Clone,
) -> Result<HttpBody, WireError> {
    let binary_len: usize = parts.clone().map(Bytes::len).sum();
    let mut writer = BytesMut::with_capacity(256 + binary_len).writer();
    serde_json::to_writer(&mut writer, header).map_err(|e| encode_error(errors, e))?;
    let mut out = writer.into_inner();
    let header_len = out.len();
    for part in parts {
        out.extend_from_slice(part);
    }
    Ok(HttpBody {
        body: out.freeze(),
        header_len: any_binary.then_some(header_len),
    })
}

/// Encodes a request as JSON, with every input as binary data after the JSON when
/// `binary_inputs` is set (the binary tensor data extension).
pub fn encode_http_request(req: &InferRequest, binary_inputs: bool) -> Result<HttpBody, WireError> {
    for t in &req.inputs {
        t.validate()?;
    }
    let errors = EncodeErrors::default();
    let header = RequestOut {
        id: &req.id,
        parameters: RequestParams {
            map: &req.parameters,
            binary_output: req.binary_output,
        },
        inputs: (req.inputs.iter())
            .map(|t| tensor_out(t, binary_inputs, &errors))
            .collect(),
        outputs: (req.outputs.iter())
            .map(|o| output_out(o, req.binary_output))
            .collect(),
    };
    let parts = req.inputs.iter().filter(|_| binary_inputs).map(|t| &t.data);
    let any_binary = binary_inputs && !req.inputs.is_empty();
    assemble(&header, &errors, any_binary, parts)
}

/// A tensor's elements as one compact, flat JSON array (row-major; BYTES as strings, FP16
/// and BF16 as numbers), for exports that list the values a request carried.
pub fn tensor_values_json(t: &Tensor) -> Result<String, WireError> {
    t.validate()?;
    let errors = EncodeErrors::default();
    let view = DataView {
        tensor: &t.name,
        datatype: t.datatype,
        data: &t.data,
        errors: &errors,
    };
    serde_json::to_string(&view).map_err(|e| encode_error(&errors, e))
}

/// Encodes a response; `binary(name)` says which outputs go as binary data after the JSON.
pub fn encode_http_response(
    resp: &InferResponse,
    binary: &dyn Fn(&str) -> bool,
) -> Result<HttpBody, WireError> {
    for t in &resp.outputs {
        t.validate()?;
    }
    let flags: Vec<bool> = resp.outputs.iter().map(|t| binary(&t.name)).collect();
    let errors = EncodeErrors::default();
    let header = ResponseOut {
        model_name: &resp.model_name,
        model_version: &resp.model_version,
        id: &resp.id,
        outputs: (resp.outputs.iter().zip(&flags))
            .map(|(t, &b)| tensor_out(t, b, &errors))
            .collect(),
    };
    let parts = (resp.outputs.iter().zip(&flags))
        .filter(|(_, &b)| b)
        .map(|(t, _)| &t.data);
    assemble(&header, &errors, flags.contains(&true), parts)
}

// ---------------------------------------------------------------- reading

#[derive(Deserialize)]
struct RequestIn {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    parameters: Option<Map<String, Value>>,
    inputs: Vec<TensorIn>,
    #[serde(default)]
    outputs: Option<Vec<OutputIn>>,
}

#[derive(Deserialize)]
struct TensorIn {
    name: String,
    shape: Vec<i64>,
    datatype: String,
    #[serde(default)]
    parameters: Option<TensorParams>,
    #[serde(default)]
    data: Option<FlatData>,
}

#[derive(Deserialize, Default)]
struct TensorParams {
    #[serde(default)]
    binary_data_size: Option<u64>,
    #[serde(default)]
    binary_data: Option<bool>,
}

#[derive(Deserialize)]
struct OutputIn {
    name: String,
    #[serde(default)]
    parameters: Option<TensorParams>,
}

#[derive(Deserialize)]
struct ResponseIn {
    #[serde(default)]
    model_name: Option<String>,
    #[serde(default)]
    model_version: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    outputs: Option<Vec<TensorIn>>,
    #[serde(default)]
    error: Option<String>,
}

/// The binary part of a body, handed out to tensors in order.
struct Binary<'a> {
    slice: &'a dyn Fn(Range<usize>) -> Bytes,
    next: usize,
    end: usize,
}

impl Binary<'_> {
    fn take(&mut self, tensor: &str, size: u64) -> Result<Bytes, WireError> {
        let available = self.end - self.next;
        let size_usize = usize::try_from(size).ok().filter(|&s| s <= available);
        let Some(size_usize) = size_usize else {
            return Err(WireError::BinaryMissing {
                tensor: tensor.to_string(),
                size,
                available,
            });
        };
        let range = self.next..self.next + size_usize;
        self.next = range.end;
        Ok((self.slice)(range))
    }

    fn finish(&self) -> Result<(), WireError> {
        match self.end - self.next {
            0 => Ok(()),
            extra => Err(WireError::TrailingBinary { extra }),
        }
    }
}

/// Splits a body into its JSON part and a [`Binary`] reader over the rest.
fn split_body<'a>(
    body: &'a [u8],
    header_len: Option<usize>,
    slice: &'a dyn Fn(Range<usize>) -> Bytes,
) -> Result<(&'a [u8], Binary<'a>), WireError> {
    let json_len = header_len.unwrap_or(body.len());
    if json_len > body.len() {
        return Err(WireError::HeaderLength {
            header_len: json_len,
            body_len: body.len(),
        });
    }
    let binary = Binary {
        slice,
        next: json_len,
        end: body.len(),
    };
    Ok((&body[..json_len], binary))
}

fn json_error(what: &'static str, e: serde_json::Error) -> WireError {
    WireError::Json {
        what,
        detail: e.to_string(),
    }
}

/// Builds one tensor from its JSON object and, for binary tensors, the next binary part.
fn tensor_in(t: TensorIn, binary: &mut Binary) -> Result<Tensor, WireError> {
    let datatype = parse_datatype(&t.name, &t.datatype)?;
    let size = t.parameters.and_then(|p| p.binary_data_size);
    let data = match (size, t.data) {
        (Some(_), Some(_)) => return Err(WireError::BothData { tensor: t.name }),
        (None, None) => return Err(WireError::MissingData { tensor: t.name }),
        (Some(size), None) => binary.take(&t.name, size)?,
        (None, Some(values)) => {
            let expected = element_count(&t.name, &t.shape)?;
            if values.0.len() != expected {
                return Err(WireError::ElementCount {
                    tensor: t.name,
                    shape: t.shape,
                    expected,
                    actual: values.0.len(),
                });
            }
            scalars_to_bytes(&t.name, datatype, &values.0)?
        }
    };
    Tensor::checked(t.name, datatype, t.shape, data)
}

fn tensors_in(tensors: Vec<TensorIn>, binary: &mut Binary) -> Result<Vec<Tensor>, WireError> {
    let out = tensors.into_iter().map(|t| tensor_in(t, binary));
    let out = out.collect::<Result<Vec<_>, _>>()?;
    binary.finish()?;
    Ok(out)
}

/// Takes `binary_data_output` out of the request parameters.
fn take_binary_output(parameters: &mut Map<String, Value>) -> Result<bool, WireError> {
    match parameters.remove(BINARY_DATA_OUTPUT) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(other) => Err(WireError::Json {
            what: "inference request",
            detail: format!(
                "the parameter '{BINARY_DATA_OUTPUT}' must be true or false, not {other}"
            ),
        }),
    }
}

fn decode_request(
    body: &[u8],
    header_len: Option<usize>,
    slice: &dyn Fn(Range<usize>) -> Bytes,
) -> Result<InferRequest, WireError> {
    let (json, mut binary) = split_body(body, header_len, slice)?;
    let parsed: RequestIn =
        serde_json::from_slice(json).map_err(|e| json_error("inference request", e))?;
    let inputs = tensors_in(parsed.inputs, &mut binary)?;
    let mut parameters = parsed.parameters.unwrap_or_default();
    let binary_output = take_binary_output(&mut parameters)?;
    let outputs = (parsed.outputs.unwrap_or_default().into_iter())
        .map(|o| RequestedOutput {
            binary: (o.parameters.and_then(|p| p.binary_data)).unwrap_or(binary_output),
            name: o.name,
        })
        .collect();
    Ok(InferRequest {
        id: parsed.id.unwrap_or_default(),
        inputs,
        outputs,
        binary_output,
        parameters,
    })
}

fn decode_response(
    body: &[u8],
    header_len: Option<usize>,
    slice: &dyn Fn(Range<usize>) -> Bytes,
) -> Result<InferResponse, WireError> {
    let (json, mut binary) = split_body(body, header_len, slice)?;
    let parsed: ResponseIn =
        serde_json::from_slice(json).map_err(|e| json_error("inference response", e))?;
    if let (Some(error), None) = (parsed.error, &parsed.outputs) {
        return Err(WireError::Server(error));
    }
    let outputs = tensors_in(parsed.outputs.unwrap_or_default(), &mut binary)?;
    Ok(InferResponse {
        model_name: parsed.model_name.unwrap_or_default(),
        model_version: parsed.model_version.unwrap_or_default(),
        id: parsed.id.unwrap_or_default(),
        outputs,
    })
}

/// Decodes a request body; `header_len` is the `Inference-Header-Content-Length` header.
/// Binary tensor data is copied out of `body`; see [`decode_http_request_bytes`].
pub fn decode_http_request(
    body: &[u8],
    header_len: Option<usize>,
) -> Result<InferRequest, WireError> {
    decode_request(body, header_len, &|r| Bytes::copy_from_slice(&body[r]))
}

/// As [`decode_http_request`], but binary tensors share `body`'s memory (no copy).
pub fn decode_http_request_bytes(
    body: &Bytes,
    header_len: Option<usize>,
) -> Result<InferRequest, WireError> {
    decode_request(body, header_len, &|r| body.slice(r))
}

/// Decodes a response body; a body of the form `{"error": "..."}` is [`WireError::Server`].
pub fn decode_http_response(
    body: &[u8],
    header_len: Option<usize>,
) -> Result<InferResponse, WireError> {
    decode_response(body, header_len, &|r| Bytes::copy_from_slice(&body[r]))
}

/// As [`decode_http_response`], but binary tensors share `body`'s memory (no copy).
pub fn decode_http_response_bytes(
    body: &Bytes,
    header_len: Option<usize>,
) -> Result<InferResponse, WireError> {
    decode_response(body, header_len, &|r| body.slice(r))
}
