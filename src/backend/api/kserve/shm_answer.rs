//! A slot's side of `--shared-memory system` on its connection: the request bytes with the
//! slot's own output region named (requests are encoded naming slot 0's; the six digits are
//! swapped once per entry and kept), and the answer checked — datatype and shape from the
//! answer, the values read back from the slot's region only when `validation_data` asks for
//! them. An answer whose outputs came back inline (with data of their own) is checked as an
//! ordinary one.

use std::sync::Arc;

use bytes::Bytes;
use prost::Message;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::answer::check_http;
use super::shm::SlotRegion;
use crate::backend::check::wire_failure;
use crate::backend::memo::CheckedAnswers;
use crate::backend::open_inference::answer::check_protobuf;
use crate::backend::outcome::{Failure, Malformation};
use crate::backend::{Payload, Request};
use inferperf_wire::model::DataType;
use inferperf_wire::proto::infer_parameter::ParameterChoice;
use inferperf_wire::proto::ModelInferResponse;
use inferperf_wire::shm::BYTE_SIZE_PARAM;
use inferperf_wire::{self as wire, Tensor, WireError};

/// The slot's region, the name its requests were encoded with, and the requests rewritten.
pub struct SlotShm {
    region: Arc<SlotRegion>,
    encoded_as: Vec<u8>,
    /// Per dataset entry: the encoded bytes seen and the slot's version of them.
    kept: Vec<Option<(Bytes, Bytes)>>,
}

impl SlotShm {
    pub fn new(region: Arc<SlotRegion>, encoded_as: String) -> SlotShm {
        SlotShm {
            region,
            encoded_as: encoded_as.into_bytes(),
            kept: Vec::new(),
        }
    }

    /// `request` naming this slot's output region.
    pub fn request(&mut self, request: &Request) -> Request {
        let (bytes, http) = match &request.payload {
            Payload::Http(b) => (b, true),
            Payload::Grpc(b) => (b, false),
            Payload::Local(_) => return request.clone(),
        };
        if self.region.name.as_bytes() == self.encoded_as.as_slice() {
            return request.clone();
        }
        if self.kept.len() <= request.index {
            self.kept.resize(request.index + 1, None);
        }
        let slot = &mut self.kept[request.index];
        let fresh = match slot {
            Some((seen, _)) => seen.as_ptr() != bytes.as_ptr() || seen.len() != bytes.len(),
            None => true,
        };
        if fresh {
            let rewritten = swap_all(bytes, &self.encoded_as, self.region.name.as_bytes());
            *slot = Some((bytes.clone(), rewritten));
        }
        let rewritten = slot.as_ref().map(|(_, r)| r.clone()).unwrap_or_default();
        let payload = match http {
            true => Payload::Http(rewritten),
            false => Payload::Grpc(rewritten),
        };
        Request {
            payload,
            ..request.clone()
        }
    }

    /// Checks an HTTP answer body (`header_len`: its `Inference-Header-Content-Length`).
    pub fn check_http(
        &self,
        memo: &mut CheckedAnswers<()>,
        request: &Request,
        body: &Bytes,
        header_len: Option<usize>,
    ) -> Result<(), Failure> {
        let validating = request.check.expected.is_some();
        let tag = header_len.map_or(u64::MAX, |n| n as u64);
        if !validating && memo.lookup(request.index, tag, body).is_some() {
            return Ok(());
        }
        let json = &body[..header_len.unwrap_or(body.len()).min(body.len())];
        let answer: HttpAnswer = serde_json::from_slice(json).map_err(|e| {
            wire_failure(WireError::Json {
                what: "inference response",
                detail: e.to_string(),
            })
        })?;
        if let (Some(error), None) = (&answer.error, &answer.outputs) {
            return Err(wire_failure(WireError::Server(error.clone())));
        }
        let outputs = answer.outputs.unwrap_or_default();
        // Triton may or may not name the region in the answer: an output with data of its
        // own came back inline.
        let inline =
            |o: &HttpOutput| o.data.is_some() || o.parameters.contains_key("binary_data_size");
        if outputs.iter().any(inline) {
            return check_http(memo, request, body, header_len);
        }
        let tensors = (outputs.into_iter())
            .map(|o| {
                let size = o.parameters.get(BYTE_SIZE_PARAM).and_then(Value::as_u64);
                self.tensor(o.name, &o.datatype, o.shape, size, validating)
            })
            .collect::<Result<Vec<_>, _>>()?;
        request.check.check(&tensors)?;
        if !validating {
            memo.remember(request.index, tag, body, ());
        }
        Ok(())
    }

    /// Checks an encoded `ModelInferResponse`.
    pub fn check_protobuf(
        &self,
        memo: &mut CheckedAnswers<()>,
        request: &Request,
        message: &Bytes,
    ) -> Result<(), Failure> {
        let validating = request.check.expected.is_some();
        if !validating && memo.lookup(request.index, 0, message).is_some() {
            return Ok(());
        }
        let decoded = ModelInferResponse::decode(message.clone()).map_err(|e| {
            Failure::bad(
                Malformation::Unreadable,
                format!("the answer is not a protobuf answer message ({e})"),
            )
        })?;
        let inline = decoded
            .raw_output_contents
            .iter()
            .any(|raw| !raw.is_empty())
            || decoded.outputs.iter().any(|o| o.contents.is_some());
        if inline {
            return check_protobuf(memo, request, message);
        }
        let tensors = (decoded.outputs.into_iter())
            .map(|o| {
                let size =
                    o.parameters
                        .get(BYTE_SIZE_PARAM)
                        .and_then(|p| match p.parameter_choice {
                            Some(ParameterChoice::Int64Param(n)) => u64::try_from(n).ok(),
                            Some(ParameterChoice::Uint64Param(n)) => Some(n),
                            _ => None,
                        });
                self.tensor(o.name, &o.datatype, o.shape, size, validating)
            })
            .collect::<Result<Vec<_>, _>>()?;
        request.check.check(&tensors)?;
        if !validating {
            memo.remember(request.index, 0, message, ());
        }
        Ok(())
    }

    /// An output as the answer describes it, its values read from the region when `read`.
    fn tensor(
        &self,
        name: String,
        datatype: &str,
        shape: Vec<i64>,
        size: Option<u64>,
        read: bool,
    ) -> Result<Tensor, Failure> {
        let datatype = wire::parse_datatype(&name, datatype).map_err(wire_failure)?;
        if !read {
            return Ok(Tensor {
                name,
                datatype,
                shape,
                data: Bytes::new(),
            });
        }
        let len = match (datatype, size) {
            (DataType::Bytes, None) => None,
            (DataType::Bytes, Some(n)) => Some(n as usize),
            _ => Some(
                wire::element_count(&name, &shape).map_err(wire_failure)?
                    * datatype.element_size().unwrap_or(1),
            ),
        };
        let Some(mut data) = self.region.output(&name, len) else {
            return Err(Failure::bad(
                Malformation::WrongShape,
                format!("output '{name}' does not fit its shared-memory region (--output-shared-memory-size is too small?)"),
            ));
        };
        if datatype == DataType::Bytes && len.is_none() {
            let count = wire::element_count(&name, &shape).map_err(wire_failure)?;
            data.truncate(bytes_elements_len(&data, count));
        }
        Ok(Tensor {
            name,
            datatype,
            shape,
            data: Bytes::from(data),
        })
    }
}

#[derive(Deserialize)]
struct HttpAnswer {
    #[serde(default)]
    outputs: Option<Vec<HttpOutput>>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct HttpOutput {
    name: String,
    datatype: String,
    shape: Vec<i64>,
    #[serde(default)]
    parameters: Map<String, Value>,
    #[serde(default)]
    data: Option<Value>,
}

/// The length of the first `count` BYTES elements (4-byte length, then the bytes) in `data`.
fn bytes_elements_len(data: &[u8], count: usize) -> usize {
    let mut at = 0usize;
    for _ in 0..count {
        let Some(head) = data.get(at..at + 4) else {
            return at;
        };
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        at = (at + 4 + len).min(data.len());
    }
    at
}

/// `bytes` with every occurrence of `from` replaced by `to` (of the same length).
fn swap_all(bytes: &Bytes, from: &[u8], to: &[u8]) -> Bytes {
    let mut out = bytes.to_vec();
    if from.len() != to.len() || from.is_empty() {
        return bytes.clone();
    }
    let mut at = 0;
    while at + from.len() <= out.len() {
        if &out[at..at + from.len()] == from {
            out[at..at + from.len()].copy_from_slice(to);
            at += from.len();
        } else {
            at += 1;
        }
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_is_swapped_in_place() {
        let bytes = Bytes::from_static(b"a_out000000 b a_out000000");
        let swapped = swap_all(&bytes, b"a_out000000", b"a_out000042");
        assert_eq!(&swapped[..], b"a_out000042 b a_out000042");
        assert_eq!(bytes_elements_len(&[2, 0, 0, 0, b'h', b'i', 9, 9], 1), 6);
        assert_eq!(bytes_elements_len(&[2, 0, 0], 1), 0);
    }
}
