//! The entry points of the fuzz targets on the client's own readers (`fuzz/client/`, built
//! with `cargo fuzz` for long runs) and of their smoke on stable (`tests/suite/
//! fuzz_regressions.rs`: seeds, past crashes and seeded mutations of them): what a server
//! answers as the answer checks and the OpenAI reader read it, `--input-data` files, and
//! command lines. Each feeds arbitrary bytes to one reader and asserts only what must hold
//! for every input: no panic, no unbounded allocation, valid tensors. The readers under
//! them that need no client (HTTP/1.1, gRPC framing, server-sent events, KServe tensors)
//! have their targets in the wire crate (`inferperf_wire::fuzzing`). Not an API.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::backend::api::kserve::answer;
use crate::backend::api::openai::events;
use crate::backend::memo::CheckedAnswers;
use crate::backend::{AnswerCheck, Payload, Request};
use crate::cli::{clap_sentence, normalize_args, top_help, Command};
use crate::config::sweep::{Ports, SweepPlan};
use crate::config::Config;
use crate::data::{entry, json_file};
use inferperf_wire as wire;
use inferperf_wire::fuzzing::events_of;
use inferperf_wire::model::{DataType, ModelSpec, TensorSpec};

/// What a server answers, read by the client's answer readers: the bytes as a KServe v2
/// JSON answer and, after a four-byte header length, as one with binary tensor data, each
/// checked against a request for two outputs; as a gRPC answer message (unary and stream)
/// checked the same way; and as an OpenAI answer and a stream of its chunks. The framing
/// and tensor decoding under these are the wire crate's targets.
pub fn answers(data: &[u8]) {
    let request = sample_request();
    if let Ok(response) = wire::decode_http_response(data, None) {
        let _ = request.check.check(&response.outputs);
    }
    if let Some((len, body)) = data.split_first_chunk::<4>() {
        let header_len = Some(u32::from_le_bytes(*len) as usize);
        let body = Bytes::copy_from_slice(body);
        if let Ok(response) = wire::decode_http_response_bytes(&body, header_len) {
            let _ = request.check.check(&response.outputs);
        }
    }
    let message = Bytes::copy_from_slice(data);
    let _ = crate::backend::open_inference::answer::check_protobuf(
        &mut CheckedAnswers::default(),
        &request,
        &message,
    );
    let _ = answer::check_stream_message(&mut CheckedAnswers::default(), &request, &message);
    let (mut gaps, mut text) = (Vec::new(), crate::backend::AnswerText::default());
    let mut ex =
        crate::backend::Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
    for event in &events_of(data, data.len().max(1)).0 {
        let _ = events::read_chunk(event, &mut ex);
    }
    let _ = events::read_answer(data, true, &mut ex);
    let _ = events::read_answer(data, false, &mut ex);
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
