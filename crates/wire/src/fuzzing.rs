//! The entry points of the fuzz targets built on this crate alone (`fuzz/fuzz_targets/`,
//! built with `cargo fuzz`; CI's fuzz smoke runs them) and of their regression tests on
//! stable. Each feeds arbitrary bytes to one reader of what a server sends and asserts only
//! what must hold for every input — no panic, no unbounded allocation, and a few cheap
//! invariants (a framed message is as long as its prefix says; what decodes re-encodes to
//! the same value; what is read does not depend on how the bytes arrive). The client's own
//! readers (answer checks, OpenAI chunks, input-data files, flags) have theirs in the
//! client's crate. Not an API.

use bytes::Bytes;
use prost::Message;

use crate::grpc_frames::MessageReader;
use crate::proto::{ModelInferRequest, ModelInferResponse, ModelStreamInferResponse};
use crate::sse::{is_done, EventReader};
use crate::{self as wire, http1, InferRequest, InferResponse};

/// An HTTP/1.1 response as the client's reader reads it, the input being everything the
/// server sent before it closed.
pub fn http1_response(data: &[u8]) {
    if let Ok(response) = http1::read_whole_response(data) {
        assert!(!(100..200).contains(&response.status), "a final answer");
        if let Some(n) = response.content_length {
            assert_eq!(response.body.len(), n, "the body is as long as declared");
        }
        assert!(response.body.len() + response.trailing <= data.len());
    }
    // The reader parses the head again as bytes arrive: a head found in a buffer is found,
    // as long, when the buffer ends right after it.
    if let Ok(Some(len)) = http1::head_length(data) {
        assert!(len <= data.len());
        assert_eq!(http1::head_length(&data[..len]), Ok(Some(len)));
    }
}

/// A KServe v2 JSON body (response and request, no binary part).
pub fn kserve_json(data: &[u8]) {
    if let Ok(response) = wire::decode_http_response(data, None) {
        check_response(&response);
        if let Ok(again) = wire::encode_http_response(&response, &|_| false) {
            let back = wire::decode_http_response(&again.body, again.header_len);
            assert_eq!(back.as_ref(), Ok(&response), "JSON re-encoding round-trips");
        }
    }
    if let Ok(request) = wire::decode_http_request(data, None) {
        check_request(&request);
        if let Ok(again) = wire::encode_http_request(&request, false) {
            let back = wire::decode_http_request(&again.body, again.header_len);
            assert_eq!(back.as_ref(), Ok(&request), "JSON re-encoding round-trips");
        }
    }
}

/// A KServe v2 body with binary tensor data: the first four bytes are the
/// `Inference-Header-Content-Length` (little-endian), the rest is the body.
pub fn kserve_binary(data: &[u8]) {
    let Some((len, body)) = data.split_first_chunk::<4>() else {
        return;
    };
    let header_len = Some(u32::from_le_bytes(*len) as usize);
    let body = Bytes::copy_from_slice(body);
    if let Ok(response) = wire::decode_http_response_bytes(&body, header_len) {
        check_response(&response);
        let again = wire::encode_http_response(&response, &|_| true).expect("valid tensors encode");
        let back = wire::decode_http_response_bytes(&again.body, again.header_len);
        assert_eq!(
            back.as_ref(),
            Ok(&response),
            "binary re-encoding round-trips"
        );
    }
    if let Ok(request) = wire::decode_http_request_bytes(&body, header_len) {
        check_request(&request);
        let again = wire::encode_http_request(&request, true).expect("valid tensors encode");
        let back = wire::decode_http_request_bytes(&again.body, again.header_len);
        assert_eq!(
            back.as_ref(),
            Ok(&request),
            "binary re-encoding round-trips"
        );
    }
}

/// gRPC's length-prefixed messages read from DATA chunks: the first byte sets the chunk
/// size, the rest is the stream. Each message is then read as the protobuf messages a
/// client (answers, stream answers) and the embedded server (requests) decode.
pub fn grpc_frame(data: &[u8]) {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let mut reader = MessageReader::default();
    let mut consumed = 0;
    for chunk in stream.chunks(usize::from(step).max(1)) {
        reader.push(Bytes::copy_from_slice(chunk));
        loop {
            match reader.next_message() {
                Ok(Some(message)) => {
                    let frame = &stream[consumed..];
                    let prefix = u32::from_be_bytes([frame[1], frame[2], frame[3], frame[4]]);
                    assert_eq!(frame[0], 0, "only uncompressed messages are handed out");
                    assert_eq!(message.len(), prefix as usize, "as long as its prefix");
                    assert_eq!(&message[..], &frame[5..5 + message.len()]);
                    consumed += 5 + message.len();
                    grpc_message(&message);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    assert_eq!(consumed + reader.leftover(), stream.len(), "no byte lost");
}

/// One gRPC message read as what the client and the embedded server decode.
pub fn grpc_message(message: &Bytes) {
    if let Ok(decoded) = ModelInferResponse::decode(message.clone()) {
        if let Ok(response) = wire::from_grpc_response(decoded) {
            check_response(&response);
            let back = wire::from_grpc_response(wire::to_grpc_response(&response));
            assert_eq!(back.as_ref(), Ok(&response), "gRPC re-encoding round-trips");
        }
    }
    if let Ok(decoded) = ModelStreamInferResponse::decode(message.clone()) {
        if let Some(response) = decoded.infer_response {
            let _ = wire::from_grpc_response(response);
        }
    }
    if let Ok(decoded) = ModelInferRequest::decode(message.clone()) {
        if let Ok(request) = wire::from_grpc_request(decoded) {
            check_request(&request);
        }
    }
}

/// Server-sent events: the first byte sets the size of the parts the body arrives in; the
/// events must not depend on it.
pub fn sse_events(data: &[u8]) {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let whole = events_of(body, body.len().max(1));
    let parts = events_of(body, usize::from(step % 32) + 1);
    assert_eq!(whole, parts, "events do not depend on how the body arrives");
    for event in &whole.0 {
        let _ = is_done(event);
    }
}

/// The events a body gives when it arrives in parts of `step` bytes, and what is left.
pub fn events_of(body: &[u8], step: usize) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut reader = EventReader::default();
    let mut out = Vec::new();
    for part in body.chunks(step) {
        reader.buffer().extend_from_slice(part);
        while let Some(event) = reader.next_event() {
            out.push(event);
        }
    }
    (out, reader.leftover().to_vec())
}

/// Decoded tensors satisfy their own shape and datatype.
fn check_response(response: &InferResponse) {
    for t in &response.outputs {
        t.validate().expect("a decoded tensor is valid");
    }
}

fn check_request(request: &InferRequest) {
    for t in &request.inputs {
        t.validate().expect("a decoded tensor is valid");
    }
}
