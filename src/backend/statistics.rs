//! Reading the statistics extension: the cumulative counters a Triton-like server keeps per
//! model (`GET …/stats` over HTTP, `ModelStatistics` over gRPC, or a direct call in local
//! mode), on a connection of its own that carries the user's `-H` headers, so that a server
//! whose statistics sit behind an access token answers. Every protocol's answer becomes the
//! same protobuf `ModelStatistics`, which the measurement side turns into deltas; so do
//! TorchServe's Prometheus counters ([`super::torchserve::metrics`]).

use serde_json::Value;

use super::kserve::grpc as kserve_grpc;
use super::kserve::rest::HttpConn;
use super::Target;
use crate::config::Protocol;
use crate::proto::grpc_inference_service_client::GrpcInferenceServiceClient;
use crate::proto::{InferStatistics, ModelStatistics, ModelStatisticsRequest, StatisticDuration};

/// A connection that reads model statistics.
pub enum StatsSource {
    Http {
        conn: HttpConn,
        path: String,
    },
    Grpc {
        client: GrpcInferenceServiceClient<tonic::transport::Channel>,
        target: Box<Target>,
        all_models: bool,
    },
    Local {
        server: crate::server::LocalServer,
        models: Vec<String>,
    },
    /// Triton in this process: the same JSON its HTTP front end answers.
    TritonCApi {
        server: std::sync::Arc<super::triton_c_api::InProcessTriton>,
        /// The model asked for, or empty for every model.
        model: String,
    },
    /// TorchServe's Prometheus counters, read as statistics.
    TorchServe(super::torchserve::metrics::TsMetricsSource),
}

impl StatsSource {
    /// Opens a statistics reader for the model, and for every model when `all_models` (an
    /// ensemble's composing models are reported too). `Err` is the reason, as a phrase.
    pub async fn open(
        target: &Target,
        all_models: bool,
        models: &[String],
    ) -> Result<Self, String> {
        if let super::Api::TorchServe(ts) = &target.api {
            let source =
                super::torchserve::metrics::TsMetricsSource::open(target, ts.metrics_url());
            return Ok(StatsSource::TorchServe(source.await?));
        }
        if let Some(server) = &target.triton {
            return Ok(StatsSource::TritonCApi {
                server: server.clone(),
                model: match all_models {
                    true => String::new(),
                    false => target.model.clone(),
                },
            });
        }
        if let Some(server) = &target.local {
            return Ok(StatsSource::Local {
                server: server.clone(),
                models: models.to_vec(),
            });
        }
        match target.protocol {
            Protocol::Http => {
                let conn = HttpConn::open(target)
                    .await
                    .map_err(|e| format!("cannot connect for statistics ({e})"))?;
                let path = match all_models {
                    true => "/v2/models/stats".to_string(),
                    false => format!("{}/stats", target.model_path()),
                };
                Ok(StatsSource::Http { conn, path })
            }
            Protocol::Grpc => {
                let channel = kserve_grpc::connect_channel(target)
                    .await
                    .map_err(|e| format!("cannot connect for statistics ({e})"))?;
                Ok(StatsSource::Grpc {
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
            StatsSource::Http { conn, path } => read_http(conn, path).await,
            StatsSource::Grpc {
                client,
                target,
                all_models,
            } => {
                let (name, version) = match all_models {
                    true => (String::new(), String::new()),
                    false => (target.model.clone(), target.version.clone()),
                };
                let mut request =
                    kserve_grpc::with_metadata(target, ModelStatisticsRequest { name, version });
                add_restricted_protocol_keys(&mut request, target);
                let answer = client.model_statistics(request).await.map_err(|s| {
                    format!(
                        "ModelStatistics answered {}: {}",
                        super::grpc_code_name(s.code() as i32),
                        s.message()
                    )
                })?;
                Ok(answer.into_inner().model_stats)
            }
            StatsSource::Local { server, models } => {
                // `MODEL:VERSION` (a BLS composing model): the embedded server has one
                // version of each model, whose statistics it gives.
                let name = |m: &String| m.split_once(':').map_or(m.clone(), |(n, _)| n.into());
                let names: Vec<String> = models.iter().map(name).collect();
                Ok(names.iter().filter_map(|m| server.statistics(m)).collect())
            }
            StatsSource::TritonCApi { server, model } => {
                let json = (server.statistics(model))
                    .map_err(|e| format!("Triton's statistics call failed ({e})"))?;
                parse_statistics_json(&json)
                    .ok_or_else(|| "Triton's statistics have no \"model_stats\" list".into())
            }
            StatsSource::TorchServe(source) => source.read().await,
        }
    }

    /// Server-wide answer counters by status class, where the server keeps them only for
    /// the whole server (TorchServe); taken at the last [`StatsSource::read`].
    pub fn answers(&self) -> Option<super::torchserve::metrics::AnswerCounts> {
        match self {
            StatsSource::TorchServe(source) => source.answers(),
            _ => None,
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

async fn read_http(conn: &mut HttpConn, path: &str) -> Result<Vec<ModelStatistics>, String> {
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

/// The extension's JSON (`{"model_stats": [...]}`) as protobuf messages; `None` when the
/// answer is not in that form.
pub fn parse_statistics_json(json: &Value) -> Option<Vec<ModelStatistics>> {
    let list = json.get("model_stats")?.as_array()?;
    Some(list.iter().map(model_statistics).collect())
}

fn model_statistics(m: &Value) -> ModelStatistics {
    let stats = &m["inference_stats"];
    ModelStatistics {
        name: m["name"].as_str().unwrap_or_default().to_string(),
        version: m["version"].as_str().unwrap_or_default().to_string(),
        last_inference: number(&m["last_inference"]),
        inference_count: number(&m["inference_count"]),
        execution_count: number(&m["execution_count"]),
        inference_stats: Some(InferStatistics {
            success: duration(&stats["success"]),
            fail: duration(&stats["fail"]),
            queue: duration(&stats["queue"]),
            compute_input: duration(&stats["compute_input"]),
            compute_infer: duration(&stats["compute_infer"]),
            compute_output: duration(&stats["compute_output"]),
            cache_hit: duration(&stats["cache_hit"]),
            cache_miss: duration(&stats["cache_miss"]),
        }),
        batch_stats: Vec::new(),
        response_stats: Default::default(),
    }
}

/// A counter that may come as a JSON number or (from some servers) a string.
fn number(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or(0)
}

fn duration(v: &Value) -> Option<StatisticDuration> {
    Some(StatisticDuration {
        count: number(&v["count"]),
        ns: number(&v["ns"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn triton_statistics_json_is_read() {
        let answer = json!({"model_stats": [{
            "name": "m", "version": "1", "last_inference": 1700000000000u64,
            "inference_count": 12, "execution_count": 3,
            "inference_stats": {
                "success": {"count": 4, "ns": 4000}, "fail": {"count": 1, "ns": 10},
                "queue": {"count": 4, "ns": 400}, "compute_input": {"count": 4, "ns": "40"},
                "compute_infer": {"count": 4, "ns": 3000}, "compute_output": {"count": 4, "ns": 80},
                "cache_hit": {"count": 0, "ns": 0}
            },
            "batch_stats": []
        }]});
        let stats = parse_statistics_json(&answer).expect("model_stats");
        let s = &stats[0];
        assert_eq!(
            (s.name.as_str(), s.inference_count, s.execution_count),
            ("m", 12, 3)
        );
        let i = s.inference_stats.unwrap();
        assert_eq!(i.success.unwrap().ns, 4000);
        assert_eq!(i.compute_input.unwrap().ns, 40);
        assert_eq!(i.cache_miss.unwrap().count, 0);
        assert!(parse_statistics_json(&json!({"error": "x"})).is_none());
    }
}
