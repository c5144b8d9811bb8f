//! The KServe v2 adapter (the Open Inference Protocol, which Triton, KServe, MLServer and the
//! embedded server speak): discovery over REST or gRPC, requests encoded once per dataset
//! entry — an HTTP request with a JSON or binary-extension body, or a framed
//! `ModelInferRequest` — and the connections that carry them: HTTP/1.1, unary gRPC, or a
//! `ModelStreamInfer` stream with `--streaming`.

pub mod answer;
pub mod grpc;
pub mod request;
pub mod rest;
pub mod sequence;
pub mod shm;
pub mod shm_answer;
pub mod shm_control;
pub mod statistics;
pub mod stream;
pub mod trace;
pub mod unary;

use prost::Message;
use serde_json::Value;

use crate::backend::open_inference::parameters::request_parameters;
use crate::backend::outcome::ErrorKind;
use crate::backend::statistics::StatsSource;
use crate::backend::{requested_outputs, Adapter, Connection, Discovered, Payload, Target};
use crate::config::shm::SharedMemory;
use crate::config::{KserveSettings, Protocol, TargetConfig, TensorFormat};
use crate::data::Entry;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::grpc_frames;
use inferperf_wire::model::{ModelSpec, SequenceStep};
use inferperf_wire::{self as wire, InferRequest};

/// The KServe v2 adapter, with the flags that shape its requests.
#[derive(Debug, Clone)]
pub struct Kserve {
    /// `--input-tensor-format` / `--output-tensor-format` (None: the server's best).
    input_format: Option<TensorFormat>,
    output_format: Option<TensorFormat>,
    /// `--streaming`: every request over `ModelStreamInfer`.
    streaming: bool,
    /// `--request-parameter`s as JSON values, put into every request when it is encoded.
    parameters: serde_json::Map<String, Value>,
    /// `--shared-memory system`: the run's regions.
    shm: Option<std::sync::Arc<shm::ShmSession>>,
}

impl Kserve {
    /// The adapter of `target`'s run, whose requests carry `batch_size` inferences.
    pub fn new(target: &TargetConfig, settings: &KserveSettings, batch_size: u32) -> Kserve {
        let shm = &settings.shm;
        Kserve {
            input_format: target.input_format,
            output_format: target.output_format,
            streaming: target.streaming,
            parameters: request_parameters(&settings.request_parameters),
            shm: (shm.mode == SharedMemory::System)
                .then(|| std::sync::Arc::new(shm::ShmSession::new(shm, batch_size))),
        }
    }

    /// The request of one entry, asking for every output the model declares.
    fn request(&self, target: &Target, model: &ModelSpec, entry: &Entry) -> InferRequest {
        let binary_output = target.protocol == Protocol::Http
            && effective_format(self.output_format, model) == TensorFormat::Binary;
        let outputs = requested_outputs(model, binary_output);
        let mut parameters = self.parameters.clone();
        if self.streaming {
            parameters.insert(answer::ENABLE_EMPTY_FINAL.into(), Value::Bool(true));
        }
        InferRequest {
            id: String::new(),
            inputs: entry.inputs.clone(),
            outputs,
            binary_output,
            parameters,
        }
    }
}

#[allow(async_fn_in_trait)]
impl Adapter for Kserve {
    fn shm(&self) -> Option<&std::sync::Arc<shm::ShmSession>> {
        self.shm.as_ref()
    }

    fn in_sequence(&self, payload: &Payload, step: &SequenceStep) -> Option<Payload> {
        sequence::patch(payload, step)
    }

    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        match target.protocol {
            Protocol::Http => rest::discover(target).await,
            Protocol::Grpc => grpc::discover(target).await,
        }
    }

    fn encode(&self, target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        if let Some(session) = &self.shm {
            return session.encode(target, model, entry, &self.parameters);
        }
        let request = self.request(target, model, entry);
        match target.protocol {
            Protocol::Http => {
                let binary = effective_format(self.input_format, model) == TensorFormat::Binary;
                let encoded = wire::encode_http_request(&request, binary).map_err(|e| {
                    RunError::bad_option(format!(
                        "--input-data {}: cannot encode the request: {e}.",
                        entry.origin
                    ))
                })?;
                let bytes = request::infer_request(target, &encoded.body, encoded.header_len);
                Ok(Payload::Http(bytes))
            }
            Protocol::Grpc => {
                let message = wire::to_grpc_request(&target.model, &target.version, &request);
                let framed =
                    grpc_frames::frame(&message.encode_to_vec(), target.peer.grpc_compression);
                Ok(Payload::Grpc(framed))
            }
        }
    }

    async fn open(&self, target: &Target, slot: usize) -> Result<Connection, ErrorKind> {
        if let Some(session) = &self.shm {
            let region = session.slot(target, slot).await?;
            let shm = shm_answer::SlotShm::new(region, session.slot_name(0));
            return Ok(match target.protocol {
                Protocol::Http => {
                    Connection::KserveHttp(rest::HttpConn::open(target).await?.with_shm(shm))
                }
                Protocol::Grpc => {
                    Connection::KserveGrpc(unary::GrpcConn::open(target, slot).await?.with_shm(shm))
                }
            });
        }
        Ok(match (target.protocol, self.streaming) {
            (Protocol::Http, _) => Connection::KserveHttp(rest::HttpConn::open(target).await?),
            (Protocol::Grpc, false) => {
                Connection::KserveGrpc(unary::GrpcConn::open(target, slot).await?)
            }
            (Protocol::Grpc, true) => {
                Connection::KserveStream(stream::StreamConn::open(target, slot).await?)
            }
        })
    }

    async fn statistics(
        &self,
        target: &Target,
        all_models: bool,
        _models: &[String],
    ) -> Result<StatsSource, String> {
        let stats = statistics::KserveStats::open(target, all_models).await?;
        Ok(StatsSource::new(stats))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn model(extensions: &[&str]) -> ModelSpec {
        ModelSpec {
            name: "m".into(),
            server_extensions: extensions.iter().map(|e| e.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn json_is_chosen_when_the_server_lacks_the_binary_extension() {
        let triton = model(&["binary_tensor_data"]);
        let mlserver = model(&[]);
        assert_eq!(effective_format(None, &triton), TensorFormat::Binary);
        assert_eq!(effective_format(None, &mlserver), TensorFormat::Json);
        assert_eq!(
            effective_format(Some(TensorFormat::Binary), &mlserver),
            TensorFormat::Binary
        );
    }
}
