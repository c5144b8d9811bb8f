//! The dataset: the requests of a run, built once from the model and the flags and encoded
//! once for the protocol in use, so that sending a request only clones a `Bytes`.

pub mod directory;
pub mod entry;
pub mod generate;
pub mod json_file;
pub mod shape;
pub mod values;

use bytes::Bytes;
use prost::Message;

use crate::config::{Config, Protocol, ServiceKind, TensorFormat};
use crate::error::{RunError, RunResult};
use crate::model::{DataType, ModelSpec, TensorSpec};
use crate::wire::{self, InferRequest, RequestedOutput, Tensor};
use generate::{element_count, tensor_bytes, GenerateOptions};

/// One request body, ready to send.
#[derive(Debug, Clone)]
pub enum Payload {
    /// The whole HTTP request (request line, headers and body), framed once.
    Http { request: Bytes },
    /// An encoded `ModelInferRequest` in gRPC's length-prefixed framing.
    Grpc { framed: Bytes },
    /// The request itself, for in-process calls (`--service-kind local`).
    Local {
        request: std::sync::Arc<InferRequest>,
    },
}

/// The requests of a run and their encoded payloads, in the same order.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub requests: Vec<InferRequest>,
    pub payloads: Vec<Payload>,
    /// Per request: the `"timestamp"` of its (first) entry in milliseconds, for
    /// `--fixed-schedule`; `None` for generated data.
    pub timestamps_ms: Vec<Option<f64>>,
    /// Per request: the outputs the input data expects (`validation_data`), if any.
    pub expected: Vec<Option<Vec<Tensor>>>,
}

impl Dataset {
    /// Builds and encodes the run's requests (random or zero data is generated once and
    /// reused, as perf_analyzer does).
    pub fn build(cfg: &Config, model: &ModelSpec) -> RunResult<Dataset> {
        let model = &with_declared_inputs(cfg, model)?;
        shape::check_request_flags(model, &cfg.shapes, cfg.batch_size)?;
        if let Some(entries) = entry::load(cfg, model)? {
            return entry::dataset(cfg, model, &entries);
        }
        let request = build_request(cfg, model)?;
        let payload = encode(cfg, model, &request)?;
        Ok(Dataset {
            requests: vec![request],
            payloads: vec![payload],
            timestamps_ms: vec![None],
            expected: vec![None],
        })
    }

    pub fn len(&self) -> usize {
        self.payloads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }
}

/// The HTTP tensor format: the one asked for, or binary when the server lists the binary
/// tensor data extension and JSON when it does not (MLServer, KServe).
pub fn effective_format(asked: Option<TensorFormat>, model: &ModelSpec) -> TensorFormat {
    asked.unwrap_or(if model.server_has_extension("binary_tensor_data") {
        TensorFormat::Binary
    } else {
        TensorFormat::Json
    })
}

/// Some servers (the KServe model server) list no inputs in their metadata: then the inputs
/// are the ones named by `--shape`, with `--input-datatype` (FP32 by default), taken as
/// full shapes.
fn with_declared_inputs(cfg: &Config, model: &ModelSpec) -> RunResult<ModelSpec> {
    if !model.inputs.is_empty() {
        return Ok(model.clone());
    }
    if cfg.shapes.is_empty() {
        return Err(RunError::bad_option(format!(
            "Model '{}' lists no inputs in its metadata: pass --shape NAME:d1,d2,... for each input (and --input-datatype NAME:TYPE when it is not FP32).",
            model.name
        )));
    }
    let mut model = model.clone();
    model.max_batch_size = 0;
    model.inputs = cfg
        .shapes
        .iter()
        .map(|(name, dims)| TensorSpec {
            name: name.clone(),
            datatype: cfg
                .input_datatypes
                .get(name)
                .copied()
                .unwrap_or(DataType::Fp32),
            shape: dims.clone(),
        })
        .collect();
    Ok(model)
}

fn build_request(cfg: &Config, model: &ModelSpec) -> RunResult<InferRequest> {
    let mut inputs = Vec::with_capacity(model.inputs.len());
    for (index, input) in model.inputs.iter().enumerate() {
        let shape = shape::request_shape(input, model, &cfg.shapes, cfg.batch_size)?;
        let opts = GenerateOptions {
            source: cfg.input_data.clone(),
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
    Ok(request_with_inputs(cfg, model, inputs))
}

/// A request carrying `inputs` and asking for every output of the model.
fn request_with_inputs(cfg: &Config, model: &ModelSpec, inputs: Vec<Tensor>) -> InferRequest {
    let binary_output = cfg.protocol == Protocol::Http
        && effective_format(cfg.output_format, model) == TensorFormat::Binary;
    let outputs = model
        .outputs
        .iter()
        .map(|o| RequestedOutput {
            name: o.name.clone(),
            binary: binary_output,
        })
        .collect();
    InferRequest {
        id: String::new(),
        inputs,
        outputs,
        binary_output,
        parameters: Default::default(),
    }
}

/// Encodes one request for the configured protocol and tensor format.
pub fn encode(cfg: &Config, model: &ModelSpec, request: &InferRequest) -> RunResult<Payload> {
    if cfg.service_kind == ServiceKind::Local {
        return Ok(Payload::Local {
            request: std::sync::Arc::new(request.clone()),
        });
    }
    match cfg.protocol {
        Protocol::Http => {
            let binary = effective_format(cfg.input_format, model) == TensorFormat::Binary;
            let encoded = wire::encode_http_request(request, binary)
                .map_err(|e| RunError::failed(format!("Cannot encode the request: {e}.")))?;
            Ok(Payload::Http {
                request: crate::backend::kserve_http::infer_request(
                    cfg,
                    &encoded.body,
                    encoded.header_len,
                ),
            })
        }
        Protocol::Grpc => {
            let message = wire::to_grpc_request(&cfg.model_name, &cfg.model_version, request);
            Ok(Payload::Grpc {
                framed: crate::backend::grpc_unary::frame_message(&message.encode_to_vec()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::test_config;

    fn model(extensions: &[&str], inputs: Vec<TensorSpec>) -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            inputs,
            server_extensions: extensions.iter().map(|e| e.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn json_is_chosen_when_the_server_lacks_the_binary_extension() {
        let triton = model(&["binary_tensor_data"], vec![]);
        let mlserver = model(&[], vec![]);
        assert_eq!(effective_format(None, &triton), TensorFormat::Binary);
        assert_eq!(effective_format(None, &mlserver), TensorFormat::Json);
        assert_eq!(
            effective_format(Some(TensorFormat::Binary), &mlserver),
            TensorFormat::Binary
        );
    }

    #[test]
    fn undeclared_inputs_come_from_shape_flags() {
        let mut cfg = test_config();
        let bare = model(&[], vec![]);
        let err = Dataset::build(&cfg, &bare).unwrap_err();
        assert!(err.to_string().contains("--shape NAME:"), "{err}");
        cfg.shapes.insert("x".into(), vec![2, 3]);
        cfg.input_datatypes.insert("x".into(), DataType::Int8);
        let data = Dataset::build(&cfg, &bare).unwrap();
        let input = &data.requests[0].inputs[0];
        assert_eq!((input.name.as_str(), input.datatype), ("x", DataType::Int8));
        assert_eq!(input.shape, vec![2, 3]);
        assert_eq!(input.data.len(), 6);
    }
}
