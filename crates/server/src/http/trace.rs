//! The route of Triton's trace extension: `GET`/`POST /v2/models/M/trace/setting` reads or
//! updates a model's trace settings, which [`LocalServer`] holds
//! ([`TraceSettings`](crate::trace::TraceSettings)).

use hyper::body::Incoming;
use hyper::{HeaderMap, Method, StatusCode};
use serde_json::{Map, Value};

use super::reply::{error_reply, json_reply, read_body, Reply};
use crate::local::LocalServer;

/// The model of `/v2/models/M/trace/setting`, if the path is that route.
pub(crate) fn route(path: &str) -> Option<&str> {
    let model = path
        .strip_prefix("/v2/models/")?
        .strip_suffix("/trace/setting")?;
    (!model.is_empty() && !model.contains('/')).then_some(model)
}

/// Answers a GET (the settings) or POST (update, then the settings) of the route.
pub(crate) async fn handle(
    server: &LocalServer,
    method: &Method,
    model: &str,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let error = |status, message: String| error_reply(status, &message);
    if server.find(model, "").is_err() {
        return error(StatusCode::NOT_FOUND, format!("unknown model '{model}'"));
    }
    let trace = server.trace_settings();
    match *method {
        Method::GET => json_reply(StatusCode::OK, &Value::Object(trace.get(model))),
        Method::POST => {
            let body = match read_body(headers, body).await {
                Ok(body) => body,
                Err((_, message)) => return error(StatusCode::BAD_REQUEST, message),
            };
            let updates: Map<String, Value> = match serde_json::from_slice(&body) {
                Ok(map) => map,
                Err(e) => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        format!("the body is not a JSON object: {e}"),
                    )
                }
            };
            match trace.update(model, &updates) {
                Ok(settings) => json_reply(StatusCode::OK, &Value::Object(settings)),
                Err(message) => error(StatusCode::BAD_REQUEST, message),
            }
        }
        _ => error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("trace/setting does not take {method}"),
        ),
    }
}
