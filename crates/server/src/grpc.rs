//! The gRPC side of the embedded server: `inference.GRPCInferenceService` on tonic —
//! health, metadata, configuration, statistics, unary inference and the bidirectional
//! `ModelStreamInfer` — over the same [`LocalServer`] as the HTTP side. Errors carry
//! Triton's gRPC codes (NOT_FOUND, INVALID_ARGUMENT, INTERNAL, UNAVAILABLE, ...); on the
//! stream they travel in `error_message` instead. On the stream every answer carries
//! Triton's `triton_final_response` parameter: a decoupled model's responses say false and
//! its empty final response says true; any other model's one response says true. Unary
//! inference refuses a decoupled model, as Triton does. TF Serving's `PredictionService`
//! ([`super::tfserving`]) is served beside it on the same port.

use std::future::Future;
use tonic::codec::CompressionEncoding;

use futures::stream::BoxStream;
use tokio::sync::mpsc::{self, OwnedPermit};
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status, Streaming};

use super::describe;
use super::error::InferError;
use super::limits::MAX_MESSAGE_BYTES;
use super::local::LocalServer;
use super::stream::StreamAnswer;
use inferperf_wire as wire;
use inferperf_wire::proto::grpc_inference_service_server::{
    GrpcInferenceService, GrpcInferenceServiceServer,
};
use inferperf_wire::proto::infer_parameter::ParameterChoice;
use inferperf_wire::proto::system_shared_memory_status_response::RegionStatus;
use inferperf_wire::proto::*;

/// The response parameter that tells a stream's client whether an answer is the last.
const FINAL_RESPONSE: &str = "triton_final_response";

/// Answers in flight on one stream before reading its next request waits.
const STREAM_BACKLOG: usize = 256;

/// Serves gRPC on the listener (over TLS when `tls` is given) until `stop` completes.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    server: LocalServer,
    stop: impl Future<Output = ()> + Send + 'static,
    tls: Option<TlsAcceptor>,
) {
    let server_for_tf = server.clone();
    let service = GrpcInferenceServiceServer::new(Service { server })
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES)
        .accept_compressed(CompressionEncoding::Gzip)
        .accept_compressed(CompressionEncoding::Deflate)
        .send_compressed(CompressionEncoding::Gzip)
        .send_compressed(CompressionEncoding::Deflate);
    let router = tonic::transport::Server::builder()
        .add_service(service)
        .add_service(super::tfserving::service(server_for_tf));
    let served = match tls {
        None => {
            let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
            router.serve_with_incoming_shutdown(incoming, stop).await
        }
        Some(acceptor) => {
            let incoming = super::tls::incoming(listener, acceptor);
            router.serve_with_incoming_shutdown(incoming, stop).await
        }
    };
    if let Err(e) = served {
        eprintln!("inferperf serve: the gRPC server stopped: {e}");
    }
}

struct Service {
    server: LocalServer,
}

/// One unary inference from its protobuf request to its protobuf response.
async fn infer_message(
    server: &LocalServer,
    mut msg: ModelInferRequest,
) -> Result<ModelInferResponse, Status> {
    let name = std::mem::take(&mut msg.model_name);
    let version = std::mem::take(&mut msg.model_version);
    let model = &server.find(&name, &version)?.model;
    model.refuse_kserve()?;
    if model.decoupled() {
        return Err(InferError::decoupled("ModelInfer RPC").into());
    }
    let places = server.shm().rewrite_grpc(&mut msg)?;
    let request =
        wire::from_grpc_request(msg).map_err(|e| Status::invalid_argument(e.to_string()))?;
    let mut response = server.infer(&name, &version, request).await?;
    if places.is_empty() {
        return Ok(wire::to_grpc_response(&response));
    }
    let placed = server.shm().place_outputs(&mut response, &places)?;
    let mut answer = wire::to_grpc_response(&response);
    super::shm::add_placed_grpc(&mut answer, &placed);
    Ok(answer)
}

type StreamAnswers = mpsc::Sender<Result<ModelStreamInferResponse, Status>>;

/// Starts one stream request: its answers, or the error that ends it before any.
async fn start_stream(
    server: &LocalServer,
    mut msg: ModelInferRequest,
) -> Result<mpsc::Receiver<Result<StreamAnswer, InferError>>, InferError> {
    let name = std::mem::take(&mut msg.model_name);
    let version = std::mem::take(&mut msg.model_version);
    server.find(&name, &version)?.model.refuse_kserve()?;
    let request =
        wire::from_grpc_request(msg).map_err(|e| InferError::BadRequest(e.to_string()))?;
    server.infer_stream(&name, &version, request).await
}

/// An answer on the stream, flagged final or not.
fn stream_response(answer: StreamAnswer) -> ModelStreamInferResponse {
    let mut response = wire::to_grpc_response(&answer.response);
    let flag = InferParameter {
        parameter_choice: Some(ParameterChoice::BoolParam(answer.last)),
    };
    response.parameters.insert(FINAL_RESPONSE.to_string(), flag);
    ModelStreamInferResponse {
        error_message: String::new(),
        infer_response: Some(response),
    }
}

/// An error on the stream, with the request's model and id so the client can tell which
/// request failed.
fn stream_error(echo: &ModelInferResponse, error: &InferError) -> ModelStreamInferResponse {
    ModelStreamInferResponse {
        error_message: error.message().to_string(),
        infer_response: Some(echo.clone()),
    }
}

/// Runs one stream request and sends its answers in order: the first into the slot
/// reserved for it, the rest as the channel takes them.
async fn stream_request(
    server: LocalServer,
    msg: ModelInferRequest,
    first: OwnedPermit<Result<ModelStreamInferResponse, Status>>,
    answers: StreamAnswers,
) {
    let echo = ModelInferResponse {
        model_name: msg.model_name.clone(),
        model_version: msg.model_version.clone(),
        id: msg.id.clone(),
        ..Default::default()
    };
    let mut items = match start_stream(&server, msg).await {
        Ok(items) => items,
        Err(error) => {
            first.send(Ok(stream_error(&echo, &error)));
            return;
        }
    };
    let mut first = Some(first);
    let mut ended = false;
    while let Some(item) = items.recv().await {
        ended = item.as_ref().map_or(true, |a| a.last);
        let answer = item.map_or_else(|e| stream_error(&echo, &e), stream_response);
        if !send_in_turn(&mut first, &answers, answer).await {
            return;
        }
    }
    if !ended {
        let cut =
            InferError::Unavailable("the server ended the stream before its final response".into());
        send_in_turn(&mut first, &answers, stream_error(&echo, &cut)).await;
    }
}

/// Sends a request's next answer: into its reserved slot if still unused, else through
/// the channel; false once the client has gone.
async fn send_in_turn(
    first: &mut Option<OwnedPermit<Result<ModelStreamInferResponse, Status>>>,
    answers: &StreamAnswers,
    answer: ModelStreamInferResponse,
) -> bool {
    match first.take() {
        Some(slot) => {
            slot.send(Ok(answer));
            true
        }
        None => answers.send(Ok(answer)).await.is_ok(),
    }
}

/// Reads the stream's requests and runs each as it comes; answers of different requests
/// interleave as they are produced, each request's in order.
async fn pump(
    server: LocalServer,
    mut requests: Streaming<ModelInferRequest>,
    answers: StreamAnswers,
) {
    loop {
        let msg = match requests.message().await {
            Ok(Some(msg)) => msg,
            Ok(None) => return,
            Err(status) => {
                let _ = answers.send(Err(status)).await;
                return;
            }
        };
        let Ok(slot) = answers.clone().reserve_owned().await else {
            return;
        };
        tokio::spawn(stream_request(server.clone(), msg, slot, answers.clone()));
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
        self.server.find(&r.name, &r.version)?;
        Ok(Response::new(ModelReadyResponse { ready: true }))
    }

    async fn server_metadata(
        &self,
        _: Request<ServerMetadataRequest>,
    ) -> Answer<ServerMetadataResponse> {
        Ok(Response::new(describe::server_metadata(
            self.server.offers_statistics(),
        )))
    }

    async fn model_metadata(
        &self,
        request: Request<ModelMetadataRequest>,
    ) -> Answer<ModelMetadataResponse> {
        let r = request.get_ref();
        let served = self.server.find(&r.name, &r.version)?;
        Ok(Response::new(describe::metadata(&served.model)))
    }

    async fn model_infer(&self, request: Request<ModelInferRequest>) -> Answer<ModelInferResponse> {
        let response = infer_message(&self.server, request.into_inner()).await?;
        Ok(Response::new(response))
    }

    type ModelStreamInferStream = BoxStream<'static, Result<ModelStreamInferResponse, Status>>;

    async fn model_stream_infer(
        &self,
        request: Request<Streaming<ModelInferRequest>>,
    ) -> Answer<Self::ModelStreamInferStream> {
        let (answers, stream) = mpsc::channel(STREAM_BACKLOG);
        tokio::spawn(pump(self.server.clone(), request.into_inner(), answers));
        Ok(Response::new(Box::pin(ReceiverStream::new(stream))))
    }

    async fn model_config(
        &self,
        request: Request<ModelConfigRequest>,
    ) -> Answer<ModelConfigResponse> {
        let r = request.get_ref();
        let served = self.server.find(&r.name, &r.version)?;
        Ok(Response::new(ModelConfigResponse {
            config: Some(describe::config(&served.model)),
        }))
    }

    async fn model_statistics(
        &self,
        request: Request<ModelStatisticsRequest>,
    ) -> Answer<ModelStatisticsResponse> {
        if !self.server.offers_statistics() {
            return Err(Status::unimplemented(
                "this server has no statistics extension",
            ));
        }
        let r = request.get_ref();
        let model_stats = if r.name.is_empty() {
            self.server.all_statistics()
        } else {
            let model = &self.server.find(&r.name, &r.version)?.model;
            vec![model.stats.snapshot(model.name())]
        };
        Ok(Response::new(ModelStatisticsResponse { model_stats }))
    }

    async fn system_shared_memory_status(
        &self,
        request: Request<SystemSharedMemoryStatusRequest>,
    ) -> Answer<SystemSharedMemoryStatusResponse> {
        let name = &request.get_ref().name;
        let status = shm_status(&self.server, name)?;
        Ok(Response::new(status))
    }

    async fn system_shared_memory_register(
        &self,
        request: Request<SystemSharedMemoryRegisterRequest>,
    ) -> Answer<SystemSharedMemoryRegisterResponse> {
        let r = request.get_ref();
        (self.server.shm()).register(&r.name, &r.key, r.offset, r.byte_size)?;
        Ok(Response::new(SystemSharedMemoryRegisterResponse {}))
    }

    async fn system_shared_memory_unregister(
        &self,
        request: Request<SystemSharedMemoryUnregisterRequest>,
    ) -> Answer<SystemSharedMemoryUnregisterResponse> {
        self.server.shm().unregister(&request.get_ref().name);
        Ok(Response::new(SystemSharedMemoryUnregisterResponse {}))
    }
}

/// The gRPC status answer for `name` (every region when empty).
fn shm_status(
    server: &LocalServer,
    name: &str,
) -> Result<SystemSharedMemoryStatusResponse, InferError> {
    let regions = server.shm().status(name)?;
    let regions = regions
        .into_iter()
        .map(|r| {
            let status = RegionStatus {
                name: r.name.clone(),
                key: r.key,
                offset: r.offset,
                byte_size: r.byte_size,
            };
            (r.name, status)
        })
        .collect();
    Ok(SystemSharedMemoryStatusResponse { regions })
}
