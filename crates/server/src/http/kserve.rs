//! KServe v2 REST on the embedded server's HTTP port, with the binary tensor data extension
//! and Triton's configuration and statistics endpoints: health, server and model metadata,
//! readiness, configuration, statistics and inference, for every path the other route files
//! do not claim. The inference route is the hot path; its paths are matched by hand on
//! their segments. Errors answer `{"error": "..."}` with Triton's status codes.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use hyper::body::Incoming;
use serde_json::{json, Value};

use super::reply::{
    body_reply, empty, error_reply, infer_error_reply, json_reply, no_route, read_body, Reply,
    JSON, OCTETS,
};
use crate::describe;
use crate::error::InferError;
use crate::local::LocalServer;
use crate::shm;
use crate::stats::statistics_json;
use inferperf_wire::{self as wire, HttpBody, RequestedOutput};

const INFERENCE_HEADER: HeaderName = HeaderName::from_static("inference-header-content-length");

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

/// Answers a request on a KServe v2 path (a 404 for any other path).
pub(crate) async fn handle(
    server: &LocalServer,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let route = route(path);
    match (method, route) {
        (
            &Method::POST,
            Route::Model {
                name,
                version,
                action: Action::Infer,
            },
        ) => match read_body(headers, body).await {
            Ok(body) => infer(server, name, version, headers, body).await,
            Err(e) => error_reply(
                StatusCode::from_u16(e.0).unwrap_or(StatusCode::BAD_REQUEST),
                &e.1,
            ),
        },
        (&Method::GET, route) => get(server, route, path),
        (_, Route::Unknown) => no_route(path),
        (method, _) => error_reply(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} does not take {method}"),
        ),
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

fn stats_reply<'a>(
    stats: impl Iterator<Item = &'a inferperf_wire::proto::ModelStatistics>,
) -> Reply {
    let stats: Vec<Value> = stats.map(statistics_json).collect();
    json_reply(StatusCode::OK, &json!({ "model_stats": stats }))
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
    let (body, places) = match shm::mentions_regions(json_part) {
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
    shm::add_placed_http(encoded, &placed)
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
