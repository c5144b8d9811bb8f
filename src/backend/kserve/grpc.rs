//! KServe v2 over gRPC with tonic: the RPCs that discovery and the statistics reader make,
//! with `-H` headers sent as metadata. Inference calls take the leaner path of `unary.rs`
//! and `stream.rs`, on the h2 transport of `backend::h2`.

use std::io;
use std::str::FromStr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;

use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, MetadataMap};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::backend::h2::MAX_MESSAGE;
use crate::backend::http1::connect_tcp;
use crate::backend::outcome::ErrorKind;
use crate::backend::tls::{Alpn, TlsClient};
use crate::backend::{server_datatype, ConfigFacts, Discovered, Target};
use crate::error::{RunError, RunResult};
use crate::model::{Scheduler, TensorSpec};
use crate::proto;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;

/// The error kind for a failed RPC: transport failures are connection errors.
pub(crate) fn status_kind(status: &Status) -> ErrorKind {
    let transport = std::error::Error::source(status)
        .is_some_and(|s| s.downcast_ref::<tonic::transport::Error>().is_some());
    if transport || (status.code() == Code::Unavailable && status.message().contains("connect")) {
        ErrorKind::Connection
    } else {
        ErrorKind::GrpcCode(status.code() as i32)
    }
}

pub(crate) async fn connect_channel(target: &Target) -> Result<Channel, ErrorKind> {
    if let Some(tls) = &target.tls {
        return connect_tls_channel(target, tls.clone()).await;
    }
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

/// A channel whose connections are made by our TCP connect and TLS handshake (the run's
/// rustls configuration, ALPN h2), so that discovery and statistics verify the server as
/// the inference calls do.
async fn connect_tls_channel(target: &Target, tls: Arc<TlsClient>) -> Result<Channel, ErrorKind> {
    let (addrs, timeout) = (target.addrs.clone(), target.timeout);
    let connector = tower::service_fn(move |_: http::Uri| {
        let (tls, addrs) = (tls.clone(), addrs.clone());
        async move {
            let tcp = connect_tcp(&addrs, timeout)
                .await
                .map_err(|k| io::Error::other(k.to_string()))?;
            let stream = tls
                .connect(tcp, Alpn::H2, timeout)
                .await
                .map_err(|k| io::Error::other(k.to_string()))?;
            Ok::<_, io::Error>(TokioIo::new(stream))
        }
    });
    let endpoint = Endpoint::from_shared(format!("http://{}", target.authority))
        .map_err(|_| ErrorKind::Connection)?
        .connect_timeout(target.timeout);
    endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|_| ErrorKind::Connection)
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

pub(crate) fn with_metadata<T>(target: &Target, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    *request.metadata_mut() = metadata_for(target);
    request.set_timeout(target.timeout);
    request
}

/// Reads server metadata, model metadata and (if present) the model configuration.
pub async fn discover(target: &Target) -> RunResult<Discovered> {
    let channel = match connect_channel(target).await {
        Ok(channel) => channel,
        Err(_) => {
            return Err(target
                .connect_failure("connection refused or timed out")
                .await)
        }
    };
    let mut client = GrpcInferenceServiceClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    let server = client
        .server_metadata(with_metadata(target, proto::ServerMetadataRequest {}))
        .await;
    let extensions = match server {
        Ok(r) => r.into_inner().extensions,
        Err(s) if status_kind(&s) == ErrorKind::Connection => {
            let detail = format!("ServerMetadata failed: {}", s.message());
            return Err(target.connect_failure(&detail).await);
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
pub(crate) fn discovered(
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
        crate::backend::grpc_code_name(status.code() as i32),
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

pub(crate) fn config_facts(config: &proto::ModelConfig) -> ConfigFacts {
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
                super::rest::unique(e.step.iter().map(|s| s.model_name.clone()))
            }
            _ => Vec::new(),
        },
        string_sequence_ids: match &config.scheduling_choice {
            Some(SchedulingChoice::SequenceBatching(s)) => string_correlation_ids(s),
            _ => false,
        },
    }
}

/// Whether a sequence batcher's `CORRID` control input is `TYPE_STRING`.
fn string_correlation_ids(batching: &proto::ModelSequenceBatching) -> bool {
    use proto::model_sequence_batching::control::Kind;
    let string = crate::model::DataType::Bytes.config_enum();
    (batching.control_input.iter())
        .flat_map(|input| &input.control)
        .any(|c| c.kind == Kind::ControlSequenceCorrid as i32 && c.data_type == string)
}
