//! Reading Triton's statistics extension over the network: the cumulative counters the
//! server keeps per model (`GET …/stats` over HTTP, `ModelStatistics` over gRPC), on a
//! control connection of its own that carries the user's `-H` headers, so that a server
//! whose statistics sit behind an access token answers.

use futures::future::BoxFuture;

use crate::backend::statistics::StatsReader;
use serde_json::Value;

use super::request::model_path;
use crate::backend::open_inference::statistics::parse_statistics_json;
use crate::backend::transport::control::{connect_channel, with_metadata, HttpControl};
use crate::backend::{grpc_code_name, Target};
use crate::config::Protocol;
use inferperf_wire::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use inferperf_wire::proto::{ModelStatistics, ModelStatisticsRequest};

/// A connection that reads model statistics from a KServe v2 server.
pub enum KserveStats {
    Http {
        conn: HttpControl,
        path: String,
    },
    Grpc {
        client: GrpcInferenceServiceClient<tonic::transport::Channel>,
        target: Box<Target>,
        all_models: bool,
    },
}

impl KserveStats {
    /// Opens a reader of the model's statistics, or every model's when `all_models`. `Err`
    /// is the reason, as a phrase.
    pub async fn open(target: &Target, all_models: bool) -> Result<Self, String> {
        match target.protocol {
            Protocol::Http => {
                let conn = HttpControl::open(&target.peer)
                    .await
                    .map_err(|e| format!("cannot connect for statistics ({e})"))?;
                let path = match all_models {
                    true => "/v2/models/stats".to_string(),
                    false => format!("{}/stats", model_path(&target.model, &target.version)),
                };
                Ok(KserveStats::Http { conn, path })
            }
            Protocol::Grpc => {
                let channel = connect_channel(&target.peer)
                    .await
                    .map_err(|e| format!("cannot connect for statistics ({e})"))?;
                Ok(KserveStats::Grpc {
                    client: GrpcInferenceServiceClient::new(channel),
                    target: Box::new(target.clone()),
                    all_models,
                })
            }
        }
    }

    /// The server's cumulative statistics now. `Err` is the reason, as a phrase.
    pub async fn read(&mut self) -> Result<Vec<ModelStatistics>, String> {
        match self {
            KserveStats::Http { conn, path } => read_http(conn, path).await,
            KserveStats::Grpc {
                client,
                target,
                all_models,
            } => {
                let (name, version) = match all_models {
                    true => (String::new(), String::new()),
                    false => (target.model.clone(), target.version.clone()),
                };
                let mut request =
                    with_metadata(&target.peer, ModelStatisticsRequest { name, version });
                add_restricted_protocol_keys(&mut request, target);
                let answer = client.model_statistics(request).await.map_err(|s| {
                    format!(
                        "ModelStatistics answered {}: {}",
                        grpc_code_name(s.code() as i32),
                        s.message()
                    )
                })?;
                Ok(answer.into_inner().model_stats)
            }
        }
    }
}

/// Triton guards restricted gRPC APIs (statistics among them) with a metadata key of the
/// form `triton-grpc-protocol-<header>`; the same `-H` header the user gives for HTTP is
/// also sent under that name, so one flag works for both protocols.
fn add_restricted_protocol_keys<T>(request: &mut tonic::Request<T>, target: &Target) {
    use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
    const PREFIX: &str = "triton-grpc-protocol-";
    for (name, value) in target
        .peer
        .headers
        .iter()
        .filter(|(n, _)| !n.starts_with(PREFIX))
    {
        let key = AsciiMetadataKey::from_bytes(format!("{PREFIX}{name}").as_bytes());
        if let (Ok(k), Ok(v)) = (key, value.parse::<AsciiMetadataValue>()) {
            request.metadata_mut().append(k, v);
        }
    }
}

async fn read_http(conn: &mut HttpControl, path: &str) -> Result<Vec<ModelStatistics>, String> {
    let (status, body) = conn
        .get(path)
        .await
        .map_err(|e| format!("GET {path} failed ({e})"))?;
    if !status.is_success() {
        return Err(format!("GET {path} answered HTTP {}", status.as_u16()));
    }
    let json: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("GET {path} did not answer JSON ({e})"))?;
    parse_statistics_json(&json).ok_or_else(|| format!("GET {path} has no \"model_stats\" list"))
}

impl StatsReader for KserveStats {
    fn read(&mut self) -> BoxFuture<'_, Result<Vec<ModelStatistics>, String>> {
        Box::pin(KserveStats::read(self))
    }
}
