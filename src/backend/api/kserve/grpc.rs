//! KServe v2 discovery over gRPC: the `ServerMetadata`, `ModelMetadata` and `ModelConfig`
//! RPCs, on the transport's control channel with `-H` headers sent as metadata. Inference
//! calls take the leaner path of `unary.rs` and `stream.rs`, on the h2 transport.

use tonic::Status;

use crate::backend::open_inference::metadata::{config_facts, discovered};
use crate::backend::outcome::ErrorKind;
use crate::backend::transport::control::{connect_channel, status_kind, with_metadata};
use crate::backend::transport::h2::MAX_MESSAGE;
use crate::backend::{Discovered, Target};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::proto;
use inferperf_wire::proto::grpc_inference_service_client::GrpcInferenceServiceClient;

/// Reads server metadata, model metadata and (if present) the model configuration.
pub async fn discover(target: &Target) -> RunResult<Discovered> {
    let channel = match connect_channel(&target.peer).await {
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
        .server_metadata(with_metadata(&target.peer, proto::ServerMetadataRequest {}))
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
            &target.peer,
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
            &target.peer,
            proto::ModelConfigRequest { name, version },
        ))
        .await
        .ok()
        .and_then(|r| r.into_inner().config)
        .map(|c| config_facts(&c));
    discovered(target, extensions, metadata, config)
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
        target.peer.authority,
        target.model,
        crate::backend::grpc_code_name(status.code() as i32),
        status.message()
    ))
}
