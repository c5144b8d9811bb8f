//! The dataset: the requests of a run, built once from the model and the flags and encoded
//! once for the protocol in use, so that sending a request only clones a `Bytes`.

pub mod generate;
pub mod shape;

use bytes::Bytes;
use prost::Message;

use crate::config::{Config, Protocol, TensorFormat};
use crate::error::{RunError, RunResult};
use crate::model::ModelSpec;
use crate::wire::{self, InferRequest, RequestedOutput, Tensor};
use generate::{element_count, tensor_bytes, GenerateOptions};

/// One request body, ready to send.
#[derive(Debug, Clone)]
pub enum Payload {
    /// An HTTP body; `header_len` goes into `Inference-Header-Content-Length` when binary
    /// tensor data follows the JSON.
    Http {
        body: Bytes,
        header_len: Option<usize>,
    },
    /// An encoded `ModelInferRequest` message.
    Grpc { message: Bytes },
}

/// The requests of a run and their encoded payloads, in the same order.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub requests: Vec<InferRequest>,
    pub payloads: Vec<Payload>,
}

impl Dataset {
    /// Builds and encodes the run's requests (random or zero data is generated once and
    /// reused, as perf_analyzer does).
    pub fn build(cfg: &Config, model: &ModelSpec) -> RunResult<Dataset> {
        shape::check_request_flags(model, &cfg.shapes, cfg.batch_size)?;
        let request = build_request(cfg, model)?;
        let payload = encode(cfg, &request)?;
        Ok(Dataset {
            requests: vec![request],
            payloads: vec![payload],
        })
    }

    pub fn len(&self) -> usize {
        self.payloads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }
}

fn build_request(cfg: &Config, model: &ModelSpec) -> RunResult<InferRequest> {
    if model.inputs.is_empty() {
        return Err(RunError::failed(format!(
            "Model '{}' lists no inputs in its metadata, so inferperf cannot tell what to send: check the model on the server.",
            model.name
        )));
    }
    let mut inputs = Vec::with_capacity(model.inputs.len());
    for (index, input) in model.inputs.iter().enumerate() {
        let shape = shape::request_shape(input, model, &cfg.shapes, cfg.batch_size)?;
        let opts = GenerateOptions {
            source: cfg.input_data,
            string_length: cfg.string_length,
            string_data: cfg.string_data.clone(),
            seed: 0x1f_e2e5 + index as u64,
        };
        inputs.push(Tensor {
            name: input.name.clone(),
            datatype: input.datatype,
            data: tensor_bytes(input.datatype, element_count(&shape), &opts),
            shape,
        });
    }
    let binary_output = cfg.output_format == TensorFormat::Binary;
    let outputs = model
        .outputs
        .iter()
        .map(|o| RequestedOutput {
            name: o.name.clone(),
            binary: binary_output,
        })
        .collect();
    Ok(InferRequest {
        id: String::new(),
        inputs,
        outputs,
        binary_output,
        parameters: Default::default(),
    })
}

/// Encodes one request for the configured protocol and tensor format.
pub fn encode(cfg: &Config, request: &InferRequest) -> RunResult<Payload> {
    match cfg.protocol {
        Protocol::Http => {
            let binary = cfg.input_format == TensorFormat::Binary;
            let encoded = wire::encode_http_request(request, binary)
                .map_err(|e| RunError::failed(format!("Cannot encode the request: {e}.")))?;
            Ok(Payload::Http {
                body: encoded.body,
                header_len: encoded.header_len,
            })
        }
        Protocol::Grpc => {
            let message = wire::to_grpc_request(&cfg.model_name, &cfg.model_version, request);
            Ok(Payload::Grpc {
                message: Bytes::from(message.encode_to_vec()),
            })
        }
    }
}
