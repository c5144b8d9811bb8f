//! The control calls of Triton's system shared-memory extension, over the run's protocol:
//! register a region, unregister one, and list the registered ones — HTTP
//! `/v2/systemsharedmemory/…` or gRPC `SystemSharedMemory*`. Never on the hot path: the run
//! registers its regions before it sends and unregisters them after.

use serde_json::{json, Value};

use crate::backend::transport::control::{connect_channel, with_metadata, HttpControl};
use crate::backend::Target;
use crate::config::Protocol;
use inferperf_wire::proto;
use inferperf_wire::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use tonic::transport::Channel;

/// A connection for the extension's calls.
pub enum Control {
    Http(HttpControl),
    Grpc(GrpcInferenceServiceClient<Channel>),
}

/// Why a call failed: the server's words, or that it could not be reached.
pub type ControlResult<T> = Result<T, String>;

impl Control {
    pub async fn open(target: &Target) -> ControlResult<Control> {
        let unreachable = |e: crate::backend::ErrorKind| format!("cannot reach the server ({e})");
        Ok(match target.protocol {
            Protocol::Http => {
                Control::Http(HttpControl::open(&target.peer).await.map_err(unreachable)?)
            }
            Protocol::Grpc => {
                let channel = connect_channel(&target.peer).await.map_err(unreachable)?;
                Control::Grpc(GrpcInferenceServiceClient::new(channel))
            }
        })
    }

    /// Registers `name` as `size` bytes at offset 0 of the object `key`.
    pub async fn register(
        &mut self,
        target: &Target,
        name: &str,
        key: &str,
        size: u64,
    ) -> ControlResult<()> {
        match self {
            Control::Http(conn) => {
                let body = json!({"key": key, "offset": 0, "byte_size": size}).to_string();
                let path = format!("/v2/systemsharedmemory/region/{name}/register");
                http_call(conn, &path, Some(body.as_bytes()))
                    .await
                    .map(drop)
            }
            Control::Grpc(client) => {
                let message = proto::SystemSharedMemoryRegisterRequest {
                    name: name.to_string(),
                    key: key.to_string(),
                    offset: 0,
                    byte_size: size,
                };
                let answer = client
                    .system_shared_memory_register(with_metadata(&target.peer, message))
                    .await;
                answer.map(drop).map_err(|s| grpc_words(&s))
            }
        }
    }

    /// Unregisters `name`.
    pub async fn unregister(&mut self, target: &Target, name: &str) -> ControlResult<()> {
        match self {
            Control::Http(conn) => {
                let path = format!("/v2/systemsharedmemory/region/{name}/unregister");
                http_call(conn, &path, Some(b"")).await.map(drop)
            }
            Control::Grpc(client) => {
                let message = proto::SystemSharedMemoryUnregisterRequest {
                    name: name.to_string(),
                };
                let answer = client
                    .system_shared_memory_unregister(with_metadata(&target.peer, message))
                    .await;
                answer.map(drop).map_err(|s| grpc_words(&s))
            }
        }
    }

    /// The names of the regions registered with the server.
    pub async fn status(&mut self, target: &Target) -> ControlResult<Vec<String>> {
        match self {
            Control::Http(conn) => {
                let answer = http_call(conn, "/v2/systemsharedmemory/status", None).await?;
                let list = answer.as_array().cloned().unwrap_or_default();
                Ok(list
                    .iter()
                    .filter_map(|r| r["name"].as_str().map(str::to_string))
                    .collect())
            }
            Control::Grpc(client) => {
                let message = proto::SystemSharedMemoryStatusRequest::default();
                let answer = client
                    .system_shared_memory_status(with_metadata(&target.peer, message))
                    .await
                    .map_err(|s| grpc_words(&s))?;
                Ok(answer.into_inner().regions.into_keys().collect())
            }
        }
    }
}

fn grpc_words(status: &tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}

/// A GET (no body) or POST; the JSON the server answers (null for an empty body).
async fn http_call(
    conn: &mut HttpControl,
    path: &str,
    body: Option<&[u8]>,
) -> ControlResult<Value> {
    let answer = match body {
        None => conn.get(path).await,
        Some(body) => conn.post_json(path, body).await,
    };
    let (status, bytes) = answer.map_err(|e| format!("cannot reach the server ({e})"))?;
    let parsed: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if !status.is_success() {
        let words = parsed["error"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).trim().to_string());
        return Err(format!("HTTP {}: {words}", status.as_u16()));
    }
    Ok(parsed)
}
