//! One served model: the model, the scheduler in front of it and the latest request
//! parameters it saw. It sits below [`super::local`] (which holds every served model by
//! name) and [`super::bls`] (whose calls run other served models), so neither has to import
//! the other to reach a model.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};

use super::error::InferError;
use super::llm::Engines;
use super::models::Model;
use super::sched::Scheduler;
use super::stream::{self, StreamAnswer};
use inferperf_wire::{InferRequest, InferResponse};

/// A model and the scheduler in front of it.
#[derive(Debug)]
pub(crate) struct Served {
    pub model: Arc<Model>,
    scheduler: Scheduler,
    /// The `parameters` of the latest request that had any (what a client's
    /// `--request-parameter` delivered, with its JSON type); written only for such requests.
    parameters: Mutex<Option<Map<String, Value>>>,
}

impl Served {
    /// Builds the model and starts its scheduler.
    pub(crate) fn start(model: Model) -> anyhow::Result<Served> {
        let model = Arc::new(model);
        let scheduler = Scheduler::new(&model)?;
        Ok(Served {
            model,
            scheduler,
            parameters: Mutex::new(None),
        })
    }

    pub(crate) fn note_parameters(&self, request: &InferRequest) {
        if request.parameters.is_empty() {
            return;
        }
        if let Ok(mut latest) = self.parameters.lock() {
            *latest = Some(request.parameters.clone());
        }
    }

    /// The `parameters` of the latest request that carried any.
    pub(crate) fn last_parameters(&self) -> Option<Map<String, Value>> {
        self.parameters.lock().ok()?.clone()
    }

    /// Runs one request through this model's scheduler, counting it in the statistics.
    /// A decoupled model is refused, as Triton refuses it outside a stream.
    pub(crate) async fn infer(
        &self,
        request: InferRequest,
        arrival: Instant,
    ) -> Result<InferResponse, InferError> {
        self.model.refuse_kserve()?;
        if self.model.decoupled() {
            return Err(InferError::Unsupported(format!(
                "LocalServer::infer doesn't support models with decoupled transaction policy; \
                 model '{}' answers through infer_stream",
                self.model.name()
            )));
        }
        self.note_parameters(&request);
        let job = self.model.check(request, arrival)?;
        self.scheduler.submit(&self.model, job).await
    }

    /// Runs one request as a stream: a decoupled model's N responses then the empty final
    /// one; any other model's single response (last = true).
    pub(crate) async fn infer_stream(
        &self,
        request: InferRequest,
        arrival: Instant,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<StreamAnswer, InferError>>, InferError> {
        self.model.refuse_kserve()?;
        self.note_parameters(&request);
        let job = self.model.check(request, arrival)?;
        if !self.model.decoupled() {
            let response = self.scheduler.submit(&self.model, job).await?;
            return Ok(stream::single(response));
        }
        let (sender, answers) = stream::channel(&self.model);
        self.scheduler.submit_stream(job, sender)?;
        Ok(answers)
    }

    /// An `llm` model's engines.
    pub(crate) fn engines(&self) -> Option<&Engines> {
        match &self.scheduler {
            Scheduler::Llm(engines) => Some(engines),
            _ => None,
        }
    }

    /// An `embeddings` model's instances.
    pub(crate) fn embedder(&self) -> Option<&tokio::sync::Semaphore> {
        match &self.scheduler {
            Scheduler::Embeddings(instances) => Some(instances),
            _ => None,
        }
    }
}
