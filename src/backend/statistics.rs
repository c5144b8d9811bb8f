//! The server's statistics, whichever API gives them: the cumulative counters the measurement
//! side turns into per-window deltas. Triton's statistics extension over the network
//! ([`kserve::statistics`]), the embedded models and Triton in this process, or TorchServe's
//! Prometheus counters ([`torchserve::metrics`]) — each read by its adapter into the same
//! protobuf `ModelStatistics`; this is only which one a run uses.

use super::api::{kserve, local, torchserve, triton_c_api};
use super::{Api, Target};
use inferperf_wire::proto::ModelStatistics;

/// A connection that reads model statistics.
pub enum StatsSource {
    /// A KServe v2 server's statistics extension, over HTTP or gRPC.
    Kserve(kserve::statistics::KserveStats),
    /// The embedded models in this process.
    Local(local::LocalStats),
    /// Triton in this process: the same JSON its HTTP front end answers.
    TritonCApi(triton_c_api::CApiStats),
    /// TorchServe's Prometheus counters, read as statistics.
    TorchServe(torchserve::metrics::TsMetricsSource),
}

impl StatsSource {
    /// Opens a statistics reader for the model, and for every model when `all_models` (an
    /// ensemble's composing models are reported too). `Err` is the reason, as a phrase.
    pub async fn open(
        target: &Target,
        all_models: bool,
        models: &[String],
    ) -> Result<Self, String> {
        if let Api::TorchServe(ts) = &target.api {
            let source = torchserve::metrics::TsMetricsSource::open(target, ts.metrics_url());
            return Ok(StatsSource::TorchServe(source.await?));
        }
        if let Some(server) = &target.triton {
            let stats = triton_c_api::CApiStats::new(server.clone(), target, all_models);
            return Ok(StatsSource::TritonCApi(stats));
        }
        if let Some(server) = &target.local {
            return Ok(StatsSource::Local(local::LocalStats::new(server, models)));
        }
        let stats = kserve::statistics::KserveStats::open(target, all_models).await?;
        Ok(StatsSource::Kserve(stats))
    }

    /// The server's cumulative statistics now. `Err` is the reason, as a phrase.
    pub async fn read(&mut self) -> Result<Vec<ModelStatistics>, String> {
        match self {
            StatsSource::Kserve(source) => source.read().await,
            StatsSource::Local(source) => Ok(source.read()),
            StatsSource::TritonCApi(source) => source.read(),
            StatsSource::TorchServe(source) => source.read().await,
        }
    }

    /// Server-wide answer counters by status class, where the server keeps them only for
    /// the whole server (TorchServe); taken at the last [`StatsSource::read`].
    pub fn answers(&self) -> Option<torchserve::metrics::AnswerCounts> {
        match self {
            StatsSource::TorchServe(source) => source.answers(),
            _ => None,
        }
    }
}
