//! A sequence step's parameters (`sequence_id`, `sequence_start`, `sequence_end`) put into
//! a request encoded once per dataset entry: only the few parameter bytes are written per
//! request, so sequence runs keep the pre-encoding and plain requests are not touched.
//! HTTP: the keys go at the front of the JSON header's `parameters` object and the two
//! lengths are rewritten; gRPC: the keys are appended as `parameters` map entries (field 4
//! of `ModelInferRequest`; protobuf merges repeated map entries) and the frame's length
//! prefix is rewritten.

use bytes::{BufMut, Bytes, BytesMut};
use prost::encoding::{encode_key, encode_varint, WireType};

use crate::backend::open_inference::parameters::sequence_members;
use crate::backend::Payload;
use inferperf_wire::model::SequenceStep;

/// A KServe request with the step's parameters; `None` when its bytes are not a request
/// this adapter encoded.
pub fn patch(payload: &Payload, step: &SequenceStep) -> Option<Payload> {
    match payload {
        Payload::Http(bytes) => patch_http(bytes, step).map(Payload::Http),
        Payload::Grpc(bytes) => patch_grpc(bytes, step).map(Payload::Grpc),
        Payload::Local(_) => None,
    }
}

/// The framed HTTP request `framed` with the step's parameters in its JSON header; `None`
/// when the bytes are not a request this module framed.
pub fn patch_http(framed: &Bytes, step: &SequenceStep) -> Option<Bytes> {
    let head_end = find(framed, b"\r\n\r\n")? + 4;
    let (head, body) = framed.split_at(head_end);
    let open = b"{\"parameters\":{";
    let (keep, rest, mut insert) = if body.starts_with(open) {
        let separator = if body.get(open.len()) == Some(&b'}') {
            ""
        } else {
            ","
        };
        (
            &body[..open.len()],
            &body[open.len()..],
            sequence_members(step) + separator,
        )
    } else if body.first() == Some(&b'{') {
        (
            &body[..1],
            &body[1..],
            format!("\"parameters\":{{{}}},", sequence_members(step)),
        )
    } else {
        return None;
    };
    let grown = insert.len();
    let head = grow_header(head, "content-length: ", grown)?;
    let head = match find(&head, b"inference-header-content-length: ") {
        Some(_) => grow_header(&head, "inference-header-content-length: ", grown)?,
        None => head,
    };
    let mut out = BytesMut::with_capacity(head.len() + body.len() + grown);
    out.put_slice(&head);
    out.put_slice(keep);
    out.put_slice(std::mem::take(&mut insert).as_bytes());
    out.put_slice(rest);
    Some(out.freeze())
}

/// The head with the number after `name` (at a line start) grown by `by`.
fn grow_header(head: &[u8], name: &str, by: usize) -> Option<Vec<u8>> {
    let at = find_line(head, name.as_bytes())? + name.len();
    let end = at + head[at..].iter().position(|&b| b == b'\r')?;
    let value: usize = std::str::from_utf8(&head[at..end]).ok()?.parse().ok()?;
    let mut out = Vec::with_capacity(head.len() + 4);
    out.extend_from_slice(&head[..at]);
    out.extend_from_slice((value + by).to_string().as_bytes());
    out.extend_from_slice(&head[end..]);
    Some(out)
}

/// Where a header line starting with `name` begins.
fn find_line(head: &[u8], name: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = find(&head[from..], name) {
        let at = from + at;
        if at >= 2 && &head[at - 2..at] == b"\r\n" {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The gRPC-framed `ModelInferRequest` with the step's parameters appended.
pub fn patch_grpc(framed: &Bytes, step: &SequenceStep) -> Option<Bytes> {
    let message = framed.get(5..)?;
    let mut extra = Vec::with_capacity(64);
    let id = if step.string_id {
        Parameter::Text(step.id.to_string())
    } else {
        Parameter::Int(step.id as i64)
    };
    map_entry(&mut extra, "sequence_id", &id);
    if step.start {
        map_entry(&mut extra, "sequence_start", &Parameter::Bool(true));
    }
    if step.end {
        map_entry(&mut extra, "sequence_end", &Parameter::Bool(true));
    }
    let len = u32::try_from(message.len() + extra.len()).ok()?;
    let mut out = BytesMut::with_capacity(5 + len as usize);
    out.put_u8(0);
    out.put_u32(len);
    out.put_slice(message);
    out.put_slice(&extra);
    Some(out.freeze())
}

/// An `InferParameter`'s value (`bool_param` = 1, `int64_param` = 2, `string_param` = 3).
enum Parameter {
    Bool(bool),
    Int(i64),
    Text(String),
}

/// One `map<string, InferParameter> parameters = 4` entry.
fn map_entry(out: &mut Vec<u8>, key: &str, value: &Parameter) {
    let mut param = Vec::new();
    match value {
        Parameter::Bool(b) => {
            encode_key(1, WireType::Varint, &mut param);
            encode_varint(u64::from(*b), &mut param);
        }
        Parameter::Int(n) => {
            encode_key(2, WireType::Varint, &mut param);
            encode_varint(*n as u64, &mut param);
        }
        Parameter::Text(s) => length_delimited(&mut param, 3, s.as_bytes()),
    }
    let mut entry = Vec::new();
    length_delimited(&mut entry, 1, key.as_bytes());
    length_delimited(&mut entry, 2, &param);
    length_delimited(out, 4, &entry);
}

fn length_delimited(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferperf_wire::grpc_frames::frame;
    use inferperf_wire::{self as wire, InferRequest, Tensor};
    use prost::Message;

    fn step(start: bool, end: bool, string_id: bool) -> SequenceStep {
        SequenceStep {
            id: 42,
            start,
            end,
            string_id,
        }
    }

    fn request(binary_output: bool) -> InferRequest {
        InferRequest {
            id: String::new(),
            inputs: vec![Tensor {
                name: "INPUT".into(),
                datatype: inferperf_wire::model::DataType::Int32,
                shape: vec![1],
                data: Bytes::from_static(&[3, 0, 0, 0]),
            }],
            outputs: Vec::new(),
            binary_output,
            parameters: Default::default(),
        }
    }

    #[test]
    fn http_requests_carry_the_step_and_lengths_that_fit() {
        for (binary_in, binary_out) in [(false, false), (true, true), (false, true)] {
            let encoded = wire::encode_http_request(&request(binary_out), binary_in).unwrap();
            let mut head = String::from("POST /v2/models/m/infer HTTP/1.1\r\nhost: h\r\n");
            if let Some(n) = encoded.header_len {
                head += &format!("inference-header-content-length: {n}\r\n");
            }
            head += &format!("content-length: {}\r\n\r\n", encoded.body.len());
            let framed = Bytes::from([head.as_bytes(), &encoded.body].concat());
            let patched = patch_http(&framed, &step(true, false, false)).unwrap();
            let text = String::from_utf8_lossy(&patched);
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            let length: usize = head
                .split("content-length: ")
                .last()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(length, body.len(), "{text}");
            let json_len = match encoded.header_len {
                Some(_) => {
                    let at = head.find("inference-header-content-length: ").unwrap() + 33;
                    head[at..].split("\r\n").next().unwrap().parse().unwrap()
                }
                None => body.len(),
            };
            let header: serde_json::Value = serde_json::from_str(&body[..json_len]).unwrap();
            assert_eq!(header["parameters"]["sequence_id"], 42, "{header}");
            assert_eq!(header["parameters"]["sequence_start"], true);
            assert!(header["parameters"].get("sequence_end").is_none());
            assert_eq!(
                header["parameters"]["binary_data_output"].as_bool(),
                binary_out.then_some(true)
            );
        }
    }

    #[test]
    fn grpc_requests_carry_the_step_as_parameters() {
        let message = wire::to_grpc_request("m", "", &request(false));
        let framed = frame(&message.encode_to_vec(), None);
        let patched = patch_grpc(&framed, &step(false, true, true)).unwrap();
        let len = u32::from_be_bytes(patched[1..5].try_into().unwrap()) as usize;
        assert_eq!(len, patched.len() - 5);
        let decoded = inferperf_wire::proto::ModelInferRequest::decode(&patched[5..]).unwrap();
        let request = wire::from_grpc_request(decoded).unwrap();
        assert_eq!(request.parameters["sequence_id"], "42");
        assert_eq!(request.parameters["sequence_end"], true);
        assert!(request.parameters.get("sequence_start").is_none());
        assert_eq!(request.inputs.len(), 1);
    }
}
