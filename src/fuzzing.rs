//! The entry points of the fuzz targets (`fuzz/fuzz_targets/`, built with `cargo fuzz`) and
//! of their regression tests (`tests/suite/fuzz_regressions.rs`, on stable): each feeds arbitrary
//! bytes to one parser of untrusted input and asserts only what must hold for every input —
//! no panic, no unbounded allocation, and a few cheap invariants (a decoded frame is as long
//! as its prefix says; what decodes re-encodes to the same value). Not an API.

use std::collections::BTreeMap;

use bytes::Bytes;
use prost::Message;

use crate::backend::api::kserve::answer;
use crate::backend::api::openai::events;
use crate::backend::memo::CheckedAnswers;
use crate::backend::transport::h2::MessageReader;
use crate::backend::transport::http1;
use crate::backend::{AnswerCheck, Payload, Request};
use crate::cli::{clap_sentence, normalize_args, top_help, Command};
use crate::config::sweep::{Ports, SweepPlan};
use crate::config::Config;
use crate::data::{entry, json_file};
use inferperf_wire::model::{DataType, ModelSpec, TensorSpec};
use inferperf_wire::proto::{ModelInferRequest, ModelInferResponse, ModelStreamInferResponse};
use inferperf_wire::{self as wire, InferRequest, InferResponse};

/// An HTTP/1.1 response as the hand-written reader reads it, the input being everything the
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
        check_answer(&response);
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
        check_answer(&response);
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

fn grpc_message(message: &Bytes) {
    let request = sample_request();
    let _ = crate::backend::open_inference::answer::check_protobuf(
        &mut CheckedAnswers::default(),
        &request,
        message,
    );
    let _ = answer::check_stream_message(&mut CheckedAnswers::default(), &request, message);
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
/// events must not depend on it. Each event is then read as an OpenAI chunk, and the whole
/// body as an unstreamed answer.
pub fn sse_events(data: &[u8]) {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let whole = events_of(body, body.len().max(1));
    let parts = events_of(body, usize::from(step % 32) + 1);
    assert_eq!(whole, parts, "events do not depend on how the body arrives");
    let (mut gaps, mut text) = (Vec::new(), crate::backend::AnswerText::default());
    let mut ex =
        crate::backend::Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
    for event in &whole.0 {
        let _ = events::is_done(event);
        let _ = events::read_chunk(event, &mut ex);
    }
    let _ = events::read_answer(body, true, &mut ex);
    let _ = events::read_answer(body, false, &mut ex);
}

fn events_of(body: &[u8], step: usize) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut reader = events::EventReader::default();
    let mut out = Vec::new();
    for part in body.chunks(step) {
        reader.buffer().extend_from_slice(part);
        while let Some(event) = reader.next_event() {
            out.push(event);
        }
    }
    (out, reader.leftover().to_vec())
}

/// A `--input-data` JSON file, for a model with fixed, variable and BYTES inputs that
/// batches, and for the same model with `--shape` given.
pub fn input_data(data: &[u8]) {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let model = sample_model();
    let mut shapes = BTreeMap::new();
    for given in [false, true] {
        if given {
            shapes.insert("DYN".to_string(), vec![3]);
        }
        let Ok(entries) = json_file::parse("fuzz.json", &doc, &model, &shapes) else {
            continue;
        };
        for e in &entries {
            for t in e.inputs.iter().chain(e.expected.iter().flatten()) {
                t.validate().expect("a read tensor is valid");
            }
            let _ = AnswerCheck::new(&model, e, 1e-5);
        }
        if let Ok(batched) = entry::batch_entries(&entries, &model, 2) {
            for t in batched.iter().flat_map(|e| &e.inputs) {
                t.validate().expect("a batched tensor is valid");
            }
        }
    }
}

/// A command line: the bytes split at NUL and newline into arguments after `inferperf`,
/// read as `main` reads them, then checked by `Config::from_args` (profile) or
/// `SweepPlan::from_args` (sweep). Errors are fine; panics are not.
pub fn flags(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut args = vec!["inferperf".to_string()];
    args.extend(text.split(['\0', '\n']).map(str::to_string));
    // --request-intervals reads the file it names: not a device or a kernel file.
    if args
        .iter()
        .any(|a| ["/dev", "/proc", "/sys"].iter().any(|d| a.contains(d)))
    {
        return;
    }
    let _ = top_help(&args);
    let args = normalize_args(args);
    if crate::cli::refuse_aiperf_only(&args).is_some() {
        return;
    }
    let cli = match crate::cli::parse_command_line(args.iter().cloned()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = clap_sentence(&e, &args);
            return;
        }
    };
    match cli.command {
        Command::Profile(profile) => {
            if let Ok(config) = Config::from_args(&profile) {
                let _ = config.load.max_concurrency();
                let _ = config.load.concurrency_levels().take(1000).count();
                let _ = config.load.levels().take(1000).count();
                if let Some(plan) = config.load.mode.timeline() {
                    let total = plan.total();
                    let _ = plan.value_at(total / 2);
                    let _ = plan.mean_over(total / 4, total);
                }
            }
        }
        Command::Sweep(sweep) => {
            if let Ok(plan) = SweepPlan::from_args(&sweep) {
                let ports = Ports {
                    port: 8000,
                    grpc_port: Some(8001),
                    metrics_port: Some(8002),
                };
                for setting in plan.settings().iter().take(16) {
                    let _ = plan.command(setting, &ports);
                    let _ = plan.profile_config(setting, &ports);
                }
            }
        }
        _ => {}
    }
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

/// The answer check of a request for two outputs runs on whatever decoded.
fn check_answer(response: &InferResponse) {
    let _ = sample_request().check.check(&response.outputs);
}

fn spec(name: &str, datatype: DataType, shape: &[i64]) -> TensorSpec {
    TensorSpec {
        name: name.to_string(),
        datatype,
        shape: shape.to_vec(),
    }
}

fn sample_request() -> Request {
    Request {
        index: 0,
        payload: Payload::Http(Bytes::new()),
        input_tokens: 0,
        max_tokens: None,
        check: AnswerCheck {
            outputs: vec![
                spec("OUT", DataType::Fp32, &[1, -1]),
                spec("TEXT", DataType::Bytes, &[1]),
            ],
            expected: None,
            tolerance: 1e-5,
        }
        .into(),
    }
}

fn sample_model() -> ModelSpec {
    ModelSpec {
        name: "m".into(),
        inputs: vec![
            spec("FIXED", DataType::Int32, &[2, 2]),
            spec("DYN", DataType::Fp16, &[-1]),
            spec("TEXT", DataType::Bytes, &[1]),
            spec("FLAG", DataType::Bool, &[-1, 1]),
        ],
        outputs: vec![spec("OUT", DataType::Fp32, &[-1])],
        max_batch_size: 4,
        ..Default::default()
    }
}
