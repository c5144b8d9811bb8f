//! The HTTP side of the embedded server: KServe v2 REST with the binary tensor data
//! extension and Triton's configuration and statistics endpoints, on hyper directly. The
//! routes are matched by hand on the path's segments — the inference route is the hot
//! path, and a router framework cost measurable CPU per request there (see
//! bench/server/README.md). Errors answer `{"error": "..."}` with Triton's status codes.
//! Paths under `/v1/` go to the OpenAI routes ([`super::openai`]), whose streamed answers
//! are the one kind of body that is not whole. TF Serving's REST paths (`/v1/models/M:predict`,
//! `/v1/models/M/metadata`) are matched first and go to [`super::tfserving_rest`], and
//! TorchServe's (`/predictions/…`, `/models…`, `/ping`) to [`super::torchserve`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use serde_json::{json, Value};
use tokio_rustls::TlsAcceptor;

use super::describe;
use super::error::InferError;
use super::limits::MAX_MESSAGE_BYTES;
use super::local::LocalServer;
use super::openai;
use super::stats::statistics_json;
use crate::wire::{self, HttpBody, RequestedOutput};

const INFERENCE_HEADER: HeaderName = HeaderName::from_static("inference-header-content-length");
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const OCTETS: HeaderValue = HeaderValue::from_static("application/octet-stream");

pub type Reply = Response<ReplyBody>;

/// A reply's body: whole (every KServe answer, sent with its length), or a stream of
/// frames produced over time (an OpenAI streamed answer).
pub enum ReplyBody {
    Full(Full<Bytes>),
    Stream(Pin<Box<dyn Body<Data = Bytes, Error = Infallible> + Send>>),
}

impl Body for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ReplyBody::Full(full) => Pin::new(full).poll_frame(cx),
            ReplyBody::Stream(stream) => stream.as_mut().poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ReplyBody::Full(full) => full.is_end_stream(),
            ReplyBody::Stream(stream) => stream.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Full(full) => full.size_hint(),
            ReplyBody::Stream(stream) => stream.size_hint(),
        }
    }
}

fn whole(body: Bytes) -> Reply {
    Response::new(ReplyBody::Full(Full::new(body)))
}

/// Serves the KServe v2 routes on the listener until `stop` completes, then lets open
/// connections finish their requests for up to `grace`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: LocalServer,
    stop: impl Future<Output = ()>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
) {
    serve_with(listener, stop, grace, tls, move |req| {
        handle(server.clone(), req)
    })
    .await
}

/// Accepts connections and answers each request with `handler` (HTTP/1.1 or h2c; over TLS
/// when `tls` is given) until `stop` completes; then waits up to `grace` for open requests.
pub async fn serve_with<F, Fut>(
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()>,
    grace: Duration,
    tls: Option<TlsAcceptor>,
    handler: F,
) where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply, Infallible>> + Send + 'static,
{
    let graceful = GracefulShutdown::new();
    let builder = auto::Builder::new(TokioExecutor::new());
    tokio::pin!(stop);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut stop => break,
        };
        let Ok((tcp, _)) = tcp else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let Some(acceptor) = &tls else {
            let conn = builder.serve_connection(TokioIo::new(tcp), service_fn(handler.clone()));
            let conn = graceful.watch(conn.into_owned());
            tokio::spawn(async move {
                let _ = conn.await;
            });
            continue;
        };
        // The handshake runs in the connection's task, not in the accepting loop.
        let (acceptor, builder, handler) = (acceptor.clone(), builder.clone(), handler.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Some(stream) = super::tls::accept(&acceptor, tcp).await else {
                return;
            };
            let conn = builder.serve_connection(TokioIo::new(stream), service_fn(handler));
            let _ = watcher.watch(conn.into_owned()).await;
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
}

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Live,
    Ready,
    ServerMetadata,
    AllStats,
    Model {
        name: &'a str,
        version: &'a str,
        action: Action,
    },
    Unknown,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Action {
    Metadata,
    Ready,
    Config,
    Infer,
    Stats,
}

fn action(segment: &str) -> Option<Action> {
    Some(match segment {
        "ready" => Action::Ready,
        "config" => Action::Config,
        "infer" => Action::Infer,
        "stats" => Action::Stats,
        _ => return None,
    })
}

/// Matches `/v2/models/{m}[/versions/{v}][/ready|/config|/infer|/stats]` and the fixed
/// routes.
fn route(path: &str) -> Route<'_> {
    match path {
        "/v2/health/live" => return Route::Live,
        "/v2/health/ready" => return Route::Ready,
        "/v2" => return Route::ServerMetadata,
        "/v2/models/stats" => return Route::AllStats,
        _ => {}
    }
    let Some(rest) = path.strip_prefix("/v2/models/") else {
        return Route::Unknown;
    };
    let mut parts = rest.split('/');
    let (name, next) = (parts.next().unwrap_or(""), parts.next());
    let (version, next) = match next {
        Some("versions") => match parts.next() {
            Some(v) if !v.is_empty() => (v, parts.next()),
            _ => return Route::Unknown,
        },
        other => ("", other),
    };
    let action = match next {
        None => Some(Action::Metadata),
        Some(segment) => action(segment),
    };
    match (action, parts.next()) {
        (Some(action), None) if !name.is_empty() => Route::Model {
            name,
            version,
            action,
        },
        _ => Route::Unknown,
    }
}

async fn handle(server: LocalServer, req: Request<Incoming>) -> Result<Reply, Infallible> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    if let Some(ts) = super::torchserve::route(path) {
        let reply = super::torchserve::handle(&server, &parts.method, ts, &parts.headers, body);
        let reply = reply.await;
        server.torchserve_answers().count(reply.status().as_u16());
        return Ok(reply);
    }
    if let Some(tf) = super::tfserving_rest::route(path) {
        let reply = super::tfserving_rest::handle(&server, &parts.method, tf, &parts.headers, body);
        return Ok(reply.await);
    }
    if let Some(model) = super::trace::route(path) {
        let reply = super::trace::handle(&server, &parts.method, model, &parts.headers, body);
        return Ok(reply.await);
    }
    if let Some(shm) = super::shm_routes::route(path) {
        let reply = super::shm_routes::handle(&server, &parts.method, shm, &parts.headers, body);
        return Ok(reply.await);
    }
    if path.starts_with("/v1/") || path == "/tokenize" {
        return Ok(openai::handle(&server, &parts.method, path, &parts.headers, body).await);
    }
    let route = route(path);
    let reply = match (&parts.method, route) {
        (
            &Method::POST,
            Route::Model {
                name,
                version,
                action: Action::Infer,
            },
        ) => match read_body(&parts.headers, body).await {
            Ok(body) => infer(&server, name, version, &parts.headers, body).await,
            Err(e) => error_reply(
                StatusCode::from_u16(e.0).unwrap_or(StatusCode::BAD_REQUEST),
                &e.1,
            ),
        },
        (&Method::GET, route) => get(&server, route, path),
        (_, Route::Unknown) => no_route(path),
        (method, _) => error_reply(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} does not take {method}"),
        ),
    };
    Ok(reply)
}

/// The body, at most [`MAX_MESSAGE_BYTES`] long; an HTTP status and message if not.
pub(crate) async fn read_body(headers: &HeaderMap, body: Incoming) -> Result<Bytes, (u16, String)> {
    let too_big = || {
        (
            413,
            format!("the request body is larger than {MAX_MESSAGE_BYTES} bytes"),
        )
    };
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok());
    if declared
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > MAX_MESSAGE_BYTES)
    {
        return Err(too_big());
    }
    match Limited::new(body, MAX_MESSAGE_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_big()),
        Err(e) => Err((400, format!("the request body could not be read: {e}"))),
    }
}

fn get(server: &LocalServer, route: Route, path: &str) -> Reply {
    let model = |name, version| server.find(name, version).map(|s| &s.model);
    match route {
        Route::Live | Route::Ready => empty(StatusCode::OK),
        Route::ServerMetadata => json_reply(
            StatusCode::OK,
            &describe::server_metadata_json(server.offers_statistics()),
        ),
        Route::AllStats
        | Route::Model {
            action: Action::Stats,
            ..
        } if !server.offers_statistics() => no_route(path),
        Route::AllStats => stats_reply(server.all_statistics().iter()),
        Route::Model {
            name,
            version,
            action,
        } => match (model(name, version), action) {
            (Err(e), _) => infer_error_reply(&e),
            (Ok(_), Action::Ready) => empty(StatusCode::OK),
            (Ok(m), Action::Metadata) => json_reply(
                StatusCode::OK,
                &describe::metadata_json(&describe::metadata(m)),
            ),
            (Ok(m), Action::Config) => {
                json_reply(StatusCode::OK, &describe::config_json(&describe::config(m)))
            }
            (Ok(m), Action::Stats) => stats_reply(std::iter::once(&m.stats.snapshot(m.name()))),
            (Ok(_), Action::Infer) => error_reply(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("{path} takes POST"),
            ),
        },
        Route::Unknown => no_route(path),
    }
}

fn stats_reply<'a>(stats: impl Iterator<Item = &'a crate::proto::ModelStatistics>) -> Reply {
    let stats: Vec<Value> = stats.map(statistics_json).collect();
    json_reply(StatusCode::OK, &json!({ "model_stats": stats }))
}

pub fn no_route(path: &str) -> Reply {
    let message = format!("inferperf serve has no endpoint {path}");
    error_reply(StatusCode::NOT_FOUND, &message)
}

fn empty(status: StatusCode) -> Reply {
    let mut reply = whole(Bytes::new());
    *reply.status_mut() = status;
    reply
}

pub fn body_reply(status: StatusCode, body: Bytes, content_type: HeaderValue) -> Reply {
    let mut reply = whole(body);
    *reply.status_mut() = status;
    reply.headers_mut().insert(CONTENT_TYPE, content_type);
    reply
}

pub(crate) fn json_reply(status: StatusCode, value: &Value) -> Reply {
    body_reply(status, Bytes::from(value.to_string()), JSON)
}

fn error_reply(status: StatusCode, message: &str) -> Reply {
    json_reply(status, &json!({ "error": message }))
}

fn infer_error_reply(error: &InferError) -> Reply {
    let status = StatusCode::from_u16(error.http_status());
    error_reply(
        status.unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        error.message(),
    )
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
    server: &LocalServer,
    name: &str,
    version: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Reply {
    match run_infer(server, name, version, headers, body).await {
        Ok(encoded) => encoded_reply(encoded),
        Err(e) => infer_error_reply(&e),
    }
}

async fn run_infer(
    server: &LocalServer,
    name: &str,
    version: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<HttpBody, InferError> {
    let model = &server.find(name, version)?.model;
    model.refuse_kserve()?;
    if model.decoupled() {
        return Err(InferError::decoupled("HTTP end point"));
    }
    let bad = |e: wire::WireError| InferError::BadRequest(e.to_string());
    let mut header_len = header_len(headers)?;
    let json_part = &body[..header_len.unwrap_or(body.len()).min(body.len())];
    let (body, places) = match super::shm::mentions_regions(json_part) {
        true => {
            let (body, len, places) = server.shm().rewrite_http(&body, header_len)?;
            header_len = len;
            (body, places)
        }
        false => (body, Vec::new()),
    };
    let request = wire::decode_http_request_bytes(&body, header_len).map_err(bad)?;
    let requested = request.outputs.clone();
    let binary_output = request.binary_output;
    let mut response = server.infer(name, version, request).await?;
    let placed = match places.is_empty() {
        true => Vec::new(),
        false => server.shm().place_outputs(&mut response, &places)?,
    };
    let binary = |output: &str| wants_binary(&requested, binary_output, output);
    let encoded = wire::encode_http_response(&response, &binary).map_err(bad)?;
    super::shm::add_placed_http(encoded, &placed)
}

/// Whether an output goes back as binary data: its own `binary_data` flag if it was
/// requested by name, else the request-level `binary_data_output`.
fn wants_binary(requested: &[RequestedOutput], binary_output: bool, name: &str) -> bool {
    let own = requested.iter().find(|o| o.name == name);
    own.map_or(binary_output, |o| o.binary)
}

fn encoded_reply(encoded: HttpBody) -> Reply {
    match encoded.header_len {
        Some(len) => {
            let mut reply = body_reply(StatusCode::OK, encoded.body, OCTETS);
            reply
                .headers_mut()
                .insert(INFERENCE_HEADER, HeaderValue::from(len));
            reply
        }
        None => body_reply(StatusCode::OK, encoded.body, JSON),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_the_kserve_paths() {
        let model = |name, version, action| Route::Model {
            name,
            version,
            action,
        };
        let cases = [
            ("/v2", Route::ServerMetadata),
            ("/v2/health/live", Route::Live),
            ("/v2/models/stats", Route::AllStats),
            ("/v2/models/m", model("m", "", Action::Metadata)),
            ("/v2/models/m/infer", model("m", "", Action::Infer)),
            ("/v2/models/m/versions/1", model("m", "1", Action::Metadata)),
            (
                "/v2/models/m/versions/1/stats",
                model("m", "1", Action::Stats),
            ),
            (
                "/v2/models/m/versions/2/config",
                model("m", "2", Action::Config),
            ),
            ("/v2/models/m/ready", model("m", "", Action::Ready)),
            ("/v2/models/m/infer/x", Route::Unknown),
            ("/v2/models/m/nope", Route::Unknown),
            ("/v2/models/", Route::Unknown),
            ("/v2/models/m/versions", Route::Unknown),
            ("/v3", Route::Unknown),
        ];
        for (path, expected) in cases {
            assert_eq!(route(path), expected, "{path}");
        }
    }
}
