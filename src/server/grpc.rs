//! The gRPC side of the embedded server: `inference.GRPCInferenceService` on tonic, sharing
//! the model registry with the HTTP side. Unknown models answer NOT_FOUND, bad requests
//! INVALID_ARGUMENT and model failures INTERNAL. Streaming inference and statistics are not
//! served yet and answer UNIMPLEMENTED.

use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use super::{InferError, Model, Registry, MAX_MESSAGE_BYTES};
use crate::model::TensorSpec;
use crate::proto::grpc_inference_service_server::{
    GrpcInferenceService, GrpcInferenceServiceServer,
};
use crate::proto::model_instance_group::Kind;
use crate::proto::model_metadata_response::TensorMetadata;
use crate::proto::*;
use crate::wire;

/// The protocol extensions the server advertises.
pub(super) const EXTENSIONS: [&str; 2] = ["binary_tensor_data", "model_configuration"];

/// Serves gRPC on the listener until `stop` completes.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    registry: Arc<Registry>,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let service = GrpcInferenceServiceServer::new(Service { registry })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let served = tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, stop);
    if let Err(e) = served.await {
        eprintln!("inferperf serve: the gRPC server stopped: {e}");
    }
}

struct Service {
    registry: Arc<Registry>,
}

fn status(error: InferError) -> Status {
    match error {
        InferError::NotFound(m) => Status::not_found(m),
        InferError::BadRequest(m) => Status::invalid_argument(m),
        InferError::Internal(m) => Status::internal(m),
    }
}

impl Service {
    fn model(&self, name: &str, version: &str) -> Result<&Arc<Model>, Status> {
        self.registry.get(name, version).map_err(status)
    }
}

fn tensor_metadata(specs: &[TensorSpec], model: &Model) -> Vec<TensorMetadata> {
    let shape = model.def.metadata_shape();
    let meta = |t: &TensorSpec| TensorMetadata {
        name: t.name.clone(),
        datatype: t.datatype.as_str().to_string(),
        shape: shape.clone(),
    };
    specs.iter().map(meta).collect()
}

/// The model's configuration in Triton's protobuf form.
fn model_config(model: &Model) -> ModelConfig {
    let input = |t: &TensorSpec| ModelInput {
        name: t.name.clone(),
        data_type: t.datatype.config_enum(),
        dims: t.shape.clone(),
        optional: false,
    };
    let output = |t: &TensorSpec| ModelOutput {
        name: t.name.clone(),
        data_type: t.datatype.config_enum(),
        dims: t.shape.clone(),
    };
    ModelConfig {
        name: model.name().to_string(),
        platform: "inferperf".to_string(),
        backend: "inferperf".to_string(),
        max_batch_size: i32::try_from(model.def.max_batch).unwrap_or(i32::MAX),
        input: model.inputs.iter().map(input).collect(),
        output: model.outputs.iter().map(output).collect(),
        instance_group: vec![ModelInstanceGroup {
            name: format!("{}_0", model.name()),
            count: 1,
            kind: Kind::Cpu as i32,
        }],
        ..Default::default()
    }
}

type Answer<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl GrpcInferenceService for Service {
    async fn server_live(&self, _: Request<ServerLiveRequest>) -> Answer<ServerLiveResponse> {
        Ok(Response::new(ServerLiveResponse { live: true }))
    }

    async fn server_ready(&self, _: Request<ServerReadyRequest>) -> Answer<ServerReadyResponse> {
        Ok(Response::new(ServerReadyResponse { ready: true }))
    }

    async fn model_ready(&self, request: Request<ModelReadyRequest>) -> Answer<ModelReadyResponse> {
        let r = request.get_ref();
        self.model(&r.name, &r.version)?;
        Ok(Response::new(ModelReadyResponse { ready: true }))
    }

    async fn server_metadata(
        &self,
        _: Request<ServerMetadataRequest>,
    ) -> Answer<ServerMetadataResponse> {
        Ok(Response::new(ServerMetadataResponse {
            name: "inferperf".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            extensions: EXTENSIONS.iter().map(|e| e.to_string()).collect(),
        }))
    }

    async fn model_metadata(
        &self,
        request: Request<ModelMetadataRequest>,
    ) -> Answer<ModelMetadataResponse> {
        let r = request.get_ref();
        let m = self.model(&r.name, &r.version)?;
        Ok(Response::new(ModelMetadataResponse {
            name: m.name().to_string(),
            versions: vec!["1".to_string()],
            platform: "inferperf".to_string(),
            inputs: tensor_metadata(&m.inputs, m),
            outputs: tensor_metadata(&m.outputs, m),
        }))
    }

    async fn model_infer(&self, request: Request<ModelInferRequest>) -> Answer<ModelInferResponse> {
        let msg = request.into_inner();
        let model = self.model(&msg.model_name, &msg.model_version)?.clone();
        let req =
            wire::from_grpc_request(msg).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let resp = model.infer(req).await.map_err(status)?;
        Ok(Response::new(wire::to_grpc_response(&resp)))
    }

    type ModelStreamInferStream = BoxStream<'static, Result<ModelStreamInferResponse, Status>>;

    async fn model_stream_infer(
        &self,
        _: Request<tonic::Streaming<ModelInferRequest>>,
    ) -> Answer<Self::ModelStreamInferStream> {
        Err(Status::unimplemented(
            "inferperf serve does not stream inferences yet",
        ))
    }

    async fn model_config(
        &self,
        request: Request<ModelConfigRequest>,
    ) -> Answer<ModelConfigResponse> {
        let r = request.get_ref();
        let m = self.model(&r.name, &r.version)?;
        Ok(Response::new(ModelConfigResponse {
            config: Some(model_config(m)),
        }))
    }

    async fn model_statistics(
        &self,
        _: Request<ModelStatisticsRequest>,
    ) -> Answer<ModelStatisticsResponse> {
        Err(Status::unimplemented(
            "inferperf serve does not keep statistics yet",
        ))
    }
}
