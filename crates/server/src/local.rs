//! The served models with their schedulers, as one cheap-to-clone handle. It is the only
//! way in: the HTTP and gRPC front ends and the in-process `--service-kind local` backend
//! all call [`LocalServer::infer`] (or [`LocalServer::infer_stream`] on a stream), so the
//! three behave and count identically. Built once; the request path reads it without a
//! lock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use super::def::{ModelDef, ModelKind};
use super::describe;
use super::error::InferError;
use super::gpu_power::GpuReading;
use super::llm::ModelNumbers;
use super::models::Model;
use super::served::Served;
use super::stats::TokenCounts;
use super::stream::{self, StreamAnswer};
use super::trace::TraceSettings;
use inferperf_wire::proto::{ModelConfig, ModelMetadataResponse, ModelStatistics};
use inferperf_wire::{InferRequest, InferResponse};

/// The models by name; dropping it (with the last handle) drops the schedulers, which
/// ends their instance threads.
#[derive(Debug)]
struct Registry {
    models: BTreeMap<String, Served>,
    statistics: bool,
    torchserve_answers: AnswerClasses,
    /// Each model's trace settings (the trace extension).
    trace: TraceSettings,
    /// The system shared-memory regions clients registered.
    shm: super::shm::ShmRegions,
}

/// Answers on the TorchServe routes by status class (2XX, 4XX, 5XX), server-wide as
/// TorchServe's `Requests2XX/4XX/5XX` count them.
#[derive(Debug, Default)]
pub struct AnswerClasses([std::sync::atomic::AtomicU64; 3]);

impl AnswerClasses {
    /// Counts one answer of HTTP `status` (other classes are not counted).
    pub fn count(&self, status: u16) {
        let class = match status {
            200..=299 => 0,
            400..=499 => 1,
            500..=599 => 2,
            _ => return,
        };
        self.0[class].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// The 2XX, 4XX and 5XX counts now.
    pub fn read(&self) -> [u64; 3] {
        self.0
            .each_ref()
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// The models, callable in-process: a handle to the registry and schedulers, no network.
#[derive(Debug, Clone)]
pub struct LocalServer {
    inner: Arc<Registry>,
}

impl LocalServer {
    /// Builds the models and starts their schedulers; two models of the same name are an
    /// error. Call it inside a tokio runtime.
    pub fn new(defs: Vec<ModelDef>) -> anyhow::Result<LocalServer> {
        LocalServer::with_statistics(defs, true)
    }

    /// As [`LocalServer::new`]; without `statistics` the front ends neither list nor answer
    /// the statistics extension.
    pub fn with_statistics(defs: Vec<ModelDef>, statistics: bool) -> anyhow::Result<LocalServer> {
        let mut models = BTreeMap::new();
        for def in defs {
            let name = def.name.clone();
            if models.contains_key(&name) {
                anyhow::bail!("model '{name}' is defined twice; give each --model its own name");
            }
            models.insert(name, Served::start(Model::new(def))?);
        }
        super::bls::check_calls(&models)?;
        Ok(LocalServer {
            inner: Arc::new(Registry {
                models,
                statistics,
                torchserve_answers: AnswerClasses::default(),
                trace: TraceSettings::default(),
                shm: Default::default(),
            }),
        })
    }

    /// The system shared-memory regions registered with the server.
    pub fn shm(&self) -> &super::shm::ShmRegions {
        &self.inner.shm
    }

    /// The answers given on the TorchServe routes, by status class.
    pub fn torchserve_answers(&self) -> &AnswerClasses {
        &self.inner.torchserve_answers
    }

    /// Whether the statistics extension is offered.
    pub fn offers_statistics(&self) -> bool {
        self.inner.statistics
    }

    /// The served model names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.inner.models.keys().cloned().collect()
    }

    /// The model of that name, if `version` is empty or "1" (each model has one version).
    pub(crate) fn find(&self, name: &str, version: &str) -> Result<&Served, InferError> {
        match self.inner.models.get(name) {
            Some(served) if version.is_empty() || version == "1" => Ok(served),
            _ => Err(InferError::unknown_model(name, version)),
        }
    }

    /// The model's metadata: inputs and outputs with datatypes and shapes (a leading -1
    /// when the model batches) and the platform.
    pub fn metadata(&self, model: &str) -> Option<ModelMetadataResponse> {
        let served = self.find(model, "").ok()?;
        Some(describe::metadata(&served.model))
    }

    /// The model's configuration in Triton's form.
    pub fn config(&self, model: &str) -> Option<ModelConfig> {
        let served = self.find(model, "").ok()?;
        Some(describe::config(&served.model))
    }

    /// Whether the model is decoupled (answers only over a stream).
    pub fn is_decoupled(&self, model: &str) -> bool {
        (self.find(model, "")).is_ok_and(|served| served.model.decoupled())
    }

    /// Runs one request through the model's scheduler, counting it in the statistics —
    /// the path every front end takes. A decoupled model is refused, as Triton refuses it
    /// outside a stream.
    pub async fn infer(
        &self,
        model: &str,
        version: &str,
        request: InferRequest,
    ) -> Result<InferResponse, InferError> {
        let arrival = Instant::now();
        let served = self.find(model, version)?;
        if let ModelKind::Bls { calls } = &served.model.def.kind {
            served.note_parameters(&request);
            let callees: Vec<&Served> = (calls.iter())
                .map(|c| self.find(c, ""))
                .collect::<Result<_, _>>()?;
            return super::bls::infer(served, &callees, request, arrival).await;
        }
        served.infer(request, arrival).await
    }

    /// Runs one request as a stream: a decoupled model's N responses then the empty final
    /// one; any other model's single response (last = true). Errors before the first
    /// answer are the Err; an error later arrives as an Err item and ends the stream.
    pub async fn infer_stream(
        &self,
        model: &str,
        version: &str,
        request: InferRequest,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<StreamAnswer, InferError>>, InferError> {
        let arrival = Instant::now();
        let served = self.find(model, version)?;
        if let ModelKind::Bls { .. } = served.model.def.kind {
            let response = self.infer(model, version, request).await?;
            return Ok(stream::single(response));
        }
        served.infer_stream(request, arrival).await
    }

    /// The `parameters` of the latest request to `model` that carried any, as decoded
    /// (gRPC's typed `InferParameter`s as JSON bool, integer or string).
    pub fn last_parameters(&self, model: &str) -> Option<Map<String, Value>> {
        self.find(model, "").ok()?.last_parameters()
    }

    /// The trace settings of every model (`/v2/models/M/trace/setting`).
    pub fn trace_settings(&self) -> &TraceSettings {
        &self.inner.trace
    }

    /// The model's statistics, cumulative since the server started.
    pub fn statistics(&self, model: &str) -> Option<ModelStatistics> {
        let served = self.find(model, "").ok()?;
        Some(served.model.stats.snapshot(served.model.name()))
    }

    /// The models served on the OpenAI routes (`llm` and `embeddings`), sorted by name.
    pub(crate) fn openai_models(&self) -> impl Iterator<Item = &Served> {
        (self.inner.models.values()).filter(|s| s.model.def.kind.openai())
    }

    /// What each model served on the OpenAI routes, by name (the truth behind a load
    /// tester's token figures; also `GET /v1/inferperf/stats`).
    pub fn openai_statistics(&self) -> Vec<(String, TokenCounts)> {
        let models = self.openai_models();
        models
            .map(|s| (s.model.name().to_string(), s.model.tokens.snapshot()))
            .collect()
    }

    /// Empties every `llm` model's prefix cache; how many models had one.
    pub fn reset_prefix_caches(&self) -> usize {
        let engines = self.inner.models.values().filter_map(|s| s.engines());
        engines.map(|e| e.reset_prefix_cache()).count()
    }

    /// Each `llm` model's token counts, engine gauges and timings, by name (the engine
    /// families of `/metrics`).
    pub(crate) fn llm_metrics(&self) -> Vec<ModelNumbers> {
        (self.inner.models.values())
            .filter_map(|s| {
                let engines = s.engines()?;
                let ModelKind::Llm(timing) = &s.model.def.kind else {
                    return None;
                };
                Some(ModelNumbers {
                    name: s.model.name().to_string(),
                    names: timing.metrics,
                    tokens: s.model.tokens.snapshot(),
                    gauges: engines.gauges(),
                    timings: engines.timings(),
                })
            })
            .collect()
    }

    /// The GPU each `llm` model stands for, by model name (the DCGM page).
    pub(crate) fn gpu_readings(&self) -> Vec<(String, GpuReading)> {
        (self.inner.models.values())
            .filter_map(|s| Some((s.model.name().to_string(), s.engines()?.gpu())))
            .collect()
    }

    /// Each `sequence` model's sequence counters, by name (also `GET /v1/inferperf/sequences`).
    pub fn sequence_statistics(&self) -> Vec<(String, super::sequences::SequenceCounts)> {
        let models = self.inner.models.values();
        let sequence = |s: &&Served| matches!(s.model.def.kind, ModelKind::Sequence { .. });
        models
            .filter(sequence)
            .map(|s| (s.model.name().to_string(), s.model.sequences.counts()))
            .collect()
    }

    /// Every model's statistics, sorted by name.
    pub fn all_statistics(&self) -> Vec<ModelStatistics> {
        let models = self.inner.models.values();
        models
            .map(|s| s.model.stats.snapshot(s.model.name()))
            .collect()
    }
}
