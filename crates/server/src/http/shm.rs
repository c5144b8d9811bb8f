//! The routes of the system shared-memory extension on the embedded server: over HTTP
//! `GET /v2/systemsharedmemory[/region/N]/status`, `POST …/region/N/register` with
//! `{"key", "offset", "byte_size"}` and `POST /v2/systemsharedmemory[/region/N]/unregister`,
//! answered from [`ShmRegions`](crate::shm::ShmRegions) as gRPC's
//! `SystemSharedMemory*` calls are ([`grpc`](crate::grpc)).

use http::{HeaderMap, Method, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{json, Value};

use super::reply::{error_reply, infer_error_reply, json_reply, read_body, Reply};
use crate::error::InferError;
use crate::local::LocalServer;
use crate::shm::Region;

/// What a path under `/v2/systemsharedmemory` asks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ShmRoute<'a> {
    Status(&'a str),
    Register(&'a str),
    Unregister(&'a str),
}

/// Matches the extension's paths (the region name empty for "all regions").
pub(crate) fn route(path: &str) -> Option<ShmRoute<'_>> {
    let rest = path.strip_prefix("/v2/systemsharedmemory")?;
    let (name, action) = match rest.strip_prefix("/region/") {
        Some(named) => named.rsplit_once('/').filter(|(n, _)| !n.is_empty())?,
        None => ("", rest.strip_prefix('/')?),
    };
    match action {
        "status" => Some(ShmRoute::Status(name)),
        "register" if !name.is_empty() => Some(ShmRoute::Register(name)),
        "unregister" => Some(ShmRoute::Unregister(name)),
        _ => None,
    }
}

#[derive(Deserialize)]
struct RegisterBody {
    key: String,
    #[serde(default)]
    offset: u64,
    byte_size: u64,
}

/// Answers one request of the extension over HTTP.
pub(crate) async fn handle(
    server: &LocalServer,
    method: &Method,
    route: ShmRoute<'_>,
    headers: &HeaderMap,
    body: Incoming,
) -> Reply {
    let regions = server.shm();
    let answer = match (method, route) {
        (&Method::GET, ShmRoute::Status(name)) => regions
            .status(name)
            .map(|list| Value::Array(list.iter().map(status_json).collect())),
        (&Method::POST, ShmRoute::Unregister(name)) => {
            regions.unregister(name);
            Ok(json!({}))
        }
        (&Method::POST, ShmRoute::Register(name)) => match read_body(headers, body).await {
            Ok(bytes) => register(server, name, &bytes),
            Err((_, message)) => Err(InferError::BadRequest(message)),
        },
        (method, _) => {
            let message = format!("the shared-memory routes do not take {method} here");
            return error_reply(StatusCode::METHOD_NOT_ALLOWED, &message);
        }
    };
    match answer {
        Ok(value) => json_reply(StatusCode::OK, &value),
        Err(e) => infer_error_reply(&e),
    }
}

fn register(server: &LocalServer, name: &str, body: &[u8]) -> Result<Value, InferError> {
    let parsed: RegisterBody = serde_json::from_slice(body).map_err(|e| {
        InferError::BadRequest(format!(
            "the register body must be {{\"key\", \"offset\", \"byte_size\"}}: {e}"
        ))
    })?;
    let (key, offset, size) = (&parsed.key, parsed.offset, parsed.byte_size);
    server.shm().register(name, key, offset, size)?;
    Ok(json!({}))
}

fn status_json(region: &Region) -> Value {
    json!({"name": region.name, "key": region.key, "offset": region.offset,
           "byte_size": region.byte_size})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_paths_are_matched() {
        let cases = [
            ("/v2/systemsharedmemory/status", Some(ShmRoute::Status(""))),
            (
                "/v2/systemsharedmemory/region/a/status",
                Some(ShmRoute::Status("a")),
            ),
            (
                "/v2/systemsharedmemory/region/a/register",
                Some(ShmRoute::Register("a")),
            ),
            (
                "/v2/systemsharedmemory/unregister",
                Some(ShmRoute::Unregister("")),
            ),
            (
                "/v2/systemsharedmemory/region/a/unregister",
                Some(ShmRoute::Unregister("a")),
            ),
            ("/v2/systemsharedmemory/register", None),
            ("/v2/systemsharedmemory/region//status", None),
            ("/v2/systemsharedmemoryx/status", None),
            ("/v2/models/m/infer", None),
        ];
        for (path, expected) in cases {
            assert_eq!(route(path), expected, "{path}");
        }
    }
}
