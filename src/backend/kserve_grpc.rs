//! KServe v2 over gRPC with tonic: one HTTP/2 connection per in-flight slot, requests sent as
//! pre-encoded `ModelInferRequest` bytes through a pass-through codec, `-H` headers sent as
//! metadata, and the RPCs that discovery makes.

use std::str::FromStr;
use std::time::Instant;

use bytes::{Buf, BufMut, Bytes};
use http::uri::PathAndQuery;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use super::{elapsed_ns, server_datatype, ConfigFacts, Discovered, Reply, Target};
use crate::error::{RunError, RunResult};
use crate::measure::sample::ErrorKind;
use crate::model::{Scheduler, TensorSpec};
use crate::proto;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;

const INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";
/// Largest message either side may send (large tensors are legitimate).
const MAX_MESSAGE: usize = 256 * 1024 * 1024;

/// A codec that sends already-encoded messages and hands back the raw answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> Self::Encoder {
        RawCodec
    }

    fn decoder(&mut self) -> Self::Decoder {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        let len = src.remaining();
        Ok(Some(src.copy_to_bytes(len)))
    }
}

/// One HTTP/2 connection to the server's gRPC port.
pub struct GrpcConn {
    grpc: tonic::client::Grpc<Channel>,
    path: PathAndQuery,
    metadata: MetadataMap,
}

impl GrpcConn {
    pub async fn open(target: &Target) -> Result<GrpcConn, ErrorKind> {
        let channel = connect_channel(target).await?;
        let grpc = tonic::client::Grpc::new(channel)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        Ok(GrpcConn {
            grpc,
            path: PathAndQuery::from_static(INFER_PATH),
            metadata: metadata_for(target),
        })
    }

    /// Sends one pre-encoded `ModelInferRequest`.
    pub async fn infer(&mut self, message: Bytes) -> Result<Reply, ErrorKind> {
        let marshal = Instant::now();
        let mut request = tonic::Request::new(message);
        *request.metadata_mut() = self.metadata.clone();
        let send_ns = elapsed_ns(marshal);
        self.grpc.ready().await.map_err(|_| ErrorKind::Connection)?;
        let response = self
            .grpc
            .unary(request, self.path.clone(), RawCodec)
            .await
            .map_err(|status| status_kind(&status))?;
        Ok(Reply {
            send_ns,
            recv_ns: 0,
            body: response.into_inner(),
            header_len: None,
        })
    }
}

/// The error kind for a failed RPC: transport failures are connection errors.
pub(super) fn status_kind(status: &Status) -> ErrorKind {
    let transport = std::error::Error::source(status)
        .is_some_and(|s| s.downcast_ref::<tonic::transport::Error>().is_some());
    if transport || (status.code() == Code::Unavailable && status.message().contains("connect")) {
        ErrorKind::Connection
    } else {
        ErrorKind::GrpcCode(status.code() as i32)
    }
}

pub(super) async fn connect_channel(target: &Target) -> Result<Channel, ErrorKind> {
    for addr in &target.addrs {
        let Ok(endpoint) = Endpoint::from_shared(format!("http://{addr}")) else {
            continue;
        };
        let endpoint = endpoint.connect_timeout(target.timeout).tcp_nodelay(true);
        if let Ok(channel) = endpoint.connect().await {
            return Ok(channel);
        }
    }
    Err(ErrorKind::Connection)
}

/// `-H` headers as gRPC metadata (perf_analyzer drops them on gRPC; we send them).
fn metadata_for(target: &Target) -> MetadataMap {
    let mut map = MetadataMap::new();
    for (name, value) in &target.headers {
        if let (Ok(k), Ok(v)) = (
            AsciiMetadataKey::from_str(name),
            AsciiMetadataValue::from_str(value),
        ) {
            map.append(k, v);
        }
    }
    map
}

pub(super) fn with_metadata<T>(target: &Target, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    *request.metadata_mut() = metadata_for(target);
    request.set_timeout(target.timeout);
    request
}

/// Reads server metadata, model metadata and (if present) the model configuration.
pub async fn discover(target: &Target) -> RunResult<Discovered> {
    let channel = connect_channel(target)
        .await
        .map_err(|_| target.unreachable("connection refused or timed out"))?;
    let mut client = GrpcInferenceServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let server = client
        .server_metadata(with_metadata(target, proto::ServerMetadataRequest {}))
        .await;
    let extensions = match server {
        Ok(r) => r.into_inner().extensions,
        Err(s) if status_kind(&s) == ErrorKind::Connection => {
            return Err(target.unreachable(&format!("ServerMetadata failed: {}", s.message())))
        }
        Err(_) => Vec::new(),
    };
    let name = target.model.clone();
    let version = target.version.clone();
    let metadata = client
        .model_metadata(with_metadata(
            target,
            proto::ModelMetadataRequest {
                name: name.clone(),
                version: version.clone(),
            },
        ))
        .await
        .map_err(|s| model_error(target, &s))?
        .into_inner();
    let config = client
        .model_config(with_metadata(
            target,
            proto::ModelConfigRequest { name, version },
        ))
        .await
        .ok()
        .and_then(|r| r.into_inner().config)
        .map(|c| config_facts(&c));
    discovered(target, extensions, metadata, config)
}

/// What discovery read, from the protobuf metadata answer (gRPC and in-process).
pub(super) fn discovered(
    target: &Target,
    extensions: Vec<String>,
    metadata: proto::ModelMetadataResponse,
    config: Option<ConfigFacts>,
) -> RunResult<Discovered> {
    Ok(Discovered {
        extensions,
        name: metadata.name,
        version: target.version.clone(),
        platform: metadata.platform,
        inputs: tensors(metadata.inputs)?,
        outputs: tensors(metadata.outputs)?,
        config,
    })
}

fn model_error(target: &Target, status: &Status) -> RunError {
    if status_kind(status) == ErrorKind::Connection {
        return target.unreachable(status.message());
    }
    let version = if target.version.is_empty() {
        String::new()
    } else {
        format!(" version {}", target.version)
    };
    RunError::failed(format!(
        "The server at {} has no model '{}'{version} ({}: {}): check -m and -x.",
        target.authority,
        target.model,
        crate::measure::sample::grpc_code_name(status.code() as i32),
        status.message()
    ))
}

fn tensors(
    list: Vec<proto::model_metadata_response::TensorMetadata>,
) -> RunResult<Vec<TensorSpec>> {
    list.into_iter()
        .map(|t| {
            Ok(TensorSpec {
                datatype: server_datatype(&t.datatype, &t.name)?,
                name: t.name,
                shape: t.shape,
            })
        })
        .collect()
}

pub(super) fn config_facts(config: &proto::ModelConfig) -> ConfigFacts {
    use proto::model_config::SchedulingChoice;
    let scheduler = match config.scheduling_choice {
        Some(SchedulingChoice::DynamicBatching(_)) => Scheduler::Dynamic,
        Some(SchedulingChoice::SequenceBatching(_)) => Scheduler::Sequence,
        Some(SchedulingChoice::EnsembleScheduling(_)) => Scheduler::Ensemble,
        None => Scheduler::None,
    };
    ConfigFacts {
        max_batch_size: config.max_batch_size.max(0) as u32,
        scheduler,
        decoupled: config
            .model_transaction_policy
            .as_ref()
            .is_some_and(|p| p.decoupled),
        response_cache: config.response_cache.as_ref().is_some_and(|c| c.enable),
        composing_models: match &config.scheduling_choice {
            Some(SchedulingChoice::EnsembleScheduling(e)) => {
                super::kserve_http::unique(e.step.iter().map(|s| s.model_name.clone()))
            }
            _ => Vec::new(),
        },
    }
}
