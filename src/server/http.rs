//! The HTTP side of the embedded server: KServe v2 REST routes on axum, with the binary
//! tensor data extension and Triton's model-configuration endpoint. Request bodies are
//! decoded without copying tensor data; errors answer `{"error": "..."}` with Triton's
//! status codes (404 unknown model, 400 bad request, 500 model failure).

use std::future::Future;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{InferError, Model, Registry, MAX_MESSAGE_BYTES};
use crate::model::{DataType, TensorSpec};
use crate::wire::{self, HttpBody, InferRequest, RequestedOutput};

const INFERENCE_HEADER: HeaderName = HeaderName::from_static("inference-header-content-length");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const OCTETS: HeaderValue = HeaderValue::from_static("application/octet-stream");

/// Serves HTTP on the listener until `stop` completes.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    registry: Arc<Registry>,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let served = axum::serve(listener, router(registry)).with_graceful_shutdown(stop);
    if let Err(e) = served.await {
        eprintln!("inferperf serve: the HTTP server stopped: {e}");
    }
}

/// The KServe v2 routes; the `/versions/{version}` segment is optional everywhere.
pub fn router(registry: Arc<Registry>) -> Router {
    let mut router = Router::new()
        .route("/v2/health/live", get(ok))
        .route("/v2/health/ready", get(ok))
        .route("/v2", get(server_metadata));
    for base in [
        "/v2/models/{model}",
        "/v2/models/{model}/versions/{version}",
    ] {
        router = router
            .route(base, get(model_metadata))
            .route(&format!("{base}/ready"), get(model_ready))
            .route(&format!("{base}/config"), get(model_config))
            .route(&format!("{base}/infer"), post(infer));
    }
    router
        .fallback(no_route)
        .layer(DefaultBodyLimit::max(MAX_MESSAGE_BYTES))
        .with_state(registry)
}

/// The model segment of a route, with or without a version.
#[derive(Deserialize)]
struct ModelPath {
    model: String,
    #[serde(default)]
    version: String,
}

type Reg = State<Arc<Registry>>;

async fn no_route(uri: axum::http::Uri) -> Response {
    let message = format!("inferperf serve has no endpoint {}", uri.path());
    json_response(StatusCode::NOT_FOUND, &json!({ "error": message }))
}

async fn ok() -> StatusCode {
    StatusCode::OK
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    let mut response = Response::new(Body::from(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

fn error_response(error: &InferError) -> Response {
    let status = match error {
        InferError::NotFound(_) => StatusCode::NOT_FOUND,
        InferError::BadRequest(_) => StatusCode::BAD_REQUEST,
        InferError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    json_response(status, &json!({ "error": error.message() }))
}

fn answer(result: Result<Value, InferError>) -> Response {
    match result {
        Ok(value) => json_response(StatusCode::OK, &value),
        Err(e) => error_response(&e),
    }
}

async fn server_metadata() -> Response {
    json_response(StatusCode::OK, &server_metadata_json())
}

/// What `GET /v2` answers.
pub(super) fn server_metadata_json() -> Value {
    json!({
        "name": "inferperf",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": super::grpc::EXTENSIONS,
    })
}

fn tensors_json(specs: &[TensorSpec], model: &Model) -> Value {
    let shape = model.def.metadata_shape();
    let tensor =
        |t: &TensorSpec| json!({"name": t.name, "datatype": t.datatype.as_str(), "shape": shape});
    Value::Array(specs.iter().map(tensor).collect())
}

async fn model_metadata(State(reg): Reg, Path(p): Path<ModelPath>) -> Response {
    answer(reg.get(&p.model, &p.version).map(|m| {
        json!({
            "name": m.name(),
            "versions": ["1"],
            "platform": "inferperf",
            "inputs": tensors_json(&m.inputs, m),
            "outputs": tensors_json(&m.outputs, m),
        })
    }))
}

async fn model_ready(State(reg): Reg, Path(p): Path<ModelPath>) -> Response {
    match reg.get(&p.model, &p.version) {
        Ok(_) => StatusCode::OK.into_response(),
        Err(e) => error_response(&e),
    }
}

/// Triton's spelling of a datatype in the model configuration.
pub(super) fn config_type(datatype: DataType) -> String {
    match datatype {
        DataType::Bytes => "TYPE_STRING".to_string(),
        other => format!("TYPE_{}", other.as_str()),
    }
}

fn config_tensors(specs: &[TensorSpec]) -> Value {
    let tensor = |t: &TensorSpec| json!({"name": t.name, "data_type": config_type(t.datatype), "dims": t.shape});
    Value::Array(specs.iter().map(tensor).collect())
}

async fn model_config(State(reg): Reg, Path(p): Path<ModelPath>) -> Response {
    answer(reg.get(&p.model, &p.version).map(|m| {
        json!({
            "name": m.name(),
            "platform": "inferperf",
            "backend": "inferperf",
            "max_batch_size": m.def.max_batch,
            "input": config_tensors(&m.inputs),
            "output": config_tensors(&m.outputs),
            "instance_group": [{"name": format!("{}_0", m.name()), "count": 1, "kind": "KIND_CPU"}],
        })
    }))
}

fn header_len(headers: &HeaderMap) -> Result<Option<usize>, InferError> {
    let Some(value) = headers.get(&INFERENCE_HEADER) else {
        return Ok(None);
    };
    let parsed = value.to_str().ok().and_then(|v| v.trim().parse().ok());
    parsed.map(Some).ok_or_else(|| {
        InferError::BadRequest(format!(
            "the Inference-Header-Content-Length header {value:?} is not a byte count"
        ))
    })
}

async fn infer(
    State(reg): Reg,
    Path(p): Path<ModelPath>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match run_infer(&reg, &p, &headers, &body).await {
        Ok(response) => response,
        Err(e) => error_response(&e),
    }
}

async fn run_infer(
    reg: &Registry,
    p: &ModelPath,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, InferError> {
    let model = reg.get(&p.model, &p.version)?;
    let header_len = header_len(headers)?;
    let bad = |e: wire::WireError| InferError::BadRequest(e.to_string());
    let InferRequest {
        id,
        inputs,
        outputs,
        binary_output,
        ..
    } = wire::decode_http_request_bytes(body, header_len).map_err(bad)?;
    let resp = model.infer_parts(id, inputs, &outputs).await?;
    let binary = |name: &str| wants_binary(&outputs, binary_output, name);
    let encoded = wire::encode_http_response(&resp, &binary).map_err(bad)?;
    Ok(body_response(encoded))
}

/// Whether an output goes back as binary data: its own `binary_data` flag if it was
/// requested by name, else the request-level `binary_data_output`.
fn wants_binary(requested: &[RequestedOutput], binary_output: bool, name: &str) -> bool {
    let own = requested.iter().find(|o| o.name == name);
    own.map_or(binary_output, |o| o.binary)
}

fn body_response(encoded: HttpBody) -> Response {
    let mut response = Response::new(Body::from(encoded.body));
    let headers = response.headers_mut();
    match encoded.header_len {
        Some(len) => {
            headers.insert(CONTENT_TYPE, OCTETS);
            headers.insert(INFERENCE_HEADER, HeaderValue::from(len));
        }
        None => {
            headers.insert(CONTENT_TYPE, JSON);
        }
    }
    response
}
