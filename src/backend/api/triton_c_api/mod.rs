//! The Triton in-process adapter (`--service-kind triton_c_api`): perf_analyzer's way of
//! measuring a model with no network at all. Triton runs inside inferperf, loaded from
//! `libtritonserver.so` at run time (no link-time dependency: builds and the other service
//! kinds work where the library is absent), and each request goes through
//! `TRITONSERVER_ServerInferAsync`. Requests are the protocol-neutral [`InferRequest`],
//! built once per dataset entry like every other payload; windows, server statistics and
//! reports are those of the network kinds, so the in-process figures sit beside HTTP and
//! gRPC on the same model.

mod ffi;
mod request;
mod server;

use std::ffi::CString;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

pub use server::{version_number, InProcessTriton};

use crate::backend::open_inference::metadata::{parse_config, parse_metadata};
use crate::backend::open_inference::parameters::request_parameters;
use crate::backend::open_inference::statistics::parse_statistics_json;
use crate::backend::outcome::{ErrorKind, Exchange, Failure};
use crate::backend::statistics::{StatsReader, StatsSource};
use crate::backend::Conn;
use crate::backend::{elapsed_ns, requested_outputs, Adapter, Connection, Discovered, Payload};
use crate::backend::{Request, Target};
use crate::config::{TargetConfig, TritonCApiSettings};
use crate::data::Entry;
use futures::future::BoxFuture;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::model::ModelSpec;
use inferperf_wire::proto::ModelStatistics;
use inferperf_wire::InferRequest;

/// The in-process Triton adapter.
#[derive(Debug, Clone)]
pub struct TritonCApi {
    streaming: bool,
    parameters: serde_json::Map<String, Value>,
    settings: TritonCApiSettings,
    /// Triton, once started.
    server: Option<Arc<InProcessTriton>>,
}

impl TritonCApi {
    pub fn new(target: &TargetConfig, settings: &TritonCApiSettings) -> TritonCApi {
        TritonCApi {
            streaming: target.streaming,
            parameters: request_parameters(&settings.request_parameters),
            settings: settings.clone(),
            server: None,
        }
    }

    fn server(&self) -> RunResult<&Arc<InProcessTriton>> {
        (self.server.as_ref())
            .ok_or_else(|| RunError::failed("Triton was not started in process for this run."))
    }
}

#[allow(async_fn_in_trait)]
impl Adapter for TritonCApi {
    async fn start(&mut self, target: &TargetConfig) -> RunResult<Option<&'static str>> {
        self.server = Some(Arc::new(start(&target.model_name, &self.settings).await?));
        Ok(Some("in-process Triton"))
    }

    async fn discover(&self, target: &Target) -> RunResult<Discovered> {
        let server = self.server()?;
        let version = version_number(&target.version)?;
        let metadata = server.metadata(&target.model, version).map_err(|e| {
            RunError::failed(format!(
                "Triton in process has no model '{}' ready ({e}): check -m, -x and --model-repository.",
                target.model
            ))
        })?;
        let mut found = parse_metadata(&metadata, target)?;
        found.extensions = vec!["statistics".into(), "model_configuration".into()];
        if let Ok(config) = server.config(&target.model, version) {
            found.config = Some(parse_config(&config));
        }
        Ok(found)
    }

    fn encode(&self, _target: &Target, model: &ModelSpec, entry: &Entry) -> RunResult<Payload> {
        Ok(Payload::Local(Arc::new(InferRequest {
            inputs: entry.inputs.clone(),
            outputs: requested_outputs(model, false),
            parameters: self.parameters.clone(),
            ..Default::default()
        })))
    }

    async fn open(&self, target: &Target, _slot: usize) -> Result<Connection, ErrorKind> {
        let server = self.server().map_err(|_| ErrorKind::Connection)?;
        let model = CString::new(target.model.as_str()).map_err(|_| ErrorKind::Connection)?;
        let version = version_number(&target.version).map_err(|_| ErrorKind::Connection)?;
        Ok(Connection::TritonCApi(CApiConn {
            server: server.clone(),
            model,
            version,
            streaming: self.streaming,
        }))
    }

    async fn statistics(
        &self,
        target: &Target,
        all_models: bool,
        _models: &[String],
    ) -> Result<StatsSource, String> {
        let server = self.server().map_err(|e| e.to_string())?.clone();
        Ok(StatsSource::new(CApiStats::new(server, target, all_models)))
    }
}

/// Starts Triton in this process with the run's model and the models a BLS model calls.
async fn start(model: &str, settings: &TritonCApiSettings) -> RunResult<InProcessTriton> {
    let mut models = vec![model.to_string()];
    models.extend(
        (settings.bls_composing_models.iter())
            .map(|m| m.split(':').next().unwrap_or(m).to_string()),
    );
    let settings = settings.clone();
    let started = tokio::task::spawn_blocking(move || InProcessTriton::start(&settings, &models));
    // The outer error: the starting thread panicked; the inner one: Triton refused to start.
    started
        .await
        .map_err(|e| RunError::failed(format!("Starting Triton in process failed: {e}.")))?
}

/// One slot's handle on the in-process server.
pub struct CApiConn {
    server: Arc<InProcessTriton>,
    model: CString,
    version: i64,
    streaming: bool,
}

impl Conn for CApiConn {
    /// Sends one request and checks its answer (streaming: every answer of a decoupled
    /// model, the last one ending it).
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let Payload::Local(call) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let marshal = Instant::now();
        let mut answers = (self.server)
            .infer(&self.model, self.version, call.clone())
            .map_err(failure)?;
        ex.send_ns = elapsed_ns(marshal);
        while let Some(answer) = answers.recv().await {
            let at = Instant::now();
            let outputs = answer.outputs.map_err(failure)?;
            if !outputs.is_empty() || !self.streaming {
                request.check.check(&outputs)?;
                ex.answer(at);
            }
            if answer.last {
                ex.recv_ns = elapsed_ns(at);
                ex.finish(at);
                return Ok(());
            }
        }
        Err(Failure::new(
            ErrorKind::StreamError,
            "Triton in process ended a request without its final response",
        ))
    }
}

/// Triton's error as the gRPC code its own front end would answer, with its message.
fn failure(e: ffi::CError) -> Failure {
    Failure::new(ErrorKind::GrpcCode(e.grpc_code()), e.message)
}

/// The statistics Triton in this process keeps: the same JSON its HTTP front end answers.
pub struct CApiStats {
    server: Arc<InProcessTriton>,
    /// The model asked for, or empty for every model.
    model: String,
}

impl CApiStats {
    pub fn new(server: Arc<InProcessTriton>, target: &Target, all_models: bool) -> CApiStats {
        CApiStats {
            server,
            model: match all_models {
                true => String::new(),
                false => target.model.clone(),
            },
        }
    }

    /// The cumulative statistics now. `Err` is the reason, as a phrase.
    pub fn read(&self) -> Result<Vec<inferperf_wire::proto::ModelStatistics>, String> {
        let json = (self.server.statistics(&self.model))
            .map_err(|e| format!("Triton's statistics call failed ({e})"))?;
        parse_statistics_json(&json)
            .ok_or_else(|| "Triton's statistics have no \"model_stats\" list".into())
    }
}

impl StatsReader for CApiStats {
    fn read(&mut self) -> BoxFuture<'_, Result<Vec<ModelStatistics>, String>> {
        Box::pin(std::future::ready(CApiStats::read(self)))
    }
}
